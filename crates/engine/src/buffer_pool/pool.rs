//! The pool: page table, CLOCK replacement, loading and writing pages.

use crate::buffer_pool::frame::{Frame, NO_FPI, STATE_LOADING, STATE_READY};
use crate::buffer_pool::PageRef;
use crate::data_file::DataFile;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::page;
use parking_lot::Mutex;
use sluice_wal::{Log, Lsn};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a fetch waits for a frame to be unpinned before it reports
/// [`Error::BufferPoolFull`].
const FULL_WAIT: Duration = Duration::from_secs(5);

struct Table {
    map: HashMap<PageId, usize>,
    hand: usize,
}

/// Counters of the pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pages read from disk.
    pub reads: u64,
    /// Pages written to disk.
    pub writes: u64,
    /// Pages evicted to make room.
    pub evictions: u64,
}

pub(crate) struct BufferPool {
    pub(crate) frames: Box<[Frame]>,
    table: Mutex<Table>,
    file: DataFile,
    log: Arc<Log>,
    poison: Mutex<Option<String>>,
    reads: AtomicU64,
    writes: AtomicU64,
    evictions: AtomicU64,
}

impl BufferPool {
    pub(crate) fn new(frames: usize, page_size: usize, file: DataFile, log: Arc<Log>) -> Self {
        assert!(frames >= 2);
        BufferPool {
            frames: (0..frames).map(|_| Frame::new(page_size)).collect(),
            table: Mutex::new(Table {
                map: HashMap::with_capacity(frames),
                hand: 0,
            }),
            file,
            log,
            poison: Mutex::new(None),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> PoolStats {
        PoolStats {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    /// The first data-file write or sync failure, if any: after it the pool refuses to
    /// write (a failed fsync may have dropped pages; retrying it as if nothing happened
    /// is the fsyncgate bug).
    pub(crate) fn poisoned(&self) -> Option<String> {
        self.poison.lock().clone()
    }

    fn fail(&self, e: Error) -> Error {
        let mut p = self.poison.lock();
        if p.is_none() {
            *p = Some(format!("data file: {e}"));
        }
        e
    }

    fn check(&self) -> Result<()> {
        match self.poisoned() {
            Some(p) => Err(Error::Poisoned(p)),
            None => Ok(()),
        }
    }

    /// Pins page `id`, reading it from disk if needed. The page may be invalid (see
    /// [`PageRef::is_valid`]); normal operations use [`PageRef::read_valid`] and
    /// [`PageRef::write_valid`].
    pub(crate) fn fetch(&self, id: PageId) -> Result<PageRef<'_>> {
        assert!(id.is_some());
        let deadline = Instant::now() + FULL_WAIT;
        loop {
            let mut t = self.table.lock();
            if let Some(&i) = t.map.get(&id) {
                let f = &self.frames[i];
                f.pin.fetch_add(1, Ordering::AcqRel);
                f.referenced.store(true, Ordering::Relaxed);
                drop(t);
                let r = PageRef {
                    pool: self,
                    idx: i,
                    id,
                };
                if f.state.load(Ordering::Acquire) == STATE_LOADING {
                    // Wait for the loader (it holds the X latch), then make sure the load
                    // did not fail and hand the frame to someone else.
                    drop(f.latch.read());
                }
                if f.page_id() == id {
                    return Ok(r);
                }
                continue;
            }
            let Some(i) = self.clock(&mut t) else {
                drop(t);
                if Instant::now() > deadline {
                    return Err(Error::BufferPoolFull(self.frames.len()));
                }
                std::thread::sleep(Duration::from_micros(200));
                continue;
            };
            let f = &self.frames[i];
            f.pin.store(1, Ordering::Release);
            let old = f.page_id();
            let t = if old.is_some() && f.is_dirty() {
                drop(t);
                let written = self.write_frame(i);
                let t2 = self.table.lock();
                let ok = written.is_ok()
                    && f.pin.load(Ordering::Acquire) == 1
                    && !f.is_dirty()
                    && f.page_id() == old;
                if !ok {
                    f.pin.fetch_sub(1, Ordering::AcqRel);
                    drop(t2);
                    written?;
                    continue;
                }
                if t2.map.contains_key(&id) {
                    // Someone loaded our page meanwhile; keep the victim as it is.
                    f.pin.fetch_sub(1, Ordering::AcqRel);
                    continue;
                }
                t2
            } else {
                t
            };
            return self.load(t, i, old, id);
        }
    }

    /// Picks an unpinned frame by CLOCK (second chance). Called under the table lock.
    fn clock(&self, t: &mut Table) -> Option<usize> {
        let n = self.frames.len();
        for _ in 0..2 * n + 1 {
            let i = t.hand;
            t.hand = (t.hand + 1) % n;
            let f = &self.frames[i];
            if f.pin.load(Ordering::Acquire) != 0 {
                continue;
            }
            if !f.page_id().is_some() {
                return Some(i);
            }
            if f.referenced.swap(false, Ordering::Relaxed) {
                continue;
            }
            return Some(i);
        }
        None
    }

    /// Maps frame `i` (pinned by us, clean) to `id` and reads the page in.
    fn load(
        &self,
        mut t: parking_lot::MutexGuard<'_, Table>,
        i: usize,
        old: PageId,
        id: PageId,
    ) -> Result<PageRef<'_>> {
        let f = &self.frames[i];
        debug_assert!(!old.is_some() || !f.is_dirty());
        if old.is_some() {
            let removed = t.map.remove(&old);
            assert_eq!(removed, Some(i));
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
        t.map.insert(id, i);
        f.page.store(id.0, Ordering::Release);
        f.state.store(STATE_LOADING, Ordering::Release);
        let mut g = f
            .latch
            .try_write()
            .expect("a frame pinned only by its loader has a free latch");
        drop(t);
        let r = PageRef {
            pool: self,
            idx: i,
            id,
        };
        f.referenced.store(true, Ordering::Relaxed);
        match self.file.read(id, &mut g) {
            Ok(()) => {
                self.reads.fetch_add(1, Ordering::Relaxed);
                let valid = page::checksum_ok(&g) && page::validate(&g, id).is_ok();
                let lsn = if valid { page::page_lsn(&g) } else { 0 };
                f.valid.store(valid, Ordering::Release);
                f.rec_lsn.store(0, Ordering::SeqCst);
                f.clean_lsn.store(lsn, Ordering::SeqCst);
                f.page_lsn.store(lsn, Ordering::SeqCst);
                f.fpi_lsn.store(NO_FPI, Ordering::Release);
                f.state.store(STATE_READY, Ordering::Release);
                drop(g);
                Ok(r)
            }
            Err(e) => {
                // Give the frame back: unmap it so waiters retry.
                let mut t = self.table.lock();
                t.map.remove(&id);
                f.page.store(PageId::NONE.0, Ordering::Release);
                f.valid.store(false, Ordering::Release);
                f.state.store(STATE_READY, Ordering::Release);
                drop(t);
                drop(g);
                drop(r);
                Err(e)
            }
        }
    }

    /// Pins frame `i` if it holds a loaded page (for checkpoints and verification).
    pub(crate) fn pin_frame(&self, i: usize) -> Option<PageRef<'_>> {
        let t = self.table.lock();
        let f = &self.frames[i];
        let id = f.page_id();
        if !id.is_some() || t.map.get(&id) != Some(&i) {
            return None;
        }
        f.pin.fetch_add(1, Ordering::AcqRel);
        drop(t);
        if f.state.load(Ordering::Acquire) == STATE_LOADING {
            drop(f.latch.read());
        }
        let r = PageRef {
            pool: self,
            idx: i,
            id,
        };
        (f.page_id() == id).then_some(r)
    }

    /// Writes frame `i` if it is dirty: copies the page under an S latch, makes the log
    /// durable up to its PageLSN (the write-ahead rule), writes, and advances CleanLSN.
    pub(crate) fn write_frame(&self, i: usize) -> Result<()> {
        self.check()?;
        if let Some(e) = self.log.poisoned() {
            // A page may hold a change whose record never reached the log.
            return Err(Error::Poisoned(format!("log: {e}")));
        }
        let f = &self.frames[i];
        let _io = f.io.lock();
        let (id, mut copy, lsn) = {
            let g = f.latch.read();
            if !f.is_dirty() {
                return Ok(());
            }
            assert!(f.valid.load(Ordering::Acquire), "dirty page must be valid");
            (f.page_id(), g.to_vec(), f.page_lsn.load(Ordering::SeqCst))
        };
        assert_eq!(page::page_lsn(&copy), lsn);
        let durable = self.log.wait_durable(Lsn(lsn)).map_err(Error::from)?;
        assert!(
            durable.0 >= lsn,
            "write-ahead rule: page {id} at {lsn} but log durable only to {durable}"
        );
        page::seal(&mut copy);
        debug_assert_eq!(page::validate(&copy, id).map(|_| ()), Ok(()));
        self.file.write(id, &copy).map_err(|e| self.fail(e))?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        f.clean_lsn.fetch_max(lsn, Ordering::SeqCst);
        Ok(())
    }

    /// Makes every page write so far durable.
    pub(crate) fn sync(&self) -> Result<()> {
        self.check()?;
        self.file.sync().map_err(|e| self.fail(e))
    }

    /// The dirty pages and their recovery LSNs (for a checkpoint).
    pub(crate) fn dirty_pages(&self) -> Vec<(PageId, Lsn)> {
        let _t = self.table.lock();
        self.frames
            .iter()
            .filter(|f| f.page_id().is_some() && f.is_dirty())
            .map(|f| (f.page_id(), Lsn(f.rec_lsn.load(Ordering::SeqCst))))
            .collect()
    }

    pub(crate) fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The frame's recovery LSN if it is dirty.
    pub(crate) fn rec_lsn(&self, i: usize) -> Option<Lsn> {
        let f = &self.frames[i];
        f.is_dirty().then(|| Lsn(f.rec_lsn.load(Ordering::SeqCst)))
    }
}

#[cfg(test)]
impl BufferPool {
    /// Writes page `id` if dirty and drops it from the pool (for tests that need a page
    /// out of memory at a given moment). False if it was not in the pool.
    pub(crate) fn evict(&self, id: PageId) -> Result<bool> {
        let t = self.table.lock();
        let Some(&i) = t.map.get(&id) else {
            return Ok(false);
        };
        let f = &self.frames[i];
        assert_eq!(
            f.pin.load(Ordering::Acquire),
            0,
            "evicting pinned page {id}"
        );
        f.pin.store(1, Ordering::Release);
        drop(t);
        let written = self.write_frame(i);
        let mut t = self.table.lock();
        if let Err(e) = written {
            f.pin.store(0, Ordering::Release);
            return Err(e);
        }
        assert!(f.pin.load(Ordering::Acquire) == 1 && !f.is_dirty() && f.page_id() == id);
        t.map.remove(&id);
        f.page.store(PageId::NONE.0, Ordering::Release);
        f.valid.store(false, Ordering::Release);
        f.pin.store(0, Ordering::Release);
        self.evictions.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }
}

impl BufferPool {
    /// Reads the on-disk image of a page, bypassing the cache (for verification).
    pub(crate) fn read_disk(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.file.read(id, buf)
    }
}
