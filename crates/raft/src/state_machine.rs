//! The Raft state machine on a sluice [`Database`].
//!
//! **Layout** (under the node's state-machine directory):
//! - `CURRENT`: which generation directory, `gN/`, holds the live database (`files.rs`:
//!   replaced atomically). Absent: `g0/`.
//! - `gN/`: a sluice database. Table `data` is the replicated key space; table `raft`
//!   holds the last applied log id (`applied`) and the membership (`membership`). Each
//!   installed snapshot gets a new generation (a directory never used before: the
//!   storage seam cannot remove directories, and an emptied one is not a fresh database
//!   to the engine), and the old generation's files are removed once `CURRENT` names
//!   the new one; its empty directories stay.
//! - `snapshots/NNNNNNNNNNNNNNNNNNNN.snap`: the current snapshot (the newest number),
//!   written whole and atomically before openraft is told of it.
//!
//! **Apply.** Each entry is applied in one transaction that also writes its log id to
//! `raft/applied` (and, for a membership entry, the membership): the data and the applied
//! position never disagree. In a node, an `apply` call first waits until the Raft log
//! holds, durably, the entries it applies (and any truncation before them,
//! `LogStore::entry_durable`): this database flushes on its own, and must never hold an
//! entry the Raft log could still lose. The engine work runs on tokio's blocking pool,
//! off the thread of the node's Raft core. The transactions commit without waiting for
//! the disk ([`Durability::Async`]); no client gets an answer before a crash can no
//! longer take back what it answers for:
//! - in a node, a write's answer waits until the Raft log holds, durably, a committed log
//!   id at or past the last entry of its `apply` call
//!   ([`StateMachine::witness_applies_with`]). That record rides on the log's next
//!   flush, which the next entries need anyway, and the wait runs on a task of its own,
//!   so the state machine applies the next entries meanwhile. After a crash the database
//!   may come back behind that point, and openraft re-applies the committed entries from
//!   the log inside `Raft::new`, before the node serves anyone. An entry is readable once
//!   applied, possibly before its witness is durable: a read's transaction then waits, at
//!   its commit, until what it read is durable in this database's log (the engine's rule
//!   for a reader of an early-released commit), so no read is taken back either;
//! - alone (or before the log records a committed id that far), `apply` returns only once
//!   its own last transaction is durable.
//!
//! Either way the applied position seen from outside never goes back across a restart.
//!
//! **Snapshots.** Built from one read transaction (a consistent cut of `data` and
//! `raft`), written to `snapshots/` and made durable before they are returned. Installed
//! into a new generation, which is closed and made durable, then `CURRENT` is switched to
//! it: a crash before the switch leaves the old state machine whole (the half-filled
//! generation is emptied on the next open), after it the new one.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::{Stream, TryStreamExt};
use openraft::alias::EntryPayloadOf;
use openraft::entry::RaftEntry;
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use sluice::{Database, Durability, Lsn, Options, Table, Transaction};
use sluice_storage::Storage;

use crate::files;
use crate::log_store::LogStore;
use crate::types::{
    decode, encode, Batch, BatchResult, Command, LogId, Snapshot, SnapshotData, SnapshotMeta,
    StoredMembership, TypeConfig,
};

const DATA: &str = "data";
const RAFT: &str = "raft";
const APPLIED: &[u8] = b"applied";
const MEMBERSHIP: &[u8] = b"membership";

fn generation_name(n: u64) -> String {
    format!("g{n}")
}

