//! The page-write protocol: the one way a data page reaches the data file.
//!
//! Every writer of a data page — eviction and the checkpoint's sweep
//! ([`BufferPool::write_frame`]), restart recovery's redo pass, the page cleaner's
//! clusters ([`BufferPool::write_cluster`]) and the log cleaner's segments
//! (`propagation::log_cleaner`) — writes through a [`Landing`], and nothing else can:
//! the data file's write methods are private to the buffer pool. A landing keeps the
//! rules that protect the data in one place:
//!
//! 1. **Write-ahead.** The log is durable up to the PageLSN of every page written. The
//!    caller waits for it (with nothing held); the landing asserts it.
//! 2. **Torn pages.** Outside the redo pass, a page is written only if its last full
//!    image is above the image floor, read under the write gate held shared for the
//!    landing's whole life (so no checkpoint moves the floor or its redo point while a
//!    write that decided on the old one is in flight). A page that fails it is not
//!    written ([`Landed::NeedsImage`]): the caller logs an image first, or leaves the
//!    page to someone who can. The redo pass has its own rule (`set_redo`), checked by
//!    its caller, and logs no image.
//! 3. **Never older.** A landing holds the locks of the data-file segments it covers
//!    from the moment it reads what the file holds for its pages until its writes are
//!    done, and writes a page only if the file holds no valid version of it at or above
//!    the PageLSN being written. PageLSNs of a page only grow, so a valid version at or
//!    above ours contains every change ours does; writing ours over it would take
//!    changes back ([`Landed::Superseded`]). This is what orders the writers of one page
//!    among each other: an eviction that copied a page, let its latch go and waited for
//!    the log can no longer land its copy over the newer version the log cleaner wrote
//!    meanwhile (issue 22, defect 1: committed writes reverted under log-based
//!    propagation).
//! 4. **Clean only for what landed.** What the landing reports is what the file holds
//!    afterwards; the caller moves a frame's CleanLSN to the PageLSN of the copy it
//!    wrote (or found superseded), never further, and a cleaner syncs the data file
//!    before any CleanLSN moves.
//!
//! Lock order: the write gate (shared), then segment locks in increasing stripe order.
//! Nobody waits for a page latch while holding either.
//!
//! Each rule is asserted where a page is written, with a message that names it: the
//! landing holds the pool's write gate and the page's stripe lock, the log is durable to
//! the PageLSN, the image LSN is below it, and (debug builds) the page is sealed and the
//! file still holds what the landing read — nothing newer. The callers assert the rest:
//! a frame written is pinned (`write_frame`), and CleanLSN moves, under the frame's I/O
//! lock, never past PageLSN (`Frame::written`).
//!
//! [`BufferPool::write_frame`]: super::BufferPool::write_frame
//! [`BufferPool::write_cluster`]: super::BufferPool::write_cluster

use super::data_file::DataFile;
use super::pool_core::PoolCore;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::page;
use parking_lot::{MutexGuard, RwLockReadGuard};
use std::ptr;
use std::sync::atomic::Ordering;

/// What became of one page given to [`Landing::write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Landed {
    /// Written: the file holds this version (volatile until the data file is synced).
    Written,
    /// Not written: the file already holds a valid version at this PageLSN (the `u64`),
    /// at or above the one given, which contains every change of it.
    Superseded(u64),
    /// Not written: the page's last full image is at or below the image floor, so a
    /// torn write of it could not be repaired. Log an image first.
    NeedsImage,
}

/// Pages `[first, first + count)` of the data file held for writing under the protocol
/// (see the module): the write gate shared and their segments' locks, taken when the
/// landing was made, together with what the file held for each page then.
pub(crate) struct Landing<'a> {
    pool: &'a PoolCore,
    first: PageId,
    /// For each page, the PageLSN of the valid version the file holds (`None`: none —
    /// never written, or torn).
    held: Vec<Option<u64>>,
    /// The image floor, or `None` during the redo pass (whose caller checks its own rule).
    floor: Option<u64>,
    /// Write calls made so far (a run of adjacent pages is one) and the bytes they wrote.
    calls: usize,
    bytes: usize,
    /// The stripe locks of the pages' segments, and the write gate (shared): held for the
    /// landing's life, and checked before each write ([`Landing::assert_holds`]).
    segments: Vec<MutexGuard<'a, ()>>,
    gate: RwLockReadGuard<'a, ()>,
}

