//! The workloads (TPC-B, TATP; docs/BENCHMARKS.md) and what runs them on sluice: the
//! closed-loop driver, the benchmark database and its setup, sessions that load once and
//! run several times, and the record of what a database holds.

pub mod driver;
pub mod session;
pub mod setup;
pub mod stored;
pub mod tatp;
pub mod tpcb;
pub mod tpcb_partitioned;
