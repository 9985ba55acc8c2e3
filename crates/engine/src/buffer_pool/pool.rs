//! The pool: page table, CLOCK replacement, loading and writing pages.

use crate::breakdown::{enter, Activity};
use crate::buffer_pool::frame::{Frame, NOT_LATCHED, STATE_LOADING, STATE_READY};
use crate::buffer_pool::pool_core::PoolCore;
use crate::buffer_pool::spill::Spill;
use crate::buffer_pool::{DataFile, Landed, LatchPin, PageRef, PageWrite};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::Record;
use crate::log_sink::LogSink;
use crate::page;
use parking_lot::{Mutex, RwLock, RwLockWriteGuard};
use sluice_storage::Storage;
use sluice_wal::Lsn;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long a fetch waits for a frame to be unpinned before it reports
/// [`Error::BufferPoolFull`].
const FULL_WAIT: Duration = Duration::from_secs(5);

mod shrink;

struct Table {
    /// Page id to frame. The ids are ours, not the users', and every fetch looks one up:
    /// a fast hash (foldhash, hashbrown's default) rather than std's SipHash.
    map: hashbrown::HashMap<PageId, usize>,
    hand: usize,
}

/// Counters of the pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pages read from disk.
    pub reads: u64,
    /// Pages the pool wrote from its frames (evictions, checkpoint sweeps, page-cleaner
    /// clusters); the log cleaner's writes, made from the log, are counted in
    /// [`Backlog`](crate::experiment::Backlog) instead.
    pub writes: u64,
    /// Pages evicted to make room.
    pub evictions: u64,
    /// Dirty victims written by eviction (included in `writes`).
    pub victim_writes: u64,
    /// Fetches served from memory (the misses are `reads`).
    pub hits: u64,
}

/// Whether [`BufferPool::write_frame`] may wait for the frame's latch and I/O lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Wait (checkpoints, which hold no latches).
    Block,
    /// Give up if the frame is busy (eviction: the evicting thread may hold other
    /// latches, and whoever holds this frame's may be waiting for one of them).
    Try,
}

/// The pool: its [`PoolCore`] (what pinned pages and page writes reach), the page table
/// and the counters. It derefs to its core, so `pool.frames` and `pool.landing(..)` read
/// as before.
pub(crate) struct BufferPool {
    core: PoolCore,
    /// Read-locked by every hit; write-locked to change the map or pick a victim.
    table: RwLock<Table>,
    /// A read-only database's pool: it never writes a page back to the data file. A
    /// dirty victim (a page restart recovery changed in memory) goes to the spill file
    /// instead, outside the database directory, and is read back from there (`spill`).
    pub(super) read_only: bool,
    /// The spill file of a read-only pool (`Some` iff `read_only`).
    spill: Option<Spill>,
    /// During the redo pass: the pages it has met a full image of in the part of the log
    /// any recovery from the same checkpoint replays for them (`set_redo`).
    redo_imaged: Mutex<HashSet<PageId>>,
    reads: AtomicU64,
    /// Striped: every fetch of every thread counts one.
    hits: crate::metrics::StripedCounter,
    pub(super) writes: AtomicU64,
    evictions: AtomicU64,
    victim_writes: AtomicU64,
    /// Called when a fetch picks a dirty victim (eviction pressure): the page cleaner's
    /// wake-up under the page strategy (`Inner::start_propagation`).
    dirty_victim_hook: OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// Test-only pause point: runs once, in the next `write_frame`, after the page was
    /// copied and the log made durable, before the landing (to drive races with that
    /// window deterministically).
    #[cfg(test)]
    pub(crate) before_landing: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl std::ops::Deref for BufferPool {
    type Target = PoolCore;
    fn deref(&self) -> &PoolCore {
        &self.core
    }
}

impl BufferPool {
    /// A pool over `file`; `image_floor` is the redo point of the checkpoint the control
    /// file names (0 if none): recovery starts there, so it can restore any page whose
    /// image is above it. A read-only pool (`read_only`: the storage) spills to that
    /// storage's scratch file.
    pub(crate) fn new(
        frames: usize,
        page_size: usize,
        file: DataFile,
        log: Arc<LogSink>,
        image_floor: Lsn,
        read_only: Option<Arc<dyn Storage>>,
    ) -> Self {
        assert!(frames >= 2);
        let slots = (0..frames).map(|_| Frame::new(page_size)).collect();
        BufferPool {
            core: PoolCore::new(slots, file, log, image_floor.0),
            table: RwLock::new(Table {
                map: hashbrown::HashMap::with_capacity(frames),
                hand: 0,
            }),
            read_only: read_only.is_some(),
            spill: read_only.map(|storage| Spill::new(page_size, storage)),
            redo_imaged: Mutex::new(HashSet::new()),
            reads: AtomicU64::new(0),
            hits: Default::default(),
            writes: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            victim_writes: AtomicU64::new(0),
            dirty_victim_hook: OnceLock::new(),
            #[cfg(test)]
            before_landing: Mutex::new(None),
        }
    }

