//! A simulated file's contents: what the device holds (`durable`), what the page cache
//! serves to reads (`volatile`), and the write-back queue between them (`pending`).
//!
//! Normally `volatile` is exactly `durable` with `pending` replayed on top. Linux breaks
//! that after a failed fsync ("fsyncgate"): the kernel marks the dirty pages clean, so they
//! never reach the device, yet reads keep returning them until the pages are evicted. The
//! model keeps that state as `orphaned`: the cache holds writes the device never got, and
//! only dropping the cache (or a power loss) shows the device again.

use std::io;

/// The largest file the simulated disk holds. It lives in memory, so a write at an
/// absurd offset (a bug in the caller) must fail cleanly instead of allocating it.
pub(super) const MAX_FILE_BYTES: u64 = 1 << 30;
const _: () = assert!(MAX_FILE_BYTES <= usize::MAX as u64);

/// One unsynced change to a file's contents or length.
#[derive(Debug, Clone)]
pub(super) enum DataOp {
    Write {
        offset: u64,
        bytes: Vec<u8>,
    },
    SetLen(u64),
    /// `allocate`: the length grows to at least this, with zeros; never shrinks.
    Allocate(u64),
}

/// Copies `bytes` into `image` at `offset`, extending it with zeros if needed (what a write
/// past the end of a file does).
pub(super) fn apply_write(image: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let start = usize::try_from(offset).expect("offset checked against MAX_FILE_BYTES");
    let end = start + bytes.len();
    assert!(
        end as u64 <= MAX_FILE_BYTES,
        "write beyond the file size limit"
    );
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(bytes);
}

impl DataOp {
    pub(super) fn apply(&self, image: &mut Vec<u8>) {
        match self {
            DataOp::Write { offset, bytes } => apply_write(image, *offset, bytes),
            DataOp::SetLen(len) => image.resize(*len as usize, 0),
            DataOp::Allocate(len) => {
                if image.len() < *len as usize {
                    image.resize(*len as usize, 0);
                }
            }
        }
    }
}

/// A file's contents (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Inode {
    /// What the device holds: what survives a power loss for certain.
    pub(super) durable: Vec<u8>,
    /// The page cache: what reads see.
    pub(super) volatile: Vec<u8>,
    /// The write-back queue, in order: changes in the cache that the device does not
    /// have yet and that a successful sync would write.
    pub(super) pending: Vec<DataOp>,
    /// True while the cache holds writes that a failed sync dropped from write-back:
    /// `volatile` is then not `durable` plus `pending`.
    pub(super) orphaned: bool,
    /// Open handles of the current incarnation; an open file stays alive when unlinked.
    pub(super) open_handles: u32,
}

impl Inode {
    /// Fails with `FileTooLarge` if a file would grow past [`MAX_FILE_BYTES`].
    pub(super) fn check_size(end: Option<u64>) -> io::Result<()> {
        match end {
            Some(end) if end <= MAX_FILE_BYTES => Ok(()),
            _ => Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("simulated files are limited to {MAX_FILE_BYTES} bytes"),
            )),
        }
    }

    pub(super) fn read(&self, buf: &mut [u8], offset: u64) -> usize {
        let len = self.volatile.len() as u64;
        if offset >= len {
            return 0;
        }
        let start = offset as usize;
        let n = buf.len().min(self.volatile.len() - start);
        buf[..n].copy_from_slice(&self.volatile[start..start + n]);
        n
    }

    /// The caller has checked the size limit.
    pub(super) fn write(&mut self, offset: u64, bytes: &[u8]) {
        if bytes.is_empty() {
            return; // POSIX: a zero-length write changes nothing, not even the length.
        }
        apply_write(&mut self.volatile, offset, bytes);
        self.pending.push(DataOp::Write {
            offset,
            bytes: bytes.to_vec(),
        });
    }

    /// The caller has checked the size limit.
    pub(super) fn set_len(&mut self, len: u64) {
        let op = DataOp::SetLen(len);
        op.apply(&mut self.volatile);
        self.pending.push(op);
    }

    /// The caller has checked the size limit. A file already as long changes nothing and
    /// queues nothing (as `fallocate` over allocated blocks writes nothing back).
    pub(super) fn allocate(&mut self, len: u64) {
        if self.volatile.len() as u64 >= len {
            return;
        }
        let op = DataOp::Allocate(len);
        op.apply(&mut self.volatile);
        self.pending.push(op);
    }

    /// fdatasync: every pending change becomes durable. Replaying the pending changes onto
    /// the durable image costs what was written, not the size of the file. Orphaned writes
    /// stay where they are: in the cache only, and a sync reports success regardless —
    /// exactly what makes a retried fsync a lie on Linux.
    pub(super) fn sync(&mut self) {
        for op in self.pending.drain(..) {
            op.apply(&mut self.durable);
        }
        if !self.orphaned {
            assert_eq!(self.durable.len(), self.volatile.len());
            debug_assert!(self.durable.len() > 1 << 16 || self.durable == self.volatile);
        }
    }

    /// A sync that failed (EIO, ENOSPC): Linux marks the dirty pages clean without writing
    /// them. They leave write-back for good; reads keep seeing them.
    pub(super) fn fail_sync(&mut self) {
        if !self.pending.is_empty() {
            self.pending.clear();
            self.orphaned = true;
        }
    }

    /// Drops the clean cached pages: reads come from the device again, except for changes
    /// still queued for write-back, which stay cached. Only orphaned writes make this
    /// visible; otherwise the cache already is the device plus the queue.
    pub(super) fn drop_cache(&mut self) {
        if !self.orphaned {
            return;
        }
        let mut image = self.durable.clone();
        for op in &self.pending {
            op.apply(&mut image);
        }
        self.volatile = image;
        self.orphaned = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_sync_orphans_the_queue_and_drop_cache_restores_the_device_view() {
        let mut inode = Inode::default();
        inode.write(0, b"durable");
        inode.sync();
        inode.write(0, b"ORPHAN!");
        inode.fail_sync();
        assert!(inode.pending.is_empty() && inode.orphaned);
        inode.write(7, b"+queued");
        inode.sync(); // succeeds, and writes only the queued bytes
        assert_eq!(inode.durable, b"durable+queued");
        assert_eq!(inode.volatile, b"ORPHAN!+queued", "the cache still lies");
        inode.write(0, b"D");
        inode.drop_cache();
        assert_eq!(
            inode.volatile, b"Durable+queued",
            "device plus the queued write"
        );
        assert!(!inode.orphaned);
        inode.sync();
        assert_eq!(inode.durable, inode.volatile);
    }
}
