//! The files that make a directory a partitioned database: the manifest in its root
//! (`PARTITIONS`) and a marker (`PARTITION`) in each partition's directory and in each
//! partition's log directory, which says whose partition it is.

use crate::coordination::PARTITION_MARKER;
use crate::data_file::{file_error, write_durably};
use crate::error::{Error, Result};
use sluice_storage::{OpenOptions, Storage};
use std::path::Path;

/// The manifest's name in the database's directory.
pub const MANIFEST: &str = "PARTITIONS";
const MANIFEST_TMP: &str = "PARTITIONS.tmp";
const MAGIC: &str = "sluice partitioned database";
/// Longest manifest or marker read (they are a few lines).
const MAX_LEN: u64 = 4096;

/// What the manifest records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// Chosen at random at creation; every marker repeats it.
    pub(crate) id: u64,
    /// Log managers (partitions), 1..=`MAX_PARTICIPANTS` + 1.
    pub(crate) log_managers: usize,
    /// False while the partitions are being created: an open finishes the creation.
    pub(crate) complete: bool,
}

impl Manifest {
    fn encode(&self) -> String {
        let body = format!(
            "{MAGIC}\nversion 1\nid {:016x}\nlog-managers {}\nstate {}\n",
            self.id,
            self.log_managers,
            if self.complete {
                "complete"
            } else {
                "creating"
            }
        );
        let crc = crc32c::crc32c(body.as_bytes());
        format!("{body}crc32c {crc:08x}\n")
    }

    fn decode(text: &str) -> std::result::Result<Manifest, String> {
        let (body, last) = text
            .trim_end_matches('\n')
            .rsplit_once('\n')
            .ok_or("too short")?;
        let crc = last
            .strip_prefix("crc32c ")
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or("no checksum line")?;
        let body = format!("{body}\n");
        if crc32c::crc32c(body.as_bytes()) != crc {
            return Err("checksum mismatch".into());
        }
        let mut lines = body.lines();
        if lines.next() != Some(MAGIC) {
            return Err("not a partitioned-database manifest".into());
        }
        if lines.next() != Some("version 1") {
            return Err("unknown version".into());
        }
        let mut field = |name: &str| {
            lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(' '))
                .map(str::to_string)
                .ok_or(format!("no `{name}` line"))
        };
        let id = u64::from_str_radix(&field("id")?, 16).map_err(|e| format!("id: {e}"))?;
        let log_managers: usize = field("log-managers")?
            .parse()
            .map_err(|e| format!("log-managers: {e}"))?;
        if !(1..=crate::partitioned::MAX_LOG_MANAGERS).contains(&log_managers) {
            return Err(format!("{log_managers} log managers"));
        }
        let complete = match field("state")?.as_str() {
            "complete" => true,
            "creating" => false,
            s => return Err(format!("unknown state `{s}`")),
        };
        Ok(Manifest {
            id,
            log_managers,
            complete,
        })
    }

    /// Reads the manifest in `dir`; `None` if there is none.
    pub(crate) fn read(storage: &dyn Storage, dir: &Path) -> Result<Option<Manifest>> {
        let path = dir.join(MANIFEST);
        let Some(text) = read_small(storage, &path, "manifest")? else {
            return Ok(None);
        };
        Manifest::decode(&text)
            .map(Some)
            .map_err(|e| Error::Corruption(format!("{}: {e}", path.display())))
    }

    /// Writes the manifest durably (a new file, synced, renamed over the old one).
    pub(crate) fn write(&self, storage: &dyn Storage, dir: &Path) -> Result<()> {
        write_durably(
            storage,
            dir,
            (MANIFEST_TMP, MANIFEST),
            self.encode().as_bytes(),
            "manifest",
            None,
        )
    }
}

/// The marker text of partition `index` of database `id`.
fn marker_text(id: u64, index: usize) -> String {
    format!("sluice partition {index} of {id:016x}\n")
}

