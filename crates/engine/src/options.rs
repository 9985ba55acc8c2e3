//! How a database is opened.

use crate::error::{Error, Result};
use crate::page::{MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use crate::strategy::Strategy;
use sluice_wal::{LogOptions, SharedMirror};
use std::path::PathBuf;
use std::time::Duration;

/// How transactions commit (Aether §3–4): when locks are released, and whether the
/// committing thread waits for the log flush.
///
/// Under every protocol but [`CommitProtocol::Async`] a commit is acknowledged only once
/// its commit record is durable, and a transaction that read data released early is
/// acknowledged only once the transaction it read from is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CommitProtocol {
    /// Locks are held until the commit record is durable; the committing thread blocks.
    Classic,
    /// Early lock release: locks are released as soon as the commit record is in the log
    /// buffer; the committing thread still blocks until it is durable.
    Elr,
    /// Flush pipelining: locks are held until durable, but an agent thread detaches the
    /// transaction and runs other work; the log daemon hands it back once hardened.
    /// (A direct [`Transaction::commit`](crate::Transaction::commit) has no agent to
    /// detach from and behaves as `Classic`.)
    Pipelined,
    /// Early lock release and flush pipelining together — the Aether configuration.
    /// (A direct commit behaves as `Elr`.)
    #[default]
    ElrPipelined,
    /// Asynchronous commit: acknowledged without waiting for the log. **Unsafe**: a crash
    /// loses acknowledged commits. Offered only as the comparison point the papers use.
    Async,
}

impl CommitProtocol {
    /// Every protocol, in the order reports list them.
    pub const ALL: [CommitProtocol; 5] = [
        CommitProtocol::Classic,
        CommitProtocol::Elr,
        CommitProtocol::Pipelined,
        CommitProtocol::ElrPipelined,
        CommitProtocol::Async,
    ];

    /// The protocol's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            CommitProtocol::Classic => "classic",
            CommitProtocol::Elr => "elr",
            CommitProtocol::Pipelined => "pipelined",
            CommitProtocol::ElrPipelined => "elr-pipelined",
            CommitProtocol::Async => "async",
        }
    }

    /// Locks are released before the commit is durable.
    pub fn early_release(self) -> bool {
        matches!(
            self,
            CommitProtocol::Elr | CommitProtocol::ElrPipelined | CommitProtocol::Async
        )
    }

    /// Agents detach committing transactions instead of blocking on the log.
    pub fn pipelined(self) -> bool {
        matches!(
            self,
            CommitProtocol::Pipelined | CommitProtocol::ElrPipelined
        )
    }

    /// Acknowledgement waits for durability.
    pub fn durable(self) -> bool {
        self != CommitProtocol::Async
    }
}

