//! The log archive: the durable log reorganised into runs sorted by page id, then LSN
//! (the propagation paper §4.1, after single-pass restore's run generation).
//!
//! TO BE WRITTEN (helper A). The interface below is what the log cleaner and the
//! database use; keep it.

use crate::error::Result;
use crate::ids::PageId;
use crate::log_sink::LogSink;
use sluice_storage::Storage;
use sluice_wal::Lsn;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One record of a run: the change of one page. `record` is an encoded
/// [`Record`](crate::log_record::Record): an `Update` or `Clr` as logged, or an
/// `Images` record carrying only this page's image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunEntry {
    pub(crate) page: PageId,
    pub(crate) lsn: Lsn,
    pub(crate) end: Lsn,
    pub(crate) record: Vec<u8>,
}

/// A run found damaged (checksum or index): which, where, and the LSN range it covered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Damage {
    pub(crate) run: PathBuf,
    pub(crate) offset: u64,
    pub(crate) what: String,
    pub(crate) from: Lsn,
    pub(crate) to: Lsn,
}

/// Why a scan stopped.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// A run is damaged.
    Damaged(Damage),
    /// Anything else (an I/O error).
    Other(crate::error::Error),
}

/// The runs in one directory.
pub(crate) struct Archive {
    _storage: Arc<dyn Storage>,
    _dir: PathBuf,
}

/// A merge of runs: every entry in `[from, to)` (of the pages asked for), ascending by
/// (page, LSN).
pub(crate) struct Merge {}

impl Iterator for Merge {
    type Item = std::result::Result<RunEntry, ScanError>;
    fn next(&mut self) -> Option<Self::Item> {
        todo!()
    }
}

impl Archive {
    /// Opens (creating if needed) the archive in `dir`.
    pub(crate) fn open(storage: Arc<dyn Storage>, dir: &Path) -> Result<Archive> {
        let _ = (storage, dir);
        todo!()
    }
    /// The end of the last run (0 if there is none).
    pub(crate) fn archived_lsn(&self) -> Lsn {
        todo!()
    }
    /// Bytes written to runs since open.
    pub(crate) fn bytes_written(&self) -> u64 {
        todo!()
    }
    /// Archives the durable log from where the archive ends (or from the log's start,
    /// if the archive ends below it) up to `to`, a record boundary at or below the
    /// durable LSN; writes one or more runs. Nothing if the archive is past `to`.
    pub(crate) fn catch_up(&self, log: &LogSink, to: Lsn) -> Result<()> {
        let _ = (log, to);
        todo!()
    }
    /// Every entry with LSN in `[from, to)`, pages `first..=last`, across runs.
    pub(crate) fn scan(&self, first: PageId, last: PageId, from: Lsn, to: Lsn) -> Result<Merge> {
        let _ = (first, last, from, to);
        todo!()
    }
    /// Replaces the runs that overlap `[from, to)` by runs made from the log, which must
    /// still hold `[from, to)`.
    pub(crate) fn regenerate(&self, log: &LogSink, from: Lsn, to: Lsn) -> Result<()> {
        let _ = (log, from, to);
        todo!()
    }
    /// Removes the runs that end at or below `lsn`.
    pub(crate) fn remove_below(&self, lsn: Lsn) -> Result<()> {
        let _ = lsn;
        todo!()
    }
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "archive run {} is damaged at offset {}: {}",
            self.run.display(),
            self.offset,
            self.what
        )
    }
}
