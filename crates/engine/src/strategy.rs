//! How updates reach the data file: the strategies `Options::propagation` chooses from
//! (the machinery is in `propagation`). Kept apart from it so that the options, a low
//! layer, name a strategy without importing the propagation machinery above them.
//!
//! The one place that says what each strategy means: a strategy returns its decisions —
//! what a checkpoint writes on each occasion ([`Strategy::checkpoint_writes`]) and which
//! background job runs ([`Strategy::background`]) — and the checkpoint and the jobs act
//! on them without asking which strategy it is.

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
    /// Log-based propagation: sorter, sorted runs and the log cleaner.
    Log,
}

impl Strategy {
    /// Every strategy the propagation experiment compares, as `sluice bench propagation
    /// --strategy` spells them (heap sizes as given).
    pub fn name(&self) -> String {
        self.to_string()
    }

    /// What a checkpoint taken on `occasion` writes to the data file (`checkpoint` acts
    /// on it). The one place that says what each strategy asks of a checkpoint.
    pub(crate) fn checkpoint_writes(self, occasion: Occasion) -> CheckpointWrites {
        use CheckpointWrites::{Nothing, ReplayThenSweep, Sweep};
        match (self, occasion) {
            // The sweep is how this strategy propagates, on every occasion.
            (Strategy::CheckpointSweep, _) => Sweep { counted: true },
            // The other strategies propagate on their own threads: the checkpoint that
            // ends recovery writes nothing, so the open does not wait for the pages redo
            // changed (the strategy propagates them as it would any others).
            (Strategy::Page(_) | Strategy::Log, Occasion::AfterRecovery) => Nothing,
            // The page cleaner's checkpoints are fuzzy; REDO length is whatever the
            // cleaner leaves behind.
            (Strategy::Page(_), Occasion::Routine) => Nothing,
            // A clean close leaves nothing to redo, whatever the strategy.
            (Strategy::Page(_), Occasion::Closing) => Sweep { counted: false },
            (Strategy::Log, Occasion::Routine | Occasion::Closing) => ReplayThenSweep,
        }
    }

    /// The background job that propagates under this strategy.
    pub(crate) fn background(self) -> Background {
        match self {
            Strategy::CheckpointSweep => Background::Nothing,
            Strategy::Page(cleaner) => Background::PageCleaner(cleaner),
            Strategy::Log => Background::Sorter,
        }
    }
}

/// Why a checkpoint is taken: what it writes depends on that as well as on the strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Occasion {
    /// One a trigger (the background checkpointer) or a client asked for.
    Routine,
    /// The one that ends restart recovery.
    AfterRecovery,
    /// The last before close (or `verify`'s).
    Closing,
}

/// What a checkpoint writes to the data file: the strategy's choice
/// ([`Strategy::checkpoint_writes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckpointWrites {
    /// No page (fuzzy): the dirty-page table keeps the recovery LSNs it had at the
    /// begin record.
    Nothing,
    /// Every page dirty since before the redo point, from the pool. `counted`: the
    /// sweep is the strategy's propagation, so its bytes and time count in the backlog.
    Sweep {
        /// The sweep's writes and time count as propagation.
        counted: bool,
    },
    /// The log cleaner replays the sorted runs up to the redo point, then the sweep writes
    /// what is left (not counted: the log cleaner counts its own work); everything below
    /// the redo point is then in the data file.
    ReplayThenSweep,
}

impl CheckpointWrites {
    /// Every page dirty since before the redo point is written.
    pub(crate) fn sweeps(self) -> bool {
        !matches!(self, CheckpointWrites::Nothing)
    }

    /// The sorted runs are replayed first.
    pub(crate) fn replays(self) -> bool {
        matches!(self, CheckpointWrites::ReplayThenSweep)
    }

    /// The sweep's writes and time count as propagation.
    pub(crate) fn counted(self) -> bool {
        matches!(self, CheckpointWrites::Sweep { counted: true })
    }
}

/// The background job a strategy runs ([`Strategy::background`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Background {
    /// None: checkpoints propagate.
    Nothing,
    /// The page cleaner, configured so. Log-space pressure wakes it too: only written
    /// pages let the log be truncated, and this strategy's checkpoints write none.
    PageCleaner(PageCleaner),
    /// The sorter, which turns the durable log into sorted runs (in the run store
    /// opened after recovery) for the log cleaner.
    Sorter,
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

/// Counters shared by the strategies (what `Database::backlog` reports): kept here, low,
/// because the buffer pool's cluster writes count into them too.
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
    pub(crate) run_damage: parking_lot::Mutex<Option<String>>,
}

impl Counters {
    /// Counts one write of `bytes` by the propagation strategy.
    pub(crate) fn wrote(&self, bytes: usize) {
        self.wrote_in(bytes, 1);
    }

    /// Counts `bytes` written to the data file in `calls` write calls.
    pub(crate) fn wrote_in(&self, bytes: usize, calls: usize) {
        self.propagated_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.propagation_writes
            .fetch_add(calls as u64, Ordering::Relaxed);
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

    /// The choice agrees with the rules the checkpoint spelled out itself before the
    /// strategy returned one: it sweeps when closing or unless fuzzy (after recovery
    /// under a background job) or under the page cleaner; it replays the sorted runs
    /// under log propagation unless fuzzy; only the default strategy counts its sweep.
    #[test]
    fn what_a_checkpoint_writes_is_the_rule_it_always_was() {
        let cleaner = Strategy::Page(PageCleaner {
            policy: Policy::Oldest,
            heap: 0,
        });
        for strategy in [Strategy::CheckpointSweep, cleaner, Strategy::Log] {
            for occasion in [
                Occasion::Routine,
                Occasion::AfterRecovery,
                Occasion::Closing,
            ] {
                let closing = occasion == Occasion::Closing;
                let fuzzy =
                    occasion == Occasion::AfterRecovery && strategy != Strategy::CheckpointSweep;
                let page = matches!(strategy, Strategy::Page(_));
                let w = strategy.checkpoint_writes(occasion);
                let at = format!("{strategy} {occasion:?}");
                assert_eq!(w.sweeps(), closing || !(fuzzy || page), "{at}");
                assert_eq!(w.replays(), !fuzzy && strategy == Strategy::Log, "{at}");
                assert_eq!(w.counted(), strategy == Strategy::CheckpointSweep, "{at}");
            }
        }
        assert_eq!(Strategy::CheckpointSweep.background(), Background::Nothing);
        assert_eq!(Strategy::Log.background(), Background::Sorter);
        let Strategy::Page(c) = cleaner else {
            unreachable!()
        };
        assert_eq!(cleaner.background(), Background::PageCleaner(c));
    }
}
