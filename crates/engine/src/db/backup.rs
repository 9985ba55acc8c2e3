//! Online backup: a copy of a running database that opens as the database was at the
//! backup's end LSN, and that a restore rolls forward from (`restore.rs`).
//!
//! The copy is *fuzzy*, as PostgreSQL's base backup is, and ARIES recovery makes it
//! consistent:
//! 1. A checkpoint, then — under the checkpoint lock — the control file it wrote is read
//!    and the log is pinned from its first segment on: no later checkpoint truncates
//!    what recovery from that control file reads, until the backup ends.
//! 2. The data file is copied while writers go on. A page may be copied while the pool
//!    writes it, and the copy may hold half of each version. That is the torn write the
//!    full-page-image rule already covers (`checkpoint/fuzzy.rs`): every page write after
//!    the checkpoint's step 3 is of a page whose full image lies in the log above the
//!    checkpoint's redo point, durable before the write; so recovery of the copy finds
//!    the image and restores the page before it applies anything to it. A page written
//!    before that is whole on disk before the copy starts. Pages added to the file after
//!    the copy read its length are new pages, whose images are in the log too. The copy
//!    reads the file as the pool reads pages (`data_file::read_pages`: zeros past its
//!    end), up to its length rounded up to a whole page: a file can end inside a valid
//!    page after a power loss, and that page is the database's as much as any other.
//! 3. The log is made durable, and its end `E` read: every page the copy read was written
//!    under the write-ahead rule, so it holds no change at or past `E`. The log is copied
//!    from the pin to `E` (`Log::copy_segments`: the last segment ends exactly at `E`).
//! 4. The control file read in step 1, then the label (`backup_label`), then the
//!    interrupted-backup marker is removed.
//!
//! Recovery of the copy starts at the checkpoint, redoes up to `E` and rolls back what
//! was in flight there: the backup shows exactly the commits whose records lie below `E`.
//! Compaction (which shortens the data file) waits while a backup runs.
//!
//! An incremental backup (`Database::backup_incremental_to`) is the same but for step 2:
//! only the pages changed since its parent backup are copied (`incremental.rs`, which
//! argues why the others are right in the parent's copy).

use super::handle::Database;
use super::incremental;
use super::open::DATA;
use crate::backup_label::{BackupLabel, BackupParent, PARTIAL};
use crate::control::Control;
use crate::data_file::{file_error, read_pages, write_and_rename, write_durably};
use crate::error::{Error, Result};
use crate::recovery::redo_rule;
use sluice_storage::Storage;
use sluice_wal::Lsn;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where a backup stands, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupProgress {
    /// Bytes copied so far (data file, then log).
    pub copied_bytes: u64,
    /// Bytes to copy: the data file's length and the log written so far (the log grows
    /// while the data file is copied, so this can grow too).
    pub total_bytes: u64,
}

/// The log directory's name in a backup (and in a database restored from one).
pub(crate) const LOG: &str = "log";

pub(crate) fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

impl Database {
    /// Takes an online backup into `dest` (a directory that does not exist yet or is
    /// empty, on the database's storage) while transactions go on, and returns its label:
    /// the backup shows exactly the commits durable at [`BackupLabel::end_lsn`]. See
    /// [`Database::backup_to_with`].
    pub fn backup_to(&self, dest: impl AsRef<Path>) -> Result<BackupLabel> {
        self.backup_to_with(dest, &mut |_| {})
    }

    /// [`Database::backup_to`], telling `progress` how far the copy is after each step.
    ///
    /// No writer waits for it: it runs one checkpoint, then copies the data file and the
    /// log while transactions go on (the module docs of `db/backup.rs` say why the fuzzy
    /// copy is consistent once recovered). Log truncation keeps what the backup still
    /// copies; compaction waits for it. The backup directory holds `CONTROL`, `data`,
    /// `log/` and the label `BACKUP`; `BACKUP.partial` is there until the backup is
    /// complete, so an interrupted backup is refused by every open and by a restore. A
    /// complete one opens read-only (showing its end state) and is refused read-write: it
    /// is restored instead ([`Database::restore`]), which can roll it forward with an
    /// archive of the log.
    ///
    /// A read-only database is backed up as it is on disk (no checkpoint). A partition of
    /// a partitioned database cannot be backed up on its own: a consistent cut needs every
    /// partition's log ([`Error::InvalidArgument`]).
    pub fn backup_to_with(
        &self,
        dest: impl AsRef<Path>,
        progress: &mut dyn FnMut(BackupProgress),
    ) -> Result<BackupLabel> {
        self.backup(dest.as_ref(), None, progress)
    }

