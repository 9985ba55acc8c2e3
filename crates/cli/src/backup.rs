//! `sluice backup DIR DEST`, `sluice backup list`, `sluice backup verify` and
//! `sluice restore`: the operator's side of `Database::backup_to`, `Database::restore`
//! and `Database::backup_reach` (docs/backup.md).
//!
//! Exit codes as the other operator tools': 0 when it worked, 2 for bad arguments
//! (a path that is not what it must be, a target a restore cannot reach, a malformed
//! time), 1 when the work fails (damage, I/O, a database locked by another process).

use crate::inspect::{check_dir, open_failure};
use crate::progress;
use crate::Failure;
use clap::{ArgGroup, Args, Subcommand};
use serde_json::json;
use sluice::{
    BackupLabel, BackupReach, CommitTime, Database, Error, Lsn, Replay, Restore, RestoreTarget,
};
use sluice_storage::{OsStorage, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `sluice backup`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BackupArgs {
    #[command(subcommand)]
    pub which: Option<BackupCommand>,
    /// The database directory. It is opened here (read-write: a crashed database is
    /// recovered first), so it must not be open in another process; an application
    /// backs itself up while it runs with `Database::backup_to`.
    #[arg(required = true)]
    pub dir: Option<PathBuf>,
    /// The backup directory to make: must not exist yet, or be empty.
    #[arg(required = true)]
    pub dest: Option<PathBuf>,
    /// Open the database read-only and back it up as it is on disk (no recovery, no
    /// checkpoint), e.g. one on read-only media.
    #[arg(long)]
    pub read_only: bool,
    /// Take an incremental backup against the backup PARENT (full or incremental, of
    /// this database): only the pages changed since it are copied. It is restored with
    /// its chain (`sluice restore --from FULL --from INC1 … --from DEST`).
    #[arg(long, value_name = "PARENT")]
    pub incremental: Option<PathBuf>,
    /// Print the label as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `sluice backup list` and `sluice backup verify`.
#[derive(Subcommand, Debug)]
pub enum BackupCommand {
    /// Which backups there are and what a restore can reach from each: from its end
    /// (LSN and time) to the end of the archive's unbroken chain of segments after it
    /// (reading every record on the way), and the first missing segment if any.
    List(ReachArgs),
    /// `list`, and then a trial restore of each backup to the end into a temporary
    /// directory, with every page and tree of the result checked; exit 1 naming any
    /// damage.
    Verify(ReachArgs),
}

/// The arguments of `list` and `verify`.
#[derive(Args, Debug)]
pub struct ReachArgs {
    /// Backup directories, or directories holding backups (each subdirectory with a
    /// backup label is one).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The log archive that rolls the backups forward (`Options::log_archive`).
    #[arg(long)]
    pub archive: Option<PathBuf>,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `sluice restore --replay`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayArg {
    /// The single-pass restore from sorted runs.
    Sorted,
    /// Replay in log order.
    LogOrder,
}

/// `sluice restore`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("target").required(true).args(["to_lsn", "to_time", "to_end"])))]
pub struct RestoreArgs {
    /// The backup to restore (`sluice backup`). Repeat it for a chain of incremental
    /// backups, oldest first: the full backup, then each incremental one in the order
    /// they were taken (`sluice backup --incremental`); the log is the last one's.
    #[arg(long = "from", value_name = "BACKUP", required = true)]
    pub from: Vec<PathBuf>,
    /// The log archive to roll the backup forward from: a directory, or the URL of its
    /// mirror (`file:///dir`, `s3://bucket/prefix`, …), pulled into a temporary
    /// directory first (`sluice archive pull`).
    #[arg(long, value_name = "DIR_OR_URL")]
    pub archive: Option<String>,
    /// Keep every log record at or below this LSN: a transaction is restored committed
    /// exactly when its commit record is (LSNs as `sluice log dump` prints them).
    #[arg(long, value_name = "LSN")]
    pub to_lsn: Option<u64>,
    /// Keep every commit at or before this time, RFC 3339 (`2026-11-29T10:42:00Z`,
    /// fractions of a second and offsets such as `+01:00` allowed).
    #[arg(long, value_name = "TIME")]
    pub to_time: Option<String>,
    /// As far as the backup and the archive reach.
    #[arg(long)]
    pub to_end: bool,
    /// How the log is replayed onto the backup's pages: `sorted` sorts it into runs by
    /// page and applies them in page order, each page read and written once (the
    /// single-pass restore); `log-order` replays it in time order through the buffer
    /// pool, as restart recovery does. The restored database is the same.
    #[arg(long, value_enum, default_value = "sorted")]
    pub replay: ReplayArg,
    /// The new database's directory: must not exist yet, or be empty.
    pub dest: PathBuf,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

fn storage() -> Arc<dyn Storage> {
    Arc::new(OsStorage::new())
}

/// An engine error: one about the arguments (a path that is not a backup, a target out
/// of reach) is a usage error, anything else a failure of the work.
fn failure(what: &str, e: Error) -> Failure {
    match e {
        Error::InvalidArgument(m) | Error::NotFound(m) => Failure::Usage(format!("{what}: {m}")),
        e => Failure::Runtime(format!("{what}: {e}")),
    }
}

fn label_json(l: &BackupLabel) -> serde_json::Value {
    json!({
        "database_id": format!("{:016x}", l.database_id),
        "page_size": l.page_size,
        "checkpoint_lsn": l.checkpoint.0,
        "log_start_lsn": l.log_start.0,
        "end_lsn": l.end_lsn.0,
        "data_bytes": l.data_bytes,
        "started": CommitTime(l.started_us).to_string(),
        "ended": CommitTime(l.ended_us).to_string(),
        "kind": l.kind(),
        "pages_copied": l.pages_copied,
        "parent": l.parent.map(|p| json!({
            "end_lsn": p.end_lsn.0,
            "started": CommitTime(p.started_us).to_string(),
            "since_lsn": p.since.0,
            "label_crc32c": format!("{:08x}", p.label_crc),
        })),
    })
}

/// `sluice backup …`.
pub fn run(a: BackupArgs) -> Result<(), Failure> {
    match a.which {
        Some(BackupCommand::List(r)) => reach(r, false),
        Some(BackupCommand::Verify(r)) => reach(r, true),
        None => {
            let (dir, dest) = (a.dir.expect("required"), a.dest.expect("required"));
            take(&dir, &dest, a.incremental.as_deref(), a.read_only, a.json)
        }
    }
}

/// DEST of a backup or restore must be new or empty: said before anything opens.
fn check_new_dir(dest: &Path, what: &str) -> Result<(), Failure> {
    if dest.exists() {
        let not_empty = !dest.is_dir()
            || std::fs::read_dir(dest)
                .map(|mut d| d.next().is_some())
                .unwrap_or(true);
        if not_empty {
            return Err(Failure::Usage(format!(
                "{what} {} exists and is not an empty directory: give a new or empty one",
                dest.display()
            )));
        }
    }
    Ok(())
}

fn take(
    dir: &Path,
    dest: &Path,
    parent: Option<&Path>,
    read_only: bool,
    json: bool,
) -> Result<(), Failure> {
    check_dir(dir)?;
    check_new_dir(dest, "backup directory")?;
    if let Some(p) = parent {
        if !p.is_dir() {
            return Err(Failure::Usage(format!(
                "--incremental {}: not a directory",
                p.display()
            )));
        }
    }
    let db = if read_only {
        Database::open_read_only(dir)
    } else {
        Database::open(dir)
    }
    .map_err(|e| open_failure(dir, e))?;
    let what = format!("backup of {} to {}", dir.display(), dest.display());
    let label = progress::fraction_once_started("backup", json, |moved| {
        let mut tell =
            |p: sluice::BackupProgress| moved(p.copied_bytes as f64 / p.total_bytes.max(1) as f64);
        match parent {
            None => db.backup_to_with(dest, &mut tell),
            Some(parent) => db.backup_incremental_to_with(dest, parent, &mut tell),
        }
    })
    .map_err(|e| failure(&what, e))?;
    db.close()
        .map_err(|e| Failure::Runtime(format!("{what}: closing: {e}")))?;
    if json {
        println!("{}", label_json(&label));
    } else {
        println!(
            "backed up {} to {}: end LSN {} ({}), {} bytes of data, log from LSN {}{}",
            dir.display(),
            dest.display(),
            label.end_lsn,
            CommitTime(label.ended_us),
            label.data_bytes,
            label.log_start,
            label.parent.map_or(String::new(), |p| format!(
                "; incremental: {} of {} pages copied, changed since the parent that ended at LSN {}",
                label.pages_copied,
                label.data_bytes / u64::from(label.page_size.max(1)),
                p.end_lsn
            ))
        );
    }
    Ok(())
}

/// The backups named by `paths`: each a backup, or a directory whose subdirectories
/// with a label are.
fn backups(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            return Err(Failure::Usage(format!(
                "{} is not a directory",
                p.display()
            )));
        }
        if p.join("BACKUP").exists() || p.join("BACKUP.partial").exists() {
            out.push(p.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| Failure::Runtime(format!("{}: {e}", p.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|d| d.join("BACKUP").exists() || d.join("BACKUP.partial").exists())
            .collect();
        if found.is_empty() {
            return Err(Failure::Usage(format!(
                "{} is not a backup and holds none (no BACKUP label in it or in a directory under it)",
                p.display()
            )));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

fn reach_json(b: &Path, r: &BackupReach) -> serde_json::Value {
    json!({
        "backup": b.display().to_string(),
        "label": label_json(&r.label),
        "restorable_from_lsn": r.label.end_lsn.0,
        "restorable_to_lsn": r.end_lsn.0,
        "last_commit_lsn": r.last_commit.map(|c| c.0 .0),
        "last_commit_time": r.last_commit.map(|c| c.1.to_string()),
        "archived_segments": r.archived_segments,
        "gap": r.gap.as_ref().map(|g| json!({ "segment": g.0, "lsn": g.1 .0 })),
    })
}

fn reach(a: ReachArgs, verify: bool) -> Result<(), Failure> {
    if let Some(archive) = &a.archive {
        if !archive.is_dir() {
            return Err(Failure::Usage(format!(
                "--archive {} is not a directory",
                archive.display()
            )));
        }
    }
    let list = backups(&a.paths)?;
    let mut rows = Vec::new();
    let mut damaged = Vec::new();
    for b in &list {
        match Database::backup_reach(storage(), b, a.archive.as_deref()) {
            Ok(r) => rows.push((b.clone(), r)),
            // Listed (an interrupted backup among complete ones, a damaged one), and
            // the command exits 1 naming it.
            Err(e) => damaged.push(format!("{}: {e}", b.display())),
        }
    }
    if verify {
        for (b, r) in &rows {
            let tried = ancestors(&rows, &r.label).and_then(|chain| {
                trial_restore(b, chain, a.archive.as_deref(), a.json)
                    .map_err(|e| format!("trial restore: {e}"))
            });
            if let Err(e) = tried {
                damaged.push(format!("{}: {e}", b.display()));
            }
        }
    }
    if a.json {
        let j = json!({
            "backups": rows.iter().map(|(b, r)| reach_json(b, r)).collect::<Vec<_>>(),
            "problems": damaged,
        });
        println!("{j}");
    } else {
        println!(
            "{:<32} {:<24} {:>12} {:>28} {:>12} {:>28} {:>9}  gap",
            "backup", "kind", "from LSN", "from time", "to LSN", "last commit", "archived"
        );
        for (b, r) in &rows {
            println!(
                "{:<32} {:<24} {:>12} {:>28} {:>12} {:>28} {:>9}  {}",
                b.display(),
                r.label.parent.map_or("full".to_string(), |p| format!(
                    "incremental of LSN {}",
                    p.end_lsn
                )),
                r.label.end_lsn,
                CommitTime(r.label.ended_us).to_string(),
                r.end_lsn,
                r.last_commit.map_or("-".to_string(), |c| c.1.to_string()),
                r.archived_segments,
                r.gap
                    .as_ref()
                    .map_or("-".to_string(), |g| format!("{} missing", g.0))
            );
        }
        for d in &damaged {
            println!("problem: {d}");
        }
        if verify && damaged.is_empty() {
            println!(
                "verified {} backup(s): each restores to its end and checks clean",
                rows.len()
            );
        }
    }
    if damaged.is_empty() {
        Ok(())
    } else {
        Err(Failure::Runtime(format!(
            "{} of {} backup(s) cannot be restored as listed: {}",
            damaged.len(),
            list.len(),
            damaged.join("; ")
        )))
    }
}

/// The chain an incremental backup with `label` is restored with, found among the listed
/// backups `rows` by the parent each label names (oldest first; empty for a full backup).
fn ancestors(rows: &[(PathBuf, BackupReach)], label: &BackupLabel) -> Result<Vec<PathBuf>, String> {
    let mut chain = Vec::new();
    let mut at = *label;
    while let Some(p) = at.parent {
        let Some((dir, r)) = rows.iter().find(|(_, r)| p.is(&r.label)) else {
            return Err(format!(
                "an incremental backup, and its parent (the backup that ended at LSN {}, started {}) is not among the backups listed: list its whole chain to verify it",
                p.end_lsn,
                CommitTime(p.started_us)
            ));
        };
        if chain.len() > rows.len() {
            return Err("its chain of parents loops".into());
        }
        chain.push(dir.clone());
        at = r.label;
    }
    chain.reverse();
    Ok(chain)
}

/// Restores `backup` (with its `ancestors`, oldest first) to the end into a temporary
/// directory and checks the result.
fn trial_restore(
    backup: &Path,
    ancestors: Vec<PathBuf>,
    archive: Option<&Path>,
    quiet: bool,
) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    let dest = tmp.path().join("restored");
    let spec = Restore {
        backup: backup.to_path_buf(),
        ancestors,
        archive: archive.map(Path::to_path_buf),
        target: RestoreTarget::End,
        dest: dest.clone(),
        replay: Replay::default(),
    };
    progress::steps_once_started("trial restore", quiet, |moved| {
        Database::restore(storage(), &spec, &mut |p| {
            moved(p.step.name(), p.fraction())
        })
    })
    .map_err(|e| e.to_string())?;
    let db = Database::open_read_only(&dest).map_err(|e| e.to_string())?;
    db.verify().map_err(|e| e.to_string())?;
    Ok(())
}

/// `sluice restore`.
pub fn restore(a: RestoreArgs) -> Result<(), Failure> {
    let target = match (a.to_lsn, &a.to_time, a.to_end) {
        (Some(l), None, false) => RestoreTarget::Lsn(Lsn(l)),
        (None, Some(t), false) => RestoreTarget::Time(
            t.parse::<CommitTime>()
                .map_err(|e| Failure::Usage(format!("--to-time {t}: {e}")))?,
        ),
        (None, None, true) => RestoreTarget::End,
        _ => unreachable!("clap's group asks for exactly one target"),
    };
    for from in &a.from {
        if !from.is_dir() {
            return Err(Failure::Usage(format!(
                "--from {}: not a directory",
                from.display()
            )));
        }
    }
    let (newest, ancestors) = a.from.split_last().expect("clap requires one --from");
    check_new_dir(&a.dest, "restore directory")?;
    // A URL is pulled into a temporary directory, removed when the restore is done.
    let mut pulled = None;
    let archive = match &a.archive {
        Some(url) if url.contains("://") => {
            let tmp = tempfile::tempdir()
                .map_err(|e| Failure::Runtime(format!("a temporary directory: {e}")))?;
            pull_into(url, tmp.path(), a.json)?;
            let dir = tmp.path().to_path_buf();
            pulled = Some(tmp);
            Some(dir)
        }
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if !dir.is_dir() {
                return Err(Failure::Usage(format!(
                    "--archive {} is not a directory",
                    dir.display()
                )));
            }
            Some(dir)
        }
        None => None,
    };
    let spec = Restore {
        backup: newest.clone(),
        ancestors: ancestors.to_vec(),
        archive,
        target,
        dest: a.dest.clone(),
        replay: match a.replay {
            ReplayArg::Sorted => Replay::SortedRuns,
            ReplayArg::LogOrder => Replay::LogOrder,
        },
    };
    let what = format!("restore of {} into {}", newest.display(), a.dest.display());
    let r = progress::steps_once_started("restore", a.json, |moved| {
        Database::restore(storage(), &spec, &mut |p| {
            moved(p.step.name(), p.fraction())
        })
    })
    .map_err(|e| failure(&what, e))?;
    drop(pulled);
    // Changes the restore replayed: by the sorted runs, or by recovery's redo.
    let redone = r.recovery.redone + r.single_pass.map_or(0, |p| p.applied);
    if a.json {
        println!(
            "{}",
            json!({
                "dest": a.dest.display().to_string(),
                "end_lsn": r.end_lsn.0,
                "last_commit_lsn": r.last_commit.map(|c| c.0 .0),
                "last_commit_time": r.last_commit.map(|c| c.1.to_string()),
                "archived_segments": r.archived_segments,
                "replay": match a.replay {
                    ReplayArg::Sorted => "sorted",
                    ReplayArg::LogOrder => "log-order",
                },
                "redone": redone,
                "sorted_run_bytes": r.single_pass.map(|p| p.run_bytes),
                "sort_ms": r.single_pass.map(|p| p.sort_us / 1000),
                "apply_ms": r.single_pass.map(|p| p.apply_us / 1000),
                "rolled_back": r.recovery.losers,
                "elapsed_ms": r.elapsed_us / 1000,
            })
        );
    } else {
        println!(
            "restored {} into {}: log cut at LSN {}{}; {} archived segment(s) replayed, {} change(s) redone{}, {} transaction(s) in flight rolled back, in {:.1} s",
            a.from
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(" + "),
            a.dest.display(),
            r.end_lsn,
            r.last_commit
                .map_or(String::new(), |c| format!(" (last commit at LSN {}, {})", c.0, c.1)),
            r.archived_segments,
            redone,
            if r.single_pass.is_some() {
                " by sorted runs"
            } else {
                " in log order"
            },
            r.recovery.losers,
            r.elapsed_us as f64 / 1e6
        );
    }
    Ok(())
}

/// `sluice archive`.
#[derive(Subcommand, Debug)]
pub enum ArchiveCommand {
    /// Download a log archive mirrored to object storage (`Builder::archive_mirror`)
    /// into a local archive directory that `sluice restore --archive` reads: every
    /// segment its MANIFEST lists, each checked against its length and CRC32C (segments
    /// the directory already holds whole are skipped), then the MANIFEST.
    Pull(PullArgs),
}

/// The arguments of `sluice archive pull`.
#[derive(Args, Debug)]
pub struct PullArgs {
    /// The mirror: `file:///dir`, or `s3://bucket/prefix`, `gs://bucket/prefix`,
    /// `az://container/prefix` in a build with the matching sluice-objstore feature.
    pub url: String,
    /// The local archive directory (created if needed; one holding another log's
    /// archive is refused).
    pub dir: PathBuf,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `sluice archive …`.
pub fn archive(which: ArchiveCommand) -> Result<(), Failure> {
    match which {
        ArchiveCommand::Pull(a) => {
            let r = pull_into(&a.url, &a.dir, a.json)?;
            if a.json {
                println!(
                    "{}",
                    json!({
                        "url": a.url,
                        "dir": a.dir.display().to_string(),
                        "listed": r.listed,
                        "downloaded": r.segments,
                        "bytes": r.bytes,
                        "skipped": r.skipped,
                    })
                );
            } else {
                println!(
                    "pulled {} into {}: {} segment(s) listed, {} downloaded ({} bytes), {} already there",
                    a.url,
                    a.dir.display(),
                    r.listed,
                    r.segments,
                    r.bytes,
                    r.skipped
                );
            }
            Ok(())
        }
    }
}

/// What a pull did.
struct Pulled {
    listed: usize,
    segments: usize,
    bytes: u64,
    skipped: usize,
}

/// Pulls the mirror at `url` into `dir`, with a progress bar (none when `quiet`).
#[cfg(feature = "object-store")]
fn pull_into(url: &str, dir: &Path, quiet: bool) -> Result<Pulled, Failure> {
    use sluice_objstore::Error as E;
    progress::fraction_once_started("pull", quiet, |moved| {
        sluice_objstore::pull(url, dir, &mut |p| {
            moved(p.bytes_done as f64 / p.bytes.max(1) as f64)
        })
    })
    .map(|r| Pulled {
        listed: r.listed,
        segments: r.segments,
        bytes: r.bytes,
        skipped: r.skipped,
    })
    .map_err(|e| match e {
        E::InvalidArgument(m) => Failure::Usage(m),
        e => Failure::Runtime(format!("pull of {url} into {}: {e}", dir.display())),
    })
}

/// Without the `object-store` feature there is no object storage to pull from.
#[cfg(not(feature = "object-store"))]
fn pull_into(url: &str, _dir: &Path, _quiet: bool) -> Result<Pulled, Failure> {
    Err(Failure::Usage(format!(
        "{url}: this sluice was built without object storage (build sluice-cli with --features object-store, and s3, gcp or azure for those clouds)"
    )))
}
