//! SQLite through rusqlite (feature `peers`): TPC-B ([`SqliteTpcb`]) and TATP
//! ([`SqliteTatp`]).

mod tatp;
mod tpcb;

pub use tatp::SqliteTatp;
pub use tpcb::{SqliteTpcb, BUSY_TIMEOUT};
