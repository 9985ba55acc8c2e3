//! Update propagation (the propagation paper): how changes made in the buffer pool reach
//! the data file, chosen per database by [`Strategy`].
//!
//! * [`Strategy::CheckpointSweep`] (the default): each checkpoint writes every page dirty
//!   since before its redo point; nothing else writes pages but eviction.
//! * [`Strategy::Page`]: a page cleaner thread (`page_cleaner`) writes dirty pages in the
//!   order of a policy, in clusters of adjacent pages; checkpoints are fuzzy and write
//!   nothing, so REDO length is whatever the cleaner leaves behind.
//! * [`Strategy::Log`]: an archiver (`archive`) turns the durable log into runs sorted by
//!   page id, then LSN; at each checkpoint the log cleaner (`log_cleaner`) merges the runs
//!   from the last propagated LSN up to the checkpoint's redo point and replays them
//!   segment by segment onto the data file, without latching a buffer-pool page, then
//!   tells the pool which CleanLSNs advanced. Restart recovery starts REDO there.
//!
//! [`Backlog`] is what the propagation experiment samples: dirty pages, REDO length and
//! the cleaner's writes.

pub(crate) mod archive;
pub(crate) mod log_cleaner;
pub(crate) mod page_cleaner;
pub(crate) mod worker;

#[cfg(test)]
mod log_tests;

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

/// The order in which the page cleaner picks dirty pages (propagation paper §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Lowest CleanLSN first: shortens REDO.
    Oldest,
    /// Least referenced first: the pages replacement will want next.
    Coldest,
    /// Most referenced first: keeps hot pages (roots, catalogs) nearly clean.
    Hottest,
    /// No order: the first dirty frames found.
    None,
    /// Only clusters of at least `min_pages` adjacent dirty pages are written.
    Clustered {
        /// The smallest cluster written.
        min_pages: usize,
    },
    /// Oldest-first candidates, of which clusters of at least 8 pages are written, plus
    /// the oldest few pages alone so REDO does not grow without bound.
    Mixed,
}

/// The page cleaner's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageCleaner {
    /// The order of candidates.
    pub policy: Policy,
    /// Candidates kept per round (the bounded heap); 0: a default of 1 % of the pool.
    pub heap: usize,
}

/// How updates reach the data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Each checkpoint writes every page dirty since before its redo point.
    #[default]
    CheckpointSweep,
    /// A page cleaner thread with a policy; checkpoints write no pages.
    Page(PageCleaner),
    /// Log-based propagation: archiver, sorted runs and the log cleaner.
    Log,
}

impl Strategy {
    /// Every strategy the propagation experiment compares, as `sluice bench propagation
    /// --strategy` spells them (heap sizes as given).
    pub fn name(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::CheckpointSweep => write!(f, "checkpoint-sweep"),
            Strategy::Log => write!(f, "log"),
            Strategy::Page(PageCleaner { policy, heap }) => {
                let heap = if *heap == 0 {
                    String::new()
                } else {
                    format!(":{heap}")
                };
                match policy {
                    Policy::Oldest => write!(f, "page-oldest{heap}"),
                    Policy::Coldest => write!(f, "page-coldest{heap}"),
                    Policy::Hottest => write!(f, "page-hottest{heap}"),
                    Policy::None => write!(f, "page-none"),
                    Policy::Clustered { min_pages } => write!(f, "page-clustered:{min_pages}"),
                    Policy::Mixed => write!(f, "page-mixed"),
                }
            }
        }
    }
}

impl FromStr for Strategy {
    type Err = Error;

