//! Continuous log archiving as a dimension (`Options::log_archive`, drawn by
//! `config.rs`): what the archive of each log must be after every recovery and at the
//! end of a seed.
//!
//! * At each halt, before anything reads the disk ([`check_at_halt`]): every copy the
//!   device holds under its final name is a whole segment, byte for byte the log's
//!   segment of that name where the device still holds it — read from the simulated
//!   disk's durable image, with no side effect on what the halt left.
//! * After each recovery, with the database open and its archivers copying
//!   ([`check_live`]): every copy the `MANIFEST` lists is whole (`verify_archive` finds no
//!   problem; a copy renamed into place whose entry is still to come is "unlisted", not
//!   a problem), the archive holds one range of the log from LSN 0, and it reaches the
//!   log's first segment — truncation freed nothing the archive does not hold, so the
//!   archive and the log together are the whole log, whatever the halts did.
//! * After the seed's final clean close ([`check_closed`]): the same with nothing
//!   unlisted (a closed archiver stops between copies); the whole archive reads as a log
//!   (every frame's checksum binds its LSN, so a record read is the one written there);
//!   and its records are the database log's, LSN for LSN, over the range both hold
//!   (often empty: the close's checkpoint frees every archived segment it may).

use super::config::{Config, Layout, LOG_ARCHIVE};
use super::engine::Db;
use crate::crash::DIR;
use sluice_storage::{SimStorage, Storage};
use sluice_wal::segment::{parse_segment_name, SEGMENT_HEADER_BYTES};
use sluice_wal::{verify_archive, ArchiveReport, Log, Lsn};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Each log of the seed's database: its directory and its archive's.
fn logs(cfg: &Config) -> Vec<(PathBuf, PathBuf)> {
    let archive = PathBuf::from(LOG_ARCHIVE);
    match &cfg.layout {
        Layout::Plain { log_dir } => vec![(
            log_dir
                .as_ref()
                .map_or_else(|| PathBuf::from(DIR).join("log"), PathBuf::from),
            archive,
        )],
        Layout::Partitioned(p) => (0..p.log_managers)
            .map(|i| {
                let part = format!("part-{i}");
                let log = p.log_dirs[i]
                    .as_ref()
                    .map_or_else(|| PathBuf::from(DIR).join(&part).join("log"), PathBuf::from);
                (log, archive.join(part))
            })
            .collect(),
    }
}

/// The archive in `dir`, checked against its manifest; its listed copies must be whole
/// and hold one range of the log from LSN 0 reaching `log_start`, the log's first LSN.
fn verified(storage: &dyn Storage, dir: &Path, log_start: Lsn) -> Result<ArchiveReport, String> {
    let r = verify_archive(storage, dir)
        .map_err(|e| format!("log archive {}: verify failed: {e}", dir.display()))?;
    if !r.is_intact() {
        return Err(format!("log archive {}: {r}", dir.display()));
    }
    match r.reachable {
        None if log_start > Lsn(0) => Err(format!(
            "log archive {} holds nothing, but the log starts at {log_start}: segments were freed unarchived",
            dir.display()
        )),
        Some((first, end)) if first > Lsn(0) || end < log_start => Err(format!(
            "log archive {} holds {first}..{end}, the log starts at {log_start}: together they are not the whole log",
            dir.display()
        )),
        _ => Ok(r),
    }
}

/// At a halt (see the module docs). Returns the copies compared with the log's segments.
pub(crate) fn check_at_halt(sim: &SimStorage, cfg: &Config) -> Result<u64, String> {
    let whole = SEGMENT_HEADER_BYTES + cfg.segment_bytes;
    let mut compared = 0;
    for (log_dir, dir) in logs(cfg) {
        // Listing is no counted operation; a directory not made yet holds nothing.
        let Ok(names) = sim.list(&dir) else {
            continue;
        };
        for name in names.iter().filter(|n| parse_segment_name(n).is_some()) {
            let Some(copy) = sim.read_durable(&dir.join(name)) else {
                continue;
            };
            if copy.len() as u64 != whole {
                return Err(format!(
                    "log archive {}: at the halt {name} is durable with {} bytes, not a whole segment of {whole}",
                    dir.display(),
                    copy.len()
                ));
            }
            let Some(segment) = sim.read_durable(&log_dir.join(name)) else {
                continue;
            };
            if segment.get(..copy.len()) != Some(&copy[..]) {
                return Err(format!(
                    "log archive {}: at the halt {name} is not a copy of the log's segment {} ({} bytes)",
                    dir.display(),
                    log_dir.join(name).display(),
                    segment.len()
                ));
            }
            compared += 1;
        }
    }
    Ok(compared)
}

