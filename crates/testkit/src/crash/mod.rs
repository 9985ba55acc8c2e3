//! The crash sweep (moved here whole; split into files in the next commit).

mod workload;

pub use workload::*;