impl std::fmt::Display for CommitProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CommitProtocol {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        CommitProtocol::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = CommitProtocol::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown commit protocol '{s}' (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// Options of a database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Bytes per page: a power of two in 1 KiB..=32 KiB. Used when the database is
    /// created; an existing database keeps the page size it was created with.
    pub page_size: usize,
    /// Buffer-pool frames (pages cached in memory). At least 16.
    pub pool_pages: usize,
    /// The write-ahead log's options.
    pub log: LogOptions,
    /// How long a lock request waits before it fails with
    /// [`Error::LockTimeout`](crate::Error::LockTimeout) (deadlock handling).
    pub lock_timeout: Duration,
    /// The background checkpointer takes a checkpoint after this many log bytes since
    /// the last one began, and sooner — after a quarter of it — while the log kept on
    /// disk exceeds four times this plus two segments (something, usually a long
    /// transaction, holds the log and truncation should follow as soon as it lets go).
    /// 0 disables both triggers. Commits never run a checkpoint themselves.
    pub checkpoint_log_bytes: u64,
    /// The background checkpointer also takes a checkpoint when this much time has
    /// passed since the last one and log was written meanwhile, so that a quiet database
    /// still bounds its restart time. Zero disables the timer.
    pub checkpoint_interval: Duration,
    /// How transactions commit.
    pub commit: CommitProtocol,
    /// Open the database read-only ([`crate::Builder::read_only`]): nothing on disk is
    /// created or changed, and every write fails with
    /// [`Error::ReadOnly`](crate::Error::ReadOnly).
    pub read_only: bool,
    /// How updates reach the data file ([`Strategy`]): by default each checkpoint writes
    /// the pages dirty since before its redo point; a page cleaner or log-based
    /// propagation can do it instead.
    pub propagation: Strategy,
    /// The page cleaner's period ([`Strategy::Page`]): it runs a round at least this
    /// often, and sooner when eviction finds dirty victims or the log is short of space
    /// (zero: only then).
    pub cleaner_interval: Duration,
    /// Log-based propagation ([`Strategy::Log`]): the pages the log cleaner reads and
    /// writes as one unit (a segment), in bytes; a multiple of the page size.
    pub propagation_segment_bytes: usize,
    /// Log-based propagation: the sorter writes a sorted run once this much durable log
    /// is not yet in one (each checkpoint also sorts the log up to its redo point).
    pub run_bytes: u64,
    /// Log-based propagation: keep sorted runs after they are propagated (for media
    /// recovery: the data file can be rebuilt from an old copy plus the runs); by
    /// default a run is removed once everything in it is in the data file.
    pub keep_runs: bool,
    /// Continuous log archiving ([`crate::Builder::log_archive`]): a background thread
    /// copies each finished log segment to this directory, with a `MANIFEST` listing
    /// each copy's LSN range, length and checksum, and checkpoints free only segments
    /// already archived (`Database::metrics().archive` says how far it is). `None` (the
    /// default): no archive. A read-only open never archives. A partitioned database
    /// archives partition `i`'s log in `part-<i>` under it.
    pub log_archive: Option<PathBuf>,
    /// A mirror the log archive is shipped to ([`crate::Builder::archive_mirror`]; an
    /// object store through `sluice-objstore`): each archived segment is uploaded, then
    /// the archive's `MANIFEST`, and only then counts as archived, so checkpoints free
    /// only uploaded segments. Needs [`Options::log_archive`] (the mirror copies the
    /// local archive). `None` (the default): no mirror. Not for a partitioned database.
    pub archive_mirror: Option<SharedMirror>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: 8192,
            pool_pages: 4096,
            log: LogOptions::default(),
            lock_timeout: Duration::from_secs(2),
            checkpoint_log_bytes: 64 << 20,
            checkpoint_interval: Duration::from_secs(30),
            commit: CommitProtocol::default(),
            read_only: false,
            propagation: Strategy::CheckpointSweep,
            cleaner_interval: Duration::from_millis(100),
            propagation_segment_bytes: 1 << 20,
            run_bytes: 16 << 20,
            keep_runs: false,
            log_archive: None,
            archive_mirror: None,
        }
    }
}

impl Options {
    /// Small pages, a small pool, small log segments and frequent checkpoints: makes a
    /// few thousand operations split pages, evict, roll segments and checkpoint. For tests.
    pub fn small() -> Options {
        Options {
            page_size: 1024,
            pool_pages: 32,
            log: LogOptions {
                segment_bytes: 64 << 10,
                buffer_bytes: 256 << 10,
                group_commit: sluice_wal::GroupCommit {
                    max_delay: Duration::from_micros(200),
                    ..Default::default()
                },
                ..LogOptions::default()
            },
            lock_timeout: Duration::from_millis(200),
            checkpoint_log_bytes: 128 << 10,
            checkpoint_interval: Duration::from_secs(30),
            commit: CommitProtocol::default(),
            read_only: false,
            propagation: Strategy::CheckpointSweep,
            cleaner_interval: Duration::from_millis(20),
            propagation_segment_bytes: 16 << 10,
            run_bytes: 64 << 10,
            keep_runs: false,
            log_archive: None,
            archive_mirror: None,
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&self.page_size)
            || !self.page_size.is_power_of_two()
        {
            return Err(Error::InvalidArgument(format!(
                "page size {} must be a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}",
                self.page_size
            )));
        }
        if self.pool_pages < 16 {
            return Err(Error::InvalidArgument(format!(
                "pool of {} pages is below the minimum of 16",
                self.pool_pages
            )));
        }
        let seg = self.propagation_segment_bytes;
        if seg < self.page_size || !seg.is_multiple_of(self.page_size) {
            return Err(Error::InvalidArgument(format!(
                "propagation segment of {seg} bytes must be a positive multiple of the page size {}",
                self.page_size
            )));
        }
        if self.archive_mirror.is_some() && self.log_archive.is_none() && !self.read_only {
            return Err(Error::InvalidArgument(
                "an archive mirror ships the local log archive: set log_archive too".into(),
            ));
        }
        if self.run_bytes == 0 {
            return Err(Error::InvalidArgument(
                "sorted run size (run_bytes) must be positive".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_options_are_rejected() {
        let o = Options {
            page_size: 3000,
            ..Options::default()
        };
        assert!(matches!(o.check(), Err(Error::InvalidArgument(_))));
        let o = Options {
            pool_pages: 2,
            ..Options::default()
        };
        assert!(o.check().is_err());
        assert!(Options::small().check().is_ok());
    }
}
