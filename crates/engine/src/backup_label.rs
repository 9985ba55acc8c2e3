//! The backup label: what makes a directory a complete backup, and what it holds.
//!
//! A backup directory (`Database::backup_to`) holds what a database directory holds —
//! `CONTROL`, `data`, `log/` — plus `BACKUP`, this label. The order of a backup is:
//! `BACKUP.partial` first (an empty marker, durable before anything else is written),
//! then the data file, the log, `CONTROL`, the label, and last the marker's removal. So
//! a directory with the marker is an interrupted backup, whatever else it holds, and one
//! with the label and without the marker is complete. Every open refuses the first by
//! name; a read-write open refuses the second too, because recovery there would write
//! past the backup's end LSN and it could no longer be rolled forward from an archive
//! (a read-only open shows it as of its end LSN; `sluice restore` makes a database of it).
//!
//! The label is text, one `key value` per line, the last line `crc32c` of everything
//! before it:
//!
//! ```text
//! sluice-backup 1
//! database_id 8f3a…            (hex; the source database's id from CONTROL)
//! page_size 8192
//! checkpoint 1048576           (the redo point of the checkpoint CONTROL names)
//! log_start 0                  (the first LSN of the copied log)
//! end_lsn 2097152              (the copied log ends here: the backup shows exactly the
//!                               commits whose records lie below it)
//! data_bytes 819200            (the copied data file's length)
//! started_us 1796000000000000  (wall clock, µs since the Unix epoch)
//! ended_us 1796000000400000
//! log_id 5d1c…                 (hex, or `-`: the id of the source's log, which its
//!                               archive names; a log gets one when first archived)
//! redo_from 1040000            (where recovery of the backup redoes from: the lowest
//!                               of the checkpoint and its dirty pages' recovery LSNs;
//!                               a label without it, from before incremental backups,
//!                               counts `log_start`)
//! crc32c 1a2b3c4d
//! ```
//!
//! An incremental backup (`Database::backup_incremental_to`, `db/incremental.rs`) holds
//! `data.incr` instead of `data`, and its label has six more lines after `redo_from`, which
//! name its parent backup (any other backup of the same database, full or incremental):
//!
//! ```text
//! kind incremental
//! parent_started_us 1795990000000000 (the parent's label's `started_us`)
//! parent_end_lsn 1900000               (its `end_lsn`)
//! since_lsn 1048576                    (pages whose LSN is below it were not copied:
//!                                       the parent's `redo_from`)
//! parent_crc32c 0badcafe               (its label's `crc32c`: another parent is told
//!                                       apart even with the same times)
//! pages_copied 37                      (the records in `data.incr`)
//! ```
//!
//! A label without these lines (every label before incremental backups, and every full
//! backup's) is a full backup's. An older sluice refuses an incremental label by name
//! ("lines after `log_id`"), rather than taking it for a full backup without a data file.

use crate::data_file::{file_error, write_durably};
use crate::error::{Error, Result};
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::Lsn;
use std::path::Path;

/// The label's name in a backup directory.
pub(crate) const LABEL: &str = "BACKUP";
/// Its temporary name while it is written.
const LABEL_TMP: &str = "BACKUP.tmp";
/// Present while a backup is being taken; removed last.
pub(crate) const PARTIAL: &str = "BACKUP.partial";
const FORMAT: &str = "sluice-backup 1";
/// Labels are a few hundred bytes; anything longer is not one.
const MAX_LABEL_BYTES: u64 = 4096;
/// The pages file of an incremental backup (`db/incremental.rs`): a backup directory
/// holding it has no whole data file.
pub(crate) const INCREMENTAL_DATA: &str = "data.incr";

/// Which backup an incremental backup was taken against ([`BackupLabel::parent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupParent {
    /// The parent's [`BackupLabel::started_us`].
    pub started_us: u64,
    /// The parent's [`BackupLabel::end_lsn`].
    pub end_lsn: Lsn,
    /// Pages whose on-disk page LSN and image LSN were below this LSN (and that checked
    /// clean) were not copied: the parent's [`BackupLabel::redo_from`] (where its
    /// recovery redoes from), or its [`BackupLabel::log_start`] if its label predates it.
    pub since: Lsn,
    /// The CRC32C of the parent's label ([`BackupLabel::crc`]).
    pub label_crc: u32,
}

impl BackupParent {
    /// Whether `label` is this parent.
    pub fn is(&self, label: &BackupLabel) -> bool {
        *self == BackupParent::of(label)
    }

    /// The identity of the backup `label` describes, as a child names it.
    pub fn of(label: &BackupLabel) -> BackupParent {
        BackupParent {
            started_us: label.started_us,
            end_lsn: label.end_lsn,
            since: label.redo_from.unwrap_or(label.log_start),
            label_crc: label.crc(),
        }
    }
}

