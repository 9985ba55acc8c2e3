//! `sluice`: benchmarks, crash tests, planning and operator tools (verify, log dump,
//! stats, tables, get, scan) for the sluice storage engine.
//!
//! Every command validates its flags up front; a bad argument prints one line on stderr
//! and exits with code 2. Runtime failures (an I/O error during a benchmark) exit 1.

mod backup;
mod bench_log_insert;
mod bench_partition;
mod bench_propagation;
mod bench_replicated;
mod bench_restore;
mod bench_sweep;
mod bench_txn;
mod bench_wal;
mod cluster;
mod compact;
mod compare;
mod compare_replicated;
mod crash_cluster;
mod crash_history;
mod crash_kill;
mod crash_report;
mod crash_swarm;
mod crash_test;
mod inspect;
mod peer_child;
mod plan;
mod progress;
mod report;
mod sweep;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "sluice", version, about = "sluice: a transactional storage engine whose log stays off the critical path", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a benchmark.
    Bench {
        #[command(subcommand)]
        which: Bench,
    },
    /// TPC-B or TATP on sluice and on SQLite, RocksDB and PostgreSQL at equal
    /// durability, in alternating rounds; table, JSON, CSV and a bar chart. Or
    /// replicated writes: a sluice cluster against an etcd cluster.
    Compare(compare::Args),
    /// TPC-B on a peer engine forever, printing each acknowledged commit (the peer kill
    /// test's child process).
    #[command(hide = true)]
    PeerChild(peer_child::Args),
    /// TPC-B on sluice forever, printing each acknowledged commit (the child process of
    /// `sluice crash-test kill`).
    #[command(hide = true)]
    KillChild(crash_kill::ChildArgs),
    /// Plan log partitioning for a workload profile (the Tandem paper's model): the
    /// case (none, horizontal, vertical), the number of log managers, and which
    /// generators each one serves.
    Plan(plan::Args),
    /// Every experiment of the three papers at one time budget (`--minutes`, default
    /// 20), written as one static HTML page: each paper's claim, what this machine
    /// measured with its spread, and whether it shows the effect.
    Report(report::Args),
    /// Lmax for a workload: the log rate one log manager stops raising as generators are
    /// added (an input of `sluice plan`).
    MeasureLmax(bench_partition::LmaxArgs),
    /// Crash tests: sweeps over the simulated disk, or the real binary SIGKILLed on the
    /// real disk; each checks what recovery finds.
    CrashTest {
        #[command(subcommand)]
        which: CrashTest,
    },
    /// A replicated sluice cluster (Raft, on openraft) of processes on 127.0.0.1.
    Cluster {
        #[command(subcommand)]
        which: cluster::ClusterCommand,
    },
    /// Open a database (recovering it, unless --read-only) and check every page's
    /// checksum, every B+tree and the catalog; exit 1 naming the damage if any.
    Verify(inspect::VerifyArgs),
    /// Back a database up (a copy that opens as of its end LSN and that `sluice restore`
    /// rolls forward), or list and verify backups and what a restore can reach.
    Backup(backup::BackupArgs),
    /// Make a new database from a backup, rolled forward from a log archive to an LSN,
    /// a time or the end.
    Restore(backup::RestoreArgs),
    /// Log archives mirrored to object storage: pull one into a local directory.
    Archive {
        #[command(subcommand)]
        which: backup::ArchiveCommand,
    },
    /// Give free space back: cut emptied tables back to one page, reclaim pages nothing
    /// reaches, and shorten the data file by the free pages at its end.
    Compact(compact::CompactArgs),
    /// Read a database's write-ahead log.
    Log {
        #[command(subcommand)]
        which: inspect::LogCommand,
    },
    /// Tables, entries, pages, log size and LSNs, last checkpoint (read-only).
    Stats(inspect::StatsArgs),
    /// The names of a database's tables (read-only).
    Tables(inspect::TablesArgs),
    /// Print one key's value (read-only); exit 1 if the key is absent.
    Get(inspect::GetArgs),
    /// Print a table's entries in key order, `key<TAB>value` (read-only).
    Scan(inspect::ScanArgs),
}

