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
//! then an incremental one on top of it, restored as their chain.

use super::config::{Config, Layout, LOG_ARCHIVE, MARK};
use super::engine::{Db, Rows, Tbl};
use super::scratch::read_rows;
use crate::fence::FencedStorage;
use sluice::{Database, Options, Restore, RestoreTarget};
use sluice_storage::SimStorage;
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
    let label = plain
        .backup_to(full)
        .map_err(|e| format!("backup failed: {e}"))?;
    let backup = opened(sim, cfg, full, true)?;
    let shown =
        shows(&backup).map_err(|e| format!("the backup (end LSN {}): {e}", label.end_lsn))?;
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
    let report = Database::restore(FencedStorage::for_incarnation(sim), &spec, &mut |_| {})
        .map_err(|e| format!("restore failed: {e}"))?;
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
