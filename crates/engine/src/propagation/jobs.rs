//! The background jobs that propagate — the page cleaner's rounds and the sorter's
//! catch-up — started as the strategy chooses ([`Strategy::background`]). Each holds its
//! database only weakly (an [`Owner`], so it never keeps it open) and works on a narrow
//! [`Context`]: the pool, the log, the propagation state and the database's health,
//! which a failed round poisons ("page cleaner failed: …", "sorter failed: …").
//!
//! [`Strategy::background`]: crate::strategy::Strategy::background

use super::runs::{self, RunStore};
use super::{page_cleaner, Background, Propagation};
use crate::buffer_pool::BufferPool;
use crate::error::Result;
use crate::health::Health;
use crate::log_sink::LogSink;
use crate::strategy::PageCleaner;
use crate::worker::Job;
use sluice_storage::Storage;
use sluice_wal::Lsn;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// What the propagation jobs work on.
pub(crate) struct Context<'a> {
    pub(crate) pool: &'a BufferPool,
    pub(crate) log: &'a LogSink,
    pub(crate) propagation: &'a Propagation,
    /// The database's: a failed round poisons it.
    pub(crate) health: &'a Health,
    /// The sorter catches up once this many durable log bytes are not sorted into runs.
    pub(crate) run_bytes: u64,
    /// The page cleaner runs a round at least this often.
    pub(crate) cleaner_interval: Duration,
}

impl Context<'_> {
    /// Records a failed background job: every later operation fails with it.
    fn failed(&self, what: &str, cause: &dyn std::fmt::Display) {
        self.health.poison(format_args!("{what} failed: {cause}"));
    }
}

/// The database the jobs belong to.
pub(crate) trait Owner: Send + Sync + 'static {
    /// An error if the database cannot take work (closed or poisoned): a job then does
    /// nothing.
    fn check(&self) -> Result<()>;
    /// What the jobs work on.
    fn propagation_context(&self) -> Context<'_>;
}

/// The page cleaner's job: a round of the policy over the pool.
struct CleanerJob<O> {
    owner: Weak<O>,
    cleaner: PageCleaner,
}

impl<O: Owner> Job for CleanerJob<O> {
    fn round(&self) {
        let Some(owner) = self.owner.upgrade() else {
            return;
        };
        if owner.check().is_err() {
            return;
        }
        let cx = owner.propagation_context();
        let r = page_cleaner::round(cx.pool, self.cleaner, &cx.propagation.counters);
        if let Err(e) = r {
            cx.failed("page cleaner", &e);
        }
    }
}

/// The sorter's job: sort the durable log into a run once a run's worth has accumulated.
struct SorterJob<O>(Weak<O>);

impl<O: Owner> Job for SorterJob<O> {
    fn round(&self) {
        let Some(owner) = self.0.upgrade() else {
            return;
        };
        if owner.check().is_err() {
            return;
        }
        let cx = owner.propagation_context();
        let Some(runs) = cx.propagation.runs.get() else {
            return;
        };
        let durable = cx.log.durable_lsn();
        let behind = durable.0.saturating_sub(runs.sorted_lsn().0);
        if behind < cx.run_bytes {
            return;
        }
        if let Err(e) = runs.catch_up(cx.log, durable) {
            cx.failed("sorter", &e);
        }
    }
}

/// Starts the background job the strategy runs, if any (a read-write database's).
pub(crate) fn start<O: Owner>(owner: &Arc<O>) -> std::io::Result<()> {
    let cx = owner.propagation_context();
    let weak = Arc::downgrade(owner);
    let propagation = cx.propagation;
    match propagation.strategy.background() {
        Background::Nothing => {}
        Background::PageCleaner(cleaner) => {
            // Eviction pressure: a fetch that has to write a dirty victim wakes it.
            let hook = weak.clone();
            cx.pool.set_dirty_victim_hook(Box::new(move || {
                if let Some(owner) = hook.upgrade() {
                    owner.propagation_context().propagation.cleaner.notify();
                }
            }));
            let job: Arc<dyn Job> = Arc::new(CleanerJob {
                owner: weak,
                cleaner,
            });
            propagation.cleaner.start(
                "sluice-cleaner",
                Arc::downgrade(&job),
                cx.cleaner_interval,
            )?;
            propagation.jobs.lock().push(job);
        }
        Background::Sorter => {
            let job: Arc<dyn Job> = Arc::new(SorterJob(weak));
            let period = Duration::from_millis(50);
            propagation
                .sorter
                .start("sluice-sorter", Arc::downgrade(&job), period)?;
            propagation.jobs.lock().push(job);
        }
    }
    Ok(())
}

/// Opens the run store of the database in `db_dir` (its directory [`runs::DIR`]) if the
/// strategy runs the sorter (a read-write database's), starting from `propagated`, below
/// which the data file holds every change (where restart recovery's redo began, or the
/// end of the log if it had nothing to redo).
pub(crate) fn open_runs(
    propagation: &Propagation,
    storage: Arc<dyn Storage>,
    db_dir: &Path,
    propagated: Lsn,
) -> Result<()> {
    if propagation.strategy.background() != Background::Sorter {
        return Ok(());
    }
    let runs = RunStore::open(storage, &db_dir.join(runs::DIR))?;
    let _ = propagation.runs.set(runs);
    propagation
        .counters
        .propagated_lsn
        .store(propagated.0, Ordering::Release);
    Ok(())
}
