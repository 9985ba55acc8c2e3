//! The lock manager (moved here whole; split into files in the next commit).

mod manager;

pub(crate) use manager::*;
