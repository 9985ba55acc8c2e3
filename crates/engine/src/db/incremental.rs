//! Incremental backups: only the pages changed since a parent backup
//! ([`Database::backup_incremental_to`](super::Database::backup_incremental_to)), and the
//! data file a restore makes of a chain of them.
//!
//! An incremental backup runs the protocol of a full one (`backup.rs`: marker, checkpoint,
//! log pinned, data, log, `CONTROL`, label, marker removed) but for the data file: of it,
//! it copies into `data.incr` only the pages that, as read,
//! * have a page LSN or an image LSN at or above `T`, the parent's `redo_from` (the
//!   lowest of its checkpoint's redo point and the recovery LSNs of the pages that
//!   checkpoint recorded dirty: where recovery of the parent redoes from; a parent label
//!   written before it was recorded gives its `log_start`, lower still); or
//! * fail their checksum or their structural check (a torn read, a page never written,
//!   anything this code cannot vouch for); or
//! * lie at or past the parent's data-file length.
//!
//! **Why the pages not copied are right.** Take a page `P` not copied: the child read a
//! whole, valid version `D` of it with page LSN below `T`. (a) When the parent's copy
//! started, its checkpoint was complete, and recovery of the parent's copy redoes from
//! `T` (a page not in the checkpoint's dirty table from its redo point, higher): so the
//! data file held every change to `P` below `T` — a full backup is correct only because
//! of that. (b) Disk versions never go backwards (the page-write
//! protocol never lands an older version over a newer one), and each version holds every
//! change of the versions before it. So `D`, later than what the file held then, holds
//! every change to `P` below `T` too, and — its page LSN being below `T` — no other. So
//! every version written to the file between the parent's copy and the child's was `D`:
//! a new change to `P` is at or above `T`, and a version holding it would have put a page
//! LSN at or above `T` in the file, which the child would have read (or read torn, and
//! copied). So the parent's copy of `P` — whatever the parent read while versions were
//! written, they were all `D` — is `D`, byte for byte: overlaying the child's pages on
//! the parent's data file gives exactly a data file a full backup taken at the child's
//! time could have copied, and the child's `CONTROL` and log recover it as they would
//! that one (the fuzzy-copy argument of `backup.rs`). By induction this holds for a
//! parent that is itself an incremental backup over its chain. Pages past the parent's
//! length are not in its copy, so they are always copied; the data file is cut to each
//! backup's own length as the chain is overlaid (compaction may have shortened it, and
//! a page cut off and written again carries a new page LSN, or reads as never written).
//! Taking `T` lower than needed only copies more pages.
//!
//! `data.incr`: a 48-byte header — magic `SLUICEIN`, format version (u32, 1), page size
//! (u32), the whole data file's length (u64), `T` (u64), the page count (u64), the
//! CRC32C of those 40 bytes (u32), zero (u32) — then one record per page in ascending
//! page order: the page id (u64), the CRC32C of the id's bytes and the page (u32), zero
//! (u32), the page's bytes. Every number little-endian. A record's own checksum covers a
//! page copied torn, whose page checksum fails.

use super::open::DATA;
use crate::backup_label::{incomplete, BackupLabel, BackupParent, INCREMENTAL_DATA, PARTIAL};
use crate::data_file::{file_error, read_pages, write_and_rename};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::CommitTime;
use crate::page;
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::Lsn;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"SLUICEIN";
const VERSION: u32 = 1;
const HEADER: u64 = 48;
const RECORD_HEAD: u64 = 16;
/// Pages read (and records written) a step.
const STEP_PAGES: u64 = 64;

/// A backup of a chain: its directory and its label.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    pub(crate) dir: PathBuf,
    pub(crate) label: BackupLabel,
}

/// The label of the complete backup in `dir` (a `what`): refused by name if it does
/// not exist, is incomplete or has no label.
pub(crate) fn read_backup(st: &dyn Storage, dir: &Path, what: &str) -> Result<BackupLabel> {
    let io = |e| file_error(what, dir, e);
    if !st.exists(dir).map_err(io)? {
        return Err(Error::InvalidArgument(format!(
            "{what} {} does not exist",
            dir.display()
        )));
    }
    sluice_storage::settle_dir(st, dir, true).map_err(io)?;
    if st.exists(&dir.join(PARTIAL)).map_err(io)? {
        return Err(incomplete(dir));
    }
    BackupLabel::read(st, dir)?.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{what} {} is not a backup: it has no backup label (`BACKUP`)",
            dir.display()
        ))
    })
}

fn described(l: &BackupLabel) -> String {
    format!(
        "the {} backup that ended at LSN {}, started {}",
        l.kind(),
        l.end_lsn,
        CommitTime(l.started_us)
    )
}