/// What a complete backup holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupLabel {
    /// The source database's id (from its control file).
    pub database_id: u64,
    /// Its page size.
    pub page_size: u32,
    /// The redo point of the checkpoint the backup's control file names.
    pub checkpoint: Lsn,
    /// The first LSN of the copied log (what recovery from that checkpoint reads).
    pub log_start: Lsn,
    /// Where the copied log ends: the backup shows exactly the commits below it.
    pub end_lsn: Lsn,
    /// The copied data file's length in bytes.
    pub data_bytes: u64,
    /// When the backup started, µs since the Unix epoch.
    pub started_us: u64,
    /// When it ended, µs since the Unix epoch.
    pub ended_us: u64,
    /// The id of the source's log, if it had one (`sluice_wal::Log::id`: a log gets one
    /// when it is first archived). A restore rolls the backup forward only from an
    /// archive that names this log.
    pub log_id: Option<u64>,
    /// Where recovery of the backup redoes from: the lowest of its checkpoint's redo
    /// point and the recovery LSNs of the pages that checkpoint found dirty (`None` in a
    /// label written before incremental backups). Every change below it was in the data
    /// file when the copy started.
    pub redo_from: Option<Lsn>,
    /// `None` for a full backup; for an incremental one, the backup it was taken
    /// against, which a restore needs (with that one's own parents, down to a full one).
    pub parent: Option<BackupParent>,
    /// The data pages the backup holds: all of them (`data_bytes / page_size`) for a
    /// full backup, the changed ones for an incremental backup.
    pub pages_copied: u64,
}

