//! Point-in-time restore: a backup (`backup.rs`), rolled forward with the segments of a
//! log archive, to the end, to an LSN, or to a time.
//!
//! 1. The backup's data file and log are copied into the new directory.
//! 2. The archive's segments that continue the backup's log are copied after them, in
//!    LSN order, from the one holding the backup's end (whose archived copy is whole,
//!    where the backup's ends at its end LSN; the bytes both hold must be equal, or the
//!    archive is of another log). A missing segment ends the chain: a target past it
//!    fails naming it, and so does a restore to the end while later segments exist —
//!    nothing is ever skipped. A segment that does not read to its end is damaged, and
//!    is named too.
//! 3. The log is cut at the target: after the last record at or below a target LSN, or
//!    before the first commit record whose time is past a target time (times taken as
//!    their running maximum in LSN order, so the cut is a prefix). A transaction commits
//!    in the restored database exactly when its commit record is kept.
//! 4. The backup's control file is copied last: until then the directory is not a
//!    database (it has no `CONTROL`), and from then on it opens to exactly the target
//!    state, so a crash anywhere leaves either no database or the restored one.
//! 5. The database is opened once — restart recovery from the backup's checkpoint:
//!    redo up to the cut, undo of what was in flight there — and closed.

use super::backup::{now_us, prepare_empty_dir, LOG};
use super::handle::Database;
use super::open::DATA;
use crate::backup_label::{incomplete, BackupLabel, PARTIAL};
use crate::control::Control;
use crate::data_file::file_error;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::recovery::RecoveryReport;
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::segment::SEGMENT_HEADER_BYTES;
use sluice_wal::segment::{decode_header, parse_segment_name, segment_name, segment_start};
use sluice_wal::{Log, LogOptions, Lsn, WalError, COPY_STEP_BYTES};
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
}

/// What to restore, from where, to where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    /// The backup directory ([`Database::backup_to`]).
    pub backup: PathBuf,
    /// A log archive (`Builder::log_archive`) to roll forward from, if any.
    pub archive: Option<PathBuf>,
    /// How far.
    pub target: RestoreTarget,
    /// The new database's directory: must not exist yet, or be empty.
    pub dest: PathBuf,
}

