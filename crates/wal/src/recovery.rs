//! Finding the end of the log on open.
//!
//! First, recovery makes every byte it may keep durable and reads only the device: it
//! syncs the log directory, then syncs each segment and drops its cached pages
//! (`segment::scan_dir`). After a process kill the page cache still holds the last round
//! the flush daemon wrote but had not synced; after a failed fsync it may hold writes the
//! device never got (Linux marks the failed pages clean, and a later fsync succeeds
//! without writing them). Either way, what the previous incarnation left is durable, or
//! invisible, before anything is called durable — a sync that fails refuses the open. A
//! read-only open does the same through read-only handles: what it shows a reader must
//! survive a power loss as much as what a writer builds on.
//!
//! Then frames are scanned from the first segment. At the first frame that does not verify
//! (position `x`), the scan does not simply stop: it searches everything after `x` for
//! frames that do verify and takes the largest durable hint among them. A hint `h > x`
//! proves that the bytes at `x` had been synced, so `x` is damage inside the durable log
//! and is reported as corruption. Otherwise `x` lies in the region written after the last
//! sync before the crash — a torn or garbage tail — and the log ends at `x`. Only records
//! whose hint lies above `x` are checked (`could_prove_durable`): after a recycled
//! segment's end lie its file's old frames, which never verify at their new positions
//! (the checksum binds the LSN) and carry hints below the log's start, and checking every
//! word of them in full would cost a checksum per word. The rest is
//! zeroed in bounded chunks (so no stale frame can ever be mistaken for a new one) and
//! made durable, later segments are removed newest first, and only then does the log
//! publish its end as durable and accept appends.

use crate::error::{Result, WalError};
use crate::frame::{self, Decoded};
use crate::reader::SegmentWindow;
use crate::segments::dirs::LogDirs;
use crate::segments::segment::{self, SegmentList, SEGMENT_HEADER_BYTES};
use crate::Lsn;
use sluice_storage::Storage;
use std::path::Path;
use std::sync::Arc;

/// What opening the log found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryInfo {
    /// The first LSN still in the log (the start of the oldest segment).
    pub start: Lsn,
    /// The end of the log: the next record goes here.
    pub end: Lsn,
    /// Records found between `start` and `end`.
    pub records: u64,
    /// Bytes of torn or garbage tail that were cut (zeroed) after `end`, in `end`'s
    /// segment; in a recycled segment these include the old frames left after the end.
    pub cut_bytes: u64,
    /// Segment files found.
    pub segments: usize,
}

/// True if the frame header at `q` (its first bytes, as many as there are) could be a
/// record proving that the log was durable past `x`: a record whose durable hint lies in
/// `(x, q]`. Only such a frame can change the evidence scan's verdict, so only such a
/// frame is worth the checksum over its payload.
///
/// This is what keeps the scan linear when the bytes after `x` are a recycled file's old
/// contents (up to a whole segment of them): every word there starts a would-be frame,
/// and a payload word that happens to read as a length of a few MiB would cost a
/// checksum of that many bytes. An old frame itself never passes: its hint is below the
/// start of the segment it was written in, which truncation gave up before recycling the
/// file, so below the log's first segment and below `x`.
fn could_prove_durable(header: &[u8], x: Lsn, q: Lsn) -> bool {
    if header.len() < frame::RECORD_HEADER {
        return false;
    }
    let len_kind = u32::from_le_bytes(header[..4].try_into().unwrap());
    let hint = Lsn(u64::from_le_bytes(header[8..16].try_into().unwrap()));
    len_kind & frame::PAD_FLAG == 0 && hint > x && hint <= q
}

/// The first record of the segments after `x_segment`, reading each from its start along
/// its frames (every segment starts on a frame). A later segment the daemon wrote holds a
/// record there or after padding; a segment prepared ahead holds zeros, or a recycled
/// file's old frames, none of which verify at this segment's positions. Reading the frame
/// chain rather than trying every position keeps this linear and keeps a chance checksum
/// match in old bytes from calling a healthy log corrupt.
fn first_record_of_later_segments(
    window: &mut SegmentWindow,
    starts: &[Lsn],
    x_segment: Lsn,
    last_end: Lsn,
) -> Result<Option<Lsn>> {
    for &seg in starts.iter().filter(|&&s| s > x_segment) {
        let end = window.data_end(seg)?.min(last_end);
        let mut q = seg;
        while q < end {
            match window.decode(q, last_end)? {
                Decoded::Record { .. } => return Ok(Some(q)),
                Decoded::Padding { frame_len } => q = q.add(frame_len),
                Decoded::Invalid(_) => break,
            }
        }
    }
    Ok(None)
}

