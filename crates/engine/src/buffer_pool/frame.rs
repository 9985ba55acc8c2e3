//! One buffer-pool frame.

use crate::ids::PageId;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

pub(crate) const STATE_READY: u8 = 0;
pub(crate) const STATE_LOADING: u8 = 1;

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
    /// [`STATE_LOADING`] while the page is being read in (the loader holds the X latch).
    pub(crate) state: AtomicU8,
    /// False if the bytes read from disk did not verify (torn or never written); only
    /// recovery may use such a page, to install a full image over it.
    pub(crate) valid: AtomicBool,
    pub(crate) page_lsn: AtomicU64,
    pub(crate) clean_lsn: AtomicU64,
    /// The LSN of the first record that dirtied the page since it was last clean.
    pub(crate) rec_lsn: AtomicU64,
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
            state: AtomicU8::new(STATE_READY),
            valid: AtomicBool::new(false),
            page_lsn: AtomicU64::new(0),
            clean_lsn: AtomicU64::new(0),
            rec_lsn: AtomicU64::new(0),
            image_lsn: AtomicU64::new(0),
            io: Mutex::new(()),
        }
    }

    pub(crate) fn page_id(&self) -> PageId {
        PageId(self.page.load(Ordering::Acquire))
    }

    /// Dirty iff PageLSN > CleanLSN.
    pub(crate) fn is_dirty(&self) -> bool {
        self.page_lsn.load(Ordering::SeqCst) > self.clean_lsn.load(Ordering::SeqCst)
    }
}