/// The generation directories in `dir` and their numbers.
fn generations(storage: &dyn Storage, dir: &Path) -> io::Result<Vec<u64>> {
    let mut out: Vec<u64> = storage
        .list(dir)?
        .iter()
        .filter_map(|n| n.strip_prefix('g').and_then(|g| g.parse().ok()))
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// A snapshot as it is written to disk and sent to followers.
#[derive(Serialize, Deserialize)]
struct Image {
    meta: SnapshotMeta,
    data: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The live database and its tables.
struct Live {
    db: Database,
    data: Table,
    raft: Table,
    generation: u64,
}

struct Inner {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    options: Options,
    live: RwLock<Option<Live>>,
    applied: Mutex<(Option<LogId>, StoredMembership)>,
    /// Held by each entry's apply transaction and by every read of this module: a read
    /// transaction that scans (a snapshot build, a dump) and an apply transaction that
    /// writes would otherwise lock each other's keys in opposite orders and deadlock.
    gate: Mutex<()>,
    /// The engine's limits (fixed by the options, the same in every generation).
    limits: sluice::Limits,
    /// Serializes snapshot writers (builds and installs) and numbers their files.
    snapshots: Mutex<Stored>,
    /// The node's Raft log, once attached ([`StateMachine::witness_applies_with`]).
    raft_log: Mutex<Option<LogStore>>,
    /// Snapshots installed since this handle was opened ([`StateMachine::installs`]).
    installs: std::sync::atomic::AtomicU64,
}

/// The newest snapshot file: its number and the last log id it covers.
#[derive(Default)]
struct Stored {
    seq: u64,
    last: Option<LogId>,
    /// Its size in bytes.
    bytes: u64,
}

/// A Raft state machine (openraft's `RaftStateMachine`) on a sluice [`Database`].
/// Cloning gives another handle on the same state machine (openraft's snapshot builder).
#[derive(Clone)]
pub struct StateMachine {
    inner: Arc<Inner>,
}

fn db_error(e: sluice::Error) -> io::Error {
    io::Error::other(e)
}

fn open_slot(
    storage: &Arc<dyn Storage>,
    dir: &Path,
    options: &Options,
    generation: u64,
) -> io::Result<Live> {
    let db = Database::builder(dir.join(generation_name(generation)))
        .options(options.clone())
        .storage(storage.clone())
        .open()
        .map_err(db_error)?;
    let data = db.table_or_create(DATA).map_err(db_error)?;
    let raft = db.table_or_create(RAFT).map_err(db_error)?;
    Ok(Live {
        db,
        data,
        raft,
        generation,
    })
}

impl StateMachine {
    /// Opens the state machine in `dir` (creating it if needed), with `options` for its
    /// database.
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: Options,
    ) -> io::Result<StateMachine> {
        let dir = dir.as_ref().to_path_buf();
        storage.create_dir_all(&dir)?;
        storage.create_dir_all(&dir.join("snapshots"))?;
        let current = dir.join("CURRENT");
        let generation = match files::read_checked(&*storage, &current)? {
            None => 0,
            Some(b) => std::str::from_utf8(&b)
                .ok()
                .and_then(|t| t.strip_prefix('g'))
                .and_then(|g| g.parse::<u64>().ok())
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: names no generation", current.display()),
                    )
                })?,
        };
        // Leftovers: an old generation whose files were not all removed, or one an
        // install filled before a crash took it before the switch.
        for g in generations(&*storage, &dir)? {
            if g != generation {
                files::clear_dir(&*storage, &dir.join(generation_name(g)))?;
            }
        }
        let live = open_slot(&storage, &dir, &options, generation)?;
        let applied = read_applied(&live)?;
        let limits = live.db.limits();
        let newest = match newest_snapshot(&*storage, &dir)? {
            None => Stored::default(),
            Some((seq, path)) => {
                let (last, bytes) = match files::read_checked(&*storage, &path)? {
                    // The meta comes first in the file: read it alone.
                    Some(body) => (
                        postcard::take_from_bytes::<SnapshotMeta>(&body)
                            .map_err(|e| {
                                io::Error::new(
                                    io::ErrorKind::InvalidData,
                                    format!("{}: {e}", path.display()),
                                )
                            })?
                            .0
                            .last_log_id,
                        body.len() as u64,
                    ),
                    None => (None, 0),
                };
                Stored { seq, last, bytes }
            }
        };
        Ok(StateMachine {
            inner: Arc::new(Inner {
                storage,
                dir,
                options,
                live: RwLock::new(Some(live)),
                applied: Mutex::new(applied),
                gate: Mutex::new(()),
                limits,
                snapshots: Mutex::new(newest),
                raft_log: Mutex::new(None),
                installs: Default::default(),
            }),
        })
    }

    /// Runs `f` on the live database and its `data` table (for reads by the node), with
    /// applies held off meanwhile: a transaction of `f` never deadlocks with an apply.
    pub fn with_data<T>(
        &self,
        f: impl FnOnce(&Database, &Table) -> io::Result<T>,
    ) -> io::Result<T> {
        let live = self.inner.live.read();
        let live = live.as_ref().ok_or_else(closed)?;
        let _gate = self.inner.gate.lock();
        f(&live.db, &live.data)
    }

    /// Reads `key` from the replicated key space, on this node, as of what it has applied.
    pub fn get(&self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        self.with_data(|db, data| {
            let mut tx = db.begin();
            let v = tx.get(data, key).map_err(db_error)?;
            tx.commit().map_err(db_error)?;
            Ok(v)
        })
    }

    /// Every key and value of the replicated key space on this node, in key order.
    pub fn dump(&self) -> io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.with_data(|db, data| {
            let mut tx = db.begin();
            let all = tx
                .scan_all(data)
                .collect::<sluice::Result<Vec<_>>>()
                .map_err(db_error)?;
            tx.commit().map_err(db_error)?;
            Ok(all)
        })
    }

    /// The engine's limits on keys and values in this state machine.
    pub fn limits(&self) -> sluice::Limits {
        self.inner.limits
    }

    /// The size in bytes of the newest snapshot stored (zero while there is none).
    pub fn snapshot_bytes(&self) -> u64 {
        self.inner.snapshots.lock().bytes
    }

    /// Snapshots from a leader installed since this state machine was opened (kept in
    /// memory only: what a campaign reads to see that it reached the install path).
    pub fn installs(&self) -> u64 {
        self.inner
            .installs
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The last applied log id, as openraft sees it.
    pub fn last_applied(&self) -> Option<LogId> {
        self.inner.applied.lock().0
    }

    /// Lets the node's Raft log stand witness for applied entries: an `apply` then
    /// answers once the log holds, durably, a committed log id at or past the last entry
    /// it applied, instead of waiting for this database's own log. After a crash the
    /// database may come back behind that point; openraft re-applies the committed
    /// entries from the log before the node is started (`Raft::new`), so the applied
    /// state seen from outside never goes back. This database's log is then flushed by
    /// its group commit in the background, and made durable by every snapshot build
    /// (before the log below the snapshot can be purged), install and close.
    pub fn witness_applies_with(&self, log: LogStore) {
        *self.inner.raft_log.lock() = Some(log);
    }

    /// Closes the database (a clean shutdown); later calls fail.
    pub fn close(&self) -> io::Result<()> {
        if let Some(live) = self.inner.live.write().take() {
            drop(live.data);
            drop(live.raft);
            live.db.close().map_err(db_error)?;
        }
        Ok(())
    }

    /// Applies one entry in one transaction; returns its batches' results and the
    /// commit LSN.
    fn apply_one(
        live: &Live,
        log_id: LogId,
        payload: &EntryPayloadOf<TypeConfig>,
    ) -> io::Result<(Vec<BatchResult>, Option<Lsn>, Option<StoredMembership>)> {
        let mut tx = live.db.begin();
        tx.set_durability(Durability::Async);
        let mut results = Vec::new();
        let mut membership = None;
        match payload {
            EntryPayload::Blank => {}
            EntryPayload::Normal(proposal) => {
                let limits = live.db.limits();
                for batch in proposal.batches.iter() {
                    results.push(apply_batch(&mut tx, &live.data, batch, limits)?);
                }
            }
            EntryPayload::Membership(m) => {
                let stored = StoredMembership::new(Some(log_id), m.clone());
                tx.put(&live.raft, MEMBERSHIP, encode(&stored)?)
                    .map_err(db_error)?;
                membership = Some(stored);
            }
        }
        tx.put(&live.raft, APPLIED, encode(&Some(log_id))?)
            .map_err(db_error)?;
        let mut lsn = None;
        tx.commit_observed(|end| lsn = end).map_err(db_error)?;
        Ok((results, lsn, membership))
    }
}

