//! The Raft log store on a [`sluice_wal::Log`] of its own.
//!
//! **One ordered stream.** Every change of the store is one record of the WAL, in the
//! order openraft asked for it: an entry, a vote, the committed log id, a purge point, a
//! truncation. Because the WAL makes its records durable in LSN order, a durable record
//! implies that every record before it is durable: a vote is never reordered with the
//! entries around it, and a truncation is durable once any entry appended after it is.
//!
//! **What is durable when.** `save_vote` returns once its record is durable. `append`
//! returns once its entries are in the WAL's buffer, where readers of this store already
//! find them (they are kept in memory until durable), and calls openraft's `IOFlushed`
//! callback only once they are durable (from the WAL's `on_durable`). openraft may send
//! such an entry to followers before it is durable here, which is why a node never lets a
//! restarted leader go on leading its old term (`Node::start`, `no_leader_restore`). `save_committed`,
//! `truncate_after` and `purge`'s own records ride on whatever is made durable next;
//! `purge` waits for them before it removes anything.
//!
//! **Open.** The store replays every record of the WAL from its first LSN and rebuilds
//! the index → LSN map, the vote, the committed log id and the purge point. An entry
//! appended with the index of an entry already there replaces it and everything after it
//! (as `truncate_after` would): replay does the same, so the map after a reopen is the
//! map before it.
//!
//! **Purge.** The WAL can only drop whole segments from its front. `purge(id)` first
//! re-writes the vote, the committed log id and the new purge point as fresh records (so
//! they live above the cut), waits for them to be durable, then drops the segments that
//! lie wholly below the first record still needed: the first remaining entry or the
//! re-written records, whichever is lower. The purge point is remembered even when no
//! entry remains.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sluice_storage::Storage;
use sluice_wal::{Log, LogOptions, Lsn, WalError};

use crate::types::{decode, encode, Entry, LogId, TypeConfig, Vote};

/// Recent entries kept in memory after they are durable, for the replication streams
/// that read right behind the appends. Older entries are read back from the WAL.
const CACHE_DURABLE_ENTRIES: usize = 1024;

/// One record of the store's WAL ([`LogStore::records`] reads them back).
#[derive(Debug, Serialize, Deserialize)]
pub enum Record {
    /// An appended entry (one at an index already there replaces it and all after it).
    Entry(Entry),
    /// A vote, durable before `save_vote` returns.
    Vote(Vote),
    /// The committed log id as openraft saved it.
    Committed(Option<LogId>),
    /// A purge point: entries up to it are gone.
    Purged(LogId),
    /// A truncation: entries after it are gone.
    TruncateAfter(Option<LogId>),
}

/// Where an entry lies.
struct Slot {
    log_id: LogId,
    lsn: Lsn,
    /// The end of its record.
    end: Lsn,
    /// The entry, while it may not be durable yet (and for a while after).
    cached: Option<Entry>,
}

/// What the records say, as of the last one appended.
#[derive(Default)]
struct State {
    vote: Option<Vote>,
    committed: Option<LogId>,
    /// The end of the last `Committed` record appended by this handle (zero after a
    /// replay: every replayed record is durable).
    committed_end: Lsn,
    /// The end of the last record appended by this handle (zero after a replay).
    end: Lsn,
    purged: Option<LogId>,
    entries: BTreeMap<u64, Slot>,
    /// Indexes whose slot holds a cached entry, oldest first.
    cached: VecDeque<u64>,
}

impl State {
    /// Applies one record (at `lsn`, ending at `end`), as `append`/`save_vote`/... did
    /// and as replay does.
    fn apply(&mut self, record: Record, lsn: Lsn, end: Lsn, cache: bool) {
        match record {
            Record::Entry(entry) => {
                let log_id = entry.log_id();
                let index = log_id.index();
                if self.purged.as_ref().is_some_and(|p| p.index() >= index) {
                    return;
                }
                self.truncate_from(index);
                let cached = if cache {
                    self.cached.push_back(index);
                    Some(entry)
                } else {
                    None
                };
                self.entries.insert(
                    index,
                    Slot {
                        log_id,
                        lsn,
                        end,
                        cached,
                    },
                );
            }
            Record::Vote(v) => self.vote = Some(v),
            Record::Committed(c) => self.committed = c,
            Record::Purged(p) => {
                if self.purged.as_ref().is_none_or(|q| q < &p) {
                    let keep = self.entries.split_off(&(p.index() + 1));
                    self.entries = keep;
                    self.purged = Some(p);
                }
            }
            Record::TruncateAfter(last) => {
                let from = last.map_or(0, |l| l.index() + 1);
                self.truncate_from(from);
            }
        }
    }

    fn truncate_from(&mut self, index: u64) {
        self.entries.split_off(&index);
    }

