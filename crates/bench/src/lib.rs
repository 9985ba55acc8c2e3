//! Workloads and experiments for sluice. Each experiment is a function that takes a
//! config and returns a serialisable result; the `sluice` CLI parses flags, shows
//! progress and prints. Keeping them here (not in the CLI) lets tests and other tools run
//! the same experiments.

#![warn(missing_docs)]

pub mod commit_sweep;
pub mod compare;
pub mod driver;
pub mod log_insert;
pub mod log_insert_sweep;
pub mod partition_gamma;
pub mod partition_tpcb;
pub mod partition_vertical;
pub mod plot;
pub mod plot_bars;
pub mod propagation;
pub mod propagation_sweep;
pub mod report;
pub mod session;
pub mod setup;
pub mod stored;
pub mod sys;
pub mod tatp;
pub mod tpcb;
pub mod tpcb_crash;
pub mod wal;