    pub(crate) fn stats(&self) -> PoolStats {
        PoolStats {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            victim_writes: self.victim_writes.load(Ordering::Relaxed),
            hits: self.hits.get(),
        }
    }

    /// The first data-file write or sync failure, if any: after it the pool refuses to
    /// write (a failed fsync may have dropped pages; retrying it as if nothing happened
    /// is the fsyncgate bug).
    pub(crate) fn poisoned(&self) -> Option<String> {
        self.health.cause()
    }

    /// Sets the hook called when a fetch must write a dirty victim (once; later calls
    /// are ignored).
    pub(crate) fn set_dirty_victim_hook(&self, hook: Box<dyn Fn() + Send + Sync>) {
        let _ = self.dirty_victim_hook.set(hook);
    }

    /// Pins page `id`, reading it from disk if needed. The page may be invalid (see
    /// [`PageRef::is_valid`]); normal operations use [`PageRef::read_valid`] and
    /// [`PageRef::write_valid`].
    pub(crate) fn fetch(&self, id: PageId) -> Result<PageRef<'_>> {
        Ok(self
            .fetch_with(id, true)?
            .expect("a fetch that may wait always returns a page"))
    }

    /// As [`BufferPool::fetch`], but `None` at once where `fetch` would wait for a frame
    /// to come free. For a thread that already holds pins it could let go (a walk
    /// coupling leaves): waiting while holding them, with every frame pinned by threads
    /// doing the same, stalls them all until the wait times out (four scanners coupling
    /// runs of empty leaves filled a 16-page pool).
    pub(crate) fn try_fetch(&self, id: PageId) -> Result<Option<PageRef<'_>>> {
        self.fetch_with(id, false)
    }

    fn fetch_with(&self, id: PageId, wait: bool) -> Result<Option<PageRef<'_>>> {
        assert!(id.is_some());
        if self.closed.load(Ordering::Acquire) {
            // The data file is the next opening's: a leftover transaction or scan of this
            // one reads nothing more, neither from the file nor from frames that may
            // be stale by now (`close`).
            return Err(Error::Closed("database"));
        }
        let mut deadline = None;
        let mut missing = None;
        // Victims given up in a row: a pool whose dirty pages cannot be written now (the
        // redo pass's, see `set_redo`) waits, as a pool of pinned pages does.
        let mut refused = 0;
        loop {
            // A hit needs the table shared only: pinning is atomic, and whoever changes
            // the map (or picks a victim, which must see its pin count at zero) holds it
            // exclusively. Every page of every operation comes through here, so hits
            // from different threads must not exclude each other.
            if let Some(r) = self.pin_mapped(id) {
                match r {
                    Some(r) => {
                        self.hits.add(1);
                        return Ok(Some(r));
                    }
                    None => continue,
                }
            }
            // A miss: finding a frame, writing its victim back, reading the page.
            missing.get_or_insert_with(|| enter(Activity::PageWait));
            let mut t = self.table.write();
            if t.map.contains_key(&id) {
                // Loaded by someone else since we looked.
                continue;
            }
            let victim = if refused >= self.frames.len() {
                refused = 0;
                None
            } else {
                self.clock(&mut t)
            };
            let Some(i) = victim else {
                drop(t);
                if !wait {
                    return Ok(None);
                }
                let deadline = *deadline.get_or_insert_with(|| Instant::now() + FULL_WAIT);
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
                let written = match &self.spill {
                    Some(spill) => self.spill_frame(spill, i),
                    None => {
                        if let Some(hook) = self.dirty_victim_hook.get() {
                            hook();
                        }
                        self.write_frame(i, Wait::Try)
                    }
                };
                let t2 = self.table.write();
                let ok = matches!(written, Ok(true))
                    && f.pin.load(Ordering::Acquire) == 1
                    && !f.is_dirty()
                    && f.page_id() == old;
                if !ok {
                    // Failed, busy (someone pinned or latched the victim meanwhile), or
                    // changed again: give the victim up and pick another.
                    f.pin.fetch_sub(1, Ordering::AcqRel);
                    drop(t2);
                    written?;
                    refused += 1;
                    continue;
                }
                self.victim_writes.fetch_add(1, Ordering::Relaxed);
                if t2.map.contains_key(&id) {
                    // Someone loaded our page meanwhile; keep the victim as it is.
                    f.pin.fetch_sub(1, Ordering::AcqRel);
                    continue;
                }
                t2
            } else {
                t
            };
            return self.load(t, i, old, id).map(Some);
        }
    }

    /// Pins page `id` if the table maps it: `None` if it does not; `Some(None)` if it did
    /// but the frame changed hands before the pin was good (its load failed): look again.
    fn pin_mapped(&self, id: PageId) -> Option<Option<PageRef<'_>>> {
        let t = self.table.read();
        let i = *t.map.get(&id)?;
        let f = &self.frames[i];
        f.pin.fetch_add(1, Ordering::AcqRel);
        f.referenced.store(true, Ordering::Relaxed);
        f.heat_up();
        drop(t);
        let r = PageRef {
            pool: self,
            idx: i,
            id,
        };
        if f.state.load(Ordering::Acquire) == STATE_LOADING {
            // Wait for the loader (it holds the X latch), then make sure the load did not
            // fail and hand the frame to someone else.
            drop(f.latch.read());
        }
        Some((f.page_id() == id).then_some(r))
    }

    /// Picks an unpinned frame by CLOCK (second chance). Called under the table lock.
    fn clock(&self, t: &mut Table) -> Option<usize> {
        let n = self.frames.len();
        for _ in 0..2 * n + 1 {
            let i = t.hand;
            t.hand = (t.hand + 1) % n;
            let f = &self.frames[i];
            f.cool();
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

    /// A read-only pool's write of dirty frame `i` (pinned by us): to the spill file, not
    /// the data file. Returns false if the frame is busy (its I/O lock or latch held).
    /// No write-ahead or torn-page rule applies: the spill file is private to this
    /// process and dies with it, and the copy is exactly what the frame holds, sealed so
    /// that the load that reads it back validates it as it validates a data-file page.
    fn spill_frame(&self, spill: &Spill, i: usize) -> Result<bool> {
        let f = &self.frames[i];
        assert!(
            f.pin.load(Ordering::Acquire) >= 1,
            "frame {i} spilled unpinned (its page could change mid-write)"
        );
        let Some(_io) = f.io.try_lock() else {
            return Ok(false);
        };
        let Some(g) = f.latch.try_read() else {
            return Ok(false);
        };
        if !f.is_dirty() {
            return Ok(true);
        }
        assert!(f.valid.load(Ordering::Acquire), "dirty page must be valid");
        let (id, lsn) = (f.page_id(), f.page_lsn.load(Ordering::SeqCst));
        let mut copy = g.to_vec();
        drop(g);
        assert_eq!(page::page_lsn(&copy), lsn);
        page::seal(&mut copy);
        spill.put(id, &copy)?;
        f.written(lsn);
        Ok(true)
    }

    /// A read-only pool's pages whose data-file image is superseded by what restart
    /// recovery changed in memory: the dirty ones in the pool and those in the spill
    /// file (for verification, which skips their disk images).
    pub(crate) fn changed_by_recovery(&self) -> Vec<PageId> {
        let mut pages: Vec<PageId> = self.dirty_pages().into_iter().map(|(p, _)| p).collect();
        if let Some(spill) = &self.spill {
            pages.extend(spill.pages());
        }
        pages
    }

    /// Maps frame `i` (pinned by us, clean) to `id` and reads the page in.
    fn load(
        &self,
        mut t: RwLockWriteGuard<'_, Table>,
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
        // A new page: the old one's references say nothing about it.
        f.heat.store(1, Ordering::Relaxed);
        // A read-only pool reads a page it spilled from the spill file: the data file
        // holds the version from before recovery.
        let read = match &self.spill {
            Some(spill) => spill.get(id, &mut g).and_then(|spilled| {
                if spilled {
                    Ok(())
                } else {
                    self.file.read(id, &mut g)
                }
            }),
            None => self.file.read(id, &mut g),
        };
        match read {
            Ok(()) => {
                self.reads.fetch_add(1, Ordering::Relaxed);
                let valid = page::checksum_ok(&g) && page::validate(&g, id).is_ok();
                let lsn = if valid { page::page_lsn(&g) } else { 0 };
                f.valid.store(valid, Ordering::Release);
                f.rec_lsn.store(0, Ordering::SeqCst);
                let image = if valid { page::image_lsn(&g) } else { 0 };
                f.image_lsn.store(image, Ordering::SeqCst);
                f.clean_lsn.store(lsn, Ordering::SeqCst);
                f.page_lsn.store(lsn, Ordering::SeqCst);
                f.state.store(STATE_READY, Ordering::Release);
                drop(g);
                Ok(r)
            }
            Err(e) => {
                // Give the frame back: unmap it so waiters retry.
                let mut t = self.table.write();
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
        let t = self.table.read();
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

    /// Writes frame `i` if it is dirty. Returns false only under [`Wait::Try`], if the
    /// frame was busy (nothing written).
    ///
    /// The page is copied under an S latch; the log is made durable up to its PageLSN
    /// (the write-ahead rule), with nothing held; then the copy goes through the
    /// page-write protocol (`write_protocol`). If the protocol refuses it because its last
    /// full image is at or below the image floor (a torn write could not be repaired), a
    /// full image is logged first (under the X latch) and the write starts over. CleanLSN
    /// moves to the copy's PageLSN once the file holds it (or a newer version).
    pub(crate) fn write_frame(&self, i: usize, wait: Wait) -> Result<bool> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        self.check()?;
        if let Some(e) = self.log.poisoned() {
            // A page may hold a change whose record never reached the log.
            return Err(Error::Poisoned(format!("log: {e}")));
        }
        let f = &self.frames[i];
        // Pinned, the frame keeps its page through the write: the copy, the landing and
        // the CleanLSN it moves are all of the same page.
        assert!(
            f.pin.load(Ordering::Acquire) >= 1,
            "page-write protocol: frame {i} written unpinned (its page could change mid-write)"
        );
        let _io = match wait {
            Wait::Block => f.io.lock(),
            Wait::Try => match f.io.try_lock() {
                Some(g) => g,
                None => return Ok(false),
            },
        };
        let redo = self.redo.load(Ordering::Acquire);
        let mut scratch = vec![0u8; self.file.page_size()];
        // Each round that does not write logs an image above the floor it saw; another
        // round is needed only if a whole checkpoint raised the floor past that image
        // meanwhile, so this ends.
        loop {
            let (id, mut copy, lsn) = {
                let g = match wait {
                    Wait::Block => f.latch.read(),
                    Wait::Try => match f.latch.try_read() {
                        Some(g) => g,
                        None => return Ok(false),
                    },
                };
                if !f.is_dirty() {
                    return Ok(true);
                }
                assert!(f.valid.load(Ordering::Acquire), "dirty page must be valid");
                let id = f.page_id();
                if redo && !self.redo_imaged.lock().contains(&id) {
                    // The redo pass's rule (`set_redo`): not written until redo has met
                    // an image of it; the evictor picks another victim.
                    return Ok(false);
                }
                (id, g.to_vec(), f.page_lsn.load(Ordering::SeqCst))
            };
            assert_eq!(page::page_lsn(&copy), lsn);
            if redo {
                // Redo appends nothing: every record it applied is durable already.
                let durable = self.log.durable_lsn();
                assert!(
                    durable.0 >= lsn,
                    "write-ahead rule: page {id} at {lsn} but log durable only to {durable}"
                );
            } else {
                self.log.wait_durable(Lsn(lsn)).map_err(Error::from)?;
            }
            page::seal(&mut copy);
            #[cfg(test)]
            if let Some(hook) = self.before_landing.lock().take() {
                hook();
            }
            let verdict = self.landing(id, &mut scratch)?.write(&[(id, &copy)])?[0];
            match verdict {
                Landed::Written | Landed::Superseded(_) => {
                    self.writes
                        .fetch_add(u64::from(verdict == Landed::Written), Ordering::Relaxed);
                    f.written(lsn);
                    return Ok(true);
                }
                Landed::NeedsImage => {}
            }
            // Not under the landing: waiting for a latch while holding the write gate
            // could deadlock with a latch holder queued behind a checkpoint's exclusive
            // request.
            let pin = LatchPin::new(f);
            let guard = match wait {
                Wait::Block => f.latch.write(),
                Wait::Try => match f.latch.try_write() {
                    Some(g) => g,
                    None => return Ok(false),
                },
            };
            let mut w = PageWrite::new(f, guard, pin, id, self.log.released_lsn());
            if w.image_lsn() <= self.image_floor.load(Ordering::SeqCst) {
                self.log_full_image(&mut w)?;
            }
        }
    }

    /// Restart recovery's redo pass runs with this set (`recovery::recover`). While it
    /// is, a page write logs no full image, and a page the redo pass has not yet seen a
    /// full image of in its part of the log is not written at all (the evictor picks
    /// another victim).
    ///
    /// Why. An image logged now would go to the end of the log, after records the redo
    /// pass has not applied to the page yet, and would stamp the page with its LSN: the
    /// redo pass would then skip those records as already applied, and lose them (found
    /// by a crash sweep with long transactions in a 16-page pool: pages dirty across a
    /// checkpoint were evicted halfway through their redo). And a later recovery would
    /// install that image, older in content than records before it. So redo writes pages
    /// as they are. That is safe against a torn write (a crash during this recovery)
    /// only if the next recovery, which reads the same part of the log, finds a full
    /// image of the page to restart from: hence the second rule. Pages changed after the
    /// checkpoint have one (the first change after a redo point logs it); the exceptions
    /// are pages dirty since before the checkpoint, which were all in the pool at the
    /// crash and fit it again.
    pub(crate) fn set_redo(&self, on: bool) {
        self.redo.store(on, Ordering::Release);
        if !on {
            self.redo_imaged.lock().clear();
        }
    }

    /// During the redo pass: it met a full image of `id` in the part of the log it
    /// replays for the page, so the page may be written (`set_redo`).
    pub(crate) fn redo_met_image(&self, id: PageId) {
        self.redo_imaged.lock().insert(id);
    }

    /// Logs the X-latched page's current image and stamps the page with it (PageLSN
    /// and image LSN). The one place an image of an existing page is logged.
    pub(crate) fn log_full_image(&self, w: &mut PageWrite<'_>) -> Result<()> {
        assert!(w.is_valid(), "imaging invalid page {}", w.id());
        let rec = Record::Images {
            pages: vec![(w.id(), page::compress(w.bytes()))],
        };
        let a = self.log.append(&rec.encode())?;
        w.mark_dirty(a.lsn, a.end);
        w.set_image_lsn(a.lsn);
        Ok(())
    }

    /// The database closed: once every page write in flight has finished (the write
    /// gate, held exclusively), no page is written or fetched again, so the data file is
    /// the next opening's alone even while transactions or scans of this one linger.
    pub(crate) fn close(&self) {
        let _gate = self.write_gate.write();
        self.closed.store(true, Ordering::Release);
    }

    /// Checkpoint step 1 holds this while it appends its begin record and moves the
    /// redo point: no page write is in flight meanwhile.
    pub(crate) fn exclusive_write_gate(&self) -> RwLockWriteGuard<'_, ()> {
        self.write_gate.write()
    }

    /// Checkpoint step 3: under the write gate held exclusively (so every write that
    /// decided on the old floor has finished and the coming sync covers it), raises the
    /// image floor to the new redo point `r`. Returns the data file's length then, which
    /// the sync that follows makes durable.
    pub(crate) fn raise_image_floor(&self, r: Lsn) -> Result<u64> {
        let _gate = self.write_gate.write();
        let old = self.image_floor.fetch_max(r.0, Ordering::SeqCst);
        assert!(old <= r.0, "image floor {old} above the new redo point {r}");
        self.file.recorded_len()
    }

    /// Makes every page write so far durable.
    pub(crate) fn sync(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        self.check()?;
        self.file.sync().map_err(|e| self.fail(e))
    }

    /// The dirty pages and their recovery LSNs (for a checkpoint).
    pub(crate) fn dirty_pages(&self) -> Vec<(PageId, Lsn)> {
        self.dirty_frames(|f, rec| (f.page_id(), Lsn(rec)))
    }

    /// The dirty-page table a checkpoint records: each dirty page with the LSN redo
    /// must start from for it — its recovery LSN, or its last full image if that is
    /// older. Starting at the image means any recovery from this checkpoint replays a
    /// full image of every page it may write, so that the redo pass can write them
    /// without logging images of its own (`set_redo`); it also keeps that image in the
    /// log. The image is after the previous checkpoint's redo point (the first change
    /// after a redo point logs one), so this keeps at most one checkpoint interval more.
    pub(crate) fn checkpoint_dirty_pages(&self) -> Vec<(PageId, Lsn)> {
        let start = self.log.start_lsn().0;
        self.dirty_frames(|f, rec| {
            let image = f.image_lsn.load(Ordering::SeqCst);
            // An image the log no longer holds cannot help; then from the recovery
            // LSN, as before (redo will not write the page until it meets one).
            let from = if image >= start { rec.min(image) } else { rec };
            (f.page_id(), Lsn(from))
        })
    }

    /// The frames holding a dirty page, looked at under the table lock. A frame being
    /// loaded is skipped: its page is clean, and until the load has reset its LSNs they
    /// may still be the evicted page's (a dirty-looking frame with recovery LSN 0 made a
    /// checkpoint record a dirty page from LSN 0, and the next open failed reading the
    /// log there — seen in the large-value crash sweep).
    fn dirty_frames<T>(&self, each: impl Fn(&Frame, u64) -> T) -> Vec<T> {
        let _t = self.table.read();
        self.frames
            .iter()
            .filter(|f| f.page_id().is_some() && f.state.load(Ordering::Acquire) == STATE_READY)
            .filter_map(|f| f.recovery_lsn().map(|rec| each(f, rec)))
            .collect()
    }

    /// The frames holding a dirty page, and the oldest recovery LSN among them (for the
    /// backlog metrics; no latches, no table lock: a snapshot that may be a moment old).
    pub(crate) fn dirty_summary(&self) -> (usize, Option<u64>) {
        let mut n = 0;
        let mut oldest: Option<u64> = None;
        for f in self.frames.iter() {
            if !f.page_id().is_some() || f.state.load(Ordering::Acquire) != STATE_READY {
                continue;
            }
            if let Some(rec) = f.recovery_lsn() {
                n += usize::from(f.is_dirty());
                oldest = Some(oldest.map_or(rec, |o| o.min(rec)));
            }
        }
        (n, oldest)
    }

    /// Pages per propagation segment of the data file (log-based propagation reads and
    /// writes a segment at a time, through [`PoolCore::landing`]).
    pub(crate) fn segment_pages(&self) -> u64 {
        self.file.segment_pages()
    }

    /// The propagation segment page `id` belongs to.
    pub(crate) fn segment_of(&self, id: PageId) -> u64 {
        self.file.segment_of(id)
    }

    /// Log-based propagation wrote page `id` to disk, durably, with every change below
    /// `to` (its PageLSN there is `written`): if the pool holds the page, its CleanLSN
    /// advances to `written`, and if the page is still dirty its next change not on disk
    /// is at or above `to`, so its recovery LSN rises to `to`. No latch: the frame's
    /// atomics only. Returns whether the pool held the page.
    pub(crate) fn mark_propagated(&self, id: PageId, written: u64, to: Lsn) -> bool {
        let t = self.table.read();
        let Some(&i) = t.map.get(&id) else {
            return false;
        };
        let f = &self.frames[i];
        if f.state.load(Ordering::Acquire) != STATE_READY || !f.valid.load(Ordering::Acquire) {
            return false;
        }
        // CleanLSN ≤ PageLSN, but for one window: a writer that logged a change of the
        // page and has not stamped it yet holds its X latch (`latched_at` is set from
        // before the append until after the stamp), and this write may carry that change.
        // Read in that order, so a cleared `latched_at` means the stamp is visible.
        let latched = f.latched_at.load(Ordering::SeqCst) != NOT_LATCHED;
        let page_lsn = f.page_lsn.load(Ordering::SeqCst);
        assert!(
            latched || written <= page_lsn,
            "CleanLSN ≤ PageLSN: page {id} propagated at {written}, above its PageLSN \
             {page_lsn}, and nobody is stamping a change of it"
        );
        f.clean_lsn.fetch_max(written, Ordering::SeqCst);
        if f.is_dirty() {
            // A writer that found the page clean after the line above set the recovery
            // LSN to its own record, at or above `to`; fetch_max keeps that.
            f.rec_lsn.fetch_max(to.0, Ordering::SeqCst);
        }
        true
    }

    pub(crate) fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// Where redo must start for the frame's page if it is dirty or being changed
    /// ([`Frame::recovery_lsn`]).
    pub(crate) fn rec_lsn(&self, i: usize) -> Option<Lsn> {
        self.frames[i].recovery_lsn().map(Lsn)
    }
}

#[cfg(test)]
impl BufferPool {
    /// Writes page `id` if dirty and drops it from the pool (for tests that need a page
    /// out of memory at a given moment). False if it was not in the pool.
    pub(crate) fn evict(&self, id: PageId) -> Result<bool> {
        let t = self.table.write();
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
        let written = self.write_frame(i, Wait::Block);
        let mut t = self.table.write();
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