/// Writes the marker of partition `index` of database `id` into `dir`.
pub(crate) fn write_marker(storage: &dyn Storage, dir: &Path, id: u64, index: usize) -> Result<()> {
    write_durably(
        storage,
        dir,
        ("PARTITION.tmp", PARTITION_MARKER),
        marker_text(id, index).as_bytes(),
        "partition marker",
        None,
    )
}

/// What a directory's marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Marker {
    /// No marker.
    Missing,
    /// Partition `index` of database `id`.
    Of { id: u64, index: usize },
    /// Something else.
    Unreadable(String),
}

/// Reads the marker in `dir`.
pub(crate) fn read_marker(storage: &dyn Storage, dir: &Path) -> Result<Marker> {
    let Some(text) = read_small(storage, &dir.join(PARTITION_MARKER), "partition marker")? else {
        return Ok(Marker::Missing);
    };
    let parsed = text
        .strip_prefix("sluice partition ")
        .and_then(|r| r.trim_end().split_once(" of "))
        .and_then(|(i, id)| Some((i.parse().ok()?, u64::from_str_radix(id, 16).ok()?)));
    Ok(match parsed {
        Some((index, id)) => Marker::Of { id, index },
        None => Marker::Unreadable(text.chars().take(80).collect()),
    })
}

/// Checks that `dir` (`what`: "directory" or "log directory") is partition `index` of
/// database `id`; the error names the directory and what it holds instead.
pub(crate) fn check_marker(
    storage: &dyn Storage,
    dir: &Path,
    what: &str,
    id: u64,
    index: usize,
) -> Result<()> {
    let io = |e| file_error("partition directory", dir, e);
    if !storage.exists(dir).map_err(io)? {
        return Err(Error::Corruption(format!(
            "partition {index}'s {what} {} is missing",
            dir.display()
        )));
    }
    match read_marker(storage, dir)? {
        Marker::Of { id: i, index: n } if i == id && n == index => Ok(()),
        Marker::Of { id: i, index: n } if i == id => Err(Error::Corruption(format!(
            "{} is partition {n}'s {what}, but it is given as partition {index}'s",
            dir.display()
        ))),
        Marker::Of { id: i, index: n } => Err(Error::Corruption(format!(
            "{} is the {what} of partition {n} of another partitioned database ({i:016x}, not {id:016x}): a foreign partition log",
            dir.display()
        ))),
        Marker::Missing => Err(Error::Corruption(format!(
            "partition {index}'s {what} {} has no {PARTITION_MARKER} marker: it is not this database's (missing, or replaced)",
            dir.display()
        ))),
        Marker::Unreadable(t) => Err(Error::Corruption(format!(
            "{}: unreadable {PARTITION_MARKER} marker {t:?}",
            dir.display()
        ))),
    }
}

fn read_small(storage: &dyn Storage, path: &Path, what: &str) -> Result<Option<String>> {
    let io = |e| file_error(what, path, e);
    if !storage.exists(path).map_err(io)? {
        return Ok(None);
    }
    let f = storage.open(path, OpenOptions::READ_ONLY).map_err(io)?;
    let len = f.len().map_err(io)?;
    if len > MAX_LEN {
        return Err(Error::Corruption(format!(
            "{}: {len} bytes, a {what} has at most {MAX_LEN}",
            path.display()
        )));
    }
    let mut b = vec![0u8; len as usize];
    f.read_exact_at(&mut b, 0).map_err(io)?;
    String::from_utf8(b)
        .map(Some)
        .map_err(|_| Error::Corruption(format!("{}: not text", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_round_trips_and_a_flipped_byte_is_caught() {
        let m = Manifest {
            id: 0xdead_beef,
            log_managers: 3,
            complete: true,
        };
        let t = m.encode();
        assert_eq!(Manifest::decode(&t), Ok(m));
        let bad = t.replace("log-managers 3", "log-managers 4");
        assert_eq!(Manifest::decode(&bad), Err("checksum mismatch".to_string()));
        assert!(Manifest::decode("").is_err());
        assert!(Manifest::decode("\n\n\n").is_err());
    }
}