/// Bytes of zeros written per call when cutting a tail.
const ZERO_CHUNK: u64 = 64 << 10;
/// Bytes the evidence scan looks at per read.
const CHUNK_BYTES: u64 = 64 << 10;

pub(crate) struct Recovered {
    pub(crate) info: RecoveryInfo,
    pub(crate) segment_bytes: u64,
    pub(crate) list: SegmentList,
}

impl Recovered {
    /// The log recovered as the segments of `list` up to the one starting at
    /// `keep_through` (those past it are cut, or left unread by a read-only open).
    fn through(
        mut info: RecoveryInfo,
        list: &SegmentList,
        keep_through: Lsn,
        segment_bytes: u64,
    ) -> Recovered {
        let kept: Vec<Lsn> = (list.starts.iter().copied())
            .filter(|&s| s <= keep_through)
            .collect();
        info.segments = kept.len();
        Recovered {
            info,
            segment_bytes,
            list: SegmentList {
                starts: kept,
                segment_bytes: Some(segment_bytes),
            },
        }
    }
}

/// Finds the end of the log in `dirs`. `read_only`: write nothing — the directories and
/// segments are synced through read-only handles before the scan all the same (a sync
/// changes no byte; see `segment::scan_dir_read_only`), and a torn tail is left as it is
/// (the log simply ends before it).
pub(crate) fn recover(
    storage: &Arc<dyn Storage>,
    dirs: &Arc<LogDirs>,
    default_segment_bytes: u64,
    read_only: bool,
) -> Result<Recovered> {
    let list = segment::scan_dirs(&**storage, dirs, read_only)?;
    let segment_bytes = list.segment_bytes.unwrap_or(default_segment_bytes);
    let Some(&first) = list.starts.first() else {
        return Ok(Recovered {
            info: RecoveryInfo::default(),
            segment_bytes,
            list,
        });
    };
    let mut window = SegmentWindow::new(storage.clone(), dirs.clone(), segment_bytes);
    // The end of the newest segment's file: nothing past it was ever written. (A file
    // shorter than its segment before the newest one ends that segment's data likewise:
    // the scan finds no frame at its end, as at any other end of the written log.)
    let last_end = window.data_end(*list.starts.last().unwrap())?;
    let mut pos = first;
    let mut records = 0u64;
    let mut bad = None;
    while pos < last_end {
        match window.decode(pos, last_end)? {
            Decoded::Record { frame_len, .. } => {
                records += 1;
                pos = pos.add(frame_len);
            }
            Decoded::Padding { frame_len } => pos = pos.add(frame_len),
            Decoded::Invalid(why) => {
                bad = Some(why);
                break;
            }
        }
    }
    let mut info = RecoveryInfo {
        start: first,
        end: pos,
        records,
        cut_bytes: 0,
        segments: list.starts.len(),
    };
    let Some(why) = bad else {
        return Ok(Recovered {
            info,
            segment_bytes,
            list,
        });
    };

    // Evidence scan: every aligned position after `pos`.
    let x = pos;
    let mut max_hint = Lsn(0);
    let x_segment = segment::segment_start(x, segment_bytes);
    let x_file_end = window.data_end(x_segment)?;
    let x_file_short = x_file_end < x_segment.add(segment_bytes);
    let mut last_nonzero_end = x;
    let mut p = x;
    let mut nonzero = Vec::new();
    while p < last_end {
        let seg = segment::segment_start(p, segment_bytes);
        if p >= window.data_end(seg)? {
            p = seg.add(segment_bytes); // past this segment's file: nothing there
            continue;
        }
        // A chunk at a time, noting the words that are not zero (the scan covers up to
        // a whole segment, and in a debug build a call per word is what made a reopen
        // slow), then looking for a frame at each of them.
        let chunk = window.bytes(p, CHUNK_BYTES, last_end)?;
        assert!(!chunk.is_empty() && chunk.len().is_multiple_of(frame::ALIGN as usize));
        nonzero.clear();
        nonzero.extend(
            chunk
                .chunks_exact(frame::ALIGN as usize)
                .enumerate()
                .filter(|(_, word)| word.iter().any(|&b| b != 0))
                .map(|(i, _)| p.add(i as u64 * frame::ALIGN)),
        );
        let next = p.add(chunk.len() as u64);
        for &q in &nonzero {
            last_nonzero_end = q.add(frame::ALIGN);
            if q > x && could_prove_durable(window.bytes(q, 16, last_end)?, x, q) {
                if let Decoded::Record { hint, .. } = window.decode(q, last_end)? {
                    debug_assert!(hint > x);
                    max_hint = max_hint.max(hint);
                }
            }
        }
        p = next;
    }
    // A verifying record in a segment after `x`'s, if `x`'s file is shorter than its
    // segment: the daemon only writes a segment after writing the one before it to its
    // end, which it only does once that file is whole (extended and synced). No crash
    // shortens a synced file, so that file was damaged.
    let later_record = if x_file_short {
        first_record_of_later_segments(&mut window, &list.starts, x_segment, last_end)?
    } else {
        None
    };
    if let (true, Some(later)) = (x_file_short, later_record) {
        return Err(WalError::Corruption {
            lsn: x,
            reason: format!(
                "{}: the segment file ends at LSN {x_file_end}, short of the segment's \
                 end, but a later segment holds a record at LSN {later}",
                why.describe()
            ),
        });
    }

    if max_hint > x {
        return Err(WalError::Corruption {
            lsn: x,
            reason: format!(
                "{}, but a later record proves the log was durable up to LSN {max_hint}",
                why.describe()
            ),
        });
    }
    let keep_through = segment::segment_start(x, segment_bytes);
    if read_only {
        // The tail stays on disk; nothing reads past the end.
        return Ok(Recovered::through(info, &list, keep_through, segment_bytes));
    }
    // A tail: zero it, drop whole segments past it, and make that durable.
    info.cut_bytes = last_nonzero_end.0 - x.0;
    let mut zero_from = x;
    while zero_from < last_nonzero_end {
        let seg = segment::segment_start(zero_from, segment_bytes);
        if seg > keep_through {
            break;
        }
        // Nothing lies past the segment's file: no zeros are written there.
        let seg_end = window.data_end(seg)?.0.min(last_nonzero_end.0);
        if zero_from.0 >= seg_end {
            break;
        }
        let f = segment::open(&**storage, dirs.dir_of(seg, segment_bytes), seg)?;
        // In bounded chunks: the tail can be as long as a segment, whose size came from a
        // header on disk.
        let zeros = vec![0u8; ZERO_CHUNK.min(seg_end - zero_from.0) as usize];
        while zero_from.0 < seg_end {
            let n = ZERO_CHUNK.min(seg_end - zero_from.0);
            f.write_at(
                &zeros[..n as usize],
                SEGMENT_HEADER_BYTES + (zero_from.0 - seg.0),
            )?;
            zero_from = zero_from.add(n);
        }
        f.sync_data()?;
        assert_eq!(zero_from, Lsn(seg_end));
    }
    // Newest first: a crash keeps a prefix of the directory changes, and removing from
    // the end means any prefix still leaves the segments contiguous. (Oldest first, a
    // crash during this recovery could keep a later segment and lose an earlier one:
    // the next open then finds a gap. The crash sweep found that once a segment was
    // always prepared ahead.)
    //
    // Across several directories (devices) a crash keeps a prefix of each one's changes,
    // not of all of them together: each removal is made durable before the next, so the
    // segments left are always contiguous.
    let mut unsynced = None;
    for &s in list.starts.iter().rev().filter(|&&s| s > keep_through) {
        let dir = dirs.dir_of(s, segment_bytes);
        if let Some(prev) = unsynced.filter(|&p: &&Path| p != dir) {
            storage.sync_dir(prev)?;
        }
        storage.remove(&dir.join(segment::segment_name(s)))?;
        unsynced = Some(dir);
    }
    if let Some(dir) = unsynced {
        storage.sync_dir(dir)?;
    }
    Ok(Recovered::through(info, &list, keep_through, segment_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_at(lsn: Lsn, hint: Lsn, payload: &[u8]) -> Vec<u8> {
        let mut f =
            frame::record_header(payload.len(), frame::payload_crc(payload), lsn, hint).to_vec();
        f.extend_from_slice(payload);
        f.resize(frame::frame_len(payload.len()) as usize, 0);
        f
    }

    #[test]
    fn only_a_record_whose_hint_lies_past_x_is_worth_a_checksum() {
        let (x, q) = (Lsn(1 << 20), Lsn((1 << 20) + 4096));
        // A recycled file's old frame: its hint lies below the log's start, so below x.
        let old = record_at(Lsn(4096), Lsn(2048), b"old");
        assert!(!could_prove_durable(&old, x, q));
        // A record written after x was durable-proof of bytes past x.
        assert!(could_prove_durable(&record_at(q, x.add(8), b"new"), x, q));
        // Its hint at x itself proves nothing about x; above q it is no record at all.
        assert!(!could_prove_durable(&record_at(q, x, b"new"), x, q));
        let mut above = record_at(q, x.add(8), b"new");
        above[8..16].copy_from_slice(&(q.0 + 8).to_le_bytes());
        assert!(!could_prove_durable(&above, x, q));
        // Padding carries no hint; a short header is no frame.
        assert!(!could_prove_durable(&frame::pad_header(64, q), x, q));
        assert!(!could_prove_durable(
            &record_at(q, x.add(8), b"new")[..12],
            x,
            q
        ));
    }
}
