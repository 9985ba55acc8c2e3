//! A seed's configuration: every option that changes a code path, drawn from the seed
//! alone. A new option of the engine is a new dimension here (one more draw in
//! [`Config::draw`] and one more field in [`Config::short`]).

use crate::crash::Halt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::experiment::{PageCleaner, Policy};
use sluice::{CommitProtocol, Options, Strategy, Unassigned};
use sluice_wal::{FlushPath, GroupCommit, InsertVariant, Preallocate};
use std::path::PathBuf;
use std::time::Duration;

/// The tables every seed creates: two of keys owned by the threads, two of accounts, three
/// of marker rows. In a partitioned database each goes to a partition its config draws.
pub(crate) const TABLES: [&str; 7] = ["own0", "own1", "acct0", "acct1", "mk0", "mk1", "mk2"];
/// Indexes in [`TABLES`].
pub(crate) const OWN: [usize; 2] = [0, 1];
pub(crate) const ACCT: [usize; 2] = [2, 3];
pub(crate) const MARK: [usize; 3] = [4, 5, 6];
/// The log archive of a seed that archives (`Config::archive`): a partitioned database's
/// partition `i` archives in `part-<i>` under it.
pub(crate) const LOG_ARCHIVE: &str = "/logarchive";
/// The most client threads a seed draws (the fences loaded at creation cover them).
pub(crate) const MAX_THREADS: usize = 4;

/// How clients run their transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// Each client thread begins and commits its own transactions
    /// (`Database::begin` / `Partitioned::begin`).
    Direct,
    /// Each client submits its transactions to a pool of this many agents and waits for
    /// each one's completion (flush pipelining under the pipelined protocols). Ordinary
    /// databases only: agents do not serve a partitioned one.
    Agents(usize),
}

/// Where the database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// An ordinary `Database`, its log in `log/` inside it or in a directory of its own.
    Plain {
        /// The log directory when not the default.
        log_dir: Option<String>,
    },
    /// A `Partitioned` database.
    Partitioned(Partitioning),
}

/// How a `Partitioned` database of the swarm is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partitioning {
    /// Log managers (partitions), 1 to 3.
    pub log_managers: usize,
    /// Per table of `TABLES`: the partition it is assigned to, or `None` for the
    /// unassigned rule.
    pub assigned: Vec<Option<usize>>,
    /// Where tables nobody assigned go.
    pub unassigned: Unassigned,
    /// Per partition: its log directory when not the default.
    pub log_dirs: Vec<Option<String>>,
}

/// How one session of a seed ends, and what happens between it and the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionPlan {
    /// The halt armed while the session's work runs.
    pub(crate) halt: Halt,
    /// The halt is a power loss or a kill drawn over far more operations than the work
    /// does: it never strikes during the work, which ends healthy (and, with
    /// `clean_close`, closes cleanly before the halt).
    pub late: bool,
    /// After the work, if the halt has not struck: close the database cleanly (then the
    /// power goes anyway) instead of halting it.
    pub clean_close: bool,
    /// Before the read-write recovery, open the database read-only with a pool of this
    /// many pages; what it shows must be exactly what the recovery then shows.
    pub read_only: Option<usize>,
    /// Between the read-only open and the recovery, the power goes (after a kill, the
    /// page cache the read-only open read from is lost).
    pub power_loss_after_read_only: bool,
}

/// Large values: puts of values too long for a leaf, stored apart in chunks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LargeValues {
    /// The share of owned-key puts that write a large value (0: none).
    pub share: f64,
    /// The longest large value, in multiples of the page's `max_entry`.
    pub max_entries: usize,
}