fn closed() -> io::Error {
    io::Error::other("the state machine is closed")
}

/// Applies one batch in `tx`, atomically on its own: its commands are first run against
/// an overlay of its own writes (a compare-and-set sees the batch's earlier writes and
/// the transaction's state), and only if every check holds are they written. A batch
/// beyond this node's limits is `Invalid`, one whose check fails is `Conflict`: both
/// deterministic (every node with the same options finds the same) and without a trace.
/// Any engine error while writing a checked batch is an I/O error: the node stops rather
/// than diverge.
fn apply_batch(
    tx: &mut Transaction,
    data: &Table,
    batch: &Batch,
    limits: sluice::Limits,
) -> io::Result<BatchResult> {
    if let Err((command, reason)) = check_commands(batch, limits) {
        return Ok(BatchResult::Invalid { command, reason });
    }
    let mut overlay: std::collections::HashMap<&[u8], Option<&[u8]>> = Default::default();
    for (i, c) in batch.commands.iter().enumerate() {
        match c {
            Command::Put { key, value } => {
                overlay.insert(key, Some(value));
            }
            Command::Delete { key } => {
                overlay.insert(key, None);
            }
            Command::CompareAndSet { key, expected, new } => {
                let current = match overlay.get(key.as_slice()) {
                    Some(v) => v.map(<[u8]>::to_vec),
                    None => tx.get_for_update(data, key).map_err(db_error)?,
                };
                if &current != expected {
                    return Ok(BatchResult::Conflict {
                        command: i,
                        current,
                    });
                }
                overlay.insert(key, new.as_deref());
            }
        }
    }
    for c in &batch.commands {
        let (key, value) = match c {
            Command::Put { key, value } => (key, Some(value)),
            Command::Delete { key } => (key, None),
            Command::CompareAndSet { key, new, .. } => (key, new.as_ref()),
        };
        match value {
            Some(v) => tx.put(data, key, v).map(|_| ()),
            None => tx.delete(data, key).map(|_| ()),
        }
        .map_err(db_error)?;
    }
    Ok(BatchResult::Applied)
}

