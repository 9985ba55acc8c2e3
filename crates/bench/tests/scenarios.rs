//! The benchmarks' tests, in one test binary: each `tests/*.rs` file here is a module (a test is
//! named `file::test`).
//! One binary instead of one per file: each test crate was compiled and linked on its
//! own, most of CI's build time.

mod commit_sweep_writes_its_files;
mod propagation_runs;
mod tpcb_crash_sweep;
mod tpcb_sim_crash_sweep;
