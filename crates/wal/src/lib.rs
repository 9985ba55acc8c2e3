//! `sluice-wal`: a write-ahead log manager whose insert path scales on multicore machines.
//!
//! * [`Log`] — open a log directory, [`Log::append`] records, wait for durability
//!   ([`Log::wait_durable`], [`Log::on_durable`], [`Log::durable_future`]), read back
//!   ([`Log::read_from`]), truncate, close.
//! * [`LogBuffer`] — the log buffer on its own, with pluggable insertion algorithms
//!   ([`InsertVariant`]), for embedding or benchmarking.
//! * Horizontal partitioning ([`Log::open_dirs`], the [`dirs`] module): segments
//!   round-robin over several directories (devices); an optional archiver
//!   ([`Log::open_archived`], `segments/archive.rs`) copies each finished segment off the
//!   device the writer has left and lists it in the archive's `MANIFEST`, and truncation
//!   frees only archived segments; [`read_archive_manifest`] and [`verify_archive`] check
//!   an archive. [`Log::open_mirrored`] also ships the archive to an [`ArchiveMirror`]
//!   (an object store: `sluice-objstore`), and a segment counts as archived only once it
//!   is uploaded too.
//! * Recovery on open finds the end of the log: a torn tail is cut; damage inside the
//!   durable log is reported as [`WalError::Corruption`] with its LSN.
//! * Log-buffer contention, measured: a thread that asks ([`time_insert_waits`]) has
//!   its waits inside inserts timed ([`insert_waited`]), for a breakdown of where its
//!   time goes.
//!
//! Records are opaque bytes; the log frames them with a length, a CRC32C and a durable
//! hint (see the `frame` module docs). All disk access goes through
//! [`sluice_storage::Storage`].
//!
//! The source in folders, like raft-engine's: `log.rs` (the handle) over `shared.rs` (the
//! state its threads share), `options.rs` and `health.rs`; `buffer/` (the log buffer and
//! its insertion algorithms, and `insert_wait.rs`, the timing of their waits); `flush/`
//! (the flush daemon and group commit); `segments/` (segment files, their directories,
//! the preparer, the archiver, truncation); `frame.rs`, `reader.rs` and `recovery.rs`
//! (reading the log back). Imports point one way, folders included
//! (`crates/testkit/tests/no_crate_has_an_import_circle.rs`).

#![warn(missing_docs)]

mod buffer;
mod copy;
mod error;
mod flush;
pub mod frame;
/// Entry points for the fuzz targets in `fuzz/` (one per decoder); not part of the API.
#[doc(hidden)]
pub mod fuzzing;
mod health;
mod insert_wait;
mod log;
mod lsn;
mod notify;
mod options;
mod reader;
mod recovery;
mod segments;
mod shared;
mod sync;
#[cfg(test)]
mod tests_asserts;
#[cfg(test)]
mod tests_prop;
mod wait;

pub use buffer::{BufferOptions, InsertVariant, LogBuffer};
pub use copy::{copy_file, cut_log_dir, read_segment_files, CopiedSegments, COPY_STEP_BYTES};
pub use error::{Result, WalError};
pub use insert_wait::{insert_waited, time_insert_waits};
pub use log::{Appended, FlushInfo, Log, LogStats};
pub use lsn::Lsn;
pub use notify::{DurableCallback, DurableFuture};
pub use options::{FlushPath, GroupCommit, LogOptions, Preallocate};
pub use reader::{LogReader, ReadRecord};
pub use recovery::RecoveryInfo;
pub use segments::{
    dirs, parse_archive_manifest, parse_archive_manifest_whole, read_archive_manifest, segment,
    verify_archive, ArchiveMirror, ArchiveProblem, ArchiveReport, ArchivedSegment, MirrorRetry,
    SharedMirror, MANIFEST_NAME, MAX_RECYCLED_SEGMENTS,
};

/// Internals the loom models (`tests/loom.rs`) check directly; absent from normal builds.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_model {
    use crate::Lsn;

    /// The durable-LSN waiters as [`crate::Log`] uses them: blocking waiters park with
    /// their thread registered; the flush daemon publishes a durable position, then wakes
    /// exactly the satisfied ones.
    pub struct DurableWaiters(crate::notify::Waiters);

    impl Default for DurableWaiters {
        fn default() -> Self {
            DurableWaiters(crate::notify::Waiters::new())
        }
    }

    impl DurableWaiters {
        /// Blocks until `done()` holds; `done` must become true once the durable position
        /// reaches `lsn`.
        pub fn block_until(&self, lsn: Lsn, done: impl FnMut() -> bool) {
            self.0.block_until(lsn, done)
        }

        /// The daemon's side, after it published `durable`: wakes the satisfied waiters
        /// (and runs due callbacks, returning how many ran).
        pub fn on_durable(&self, durable: Lsn) -> usize {
            self.0.on_durable(durable)
        }
    }
}