    /// Drops cached copies of durable entries beyond the most recent few.
    fn evict(&mut self, durable: Lsn) {
        while self.cached.len() > CACHE_DURABLE_ENTRIES {
            let index = self.cached[0];
            match self.entries.get_mut(&index) {
                // Still not durable: nothing after it is either.
                Some(slot) if slot.lsn >= durable => break,
                Some(slot) => slot.cached = None,
                None => {}
            }
            self.cached.pop_front();
        }
    }

    fn last_log_id(&self) -> Option<LogId> {
        self.entries
            .last_key_value()
            .map(|(_, s)| s.log_id)
            .or(self.purged)
    }
}

struct Inner {
    log: Log,
    state: Mutex<State>,
}

/// A Raft log store (openraft's `RaftLogStorage` and `RaftLogReader`) on a
/// [`sluice_wal::Log`] in a directory of its own. Cloning gives another handle (a reader)
/// on the same store.
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Inner>,
}

fn wal_error(e: WalError) -> io::Error {
    io::Error::other(e)
}

/// Hands every record of `log` (the store's WAL in `dir`) to `f`, in order.
fn replay(log: &Log, dir: &Path, mut f: impl FnMut(Lsn, Record)) -> io::Result<()> {
    for record in log.read_from(log.start_lsn()).map_err(wal_error)? {
        let record = record.map_err(wal_error)?;
        let what = format!("raft log record at LSN {} in {}", record.lsn, dir.display());
        f(record.lsn, decode(&record.payload, &what)?);
    }
    Ok(())
}

