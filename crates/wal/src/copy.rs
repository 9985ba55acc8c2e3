//! Copying a log's segment files somewhere else (an online backup of the log), and
//! cutting a copied log at an LSN (a point-in-time restore).
//!
//! A copy is made of the segment files as they are, byte for byte, so it reads exactly as
//! the log does: the same frames at the same LSNs (a frame's checksum binds its LSN),
//! the same padding at each segment's end. Only the last file differs: it is copied up to
//! the LSN the copy ends at, so nothing past that end (records not yet durable, or a
//! recycled file's old bytes) is in it; a segment file may be shorter than its segment
//! (see the `segment` module docs), and recovery takes its end as the log's end.
//!
//! Everything goes through the [`Storage`] seam, written under a temporary name, synced,
//! renamed and the directory synced, so a crash leaves each file either absent or whole.

use crate::error::{Result, WalError};
use crate::segments::dirs::LogDirs;
use crate::segments::segment::{self, segment_name, SEGMENT_HEADER_BYTES};
use crate::{Log, LogReader, Lsn};
use sluice_storage::{OpenOptions, Storage};
use std::path::Path;
use std::sync::Arc;

/// Bytes read and written per step of a log copy.
pub const COPY_STEP_BYTES: u64 = 1 << 20;

/// What [`Log::copy_segments`] copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopiedSegments {
    /// Each copied segment: its start LSN and the length of its copy, in LSN order.
    pub files: Vec<(Lsn, u64)>,
    /// Bytes copied in all.
    pub bytes: u64,
}

impl Log {
    /// The storage the log's files are on.
    pub fn storage(&self) -> Arc<dyn Storage> {
        self.shared.segments.storage.clone()
    }

    /// The log's id, if it has one: a log of several directories always does, one of a
    /// single directory once it has been archived. Its archive names it
    /// ([`crate::dirs::read_archive_log_id`]), so a copy of the log (a backup) that records
    /// it can tell its own log's archive from another's.
    pub fn id(&self) -> Result<Option<u64>> {
        let s = &self.shared.segments;
        crate::dirs::read_log_id(&*s.storage, s.dirs.first())
    }

    /// Copies the segment files holding the log's records in `[from, to)` into the
    /// directory `dest` on `dest_storage` (one directory, whatever the log's own
    /// layout: a copy reads as an ordinary one-directory log). Each segment is copied
    /// whole but the one holding `to`, which is copied up to `to` and no further; a
    /// segment starting at `to` is not copied. `progress` is told the bytes copied so
    /// far after each step.
    ///
    /// `to` must be durable and `from` still in the log; the caller keeps the segments
    /// from being truncated while the copy runs (the engine pins them), and the writer
    /// only appends past the durable end, so what is copied does not change under it.
    /// `dest` must exist; files of the same names in it are replaced.
    pub fn copy_segments(
        &self,
        dest_storage: &dyn Storage,
        dest: &Path,
        (from, to): (Lsn, Lsn),
        progress: &mut dyn FnMut(u64),
    ) -> Result<CopiedSegments> {
        let s = &*self.shared;
        let durable = s.buffer.durable();
        if from < self.start_lsn() || to > durable || from > to {
            return Err(WalError::InvalidArgument(format!(
                "cannot copy the log's LSNs [{from}, {to}): it holds [{}, {durable})",
                self.start_lsn()
            )));
        }
        let bytes_per = s.segments.segment_bytes;
        let mut out = CopiedSegments {
            files: Vec::new(),
            bytes: 0,
        };
        let mut seg = segment::segment_start(from, bytes_per);
        while seg < to {
            let end = to.0.min(seg.0 + bytes_per);
            let len = SEGMENT_HEADER_BYTES + (end - seg.0);
            let dir = s.segments.dirs.dir_of(seg, bytes_per);
            let source = dir.join(segment_name(seg));
            let done = out.bytes;
            copy_file(
                &*s.segments.storage,
                &source,
                (dest_storage, dest, &segment_name(seg)),
                (Some(len), COPY_STEP_BYTES),
                &mut |n| progress(done + n),
            )?;
            out.files.push((seg, len));
            out.bytes += len;
            seg = seg.add(bytes_per);
        }
        dest_storage
            .sync_dir(dest)
            .map_err(|e| named(dest, "sync the directory", e))?;
        Ok(out)
    }
}