/// Where a restore stands, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestoreProgress {
    /// Bytes copied so far.
    pub copied_bytes: u64,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreReport {
    /// The backup's label.
    pub label: BackupLabel,
    /// The restored log ends here: exactly the commits below it are in the database.
    pub end_lsn: Lsn,
    /// Segments taken from the archive.
    pub archived_segments: usize,
    /// The recovery that made the restored database consistent.
    pub recovery: RecoveryReport,
    /// How long the restore took, in µs.
    pub elapsed_us: u64,
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
        if !st
            .exists(backup)
            .map_err(|e| file_error("backup directory", backup, e))?
        {
            return Err(Error::InvalidArgument(format!(
                "backup directory {} does not exist",
                backup.display()
            )));
        }
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
        let mut named = vec![
            ("backup directory".to_string(), st, backup.clone()),
            ("restore directory".to_string(), st, dest.clone()),
        ];
        if let Some(a) = &spec.archive {
            named.push(("log archive".to_string(), st, a.clone()));
        }
        super::refuse_same_dirs(&named)?;
        if let RestoreTarget::Lsn(l) = spec.target {
            if l < label.end_lsn {
                return Err(Error::InvalidArgument(format!(
                    "target LSN {l} is before the backup's end LSN {}: the backup already holds changes up to there; restore from an older backup",
                    label.end_lsn
                )));
            }
        }
        prepare_empty_dir(st, dest, "restore directory")?;
        let mut copied = 0u64;

        // 1. The data file and the backup's log.
        sluice_wal::copy_file(
            st,
            &backup.join(DATA),
            (st, dest, DATA),
            (Some(label.data_bytes), COPY_STEP_BYTES),
            &mut |n| {
                progress(RestoreProgress {
                    copied_bytes: copied + n,
                })
            },
        )?;
        copied += label.data_bytes;
        let (from_log, to_log) = (backup.join(LOG), dest.join(LOG));
        st.create_dir_all(&to_log)
            .map_err(|e| file_error("restore log directory", &to_log, e))?;
        let listed = sluice_wal::segment::scan_dir_read_only(st, &from_log)
            .map_err(|e| in_backup(backup, e))?;
        let Some(segment_bytes) = listed.segment_bytes else {
            return Err(Error::Corruption(format!(
                "backup {}: its log directory holds no segment",
                backup.display()
            )));
        };
        let (first, last) = (
            listed.starts[0],
            *listed.starts.last().expect("one at least"),
        );
        if first > label.log_start || last.0 + segment_bytes < label.end_lsn.0 {
            return Err(Error::Corruption(format!(
                "backup {}: its log holds segments from LSN {first} to {}, not [{}, {}) as its label says",
                backup.display(),
                last.0 + segment_bytes,
                label.log_start,
                label.end_lsn
            )));
        }
        for &s in &listed.starts {
            copied += sluice_wal::copy_file(
                st,
                &from_log.join(segment_name(s)),
                (st, &to_log, &segment_name(s)),
                (None, COPY_STEP_BYTES),
                &mut |n| {
                    progress(RestoreProgress {
                        copied_bytes: copied + n,
                    })
                },
            )?;
        }

        // 2. The archive's segments after them.
        let mut chain = Chain {
            next: segment_start(label.end_lsn, segment_bytes),
            taken: Vec::new(),
            gap: None,
        };
        if let Some(archive) = &spec.archive {
            let wanted = match spec.target {
                RestoreTarget::Lsn(l) => Some(l),
                RestoreTarget::End => None,
            };
            chain = archived_chain(st, archive, segment_bytes, &label, wanted)?;
            for &s in &chain.taken {
                let source = archive.join(segment_name(s));
                if s < label.end_lsn {
                    same_prefix(st, &source, &to_log.join(segment_name(s)), &label)?;
                }
                copied += sluice_wal::copy_file(
                    st,
                    &source,
                    (st, &to_log, &segment_name(s)),
                    (None, COPY_STEP_BYTES),
                    &mut |n| {
                        progress(RestoreProgress {
                            copied_bytes: copied + n,
                        })
                    },
                )?;
            }
        }
        st.sync_dir(&to_log)
            .map_err(|e| file_error("restore log directory", &to_log, e))?;

        // How far the assembled log reads, and whether that is as far as it should.
        let whose = |at: Lsn| -> String {
            let s = segment_start(at, segment_bytes);
            match &spec.archive {
                Some(a) if chain.taken.contains(&s) => {
                    format!("archived segment {}", a.join(segment_name(s)).display())
                }
                _ => format!(
                    "segment {} of the backup",
                    from_log.join(segment_name(s)).display()
                ),
            }
        };
        let reach = {
            let log = Log::open_read_only(
                storage.clone(),
                &to_log,
                LogOptions {
                    segment_bytes,
                    ..LogOptions::default()
                },
            )
            .map_err(|e| match e {
                WalError::Corruption { lsn, reason } => {
                    Error::Corruption(format!("{} is damaged at LSN {lsn}: {reason}", whose(lsn)))
                }
                other => Error::from(other),
            })?;
            log.durable_lsn()
        };
        let expected = match chain.taken.last() {
            Some(&s) => Lsn(s.0 + segment_bytes).max(label.end_lsn),
            None => label.end_lsn,
        };
        if reach < expected {
            return Err(Error::Corruption(format!(
                "{} is damaged: its records end at LSN {reach}, before the segment does (LSN {expected})",
                whose(reach)
            )));
        }
        let gap_named = |g: Lsn| {
            format!(
                "the log archive {} has no segment {} (LSNs {g} to {})",
                spec.archive.as_deref().unwrap_or(Path::new("")).display(),
                segment_name(g),
                g.0 + segment_bytes
            )
        };

        // 3. The cut.
        let cut = match spec.target {
            RestoreTarget::End => {
                if let Some(g) = chain.gap {
                    return Err(Error::InvalidArgument(format!(
                        "{} but holds later ones: a restore to the end would skip it; restore to an LSN below {g}, or put the segment back",
                        gap_named(g)
                    )));
                }
                reach
            }
            RestoreTarget::Lsn(l) => {
                if l >= reach {
                    return Err(Error::InvalidArgument(match chain.gap {
                        Some(g) => format!(
                            "target LSN {l} is past LSN {reach}: {}",
                            gap_named(g)
                        ),
                        None => format!(
                            "target LSN {l} is past the end of the log the backup{} holds (LSN {reach})",
                            if spec.archive.is_some() { " and the archive" } else { "" }
                        ),
                    }));
                }
                last_record_end_at_or_below(&storage, &to_log, segment_bytes, label.end_lsn, l)?
            }
        };
        sluice_wal::cut_log_dir(st, &to_log, cut)?;

        // 4. The control file, last.
        let control = Control::read_only(st, backup)?.ok_or_else(|| {
            Error::Corruption(format!(
                "backup {} has a label but no control file",
                backup.display()
            ))
        })?;
        control.write(st, dest)?;

        // 5. Recovery.
        let db = Database::open_on(
            storage.clone(),
            dest,
            Options {
                page_size: label.page_size as usize,
                ..Options::default()
            },
        )?;
        let recovery = db.recovery_report().clone();
        db.close()?;
        Ok(RestoreReport {
            label,
            end_lsn: cut,
            archived_segments: chain.taken.len(),
            recovery,
            elapsed_us: now_us().saturating_sub(started),
        })
    }
}