    /// `checkpoint-sweep`, `log`, `page-oldest[:heap]`, `page-coldest[:heap]`,
    /// `page-hottest[:heap]`, `page-none`, `page-clustered:N`, `page-mixed`.
    fn from_str(s: &str) -> Result<Strategy> {
        let bad = |why: &str| {
            Error::InvalidArgument(format!(
                "propagation strategy {s:?}: {why} (expected log, checkpoint-sweep, page-oldest[:heap], page-coldest[:heap], page-hottest[:heap], page-none, page-clustered:N or page-mixed)"
            ))
        };
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let number = |a: &str| -> Result<usize> {
            a.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(&format!("{a:?} is not a positive whole number")))
        };
        let heap = |a: Option<&str>| -> Result<usize> { a.map_or(Ok(0), number) };
        let page = |policy, heap| Ok(Strategy::Page(PageCleaner { policy, heap }));
        match (name, arg) {
            ("log", None) => Ok(Strategy::Log),
            ("checkpoint-sweep", None) => Ok(Strategy::CheckpointSweep),
            ("page-oldest", a) => page(Policy::Oldest, heap(a)?),
            ("page-coldest", a) => page(Policy::Coldest, heap(a)?),
            ("page-hottest", a) => page(Policy::Hottest, heap(a)?),
            ("page-none", None) => page(Policy::None, 0),
            ("page-mixed", None) => page(Policy::Mixed, 0),
            ("page-clustered", Some(a)) => page(
                Policy::Clustered {
                    min_pages: number(a)?,
                },
                0,
            ),
            ("page-clustered", None) => Err(bad("page-clustered needs a minimum cluster size")),
            ("log" | "checkpoint-sweep" | "page-none" | "page-mixed", Some(_)) => {
                Err(bad("this strategy takes no argument"))
            }
            _ => Err(bad("unknown strategy")),
        }
    }
}

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
    /// Log-based propagation: the end of the last run (the archive holds the log below).
    pub archived_lsn: u64,
    /// Log-based propagation: bytes written to archive runs so far.
    pub archive_bytes: u64,
    /// Log-based propagation: pages the log cleaner could not rebuild (no valid base
    /// and no image in the runs) and left to the checkpoint's page sweep.
    pub fallback_pages: u64,
    /// The last damaged run found, and what was done about it.
    pub archive_damage: Option<String>,
}

/// Counters shared by the strategies.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) propagated_bytes: AtomicU64,
    pub(crate) propagation_writes: AtomicU64,
    /// Nanoseconds the strategy spent propagating (reading, applying, writing, syncing).
    pub(crate) busy_nanos: AtomicU64,
    /// Nanoseconds of those in data-file writes and syncs.
    pub(crate) write_nanos: AtomicU64,
    pub(crate) propagated_lsn: AtomicU64,
    pub(crate) fallback_pages: AtomicU64,
    pub(crate) archive_damage: parking_lot::Mutex<Option<String>>,
}

impl Counters {
    /// Counts one write of `bytes` by the propagation strategy.
    pub(crate) fn wrote(&self, bytes: usize) {
        self.propagated_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.propagation_writes.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts time spent in data-file writes and syncs.
    pub(crate) fn writing(&self, d: std::time::Duration) {
        self.write_nanos
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Counts time spent propagating.
    pub(crate) fn busy(&self, d: std::time::Duration) {
        self.busy_nanos
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }
}

/// A database's propagation machinery: the strategy, its counters, the archive (log
/// strategy) and the background threads (page cleaner, archiver).
pub(crate) struct Propagation {
    pub(crate) strategy: Strategy,
    pub(crate) counters: Counters,
    /// The archive, opened after recovery (log strategy, read-write only).
    pub(crate) archive: std::sync::OnceLock<archive::Archive>,
    pub(crate) cleaner: worker::Worker,
    pub(crate) archiver: worker::Worker,
    /// The jobs the workers run (they hold them weakly).
    pub(crate) jobs: parking_lot::Mutex<Vec<std::sync::Arc<dyn worker::Job>>>,
}

impl Propagation {
    pub(crate) fn new(strategy: Strategy) -> Propagation {
        Propagation {
            strategy,
            counters: Counters::default(),
            archive: std::sync::OnceLock::new(),
            cleaner: worker::Worker::default(),
            archiver: worker::Worker::default(),
            jobs: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// Stops the background threads (idempotent).
    pub(crate) fn stop(&self) {
        self.cleaner.stop();
        self.archiver.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_parse_and_print_back() {
        for s in [
            "log",
            "checkpoint-sweep",
            "page-oldest",
            "page-oldest:200",
            "page-coldest:20",
            "page-hottest:2000",
            "page-none",
            "page-clustered:8",
            "page-clustered:32",
            "page-mixed",
        ] {
            let parsed: Strategy = s.parse().unwrap();
            assert_eq!(parsed.to_string(), s);
        }
        assert_eq!(
            "page-coldest:7".parse::<Strategy>().unwrap(),
            Strategy::Page(PageCleaner {
                policy: Policy::Coldest,
                heap: 7
            })
        );
        for bad in [
            "",
            "page",
            "page-oldest:",
            "page-oldest:0",
            "page-oldest:x",
            "page-clustered",
            "log:3",
            "page-mixed:2",
            "sweep",
        ] {
            let e = bad.parse::<Strategy>().unwrap_err().to_string();
            assert!(e.contains("propagation strategy"), "{bad}: {e}");
        }
    }
}