/// Everything a seed draws.
#[derive(Debug, Clone)]
pub struct Config {
    /// The seed everything is drawn from.
    pub seed: u64,
    /// The commit protocol.
    pub protocol: CommitProtocol,
    /// Direct transactions or an agent pool.
    pub driver: Driver,
    /// The propagation strategy of each session's open (the first creates the
    /// database), then of the final recovery: consecutive ones differ.
    pub strategies: Vec<Strategy>,
    /// Bytes per page.
    pub page_size: usize,
    /// Buffer-pool frames.
    pub pool_pages: usize,
    /// Large values.
    pub large: LargeValues,
    /// The checkpointer's log-bytes trigger.
    pub checkpoint_log_bytes: u64,
    /// The checkpointer's timer.
    pub checkpoint_interval: Duration,
    /// Bytes per log segment.
    pub segment_bytes: u64,
    /// Bytes of the log buffer.
    pub buffer_bytes: usize,
    /// The log buffer's insertion algorithm.
    pub variant: InsertVariant,
    /// Its consolidation slots.
    pub slots: usize,
    /// When the flush daemon starts a round.
    pub group_commit: GroupCommit,
    /// How new segment space is made: allocated (the default), or zero-filled one seed
    /// in four (taken from the seed, not drawn, so the other dimensions of a seed stay
    /// what they were before this one existed).
    pub preallocate: Preallocate,
    /// The agents keep their time-breakdown clocks (`AgentOptions::time_breakdown`) one
    /// seed in three, taken from the seed like `preallocate`.
    pub agent_clocks: bool,
    /// How the log's rounds reach the disk, taken from the seed like `preallocate`:
    /// the io_uring path (the simulated disk's deferred, reordering ring) in three seeds
    /// of five, the daemon asked for in one, and io_uring asked for but refused by the
    /// disk (the log falls back to the daemon) in one.
    pub flush: FlushPath,
    /// The simulated disk refuses a ring (see `flush`).
    pub ring_refused: bool,
    /// The page cleaner's period.
    pub cleaner_interval: Duration,
    /// Log-based propagation's segment, in pages.
    pub propagation_segment_pages: usize,
    /// Log-based propagation's sorted-run trigger ([`sluice::Options::run_bytes`]).
    pub run_bytes: u64,
    /// Log-based propagation keeps its runs.
    pub keep_runs: bool,
    /// Client threads.
    pub threads: usize,
    /// Transactions per client per session.
    pub txns: usize,
    /// Keys each client owns in each owned table.
    pub owned_keys: u32,
    /// Short values run up to half of `max_entry` (many pages), not 60 bytes.
    pub wide_values: bool,
    /// Accounts per account table.
    pub accounts: u32,
    /// Where the database lives.
    pub layout: Layout,
    /// The sessions, in order (2 or 3).
    pub sessions: Vec<SessionPlan>,
    /// The share of writing transactions that commit with
    /// [`sluice::Durability::Async`] (per transaction; 0 for a partitioned database, whose
    /// transactions have no such choice): a crash may take those away, never a durable
    /// one acknowledged.
    pub async_share: f64,
    /// The share of writing transactions that also create, drop or rename the thread's
    /// scratch tables (`super::scratch`; 0 for a partitioned database, which has no
    /// transactional create, drop or rename).
    pub scratch_share: f64,
    /// Whether a compactor ([`sluice::Database::compact`]) runs beside the clients
    /// through every session, again and again until they stop: cutting emptied trees
    /// back, reclaiming what nothing reaches and truncating the data file while
    /// transactions write, drop tables and checkpoint, and while the halt strikes.
    pub compact: bool,
    /// Whether every open archives the log continuously ([`sluice::Options::log_archive`]
    /// in `/logarchive`): checkpoints then free only archived segments, and after every
    /// recovery the archive must be whole and reach the log (`super::archive`).
    pub archive: bool,
    /// Whether the database the last recovery opened is backed up, and the backup
    /// restored after the final close (`super::backup`; ordinary databases only).
    pub backup: bool,
    /// How that restore replays the log: the single-pass restore from sorted runs, or
    /// in log order ([`sluice::Replay`]).
    pub replay: sluice::Replay,
    /// Whether that backup is an incremental one on top of a full backup taken just
    /// before it, restored as their chain (`super::backup`).
    pub incremental: bool,
}

