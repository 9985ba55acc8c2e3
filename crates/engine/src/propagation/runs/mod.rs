//! The run store: the durable log reorganised into runs sorted by page id, then LSN
//! (the propagation paper §4.1, after single-pass restore's run generation; that paper
//! calls them a log archive, a word this project keeps for the WAL's segment archiver).
//! The sorter (`jobs`) calls [`RunStore::catch_up`]; the log cleaner scans the runs.
//!
//! A **run** covers an LSN range `[from, to)` of the log and holds one [`RunEntry`] per
//! page change in it, sorted by (page, LSN): an `Update` or `Clr` record as logged, or,
//! for an `Images` record, one entry per page carrying an `Images` record of that page
//! alone. Records that change no page (commit, end, checkpoints) are left out. Runs never
//! overlap; they leave gaps only where the log was truncated before it was sorted.
//! [`RunStore::scan`] merges the runs that overlap an LSN range into one stream ordered by
//! (page, LSN), which the log cleaner replays segment by segment.
//!
//! # Files
//!
//! A run is the file `run-{from:016x}-{to:016x}` in the run directory ([`DIR`] of the
//! database directory). It is written
//! as `<name>.tmp`, synced, renamed to its name and the directory synced, so a crash never
//! leaves a partial run under a run's name; `open` removes the `.tmp` files it finds.
//! [`RunStore::regenerate`] replaces a run by one rebuilt from the log: written as
//! `<new>.tmp`, synced and renamed to `<new>.new` (directory synced: from then on the
//! replacement is complete and durable), then the old run is renamed to
//! `<old>.damaged` (kept for inspection, never read) and `<new>.new` to `<new>`. `open`
//! finishes a replacement a crash interrupted: it renames a `<new>.new` to `<new>` (the
//! run under that name, if any, to `<new>.damaged` first), and of two runs with the same
//! end (a replacement cut short at the log's start, and the run it replaces) keeps the
//! one that starts later.
//!
//! # Run format (version 1, little-endian)
//!
//! ```text
//! header (64 bytes)   0 magic "SLUICERN" | 8 version u32 | 12 zero u32 | 16 from u64
//!                     24 to u64 | 32 entries u64 | 40 blocks u64 | 48 zero u64
//!                     56 CRC32C of bytes 0..56 u32 | 60 zero u32
//! blocks, from 64     each: payload length u32 | entry count u32 | payload
//!                           | CRC32C of length, count and payload u32
//!                     payload: entries, each page u64 | LSN u64 | end LSN u64
//!                           | record length u32 | record bytes
//! index               per block: first page u64 | offset u64 | length u32 (the whole
//!                           block) | entries u32; then CRC32C of the entries u32
//! footer (32 bytes)   0 index offset u64 | 8 blocks u64 | 16 magic "RUNINDEX"
//!                     24 CRC32C of bytes 0..24 u32 | 28 zero u32
//! ```
//!
//! Blocks hold up to 64 KiB of entries (an entry larger than that gets a block of its
//! own), sorted by (page, LSN) across the whole run. A scan of pages `first..=last`
//! reads the header, the footer and the index, seeks to the last block that starts below
//! `first` (or the first block) and reads blocks one at a time until one starts past
//! `last`. Everything read is verified: checksums, magic numbers, the LSN range against
//! the file name, the blocks tiling the space between header and index, entry counts,
//! order and LSNs within the run. A failure is [`ScanError::Damaged`] with the run, the
//! offset of the structure that failed (0 for the header, the footer's, the index's or
//! the block's offset) and its LSN range, so the caller can [`RunStore::regenerate`] it
//! while the log still holds it. [`RunStore::open`] lists runs by name only and never
//! fails on a damaged one.

/// The sorted runs' directory, in the database directory. The code calls them runs (the
/// WAL's segment archiver has the word "archive" to itself), but the directory keeps the
/// name every database made so far has: renaming it on open would move a log directory
/// a user named `archive` away, and refuse a database whose log is in `runs` (found by
/// outside review; `tests/a_log_directory_named_archive_in_the_database_directory_keeps_its_log.rs`).
pub(crate) const DIR: &str = "archive";