/// Copies the file `source` on `source_storage` to `name` in `dir` on `dest_storage`:
/// written as `name.tmp`, synced, renamed; the caller syncs `dir` when the name must be
/// durable. With `len`, exactly that many bytes are copied and a shorter source is an
/// error; without, the whole file. Each step reads and writes `step` bytes (at least
/// one). Returns the bytes copied. `progress` is told the bytes copied so far after each
/// step.
pub fn copy_file(
    source_storage: &dyn Storage,
    source: &Path,
    (dest_storage, dir, name): (&dyn Storage, &Path, &str),
    (len, step): (Option<u64>, u64),
    progress: &mut dyn FnMut(u64),
) -> Result<u64> {
    let step = step.max(1);
    let src = source_storage
        .open(source, OpenOptions::READ_ONLY)
        .map_err(|e| named(source, "open", e))?;
    let have = src
        .len()
        .map_err(|e| named(source, "read the length of", e))?;
    let len = match len {
        Some(l) if l > have => {
            return Err(named(
                source,
                "copy",
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("it is {have} bytes, but {l} were to be copied from it"),
                ),
            ))
        }
        Some(l) => l,
        None => have,
    };
    let tmp = dir.join(format!("{name}.tmp"));
    let target = dir.join(name);
    let dst = dest_storage
        .open(
            &tmp,
            OpenOptions {
                truncate: true,
                ..OpenOptions::CREATE
            },
        )
        .map_err(|e| named(&tmp, "create", e))?;
    let mut buf = vec![0u8; step.min(len.max(1)) as usize];
    let mut at = 0u64;
    while at < len {
        let n = (len - at).min(step) as usize;
        src.read_exact_at(&mut buf[..n], at)
            .map_err(|e| named(source, "read", e))?;
        dst.write_at(&buf[..n], at)
            .map_err(|e| named(&tmp, "write", e))?;
        at += n as u64;
        progress(at);
    }
    dst.sync_data().map_err(|e| named(&tmp, "sync", e))?;
    drop(dst);
    dest_storage
        .rename(&tmp, &target)
        .map_err(|e| named(&target, "rename into place", e))?;
    Ok(len)
}

/// Cuts the one-directory log in `dir` at `at`: the segment holding `at` ends there (its
/// file is shortened to it) and every later segment file is removed, newest first, so a
/// crash in between leaves the segments contiguous. A segment starting exactly at `at` is
/// removed. The directory is synced. `at` must be a record boundary: the log then reads
/// exactly the records below it.
pub fn cut_log_dir(storage: &dyn Storage, dir: &Path, at: Lsn) -> Result<()> {
    let list = segment::scan_dir(storage, dir)?;
    let Some(bytes_per) = list.segment_bytes else {
        return Ok(());
    };
    for &start in list.starts.iter().rev() {
        if start >= at {
            let path = dir.join(segment_name(start));
            storage
                .remove(&path)
                .map_err(|e| named(&path, "remove", e))?;
            storage
                .sync_dir(dir)
                .map_err(|e| named(dir, "sync the directory", e))?;
        } else if start.0 + bytes_per > at.0 {
            let path = dir.join(segment_name(start));
            let f = storage
                .open(&path, OpenOptions::EXISTING)
                .map_err(|e| named(&path, "open", e))?;
            let len = SEGMENT_HEADER_BYTES + (at.0 - start.0);
            if f.len().map_err(|e| named(&path, "read the length of", e))? > len {
                f.set_len(len).map_err(|e| named(&path, "shorten", e))?;
                f.sync_data().map_err(|e| named(&path, "sync", e))?;
            }
        }
    }
    Ok(())
}

/// Reads the records of the segment files in the one directory `dir` — a copy of a log,
/// such as a backup's or an archive — in place, from `from` (a record boundary) to
/// `limit`: no lock, no recovery, nothing written or synced. A frame that does not verify
/// below `limit` is [`WalError::Corruption`] at its LSN, and so is a file that ends
/// before it; `segment_bytes` must be the segments' size (from a header:
/// [`segment::decode_header`]).
pub fn read_segment_files(
    storage: Arc<dyn Storage>,
    dir: &Path,
    segment_bytes: u64,
    (from, limit): (Lsn, Lsn),
) -> LogReader {
    LogReader::new(
        storage,
        Arc::new(LogDirs::single(dir)),
        segment_bytes,
        from,
        limit,
    )
}

fn named(path: &Path, what: &str, e: std::io::Error) -> WalError {
    WalError::Io(std::sync::Arc::new(std::io::Error::new(
        e.kind(),
        format!("cannot {what} {}: {e}", path.display()),
    )))
}
