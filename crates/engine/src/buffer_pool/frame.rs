//! One buffer-pool frame.

use crate::ids::PageId;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

pub(crate) const STATE_READY: u8 = 0;
pub(crate) const STATE_LOADING: u8 = 1;
/// [`Frame::latched_at`] of a frame nobody holds X-latched.
pub(crate) const NOT_LATCHED: u64 = u64::MAX;

/// A frame: a page-sized buffer behind a latch, and the bookkeeping around it.
///
/// The atomics mirror facts about the page so that the pool and the checkpoint can look
/// at them without latching: `page_lsn` is the header's PageLSN (updated under the X
/// latch), `clean_lsn` the PageLSN of the last image written to (or read from) disk.
pub(crate) struct Frame {
    /// The page latch: S to read, X to modify. Held only by threads that pinned it.
    pub(crate) latch: RwLock<Box<[u8]>>,
    /// The page held, or `NONE` when the frame is free.
    pub(crate) page: AtomicU64,
    /// Threads using the frame; increments happen under the pool's table lock only, so
    /// "pin == 0 under the table lock" means nobody can be using it.
    pub(crate) pin: AtomicU32,
    /// CLOCK's second-chance bit.
    pub(crate) referenced: AtomicBool,
    /// The page's reference count, shared by CLOCK and the page cleaner's coldest- and
    /// hottest-first policies: 1 when the page is loaded, +1 (saturating) on every hit,
    /// halved each time the CLOCK hand passes the frame, so it decays with age.
    pub(crate) heat: AtomicU32,
    /// [`STATE_LOADING`] while the page is being read in (the loader holds the X latch).
    pub(crate) state: AtomicU8,
    /// False if the bytes read from disk did not verify (torn or never written); only
    /// recovery may use such a page, to install a full image over it.
    pub(crate) valid: AtomicBool,
    pub(crate) page_lsn: AtomicU64,
    pub(crate) clean_lsn: AtomicU64,
    /// The LSN of the first record that dirtied the page since it was last clean.
    pub(crate) rec_lsn: AtomicU64,
    /// While the page is X-latched ([`PageWrite`](super::PageWrite)): the log's released
    /// LSN when the latch was taken, a lower bound of the LSN of every record the holder
    /// logs for the page; [`NOT_LATCHED`] otherwise. A change is logged first and stamped
    /// on the page ([`PageWrite::mark_dirty`](super::PageWrite::mark_dirty)) after, so
    /// in between the page looks clean although the log holds a change of it. A
    /// checkpoint that began in that window reads this to count the page dirty from
    /// before its redo point (`Frame::recovery_lsn`).
    pub(crate) latched_at: AtomicU64,
    /// The page's image LSN (its last full image in the log), mirrored from the header
    /// so a checkpoint can read it without latching.
    pub(crate) image_lsn: AtomicU64,
    /// Serialises writes of this frame so an older image never lands after a newer one.
    pub(crate) io: Mutex<()>,
}

impl Frame {
    pub(crate) fn new(page_size: usize) -> Frame {
        Frame {
            latch: RwLock::new(vec![0u8; page_size].into_boxed_slice()),
            page: AtomicU64::new(PageId::NONE.0),
            pin: AtomicU32::new(0),
            referenced: AtomicBool::new(false),
            heat: AtomicU32::new(0),
            state: AtomicU8::new(STATE_READY),
            valid: AtomicBool::new(false),
            page_lsn: AtomicU64::new(0),
            clean_lsn: AtomicU64::new(0),
            rec_lsn: AtomicU64::new(0),
            latched_at: AtomicU64::new(NOT_LATCHED),
            image_lsn: AtomicU64::new(0),
            io: Mutex::new(()),
        }
    }

    pub(crate) fn page_id(&self) -> PageId {
        PageId(self.page.load(Ordering::Acquire))
    }

    /// One more reference to the page (saturating).
    pub(crate) fn heat_up(&self) {
        // A lost race between two hits costs one count; a CAS loop is not worth it here,
        // on every fetch.
        let h = self.heat.load(Ordering::Relaxed);
        if h < u32::MAX {
            self.heat.store(h + 1, Ordering::Relaxed);
        }
    }

    /// The CLOCK hand passed: halve the reference count.
    pub(crate) fn cool(&self) {
        let h = self.heat.load(Ordering::Relaxed);
        if h > 0 {
            self.heat.store(h / 2, Ordering::Relaxed);
        }
    }

    /// Dirty iff PageLSN > CleanLSN.
    /// The page's image up to PageLSN `lsn` is in the data file: CleanLSN moves to `lsn`,
    /// and if the page was changed again meanwhile, its recovery LSN rises to `lsn` (the
    /// record of a later change was appended after the change that ended at `lsn`, so
    /// it starts at or above it). Without the second step a page changed during every
    /// write of it — the meta page, under many concurrent splits — kept the recovery LSN
    /// of its first change forever, and with it every checkpoint's truncation point.
    ///
    /// Preconditions (asserted: cheap, and a broken one loses a page's changes): the
    /// caller holds the frame's I/O lock, which orders the writes of one frame, and `lsn`
    /// is not above the PageLSN — it is the PageLSN of a copy of this page, which only
    /// grows while the frame is pinned — so CleanLSN ≤ PageLSN holds after. A CleanLSN
    /// above PageLSN would make the page read clean through its next changes, and
    /// eviction drop them unwritten.
    pub(crate) fn written(&self, lsn: u64) {
        assert!(
            self.io.is_locked(),
            "page-write protocol: frame of page {} marked written without its I/O lock",
            self.page_id()
        );
        let page_lsn = self.page_lsn.load(Ordering::SeqCst);
        assert!(
            lsn <= page_lsn,
            "CleanLSN ≤ PageLSN: page {} marked written at {lsn}, above its PageLSN {page_lsn}",
            self.page_id()
        );
        self.clean_lsn.fetch_max(lsn, Ordering::SeqCst);
        if self.is_dirty() {
            self.rec_lsn.fetch_max(lsn, Ordering::SeqCst);
        }
    }

    pub(crate) fn is_dirty(&self) -> bool {
        self.page_lsn.load(Ordering::SeqCst) > self.clean_lsn.load(Ordering::SeqCst)
    }

    /// Where redo must start for this page, as a checkpoint sees it: the recovery LSN if
    /// the page is dirty, lowered to [`Frame::latched_at`] while an X-latch holder may
    /// have logged a change it has not stamped yet; `None` if neither.
    ///
    /// Why it is enough. The holder stores `latched_at` before it appends; a checkpoint
    /// reads it after appending its begin record at R. Appends are ordered by the log,
    /// so a change logged below R had its `latched_at` stored before R was allocated,
    /// and this read sees it, unless the holder has cleared it since, which it does only
    /// after stamping: then the page reads dirty (or was written clean after the stamp).
    /// `latched_at` is read first for that reason.
    pub(crate) fn recovery_lsn(&self) -> Option<u64> {
        let latched = self.latched_at.load(Ordering::SeqCst);
        let dirty = self.is_dirty().then(|| self.rec_lsn.load(Ordering::SeqCst));
        match (latched != NOT_LATCHED, dirty) {
            (true, Some(rec)) => Some(rec.min(latched)),
            (true, None) => Some(latched),
            (false, d) => d,
        }
    }
}
