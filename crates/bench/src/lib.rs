//! Workloads and experiments for sluice. Each experiment is a function that takes a
//! config and returns a serialisable result; the `sluice` CLI parses flags, shows
//! progress and prints. Keeping them here (not in the CLI) lets tests and other tools run
//! the same experiments.
//!
//! The folders are layers, and imports point down only (checked by
//! `crates/testkit/tests/no_crate_has_an_import_circle.rs`, folders included):
//!
//! ```text
//!  report        `sluice report`: every experiment at one budget, one HTML page
//!       │
//!  experiments   one module per experiment of the papers: runs, sweeps, their files
//!       │
//!  compare       `sluice compare`: the rounds, and one folder per peer engine
//!       │
//!  workloads     TPC-B and TATP, the closed-loop driver, sessions, the benchmark database
//!       │
//!  output · metrics · knobs    tables, CSV, JSON, figures · latency and CPU · flag bounds and names
//! ```

#![warn(missing_docs)]

pub mod compare;
pub mod experiments;
pub mod knobs;
pub mod metrics;
pub mod output;
pub mod report;
pub mod workloads;