impl BackupLabel {
    /// `"full"` or `"incremental"`.
    pub fn kind(&self) -> &'static str {
        if self.parent.is_some() {
            "incremental"
        } else {
            "full"
        }
    }

    /// The CRC32C of the label's text (its last line): what a child backup names its
    /// parent by.
    pub fn crc(&self) -> u32 {
        crc32c::crc32c(self.body().as_bytes())
    }

    pub(crate) fn encode(&self) -> String {
        let body = self.body();
        let crc = crc32c::crc32c(body.as_bytes());
        format!("{body}crc32c {crc:08x}\n")
    }

    fn body(&self) -> String {
        let mut body = format!(
            "{FORMAT}\ndatabase_id {:016x}\npage_size {}\ncheckpoint {}\nlog_start {}\nend_lsn {}\ndata_bytes {}\nstarted_us {}\nended_us {}\nlog_id {}\n",
            self.database_id,
            self.page_size,
            self.checkpoint.0,
            self.log_start.0,
            self.end_lsn.0,
            self.data_bytes,
            self.started_us,
            self.ended_us,
            self.log_id
                .map_or_else(|| "-".to_string(), |id| format!("{id:016x}"))
        );
        if let Some(r) = self.redo_from {
            body.push_str(&format!("redo_from {}\n", r.0));
        }
        if let Some(p) = &self.parent {
            body.push_str(&format!(
                "kind incremental\nparent_started_us {}\nparent_end_lsn {}\nsince_lsn {}\nparent_crc32c {:08x}\npages_copied {}\n",
                p.started_us, p.end_lsn.0, p.since.0, p.label_crc, self.pages_copied
            ));
        }
        body
    }

    /// Parses a label; never panics, whatever the bytes.
    pub(crate) fn decode(b: &[u8]) -> std::result::Result<BackupLabel, String> {
        let text = std::str::from_utf8(b).map_err(|_| "not text".to_string())?;
        let Some(at) = text.rfind("crc32c ") else {
            return Err("no checksum line".into());
        };
        let (body, crc_line) = text.split_at(at);
        let digits = crc_line["crc32c ".len()..]
            .strip_suffix('\n')
            .filter(|d| d.len() == 8)
            .ok_or_else(|| "bad checksum line".to_string())?;
        let crc = u32::from_str_radix(digits, 16).map_err(|_| "bad checksum line".to_string())?;
        if crc != crc32c::crc32c(body.as_bytes()) {
            return Err("checksum mismatch".into());
        }
        let mut lines = body.lines();
        if lines.next() != Some(FORMAT) {
            return Err(format!("not a `{FORMAT}` label"));
        }
        let mut text_of = |key: &str| -> std::result::Result<String, String> {
            let line = lines.next().ok_or_else(|| format!("no `{key}` line"))?;
            line.strip_prefix(key)
                .and_then(|v| v.strip_prefix(' '))
                .map(str::to_string)
                .ok_or_else(|| format!("expected `{key}`, found `{line}`"))
        };
        let number = |key: &str, value: &str, radix: u32| {
            u64::from_str_radix(value, radix).map_err(|_| format!("bad `{key}` value `{value}`"))
        };
        let mut field = |key: &str| -> std::result::Result<u64, String> {
            let value = text_of(key)?;
            number(key, &value, if key == "database_id" { 16 } else { 10 })
        };
        let label = BackupLabel {
            database_id: field("database_id")?,
            page_size: u32::try_from(field("page_size")?).map_err(|_| "bad page size")?,
            checkpoint: Lsn(field("checkpoint")?),
            log_start: Lsn(field("log_start")?),
            end_lsn: Lsn(field("end_lsn")?),
            data_bytes: field("data_bytes")?,
            started_us: field("started_us")?,
            ended_us: field("ended_us")?,
            log_id: None,
            redo_from: None,
            parent: None,
            pages_copied: 0,
        };
        let mut label = BackupLabel {
            log_id: match text_of("log_id")?.as_str() {
                "-" => None,
                id => Some(number("log_id", id, 16)?),
            },
            pages_copied: label.data_bytes / u64::from(label.page_size.max(1)),
            ..label
        };
        let mut next = lines.next();
        if let Some(r) = next.and_then(|l| l.strip_prefix("redo_from ")) {
            label.redo_from = Some(Lsn(number("redo_from", r, 10)?));
            next = lines.next();
        }
        match next {
            None => {}
            Some("kind incremental") => {
                let mut field = |key: &str, radix: u32| -> std::result::Result<u64, String> {
                    let line = lines.next().ok_or_else(|| format!("no `{key}` line"))?;
                    let value = line
                        .strip_prefix(key)
                        .and_then(|v| v.strip_prefix(' '))
                        .ok_or_else(|| format!("expected `{key}`, found `{line}`"))?;
                    number(key, value, radix)
                };
                label.parent = Some(BackupParent {
                    started_us: field("parent_started_us", 10)?,
                    end_lsn: Lsn(field("parent_end_lsn", 10)?),
                    since: Lsn(field("since_lsn", 10)?),
                    label_crc: u32::try_from(field("parent_crc32c", 16)?)
                        .map_err(|_| "bad `parent_crc32c` value")?,
                });
                label.pages_copied = field("pages_copied", 10)?;
                if lines.next().is_some() {
                    return Err("lines after `pages_copied`".into());
                }
            }
            Some(line) => return Err(format!("lines after `log_id` (`{line}`)")),
        }
        if let Some(r) = label.redo_from {
            if !(label.log_start <= r && r <= label.checkpoint) {
                return Err(format!(
                    "redo point {r} is not between log start {} and checkpoint {}",
                    label.log_start, label.checkpoint
                ));
            }
        }
        if let Some(p) = &label.parent {
            if p.since > label.checkpoint || p.end_lsn > label.end_lsn {
                return Err(format!(
                    "the parent (since LSN {}, end {}) is not older than the backup (log start {}, end {})",
                    p.since, p.end_lsn, label.log_start, label.end_lsn
                ));
            }
            let whole = label.data_bytes / u64::from(label.page_size.max(1));
            if label.pages_copied > whole {
                return Err(format!(
                    "{} pages copied of a data file of {whole}",
                    label.pages_copied
                ));
            }
        }
        if !(label.log_start <= label.checkpoint && label.checkpoint < label.end_lsn) {
            return Err(format!(
                "log start {}, checkpoint {} and end {} are out of order",
                label.log_start, label.checkpoint, label.end_lsn
            ));
        }
        Ok(label)
    }

    /// Writes the label durably into `dir` (temp, sync, rename, directory sync).
    pub(crate) fn write(&self, storage: &dyn Storage, dir: &Path) -> Result<()> {
        write_durably(
            storage,
            dir,
            (LABEL_TMP, LABEL),
            self.encode().as_bytes(),
            "backup label",
            None,
        )
    }

    /// Reads the label of the backup in `dir`: `Ok(None)` if `dir` holds no label.
    pub(crate) fn read(storage: &dyn Storage, dir: &Path) -> Result<Option<BackupLabel>> {
        let path = dir.join(LABEL);
        let io = |e| file_error("backup label", &path, e);
        if !storage.exists(&path).map_err(io)? {
            return Ok(None);
        }
        let f = storage.open(&path, OpenOptions::READ_ONLY).map_err(io)?;
        let len = f.len().map_err(io)?;
        if len > MAX_LABEL_BYTES {
            return Err(Error::Corruption(format!(
                "backup label {} is {len} bytes: not a label",
                path.display()
            )));
        }
        let mut b = vec![0u8; len as usize];
        f.read_exact_at(&mut b, 0).map_err(io)?;
        BackupLabel::decode(&b)
            .map(Some)
            .map_err(|e| Error::Corruption(format!("backup label {}: {e}", path.display())))
    }
}

