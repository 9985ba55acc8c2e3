//! The simulated disk: an in-memory [`Storage`](crate::Storage) for crash tests,
//! deterministic from a seed.
//!
//! - `disk`: the model (inodes with durable and volatile images, directory entries with
//!   a durable map, a volatile map and the journal between them);
//! - `crash`: what of the unsynced state survives power loss;
//! - `fault`: injected EIO and ENOSPC;
//! - `record`: counters and the trace;
//! - `storage`: [`SimStorage`] itself, its handles and locks.

mod crash;
mod disk;
mod fault;
mod record;
mod storage;
#[cfg(test)]
mod tests;

pub use fault::{FaultKind, FaultOp, FaultPlan};
pub use record::{SimStats, TraceEvent};
pub use storage::SimStorage;
