//! Segment files.
//!
//! The log stream is cut into segments of `segment_bytes` LSN bytes each; segment `k`
//! holds LSNs `[k·S, (k+1)·S)` and is named by its start LSN (`{start:016x}.wal`). A file
//! is a 4 KiB header block followed by the segment's first `extent` bytes, allocated
//! (`FileHandle::allocate`: blocks reserved, nothing written — or zeros written, as
//! [`Preallocate`] says; never a sparse file) and synced, so that the `fdatasync` after a
//! log write never has to persist a size change or a block allocation. Nothing reads
//! those bytes as zeros: past the daemon's last write lie zeros, a recycled file's old
//! frames or a crash's junk, and recovery ends the log at the first frame that does not
//! verify whatever the bytes (ARCHITECTURE.md, Segments, has the crash analysis). The
//! extent may be shorter than the segment: the end of the file is the end of the
//! segment's data, and the segment preparer (`prepare.rs`) extends the file ahead of the
//! flush daemon, so an empty log costs a few KiB rather than a whole segment.
//!
//! A log may span several directories (horizontal partitioning, see the `dirs` module):
//! segment `k` lives in directory `k mod D`, every function here takes the directory the
//! segment maps to, and `scan_dirs` checks that each file lies in its own. A retired
//! file stays in its directory, so it is only recycled as a segment that maps there.
//!
//! Creation is atomic: the header is written to `{name}.tmp`, the file is extended and
//! synced, renamed to its final name, and the directory synced. A file with a final name
//! therefore always carries a valid, durable header; a bad header is corruption, never a
//! crash artefact. Leftover `.tmp` files are removed on open.
//!
//! Recycling: a finished segment that truncation no longer needs is renamed to
//! `{old start}.wal.free` ([`retire`]) instead of removed, and later becomes a new segment
//! ([`recycle`]): its header is rewritten for the new start and synced while it still has
//! the free name, then it is renamed to its final name and the directory synced — the same
//! order as creation, so the invariant above holds. Its old frames stay in the file; a
//! frame's checksum binds its LSN, so they never verify at the new positions (see the
//! `frame` module). Leftover `.free` files are removed on open. Segment sizes are bounded
//! ([`MIN_SEGMENT_BYTES`]..=[`MAX_SEGMENT_BYTES`]) and no segment reaches past
//! [`MAX_LSN`], so a header with a valid checksum but extreme values is corruption, never
//! an overflow.

use super::dirs::LogDirs;
use crate::error::{io_context, Result, WalError};
use crate::{Lsn, Preallocate};
use sluice_storage::{failpoint, FileHandle, OpenOptions, Storage, SyncFence};
use std::path::{Path, PathBuf};

/// Bytes of the header block in front of each segment's data.
pub const SEGMENT_HEADER_BYTES: u64 = 4096;
/// The smallest segment: one header block's worth, so a segment holds a few frames.
pub const MIN_SEGMENT_BYTES: u64 = 4096;
/// The largest segment the log makes or accepts. A header that claims more is damage (it
/// would also make recovery size its reads by it), an option that asks for more a mistake.
pub const MAX_SEGMENT_BYTES: u64 = 1 << 30;
/// No segment reaches past this LSN (4 EiB of log: never reached by a real one). It is far
/// enough below `u64::MAX` that no LSN arithmetic on a valid segment can overflow, however
/// a header with a valid checksum was filled in.
pub const MAX_LSN: u64 = 1 << 62;
const _: () = assert!(MAX_LSN.is_multiple_of(MAX_SEGMENT_BYTES) && MAX_LSN < u64::MAX / 2);
const MAGIC: &[u8; 8] = b"SLUICEWL";
const VERSION: u32 = 1;
/// Bytes of the header that carry data (the rest of the block is zero).
const HEADER_USED: usize = 36;
const SUFFIX: &str = ".wal";
/// Bytes of zeros written per call when preallocating with zeros.
const ZERO_CHUNK: usize = 1 << 20;
/// The most data bytes a new log's first segment file starts with (64 KiB: an empty
/// database's log is a header block and this; each extension doubles it).
pub const INITIAL_EXTENT_BYTES: u64 = 64 << 10;
const TMP_SUFFIX: &str = ".wal.tmp";
/// The name suffix of a retired segment file waiting to be recycled.
const FREE_SUFFIX: &str = ".wal.free";

