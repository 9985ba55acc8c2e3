//! The buffer pool: frames caching pages, CLOCK replacement, pins, page latches, and per
//! frame a CleanLSN — a page is dirty iff its PageLSN is above its CleanLSN.
//!
//! Steal and no-force: a dirty page may be written at any time (eviction, checkpoint),
//! committed or not, and commit never writes pages. The write-ahead rule is enforced in
//! the one place pages are written ([`BufferPool::write_frame`]): the log is made durable
//! up to the PageLSN first, and that is asserted.

mod frame;
mod page_ref;
mod pool;

pub(crate) use frame::{Frame, NO_FPI};
pub(crate) use page_ref::{PageRef, PageWrite};
pub(crate) use pool::BufferPool;
pub use pool::PoolStats;
