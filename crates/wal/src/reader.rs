//! Reading frames back from segment files.

use crate::error::{Result, WalError};
use crate::frame::{self, Decoded};
use crate::segments::dirs::LogDirs;
use crate::segments::segment::{self, SEGMENT_HEADER_BYTES};
use crate::Lsn;
use sluice_storage::{FileHandle, Storage};
use std::sync::Arc;

const CHUNK: u64 = 256 << 10;

/// A window of one segment's bytes, read in chunks.
pub(crate) struct SegmentWindow {
    storage: Arc<dyn Storage>,
    dirs: Arc<LogDirs>,
    segment_bytes: u64,
    file: Option<(Lsn, Box<dyn FileHandle>)>,
    buf: Vec<u8>,
    buf_start: Lsn,
}

impl SegmentWindow {
    pub(crate) fn new(storage: Arc<dyn Storage>, dirs: Arc<LogDirs>, segment_bytes: u64) -> Self {
        SegmentWindow {
            storage,
            dirs,
            segment_bytes,
            file: None,
            buf: Vec::new(),
            buf_start: Lsn(0),
        }
    }

    /// Opens segment `seg` (if it is not the open one already).
    fn open(&mut self, seg: Lsn) -> Result<&dyn FileHandle> {
        if self.file.as_ref().map(|f| f.0) != Some(seg) {
            // Read-only: this only reads, and a read-only log may lie on media it
            // cannot write.
            let dir = self.dirs.dir_of(seg, self.segment_bytes);
            self.file = Some((seg, segment::open_read(&*self.storage, dir, seg)?));
        }
        Ok(&*self.file.as_ref().unwrap().1)
    }

    /// The end of segment `seg`'s data on disk: its file may be shorter than the segment
    /// (see the `segment` module docs). Asked afresh each time: a live log's preparer
    /// extends the file.
    pub(crate) fn data_end(&mut self, seg: Lsn) -> Result<Lsn> {
        let segment_bytes = self.segment_bytes;
        let len = self.open(seg)?.len()?;
        Ok(seg.add(segment::extent_of_file(len, segment_bytes)))
    }

    /// The bytes from `lsn` to at most `want` bytes further, clipped at `limit`, at the
    /// end of `lsn`'s segment and at the end of the segment's file (so possibly none).
    pub(crate) fn bytes(&mut self, lsn: Lsn, want: u64, limit: Lsn) -> Result<&[u8]> {
        let seg = segment::segment_start(lsn, self.segment_bytes);
        let mut end = limit
            .0
            .min(seg.0 + self.segment_bytes)
            .min(lsn.0 + want.max(1));
        let buf_end = self.buf_start.0 + self.buf.len() as u64;
        if !(lsn >= self.buf_start && end <= buf_end && self.buf_start >= seg) {
            // The buffer only ever holds bytes the file has, so a request it covers needs
            // no clipping at the file's end; one it does not is clipped here.
            let data_end = self.data_end(seg)?.0;
            let read_end = limit
                .0
                .min(seg.0 + self.segment_bytes)
                .min(data_end)
                .min(lsn.0 + want.max(CHUNK))
                .max(lsn.0);
            end = end.min(read_end);
            self.buf.clear();
            self.buf.resize((read_end - lsn.0) as usize, 0);
            let f = &self.file.as_ref().unwrap().1;
            f.read_exact_at(&mut self.buf, SEGMENT_HEADER_BYTES + (lsn.0 - seg.0))?;
            self.buf_start = lsn;
        }
        let from = (lsn.0 - self.buf_start.0) as usize;
        Ok(&self.buf[from..from + (end - lsn.0) as usize])
    }

    /// Decodes the frame at `lsn` (frames may not run past `limit` or the segment end).
    pub(crate) fn decode(&mut self, lsn: Lsn, limit: Lsn) -> Result<Decoded<'_>> {
        // Read the header first to learn the length, then the whole frame.
        let head = self.bytes(lsn, frame::RECORD_HEADER as u64, limit)?;
        let want = if head.len() >= 4 {
            let len_kind = u32::from_le_bytes(head[..4].try_into().unwrap());
            if len_kind & frame::PAD_FLAG != 0 {
                // A padding frame's length covers the whole frame; decode checks it fits.
                ((len_kind & !frame::PAD_FLAG) as u64).max(frame::PAD_HEADER as u64)
            } else {
                frame::frame_len(len_kind as usize)
            }
        } else {
            frame::RECORD_HEADER as u64
        };
        let bytes = self.bytes(lsn, want, limit)?;
        Ok(frame::decode(bytes, lsn))
    }
}

/// A record read back from the log: where its frame lies and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// The record's LSN (its frame's first byte).
    pub lsn: Lsn,
    /// The position just past its frame, as [`crate::Appended::end`] gave it: the LSN a
    /// page stamped with this record's change carries, and the durable position that
    /// covers it. Readers take it from here rather than recompute the framing.
    pub end: Lsn,
    /// The record's bytes.
    pub payload: Vec<u8>,
}

/// Iterates the records of a log from an LSN up to a limit, in LSN order.
///
/// Yields a [`ReadRecord`] for each. Stops at the limit; a frame that does not verify
/// before the limit is reported as [`WalError::Corruption`] with its LSN (the limit is
/// durable data).
pub struct LogReader {
    window: SegmentWindow,
    segment_bytes: u64,
    pos: Lsn,
    limit: Lsn,
    failed: bool,
}

impl LogReader {
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        dirs: Arc<LogDirs>,
        segment_bytes: u64,
        from: Lsn,
        limit: Lsn,
    ) -> LogReader {
        LogReader {
            window: SegmentWindow::new(storage, dirs, segment_bytes),
            segment_bytes,
            pos: from,
            limit,
            failed: false,
        }
    }

    /// The position of the next frame the reader looks at.
    pub fn position(&self) -> Lsn {
        self.pos
    }

    fn step(&mut self) -> Result<Option<ReadRecord>> {
        loop {
            if self.pos >= self.limit {
                return Ok(None);
            }
            let at = self.pos;
            match self.window.decode(at, self.limit)? {
                Decoded::Record {
                    payload, frame_len, ..
                } => {
                    let payload = payload.to_vec();
                    debug_assert_eq!(frame_len, frame::frame_len(payload.len()));
                    self.pos = at.add(frame_len);
                    return Ok(Some(ReadRecord {
                        lsn: at,
                        end: self.pos,
                        payload,
                    }));
                }
                Decoded::Padding { frame_len } => self.pos = at.add(frame_len),
                Decoded::Invalid(why) => {
                    // Padding to a segment end is written in one piece; anything else
                    // invalid below the limit is damage to durable data.
                    return Err(WalError::Corruption {
                        lsn: at,
                        reason: why.describe().to_string(),
                    });
                }
            }
            debug_assert!(self.pos.0.is_multiple_of(frame::ALIGN));
            let _ = self.segment_bytes;
        }
    }
}

impl Iterator for LogReader {
    type Item = Result<ReadRecord>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