/// A segment's file name.
pub fn segment_name(start: Lsn) -> String {
    format!("{:016x}{SUFFIX}", start.0)
}

/// The name of the retired file that was segment `old_start`, waiting to be recycled.
pub fn free_name(old_start: Lsn) -> String {
    format!("{:016x}{FREE_SUFFIX}", old_start.0)
}

/// Parses a segment file name back to its start LSN.
pub fn parse_segment_name(name: &str) -> Option<Lsn> {
    let hex = name.strip_suffix(SUFFIX)?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(Lsn)
}

/// Encodes a segment header.
pub fn encode_header(start: Lsn, segment_bytes: u64) -> [u8; HEADER_USED] {
    let mut h = [0u8; HEADER_USED];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&start.0.to_le_bytes());
    h[24..32].copy_from_slice(&segment_bytes.to_le_bytes());
    let crc = crc32c::crc32c(&h[..32]);
    h[32..36].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Decodes a segment header, checking it against the start its name gives. Returns the
/// segment size it records. Never panics on any input.
pub fn decode_header(bytes: &[u8], named_start: Lsn) -> Result<u64> {
    let bad = |reason: String| WalError::Corruption {
        lsn: named_start,
        reason,
    };
    if bytes.len() < HEADER_USED {
        return Err(bad("segment header is truncated".into()));
    }
    if &bytes[..8] != MAGIC {
        return Err(bad("segment header has a bad magic number".into()));
    }
    let crc = u32::from_le_bytes(bytes[32..36].try_into().unwrap());
    if crc32c::crc32c(&bytes[..32]) != crc {
        return Err(bad("segment header checksum mismatch".into()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version != VERSION {
        return Err(bad(format!(
            "segment format version {version} is not supported (expected {VERSION})"
        )));
    }
    let start = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
    if start != named_start.0 {
        return Err(bad(format!(
            "segment header says it starts at LSN {start}, its name says {named_start}"
        )));
    }
    let segment_bytes = u64::from_le_bytes(bytes[24..32].try_into().unwrap());
    if !(MIN_SEGMENT_BYTES..=MAX_SEGMENT_BYTES).contains(&segment_bytes)
        || segment_bytes % crate::frame::ALIGN != 0
        || start % segment_bytes != 0
    {
        return Err(bad(format!(
            "segment header has an impossible size {segment_bytes}"
        )));
    }
    if start
        .checked_add(segment_bytes)
        .is_none_or(|end| end > MAX_LSN)
    {
        return Err(bad(format!(
            "segment header says the segment starts at LSN {start}: it would reach past \
             the largest LSN {MAX_LSN}"
        )));
    }
    Ok(segment_bytes)
}

/// The segments found in a log directory.
#[derive(Debug, Clone, Default)]
pub struct SegmentList {
    /// Start LSNs, ascending, contiguous.
    pub starts: Vec<Lsn>,
    /// LSN bytes per segment (from their headers).
    pub segment_bytes: Option<u64>,
}

/// Makes what an earlier incarnation left in the page cache durable, then drops the cache,
/// so that what recovery reads next is exactly what the device holds.
///
/// After a process kill the cache holds writes that were never synced: syncing them is
/// what makes it right to call them durable. After a failed fsync (Linux marks the failed
/// pages clean) the cache may hold writes the device never got and never will, and this
/// sync succeeds without writing them: dropping the cache hides them from the scan.
///
/// `read_only`: the same through a read-only handle (`sluice_storage::settle`): a sync
/// changes no byte, and a read-only open that read the cache unsynced showed records a
/// power loss could still take away.
fn settle(
    storage: &dyn Storage,
    dir: &Path,
    start: Lsn,
    read_only: bool,
) -> Result<Box<dyn FileHandle>> {
    let how = if read_only {
        OpenOptions::READ_ONLY
    } else {
        OpenOptions::EXISTING
    };
    let f = storage.open(&dir.join(segment_name(start)), how)?;
    sluice_storage::settle(&*f, read_only)
        .map_err(|e| io_context("recovery cannot make the log durable before reading it", e))?;
    Ok(f)
}

/// Lists, validates and orders the segments in `dir`, removing leftover temporary files.
/// Every segment is made durable and read from the device (synced, then its cache
/// dropped); the directory is synced first, so that every entry recovery goes on to use
/// is durable too. Fails on a bad header or a gap between segments, and on a sync that
/// fails.
pub fn scan_dir(storage: &dyn Storage, dir: &Path) -> Result<SegmentList> {
    scan_dirs(storage, &LogDirs::single(dir), false)
}

/// [`scan_dir`] for a reader that may change nothing: leftover temporary files are
/// skipped, not removed, and the segments are opened read-only. What it reads is made
/// durable first all the same — the directory and every segment are synced and their
/// caches dropped, which changes no byte — so a dead process's unsynced writes are
/// either durable or invisible before anything is read, exactly as for [`scan_dir`]. A
/// file system that cannot sync at all (`sluice_storage::cannot_sync`: read-only media)
/// is read as it is.
pub fn scan_dir_read_only(storage: &dyn Storage, dir: &Path) -> Result<SegmentList> {
    scan_dirs(storage, &LogDirs::single(dir), true)
}

/// True if `dir` holds a segment file (by name; nothing is read).
pub(crate) fn has_segments(storage: &dyn Storage, dir: &Path) -> Result<bool> {
    Ok(storage
        .list(dir)?
        .iter()
        .any(|n| parse_segment_name(n).is_some()))
}

/// [`scan_dir`] over every directory of a partitioned log (see the `dirs` module): the
/// segments of all of them, in one ascending contiguous run, each in the directory its
/// number maps to — a segment found in another directory is corruption.
pub(crate) fn scan_dirs(
    storage: &dyn Storage,
    dirs: &LogDirs,
    read_only: bool,
) -> Result<SegmentList> {
    let mut starts = Vec::new();
    for (index, dir) in dirs.all().iter().enumerate() {
        for name in storage.list(dir)? {
            if name.ends_with(TMP_SUFFIX) || name.ends_with(FREE_SUFFIX) {
                // A creation that crashed before its rename: it never held acknowledged
                // data. A retired file waiting to be recycled: truncation gave its records
                // up (the recycling pool lives in memory and starts empty; see
                // `Log::truncate_below`).
                if !read_only {
                    storage.remove(&dir.join(&name))?;
                }
            } else if let Some(start) = parse_segment_name(&name) {
                starts.push((start, index));
            }
        }
        // Entries an earlier incarnation created, renamed or removed without syncing them
        // (a process kill keeps them in the cache), and the removals above. Read-only
        // too: the listing is trusted next.
        sluice_storage::settle_dir(storage, dir, read_only)
            .map_err(|e| io_context("recovery cannot make the log directory durable", e))?;
    }
    starts.sort();
    let mut size: Option<u64> = None;
    for &(start, index) in &starts {
        let dir = &dirs.all()[index];
        let f = settle(storage, dir, start, read_only)?;
        let mut h = [0u8; HEADER_USED];
        let n = f.read_at(&mut h, 0)?;
        let s = decode_header(&h[..n], start)?;
        match size {
            None => size = Some(s),
            Some(prev) if prev != s => {
                return Err(WalError::Corruption {
                    lsn: start,
                    reason: format!("segment size {s} differs from earlier segments' {prev}"),
                })
            }
            _ => {}
        }
        if dirs.index_of(start, s) != index {
            return Err(WalError::Corruption {
                lsn: start,
                reason: format!(
                    "segment file {} lies in log directory {index} ({}), but its number maps \
                     to directory {} ({})",
                    segment_name(start),
                    dir.display(),
                    dirs.index_of(start, s),
                    dirs.dir_of(start, s).display()
                ),
            });
        }
        // A file shorter than its segment is normal (see the module docs); one shorter
        // than its header block is not: creation syncs the whole block before the
        // rename, and no file is ever shortened.
        let len = f.len()?;
        if len < SEGMENT_HEADER_BYTES {
            return Err(WalError::Corruption {
                lsn: start,
                reason: format!(
                    "segment file {} is {len} bytes, shorter than its {SEGMENT_HEADER_BYTES}-byte header block",
                    segment_name(start)
                ),
            });
        }
    }
    let starts: Vec<Lsn> = starts.into_iter().map(|(s, _)| s).collect();
    if let Some(s) = size {
        for w in starts.windows(2) {
            if w[1].0 != w[0].0 + s {
                let found: Vec<String> = starts.iter().map(|l| l.0.to_string()).collect();
                return Err(WalError::Corruption {
                    lsn: Lsn(w[0].0 + s),
                    reason: format!(
                        "segment starting at LSN {} is missing (segments found start at {})",
                        w[0].0 + s,
                        found.join(", ")
                    ),
                });
            }
        }
    }
    Ok(SegmentList {
        starts,
        segment_bytes: size,
    })
}

/// Data bytes a segment of `segment_bytes` starts with when nothing asks for more: at
/// most [`INITIAL_EXTENT_BYTES`], and a quarter of a small segment (so the logs of the
/// tests, with segments of a few KiB, grow their files too).
pub fn initial_extent(segment_bytes: u64) -> u64 {
    let quarter = segment_bytes / 4 / crate::frame::ALIGN * crate::frame::ALIGN;
    INITIAL_EXTENT_BYTES.min(quarter).max(crate::frame::ALIGN)
}

/// The segment's data bytes that exist on disk, given its file's length: the end of the
/// file is the end of the segment's data. A crash in the middle of an extension may leave
/// any length past the last synced extent; the bytes there were never written with log
/// data, so rounding down to a frame boundary loses nothing.
pub fn extent_of_file(file_len: u64, segment_bytes: u64) -> u64 {
    let data = file_len.saturating_sub(SEGMENT_HEADER_BYTES);
    (data - data % crate::frame::ALIGN).min(segment_bytes)
}

/// How [`extend`] made the space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// Reserved without writing (`FileHandle::allocate`).
    Allocated,
    /// Zeros written: asked for ([`Preallocate::Zeros`]), or the file system cannot
    /// allocate without writing.
    Zeroed,
    /// Nothing to make (`from == to`).
    Nothing,
}

/// Makes the data bytes `[from, to)` of an open segment file exist as `how` says —
/// reserved on the device without being written, or zero-filled — and syncs the file
/// through `fence` under `key` (see [`fence_key`]): after this returns, log data may be
/// written anywhere below `to` and made durable by a plain `fdatasync`, which never has
/// to change the file's length or allocate a block. The new bytes read as zeros either
/// way, but recovery does not rely on it (a recycled file holds old frames there). A
/// crash before it returns leaves a file that ends anywhere in the range, with zeros or
/// junk there but no log data (see [`extent_of_file`]).
pub fn extend(
    f: &dyn FileHandle,
    from: u64,
    to: u64,
    how: Preallocate,
    fence: &SyncFence,
    key: u64,
) -> Result<Made> {
    assert!(from <= to, "extension from {from} back to {to}");
    if from == to {
        return Ok(Made::Nothing);
    }
    // Never a sparse file: a sync after writing into a hole must also commit the block
    // allocation (on ext4 a journal commit), which made every commit's sync several
    // times slower. Allocated blocks are still "unwritten" extents, which the first
    // write into each converts (also journalled, but no allocation and no size change:
    // ARCHITECTURE.md, Segments, has the measurements).
    let allocated = match how {
        Preallocate::Allocate => match f.allocate(SEGMENT_HEADER_BYTES + to) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => false,
            Err(e) => return Err(e.into()),
        },
        Preallocate::Zeros => false,
    };
    if !allocated {
        let zeros = vec![0u8; ZERO_CHUNK.min((to - from) as usize)];
        let mut off = from;
        while off < to {
            let n = (to - off).min(zeros.len() as u64) as usize;
            f.write_at(&zeros[..n], SEGMENT_HEADER_BYTES + off)?;
            off += n as u64;
        }
    }
    fence.sync(key, f)?;
    Ok(if allocated {
        Made::Allocated
    } else {
        Made::Zeroed
    })
}

/// The key segment `start` syncs under in a log's [`SyncFence`]: the preparer extends the
/// file the flush daemon writes, and a failed sync of either drops the other's pages, so
/// both sync it under one key (the segment's number, so that neighbours do not wait).
pub fn fence_key(start: Lsn, segment_bytes: u64) -> u64 {
    start.0 / segment_bytes
}

/// Creates segment `start` atomically (see the module docs), with its first `extent` data
/// bytes made as `how` says ([`extend`]), and returns it open with how they were made.
pub fn create(
    storage: &dyn Storage,
    dir: &Path,
    start: Lsn,
    segment_bytes: u64,
    extent: u64,
    how: Preallocate,
    fence: &SyncFence,
) -> Result<(Box<dyn FileHandle>, Made)> {
    assert_eq!(
        start.0 % segment_bytes,
        0,
        "segment start {start} not on a boundary"
    );
    assert!(
        extent <= segment_bytes && extent.is_multiple_of(crate::frame::ALIGN),
        "extent {extent} of a {segment_bytes}-byte segment"
    );
    let name = segment_name(start);
    let tmp: PathBuf = dir.join(format!("{name}.tmp"));
    let path = dir.join(&name);
    let made = {
        let f = storage.open(&tmp, OpenOptions::CREATE)?;
        f.set_len(0)?;
        f.set_len(SEGMENT_HEADER_BYTES)?;
        f.write_at(&encode_header(start, segment_bytes), 0)?;
        // `extend` syncs the header with the new space (and syncs when there is none).
        let key = fence_key(start, segment_bytes);
        if extent == 0 {
            fence.sync(key, &*f)?;
            Made::Nothing
        } else {
            extend(&*f, 0, extent, how, fence, key)?
        }
    };
    storage.rename(&tmp, &path)?;
    storage.failpoint(failpoint::SEGMENT_RENAMED, &path)?;
    storage.sync_dir(dir)?;
    Ok((storage.open(&path, OpenOptions::EXISTING)?, made))
}

/// Retires finished segment `start`: renames it to [`free_name`], out of the log, to be
/// recycled. The rename is durable only after the caller syncs the directory, and the
/// file must not be written before then: a power loss could undo the rename, and the
/// segment's own name would then carry a header for another start (corruption).
pub fn retire(storage: &dyn Storage, dir: &Path, start: Lsn) -> std::io::Result<()> {
    storage.rename(&dir.join(segment_name(start)), &dir.join(free_name(start)))
}

/// Makes the retired file that was segment `old_start` (its retirement durable) into
/// segment `start`, and returns it open: writes the new header and syncs it under the
/// free name, renames the file to its final name and syncs the directory. The file keeps
/// its length and, past the header, the old segment's bytes: frames of other LSNs, which
/// never verify at this segment's positions, and whose blocks are allocated, written and
/// durable, so writing over them needs neither zeros nor an extent conversion for a log
/// write's `fdatasync` to stay cheap.
///
/// A crash at any step leaves either the free file (removed on open) or segment `start`
/// with its valid, durable header: never a final name with a bad header.
pub fn recycle(
    storage: &dyn Storage,
    dir: &Path,
    old_start: Lsn,
    start: Lsn,
    segment_bytes: u64,
    fence: &SyncFence,
) -> Result<Box<dyn FileHandle>> {
    assert!(
        old_start < start && start.0.is_multiple_of(segment_bytes),
        "recycling segment {old_start} as {start}"
    );
    let free = dir.join(free_name(old_start));
    let path = dir.join(segment_name(start));
    {
        let f = storage.open(&free, OpenOptions::EXISTING)?;
        f.write_at(&encode_header(start, segment_bytes), 0)?;
        fence.sync(fence_key(start, segment_bytes), &*f)?;
    }
    storage.rename(&free, &path)?;
    storage.failpoint(failpoint::SEGMENT_RENAMED, &path)?;
    storage.sync_dir(dir)?;
    Ok(storage.open(&path, OpenOptions::EXISTING)?)
}

/// Opens existing segment `start`.
pub fn open(storage: &dyn Storage, dir: &Path, start: Lsn) -> Result<Box<dyn FileHandle>> {
    Ok(storage.open(&dir.join(segment_name(start)), OpenOptions::EXISTING)?)
}

/// Opens existing segment `start` for reading only.
pub fn open_read(storage: &dyn Storage, dir: &Path, start: Lsn) -> Result<Box<dyn FileHandle>> {
    Ok(storage.open(&dir.join(segment_name(start)), OpenOptions::READ_ONLY)?)
}

/// The start of the segment holding `lsn`.
pub fn segment_start(lsn: Lsn, segment_bytes: u64) -> Lsn {
    Lsn(lsn.0 - lsn.0 % segment_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(segment_name(Lsn(0x1000)), "0000000000001000.wal");
        assert_eq!(
            parse_segment_name("0000000000001000.wal"),
            Some(Lsn(0x1000))
        );
        assert_eq!(parse_segment_name("1000.wal"), None);
        assert_eq!(parse_segment_name("0000000000001000.wal.tmp"), None);
    }

    #[test]
    fn each_bad_header_is_reported() {
        let good = encode_header(Lsn(8192), 4096);
        assert_eq!(decode_header(&good, Lsn(8192)).unwrap(), 4096);
        let expect = |bytes: &[u8], start: Lsn, words: &str| {
            let e = decode_header(bytes, start).unwrap_err().to_string();
            assert!(e.contains(words), "{e:?} lacks {words:?}");
        };
        expect(&good[..10], Lsn(8192), "truncated");
        let mut m = good;
        m[0] = b'X';
        expect(&m, Lsn(8192), "magic");
        let mut c = good;
        c[20] ^= 0xff;
        expect(&c, Lsn(8192), "checksum");
        expect(&good, Lsn(4096), "name says");
        let mut v = encode_header(Lsn(0), 4096);
        v[8] = 9;
        let crc = crc32c::crc32c(&v[..32]);
        v[32..36].copy_from_slice(&crc.to_le_bytes());
        expect(&v, Lsn(0), "version");
        expect(&encode_header(Lsn(0), 100), Lsn(0), "impossible size");
    }

    #[test]
    fn a_file_extent_is_its_aligned_data_length_within_the_segment() {
        let h = SEGMENT_HEADER_BYTES;
        assert_eq!(extent_of_file(0, 8192), 0);
        assert_eq!(extent_of_file(h, 8192), 0);
        assert_eq!(extent_of_file(h + 2048, 8192), 2048);
        // A crash in the middle of an extension: the partial frame slot is not data.
        assert_eq!(extent_of_file(h + 2051, 8192), 2048);
        assert_eq!(extent_of_file(h + 9000, 8192), 8192);
    }

    #[test]
    fn initial_extents_are_small_aligned_and_inside_the_segment() {
        assert_eq!(initial_extent(16 << 20), INITIAL_EXTENT_BYTES);
        assert_eq!(initial_extent(8192), 2048);
        for s in [4096u64, 4104, 8192, 1 << 20, MAX_SEGMENT_BYTES] {
            let e = initial_extent(s);
            assert!(
                e > 0 && e <= s && e.is_multiple_of(crate::frame::ALIGN),
                "{s}: {e}"
            );
        }
    }

    proptest! {
        #[test]
        fn decode_header_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), start in any::<u64>()) {
            let _ = decode_header(&bytes, Lsn(start));
        }
    }
}