/// The commands of `batch` against the engine's key and value limits: the first one
/// beyond them and why.
fn check_commands(batch: &Batch, limits: sluice::Limits) -> Result<(), (usize, String)> {
    for (i, c) in batch.commands.iter().enumerate() {
        let key = c.key();
        let value = match c {
            Command::Put { value, .. } => value.len(),
            Command::CompareAndSet { new, expected, .. } => new
                .as_ref()
                .map_or(0, Vec::len)
                .max(expected.as_ref().map_or(0, Vec::len)),
            Command::Delete { .. } => 0,
        };
        let max_key = if key.len() + value > limits.max_entry {
            limits.max_large_key
        } else {
            limits.max_key
        };
        if key.len() > max_key {
            return Err((
                i,
                format!(
                    "a key of {} bytes is longer than {max_key} bytes (with its value of {value} bytes)",
                    key.len()
                ),
            ));
        }
        if value > limits.max_value {
            return Err((
                i,
                format!(
                    "a value of {value} bytes is longer than {} bytes",
                    limits.max_value
                ),
            ));
        }
    }
    Ok(())
}

/// Checks a batch against what this node's state machine and log can take, before it is
/// proposed: a batch no node could apply never enters the log. `max_record` is the
/// largest log record. Returns the batch's encoded size.
pub(crate) fn check_batch(
    batch: &Batch,
    limits: sluice::Limits,
    max_record: usize,
) -> Result<usize, String> {
    if batch.commands.is_empty() {
        return Err("an empty batch".into());
    }
    check_commands(batch, limits).map_err(|(i, why)| format!("command {i}: {why}"))?;
    let size = encode(batch).map_err(|e| e.to_string())?.len();
    if size + ENTRY_OVERHEAD > max_record {
        return Err(format!(
            "a batch of {size} bytes encoded is larger than the Raft log's largest record, {max_record} bytes, allows"
        ));
    }
    Ok(size)
}