/// Checks that `ancestors` (oldest first) and then `newest` are a chain: a full backup,
/// then backups each taken against the one before it, all of one database. Returns the
/// links, oldest first, `newest` last.
pub(crate) fn chain(
    st: &dyn Storage,
    ancestors: &[PathBuf],
    (newest, label): (&Path, BackupLabel),
) -> Result<Vec<Link>> {
    let mut links = Vec::with_capacity(ancestors.len() + 1);
    for a in ancestors {
        let label = read_backup(st, a, "backup directory")?;
        links.push(Link {
            dir: a.clone(),
            label,
        });
    }
    links.push(Link {
        dir: newest.to_path_buf(),
        label,
    });
    let first = &links[0];
    if let Some(p) = first.label.parent {
        return Err(Error::InvalidArgument(if links.len() == 1 {
            format!(
                "{} is an incremental backup: restore it with its chain, oldest first — the full backup and each incremental backup up to its parent (the one that ended at LSN {}, started {})",
                first.dir.display(),
                p.end_lsn,
                CommitTime(p.started_us)
            )
        } else {
            format!(
                "the chain must start with a full backup, but {} is an incremental one (its parent ended at LSN {}, started {}): give that backup's chain before it",
                first.dir.display(),
                p.end_lsn,
                CommitTime(p.started_us)
            )
        }));
    }
    for w in links.windows(2) {
        let (before, link) = (&w[0], &w[1]);
        let Some(p) = link.label.parent else {
            return Err(Error::InvalidArgument(format!(
                "{} is a full backup: only the first backup of a chain is full (restore from {} alone, or put it first)",
                link.dir.display(),
                link.dir.display()
            )));
        };
        if link.label.database_id != before.label.database_id
            || link.label.page_size != before.label.page_size
        {
            return Err(Error::InvalidArgument(format!(
                "{} is a backup of database {:016x}, {} of database {:016x}: they are no chain",
                link.dir.display(),
                link.label.database_id,
                before.dir.display(),
                before.label.database_id
            )));
        }
        if !p.is(&before.label) {
            let missing = if p.end_lsn > before.label.end_lsn {
                " (a backup is missing between them, or they are out of order)"
            } else {
                " (they are out of order, or of other chains)"
            };
            return Err(Error::InvalidArgument(format!(
                "the chain is broken at {}: it was taken against the backup that ended at LSN {}, started {}, but the backup before it, {}, is {}{missing}",
                link.dir.display(),
                p.end_lsn,
                CommitTime(p.started_us),
                before.dir.display(),
                described(&before.label)
            )));
        }
    }
    Ok(links)
}

/// Whether the page `page` (id `id`), as read, must be copied: see the module docs.
fn changed(page: &[u8], id: u64, since: Lsn) -> bool {
    !page::checksum_ok(page)
        || page::validate(page, PageId(id)).is_err()
        || page::page_lsn(page) >= since.0
        || page::image_lsn(page) >= since.0
}

fn header(page_size: u32, data_bytes: u64, since: Lsn, pages: u64) -> [u8; HEADER as usize] {
    let mut h = [0u8; HEADER as usize];
    h[0..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&page_size.to_le_bytes());
    h[16..24].copy_from_slice(&data_bytes.to_le_bytes());
    h[24..32].copy_from_slice(&since.0.to_le_bytes());
    h[32..40].copy_from_slice(&pages.to_le_bytes());
    let crc = crc32c::crc32c(&h[..40]);
    h[40..44].copy_from_slice(&crc.to_le_bytes());
    h
}

fn record_crc(id: u64, page: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&id.to_le_bytes()), page)
}

/// Copies into `dest/data.incr` the pages of the data file `source` (its first
/// `data_len` bytes, as its pages read: zeros past its end) that changed since `parent`
/// (see the module docs); `progress` is
/// told the bytes read so far. Returns the pages copied.
pub(crate) fn copy_changed(
    st: &dyn Storage,
    source: &Path,
    dest: &Path,
    (page_size, data_len): (u32, u64),
    parent: &BackupLabel,
    progress: &mut dyn FnMut(u64),
) -> Result<u64> {
    let ps = u64::from(page_size);
    let since = BackupParent::of(parent).since;
    let src = st
        .open(source, OpenOptions::READ_ONLY)
        .map_err(|e| file_error("data file", source, e))?;
    let (tmp, path) = (
        dest.join(format!("{INCREMENTAL_DATA}.tmp")),
        dest.join(INCREMENTAL_DATA),
    );
    let io = |e| file_error("incremental data file", &path, e);
    write_and_rename(st, (&tmp, &path), io, |f| {
        let mut buf = vec![0u8; (STEP_PAGES * ps) as usize];
        let mut out = Vec::with_capacity((STEP_PAGES * (ps + RECORD_HEAD)) as usize);
        let (mut at, mut written, mut pages) = (0u64, HEADER, 0u64);
        while at < data_len {
            let n = (data_len - at).min(STEP_PAGES * ps);
            read_pages(&*src, &mut buf[..n as usize], at)
                .map_err(|e| file_error("data file", source, e))?;
            out.clear();
            for (i, p) in buf[..n as usize].chunks_exact(ps as usize).enumerate() {
                let id = at / ps + i as u64;
                if id * ps >= parent.data_bytes || changed(p, id, since) {
                    out.extend_from_slice(&id.to_le_bytes());
                    out.extend_from_slice(&record_crc(id, p).to_le_bytes());
                    out.extend_from_slice(&[0u8; 4]);
                    out.extend_from_slice(p);
                    pages += 1;
                }
            }
            if !out.is_empty() {
                f.write_at(&out, written).map_err(io)?;
                written += out.len() as u64;
            }
            at += n;
            progress(at);
        }
        f.write_at(&header(page_size, data_len, since, pages), 0)
            .map_err(io)?;
        Ok(pages)
    })
}