    /// Takes an incremental backup into `dest` against the backup in `parent` (a
    /// complete backup of this database, full or incremental): as
    /// [`Database::backup_to`], but of the data file only the pages changed since the
    /// parent are copied, into `data.incr` ([`BackupLabel::pages_copied`] says how
    /// many). See [`Database::backup_incremental_to_with`].
    pub fn backup_incremental_to(
        &self,
        dest: impl AsRef<Path>,
        parent: impl AsRef<Path>,
    ) -> Result<BackupLabel> {
        self.backup_incremental_to_with(dest, parent, &mut |_| {})
    }

    /// [`Database::backup_incremental_to`], telling `progress` how far the copy is.
    ///
    /// A page is copied when, as read, its page LSN or image LSN is at or above the LSN
    /// its parent's recovery redoes from ([`BackupParent::since`]), when it fails its checksum
    /// or structural check, or when it lies past the parent's data file; every other page
    /// is byte for byte what the parent holds (the module docs of `db/incremental.rs`
    /// argue it). The label names the parent ([`BackupLabel::parent`]). An incremental
    /// backup has no whole data file: it does not open, and it is restored with its
    /// chain ([`Restore::ancestors`](super::Restore::ancestors)): the full backup, then
    /// each incremental one in the order they were taken.
    ///
    /// Refused ([`Error::InvalidArgument`], naming it) before anything is written: a
    /// `parent` that is not a complete backup, one of another database or of another
    /// log, or one newer than this database's checkpoint or log.
    pub fn backup_incremental_to_with(
        &self,
        dest: impl AsRef<Path>,
        parent: impl AsRef<Path>,
        progress: &mut dyn FnMut(BackupProgress),
    ) -> Result<BackupLabel> {
        self.backup(dest.as_ref(), Some(parent.as_ref()), progress)
    }

    /// The parent backup's label, checked against this database.
    fn parent_label(&self, parent: &Path) -> Result<BackupLabel> {
        let inner = &self.inner;
        let storage = &*inner.storage;
        let label = incremental::read_backup(storage, parent, "parent backup")?;
        let refuse = |why: String| {
            Err(Error::InvalidArgument(format!(
                "parent backup {} {why}",
                parent.display()
            )))
        };
        if label.database_id != inner.database_id {
            return refuse(format!(
                "is of another database ({:016x}; this one is {:016x})",
                label.database_id, inner.database_id
            ));
        }
        if label.page_size as usize != inner.store.page_size {
            return refuse(format!(
                "has pages of {} bytes, this database of {}",
                label.page_size, inner.store.page_size
            ));
        }
        let log = &inner.store.log;
        if let (Some(theirs), Some(ours)) = (label.log_id, log.id()?) {
            if theirs != ours {
                return refuse(format!(
                    "was taken from log {theirs:016x}, this database's log is {ours:016x}: it is of another copy of this database (a restored one?)"
                ));
            }
        }
        let (durable, checkpoint) = (
            log.durable_lsn(),
            Lsn(inner
                .checkpoints
                .last_begin
                .load(std::sync::atomic::Ordering::Acquire)),
        );
        if label.end_lsn > durable || label.log_start > checkpoint {
            return refuse(format!(
                "is newer than this database: it ends at LSN {} and its log starts at {}, this database's log ends at {durable} and its checkpoint is at {checkpoint} (a backup of a later state, or of another copy of the database)",
                label.end_lsn, label.log_start
            ));
        }
        Ok(label)
    }

