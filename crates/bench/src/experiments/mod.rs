//! The experiments: one module per measurement of the papers (the WAL and log-insert
//! microbenchmarks, the commit-protocol sweeps, update propagation, log partitioning,
//! TPC-B under the crash sweep), each a config in and a serialisable result out; the
//! sweeps also write their CSV, JSON and figures, in rounds against the machine's noise
//! ([`noise`]).

pub mod commit_sweep;
pub mod log_insert;
pub mod log_insert_sweep;
pub mod noise;
pub mod partition;
pub mod propagation;
pub mod propagation_sweep;
pub mod restore;
pub mod tpcb_crash;
pub mod wal;
