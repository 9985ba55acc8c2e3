//! The buffer pool: frames caching pages, CLOCK replacement, pins, page latches, and per
//! frame a CleanLSN — a page is dirty iff its PageLSN is above its CleanLSN.
//!
//! Steal and no-force: a dirty page may be written at any time (eviction, checkpoint),
//! committed or not, and commit never writes pages. Every page write, whoever makes it,
//! goes through one protocol (`write_protocol`): the write-ahead rule, the torn-page rule
//! (a page whose last full image is at or below the *image floor* gets a new image
//! logged before it is written; see `checkpoint` and ARCHITECTURE.md), an older version
//! of a page never landing over a newer one, and CleanLSN moving only for what landed.

mod cleaning;
mod data_file;
mod frame;
mod page_ref;
mod pool;
mod pool_core;
mod spill;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_asserts;
#[cfg(test)]
mod tests_latch_pins;
mod write_protocol;

pub(crate) use cleaning::{Candidate, Cleaned};
pub(crate) use data_file::DataFile;
pub(crate) use page_ref::{LatchPin, PageRef, PageWrite};
pub use pool::PoolStats;
pub(crate) use pool::{BufferPool, Wait};
pub(crate) use write_protocol::Landed;