    fn backup(
        &self,
        dest: &Path,
        parent: Option<&Path>,
        progress: &mut dyn FnMut(BackupProgress),
    ) -> Result<BackupLabel> {
        let inner = &self.inner;
        inner.check()?;
        if inner.hooks.partition {
            return Err(Error::InvalidArgument(
                "a partition of a partitioned database cannot be backed up on its own".into(),
            ));
        }
        let storage = &*inner.storage;
        let _span = tracing::info_span!("backup", dest = %dest.display()).entered();
        // The log may live on a storage of its own (`open_with_log`): its directory is
        // looked up there.
        let log_storage = inner.store.log.storage();
        super::refuse_same_dirs(&[
            ("database directory".into(), storage, inner.dir.clone()),
            ("log directory".into(), &*log_storage, inner.log_dir.clone()),
            ("backup directory".into(), storage, dest.to_path_buf()),
        ])?;
        if let Some(p) = parent {
            super::refuse_same_dirs(&[
                ("parent backup".into(), storage, p.to_path_buf()),
                ("backup directory".into(), storage, dest.to_path_buf()),
            ])?;
        }
        let parent = parent.map(|p| self.parent_label(p)).transpose()?;
        prepare_empty_dir(storage, dest, "backup directory")?;
        let started_us = now_us();
        write_durably(
            storage,
            dest,
            (&format!("{PARTIAL}.tmp"), PARTIAL),
            b"",
            "backup marker",
            None,
        )?;
        // The data file must not shrink under the copy.
        let _no_compaction = inner.store.compacting.lock();
        let log = &inner.store.log;

        // 1. A checkpoint, and the log recovery from it reads, pinned.
        let read_only = inner.options.read_only;
        if !read_only {
            inner.checkpoint_now()?;
        }
        let (control, _pin, log_start) = {
            let _held = inner.checkpoints.lock.lock();
            let control = if read_only {
                Control::read_only(storage, &inner.dir)?
            } else {
                Control::read(storage, &inner.dir)?
            };
            let control = control.ok_or_else(|| {
                Error::Corruption(format!(
                    "the control file of {} vanished during a backup",
                    inner.dir.display()
                ))
            })?;
            let start = log.start_lsn();
            // Read-only: nothing truncates.
            let pin = (!read_only).then(|| inner.checkpoints.pin_log(start));
            (control, pin, start)
        };
        let Some(checkpoint) = control.checkpoint else {
            return Err(Error::InvalidArgument(format!(
                "the database in {} has no checkpoint yet to back up from",
                inner.dir.display()
            )));
        };

        // Where recovery of this backup redoes from (what a child backup copies changes
        // since): the checkpoint's end record is in the pinned log.
        let redo_from = redo_start(log, checkpoint)?;

        // 2. The data file, while writers go on, as its pages read (`read_pages`): whole
        // pages, the last one included where the file ends inside it. A power loss leaves
        // it so when a page written past the old end reached the disk only in its first
        // sectors; if the rest held zeros (an empty node) the page reads whole and valid,
        // the meta page counts it, and it stays so until it changes. A copy cut to the
        // last whole page left it out, and the backup failed its checks on it (the
        // swarm's seed 7154897; `tests/a_backup_keeps_a_last_page_the_data_file_ends_inside.rs`).
        let source = inner.dir.join(DATA);
        let data_len = {
            let f = storage
                .open(&source, sluice_storage::OpenOptions::READ_ONLY)
                .map_err(|e| file_error("data file", &source, e))?;
            f.len().map_err(|e| file_error("data file", &source, e))?
        };
        let data_len = data_len.next_multiple_of(u64::from(control.page_size));
        if data_len < control.data_len {
            return Err(Error::Corruption(format!(
                "data file {} is {data_len} bytes, shorter than the {} its control file records",
                source.display(),
                control.data_len
            )));
        }
        let log_estimate = |log_start: Lsn| log.durable_lsn().0.saturating_sub(log_start.0);
        let mut total = data_len + log_estimate(log_start);
        let mut tell = |n| {
            progress(BackupProgress {
                copied_bytes: n,
                total_bytes: total,
            })
        };
        let pages_copied = match &parent {
            None => {
                // 64 pages a step: a progress bar moves, and a step is short.
                let step = 64 * u64::from(control.page_size);
                copy_data(storage, &source, dest, (data_len, step), &mut tell)?;
                data_len / u64::from(control.page_size)
            }
            Some(p) => incremental::copy_changed(
                storage,
                &source,
                dest,
                (control.page_size, data_len),
                p,
                &mut tell,
            )?,
        };

        // 3. The log, from the pin to its durable end now.
        let end = if read_only {
            log.durable_lsn()
        } else {
            log.sync()?
        };
        total = data_len + (end.0 - log_start.0);
        let log_dir = dest.join(LOG);
        storage
            .create_dir_all(&log_dir)
            .map_err(|e| file_error("backup log directory", &log_dir, e))?;
        log.copy_segments(storage, &log_dir, (log_start, end), &mut |n| {
            progress(BackupProgress {
                copied_bytes: data_len + n,
                total_bytes: total,
            })
        })?;

        // 4. The control file, the label, and the marker's removal.
        control.write(storage, dest)?;
        let label = BackupLabel {
            database_id: control.database_id,
            page_size: control.page_size,
            checkpoint: checkpoint.begin,
            log_start,
            end_lsn: end,
            data_bytes: data_len,
            started_us,
            ended_us: now_us(),
            log_id: log.id()?,
            redo_from: Some(redo_from),
            parent: parent.as_ref().map(BackupParent::of),
            pages_copied,
        };
        label.write(storage, dest)?;
        let marker = dest.join(PARTIAL);
        storage
            .remove(&marker)
            .map_err(|e| file_error("backup marker", &marker, e))?;
        storage
            .sync_dir(dest)
            .map_err(|e| file_error("backup directory", dest, e))?;
        tracing::info!(end = %end, data_bytes = data_len, pages_copied, kind = label.kind(), "backup complete");
        Ok(label)
    }
}

