//! Point-in-time restore: a backup (`backup.rs`), rolled forward with the segments of a
//! log archive, to the end, to an LSN, or to a time.
//!
//! 1. The log to restore from is the backup's (up to its end LSN), continued by the
//!    archive's segments from the one holding the backup's end on, in LSN order (the
//!    archived copy of that segment is whole, where the backup's ends at its end LSN; the
//!    bytes both hold must be equal, or the archive is of another log). A missing segment
//!    ends this chain: a target past it fails naming it, and so does a restore to the end
//!    while later segments exist — nothing is ever skipped.
//! 2. That log is read in place up to the target — every record below the cut checked,
//!    an archived segment all the way to its end — and the cut found: after the last
//!    record at or below a target LSN, or before the first commit record whose time is
//!    past a target time (times taken as their running maximum in LSN order, so the cut
//!    is a prefix of the log). A transaction commits in the restored database exactly
//!    when its commit record is kept. Damage is named by file and LSN.
//! 3. The data file and the segments up to the cut are copied into the new directory,
//!    and the copy cut there. The data file of a chain of incremental backups is the full
//!    backup's with each incremental backup's pages written over it in order
//!    (`incremental.rs`); the chain's links are checked first (each one taken against
//!    the one before it). The log is the newest backup's.
//! 4. The backup's control file is copied last: until then the directory is not a
//!    database (it has no `CONTROL`), and from then on it opens to exactly the target
//!    state, so a crash anywhere leaves either no database or the restored one.
//! 5. The database is opened once — restart recovery from the backup's checkpoint: redo
//!    up to the cut, undo of what was in flight there — and closed.

use super::backup::{now_us, prepare_empty_dir, LOG};
use super::handle::Database;
use super::incremental;
pub use super::restore_runs::SinglePass;
use crate::backup_label::{incomplete, BackupLabel, PARTIAL};
use crate::control::Control;
use crate::coordination::Pass;
use crate::data_file::file_error;
use crate::error::{Error, Result};
use crate::log_record::{commit_of, CommitTime, EffectiveTimes};
use crate::options::Options;
use crate::recovery::RecoveryReport;
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::segment::{
    decode_header, parse_segment_name, segment_name, segment_start, SEGMENT_HEADER_BYTES,
};
use sluice_wal::{read_segment_files, Lsn, ReadRecord, WalError, COPY_STEP_BYTES};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How far a restore rolls the backup forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreTarget {
    /// As far as the backup and the archive reach without a gap.
    End,
    /// Every record at or below this LSN: a transaction is committed exactly when its
    /// commit record is at or below it.
    Lsn(Lsn),
    /// Every commit at or before this time, and nothing from the first commit after it
    /// on. Commit times are the running maximum of the commit records' stamps in LSN
    /// order (two commits may be stamped a few µs out of their log order), so the kept
    /// commits are a prefix of the log.
    Time(CommitTime),
}

/// How a restore brings the backup's pages up to the cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Replay {
    /// The single-pass restore: the log below the cut sorted into runs by page and
    /// applied to the data file in page order, each page read and written once
    /// (`db/restore_runs.rs`); recovery then only undoes what was in flight.
    #[default]
    SortedRuns,
    /// Restart recovery's redo: the log replayed in time order through the buffer pool.
    LogOrder,
}

/// What to restore, from where, to where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    /// The backup directory ([`Database::backup_to`]); for an incremental backup
    /// ([`Database::backup_incremental_to`]), the newest of the chain.
    pub backup: PathBuf,
    /// The backups `backup` was taken against, oldest first: empty for a full backup;
    /// for an incremental one, the full backup and then each incremental backup up to
    /// its parent, in the order they were taken (each one's parent is the one before).
    pub ancestors: Vec<PathBuf>,
    /// A log archive (`Options::log_archive`) to roll forward from, if any.
    pub archive: Option<PathBuf>,
    /// How far.
    pub target: RestoreTarget,
    /// The new database's directory: must not exist yet, or be empty.
    pub dest: PathBuf,
    /// How the log is replayed onto the backup's pages (the result is the same).
    pub replay: Replay,
}