impl PoolCore {
    /// Holds pages `[first, first + buf.len() / page_size)` for writing and reads what
    /// the data file holds for them into `buf` (zeros past its end). Takes the write gate
    /// shared and the pages' segment locks, which the landing keeps until dropped: drop
    /// it before waiting for a latch or for the log.
    pub(crate) fn landing<'a>(&'a self, first: PageId, buf: &mut [u8]) -> Result<Landing<'a>> {
        let page_size = self.file.page_size();
        assert!(
            !buf.is_empty() && buf.len().is_multiple_of(page_size),
            "a landing of {} bytes is not whole pages of {page_size}",
            buf.len()
        );
        let count = (buf.len() / page_size) as u64;
        let gate = self.write_gate.read();
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed("database"));
        }
        let floor =
            (!self.redo.load(Ordering::Acquire)).then(|| self.image_floor.load(Ordering::SeqCst));
        let segments = self.file.lock_pages(first, count);
        self.file.read_locked(first, buf)?;
        let held = buf
            .chunks(page_size)
            .enumerate()
            .map(|(k, p)| {
                let id = PageId(first.0 + k as u64);
                (page::checksum_ok(p) && page::validate(p, id).is_ok()).then(|| page::page_lsn(p))
            })
            .collect();
        Ok(Landing {
            pool: self,
            first,
            held,
            floor,
            calls: 0,
            bytes: 0,
            segments,
            gate,
        })
    }
}