mod format;
pub(crate) mod fuzz;
mod mem_file;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_prop;

#[cfg(test)]
pub(crate) use format::encode_run;
pub(crate) use format::{decode_run, reseal_run};

use crate::data_file::{file_error, write_and_rename};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::Record;
use crate::log_sink::LogSink;
use format::RunReader;
use parking_lot::Mutex;
use sluice_storage::{FileHandle, OpenOptions, Storage};
use sluice_wal::{LogReader, Lsn};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of entries `catch_up` holds in memory before it cuts a run.
const RUN_BUDGET: usize = 64 << 20;
/// Bytes of entries per block.
const BLOCK_BYTES: usize = 64 << 10;
/// What an entry costs in memory beyond its record bytes (the struct, the allocation).
const ENTRY_OVERHEAD: usize = 64;
/// Suffix of a run being written.
const TMP: &str = ".tmp";
/// Suffix of a complete replacement run not yet renamed into place.
const NEW: &str = ".new";
/// Suffix of a run replaced by `regenerate`.
const DAMAGED: &str = ".damaged";

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

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sorted run {} is damaged at offset {}: {}",
            self.run.display(),
            self.offset,
            self.what
        )
    }
}

/// Why a scan stopped.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// A run is damaged.
    Damaged(Damage),
    /// Anything else (an I/O error).
    Other(crate::error::Error),
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanError::Damaged(d) => d.fmt(f),
            ScanError::Other(e) => e.fmt(f),
        }
    }
}

impl From<ScanError> for Error {
    fn from(e: ScanError) -> Error {
        match e {
            ScanError::Damaged(d) => Error::Corruption(d.to_string()),
            ScanError::Other(e) => e,
        }
    }
}

/// A run as its file name describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct RunMeta {
    from: Lsn,
    to: Lsn,
}

impl RunMeta {
    fn name(&self) -> String {
        format!("run-{:016x}-{:016x}", self.from.0, self.to.0)
    }

