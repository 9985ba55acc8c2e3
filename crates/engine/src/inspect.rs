//! Read-only inspection of a database directory for operator tools (`sluice log dump`).
//!
//! The log's record format is internal to the engine; [`dump_log`] decodes it into
//! plain [`LogEntry`] values — numbers and short strings — that a tool can print without
//! depending on that format. Nothing here changes anything on disk.

use crate::error::{Error, Result};
use crate::log_record::{Change, CommitTime, PageOp, Record};
use crate::page::StoredValue;
use sluice_storage::{OsStorage, Storage};
use sluice_wal::{LogOptions, Lsn, WalError};
use std::path::Path;
use std::sync::Arc;

/// The most key bytes a [`LogEntry::summary`] shows (escaped) before it cuts the key
/// short with `…`.
pub const KEY_PREVIEW: usize = 32;

/// One record of the write-ahead log, decoded for display (one line of `sluice log dump`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// The record's LSN (the byte position of its frame in the log).
    pub lsn: u64,
    /// Bytes the record's frame takes in the log (the next record's LSN minus this one).
    pub len: u64,
    /// The record's payload bytes.
    pub payload_len: u64,
    /// The transaction, for `update`, `clr`, `commit` and `end` records.
    pub txn: Option<u64>,
    /// The record type: `update`, `clr`, `commit`, `end`, `images`, `begin-checkpoint`
    /// or `end-checkpoint`.
    pub kind: &'static str,
    /// The pages the record changes (the leaf of an update or a compensation, every page
    /// of an images record; none for the others).
    pub pages: Vec<u64>,
    /// A short description of the payload: for an update, the change (`insert`, `update`,
    /// `patch`, `delete`), the tree's root page, the key (escaped like a Rust byte string,
    /// cut at [`KEY_PREVIEW`] bytes) and the value lengths; for a compensation, its page
    /// operation and where undo continues; for a commit, its time (RFC 3339, UTC; see
    /// [`LogEntry::commit_time`]); for a checkpoint, its tables' sizes.
    pub summary: String,
    /// For a commit record (`commit`, `coordinated-commit`): when it committed, by the
    /// log's commit clock ([`CommitTime::UNKNOWN`] for a record written before commit
    /// records carried a time). `None` for the other records. Stamps never go back in the
    /// order they were taken, but two concurrent commits may be logged in the opposite
    /// order of their stamps (microseconds apart): see [`CommitTime`].
    pub commit_time: Option<CommitTime>,
}

/// What [`dump_log`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDump {
    /// The first LSN still in the log.
    pub start: u64,
    /// The end of the log (the LSN just past the last complete record).
    pub end: u64,
    /// The records read, in log order.
    pub entries: Vec<LogEntry>,
}