impl Landing<'_> {
    /// Write calls made so far (a run of adjacent pages is one), and the bytes written.
    pub(crate) fn written(&self) -> (usize, usize) {
        (self.calls, self.bytes)
    }

    /// Writes the sealed pages `pages` (each `(id, bytes)`, ids within the landing and
    /// increasing) under the protocol's rules, adjacent ones with one write, and says what
    /// became of each. A failed write poisons the pool.
    pub(crate) fn write(&mut self, pages: &[(PageId, &[u8])]) -> Result<Vec<Landed>> {
        let pool = self.pool;
        let durable = pool.log.durable_lsn().0;
        let mut verdicts = Vec::with_capacity(pages.len());
        let mut run: Vec<&[u8]> = Vec::new();
        let mut run_first = PageId::NONE;
        for (n, &(id, bytes)) in pages.iter().enumerate() {
            assert!(
                id.0 >= self.first.0 && id.0 < self.first.0 + self.held.len() as u64,
                "page {id} outside the landing of {} pages from {}",
                self.held.len(),
                self.first
            );
            assert!(
                n == 0 || pages[n - 1].0 .0 < id.0,
                "pages of a landing out of order"
            );
            self.assert_holds(id);
            debug_assert_eq!(page::validate(bytes, id).map(|_| ()), Ok(()));
            debug_assert!(
                page::checksum_ok(bytes),
                "page-write protocol: page {id} written unsealed (its checksum does not match)"
            );
            let lsn = page::page_lsn(bytes);
            let image = page::image_lsn(bytes);
            assert!(
                durable >= lsn,
                "write-ahead rule: page {id} at {lsn} but the log is durable only to {durable}"
            );
            assert!(
                image < lsn,
                "page {id}: image LSN {image} not below PageLSN {lsn}"
            );
            let k = (id.0 - self.first.0) as usize;
            let verdict = match (self.held[k], self.floor) {
                (Some(d), _) if d >= lsn => Landed::Superseded(d),
                (_, Some(floor)) if image <= floor => Landed::NeedsImage,
                _ => Landed::Written,
            };
            if verdict == Landed::Written {
                if !run.is_empty() && run_first.0 + run.len() as u64 != id.0 {
                    self.flush(run_first, &mut run)?;
                }
                if run.is_empty() {
                    run_first = id;
                }
                run.push(bytes);
                self.held[k] = Some(lsn);
            }
            verdicts.push(verdict);
        }
        if !run.is_empty() {
            self.flush(run_first, &mut run)?;
        }
        Ok(verdicts)
    }

    /// The protocol's precondition for writing page `id`: this landing holds the pool's
    /// write gate (so no checkpoint moves the image floor under the write) and the stripe
    /// lock of the page's segment (so no other writer decides on the page meanwhile).
    /// Pointer comparisons over a guard or two: cheap beside the write.
    fn assert_holds(&self, id: PageId) {
        assert!(
            ptr::eq(RwLockReadGuard::rwlock(&self.gate), &self.pool.write_gate),
            "page-write protocol: page {id} written without the pool's write gate"
        );
        let stripe = self.pool.file.stripe_lock(id);
        assert!(
            self.segments
                .iter()
                .any(|g| ptr::eq(MutexGuard::mutex(g), stripe)),
            "page-write protocol: page {id} written without its segment's stripe lock"
        );
    }

    /// Debug builds: the file still holds, for each page of the run, what the landing
    /// read (or older): nothing newer landed since, so the run lands over older versions
    /// only (PageLSN never moves back on disk). One extra read per run.
    fn assert_not_older(&self, first: PageId, run: &[&[u8]]) -> Result<()> {
        let page_size = self.pool.file.page_size();
        let mut now = vec![0u8; run.len() * page_size];
        self.pool.file.read_locked(first, &mut now)?;
        for (k, (ours, theirs)) in run.iter().zip(now.chunks(page_size)).enumerate() {
            let id = PageId(first.0 + k as u64);
            let ours = page::page_lsn(ours);
            let valid = page::checksum_ok(theirs) && page::validate(theirs, id).is_ok();
            let theirs = valid.then(|| page::page_lsn(theirs));
            assert!(
                theirs.is_none_or(|d| d < ours),
                "page-write protocol: page {id} at PageLSN {ours} would land over the newer \
                 {theirs:?} the file holds (an older version over a newer one)"
            );
        }
        Ok(())
    }

    /// Writes a run of adjacent sealed pages with one write.
    fn flush(&mut self, first: PageId, run: &mut Vec<&[u8]>) -> Result<()> {
        if cfg!(debug_assertions) {
            self.assert_not_older(first, run)?;
        }
        let pool = self.pool;
        let file: &DataFile = &pool.file;
        let written = if run.len() == 1 {
            file.write_locked(first, run[0])
        } else {
            file.write_locked(first, &run.concat())
        };
        written.map_err(|e| pool.fail(e))?;
        self.calls += 1;
        self.bytes += run.iter().map(|p| p.len()).sum::<usize>();
        run.clear();
        Ok(())
    }
}

#[cfg(test)]
impl PoolCore {
    /// A landing over page `id` that holds `gate` and `segments` in place of the locks
    /// `landing` takes, and believes the file holds nothing of the page: the way a test
    /// breaks the protocol's preconditions to see the assertions fire.
    pub(crate) fn landing_holding<'a>(
        &'a self,
        id: PageId,
        gate: RwLockReadGuard<'a, ()>,
        segments: Vec<MutexGuard<'a, ()>>,
    ) -> Landing<'a> {
        Landing {
            pool: self,
            first: id,
            held: vec![None],
            floor: None,
            calls: 0,
            bytes: 0,
            segments,
            gate,
        }
    }

    /// Writes `page` at `id` under the page's stripe lock but around any landing: the
    /// writer the protocol exists to exclude.
    pub(crate) fn write_around_the_protocol(&self, id: PageId, page: &[u8]) -> Result<()> {
        let _stripe = self.file.lock_pages(id, 1);
        self.file.write_locked(id, page)
    }
}