#[derive(Subcommand, Debug)]
enum CrashTest {
    /// Random multi-key transactions from several threads; crashes during work and
    /// during recovery; every acknowledged commit must survive, nothing else may.
    Engine(crash_test::EngineArgs),
    /// The simulated-disk sweep: `--workload kv` is `crash-test engine`'s random
    /// multi-key transactions, `--workload tpcb` TPC-B; crashes during recovery included.
    Sim(crash_test::SimArgs),
    /// The real binary running TPC-B on the real disk, SIGKILLed at random moments
    /// (some during its recovery), reopened and checked: the TPC-B identities hold and
    /// every acknowledged commit is there.
    Kill(crash_kill::KillArgs),
    /// The serializability checker: random concurrent transactions (no crash) on a
    /// configuration drawn per seed, their history checked for dependency cycles (G0,
    /// G1a-c, G2-item, phantoms) and against the commit-order model; exit 1 on any anomaly.
    History(crash_history::Args),
    /// The swarm sweep: each seed draws its configuration over every option that
    /// changes a code path (protocol, agents, propagation strategy switched between
    /// sessions, pool, pages, large values, checkpoints, log, partitions, halts,
    /// read-only opens), checked as it runs and after every recovery.
    Swarm(crash_swarm::SwarmArgs),
    /// A three-node cluster of processes on 127.0.0.1 with its leader SIGKILLed mid-run:
    /// no acknowledged write lost, no node diverged, failover time reported.
    Cluster(crash_cluster::Args),
}

#[derive(Subcommand, Debug)]
enum Bench {
    /// Threads append a record and wait for it to be durable, in a loop (group commit).
    Wal(bench_wal::Args),
    /// Threads insert records into the log buffer as fast as they can (no disk); compares
    /// with each thread copying the same records privately (Aether §6.3).
    LogInsert(bench_log_insert::Args),
    /// The log-insert benchmark swept for one of Aether's figures; writes CSV, JSON, PNG
    /// and SVG.
    LogInsertSweep(bench_log_insert::SweepArgs),
    /// TPC-B under one or more commit protocols on one loaded database.
    Tpcb(bench_txn::TpcbArgs),
    /// TATP under one or more commit protocols on one loaded database.
    Tatp(bench_txn::TatpArgs),
    /// Commit-protocol sweeps that draw Aether's figures (CSV, JSON, PNG, SVG).
    CommitSweep(bench_sweep::Args),
    /// TPC-B in the buffer pool with one update-propagation strategy: dirty pages, REDO
    /// length, write bandwidth and tps every second, the device's sequential bandwidth,
    /// and restart time after a crash.
    Propagation(bench_propagation::Args),
    /// The propagation experiment swept for the propagation paper's Fig. 3 (bandwidth)
    /// or Fig. 4 (backlog); writes CSV, JSON, PNG and SVG.
    PropagationSweep(bench_propagation::SweepArgs),
    /// Restore time after a stretch of TPC-B load: the log replayed in time order
    /// against the single-pass restore from sorted runs, in one run, as a ratio.
    Restore(bench_restore::Args),
    /// Log partitioning (Tandem §4–5): `--horizontal D` measures γ, the log's throughput
    /// right after a rollover while the archiver copies the old segment ÷ its steady
    /// throughput, with the segments round-robin over D emulated devices.
    Partition(bench_partition::Args),
    /// Write batches from C clients against a replicated cluster of node processes on
    /// 127.0.0.1; tps and p50/p99 at the leader; every acknowledged write checked on
    /// every node.
    Replicated(bench_replicated::Args),
}

/// A failure of a command: bad input (exit 2) or a runtime error (exit 1).
#[derive(Debug)]
pub enum Failure {
    /// The user asked for something impossible.
    Usage(String),
    /// The command failed while running.
    Runtime(String),
}

