//! Update propagation (the propagation paper): how changes made in the buffer pool reach
//! the data file, chosen per database by [`Strategy`].
//!
//! * [`Strategy::CheckpointSweep`] (the default): each checkpoint writes every page dirty
//!   since before its redo point; nothing else writes pages but eviction.
//! * [`Strategy::Page`]: a page cleaner thread (`page_cleaner`) writes dirty pages in the
//!   order of a policy, in clusters of adjacent pages; checkpoints are fuzzy and write
//!   nothing, so REDO length is whatever the cleaner leaves behind.
//! * [`Strategy::Log`]: a sorter (`jobs`) turns the durable log into runs sorted by
//!   page id, then LSN, kept in a run store (`runs`); at each checkpoint the log cleaner (`log_cleaner`) merges the runs
//!   from the last propagated LSN up to the checkpoint's redo point and replays them
//!   segment by segment onto the data file, without latching a buffer-pool page, then
//!   tells the pool which CleanLSNs advanced. Restart recovery starts REDO there.
//!
//! What each strategy asks of a checkpoint and which background job it runs is the
//! strategy's decision (`strategy`); `jobs` starts that job and runs its rounds.
//!
//! [`Backlog`] is what the propagation experiment samples: dirty pages, REDO length and
//! the cleaner's writes.

pub(crate) mod jobs;
pub(crate) mod log_cleaner;
pub(crate) mod page_cleaner;
pub(crate) mod runs;

#[cfg(test)]
mod log_tests;

pub(crate) use crate::strategy::{Background, Counters, Occasion};
pub use crate::strategy::{PageCleaner, Policy, Strategy};

/// Where propagation stands, as the propagation experiment samples it
/// ([`Database::backlog`](crate::Database::backlog)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Frames holding a page that is dirty (PageLSN above CleanLSN).
    pub dirty_pages: usize,
    /// Log bytes from the oldest dirty page's recovery LSN to the end of the log: what
    /// the redo pass would replay for them after a crash now (0 when no page is dirty).
    pub redo_bytes: u64,
    /// Bytes the propagation strategy wrote to the data file so far (the page cleaner's,
    /// the log cleaner's or the checkpoint sweep's writes; not evictions).
    pub propagated_bytes: u64,
    /// Write calls those bytes took (a cluster or a run of adjacent pages is one).
    pub propagation_writes: u64,
    /// Time the strategy spent propagating (the page cleaner's rounds, the log
    /// cleaner's passes: reading, applying, writing and syncing), in microseconds:
    /// `propagated_bytes` over it is the rate at which it drains dirty pages while it
    /// works, its write bandwidth.
    pub propagation_busy_us: u64,
    /// Of that time, microseconds in data-file writes and syncs: `propagated_bytes` over
    /// it is the bandwidth the strategy's I/O pattern gets from the device.
    pub propagation_write_us: u64,
    /// Pages written by eviction so far (dirty victims).
    pub eviction_writes: u64,
    /// Log-based propagation: everything below this LSN is on disk in the data file.
    pub propagated_lsn: u64,
    /// Log-based propagation: the end of the last sorted run (the runs hold the log
    /// below it).
    pub sorted_lsn: u64,
    /// Log-based propagation: bytes written to sorted runs so far.
    pub sorted_bytes: u64,
    /// Log-based propagation: pages the log cleaner could not rebuild (no valid base
    /// and no image in the runs) and left to the checkpoint's page sweep.
    pub fallback_pages: u64,
    /// Log-based propagation: the last damaged sorted run found, and what was done
    /// about it.
    pub run_damage: Option<String>,
}

/// A database's propagation machinery: the strategy, its counters, the run store (log
/// strategy) and the background threads (page cleaner, sorter).
pub(crate) struct Propagation {
    pub(crate) strategy: Strategy,
    pub(crate) counters: Counters,
    /// The run store, opened after recovery (log strategy, read-write only).
    pub(crate) runs: std::sync::OnceLock<runs::RunStore>,
    pub(crate) cleaner: crate::worker::Worker,
    pub(crate) sorter: crate::worker::Worker,
    /// The jobs the workers run (they hold them weakly).
    pub(crate) jobs: parking_lot::Mutex<Vec<std::sync::Arc<dyn crate::worker::Job>>>,
}

impl Propagation {
    pub(crate) fn new(strategy: Strategy) -> Propagation {
        Propagation {
            strategy,
            counters: Counters::default(),
            runs: std::sync::OnceLock::new(),
            cleaner: crate::worker::Worker::default(),
            sorter: crate::worker::Worker::default(),
            jobs: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// Stops the background threads (idempotent).
    pub(crate) fn stop(&self) {
        self.cleaner.stop();
        self.sorter.stop();
    }
}