/// Reads the write-ahead log of the database in directory `dir` (its `log/`
/// subdirectory) read-only — no file is created, written or synced, a torn tail is left
/// in place — and decodes up to `limit` records starting at LSN `from` (`None`: the
/// log's first record). `from` must be the LSN of a record (as an earlier dump printed
/// it) within the log; one that is not fails with [`Error::InvalidArgument`].
///
/// Fails with [`Error::Locked`] while a read-write handle holds the database, with
/// [`Error::InvalidArgument`] if `dir` has no log or `from` is outside it, and with
/// [`Error::Corruption`] naming the LSN of a record that does not decode (the records
/// before it are not returned: the error is the answer).
pub fn dump_log(dir: impl AsRef<Path>, from: Option<u64>, limit: Option<usize>) -> Result<LogDump> {
    let storage: Arc<dyn Storage> = Arc::new(OsStorage::new());
    let log_dir = dir.as_ref().join("log");
    let shown = log_dir.display().to_string();
    let wal = |e: WalError| match e {
        WalError::Locked(_) => Error::Locked(dir.as_ref().display().to_string()),
        WalError::Corruption { lsn, reason } => {
            Error::Corruption(format!("log {shown} at LSN {lsn}: {reason}"))
        }
        WalError::InvalidArgument(s) => Error::InvalidArgument(format!("log {shown}: {s}")),
        e => Error::Corruption(format!("log {shown}: {e}")),
    };
    if !log_dir.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{} is not a sluice database: it has no log directory",
            dir.as_ref().display()
        )));
    }
    let mut options = LogOptions::default();
    if let Some(bytes) = sluice_wal::segment::scan_dir_read_only(&*storage, &log_dir)
        .map_err(wal)?
        .segment_bytes
    {
        options.segment_bytes = bytes;
    }
    let log = sluice_wal::Log::open_read_only(storage, &log_dir, options).map_err(wal)?;
    let start = log.start_lsn();
    let end = log.durable_lsn();
    let mut entries = Vec::new();
    let explicit = from.is_some();
    let from = from.map_or(start, Lsn);
    if from < start || from > end {
        return Err(Error::InvalidArgument(format!(
            "LSN {from} is outside the log, which holds [{start}, {end})"
        )));
    }
    if !from.0.is_multiple_of(8) {
        return Err(Error::InvalidArgument(format!(
            "LSN {from} is inside the log [{start}, {end}) but no record starts there (records start at multiples of 8): start at an LSN a dump printed"
        )));
    }
    for item in log.read_from(from).map_err(wal)? {
        if limit.is_some_and(|l| entries.len() >= l) {
            break;
        }
        let decoded = item.map_err(wal).and_then(|r| {
            let at = r.lsn;
            Record::decode(&r.payload)
                .map(|rec| (r, rec))
                .map_err(|e| Error::Corruption(format!("log {shown}: record at LSN {at}: {e}")))
        });
        let (r, rec) = match decoded {
            Ok(d) => d,
            // A first record that does not read is most likely a `from` that is no
            // record's LSN: say so rather than report damage.
            Err(e) if explicit && entries.is_empty() => {
                return Err(Error::InvalidArgument(format!(
                    "no record starts at LSN {from} ({e}): start at an LSN a dump printed"
                )))
            }
            Err(e) => return Err(e),
        };
        entries.push(entry(
            r.lsn.0,
            r.end.0 - r.lsn.0,
            r.payload.len() as u64,
            &rec,
        ));
    }
    Ok(LogDump {
        start: start.0,
        end: end.0,
        entries,
    })
}

/// `bytes` escaped like a Rust byte string (printable ASCII as is, `\"`, `\\`, `\n`,
/// `\xNN`), cut at `max` input bytes with `…` after it. [`unescape_bytes`] reads the
/// uncut form back: `sluice scan` prints keys this way and `sluice get` takes them so.
pub fn escape_bytes(bytes: &[u8], max: usize) -> String {
    let mut s: String = bytes
        .iter()
        .take(max)
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect();
    if bytes.len() > max {
        s.push('…');
    }
    s
}

/// The bytes [`escape_bytes`] printed as `text` (uncut): `\\`, `\"`, `\'`, `\n`, `\r`,
/// `\t` and `\xNN` are escapes, every other character stands for its UTF-8 bytes. A
/// backslash followed by anything else is an error naming it.
pub fn unescape_bytes(text: &str) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let bad = || {
            format!(
                "{text:?}: the backslash at byte {at} starts no escape (\\\\, \\\", \\', \\n, \\r, \\t or \\xNN, as `sluice scan` prints them)"
            )
        };
        let b = match chars.next().ok_or_else(bad)?.1 {
            '\\' => b'\\',
            '"' => b'"',
            '\'' => b'\'',
            'n' => b'\n',
            'r' => b'\r',
            't' => b'\t',
            'x' => {
                let hex: String = (0..2)
                    .filter_map(|_| chars.next().map(|(_, c)| c))
                    .collect();
                if hex.len() != 2 {
                    return Err(bad());
                }
                u8::from_str_radix(&hex, 16).map_err(|_| bad())?
            }
            _ => return Err(bad()),
        };
        out.push(b);
    }
    Ok(out)
}

fn value(v: &StoredValue) -> String {
    if v.external {
        "large value".to_string()
    } else {
        format!("{} B", v.bytes.len())
    }
}

fn key(k: &[u8]) -> String {
    format!("key \"{}\"", escape_bytes(k, KEY_PREVIEW))
}

fn lsn(l: Option<Lsn>) -> String {
    l.map_or("-".to_string(), |l| l.0.to_string())
}

