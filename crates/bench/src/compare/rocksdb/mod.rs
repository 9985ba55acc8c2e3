//! RocksDB's TransactionDB through the rocksdb crate (feature `peers`): TPC-B
//! ([`RocksTpcb`]) and TATP ([`RocksTatp`]).

mod tatp;
mod tpcb;

pub use tatp::RocksTatp;
pub use tpcb::{RocksTpcb, LOCK_TIMEOUT_MS};