/// Makes `dest/data` of the chain `links` (oldest first): the full backup's data file,
/// then each incremental backup's pages over it, the file cut or extended to each one's
/// length. `tell` is told the bytes written so far. Returns the bytes written.
pub(crate) fn restore_data(
    st: &dyn Storage,
    links: &[Link],
    dest: &Path,
    tell: &mut dyn FnMut(u64),
) -> Result<u64> {
    let base = &links[0];
    let mut done = sluice_wal::copy_file(
        st,
        &base.dir.join(DATA),
        (st, dest, DATA),
        (Some(base.label.data_bytes), sluice_wal::COPY_STEP_BYTES),
        tell,
    )?;
    if links.len() == 1 {
        return Ok(done);
    }
    let data = dest.join(DATA);
    let io = |e| file_error("restored data file", &data, e);
    let f = st.open(&data, OpenOptions::EXISTING).map_err(io)?;
    for link in &links[1..] {
        let l = &link.label;
        let ps = u64::from(l.page_size);
        let path = link.dir.join(INCREMENTAL_DATA);
        let damaged = |why: String| {
            Error::Corruption(format!(
                "incremental data file {} is damaged: {why}",
                path.display()
            ))
        };
        let src = st
            .open(&path, OpenOptions::READ_ONLY)
            .map_err(|e| file_error("incremental data file", &path, e))?;
        let len = src
            .len()
            .map_err(|e| file_error("incremental data file", &path, e))?;
        let mut h = [0u8; HEADER as usize];
        if len < HEADER {
            return Err(damaged(format!(
                "it is {len} bytes, shorter than its header"
            )));
        }
        src.read_exact_at(&mut h, 0)
            .map_err(|e| file_error("incremental data file", &path, e))?;
        let since = l.parent.map_or(Lsn(0), |p| p.since);
        if h != header(l.page_size, l.data_bytes, since, l.pages_copied) {
            return Err(damaged(format!(
                "its header is not that of {} pages of {} bytes from a data file of {} bytes, as its label says",
                l.pages_copied, l.page_size, l.data_bytes
            )));
        }
        let record = RECORD_HEAD + ps;
        let want = l
            .pages_copied
            .checked_mul(record)
            .and_then(|b| b.checked_add(HEADER));
        if want != Some(len) {
            return Err(damaged(format!(
                "it is {len} bytes, not the {} of its {} pages",
                want.map_or("?".to_string(), |w| w.to_string()),
                l.pages_copied
            )));
        }
        f.set_len(l.data_bytes).map_err(io)?;
        let mut buf = vec![0u8; (STEP_PAGES * record) as usize];
        let (mut at, mut last) = (HEADER, None::<u64>);
        while at < len {
            let n = (len - at).min(STEP_PAGES * record);
            src.read_exact_at(&mut buf[..n as usize], at)
                .map_err(|e| file_error("incremental data file", &path, e))?;
            for r in buf[..n as usize].chunks_exact(record as usize) {
                let id = u64::from_le_bytes(r[0..8].try_into().expect("8 bytes"));
                let crc = u32::from_le_bytes(r[8..12].try_into().expect("4 bytes"));
                let p = &r[RECORD_HEAD as usize..];
                if crc != record_crc(id, p) {
                    return Err(damaged(format!(
                        "the record at byte {} fails its checksum",
                        at + (r.as_ptr() as u64 - buf.as_ptr() as u64)
                    )));
                }
                if last.is_some_and(|x| id <= x) || id.saturating_mul(ps) >= l.data_bytes {
                    return Err(damaged(format!(
                        "page {id} is out of order or past the data file's {} bytes",
                        l.data_bytes
                    )));
                }
                last = Some(id);
                f.write_at(p, id * ps).map_err(io)?;
            }
            at += n;
            done += n;
            tell(done);
        }
    }
    f.sync_data().map_err(io)?;
    Ok(done)
}
