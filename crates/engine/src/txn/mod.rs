//! Transactions (moved here whole, with the commit sequencer; split into files in the
//! next commit).

pub(crate) mod commit;
mod transaction;

pub use transaction::*;
