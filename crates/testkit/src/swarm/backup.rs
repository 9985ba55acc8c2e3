//! Backups as a dimension (`Config::backup`, drawn for an ordinary database): under every
//! option the seed drew — protocol, propagation strategy, page size, pool, the log
//! elsewhere, continuous archiving, the halts before — the database the last recovery
//! opened is backed up ([`take`]); the backup must open read-only showing exactly the
//! rows the database showed, and verify. After the seed's final close it is restored to
//! the end ([`restore`]), rolled forward from the log archive when the seed archives: the
//! restored database must verify and show the backup's rows — or those and the one commit
//! made after the backup, if the archive already holds its segment (the segment being
//! written is archived only once it is finished). The restore replays the log by sorted
//! runs or in log order, as the seed drew (`Config::replay`). Half the backups are
//! incremental (`Config::incremental`): a full backup, which must open showing the rows,
//! then an incremental one on top of it, restored as their chain. The restore's progress
//! reports must follow [`progress_rule`].

use super::config::{Config, Layout, LOG_ARCHIVE, MARK};
use super::engine::{Db, Rows, Tbl};
use super::scratch::read_rows;
use crate::fence::FencedStorage;
use sluice::{Database, Options, Restore, RestoreProgress, RestoreStep, RestoreTarget};
use sluice_storage::{SimStorage, Storage};
use std::path::PathBuf;

/// Where a seed's backup goes, and where it is restored.
pub(crate) const BACKUP_DIR: &str = "/swarm-backup";
pub(crate) const RESTORED_DIR: &str = "/swarm-restored";
/// Where the full backup goes when the seed's backup is an incremental one on top of it.
pub(crate) const FULL_DIR: &str = "/swarm-backup-full";

/// The row the seed writes after its backup (`Seed::run`: "the recovered database takes
/// new work").
pub(crate) fn written_after(rows: &Rows) -> Rows {
    let mut r = rows.clone();
    r.insert((MARK[0], b"after".to_vec()), b"recovery".to_vec());
    r
}

fn opened(sim: &SimStorage, cfg: &Config, dir: &str, read_only: bool) -> Result<Db, String> {
    let options = Options {
        read_only,
        log_archive: None,
        archive_mirror: None,
        ..cfg.options(cfg.sessions.len())
    };
    Database::builder(dir)
        .options(options)
        .storage(FencedStorage::for_incarnation(sim))
        .open()
        .map(Db::Plain)
        .map_err(|e| format!("opening {dir}: {e}"))
}

fn shows(db: &Db) -> Result<Rows, String> {
    let tables = db.tables().map_err(|e| e.to_string())?;
    let rows = read_rows(db, &tables).map_err(|e| format!("reading: {e}"))?;
    db.verify().map_err(|e| format!("verify failed: {e}"))?;
    Ok(rows)
}

/// Backs `db` up; returns the rows it showed, which the backup must show too.
pub(crate) fn take(
    sim: &SimStorage,
    cfg: &Config,
    db: &Db,
    tables: &[Tbl],
) -> Result<Rows, String> {
    let Some(plain) = db.plain() else {
        return Err("backups are drawn for ordinary databases only".into());
    };
    let rows = read_rows(db, tables).map_err(|e| format!("reading before the backup: {e}"))?;
    // The backup that opens on its own: the full one.
    let full = if cfg.incremental {
        FULL_DIR
    } else {
        BACKUP_DIR
    };
    // (For the postmortem: the database is idle here, so nothing should be dirty.)
    let dirty_before = plain.backlog().dirty_pages;
    let label = plain
        .backup_to(full)
        .map_err(|e| format!("backup failed: {e}"))?;
    let backup = opened(sim, cfg, full, true)?;
    let shown = shows(&backup).map_err(|e| {
        let recovered = match &backup {
            Db::Plain(b) => format!("{:?}", b.recovery_report()),
            Db::Part(_) => String::new(),
        };
        format!(
            "the backup (end LSN {}): {e} [dirty pages before the backup: {dirty_before}; the backup's recovery: {recovered}; {}]",
            label.end_lsn,
            postmortem(sim, cfg, plain, &label, full, &e)
        )
    })?;
    drop(backup);
    if cfg.incremental {
        // Checked by the restore of the chain after the final close.
        plain
            .backup_incremental_to(BACKUP_DIR, FULL_DIR)
            .map_err(|e| format!("incremental backup failed: {e}"))?;
    }
    if shown != rows {
        return Err(format!(
            "the backup (end LSN {}) shows {} rows, the database showed {}",
            label.end_lsn,
            shown.len(),
            rows.len()
        ));
    }
    Ok(rows)
}

