//! The database (moved here whole; split into files in the next commit).

mod open;

pub use open::*;