    /// The run a file name names (`None`: not a run's name).
    fn parse(name: &str) -> Option<RunMeta> {
        let rest = name.strip_prefix("run-")?;
        let (from, to) = rest.split_once('-')?;
        let hex = |s: &str| {
            (s.len() == 16 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
                .then(|| u64::from_str_radix(s, 16).ok())
                .flatten()
        };
        let run = RunMeta {
            from: Lsn(hex(from)?),
            to: Lsn(hex(to)?),
        };
        (run.from < run.to).then_some(run)
    }
}

/// The runs in one directory.
pub(crate) struct RunStore {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    /// The runs, sorted by LSN.
    runs: Mutex<Vec<RunMeta>>,
    /// Held by whatever writes or removes runs (one at a time).
    writer: Mutex<()>,
    /// The end of the last run ever written or found (never goes down while open).
    sorted: AtomicU64,
    bytes: AtomicU64,
    run_budget: AtomicUsize,
    block_bytes: AtomicUsize,
}

/// A merge of runs: every entry in `[from, to)` (of the pages asked for), ascending by
/// (page, LSN).
pub(crate) struct Merge {
    first: PageId,
    last: PageId,
    from: Lsn,
    to: Lsn,
    cursors: Vec<Cursor>,
    /// The next entry of each cursor that has one: (page, LSN, cursor).
    heap: BinaryHeap<Reverse<(PageId, Lsn, usize)>>,
    started: bool,
    /// An error to yield next (found while refilling after an entry was taken).
    pending: Option<ScanError>,
    done: bool,
}

/// One run in a merge, read a block at a time.
struct Cursor {
    run: RunMeta,
    path: PathBuf,
    /// The open file, until the reader takes it.
    file: Option<Box<dyn FileHandle>>,
    reader: Option<RunReader>,
    next_block: usize,
    /// Entries of the last block read that the scan wants, not yet taken.
    buf: VecDeque<RunEntry>,
    /// The last entry of the blocks read, to check the order across blocks.
    last_key: Option<(PageId, Lsn)>,
    exhausted: bool,
}

impl Cursor {
    /// The key of the next entry wanted, reading blocks as needed; `None` at the end.
    fn head(
        &mut self,
        first: PageId,
        last: PageId,
        from: Lsn,
        to: Lsn,
    ) -> std::result::Result<Option<(PageId, Lsn)>, ScanError> {
        loop {
            if let Some(e) = self.buf.front() {
                return Ok(Some((e.page, e.lsn)));
            }
            if self.exhausted {
                return Ok(None);
            }
            if self.reader.is_none() {
                let file = self.file.take().expect("a cursor is opened once");
                let r = RunReader::open(self.path.clone(), self.run.from, self.run.to, file)?;
                // The last block that starts below `first` may end with its entries.
                self.next_block = r
                    .index
                    .partition_point(|b| b.first_page < first)
                    .saturating_sub(1);
                self.reader = Some(r);
            }
            let r = self.reader.as_ref().expect("opened above");
            let Some(ie) = r.index.get(self.next_block) else {
                self.exhausted = true;
                continue;
            };
            if ie.first_page > last {
                self.exhausted = true;
                continue;
            }
            let entries = r.block(self.next_block)?;
            if let (Some(prev), Some(e)) = (self.last_key, entries.first()) {
                if (e.page, e.lsn) < prev {
                    return Err(r.damage(
                        ie.offset,
                        format!(
                            "block {} starts below the end of the block before it",
                            self.next_block
                        ),
                    ));
                }
            }
            self.last_key = entries.last().map(|e| (e.page, e.lsn));
            self.next_block += 1;
            self.buf.extend(
                entries
                    .into_iter()
                    .filter(|e| (first..=last).contains(&e.page) && (from..to).contains(&e.lsn)),
            );
        }
    }
}

impl Merge {
    /// Reads the next entry of cursor `i` into the heap.
    fn refill(&mut self, i: usize) -> std::result::Result<(), ScanError> {
        if let Some((page, lsn)) =
            self.cursors[i].head(self.first, self.last, self.from, self.to)?
        {
            self.heap.push(Reverse((page, lsn, i)));
        }
        Ok(())
    }
}

impl Iterator for Merge {
    type Item = std::result::Result<RunEntry, ScanError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Some(Err(e));
        }
        if !self.started {
            self.started = true;
            for i in 0..self.cursors.len() {
                if let Err(e) = self.refill(i) {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let Some(Reverse((_, _, i))) = self.heap.pop() else {
            self.done = true;
            return None;
        };
        let entry = self.cursors[i]
            .buf
            .pop_front()
            .expect("a cursor in the heap has an entry");
        if let Err(e) = self.refill(i) {
            self.pending = Some(e);
        }
        Some(Ok(entry))
    }
}

impl RunStore {
    /// Opens (creating if needed) the run store in `dir`.
    pub(crate) fn open(storage: Arc<dyn Storage>, dir: &Path) -> Result<RunStore> {
        let io = |e| file_error("run directory", dir, e);
        storage.create_dir_all(dir).map_err(io)?;
        let mut changed = false;
        let names = storage.list(dir).map_err(io)?;
        for name in &names {
            if name.ends_with(TMP) {
                let path = dir.join(name);
                storage
                    .remove(&path)
                    .map_err(|e| file_error("sorted run", &path, e))?;
                changed = true;
            }
        }
        // Finish the replacements a crash interrupted: `.new` files are complete.
        for name in &names {
            let Some(base) = name.strip_suffix(NEW) else {
                continue;
            };
            if RunMeta::parse(base).is_none() {
                continue;
            }
            let (new, path) = (dir.join(name), dir.join(base));
            let rename = |a: &Path, b: &Path| {
                storage
                    .rename(a, b)
                    .map_err(|e| file_error("sorted run", a, e))
            };
            if names.iter().any(|n| n == base) {
                rename(&path, &dir.join(format!("{base}{DAMAGED}")))?;
            }
            rename(&new, &path)?;
            changed = true;
        }
        let mut runs: Vec<RunMeta> = storage
            .list(dir)
            .map_err(io)?
            .iter()
            .filter_map(|n| RunMeta::parse(n))
            .collect();
        runs.sort();
        // Of runs with the same end, the one starting later replaced the others (a
        // replacement cut at the log's start whose old run was not renamed yet).
        let mut kept: Vec<RunMeta> = Vec::with_capacity(runs.len());
        for (i, run) in runs.iter().enumerate() {
            if runs[i + 1..].iter().any(|r| r.to == run.to) {
                let path = dir.join(run.name());
                storage
                    .rename(&path, &dir.join(format!("{}{DAMAGED}", run.name())))
                    .map_err(|e| file_error("sorted run", &path, e))?;
                changed = true;
            } else {
                kept.push(*run);
            }
        }
        if let Some(w) = kept.windows(2).find(|w| w[0].to > w[1].from) {
            return Err(Error::Corruption(format!(
                "sorted runs {} and {} in {} overlap",
                w[0].name(),
                w[1].name(),
                dir.display()
            )));
        }
        if changed {
            storage.sync_dir(dir).map_err(io)?;
        }
        let sorted = kept.iter().map(|r| r.to.0).max().unwrap_or(0);
        Ok(RunStore {
            storage,
            dir: dir.to_path_buf(),
            runs: Mutex::new(kept),
            writer: Mutex::new(()),
            sorted: AtomicU64::new(sorted),
            bytes: AtomicU64::new(0),
            run_budget: AtomicUsize::new(RUN_BUDGET),
            block_bytes: AtomicUsize::new(BLOCK_BYTES),
        })
    }

    /// The end of the last run (0 if there is none). Runs removed by
    /// [`RunStore::remove_below`] do not lower it while the store is open, so a later
    /// `catch_up` never sorts that part of the log again.
    pub(crate) fn sorted_lsn(&self) -> Lsn {
        Lsn(self.sorted.load(Ordering::Acquire))
    }

    /// Bytes written to runs since open.
    pub(crate) fn bytes_written(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    /// The LSN ranges of the runs, in order.
    pub(crate) fn runs(&self) -> Vec<(Lsn, Lsn)> {
        self.runs.lock().iter().map(|r| (r.from, r.to)).collect()
    }

    #[cfg(test)]
    /// The path of the run `[from, to)`.
    pub(crate) fn run_path(&self, from: Lsn, to: Lsn) -> PathBuf {
        self.dir.join(RunMeta { from, to }.name())
    }

    /// Tests: cut runs at `run_budget` bytes of entries, blocks at `block_bytes`.
    #[cfg(test)]
    pub(crate) fn set_limits(&self, run_budget: usize, block_bytes: usize) {
        self.run_budget.store(run_budget, Ordering::Relaxed);
        self.block_bytes.store(block_bytes, Ordering::Relaxed);
    }

    /// Sorts the durable log from where the runs end (or from the log's start, if the
    /// runs end below it) up to `to`, a record boundary at or below the durable LSN;
    /// writes one or more runs. Nothing if the runs reach past `to`.
    pub(crate) fn catch_up(&self, log: &LogSink, to: Lsn) -> Result<()> {
        let _w = self.writer.lock();
        let durable = log.durable_lsn();
        if to > durable {
            return Err(Error::InvalidArgument(format!(
                "cannot sort the log into runs up to LSN {to}: it is durable only up to {durable}"
            )));
        }
        let start = self.sorted_lsn().max(log.start_lsn());
        if start >= to {
            return Ok(());
        }
        let budget = self.run_budget.load(Ordering::Relaxed);
        self.read_log(
            log.read_from(start)?,
            (start, to),
            budget,
            |run, entries| self.publish(run, entries),
            &mut |_| {},
        )
    }

    /// Sorts into runs the records `reader` yields from `from` (a record boundary, where
    /// it starts) up to `to`: a log read in place, such as a restore's copy
    /// (`db/restore_runs.rs`), rather than the database's own. `progress` is told the
    /// end of each record read.
    pub(crate) fn sort(
        &self,
        reader: LogReader,
        (from, to): (Lsn, Lsn),
        progress: &mut dyn FnMut(Lsn),
    ) -> Result<()> {
        let _w = self.writer.lock();
        if from >= to {
            return Ok(());
        }
        let budget = self.run_budget.load(Ordering::Relaxed);
        self.read_log(
            reader,
            (from, to),
            budget,
            |run, entries| self.publish(run, entries),
            progress,
        )
    }

    /// Reads the records `reader` yields in `[from, to)` (it starts at `from`) into entries and hands them to `emit` as
    /// runs: cut where they take more than `budget` bytes, the last ending at `to`.
    fn read_log(
        &self,
        mut reader: LogReader,
        (from, to): (Lsn, Lsn),
        budget: usize,
        mut emit: impl FnMut(RunMeta, Vec<RunEntry>) -> Result<()>,
        progress: &mut dyn FnMut(Lsn),
    ) -> Result<()> {
        let mut run_from = from;
        let mut entries = Vec::new();
        let mut held = 0usize;
        for rec in reader.by_ref() {
            let rec = rec?;
            if rec.lsn >= to {
                break;
            }
            if rec.end > to {
                return Err(Error::InvalidArgument(format!(
                    "cannot sort the log into runs up to LSN {to}: the record at {} ends at {}",
                    rec.lsn, rec.end
                )));
            }
            let end = rec.end;
            progress(end);
            held += entries_of(rec, &mut entries)?;
            if held > budget {
                emit(
                    RunMeta {
                        from: run_from,
                        to: end,
                    },
                    std::mem::take(&mut entries),
                )?;
                run_from = end;
                held = 0;
            }
        }
        if reader.position() < to {
            return Err(Error::Corruption(format!(
                "the log ended at LSN {} while sorting it into runs up to {to}",
                reader.position()
            )));
        }
        if run_from < to {
            emit(RunMeta { from: run_from, to }, entries)?;
        }
        Ok(())
    }

    /// Writes `entries` as the run `run` under `name` (synced, not yet visible under a
    /// run's name): as `<name>.tmp`, then renamed to `name`.
    fn write(&self, run: RunMeta, mut entries: Vec<RunEntry>, name: &str) -> Result<()> {
        entries.sort_by_key(|e| (e.page, e.lsn));
        let tmp = self.dir.join(format!("{}{TMP}", run.name()));
        let io = |e| file_error("sorted run", &tmp, e);
        let block_bytes = self.block_bytes.load(Ordering::Relaxed);
        let written = write_and_rename(&*self.storage, (&tmp, &self.dir.join(name)), io, |f| {
            format::write_run(f, &tmp, run.from, run.to, &entries, block_bytes)
        })?;
        self.bytes.fetch_add(written, Ordering::Relaxed);
        Ok(())
    }

    /// Writes a new run past the last one and makes it visible.
    fn publish(&self, run: RunMeta, entries: Vec<RunEntry>) -> Result<()> {
        self.write(run, entries, &run.name())?;
        self.sync_dir()?;
        let mut runs = self.runs.lock();
        debug_assert!(runs.last().is_none_or(|r| r.to <= run.from));
        runs.push(run);
        self.sorted.fetch_max(run.to.0, Ordering::AcqRel);
        Ok(())
    }

    fn sync_dir(&self) -> Result<()> {
        self.storage
            .sync_dir(&self.dir)
            .map_err(|e| file_error("run directory", &self.dir, e))
    }

    /// Every entry with LSN in `[from, to)`, pages `first..=last`, across runs.
    pub(crate) fn scan(&self, first: PageId, last: PageId, from: Lsn, to: Lsn) -> Result<Merge> {
        // The files are opened under the lock: a run's file is renamed or removed only
        // under it or once the run has left the list, and an open file stays readable.
        let runs = self.runs.lock();
        let mut cursors = Vec::new();
        if first <= last {
            for &run in runs.iter().filter(|r| r.from < to && r.to > from) {
                let path = self.dir.join(run.name());
                let file = self
                    .storage
                    .open(&path, OpenOptions::READ_ONLY)
                    .map_err(|e| file_error("sorted run", &path, e))?;
                cursors.push(Cursor {
                    run,
                    path,
                    file: Some(file),
                    reader: None,
                    next_block: 0,
                    buf: VecDeque::new(),
                    last_key: None,
                    exhausted: false,
                });
            }
        }
        drop(runs);
        Ok(Merge {
            first,
            last,
            from,
            to,
            heap: BinaryHeap::with_capacity(cursors.len()),
            cursors,
            started: false,
            pending: None,
            done: false,
        })
    }

    /// Replaces the runs that overlap `[from, to)` by runs made from the log, which must
    /// still hold `[from, to)`.
    pub(crate) fn regenerate(&self, log: &LogSink, from: Lsn, to: Lsn) -> Result<()> {
        let _w = self.writer.lock();
        let start = log.start_lsn();
        if start > from {
            return Err(Error::Corruption(format!(
                "sorted runs for LSNs [{from}, {to}) in {} cannot be rebuilt: the log now \
                 starts at LSN {start} and no longer holds [{from}, {start}), so those \
                 changes are lost",
                self.dir.display()
            )));
        }
        let overlapping: Vec<RunMeta> = self
            .runs
            .lock()
            .iter()
            .filter(|r| r.from < to && r.to > from)
            .copied()
            .collect();
        for old in overlapping {
            let run = RunMeta {
                from: old.from.max(start),
                to: old.to,
            };
            let mut all = Vec::new();
            self.read_log(
                log.read_from(run.from)?,
                (run.from, run.to),
                usize::MAX,
                |_, entries| {
                    all = entries;
                    Ok(())
                },
                &mut |_| {},
            )?;
            // Complete and durable as `.new` before the old run goes.
            let new_name = format!("{}{NEW}", run.name());
            self.write(run, all, &new_name)?;
            self.sync_dir()?;
            let old_path = self.dir.join(old.name());
            let rename = |a: &Path, b: &Path| {
                self.storage
                    .rename(a, b)
                    .map_err(|e| file_error("sorted run", a, e))
            };
            {
                // Under the lock, so no scan opens a run's name between the renames.
                let mut runs = self.runs.lock();
                let damaged = self.dir.join(format!("{}{DAMAGED}", old.name()));
                rename(&old_path, &damaged)?;
                rename(&self.dir.join(&new_name), &self.dir.join(run.name()))?;
                if let Some(r) = runs.iter_mut().find(|r| **r == old) {
                    *r = run;
                }
            }
            self.sync_dir()?;
        }
        Ok(())
    }

    /// Removes the runs that end at or below `lsn`.
    pub(crate) fn remove_below(&self, lsn: Lsn) -> Result<()> {
        let _w = self.writer.lock();
        let doomed: Vec<RunMeta> = self
            .runs
            .lock()
            .iter()
            .filter(|r| r.to <= lsn)
            .copied()
            .collect();
        if doomed.is_empty() {
            return Ok(());
        }
        // Out of the list first: a scan that opened one already keeps reading it.
        self.runs.lock().retain(|r| !doomed.contains(r));
        for run in &doomed {
            let path = self.dir.join(run.name());
            self.storage
                .remove(&path)
                .map_err(|e| file_error("sorted run", &path, e))?;
        }
        self.sync_dir()
    }
}

/// Appends the entries of one log record (none for a record that changes no page);
/// returns the bytes they take in memory.
fn entries_of(rec: sluice_wal::ReadRecord, out: &mut Vec<RunEntry>) -> Result<usize> {
    let (lsn, end) = (rec.lsn, rec.end);
    let mut held = 0;
    let mut push = |page, record: Vec<u8>| {
        held += record.len() + ENTRY_OVERHEAD;
        out.push(RunEntry {
            page,
            lsn,
            end,
            record,
        });
    };
    let record = Record::decode(&rec.payload)
        .map_err(|e| Error::Corruption(format!("log record at LSN {lsn}: {e}")))?;
    match record {
        Record::Update { page, .. } | Record::Clr { page, .. } => push(page, rec.payload),
        Record::Images { pages } => {
            for (page, image) in pages {
                push(
                    page,
                    Record::Images {
                        pages: vec![(page, image)],
                    }
                    .encode(),
                );
            }
        }
        Record::Commit { .. }
        | Record::Coordinated { .. }
        | Record::End { .. }
        | Record::BeginCheckpoint
        | Record::EndCheckpoint(_)
        | Record::TreeCount { .. } => {}
    }
    Ok(held)
}