/// Copies the first `len` bytes of the data file `source`, as its pages read
/// (`read_pages`: zeros past its end), into `dest/data`: written as `data.tmp`, synced
/// and renamed (the backup syncs `dest` at its end), `step` bytes at a time, `progress`
/// told the bytes copied after each step.
fn copy_data(
    storage: &dyn Storage,
    source: &Path,
    dest: &Path,
    (len, step): (u64, u64),
    progress: &mut dyn FnMut(u64),
) -> Result<()> {
    let src = storage
        .open(source, sluice_storage::OpenOptions::READ_ONLY)
        .map_err(|e| file_error("data file", source, e))?;
    let (tmp, path) = (dest.join(format!("{DATA}.tmp")), dest.join(DATA));
    let io = |e| file_error("backup data file", &path, e);
    write_and_rename(storage, (&tmp, &path), io, |f| {
        let mut buf = vec![0u8; step.clamp(1, len.max(1)) as usize];
        let mut at = 0u64;
        while at < len {
            let n = (len - at).min(buf.len() as u64) as usize;
            read_pages(&*src, &mut buf[..n], at).map_err(|e| file_error("data file", source, e))?;
            f.write_at(&buf[..n], at).map_err(io)?;
            at += n as u64;
            progress(at);
        }
        Ok(())
    })
}

/// The lowest LSN recovery from `checkpoint` redoes from: its redo point, or the recovery
/// LSN of a page its end record lists dirty, if lower.
fn redo_start(
    log: &crate::log_sink::LogSink,
    checkpoint: crate::control::Checkpoint,
) -> Result<Lsn> {
    let d = redo_rule::end_record(checkpoint, log.read_from(checkpoint.end)?.next())?;
    Ok(redo_rule::redo_start(
        checkpoint.begin,
        d.dirty.iter().map(|p| p.1),
    ))
}

/// Makes `dir` exist and checks that it is empty (a backup or restore never writes over
/// files it did not make).
pub(crate) fn prepare_empty_dir(storage: &dyn Storage, dir: &Path, what: &str) -> Result<()> {
    storage
        .create_dir_all(dir)
        .map_err(|e| file_error(what, dir, e))?;
    let names = storage.list(dir).map_err(|e| file_error(what, dir, e))?;
    if let Some(name) = names.first() {
        return Err(Error::InvalidArgument(format!(
            "{what} {} is not empty (it holds `{name}`{}): give a new or empty directory",
            dir.display(),
            if names.len() > 1 {
                format!(" and {} more", names.len() - 1)
            } else {
                String::new()
            }
        )));
    }
    Ok(())
}