/// The balance each account is loaded with.
pub(crate) const INITIAL_BALANCE: i64 = 100;

impl Config {
    /// The configuration of `seed`.
    pub fn draw(seed: u64) -> Config {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5357_4152_4d00_0000);
        let rng = &mut rng;
        let protocol = CommitProtocol::ALL[rng.gen_range(0..CommitProtocol::ALL.len())];
        let partitioned = rng.gen_bool(0.4);
        let driver = if !partitioned && rng.gen_bool(0.4) {
            // Fewer agents than clients under the pipelined protocols: detaching is what
            // lets two agents serve four clients.
            Driver::Agents(if protocol.pipelined() {
                rng.gen_range(1..=2)
            } else {
                MAX_THREADS
            })
        } else {
            Driver::Direct
        };
        let sessions = rng.gen_range(2..=3);
        let mut strategies = vec![draw_strategy(rng)];
        while strategies.len() < sessions + 1 {
            let s = draw_strategy(rng);
            if kind(&s) != kind(strategies.last().expect("one drawn")) {
                strategies.push(s);
            }
        }
        let page_size = [1024, 2048, 4096, 8192][rng.gen_range(0..4)];
        let pool_pages = match rng.gen_range(0..10) {
            0..=3 => 16,
            4..=7 => rng.gen_range(17..=48),
            _ => rng.gen_range(49..=256),
        };
        let large = match rng.gen_range(0..3) {
            0 => LargeValues {
                share: 0.0,
                max_entries: 0,
            },
            1 => LargeValues {
                share: 0.1,
                max_entries: rng.gen_range(2..=4),
            },
            _ => LargeValues {
                share: 0.3,
                max_entries: rng.gen_range(2..=24),
            },
        };
        let checkpoint_log_bytes = match rng.gen_range(0..4) {
            0 => rng.gen_range(4..=16) << 10,
            1 => rng.gen_range(16..=64) << 10,
            2 => 1 << 20,
            _ => 0,
        };
        let checkpoint_interval = Duration::from_millis(match rng.gen_range(0..3) {
            0 => rng.gen_range(10..=30),
            1 => rng.gen_range(30..=200),
            _ => 1000,
        });
        // Small segments roll over and truncate within a session's work (the largest
        // record, a split's four page images, must fit one).
        let segment_bytes = ([8u64 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10]
            [rng.gen_range(0..5)])
        .max(8 * page_size as u64);
        let buffer_bytes = ([64usize << 10, 256 << 10][rng.gen_range(0..2)])
            .max(32 * page_size)
            .next_power_of_two();
        let variant = InsertVariant::ALL[rng.gen_range(0..InsertVariant::ALL.len())];
        let slots = rng.gen_range(1..=8);
        let group_commit = GroupCommit {
            max_waiters: [1, 2, 4][rng.gen_range(0..3)],
            max_bytes: [4 << 10, 1 << 20][rng.gen_range(0..2)],
            // Sometimes a long delay: under `async`, whose commits nobody waits for, the
            // log then holds commits not yet durable for milliseconds (at a close, say).
            max_delay: Duration::from_micros(match rng.gen_range(0..5) {
                0 => 0,
                1 => 200,
                2..=3 => 1000,
                _ => 5000,
            }),
            adaptive: rng.gen_bool(0.5),
        };
        let preallocate = if seed % 4 == 3 {
            Preallocate::Zeros
        } else {
            Preallocate::Allocate
        };
        let agent_clocks = seed % 3 == 1;
        let (flush, ring_refused) = match seed % 5 {
            2 => (FlushPath::Daemon, false),
            4 => (FlushPath::IoUring, true),
            _ => (FlushPath::IoUring, false),
        };
        let cleaner_interval = Duration::from_millis([0, 5, 20][rng.gen_range(0..3)]);
        let propagation_segment_pages = [1, 4, 16][rng.gen_range(0..3)];
        let run_bytes = [4u64 << 10, 64 << 10][rng.gen_range(0..2)];
        let keep_runs = rng.gen_bool(0.3);
        let threads = rng.gen_range(1..=MAX_THREADS);
        // Short sessions, or long ones (a small pool then cycles through many pages,
        // checkpoints and propagation passes come during the work).
        let txns = if rng.gen_bool(0.7) {
            rng.gen_range(6..=16)
        } else {
            rng.gen_range(30..=60)
        };
        // Few keys (every transaction meets the others' pages) or many (more pages than
        // a small pool holds: eviction, propagation and redo of evicted pages).
        let owned_keys = if rng.gen_bool(0.5) {
            rng.gen_range(4..=24)
        } else {
            rng.gen_range(25..=200)
        };
        let wide_values = rng.gen_bool(0.5);
        let accounts = rng.gen_range(2..=8);
        let layout = if partitioned {
            let k = rng.gen_range(1..=3);
            let assigned = (0..TABLES.len())
                .map(|t| {
                    if rng.gen_bool(0.2) {
                        None
                    } else if MARK.contains(&t) && rng.gen_bool(0.7) {
                        // Marker tables in different partitions: the all-or-nothing
                        // rule then spans logs.
                        Some((t - MARK[0]) % k)
                    } else {
                        Some(rng.gen_range(0..k))
                    }
                })
                .collect();
            let unassigned = if rng.gen_bool(0.5) {
                Unassigned::Hash
            } else {
                Unassigned::Partition(rng.gen_range(0..k))
            };
            let log_dirs = (0..k)
                .map(|i| rng.gen_bool(0.3).then(|| format!("/logs/part-{i}")))
                .collect();
            Layout::Partitioned(Partitioning {
                log_managers: k,
                assigned,
                unassigned,
                log_dirs,
            })
        } else {
            Layout::Plain {
                log_dir: rng.gen_bool(0.3).then(|| "/logs/db".to_string()),
            }
        };
        let sessions = (0..sessions)
            .map(|_| {
                let late = rng.gen_bool(0.3);
                let halt = if late {
                    [Halt::PowerLoss, Halt::KillThenPowerLoss][rng.gen_range(0..2)]
                } else {
                    Halt::ALL[rng.gen_range(0..Halt::ALL.len())]
                };
                let read_only = rng.gen_bool(0.35).then(|| match rng.gen_range(0..4) {
                    0 => pool_pages,
                    _ => 1024,
                });
                SessionPlan {
                    halt,
                    late,
                    clean_close: rng.gen_bool(0.4),
                    read_only,
                    power_loss_after_read_only: rng.gen_bool(0.5),
                }
            })
            .collect();
        // Drawn last, so that every other draw of a seed is what it was before.
        let async_share = match (partitioned, rng.gen_range(0..3)) {
            (true, _) | (false, 0) => 0.0,
            (false, 1) => 0.3,
            (false, _) => 0.8,
        };
        // After the async share, for the same reason.
        let scratch_share = match (partitioned, rng.gen_range(0..3)) {
            (true, _) | (false, 0) => 0.0,
            (false, 1) => 0.3,
            (false, _) => 0.7,
        };
        // After the scratch share, for the same reason.
        let compact = rng.gen_bool(0.35);
        // After compaction, for the same reason.
        let archive = rng.gen_bool(0.3);
        // Last, for the same reason (and drawn only where a backup can be taken).
        let backup = !partitioned && rng.gen_bool(0.3);
        let replay = if backup && rng.gen_bool(0.5) {
            sluice::Replay::LogOrder
        } else {
            sluice::Replay::SortedRuns
        };
        let incremental = backup && rng.gen_bool(0.5);
        Config {
            seed,
            protocol,
            driver,
            strategies,
            page_size,
            pool_pages,
            large,
            checkpoint_log_bytes,
            checkpoint_interval,
            segment_bytes,
            buffer_bytes,
            variant,
            slots,
            group_commit,
            preallocate,
            agent_clocks,
            flush,
            ring_refused,
            cleaner_interval,
            propagation_segment_pages,
            run_bytes,
            keep_runs,
            threads,
            txns,
            owned_keys,
            wide_values,
            accounts,
            layout,
            sessions,
            async_share,
            scratch_share,
            compact,
            archive,
            backup,
            replay,
            incremental,
        }
    }

    /// The options of the open that starts session `s` (`s == sessions.len()`: the
    /// final recovery).
    pub fn options(&self, s: usize) -> Options {
        let mut o = Options::small();
        o.page_size = self.page_size;
        o.pool_pages = self.pool_pages;
        o.commit = self.protocol;
        o.propagation = self.strategies[s];
        o.checkpoint_log_bytes = self.checkpoint_log_bytes;
        o.checkpoint_interval = self.checkpoint_interval;
        o.log.segment_bytes = self.segment_bytes;
        o.log.buffer_bytes = self.buffer_bytes;
        o.log.variant = self.variant;
        o.log.slots = self.slots;
        o.log.group_commit = self.group_commit;
        o.log.preallocate = self.preallocate;
        o.log.flush = self.flush;
        o.cleaner_interval = self.cleaner_interval;
        o.propagation_segment_bytes = self.propagation_segment_pages * self.page_size;
        o.run_bytes = self.run_bytes;
        o.keep_runs = self.keep_runs;
        // Clients lock in one global order, so waits are short; a timeout is only the
        // backstop for a deadlock the detector missed.
        o.lock_timeout = Duration::from_millis(500);
        o.log_archive = self.archive.then(|| PathBuf::from(LOG_ARCHIVE));
        o
    }

    /// True for an ordinary database driven by agents.
    pub fn agents(&self) -> Option<usize> {
        match self.driver {
            Driver::Agents(n) => Some(n),
            Driver::Direct => None,
        }
    }

    /// The data files (a failed fsync aims at one of them a third of the time).
    pub(crate) fn data_files(&self) -> Vec<String> {
        match &self.layout {
            Layout::Plain { .. } => vec![format!("{}/data", crate::crash::DIR)],
            Layout::Partitioned(p) => (0..p.log_managers)
                .map(|i| format!("{}/part-{i}/data", crate::crash::DIR))
                .collect(),
        }
    }

    /// The configuration in one line, for a failure.
    pub fn short(&self) -> String {
        let size = |b: u64| {
            if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
                format!("{}M", b >> 20)
            } else {
                format!("{}K", b >> 10)
            }
        };
        let strategies: Vec<String> = self.strategies.iter().map(Strategy::name).collect();
        let driver = match self.driver {
            Driver::Direct => "direct".to_string(),
            Driver::Agents(n) => format!("agents:{n}"),
        };
        let large = if self.large.share == 0.0 {
            "no".to_string()
        } else {
            format!("{}%<={}e", self.large.share * 100.0, self.large.max_entries)
        };
        let layout = match &self.layout {
            Layout::Plain { log_dir } => {
                format!("plain{}", if log_dir.is_some() { "+logdir" } else { "" })
            }
            Layout::Partitioned(p) => {
                let tables: Vec<String> = TABLES
                    .iter()
                    .zip(&p.assigned)
                    .map(|(n, a)| match a {
                        Some(i) => format!("{n}@{i}"),
                        None => format!("{n}@-"),
                    })
                    .collect();
                let unassigned = match p.unassigned {
                    Unassigned::Hash => "hash".to_string(),
                    Unassigned::Partition(i) => i.to_string(),
                };
                let dirs: Vec<usize> = (0..p.log_managers)
                    .filter(|&i| p.log_dirs[i].is_some())
                    .collect();
                format!(
                    "part:{}[{} unassigned->{unassigned} logdirs{dirs:?}]",
                    p.log_managers,
                    tables.join(",")
                )
            }
        };
        let sessions: Vec<String> = self
            .sessions
            .iter()
            .map(|p| {
                let mut s = format!("{}{}", if p.late { "late-" } else { "" }, p.halt.name());
                if p.clean_close {
                    s.push_str("|close");
                }
                if let Some(pool) = p.read_only {
                    s.push_str(&format!("+ro:{pool}"));
                    if p.power_loss_after_read_only {
                        s.push_str("+power");
                    }
                }
                s
            })
            .collect();
        let gc = &self.group_commit;
        format!(
            "{} {driver} strategies={} page={}K pool={} large={large} ckpt={}/{}ms seg={} buf={} {}:{} gc={}/{}/{}us{}{}{} cleaner={}ms propseg={}p run={}{} threads={}x{} keys={}{} accts={} {layout} sessions=[{}] async={}% scratch={}%{}{}{}{}",
            self.protocol,
            strategies.join(">"),
            self.page_size >> 10,
            self.pool_pages,
            size(self.checkpoint_log_bytes),
            self.checkpoint_interval.as_millis(),
            size(self.segment_bytes),
            size(self.buffer_bytes as u64),
            self.variant,
            self.slots,
            gc.max_waiters,
            size(gc.max_bytes),
            gc.max_delay.as_micros(),
            if gc.adaptive { "/adaptive" } else { "" },
            match self.preallocate {
                Preallocate::Allocate => "",
                Preallocate::Zeros => " zeros",
            },
            match (self.flush, self.ring_refused) {
                (FlushPath::IoUring, false) => "",
                (FlushPath::IoUring, true) => " flush=refused",
                (FlushPath::Daemon, _) => " flush=daemon",
            },
            self.cleaner_interval.as_millis(),
            self.propagation_segment_pages,
            size(self.run_bytes),
            if self.keep_runs { "/keep" } else { "" },
            self.threads,
            self.txns,
            self.owned_keys,
            if self.wide_values { "/wide" } else { "" },
            self.accounts,
            sessions.join(","),
            self.async_share * 100.0,
            self.scratch_share * 100.0,
            if self.compact { " compact" } else { "" },
            if self.archive { " archive" } else { "" },
            match (self.backup, self.replay) {
                (false, _) => "",
                (true, sluice::Replay::SortedRuns) => " backup/sorted",
                (true, sluice::Replay::LogOrder) => " backup/log-order",
            },
            if self.incremental { "/incremental" } else { "" }
        )
    }
}