/// After a recovery, `db` open (see the module docs). Returns the copies listed.
pub(crate) fn check_live(sim: &SimStorage, cfg: &Config, db: &Db) -> Result<u64, String> {
    let storage = sim.pinned();
    let mut listed = 0;
    for (d, (_, dir)) in db.databases().into_iter().zip(logs(cfg)) {
        let log = d.log();
        let start = log.start_lsn();
        let archived = log
            .archived_lsn()
            .ok_or_else(|| format!("log archive {}: the log does not archive", dir.display()))?;
        if archived < start {
            return Err(format!(
                "log archive {}: the log starts at {start}, but only {archived} is archived",
                dir.display()
            ));
        }
        listed += verified(&storage, &dir, start)?.segments.len() as u64;
    }
    Ok(listed)
}

/// What [`check_closed`] compared.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Compared {
    /// Copies the manifests list.
    pub(crate) segments: u64,
    /// Records read from the archives, as logs.
    pub(crate) archived_records: u64,
    /// Records found in both an archive and its log, and equal.
    pub(crate) records: u64,
}

/// After the seed's final clean close (see the module docs).
pub(crate) fn check_closed(sim: &SimStorage, cfg: &Config) -> Result<Compared, String> {
    let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
    let options = cfg.options(cfg.sessions.len()).log;
    let mut compared = Compared::default();
    for (log_dir, dir) in logs(cfg) {
        let log = Log::open_read_only(storage.clone(), &log_dir, options)
            .map_err(|e| format!("log {}: a read-only open failed: {e}", log_dir.display()))?;
        let start = log.start_lsn();
        let r = verified(&*storage, &dir, start)?;
        if !r.unlisted.is_empty() {
            return Err(format!(
                "log archive {} after a clean close: {r}",
                dir.display()
            ));
        }
        compared.segments += r.segments.len() as u64;
        if r.segments.is_empty() {
            continue;
        }
        let archive = Log::open_read_only(storage.clone(), &dir, options).map_err(|e| {
            format!(
                "log archive {}: it does not read as a log: {e}",
                dir.display()
            )
        })?;
        let read = |l: &Log, from: Lsn, below: Lsn, what: &str| {
            let mut out = Vec::new();
            for rec in l
                .read_from(from)
                .map_err(|e| format!("{what}: read from {from}: {e}"))?
            {
                let rec = rec.map_err(|e| format!("{what}: {e}"))?;
                if rec.lsn >= below {
                    break;
                }
                out.push((rec.lsn, rec.payload));
            }
            Ok::<_, String>(out)
        };
        let what = format!("log archive {}", dir.display());
        compared.archived_records +=
            read(&archive, archive.start_lsn(), archive.durable_lsn(), &what)?.len() as u64;
        // The range both hold: from the log's start to the archive's end.
        let (from, below) = (start.max(archive.start_lsn()), archive.durable_lsn());
        if from < below {
            // `from` is a segment start in both (records and padding tile segments).
            let in_archive = read(&archive, from, below, &what)?;
            let in_log = read(&log, from, below, &format!("log {}", log_dir.display()))?;
            if in_archive != in_log {
                let first = in_archive
                    .iter()
                    .zip(&in_log)
                    .find(|(a, b)| a != b)
                    .map_or_else(|| "their lengths".to_string(), |(a, _)| a.0.to_string());
                return Err(format!(
                    "{what} and the log differ over {from}..{below} ({} and {} records; first difference at {first})",
                    in_archive.len(),
                    in_log.len()
                ));
            }
            compared.records += in_log.len() as u64;
        }
    }
    Ok(compared)
}