/// An output directory named by `--out`: made now, before any work, so that a path
/// that cannot be written is a usage error up front rather than a failure after the runs.
pub fn out_dir(out: &std::path::Path) -> Result<(), Failure> {
    if out.exists() && !out.is_dir() {
        return Err(Failure::Usage(format!(
            "--out {} exists and is not a directory",
            out.display()
        )));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| Failure::Usage(format!("--out {}: cannot create it: {e}", out.display())))
}

impl<E: std::error::Error> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Runtime(e.to_string())
    }
}

fn main() -> ExitCode {
    // A closed stdout (`sluice bench … | head -1`) ends the process quietly, as it ends
    // `cat` or `grep`: Rust ignores SIGPIPE, so every later `println!` would panic on the
    // broken pipe (exit 101 and a backtrace) instead.
    // SAFETY: called first thing, before any other thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                print!("{e}");
                return ExitCode::SUCCESS;
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                eprint!("{e}");
                return ExitCode::from(2);
            }
            // One line: clap's first line names the problem; its usage block follows.
            // A first line ending in ':' lists what it means on the indented lines after
            // it (the missing required flags): those join the line. So does the list of
            // possible values under an invalid one (a figure, a mode, an engine).
            let text = e.to_string();
            let mut lines = text.lines().peekable();
            let mut first = lines
                .next()
                .unwrap_or("error: invalid arguments")
                .to_string();
            if first.ends_with(':') {
                let listed: Vec<&str> = lines
                    .take_while(|l| l.starts_with(' '))
                    .map(str::trim)
                    .collect();
                first = format!("{first} {}", listed.join(", "));
            } else if let Some(values) = lines
                .peek()
                .map(|l| l.trim())
                .filter(|l| l.starts_with("[possible values:"))
            {
                first = format!("{first} {values}");
            }
            eprintln!("{first} (see 'sluice --help')");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Bench { which } => match which {
            Bench::Wal(a) => bench_wal::run(a),
            Bench::LogInsert(a) => bench_log_insert::run(a),
            Bench::LogInsertSweep(a) => bench_log_insert::sweep(a),
            Bench::Tpcb(a) => bench_txn::tpcb(a),
            Bench::Tatp(a) => bench_txn::tatp(a),
            Bench::CommitSweep(a) => bench_sweep::run(a),
            Bench::Propagation(a) => bench_propagation::run(a),
            Bench::PropagationSweep(a) => bench_propagation::sweep(a),
            Bench::Restore(a) => bench_restore::run(a),
            Bench::Partition(a) => bench_partition::run(a),
            Bench::Replicated(a) => bench_replicated::run(a),
        },
        Command::Compare(a) => compare::run(a),
        Command::PeerChild(a) => peer_child::run(a),
        Command::KillChild(a) => crash_kill::child(a),
        Command::Plan(a) => plan::run(a),
        Command::Report(a) => report::run(a),
        Command::MeasureLmax(a) => bench_partition::lmax(a),
        Command::CrashTest { which } => match which {
            CrashTest::Engine(a) => crash_test::engine(a),
            CrashTest::Sim(a) => crash_test::sim(a),
            CrashTest::Kill(a) => crash_kill::kill(a),
            CrashTest::History(a) => crash_history::run(a),
            CrashTest::Swarm(a) => crash_swarm::run(a),
            CrashTest::Cluster(a) => crash_cluster::run(a),
        },
        Command::Cluster { which } => cluster::run(which),
        Command::Verify(a) => inspect::verify(a),
        Command::Compact(a) => compact::run(a),
        Command::Backup(a) => backup::run(a),
        Command::Restore(a) => backup::restore(a),
        Command::Archive { which } => backup::archive(which),
        Command::Log { which } => inspect::log(which),
        Command::Stats(a) => inspect::stats(a),
        Command::Tables(a) => inspect::tables(a),
        Command::Get(a) => inspect::get(a),
        Command::Scan(a) => inspect::scan(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(1)
        }
    }
}