/// A step of a restore, in the order they run ([`RestoreProgress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum RestoreStep {
    /// Reading the backup's log and the archive's, checking each record, to find the cut
    /// (log bytes).
    Check,
    /// Copying the data file (a chain's backups, for an incremental one) and the log
    /// segments below the cut (bytes).
    Copy,
    /// The single-pass restore sorting the copied log into runs by page (log bytes).
    Sort,
    /// The single-pass restore applying the runs to the data file in page order (pages of
    /// the data file).
    Apply,
    /// Restart recovery's analysis pass over the restored log (log bytes).
    Analysis,
    /// Restart recovery's redo pass (log bytes); after a single-pass restore it has
    /// nothing left to do and is not reported.
    Redo,
    /// Restart recovery rolling back the transactions the cut left without an outcome
    /// (their log records).
    Undo,
    /// The restored database's close, whose checkpoint writes the pages recovery changed
    /// (not measured: reported as 0 of 0, then 1 of 1).
    Checkpoint,
}

impl RestoreStep {
    /// A short name, for a progress bar.
    pub fn name(self) -> &'static str {
        match self {
            RestoreStep::Check => "check log",
            RestoreStep::Copy => "copy",
            RestoreStep::Sort => "sort log",
            RestoreStep::Apply => "apply runs",
            RestoreStep::Analysis => "analysis",
            RestoreStep::Redo => "redo",
            RestoreStep::Undo => "undo",
            RestoreStep::Checkpoint => "checkpoint",
        }
    }
}

/// Where a restore stands, for a progress bar: the step it is in and how far that step
/// is. Steps come in [`RestoreStep`]'s order (some may be left out); each starts with a
/// report of 0 done and ends with one of `done == total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestoreProgress {
    /// The step.
    pub step: RestoreStep,
    /// Work of the step done so far (see [`RestoreStep`] for its unit).
    pub done: u64,
    /// Work of the step in all (0 when not measured).
    pub total: u64,
}

impl RestoreProgress {
    /// The step's fraction done, 0 to 1 (0 until it ends when not measured).
    pub fn fraction(&self) -> f64 {
        match self.total {
            0 => 0.0,
            t => self.done.min(t) as f64 / t as f64,
        }
    }
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreReport {
    /// The backup's label.
    pub label: BackupLabel,
    /// The restored log ends here: exactly the commits below it are in the database.
    pub end_lsn: Lsn,
    /// The last commit kept and its time, if the part of the log read holds one: a
    /// target LSN is found reading from the backup's end, a time or the end from the
    /// backup's start.
    pub last_commit: Option<(Lsn, CommitTime)>,
    /// Segments taken from the archive.
    pub archived_segments: usize,
    /// The recovery that made the restored database consistent (its redo did nothing
    /// after a single-pass restore).
    pub recovery: RecoveryReport,
    /// What the single-pass restore did ([`Replay::SortedRuns`]).
    pub single_pass: Option<SinglePass>,
    /// The buffer pool the restore's recovery ran with, in pages (the default pool,
    /// halved until the largest log record fits the log's segments).
    pub pool_pages: usize,
    /// How long the restore took, in µs.
    pub elapsed_us: u64,
    /// Of that, µs copying the backup's data file and the log segments.
    pub copy_us: u64,
    /// Of that, µs in the restored database's open (restart recovery) and close (its
    /// checkpoint writes the pages recovery changed).
    pub recovery_us: u64,
}

/// How far a backup, with an archive, can be restored ([`Database::backup_reach`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupReach {
    /// The backup's label: a restore reaches no earlier than its end.
    pub label: BackupLabel,
    /// The latest LSN a restore can reach (the end of the archived chain, or the
    /// backup's end without one).
    pub end_lsn: Lsn,
    /// The last commit there, and its time.
    pub last_commit: Option<(Lsn, CommitTime)>,
    /// Segments of the archive that continue the backup.
    pub archived_segments: usize,
    /// The first segment the archive lacks although it holds later ones (a restore
    /// cannot pass it): its file name and first LSN.
    pub gap: Option<(String, Lsn)>,
}