/// What a failure of the backup's checks leaves to go on (the failure seen once in a
/// sweep, not reproduced by replays: stop 44): the backup's label, whether the database
/// itself still verifies, and the page the error names as the database's data file and
/// the backup's copy hold it now.
fn postmortem(
    sim: &SimStorage,
    cfg: &Config,
    db: &Database,
    label: &sluice::BackupLabel,
    backup: &str,
    error: &str,
) -> String {
    let page = error
        .split("page ")
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<u64>().ok());
    let read = |dir: &str, id: u64| -> String {
        let path = std::path::Path::new(dir).join("data");
        let mut buf = vec![0u8; cfg.page_size];
        let f = match sim.open(&path, sluice_storage::OpenOptions::READ_ONLY) {
            Ok(f) => f,
            Err(e) => return format!("{}: {e}", path.display()),
        };
        let len = f.len().unwrap_or(0);
        match f.read_exact_at(&mut buf, id * cfg.page_size as u64) {
            Ok(()) => format!(
                "{} ({len} bytes): {}, first bytes {:02x?}",
                path.display(),
                if buf.iter().all(|&b| b == 0) {
                    "all zero"
                } else {
                    "not zero"
                },
                &buf[..16]
            ),
            Err(e) => format!("{} ({len} bytes): {e}", path.display()),
        }
    };
    let mut out = format!(
        "label: checkpoint {} redo from {:?} log start {} data {} bytes ({} pages); the database's own verify now: {}",
        label.checkpoint,
        label.redo_from,
        label.log_start,
        label.data_bytes,
        label.data_bytes / cfg.page_size as u64,
        match db.verify() {
            Ok(r) => format!("ok, {} pages", r.pages),
            Err(e) => e.to_string(),
        }
    );
    if let Some(id) = page {
        out += &format!(
            "; page {id} in the database: {}; in the backup: {}",
            read(crate::crash::DIR, id),
            read(backup, id)
        );
    }
    out
}

/// After the final close: restores the backup to the end (see the module docs).
pub(crate) fn restore(sim: &SimStorage, cfg: &Config, backed_up: &Rows) -> Result<(), String> {
    debug_assert!(matches!(cfg.layout, Layout::Plain { .. }));
    let spec = Restore {
        backup: PathBuf::from(BACKUP_DIR),
        archive: cfg.archive.then(|| PathBuf::from(LOG_ARCHIVE)),
        target: RestoreTarget::End,
        dest: PathBuf::from(RESTORED_DIR),
        replay: cfg.replay,
        ancestors: if cfg.incremental {
            vec![PathBuf::from(FULL_DIR)]
        } else {
            Vec::new()
        },
    };
    let mut told = Vec::new();
    let report = Database::restore(FencedStorage::for_incarnation(sim), &spec, &mut |p| {
        told.push(p)
    })
    .map_err(|e| format!("restore failed: {e}"))?;
    progress_rule(&told, report.single_pass.is_some())
        .map_err(|e| format!("the restore's progress: {e}"))?;
    let db = opened(sim, cfg, RESTORED_DIR, false)?;
    let shown = shows(&db).map_err(|e| format!("the restored database: {e}"))?;
    db.close()
        .map_err(|e| format!("closing the restored database: {e}"))?;
    if &shown != backed_up && shown != written_after(backed_up) {
        return Err(format!(
            "restored to LSN {} ({} archived segments), it shows {} rows: neither the backup's {} nor those and the commit after it",
            report.end_lsn,
            report.archived_segments,
            shown.len(),
            backed_up.len()
        ));
    }
    Ok(())
}

