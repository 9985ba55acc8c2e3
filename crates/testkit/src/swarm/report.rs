//! Running many seeds, on several threads, and what they found.

use super::config::Config;
use super::session::{run_seed, SeedResult};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// What a swarm run found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwarmReport {
    /// Seeds run.
    pub seeds: u64,
    /// Transactions whose commit was acknowledged, over all seeds.
    pub acknowledged: u64,
    /// Acknowledged commits missing after a recovery where they must not be (must be 0).
    pub lost: u64,
    /// Acknowledged commits a crash took away under `async`, or async commits
    /// ([`sluice::Durability::Async`]) under any protocol, as they allow.
    pub lost_async: u64,
    /// Seeds that broke a rule (must be 0).
    pub violations: u64,
    /// Sessions whose halt struck while the work ran.
    pub halts_mid_run: u64,
    /// Recoveries halted themselves.
    pub halts_in_recovery: u64,
    /// Read-only opens whose state was shown and checked.
    pub read_only_opens: u64,
    /// Read-only opens whose recovery changed more pages than the pool held, which it
    /// spilled to a scratch file.
    pub read_only_spilled: u64,
    /// Opens refused, as they must be, because a read failed during recovery.
    pub refused_opens: u64,
    /// Sessions that ended in a clean close.
    pub clean_closes: u64,
    /// Times a state shown by one open was found intact by a later one.
    pub states_rechecked: u64,
    /// Audits of the accounts that saw the total during the work.
    pub audits: u64,
    /// Transactions refused for want of free pool frames (tolerated).
    pub pool_full: u64,
    /// Scratch tables that committed transactions created, dropped and renamed (the
    /// seed's `scratch_share`).
    pub tables_created: u64,
    /// See `tables_created`.
    pub tables_dropped: u64,
    /// See `tables_created`.
    pub tables_renamed: u64,
    /// Compactions that completed beside the work (the seed's `compact`).
    pub compactions: u64,
    /// Data-file pages those compactions returned to the file system.
    pub pages_returned: u64,
    /// Log archives checked after a recovery (the seed's `archive`): whole, from LSN 0,
    /// reaching the log's first segment.
    pub archives_checked: u64,
    /// Archived segments those checks found listed (and whole).
    pub archived_segments: u64,
    /// Archived copies found byte for byte equal to the log's segments at the halts.
    pub archive_copies_compared: u64,
    /// Records read from the archives, as logs, after a seed's final close.
    pub archived_records_read: u64,
    /// Records an archive and its log both held, found equal after a seed's final close.
    pub archived_records_compared: u64,
    /// Backups taken after a seed's last recovery and found to show what the database
    /// showed (the seed's `backup`), and restores of them to the end after its close.
    pub backups: u64,
    /// See `backups`.
    pub restores: u64,
    /// How many seeds exercised each dimension value (`protocol=elr`, `strategy=log`,
    /// `layout=partitioned`, `read-only=opened`, ...).
    pub coverage: BTreeMap<String, u64>,
    /// One line per violating seed: the seed, its configuration, what broke, and the
    /// command that replays it.
    pub failures: Vec<String>,
}

/// The command that replays `seed` alone.
pub fn replay_command(seed: u64) -> String {
    format!("sluice crash-test swarm --first-seed {seed} --seeds 1")
}

/// Runs seeds `first_seed..first_seed + seeds` on `jobs` threads (at least one), calling
/// `progress` with the number of seeds finished after each. The report is the same
/// whatever `jobs` is, as far as the engine's own threads let each seed be a function of
/// its number: results are gathered in seed order. A panic inside a seed is caught and
/// reported as that seed's violation.
pub fn swarm(
    seeds: u64,
    first_seed: u64,
    jobs: usize,
    progress: impl Fn(u64) + Sync,
) -> SwarmReport {
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let results: Mutex<Vec<(u64, SeedResult)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= seeds {
                    return;
                }
                let seed = first_seed + i;
                let r = catch_unwind(AssertUnwindSafe(|| run_seed(seed))).unwrap_or_else(|p| {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "panic".into());
                    SeedResult {
                        problem: Some(format!("panic: {msg}")),
                        ..SeedResult::default()
                    }
                });
                results.lock().expect("results").push((seed, r));
                progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(seed, _)| *seed);
    let mut report = SwarmReport::default();
    for (seed, r) in results {
        report.seeds += 1;
        report.acknowledged += r.acknowledged;
        report.lost += r.lost;
        report.lost_async += r.lost_async;
        report.halts_mid_run += r.halts_mid_run;
        report.halts_in_recovery += r.halts_in_recovery;
        report.read_only_opens += r.read_only_opens;
        report.read_only_spilled += r.read_only_spilled;
        report.refused_opens += r.refused_opens;
        report.clean_closes += r.clean_closes;
        report.states_rechecked += r.states_rechecked;
        report.audits += r.audits;
        report.pool_full += r.pool_full;
        report.tables_created += r.tables.created;
        report.tables_dropped += r.tables.dropped;
        report.tables_renamed += r.tables.renamed;
        report.compactions += r.compactions;
        report.pages_returned += r.pages_returned;
        report.archives_checked += r.archives_checked;
        report.archived_segments += r.archived_segments;
        report.archive_copies_compared += r.archive_copies_compared;
        report.archived_records_read += r.archived_records_read;
        report.archived_records_compared += r.archived_records_compared;
        report.backups += r.backups;
        report.restores += r.restores;
        let mut seen = r.coverage;
        seen.sort();
        seen.dedup();
        for c in seen {
            *report.coverage.entry(c).or_insert(0) += 1;
        }
        if let Some(p) = r.problem {
            report.violations += 1;
            report.failures.push(format!(
                "seed {seed} [{}]: {p}; replay: {}",
                Config::draw(seed).short(),
                replay_command(seed)
            ));
        }
    }
    report
}