/// A propagation strategy: each of the eight kinds equally often, with a page cleaner's
/// heap (0: its default) or a cluster size drawn too.
fn draw_strategy(rng: &mut StdRng) -> Strategy {
    let heap = |rng: &mut StdRng| {
        if rng.gen_bool(0.5) {
            0
        } else {
            rng.gen_range(1..=64)
        }
    };
    let page = |policy, heap| Strategy::Page(PageCleaner { policy, heap });
    match rng.gen_range(0..8) {
        0 => Strategy::CheckpointSweep,
        1 => Strategy::Log,
        2 => page(Policy::Oldest, heap(rng)),
        3 => page(Policy::Coldest, heap(rng)),
        4 => page(Policy::Hottest, heap(rng)),
        5 => page(Policy::None, 0),
        6 => page(
            Policy::Clustered {
                min_pages: rng.gen_range(2..=8),
            },
            0,
        ),
        _ => page(Policy::Mixed, 0),
    }
}

/// The strategy's kind, without its parameters (what the coverage counts).
pub fn kind(s: &Strategy) -> &'static str {
    match s {
        Strategy::CheckpointSweep => "checkpoint-sweep",
        Strategy::Log => "log",
        Strategy::Page(PageCleaner { policy, .. }) => match policy {
            Policy::Oldest => "page-oldest",
            Policy::Coldest => "page-coldest",
            Policy::Hottest => "page-hottest",
            Policy::None => "page-none",
            Policy::Clustered { .. } => "page-clustered",
            Policy::Mixed => "page-mixed",
        },
    }
}

/// Every strategy kind [`kind`] names (the coverage must reach each).
pub const STRATEGY_KINDS: [&str; 8] = [
    "checkpoint-sweep",
    "log",
    "page-oldest",
    "page-coldest",
    "page-hottest",
    "page-none",
    "page-clustered",
    "page-mixed",
];