impl Database {
    /// Restores `spec.backup`, rolled forward from `spec.archive` to `spec.target`, into
    /// the new database `spec.dest`, all on `storage` (see the module docs of
    /// `db/restore.rs`). Fails naming what is wrong: an incomplete backup, a missing or
    /// damaged archived segment on the way to the target, a target before the backup's
    /// end or past what the backup and the archive hold.
    pub fn restore(
        storage: Arc<dyn Storage>,
        spec: &Restore,
        progress: &mut dyn FnMut(RestoreProgress),
    ) -> Result<RestoreReport> {
        let started = now_us();
        let st = &*storage;
        let (backup, dest) = (&spec.backup, &spec.dest);
        let _span =
            tracing::info_span!("restore", backup = %backup.display(), dest = %dest.display())
                .entered();
        let mut named = vec![
            ("backup directory".to_string(), st, backup.clone()),
            ("restore directory".to_string(), st, dest.clone()),
        ];
        if let Some(a) = &spec.archive {
            named.push(("log archive".to_string(), st, a.clone()));
        }
        for a in &spec.ancestors {
            named.push(("backup directory".to_string(), st, a.clone()));
        }
        super::refuse_same_dirs(&named)?;
        let source = Source::open(storage.clone(), backup, spec.archive.as_deref())?;
        let label = source.label;
        let links = incremental::chain(st, &spec.ancestors, (backup, label))?;

        // 1. and 2. The cut, and the log below it checked.
        let mut checked = 0;
        let (cut, last_commit) = source.cut(spec.target, &mut |done, total| {
            checked = total;
            progress(RestoreProgress {
                step: RestoreStep::Check,
                done,
                total,
            })
        })?;
        // (A target LSN's read stops at the target, short of the last report.)
        progress(RestoreProgress {
            step: RestoreStep::Check,
            done: checked,
            total: checked,
        });
        prepare_empty_dir(st, dest, "restore directory")?;

        // 3. The data file and the log up to the cut.
        let copying = std::time::Instant::now();
        let needed: Vec<(PathBuf, Lsn)> = source.files_below(cut);
        let data_total = links.iter().fold(links[0].label.data_bytes, |t, l| {
            t.saturating_add(
                l.label
                    .pages_copied
                    .saturating_mul(u64::from(l.label.page_size) + 16)
                    * u64::from(l.label.parent.is_some()),
            )
        });
        let total =
            data_total.saturating_add((needed.len() as u64).saturating_mul(source.segment_bytes));
        // (An incremental chain's total is its labels' estimate: the bar stops short of
        // the end rather than passing it.)
        let mut tell = |n: u64| {
            progress(RestoreProgress {
                step: RestoreStep::Copy,
                done: n.min(total),
                total,
            })
        };
        tell(0);
        let mut copied = incremental::restore_data(st, &links, dest, &mut tell)?;
        let to_log = dest.join(LOG);
        st.create_dir_all(&to_log)
            .map_err(|e| file_error("restore log directory", &to_log, e))?;
        for (path, start) in &needed {
            let base = copied;
            copied += sluice_wal::copy_file(
                st,
                path,
                (st, &to_log, &segment_name(*start)),
                (None, COPY_STEP_BYTES),
                &mut |n| tell(base + n),
            )?;
        }
        st.sync_dir(&to_log)
            .map_err(|e| file_error("restore log directory", &to_log, e))?;
        sluice_wal::cut_log_dir(st, &to_log, cut)?;
        tell(total);
        let copy_us = copying.elapsed().as_micros() as u64;
        let control = Control::read_only(st, backup)?.ok_or_else(|| {
            Error::Corruption(format!(
                "backup {} has a label but no control file",
                backup.display()
            ))
        })?;
        let options = recovery_options(label.page_size as usize, source.segment_bytes)?;

        // 3a. The single-pass restore: the log below the cut applied by sorted runs.
        let single_pass = match (spec.replay, control.checkpoint) {
            (Replay::SortedRuns, Some(checkpoint)) => Some(super::restore_runs::apply(
                &storage,
                dest,
                checkpoint,
                cut,
                label.page_size as usize,
                source.segment_bytes,
                &mut |step, done, total| {
                    let step = match step {
                        super::restore_runs::Step::Sort => RestoreStep::Sort,
                        super::restore_runs::Step::Apply => RestoreStep::Apply,
                    };
                    progress(RestoreProgress { step, done, total })
                },
            )?),
            _ => None,
        };

        // 4. The control file, last, with an id of its own: the restored database is a
        // new one, whose history forks from the source's at the cut. With the source's
        // id, an incremental backup of it against a backup of the source (of the other
        // history, at the same LSNs) would be accepted and lay one history's pages over
        // the other's (found by outside review:
        // `incremental_backup_review::an_incremental_of_a_fork_...`).
        let control = Control {
            database_id: rand::random(),
            ..control
        };
        control.write(st, dest)?;

        // 5. Recovery (only analysis and undo after a single-pass restore).
        let recovering = std::time::Instant::now();
        let pool_pages = options.pool_pages;
        // Recovery runs inside the open, on a thread of its own here, so that its
        // passes' reports reach `progress` (which need not be `Send`) on this one.
        enum Told {
            Pass(RestoreProgress),
            Opened(Result<Database>),
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let passes = tx.clone();
        let hooks = crate::coordination::Hooks {
            redone_below: single_pass.map(|_| cut),
            recovery_progress: Some(Arc::new(move |pass, done, total| {
                let step = match pass {
                    Pass::Analysis => RestoreStep::Analysis,
                    Pass::Redo => RestoreStep::Redo,
                    Pass::Undo => RestoreStep::Undo,
                };
                let told = Told::Pass(RestoreProgress { step, done, total });
                // The receiver is gone once the open returned: nothing more to tell.
                let _ = passes.send(told);
            })),
            ..Default::default()
        };
        // The open's spans stay the caller's: its subscriber and, as their parent, the
        // restore's span go with it to the thread.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let parent = tracing::Span::current();
        let db = std::thread::scope(|scope| {
            let log_dir = dest.join(LOG);
            let storage = &storage;
            let worker = scope.spawn(move || {
                let opened = tracing::dispatcher::with_default(&dispatch, || {
                    parent.in_scope(|| {
                        Database::open_hooked(
                            storage.clone(),
                            dest,
                            storage.clone(),
                            log_dir,
                            options,
                            hooks,
                        )
                    })
                });
                let _ = tx.send(Told::Opened(opened));
            });
            loop {
                match rx.recv() {
                    Ok(Told::Pass(p)) => progress(p),
                    Ok(Told::Opened(opened)) => break opened,
                    // The thread ended without a result: it panicked; so does the restore,
                    // with the same payload.
                    Err(_) => match worker.join() {
                        Err(payload) => std::panic::resume_unwind(payload),
                        Ok(()) => {
                            break Err(Error::Corruption(
                                "the restored database's recovery ended without a result".into(),
                            ))
                        }
                    },
                }
            }
        })?;
        let recovery = db.recovery_report().clone();
        let mut closing = |done| {
            progress(RestoreProgress {
                step: RestoreStep::Checkpoint,
                done,
                total: done,
            })
        };
        closing(0);
        db.close()?;
        closing(1);
        let recovery_us = recovering.elapsed().as_micros() as u64;
        let archived_segments = needed
            .iter()
            .filter(|(p, _)| !p.starts_with(backup))
            .count();
        tracing::info!(end = %cut, archived_segments, "restore complete");
        Ok(RestoreReport {
            label,
            end_lsn: cut,
            last_commit,
            archived_segments,
            recovery,
            single_pass,
            pool_pages,
            elapsed_us: now_us().saturating_sub(started),
            copy_us,
            recovery_us,
        })
    }

    /// How far the backup in `backup` can be restored with the log archive `archive`:
    /// the whole log from the backup's end to the end of the archived chain is read and
    /// checked (as a restore to the end would), without writing anything.
    pub fn backup_reach(
        storage: Arc<dyn Storage>,
        backup: &Path,
        archive: Option<&Path>,
    ) -> Result<BackupReach> {
        let source = Source::open(storage, backup, archive)?;
        let last_commit = source.last_commit(&mut |_, _| {})?;
        Ok(BackupReach {
            label: source.label,
            end_lsn: source.end(),
            last_commit,
            archived_segments: source.chain.taken.len(),
            gap: source.chain.gap.map(|g| (segment_name(g), g)),
        })
    }
}

/// The log a restore reads: the backup's, continued by the archive's chain.
struct Source {
    storage: Arc<dyn Storage>,
    backup: PathBuf,
    archive: Option<PathBuf>,
    label: BackupLabel,
    segment_bytes: u64,
    /// The backup's segment starts.
    backup_segments: Vec<Lsn>,
    chain: Chain,
}

/// The archived segments that continue a backup's log.
struct Chain {
    /// Starts of the segments taken, in order, from the one holding the backup's end.
    taken: Vec<Lsn>,
    /// The first missing segment, where the archive holds later ones.
    gap: Option<Lsn>,
}

impl Source {
    fn open(storage: Arc<dyn Storage>, backup: &Path, archive: Option<&Path>) -> Result<Source> {
        let st = &*storage;
        settled_dir(st, backup, "backup directory")?;
        if st
            .exists(&backup.join(PARTIAL))
            .map_err(|e| file_error("backup directory", backup, e))?
        {
            return Err(incomplete(backup));
        }
        let label = BackupLabel::read(st, backup)?.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} is not a backup: it has no backup label (`BACKUP`)",
                backup.display()
            ))
        })?;
        let log = backup.join(LOG);
        sluice_storage::settle_dir(st, &log, true)
            .map_err(|e| file_error("backup log directory", &log, e))?;
        let mut starts = segment_files(st, &log, "backup log directory")?;
        starts.retain(|s| s.0 < label.end_lsn.0);
        let Some(&first) = starts.first() else {
            return Err(Error::Corruption(format!(
                "backup {}: its log directory holds no segment below its end LSN {}",
                backup.display(),
                label.end_lsn
            )));
        };
        let segment_bytes = header(st, &log.join(segment_name(first)), first, None)?;
        // The files must be the segments from the log start's to the end's, one each and
        // in order: compared as they are listed, never by listing the range (a damaged
        // label's end could lie anywhere below 2^62).
        let from = segment_start(label.log_start, segment_bytes);
        let contiguous = starts.iter().enumerate().all(|(i, s)| {
            Some(s.0)
                == (i as u64)
                    .checked_mul(segment_bytes)
                    .and_then(|o| o.checked_add(from.0))
        });
        let last_needed = segment_start(Lsn(label.end_lsn.0 - 1), segment_bytes);
        if !contiguous || starts.last() != Some(&last_needed) {
            return Err(Error::Corruption(format!(
                "backup {}: its log holds segments {} where its label needs [{}, {})",
                backup.display(),
                describe(&starts),
                label.log_start,
                label.end_lsn
            )));
        }
        let mut source = Source {
            storage,
            backup: backup.to_path_buf(),
            archive: archive.map(Path::to_path_buf),
            label,
            segment_bytes,
            backup_segments: starts,
            chain: Chain {
                taken: Vec::new(),
                gap: None,
            },
        };
        if let Some(a) = archive {
            source.chain = source.archived_chain(a)?;
        }
        Ok(source)
    }

    /// The archive's segments from the one holding the backup's end on, in order, up to
    /// the first missing one; each with a valid header of this log's segment size, and
    /// the first equal to the backup's copy below the backup's end.
    fn archived_chain(&self, archive: &Path) -> Result<Chain> {
        let st = &*self.storage;
        settled_dir(st, archive, "log archive")?;
        let starts = segment_files(st, archive, "log archive")?;
        let mut next = segment_start(self.label.end_lsn, self.segment_bytes);
        // Whose log the archive holds: its marker names the log's id, and the label names
        // the backup's log's (if the log had one when the backup was taken).
        let archived_log = sluice_wal::dirs::read_archive_log_id(st, archive)?;
        let another = |why: String| {
            Error::InvalidArgument(format!(
                "log archive {} is not the archive of the log backup {} was taken from: {why}",
                archive.display(),
                self.backup.display()
            ))
        };
        match (self.label.log_id, archived_log) {
            (Some(ours), Some(theirs)) if ours != theirs => {
                return Err(another(format!(
                    "it archives log {theirs:016x}, the backup's log is {ours:016x}"
                )))
            }
            (_, None) if starts.iter().any(|&s| s >= next) => {
                return Err(another(format!(
                    "it holds segments but no ARCHIVE_OF marker naming their log (an archive gets one before its first copy: this is not an archive){}",
                    self.label
                        .log_id
                        .map_or(String::new(), |ours| format!("; the backup's log is {ours:016x}"))
                )))
            }
            _ => {}
        }
        // Without the log's id (a backup taken before its log was first archived), only
        // the bytes the backup and the archive both hold can tell: a backup that ends on a
        // segment boundary shares none with it.
        let unproven =
            self.label.log_id.is_none() && next == self.label.end_lsn && starts.contains(&next);
        if unproven {
            return Err(another(format!(
                "the backup was taken before its log had an id (it was not archived yet) and ends at LSN {}, a segment boundary, so no bytes both hold show that the archive continues it; take a new backup",
                self.label.end_lsn
            )));
        }
        let mut chain = Chain {
            taken: Vec::new(),
            gap: None,
        };
        for s in starts {
            if s < next {
                continue;
            }
            if s > next {
                chain.gap = Some(next);
                break;
            }
            let path = archive.join(segment_name(s));
            header(st, &path, s, Some(self.segment_bytes))?;
            if s < self.label.end_lsn {
                self.same_prefix(&path, s)?;
            }
            chain.taken.push(s);
            next = s.add(self.segment_bytes);
        }
        Ok(chain)
    }

    /// The archived copy of the segment the backup's log ends in must hold the same bytes
    /// below the backup's end: otherwise it is of another log (or damaged).
    fn same_prefix(&self, archived: &Path, start: Lsn) -> Result<()> {
        let st = &*self.storage;
        let copied = self.backup.join(LOG).join(segment_name(start));
        let len = SEGMENT_HEADER_BYTES + (self.label.end_lsn.0 - start.0);
        let open = |p: &Path, what| {
            st.open(p, OpenOptions::READ_ONLY)
                .map_err(|e| file_error(what, p, e))
        };
        let (a, b) = (
            open(archived, "archived segment")?,
            open(&copied, "backup segment")?,
        );
        let (mut x, mut y) = (
            vec![0u8; COPY_STEP_BYTES as usize],
            vec![0u8; COPY_STEP_BYTES as usize],
        );
        let mut at = 0;
        while at < len {
            let n = (len - at).min(COPY_STEP_BYTES) as usize;
            a.read_exact_at(&mut x[..n], at)
                .map_err(|e| file_error("archived segment", archived, e))?;
            b.read_exact_at(&mut y[..n], at)
                .map_err(|e| file_error("backup segment", &copied, e))?;
            if x[..n] != y[..n] {
                return Err(Error::Corruption(format!(
                    "archived segment {} differs from the backup's copy {} below the backup's end LSN {}: the archive is of another log, or damaged",
                    archived.display(),
                    copied.display(),
                    self.label.end_lsn
                )));
            }
            at += n as u64;
        }
        Ok(())
    }

    /// Where the log a restore can read ends.
    fn end(&self) -> Lsn {
        match self.chain.taken.last() {
            Some(&s) => s.add(self.segment_bytes),
            None => self.label.end_lsn,
        }
    }

    /// The file that holds `lsn`: an archived segment if the chain has it (the
    /// backup's copy of the shared segment ends at the backup's end), else the backup's.
    fn file_of(&self, lsn: Lsn) -> PathBuf {
        let s = segment_start(lsn, self.segment_bytes);
        match &self.archive {
            Some(a) if lsn >= self.label.end_lsn && self.chain.taken.contains(&s) => {
                a.join(segment_name(s))
            }
            _ => self.backup.join(LOG).join(segment_name(s)),
        }
    }

    /// The files holding the log below `cut`, with their segments' starts: the backup's
    /// segments, then the archive's, the shared one from the archive when the log goes
    /// past the backup's end.
    fn files_below(&self, cut: Lsn) -> Vec<(PathBuf, Lsn)> {
        let mut out: Vec<(PathBuf, Lsn)> = Vec::new();
        let past_backup = cut > self.label.end_lsn;
        for &s in &self.backup_segments {
            let shared = self.chain.taken.first() == Some(&s);
            if !(shared && past_backup) {
                out.push((self.backup.join(LOG).join(segment_name(s)), s));
            }
        }
        if let Some(a) = &self.archive {
            for &s in self.chain.taken.iter().filter(|s| s.0 < cut.0) {
                let shared = self.backup_segments.contains(&s);
                if !shared || past_backup {
                    out.push((a.join(segment_name(s)), s));
                }
            }
        }
        out
    }

    /// The records from `from` to the end, read in place, damage named by file.
    fn records(&self, from: Lsn) -> impl Iterator<Item = Result<ReadRecord>> + '_ {
        let e = self.label.end_lsn;
        let backup_part = (from < e).then(|| {
            read_segment_files(
                self.storage.clone(),
                &self.backup.join(LOG),
                self.segment_bytes,
                (from, e),
            )
        });
        let archive_part = self.archive.as_ref().and_then(|a| {
            (self.end() > e).then(|| {
                read_segment_files(
                    self.storage.clone(),
                    a,
                    self.segment_bytes,
                    (from.max(e), self.end()),
                )
            })
        });
        backup_part
            .into_iter()
            .flatten()
            .chain(archive_part.into_iter().flatten())
            .map(move |r| r.map_err(|err| self.damage(err)))
    }

    /// The last commit of the whole log (from the backup's start: a backup with no commit
    /// after its checkpoint still names the one before), with its effective time; every
    /// record on the way is read and checked.
    /// [`Source::records`] up to `to`, telling `tell` the log bytes read of those to
    /// read now and then (about 200 times, and at the end).
    fn records_told<'a>(
        &'a self,
        (from, to): (Lsn, Lsn),
        tell: &'a mut dyn FnMut(u64, u64),
    ) -> impl Iterator<Item = Result<ReadRecord>> + 'a {
        let total = to.0.saturating_sub(from.0);
        let step = (total / 200).max(1);
        let mut next = 0;
        tell(0, total);
        self.records(from).inspect(move |r| {
            if let Ok(r) = r {
                let done = r.end.0.saturating_sub(from.0).min(total);
                if done >= next || done == total {
                    tell(done, total);
                    next = done.saturating_add(step);
                }
            }
        })
    }

    fn last_commit(&self, tell: &mut dyn FnMut(u64, u64)) -> Result<Option<(Lsn, CommitTime)>> {
        let mut times = EffectiveTimes::starting_at(CommitTime(0));
        let mut last = None;
        for r in self.records_told((self.label.log_start, self.end()), tell) {
            let r = r?;
            if let Some((_, at)) = commit_of(&r.payload) {
                last = Some((r.lsn, times.next(at)));
            }
        }
        Ok(last)
    }

    fn damage(&self, e: WalError) -> Error {
        match e {
            WalError::Corruption { lsn, reason } => Error::Corruption(format!(
                "{} is damaged at LSN {lsn}: {reason}",
                self.file_of(lsn).display()
            )),
            other => Error::from(other),
        }
    }

    /// The cut for `target`, after reading (and so checking) the log up to it; and the
    /// last commit kept, if the part read holds one.
    /// `tell` is told the log bytes read of those to read, now and then.
    fn cut(
        &self,
        target: RestoreTarget,
        tell: &mut dyn FnMut(u64, u64),
    ) -> Result<(Lsn, Option<(Lsn, CommitTime)>)> {
        let e = self.label.end_lsn;
        let reach = self.end();
        let which = if self.archive.is_some() {
            "the backup and the archive hold"
        } else {
            "the backup holds"
        };
        let gap = |g: Lsn| {
            format!(
                "the log archive {} has no segment {} (LSNs {g} to {}) but holds later ones",
                self.archive.as_deref().unwrap_or(Path::new("")).display(),
                segment_name(g),
                g.0 + self.segment_bytes
            )
        };
        match target {
            RestoreTarget::End => {
                if let Some(g) = self.chain.gap {
                    return Err(Error::InvalidArgument(format!(
                        "{}: a restore to the end would skip it; restore to an LSN below {g}, or put the segment back",
                        gap(g)
                    )));
                }
                Ok((reach, self.last_commit(tell)?))
            }
            RestoreTarget::Lsn(l) => {
                if l < e {
                    return Err(Error::InvalidArgument(format!(
                        "target LSN {l} is before the backup's end LSN {e}: the backup already holds changes up to there; restore from an older backup"
                    )));
                }
                if l > reach {
                    return Err(Error::InvalidArgument(match self.chain.gap {
                        Some(g) => format!("target LSN {l} is past LSN {reach}: {}", gap(g)),
                        None => format!(
                            "target LSN {l} is past the end of the log {which} (LSN {reach})"
                        ),
                    }));
                }
                let (mut cut, mut last) = (e, None);
                for r in self.records_told((e, l), tell) {
                    let r = r?;
                    if r.lsn > l {
                        break;
                    }
                    cut = r.end;
                    if let Some((_, at)) = commit_of(&r.payload) {
                        last = Some((r.lsn, at));
                    }
                }
                Ok((cut, last))
            }
            RestoreTarget::Time(t) => {
                let mut times = EffectiveTimes::starting_at(CommitTime(0));
                let mut last = None;
                for r in self.records_told((self.label.log_start, reach), tell) {
                    let r = r?;
                    let Some((_, at)) = commit_of(&r.payload) else {
                        continue;
                    };
                    let at = times.next(at);
                    if at <= t {
                        last = Some((r.lsn, at));
                        continue;
                    }
                    if r.lsn < e {
                        return Err(Error::InvalidArgument(format!(
                            "target time {t} is before the backup's end: the commit at LSN {}, below its end LSN {e}, was at {at}; restore from an older backup",
                            r.lsn
                        )));
                    }
                    return Ok((r.lsn, last));
                }
                let shown = last.map_or("no commit".to_string(), |(l, at)| {
                    format!("the last commit at LSN {l}, at {at}")
                });
                Err(Error::InvalidArgument(match self.chain.gap {
                    Some(g) => format!("no commit after {t} before LSN {reach} ({shown}): {}", gap(g)),
                    None => format!(
                        "no commit after {t} in the log {which} (it ends at LSN {reach}, {shown}): commits up to {t} may be missing from it; restore to the end instead"
                    ),
                }))
            }
        }
    }
}

