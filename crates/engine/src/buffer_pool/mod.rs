//! The buffer pool: frames caching pages, CLOCK replacement, pins, page latches, and per
//! frame a CleanLSN — a page is dirty iff its PageLSN is above its CleanLSN.
//!
//! Steal and no-force: a dirty page may be written at any time (eviction, checkpoint),
//! committed or not, and commit never writes pages. Two rules are enforced in the one
//! place pages are written ([`BufferPool::write_frame`]): the write-ahead rule (the log
//! is made durable up to the PageLSN first, and that is asserted), and the torn-page
//! rule (a page whose last full image is at or below the *image floor* gets a new image
//! logged, durably, before it is written; see `checkpoint` and ARCHITECTURE.md).

mod cleaning;
mod frame;
mod page_ref;
mod pool;
#[cfg(test)]
mod tests;

pub(crate) use cleaning::{Candidate, Cleaned};
pub(crate) use frame::Frame;
pub(crate) use page_ref::{PageRef, PageWrite};
pub use pool::PoolStats;
pub(crate) use pool::{BufferPool, Wait};