/// What a log entry adds around its batches (log id, framing): well under this.
pub(crate) const ENTRY_OVERHEAD: usize = 256;

/// The applied log id and membership, as `tx` reads them.
fn read_meta(tx: &mut Transaction, live: &Live) -> io::Result<(Option<LogId>, StoredMembership)> {
    let applied = match tx.get(&live.raft, APPLIED).map_err(db_error)? {
        Some(b) => decode(&b, "raft/applied")?,
        None => None,
    };
    let membership = match tx.get(&live.raft, MEMBERSHIP).map_err(db_error)? {
        Some(b) => decode(&b, "raft/membership")?,
        None => StoredMembership::default(),
    };
    Ok((applied, membership))
}

fn read_applied(live: &Live) -> io::Result<(Option<LogId>, StoredMembership)> {
    let mut tx = live.db.begin();
    let meta = read_meta(&mut tx, live)?;
    tx.commit().map_err(db_error)?;
    Ok(meta)
}

fn snapshot_name(n: u64) -> String {
    format!("{n:020}.snap")
}

/// The newest snapshot file's number and path.
fn newest_snapshot(storage: &dyn Storage, dir: &Path) -> io::Result<Option<(u64, PathBuf)>> {
    let snaps = dir.join("snapshots");
    let mut newest = None;
    for name in storage.list(&snaps)? {
        if let Some(n) = name
            .strip_suffix(".snap")
            .and_then(|n| n.parse::<u64>().ok())
        {
            if newest.as_ref().is_none_or(|(m, _)| n > *m) {
                newest = Some((n, snaps.join(&name)));
            }
        }
    }
    Ok(newest)
}

/// What one `apply` call did: each entry's batch results (in entry order), the last
/// commit LSN and the last log id applied.
struct Applied {
    results: Vec<Vec<BatchResult>>,
    last_lsn: Option<Lsn>,
    last_applied: Option<LogId>,
}

/// Runs `f`, engine work that blocks (applies, snapshot builds: page reads, latches, the
/// gate), on tokio's blocking pool, so that the runtime thread it would otherwise hold
/// goes on sending heartbeats and answering votes. A node may run on a one-thread
/// runtime (`sluice cluster node --threads 1`), where a snapshot build of a large state
/// on that thread would delay heartbeats past the election timeout.
async fn off_runtime<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| io::Error::other(format!("a state-machine task failed: {e}")))?
}

impl Inner {
    /// What makes an `apply` call's work up to `last_applied` (committed at `last_lsn`)
    /// durable, `None` when it applied nothing: in a node, the Raft log's `Committed`
    /// record at or past it (a restart re-applies up to it from the log); else, or before
    /// the log records a committed id that far (a node restarted with this database
    /// ahead of that record), this database's own log up to `last_lsn`.
    fn witness(
        &self,
        last_applied: Option<LogId>,
        last_lsn: Option<Lsn>,
    ) -> Option<sluice_wal::DurableFuture> {
        let id = last_applied?;
        if let Some(log) = self.raft_log.lock().as_ref() {
            if let Some(committed) = log.committed_durable(id.index()) {
                return Some(committed);
            }
        }
        let live = self.live.read();
        Some(live.as_ref()?.db.log().durable_future(last_lsn?))
    }