/// The options the restored database is recovered with: the defaults, with the backup's
/// page size and log segment size, and the largest default-or-smaller pool whose
/// checkpoint record that log can take (a pool's dirty-page table is one record; a log
/// of small segments cannot take one of the default pool).
fn recovery_options(page_size: usize, segment_bytes: u64) -> Result<Options> {
    let mut o = Options {
        page_size,
        log: sluice_wal::LogOptions {
            segment_bytes,
            ..sluice_wal::LogOptions::default()
        },
        ..Options::default()
    };
    let log_max = super::open::probe_log_max(&o)?;
    while o.pool_pages > 16
        && crate::log_record::max_record_bytes(page_size, o.pool_pages) > log_max
    {
        o.pool_pages /= 2;
    }
    Ok(o)
}

/// Checks that the directory `dir` (a `what`) exists, and makes its entries durable:
/// nothing reported or copied may rest on a directory entry a power loss can take back (a
/// killed writer's last rename), as every open does.
fn settled_dir(st: &dyn Storage, dir: &Path, what: &str) -> Result<()> {
    if !st.exists(dir).map_err(|e| file_error(what, dir, e))? {
        return Err(Error::InvalidArgument(format!(
            "{what} {} does not exist",
            dir.display()
        )));
    }
    sluice_storage::settle_dir(st, dir, true).map_err(|e| file_error(what, dir, e))
}

