//! The simulated disk: an in-memory [`Storage`](crate::Storage) for crash tests,
//! deterministic from a seed.
//!
//! - `inode`: a file's contents: the device's image, the page cache and the write-back
//!   queue between them (and what a failed fsync does to them);
//! - `disk`: the model (inodes, and a name space of entries and directories kept as
//!   lookups see it and as it is durable, with the journal between the two);
//! - `crash`: what of the unsynced state survives power loss;
//! - `fault`: injected EIO and ENOSPC, what an armed failure point does, and the errors
//!   of a halted incarnation;
//! - `record`: counters and the trace;
//! - `state`: what the clones of one disk share behind its one mutex, and the gate every
//!   counted operation passes (halts, faults, the trace);
//! - `storage`: [`SimStorage`] itself;
//! - `handle`: its file handles and lock guards.

mod crash;
mod disk;
mod fault;
mod handle;
mod inode;
#[cfg(test)]
mod machine_tests;
mod record;
mod state;
mod storage;
#[cfg(test)]
mod tests;

pub use fault::{FailAction, FaultKind, FaultOp, FaultPlan};
pub use record::{SimStats, TraceEvent};
pub use storage::SimStorage;