    /// Applies `entries` in order, each in a transaction of its own (`apply_one`).
    fn apply_all(&self, entries: &[crate::types::Entry]) -> io::Result<Applied> {
        let mut applied = Applied {
            results: Vec::with_capacity(entries.len()),
            last_lsn: None,
            last_applied: None,
        };
        let live = self.live.read();
        let live = live.as_ref().ok_or_else(closed)?;
        for entry in entries {
            let log_id = entry.log_id();
            let (result, lsn) = {
                let _gate = self.gate.lock();
                let (result, lsn, membership) =
                    StateMachine::apply_one(live, log_id, &entry.payload)?;
                // Under the gate, with the writes: a read never sees data ahead of the
                // applied position.
                let mut applied = self.applied.lock();
                applied.0 = Some(log_id);
                if let Some(m) = membership {
                    applied.1 = m;
                }
                (result, lsn)
            };
            applied.last_lsn = applied.last_lsn.max(lsn);
            applied.last_applied = Some(log_id);
            applied.results.push(result);
        }
        Ok(applied)
    }

    /// Writes `image` as the next snapshot file, durably, and removes older ones.
    ///
    /// A snapshot older than the one stored (a build that read before an install but got
    /// here after it) is returned but not stored: the current snapshot never goes back.
    fn store_snapshot(&self, image: &Image) -> io::Result<Vec<u8>> {
        let mut stored = self.snapshots.lock();
        let body = encode(image)?;
        if image.meta.last_log_id < stored.last {
            return Ok(body);
        }
        let snaps = self.dir.join("snapshots");
        let n = stored.seq + 1;
        files::write_atomic(&*self.storage, &snaps, &snapshot_name(n), &body)?;
        *stored = Stored {
            seq: n,
            last: image.meta.last_log_id,
            bytes: body.len() as u64,
        };
        for name in self.storage.list(&snaps)? {
            if name != snapshot_name(n) {
                self.storage.remove(&snaps.join(&name))?;
            }
        }
        self.storage.sync_dir(&snaps)?;
        Ok(body)
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    type SnapshotData = SnapshotData;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        let inner = self.inner.clone();
        off_runtime(move || {
            let image = {
                let live = inner.live.read();
                let live = live.as_ref().ok_or_else(closed)?;
                let _gate = inner.gate.lock();
                let mut tx = live.db.begin();
                let data = tx
                    .scan_all(&live.data)
                    .collect::<sluice::Result<Vec<_>>>()
                    .map_err(db_error)?;
                let (last_log_id, last_membership) = read_meta(&mut tx, live)?;
                // A durable commit: the cut it read is durable when this returns.
                tx.commit().map_err(db_error)?;
                Image {
                    meta: SnapshotMeta {
                        last_log_id,
                        last_membership,
                    },
                    data,
                }
            };
            let body = inner.store_snapshot(&image)?;
            Ok(Snapshot {
                meta: image.meta,
                snapshot: body,
            })
        })
        .await
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotData = SnapshotData;
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        Ok(self.inner.applied.lock().clone())
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>> + Unpin + OptionalSend,
    {
        let mut batch = Vec::new();
        let mut responders = Vec::new();
        while let Some((entry, responder)) = entries.try_next().await? {
            batch.push(entry);
            responders.push(responder);
        }
        // Nothing is applied before the Raft log holds it durably. openraft applies what
        // the log has accepted, which may not be durable yet (a follower's, or a leader
        // whose followers made the majority), and this database flushes on its own: an
        // applied entry could otherwise outlive, in this database, the log records that
        // put it there (a truncation of a stale tail, the entry itself), and a node
        // restarted after a power loss would find its state machine past its log.
        let held = batch.last().and_then(|last| {
            let log = self.inner.raft_log.lock();
            log.as_ref().map(|l| l.entry_durable(last.log_id().index()))
        });
        if let Some(held) = held {
            held.await.map_err(io::Error::other)?;
        }
        // The engine work runs off the async runtime (see `off_runtime`).
        let inner = self.inner.clone();
        let Applied {
            results,
            last_lsn,
            last_applied,
        } = off_runtime(move || inner.apply_all(&batch)).await?;
        let answers: Vec<_> = responders
            .into_iter()
            .zip(results)
            .filter_map(|(r, result)| r.map(|r| (r, result)))
            .collect();
        // No answer leaves before a crash can no longer take back what it answers for
        // (`Inner::witness`). In a node the wait runs on a task of its own, so this state
        // machine goes on applying the next entries meanwhile: a restart re-applies what
        // it loses from the Raft log. Alone, nothing could re-apply it, so `apply`
        // returns only once it is durable.
        let in_node = self.inner.raft_log.lock().is_some();
        match self.inner.witness(last_applied, last_lsn) {
            None => answers.into_iter().for_each(|(r, result)| r.send(result)),
            Some(witness) if !in_node => {
                witness.await.map_err(io::Error::other)?;
                answers.into_iter().for_each(|(r, result)| r.send(result));
            }
            Some(witness) => {
                tokio::spawn(async move {
                    match witness.await {
                        Ok(_) => answers.into_iter().for_each(|(r, result)| r.send(result)),
                        // The log failed: the node stops (its next append fails), and the
                        // clients, their answers dropped, learn the outcome is unknown.
                        Err(e) => {
                            tracing::error!("an applied entry could not be made durable: {e}")
                        }
                    }
                });
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: SnapshotData,
    ) -> Result<(), io::Error> {
        let (inner, meta) = (self.inner.clone(), meta.clone());
        off_runtime(move || inner.install(&meta, &snapshot)).await
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        let inner = self.inner.clone();
        off_runtime(move || inner.current_snapshot()).await
    }
}

impl Inner {
    /// Installs the snapshot `snapshot` (described by `meta`) as the live state machine.
    fn install(&self, meta: &SnapshotMeta, snapshot: &SnapshotData) -> io::Result<()> {
        let image: Image = decode(snapshot, "snapshot")?;
        let mut live = self.live.write();
        let old = live.as_ref().ok_or_else(closed)?.generation;
        // A directory never used: past every generation there is, emptied or not.
        let last = generations(&*self.storage, &self.dir)?
            .last()
            .copied()
            .unwrap_or(0);
        let generation = last.max(old) + 1;
        // Fill the new generation, close it (durable), then switch CURRENT.
        {
            let fresh = open_slot(&self.storage, &self.dir, &self.options, generation)?;
            for chunk in image.data.chunks(1024) {
                let mut tx = fresh.db.begin();
                for (k, v) in chunk {
                    tx.put(&fresh.data, k, v).map_err(db_error)?;
                }
                tx.commit().map_err(db_error)?;
            }
            let mut tx = fresh.db.begin();
            tx.put(&fresh.raft, APPLIED, encode(&meta.last_log_id)?)
                .map_err(db_error)?;
            tx.put(&fresh.raft, MEMBERSHIP, encode(&meta.last_membership)?)
                .map_err(db_error)?;
            tx.commit().map_err(db_error)?;
            let Live { db, data, raft, .. } = fresh;
            drop((data, raft));
            db.close().map_err(db_error)?;
        }
        let stored = Image {
            meta: meta.clone(),
            data: image.data,
        };
        self.store_snapshot(&stored)?;
        files::write_atomic(
            &*self.storage,
            &self.dir,
            "CURRENT",
            generation_name(generation).as_bytes(),
        )?;
        if let Some(prev) = live.take() {
            let Live { db, data, raft, .. } = prev;
            drop((data, raft));
            db.close().map_err(db_error)?;
        }
        *live = Some(open_slot(
            &self.storage,
            &self.dir,
            &self.options,
            generation,
        )?);
        files::clear_dir(&*self.storage, &self.dir.join(generation_name(old)))?;
        *self.applied.lock() = (meta.last_log_id, meta.last_membership.clone());
        self.installs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// The stored snapshot, if any.
    fn current_snapshot(&self) -> io::Result<Option<Snapshot>> {
        let _seq = self.snapshots.lock();
        let Some((_, path)) = newest_snapshot(&*self.storage, &self.dir)? else {
            return Ok(None);
        };
        let Some(body) = files::read_checked(&*self.storage, &path)? else {
            return Ok(None);
        };
        let image: Image = decode(&body, &path.display().to_string())?;
        Ok(Some(Snapshot {
            meta: image.meta,
            snapshot: body,
        }))
    }
}