/// The segment files in `dir`, ascending.
fn segment_files(st: &dyn Storage, dir: &Path, what: &str) -> Result<Vec<Lsn>> {
    let mut starts: Vec<Lsn> = st
        .list(dir)
        .map_err(|e| file_error(what, dir, e))?
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .collect();
    starts.sort();
    Ok(starts)
}

/// Checks the header of the segment file `path` (segment `start`) and returns its
/// segment size, which must be `want` if given.
fn header(st: &dyn Storage, path: &Path, start: Lsn, want: Option<u64>) -> Result<u64> {
    let mut b = vec![0u8; SEGMENT_HEADER_BYTES as usize];
    let f = st
        .open(path, OpenOptions::READ_ONLY)
        .map_err(|e| file_error("segment", path, e))?;
    f.read_exact_at(&mut b, 0)
        .map_err(|e| file_error("segment", path, e))?;
    match decode_header(&b, start) {
        Ok(size) if want.is_none_or(|w| w == size) => Ok(size),
        Ok(size) => Err(Error::Corruption(format!(
            "segment {} has segments of {size} bytes, the backup's log {}: it is not of this log",
            path.display(),
            want.unwrap_or(0)
        ))),
        Err(e) => Err(Error::Corruption(format!(
            "segment {} is damaged: {e}",
            path.display()
        ))),
    }
}

fn describe(starts: &[Lsn]) -> String {
    match (starts.first(), starts.last()) {
        (Some(a), Some(b)) => format!("from LSN {a} to the one at {b} ({} files)", starts.len()),
        _ => "none".into(),
    }
}