/// Refuses to open an interrupted backup (any open) or a complete one read-write (see
/// the module docs). Called by every open before it changes anything.
pub(crate) fn refuse_backup(storage: &dyn Storage, dir: &Path, read_only: bool) -> Result<()> {
    let io = |e| file_error("database directory", dir, e);
    if !storage.exists(dir).map_err(io)? {
        return Ok(());
    }
    if storage.exists(&dir.join(PARTIAL)).map_err(io)? {
        return Err(incomplete(dir));
    }
    if storage.exists(&dir.join(INCREMENTAL_DATA)).map_err(io)? {
        return Err(Error::InvalidArgument(format!(
            "{} is an incremental backup: it holds only the pages changed since its parent, not a whole data file, so it opens only restored with its chain (`sluice restore --from FULL [--from INCREMENTAL…] --from {} --to-end DEST`)",
            dir.display(),
            dir.display()
        )));
    }
    if !read_only && storage.exists(&dir.join(LABEL)).map_err(io)? {
        return Err(Error::InvalidArgument(format!(
            "{} is a backup: opening it read-write would write past its end and it could no longer be restored from; open it read-only, or restore it into a new directory (`sluice restore --from {} --to-end DEST`)",
            dir.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// The error for an interrupted backup in `dir`.
pub(crate) fn incomplete(dir: &Path) -> Error {
    Error::InvalidArgument(format!(
        "{} is an incomplete backup ({PARTIAL} is there: the backup was interrupted); take a new one",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> BackupLabel {
        BackupLabel {
            database_id: 0x8f3a_0000_1234_abcd,
            page_size: 8192,
            checkpoint: Lsn(1 << 20),
            log_start: Lsn(0),
            end_lsn: Lsn(2 << 20),
            data_bytes: 819_200,
            started_us: 1_796_000_000_000_000,
            ended_us: 1_796_000_000_400_000,
            log_id: Some(0x5d1c_0000_0000_0001),
            redo_from: Some(Lsn(1 << 19)),
            parent: None,
            pages_copied: 100,
        }
    }

    fn incremental() -> BackupLabel {
        BackupLabel {
            parent: Some(BackupParent {
                started_us: 1_795_000_000_000_000,
                end_lsn: Lsn(1 << 19),
                since: Lsn(0),
                label_crc: 0x0bad_cafe,
            }),
            pages_copied: 7,
            ..sample()
        }
    }

    #[test]
    fn an_incremental_label_round_trips_and_a_full_one_has_no_new_lines() {
        let l = incremental();
        assert_eq!(BackupLabel::decode(l.encode().as_bytes()), Ok(l));
        assert_eq!(l.kind(), "incremental");
        assert!(!sample().encode().contains("kind"));
        assert_eq!(sample().kind(), "full");
        let text = l.encode().into_bytes();
        for i in 0..text.len() {
            let mut b = text.clone();
            b[i] ^= 0x01;
            assert!(BackupLabel::decode(&b).is_err(), "byte {i} flipped");
        }
    }

    #[test]
    fn a_parent_is_named_by_its_label() {
        let p = sample();
        let link = BackupParent::of(&p);
        assert!(link.is(&p));
        let other = BackupLabel {
            ended_us: p.ended_us + 1,
            ..p
        };
        assert!(
            !link.is(&other),
            "another label, same times: told apart by its CRC"
        );
    }

    #[test]
    fn a_label_round_trips() {
        let l = sample();
        assert_eq!(BackupLabel::decode(l.encode().as_bytes()), Ok(l));
    }

    #[test]
    fn an_old_label_without_a_redo_point_round_trips() {
        let l = BackupLabel {
            redo_from: None,
            ..sample()
        };
        assert_eq!(BackupLabel::decode(l.encode().as_bytes()), Ok(l));
    }

    #[test]
    fn a_label_without_a_log_id_round_trips() {
        let l = BackupLabel {
            log_id: None,
            ..sample()
        };
        assert_eq!(BackupLabel::decode(l.encode().as_bytes()), Ok(l));
    }

    #[test]
    fn a_changed_byte_is_refused() {
        let text = sample().encode().into_bytes();
        for i in 0..text.len() {
            let mut b = text.clone();
            b[i] ^= 0x01;
            assert!(BackupLabel::decode(&b).is_err(), "byte {i} flipped");
        }
    }

    #[test]
    fn an_end_at_or_below_the_checkpoint_is_refused() {
        let mut l = sample();
        l.end_lsn = l.checkpoint;
        assert!(BackupLabel::decode(l.encode().as_bytes()).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = BackupLabel::decode(&b);
        }
    }
}