/// What a restore's progress reports must do (`RestoreProgress`'s docs): its steps come in
/// order, each once; each step starts at 0 done and ends with done equal to its total,
/// never going back or past the total between. Every restore checks and copies the log,
/// runs analysis and undo and closes with a checkpoint; it sorts and applies runs exactly
/// when it is a single-pass restore, whose recovery reports no redo.
pub(crate) fn progress_rule(told: &[RestoreProgress], single_pass: bool) -> Result<(), String> {
    let mut steps: Vec<(RestoreStep, u64)> = Vec::new();
    for (i, p) in told.iter().enumerate() {
        let at = |why: &str| format!("report {i} ({p:?}): {why}");
        if p.done > p.total {
            return Err(at("done past the total"));
        }
        match steps.last() {
            Some(&(step, done)) if step == p.step => {
                if p.done < done {
                    return Err(at("went back"));
                }
                // (Only a step not measured, 0 of 0, learns its total: the checkpoint.)
                if told[i - 1].total != p.total && told[i - 1].total != 0 {
                    return Err(at("the step's total changed"));
                }
            }
            last => {
                if last.is_some_and(|&(step, _)| step >= p.step) {
                    return Err(at("a step out of order, or again"));
                }
                if let Some(prev) = i.checked_sub(1).map(|j| told[j]) {
                    if prev.done != prev.total {
                        return Err(format!("{:?} ended short: {prev:?}", prev.step));
                    }
                }
                if p.done != 0 {
                    return Err(at("a step that does not start at 0"));
                }
            }
        }
        match steps.last_mut() {
            Some(s) if s.0 == p.step => s.1 = p.done,
            _ => steps.push((p.step, p.done)),
        }
    }
    if let Some(last) = told.last() {
        if last.done != last.total {
            return Err(format!("the last step ended short: {last:?}"));
        }
    }
    let have: Vec<RestoreStep> = steps.iter().map(|s| s.0).collect();
    let mut want = vec![RestoreStep::Check, RestoreStep::Copy];
    if single_pass {
        want.extend([RestoreStep::Sort, RestoreStep::Apply]);
    }
    want.push(RestoreStep::Analysis);
    if !single_pass && have.contains(&RestoreStep::Redo) {
        want.push(RestoreStep::Redo);
    }
    want.extend([RestoreStep::Undo, RestoreStep::Checkpoint]);
    if have != want {
        return Err(format!(
            "steps {have:?}, expected {want:?} (single pass: {single_pass})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::progress_rule;
    use sluice::{RestoreProgress, RestoreStep as S};

    fn p(step: S, done: u64, total: u64) -> RestoreProgress {
        RestoreProgress { step, done, total }
    }

    fn whole(single_pass: bool) -> Vec<RestoreProgress> {
        let mut v = vec![
            p(S::Check, 0, 10),
            p(S::Check, 10, 10),
            p(S::Copy, 0, 5),
            p(S::Copy, 5, 5),
        ];
        if single_pass {
            v.extend([
                p(S::Sort, 0, 3),
                p(S::Sort, 3, 3),
                p(S::Apply, 0, 2),
                p(S::Apply, 2, 2),
            ]);
        }
        v.extend([p(S::Analysis, 0, 4), p(S::Analysis, 4, 4)]);
        if !single_pass {
            v.extend([p(S::Redo, 0, 4), p(S::Redo, 4, 4)]);
        }
        v.extend([
            p(S::Undo, 0, 0),
            p(S::Undo, 0, 0),
            p(S::Checkpoint, 0, 0),
            p(S::Checkpoint, 1, 1),
        ]);
        v
    }

    #[test]
    fn the_rule_accepts_a_whole_restore_and_names_each_break() {
        assert_eq!(progress_rule(&whole(true), true), Ok(()));
        assert_eq!(progress_rule(&whole(false), false), Ok(()));
        // Sorting without being a single pass, or the reverse.
        assert!(progress_rule(&whole(true), false)
            .unwrap_err()
            .contains("steps"));
        assert!(progress_rule(&whole(false), true)
            .unwrap_err()
            .contains("steps"));
        let broken = |edit: &dyn Fn(&mut Vec<RestoreProgress>)| {
            let mut v = whole(true);
            edit(&mut v);
            progress_rule(&v, true).expect_err(&format!("{v:?} passed"))
        };
        assert!(broken(&|v| v[1].done = 7).contains("ended short"));
        assert!(broken(&|v| v[2].done = 1).contains("start at 0"));
        assert!(broken(&|v| v.swap(2, 4)).contains("out of order"));
        assert!(broken(&|v| v.insert(4, p(S::Copy, 2, 5))).contains("went back"));
        assert!(broken(&|v| v[3].done = 6).contains("past the total"));
        assert!(broken(&|v| v.truncate(v.len() - 2)).contains("steps"));
        assert!(broken(&|v| v.last_mut().unwrap().done = 0).contains("ended short"));
    }
}
