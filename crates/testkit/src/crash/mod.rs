//! The crash sweep: random multi-key transactions from several threads over the
//! simulated disk (in [`CrashMode::LargeValues`] with large values of up to 1 MiB too,
//! stored apart from their leaves in chunks), which fails at a seeded random point in one of four ways (each seed
//! draws one):
//!
//! * a power loss (unsynced writes kept, dropped or garbled per sector);
//! * a process kill that leaves the page cache behind: the database is reopened in the same
//!   boot, reading that cache, and the power goes later;
//! * a failed fsync (EIO or ENOSPC, once or from then on: Linux drops the failed pages from
//!   write-back but keeps them readable), then a kill or a power loss;
//! * a power loss followed by read errors during the next recovery, which must fail the
//!   open with an I/O error, never with "corruption" and never with a panic.
//!
//! Recoveries are themselves halted at random operations (power losses, and kills after a
//! kill). Every recovery that completes shows its state to a client, and that state must
//! survive every later halt: nothing a client was shown may depend on bytes the device does
//! not hold.
//!
//! The check. Every transaction that reached its commit record is a *candidate*, ordered
//! by the LSN of that record; those whose commit returned (durable) are *acknowledged*.
//! Locks are released only after the commit is durable, so a candidate's writes can be
//! overwritten only by a later candidate, and every recovered state must equal the result
//! of applying, in LSN order, some prefix of the candidates that contains every
//! acknowledged one (the prefix ends wherever the durable log ended). Rolled-back and
//! unfinished transactions are never candidates, so any trace of them is a violation; a
//! missing acknowledged write is a loss. Values are compared byte for byte, large ones
//! included (read whole from their chunks, whose length and checksum are checked), and
//! the hidden table of large values must hold exactly the chunks of the recovered large
//! values: a chunk more is a trace of a transaction that did not commit, a chunk less a
//! damaged value. Finally every table must verify: key order, tree structure, and every
//! page on disk with a valid checksum.
//!
//! Files: `sweep.rs` (the sweep: a seed's run, halt, recoveries and checks, over any
//! [`SweepWorkload`]), `halt.rs` (the halts and how each is armed, recoveries halted in
//! turn, an open under read errors), `model.rs` (the key-value transactions, values
//! and states), `workload.rs` (that workload as a sweep's, and the sweeps that run it), `agents.rs` (the same workload submitted to an agent pool), `judge.rs` (the
//! commit-prefix check and the difference of two states).

mod agents;
mod halt;
mod judge;
mod model;
mod sweep;
mod workload;

pub(crate) use halt::{halted_recoveries, open_with_read_errors, Halt};
pub(crate) use judge::{diff_message, judge, state_diff};
pub use model::{acknowledged, commit_noted, Outcome};
pub(crate) use model::{
    chunks_of, make_value, options, read_state, run_txn, Shape, State, ValueShape, Writes, DIR,
    TABLES,
};
pub use sweep::{sweep, CrashReport, SweepWorkload};
pub use workload::{
    crash_test, crash_test_large_values, crash_test_mode, crash_test_propagation, CrashMode,
};