/// The archived segments that continue a backup's log.
struct Chain {
    /// The start of the segment after the last one taken.
    next: Lsn,
    /// Starts of the segments taken, in order.
    taken: Vec<Lsn>,
    /// The first missing segment, where the archive holds later ones.
    gap: Option<Lsn>,
}

/// Lists `archive` and takes its segments from the one holding the backup's end on, in
/// order, up to the one holding `wanted` (all without a target), stopping at the first
/// missing one. Every segment taken has a valid header of the backup's segment size.
fn archived_chain(
    st: &dyn Storage,
    archive: &Path,
    segment_bytes: u64,
    label: &BackupLabel,
    wanted: Option<Lsn>,
) -> Result<Chain> {
    let io = |e| file_error("log archive", archive, e);
    if !st.exists(archive).map_err(io)? {
        return Err(Error::InvalidArgument(format!(
            "log archive {} does not exist",
            archive.display()
        )));
    }
    let mut starts: Vec<Lsn> = st
        .list(archive)
        .map_err(io)?
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .collect();
    starts.sort();
    let mut chain = Chain {
        next: segment_start(label.end_lsn, segment_bytes),
        taken: Vec::new(),
        gap: None,
    };
    for &s in &starts {
        if s < chain.next {
            continue;
        }
        if wanted.is_some_and(|w| w.0 < chain.next.0) {
            break;
        }
        if s > chain.next {
            chain.gap = Some(chain.next);
            return Ok(chain);
        }
        let path = archive.join(segment_name(s));
        let mut header = vec![0u8; SEGMENT_HEADER_BYTES as usize];
        let f = st
            .open(&path, OpenOptions::READ_ONLY)
            .map_err(|e| file_error("archived segment", &path, e))?;
        f.read_exact_at(&mut header, 0)
            .map_err(|e| file_error("archived segment", &path, e))?;
        match decode_header(&header, s) {
            Ok(b) if b == segment_bytes => {}
            Ok(b) => {
                return Err(Error::Corruption(format!(
                    "archived segment {} has segments of {b} bytes, the backup's log {segment_bytes}: it is not of this log",
                    path.display()
                )))
            }
            Err(e) => {
                return Err(Error::Corruption(format!(
                    "archived segment {} is damaged: {e}",
                    path.display()
                )))
            }
        }
        chain.taken.push(s);
        chain.next = s.add(segment_bytes);
    }
    // Nothing after the last one taken: the chain ends where the archive does.
    Ok(chain)
}

/// The archived copy of the segment the backup's log ends in must hold the same bytes
/// below the backup's end: otherwise it is of another log (or damaged).
fn same_prefix(
    st: &dyn Storage,
    archived: &Path,
    copied: &Path,
    label: &BackupLabel,
) -> Result<()> {
    let start = parse_segment_name(
        &copied
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    )
    .unwrap_or(Lsn(0));
    let len = SEGMENT_HEADER_BYTES + (label.end_lsn.0 - start.0);
    const STEP: u64 = 1 << 20;
    let a = st
        .open(archived, OpenOptions::READ_ONLY)
        .map_err(|e| file_error("archived segment", archived, e))?;
    let b = st
        .open(copied, OpenOptions::READ_ONLY)
        .map_err(|e| file_error("restored segment", copied, e))?;
    let (mut x, mut y) = (vec![0u8; STEP as usize], vec![0u8; STEP as usize]);
    let mut at = 0;
    while at < len {
        let n = (len - at).min(STEP) as usize;
        a.read_exact_at(&mut x[..n], at)
            .map_err(|e| file_error("archived segment", archived, e))?;
        b.read_exact_at(&mut y[..n], at)
            .map_err(|e| file_error("restored segment", copied, e))?;
        if x[..n] != y[..n] {
            return Err(Error::Corruption(format!(
                "archived segment {} differs from the backup's copy below the backup's end LSN {}: the archive is of another log, or damaged",
                archived.display(),
                label.end_lsn
            )));
        }
        at += n as u64;
    }
    Ok(())
}

/// The end of the last record at or below `target`, reading from `from` (a record
/// boundary at or below it).
fn last_record_end_at_or_below(
    storage: &Arc<dyn Storage>,
    log_dir: &Path,
    segment_bytes: u64,
    from: Lsn,
    target: Lsn,
) -> Result<Lsn> {
    let log = Log::open_read_only(
        storage.clone(),
        log_dir,
        LogOptions {
            segment_bytes,
            ..LogOptions::default()
        },
    )?;
    let mut cut = from;
    for r in log.read_from(from)? {
        let r = r?;
        if r.lsn > target {
            break;
        }
        cut = r.end;
    }
    Ok(cut)
}

fn in_backup(backup: &Path, e: WalError) -> Error {
    match e {
        WalError::Corruption { lsn, reason } => Error::Corruption(format!(
            "the log of backup {} is damaged at LSN {lsn}: {reason}",
            backup.display()
        )),
        other => Error::from(other),
    }
}