fn entry(at: u64, len: u64, payload_len: u64, rec: &Record) -> LogEntry {
    let (kind, pages, summary) = match rec {
        Record::Update {
            prev,
            page,
            tree,
            key: k,
            change,
            ..
        } => {
            let c = match change {
                Change::Insert { value: v } => format!("insert {} value {}", key(k), value(v)),
                Change::Update { old, new } => {
                    format!("update {} value {} -> {}", key(k), value(old), value(new))
                }
                Change::Patch { delta } => format!(
                    "patch {} at {} {} B -> {} B",
                    key(k),
                    delta.at,
                    delta.old.len(),
                    delta.new.len()
                ),
                Change::Delete { old } => format!("delete {} value {}", key(k), value(old)),
            };
            (
                "update",
                vec![page.0],
                format!("{c} tree {} prev {}", tree.0, lsn(*prev)),
            )
        }
        Record::Clr {
            prev,
            page,
            op,
            undo_next,
            ..
        } => {
            let o = match op {
                PageOp::Insert { key: k, value: v } => {
                    format!("insert {} value {}", key(k), value(v))
                }
                PageOp::Set { key: k, value: v } => format!("set {} value {}", key(k), value(v)),
                PageOp::Patch { key: k, delta } => format!(
                    "patch {} at {} {} B -> {} B",
                    key(k),
                    delta.at,
                    delta.old.len(),
                    delta.new.len()
                ),
                PageOp::Remove { key: k } => format!("remove {}", key(k)),
            };
            (
                "clr",
                vec![page.0],
                format!("{o} undo-next {} prev {}", lsn(*undo_next), lsn(*prev)),
            )
        }
        Record::Commit { prev, at: t, .. } => {
            ("commit", vec![], format!("prev {} at {t}", lsn(*prev)))
        }
        Record::End { prev, .. } => ("end", vec![], format!("prev {}", lsn(*prev))),
        Record::Coordinated {
            prev,
            at: t,
            participants,
            ..
        } => (
            "coordinated-commit",
            vec![],
            format!(
                "prev {} at {t} participants [{}]",
                lsn(*prev),
                participants
                    .iter()
                    .map(|p| format!("{}:{}@{}", p.partition, p.txn, p.last))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ),
        Record::Images { pages } => (
            "images",
            pages.iter().map(|(p, _)| p.0).collect(),
            format!(
                "{} page image(s), {} B",
                pages.len(),
                pages.iter().map(|(_, i)| i.len()).sum::<usize>()
            ),
        ),
        Record::BeginCheckpoint => ("begin-checkpoint", vec![], String::new()),
        Record::TreeCount { tree, entries } => (
            "tree-count",
            vec![],
            match entries {
                Some(n) => format!("tree {} entries {n}", tree.0),
                None => format!("tree {} dropped", tree.0),
            },
        ),
        Record::EndCheckpoint(d) => (
            "end-checkpoint",
            vec![],
            format!(
                "begin {} next-txn {} active {} dirty {} clock {}",
                d.begin,
                d.next_txn,
                d.active.len(),
                d.dirty.len(),
                d.clock
            ),
        ),
    };
    LogEntry {
        lsn: at,
        len,
        payload_len,
        txn: rec.txn().map(|t| t.0),
        kind,
        pages,
        summary,
        commit_time: match rec {
            Record::Commit { at: t, .. } | Record::Coordinated { at: t, .. } => Some(*t),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{escape_bytes, unescape_bytes};

    /// One escaping rule, both directions: what `sluice scan` prints, `sluice get` reads
    /// back to the same bytes, for every byte value and for text with quotes, backslashes
    /// and non-ASCII characters.
    #[test]
    fn unescape_reads_back_every_escaped_key() {
        let all: Vec<u8> = (0..=255).collect();
        for key in [&all[..], b"a\\b\"c'd\te\n", "naïve ключ".as_bytes(), b""] {
            assert_eq!(unescape_bytes(&escape_bytes(key, usize::MAX)).unwrap(), key);
        }
        assert_eq!(unescape_bytes("plain").unwrap(), b"plain");
        for bad in ["\\", "a\\q", "\\x4", "\\xzz"] {
            let e = unescape_bytes(bad).unwrap_err();
            assert!(e.contains("starts no escape"), "{e}");
        }
    }
}