impl LogStore {
    /// Opens the store in `dir` (creating it if needed) and replays its records.
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: LogOptions,
    ) -> io::Result<LogStore> {
        let dir: PathBuf = dir.as_ref().to_path_buf();
        let log = Log::open(storage, &dir, options).map_err(wal_error)?;
        let mut state = State::default();
        // A replayed record is durable: its start stands for its end.
        replay(&log, &dir, |lsn, record| {
            state.apply(record, lsn, lsn, false)
        })?;
        Ok(LogStore {
            inner: Arc::new(Inner {
                log,
                state: Mutex::new(state),
            }),
        })
    }

    /// Every record of the store's WAL in `dir`, in order, with its LSN: what a replay
    /// reads, for inspecting a node's log (the `dump_raft_log` example). Opening the WAL
    /// may repair a torn tail, so point it at a copy of a log that must stay as found.
    pub fn records(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: LogOptions,
    ) -> io::Result<Vec<(Lsn, Record)>> {
        let dir = dir.as_ref();
        let log = Log::open(storage, dir, options).map_err(wal_error)?;
        let mut out = Vec::new();
        replay(&log, dir, |lsn, record| out.push((lsn, record)))?;
        log.close().map_err(wal_error)?;
        Ok(out)
    }

    /// The WAL under the store (for its counters and durable position).
    pub fn wal(&self) -> &Log {
        &self.inner.log
    }

    /// Flushes and closes the WAL: later calls fail. What was appended is durable when
    /// this returns `Ok`.
    pub fn close(&self) -> io::Result<()> {
        self.inner.log.close().map(|_| ()).map_err(wal_error)
    }

    /// Appends one record, applying it to the state under the same lock so that the
    /// order of the records is the order of the changes. Returns the record's end.
    fn write(&self, state: &mut State, record: Record) -> io::Result<(Lsn, Lsn)> {
        let bytes = encode(&record)?;
        if bytes.len() > self.inner.log.max_record_bytes() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a raft log record of {} bytes is larger than the log's limit of {} bytes",
                    bytes.len(),
                    self.inner.log.max_record_bytes()
                ),
            ));
        }
        let at = self.inner.log.append(&bytes).map_err(wal_error)?;
        if matches!(record, Record::Committed(_)) {
            state.committed_end = at.end;
        }
        state.end = at.end;
        state.apply(record, at.lsn, at.end, true);
        Ok((at.lsn, at.end))
    }

    /// Resolves once a committed log id at or past `index` is durable in this log, or
    /// `None` when none is recorded yet (see `StateMachine::witness_applies_with`). The
    /// committed entries lie before their `Committed` record in the log, so they are
    /// durable then too.
    pub fn committed_durable(&self, index: u64) -> Option<sluice_wal::DurableFuture> {
        let state = self.inner.state.lock();
        let committed = state.committed.as_ref()?;
        (committed.index() >= index).then(|| self.inner.log.durable_future(state.committed_end))
    }

    /// Bytes of log written so far (the WAL's position: it only grows, across purges
    /// and restarts).
    pub fn appended_bytes(&self) -> u64 {
        self.inner.log.released_lsn().0
    }

    /// Resolves once entry `index`, and with it every entry before it and every
    /// truncation that made them the log's, is durable: what a state machine about to
    /// apply up to `index` waits for, so that its own log, flushed in the background,
    /// never holds an entry this log could lose (see `StateMachine::apply`). The records
    /// that make entries up to `index` the log's all precede that entry's record: an
    /// entry at or below it appended later would have truncated it. An index the log no
    /// longer holds waits for every record appended so far.
    pub fn entry_durable(&self, index: u64) -> sluice_wal::DurableFuture {
        let state = self.inner.state.lock();
        let end = state.entries.get(&index).map_or(state.end, |s| s.end);
        self.inner.log.durable_future(end)
    }

    async fn durable(&self, end: Lsn) -> io::Result<()> {
        self.inner
            .log
            .durable_future(end)
            .await
            .map(|_| ())
            .map_err(wal_error)
    }

    /// Reads the entries of `wanted` (index, LSN, cached copy), in index order, from the
    /// cache or, for durable ones, from the WAL in one pass.
    fn read_entries(&self, wanted: Vec<(u64, Lsn, Option<Entry>)>) -> io::Result<Vec<Entry>> {
        let mut out = Vec::with_capacity(wanted.len());
        let mut reader: Option<sluice_wal::LogReader> = None;
        for (index, lsn, cached) in wanted {
            if let Some(e) = cached {
                out.push(e);
                continue;
            }
            // Entries are appended in index order except across a truncation, which a
            // fresh reader handles.
            if reader.as_ref().is_none_or(|r| r.position() > lsn) {
                reader = Some(self.inner.log.read_from(lsn).map_err(wal_error)?);
            }
            let r = reader.as_mut().expect("set above");
            loop {
                let rec = r.next().ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("raft log entry {index} at LSN {lsn} is missing from the log"),
                    )
                })?;
                let rec = rec.map_err(wal_error)?;
                if rec.lsn < lsn {
                    continue;
                }
                if rec.lsn > lsn {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("raft log entry {index}: no record at LSN {lsn}"),
                    ));
                }
                match decode::<Record>(&rec.payload, "raft log record")? {
                    Record::Entry(e) if e.index() == index => {
                        out.push(e);
                        break;
                    }
                    _ => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("raft log entry {index}: the record at LSN {lsn} is another"),
                        ))
                    }
                }
            }
        }
        Ok(out)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        let start = match range.start_bound() {
            Bound::Included(&x) => Bound::Included(x),
            Bound::Excluded(&x) => Bound::Excluded(x),
            Bound::Unbounded => Bound::Unbounded,
        };
        let end = match range.end_bound() {
            Bound::Included(&x) => Bound::Included(x),
            Bound::Excluded(&x) => Bound::Excluded(x),
            Bound::Unbounded => Bound::Unbounded,
        };
        if let (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e)) = (start, end) {
            if s >= e {
                return Ok(Vec::new());
            }
        }
        let wanted: Vec<_> = {
            let state = self.inner.state.lock();
            state
                .entries
                .range((start, end))
                .map(|(i, s)| (*i, s.lsn, s.cached.clone()))
                .collect()
        };
        self.read_entries(wanted)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.inner.state.lock().vote)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, io::Error> {
        let state = self.inner.state.lock();
        Ok(LogState {
            last_purged_log_id: state.purged,
            last_log_id: state.last_log_id(),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        let (_, end) = {
            let mut state = self.inner.state.lock();
            self.write(&mut state, Record::Vote(*vote))?
        };
        self.durable(end).await
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        let mut state = self.inner.state.lock();
        if state.committed == committed {
            return Ok(());
        }
        self.write(&mut state, Record::Committed(committed))?;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        Ok(self.inner.state.lock().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<TypeConfig>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let end = {
            let mut state = self.inner.state.lock();
            let mut end = None;
            for entry in entries {
                end = Some(self.write(&mut state, Record::Entry(entry))?.1);
            }
            state.evict(self.inner.log.durable_lsn());
            end
        };
        match end {
            None => callback.io_completed(Ok(())),
            Some(end) => self.inner.log.on_durable(
                end,
                Box::new(move |r| callback.io_completed(r.map(|_| ()).map_err(wal_error))),
            ),
        }
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let mut state = self.inner.state.lock();
        self.write(&mut state, Record::TruncateAfter(last_log_id))?;
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let (cut, end) = {
            let mut state = self.inner.state.lock();
            if state.purged.as_ref().is_some_and(|p| p >= &log_id) {
                return Ok(());
            }
            let mut first = None;
            if let Some(v) = state.vote {
                first = Some(self.write(&mut state, Record::Vote(v))?.0);
            }
            if let Some(c) = state.committed {
                let (lsn, _) = self.write(&mut state, Record::Committed(Some(c)))?;
                first.get_or_insert(lsn);
            }
            let (lsn, end) = self.write(&mut state, Record::Purged(log_id))?;
            let first = first.unwrap_or(lsn);
            let first_entry = state.entries.first_key_value().map(|(_, s)| s.lsn);
            (first_entry.map_or(first, |e| e.min(first)), end)
        };
        self.durable(end).await?;
        self.inner.log.truncate_below(cut).map_err(wal_error)?;
        Ok(())
    }
}
