//! `sluice-wal`: a write-ahead log manager whose insert path scales on multicore machines.
//!
//! * [`Log`] — open a log directory, [`Log::append`] records, wait for durability
//!   ([`Log::wait_durable`], [`Log::on_durable`], [`Log::durable_future`]), read back
//!   ([`Log::read_from`]), truncate, close.
//! * [`LogBuffer`] — the log buffer on its own, with pluggable insertion algorithms
//!   ([`InsertVariant`]), for embedding or benchmarking.
//! * Recovery on open finds the end of the log: a torn tail is cut; damage inside the
//!   durable log is reported as [`WalError::Corruption`] with its LSN.
//!
//! Records are opaque bytes; the log frames them with a length, a CRC32C and a durable
//! hint (see the `frame` module docs). All disk access goes through
//! [`sluice_storage::Storage`].

#![warn(missing_docs)]

mod buffer;
mod error;
mod flush;
pub mod frame;
mod log;
mod lsn;
mod notify;
mod prepare;
mod reader;
mod recovery;
pub mod segment;
mod sync;
mod wait;

pub use buffer::{BufferOptions, InsertVariant, LogBuffer};
pub use error::{Result, WalError};
pub use log::{Appended, GroupCommit, Log, LogOptions, LogStats};
pub use lsn::Lsn;
pub use notify::{DurableCallback, DurableFuture};
pub use reader::LogReader;
pub use recovery::RecoveryInfo;
