//! Vertical log partitioning (Tandem's auxiliary audit trails): several log managers,
//! one per partition, and a commit coordinator.
//!
//! A [`Partitioned`] database is `K` partitions, each a complete engine — its own data
//! file, buffer pool, lock manager, checkpointer and **log manager** (buffer, flush
//! daemon, directory: `DIR/part-I/` and its log directory, which may be on its own
//! device). Each table lives in exactly one partition, chosen by a map when it is created
//! ([`PartitionedBuilder::assign`]); its pages never leave it, so each page belongs to
//! exactly one log and every page LSN is an LSN of that log (the answer to Aether
//! appendix A.5: no record ever orders pages of two logs).
//!
//! **Commit** (`txn.rs`). Partition 0's log is the coordinator's. A transaction that
//! logged in no other partition commits there as in an ordinary database. Otherwise:
//! 1. every other log holding records of the transaction is made durable past them
//!    (the requests go to all those logs at once; each log's group commit serves every
//!    transaction waiting on it with one flush: the boxcarring of Tandem §4), and every
//!    partition of the transaction must still take work (the vote);
//! 2. then the coordinator's commit record, naming each part (partition, transaction,
//!    last record), goes into partition 0's log and the commit protocol runs there
//!    (early lock release included);
//! 3. once that record is durable, each participant gets a commit record of its own
//!    (not waited for) and releases its locks.
//!
//! Each step goes through the engine's commit sequencer (`txn/commit.rs`, whose module
//! docs give the order for every protocol): step 1 is its `harden_parts`, step 2 its four
//! ordinary steps on partition 0's log, step 3 its `on_durable` and `record_decided`.
//!
//! **Truncation** (`coordinator.rs`): the coordinator's record stays in partition 0's
//! log until every part it names is durably decided in its own log; close waits for the
//! decisions under way before it closes the participants.
//!
//! **Recovery.** Partition 0 is recovered first; its log's coordinated commit records
//! are then read, and each other partition is recovered with them: a transaction its log
//! holds without an outcome is committed if the coordinator's record names it, and
//! rolled back otherwise. Redo runs per log; undo of a loser happens in every log that
//! holds its records, because none of them has an outcome for it.

mod coordinator;
mod manifest;
mod txn;

pub use manifest::MANIFEST;
pub use txn::PartitionedTransaction;

use crate::builder::Builder;
use crate::coordination::{Hooks, InDoubt, TruncationCap};
use crate::data_file::file_error;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::ids::TxnId;
use crate::log_record::{Record, MAX_PARTICIPANTS};
use crate::options::Options;
use crate::recovery::RecoveryReport;
use crate::table::Table;
use coordinator::Coordinator;
use manifest::Manifest;
use parking_lot::Mutex;
use sluice_storage::{OsStorage, Storage};
use sluice_wal::Lsn;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Log managers a partitioned database may have.
pub const MAX_LOG_MANAGERS: usize = MAX_PARTICIPANTS + 1;

/// Where tables nobody assigned go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unassigned {
    /// To the partition the CRC-32C of the table's name picks (stable across runs).
    Hash,
    /// To this partition.
    Partition(usize),
}

/// A table of a [`Partitioned`] database: the table, and the partition it lives in.
#[derive(Debug, Clone)]
pub struct PartitionedTable {
    pub(crate) partition: usize,
    pub(crate) table: Table,
}

impl PartitionedTable {
    /// The partition (log manager) the table lives in.
    pub fn partition(&self) -> usize {
        self.partition
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        self.table.name()
    }
}

/// Opens a [`Partitioned`] database (see [`Partitioned::builder`]).
pub struct PartitionedBuilder {
    dir: PathBuf,
    log_managers: Option<usize>,
    options: Options,
    storage: Option<Arc<dyn Storage>>,
    log_dirs: BTreeMap<usize, PathBuf>,
    log_storages: BTreeMap<usize, Arc<dyn Storage>>,
    assigned: BTreeMap<String, usize>,
    unassigned: Unassigned,
}

impl std::fmt::Debug for PartitionedBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionedBuilder")
            .field("dir", &self.dir)
            .field("log_managers", &self.log_managers)
            .field("log_dirs", &self.log_dirs)
            .field("assigned", &self.assigned)
            .field("unassigned", &self.unassigned)
            .finish()
    }
}

impl PartitionedBuilder {
    /// Log managers (partitions) of a new database, 1 to [`MAX_LOG_MANAGERS`]; an
    /// existing one keeps its number, and refuses another one given here.
    pub fn log_managers(mut self, k: usize) -> PartitionedBuilder {
        self.log_managers = Some(k);
        self
    }

    /// The options of every partition (commit protocol, pool size per partition, …).
    pub fn options(mut self, options: Options) -> PartitionedBuilder {
        self.options = options;
        self
    }

    /// The storage every file is on (default: the operating system's).
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> PartitionedBuilder {
        self.storage = Some(storage);
        self
    }

    /// Partition `i`'s log directory (default `DIR/part-I/log`): on another device, for
    /// example. The same directories must be given at every open. Each must be a
    /// directory of its own — not another partition's log directory or a partition's
    /// directory under another spelling (compared by identity; refused otherwise).
    pub fn log_dir(mut self, i: usize, dir: impl AsRef<Path>) -> PartitionedBuilder {
        self.log_dirs.insert(i, dir.as_ref().to_path_buf());
        self
    }

    /// Archives every partition's log continuously: partition `i`'s in `part-<i>`
    /// under `dir` ([`crate::Builder::log_archive`]; on that partition's log storage).
    pub fn log_archive(mut self, dir: impl AsRef<Path>) -> PartitionedBuilder {
        self.options.log_archive = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The storage partition `i`'s log is on (for example a
    /// [`sluice_storage::DeviceModel`] emulating a device of its own).
    pub fn log_storage(mut self, i: usize, storage: Arc<dyn Storage>) -> PartitionedBuilder {
        self.log_storages.insert(i, storage);
        self
    }

    /// Puts table `name` in partition `i` when it is created. A table that exists stays
    /// where it is: an assignment that disagrees is refused at open.
    pub fn assign(mut self, name: &str, i: usize) -> PartitionedBuilder {
        self.assigned.insert(name.to_string(), i);
        self
    }

    /// Where tables without an assignment go (default [`Unassigned::Hash`]).
    pub fn unassigned(mut self, rule: Unassigned) -> PartitionedBuilder {
        self.unassigned = rule;
        self
    }

    /// Opens (creating if needed) the database, recovering every partition.
    pub fn open(self) -> Result<Partitioned> {
        Partitioned::open_with(self)
    }
}

/// What a [`Partitioned`] database's commits did since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionedStats {
    /// Commits through the coordinator (a part logged outside partition 0).
    pub coordinated_commits: u64,
    /// Commits that logged only in partition 0 (an ordinary commit there).
    pub local_commits: u64,
    /// Bytes of their commit records in partition 0's log, frames included.
    pub commit_record_bytes: u64,
}

/// A database whose log is partitioned vertically over several log managers (see the
/// module docs). Cheap to clone.
///
/// **Guarantees.** As an ordinary [`Database`]: serializable transactions across all
/// partitions, atomic commit across logs, and under the durable commit protocols nothing
/// acknowledged is lost in any partition. Two differences: locks are per partition, so a
/// deadlock that spans partitions is broken by the lock timeout, not detected; and a
/// transaction that wrote in more than one log waits for those logs before its commit
/// record exists, under every protocol (`async` included: atomicity needs it), and keeps
/// its locks outside partition 0 until its commit is durable (early lock release applies
/// to partition 0's part). A commit that a partition cannot finish (its data file failed)
/// returns an error (see [`PartitionedTransaction::commit`]). [`crate::experiment::Agents`] serve
/// ordinary databases only.
#[derive(Clone)]
pub struct Partitioned {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) parts: Vec<Database>,
    pub(crate) coordinator: Arc<Coordinator>,
    tables: Mutex<HashMap<String, usize>>,
    assigned: BTreeMap<String, usize>,
    unassigned: Unassigned,
    dir: PathBuf,
}

impl std::fmt::Debug for Partitioned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partitioned")
            .field("dir", &self.shared.dir)
            .field("log_managers", &self.shared.parts.len())
            .finish()
    }
}

/// Partition `i`'s directory in `dir`.
pub fn partition_dir(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("part-{i}"))
}

impl Partitioned {
    /// A builder for the partitioned database in `dir`.
    pub fn builder(dir: impl AsRef<Path>) -> PartitionedBuilder {
        PartitionedBuilder {
            dir: dir.as_ref().to_path_buf(),
            log_managers: None,
            options: Options::default(),
            storage: None,
            log_dirs: BTreeMap::new(),
            log_storages: BTreeMap::new(),
            assigned: BTreeMap::new(),
            unassigned: Unassigned::Hash,
        }
    }

    fn open_with(b: PartitionedBuilder) -> Result<Partitioned> {
        let storage = b
            .storage
            .clone()
            .unwrap_or_else(|| Arc::new(OsStorage::new()) as Arc<dyn Storage>);
        let dir = b.dir.clone();
        let io = |e| file_error("database directory", &dir, e);
        let read_only = b.options.read_only;
        let (manifest, new) = match Manifest::read(&*storage, &dir)? {
            Some(m) => {
                if let Some(k) = b.log_managers {
                    if k != m.log_managers {
                        return Err(Error::InvalidArgument(format!(
                            "the partitioned database in {} has {} log managers, not {k}",
                            dir.display(),
                            m.log_managers
                        )));
                    }
                }
                (m, false)
            }
            None => {
                let k = b.log_managers.unwrap_or(1);
                if storage
                    .exists(&dir.join(crate::control::NAME))
                    .map_err(io)?
                {
                    return Err(Error::InvalidArgument(format!(
                        "{} is an ordinary sluice database, not a partitioned one",
                        dir.display()
                    )));
                }
                if storage.exists(&dir).map_err(io)? {
                    let names = storage.list(&dir).map_err(io)?;
                    let foreign: Vec<&String> = names
                        .iter()
                        .filter(|n| !n.starts_with("part-") && !n.starts_with(manifest::MANIFEST))
                        .collect();
                    if let Some(n) = foreign.first() {
                        return Err(Error::InvalidArgument(format!(
                            "{} is not a partitioned sluice database: it has no {} and holds `{n}`",
                            dir.display(),
                            manifest::MANIFEST
                        )));
                    }
                } else if read_only {
                    return Err(io(std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "does not exist (a read-only open creates nothing)",
                    )));
                }
                let m = Manifest {
                    id: rand::random(),
                    log_managers: k,
                    complete: false,
                };
                (m, true)
            }
        };
        let k = manifest.log_managers;
        if b.options.archive_mirror.is_some() && !read_only {
            // One mirror for every partition would put their segments under one name.
            return Err(Error::InvalidArgument(
                "a partitioned database cannot mirror its log archives (archive_mirror): \
                 each partition's log needs a mirror of its own"
                    .into(),
            ));
        }
        if !(1..=MAX_LOG_MANAGERS).contains(&k) {
            return Err(Error::InvalidArgument(format!(
                "a partitioned database has 1 to {MAX_LOG_MANAGERS} log managers, not {k}"
            )));
        }
        for (what, i) in b
            .log_dirs
            .keys()
            .map(|i| ("log directory", *i))
            .chain(b.log_storages.keys().map(|i| ("log storage", *i)))
            .chain(b.assigned.values().map(|i| ("table assignment", *i)))
        {
            if i >= k {
                return Err(Error::InvalidArgument(format!(
                    "{what} for partition {i}, but there are {k} log managers (0 to {})",
                    k - 1
                )));
            }
        }
        if let Unassigned::Partition(i) = b.unassigned {
            if i >= k {
                return Err(Error::InvalidArgument(format!(
                    "unassigned tables go to partition {i}, but there are {k} log managers"
                )));
            }
        }
        let log_dir = |i: usize| {
            b.log_dirs
                .get(&i)
                .cloned()
                .unwrap_or_else(|| partition_dir(&dir, i).join("log"))
        };
        // With archiving, partition i's log is archived in `part-<i>` under the archive
        // directory (on the partition's log storage, as its log is).
        let archive_dir = |i: usize| {
            b.options
                .log_archive
                .as_ref()
                .filter(|_| !read_only)
                .map(|a| partition_dir(a, i))
        };
        // Every partition's log (and archive) in a directory of its own, none of them a
        // partition's directory — compared by identity, not spelling
        // (`db::refuse_same_dirs`), and before anything is created: aliased directories
        // are bad input.
        let named: Vec<(String, &dyn Storage, PathBuf)> = (0..k)
            .flat_map(|i| {
                let log_storage = b.log_storages.get(&i).map_or(&*storage, |s| &**s);
                [
                    Some((
                        format!("partition {i}'s directory"),
                        &*storage,
                        partition_dir(&dir, i),
                    )),
                    Some((
                        format!("partition {i}'s log directory"),
                        log_storage,
                        log_dir(i),
                    )),
                    archive_dir(i)
                        .map(|a| (format!("partition {i}'s log archive"), log_storage, a)),
                ]
            })
            .flatten()
            .collect();
        crate::db::refuse_same_dirs(&named)?;
        // Creating the database, or finishing an interrupted creation, writes the
        // manifest and the partitions' markers: the one place where an open creates
        // files, so the one place a read-only open is refused, before anything is
        // written (a partition's own read-only open refuses a missing partition, but
        // only after the manifest was written). It comes after every check of the
        // arguments, so that bad input creates nothing either.
        if !manifest.complete {
            if read_only {
                return Err(Error::InvalidArgument(if new {
                    format!(
                        "{} is not a partitioned sluice database: it has no {} (a read-only open creates nothing)",
                        dir.display(),
                        manifest::MANIFEST
                    )
                } else {
                    format!(
                        "the creation of the partitioned database in {} was interrupted: open it read-write once to finish it (a read-only open creates nothing)",
                        dir.display()
                    )
                }));
            }
            if new {
                storage.create_dir_all(&dir).map_err(io)?;
                manifest.write(&*storage, &dir)?;
            }
        }
        // Every partition is checked before any is opened: a missing or foreign one must
        // not be created afresh, or recovered without the others.
        if manifest.complete {
            for i in 0..k {
                let pd = partition_dir(&dir, i);
                manifest::check_marker(&*storage, &pd, "directory", manifest.id, i)?;
                let ld = log_dir(i);
                manifest::check_marker(
                    &*b.log_storages.get(&i).cloned().unwrap_or(storage.clone()),
                    &ld,
                    "log directory",
                    manifest.id,
                    i,
                )?;
            }
        }
        let coordinator = Arc::new(Coordinator::new());
        let open_part = |i: usize, hooks: Hooks| -> Result<Database> {
            let pd = partition_dir(&dir, i);
            let ld = log_dir(i);
            let log_storage = b.log_storages.get(&i).cloned().unwrap_or(storage.clone());
            // Each partition's log is archived in a directory of its own.
            let options = Options {
                log_archive: archive_dir(i),
                ..b.options.clone()
            };
            let mut builder = Builder::new(&pd)
                .options(options)
                .storage(storage.clone())
                .log_storage(log_storage.clone())
                .log_dir(&ld);
            builder.hooks = Hooks {
                partition: true,
                ..hooks
            };
            let db = builder.open()?;
            if !manifest.complete {
                manifest::write_marker(&*storage, &pd, manifest.id, i)?;
                manifest::write_marker(&*log_storage, &ld, manifest.id, i)?;
            }
            Ok(db)
        };
        // The coordinator first, holding its log whole until the others are open.
        let c = coordinator.clone();
        let cap: TruncationCap = Arc::new(move || c.cap());
        let db0 = open_part(
            0,
            Hooks {
                truncation_cap: Some(cap),
                ..Hooks::default()
            },
        )?;
        let decided = coordinated_commits(&db0, k)?;
        let decided = Arc::new(decided);
        let mut parts = vec![db0];
        for i in 1..k {
            let d = decided.clone();
            let in_doubt: InDoubt =
                Arc::new(move |txn: TxnId, last: Lsn| d[i].contains(&(txn.0, last.0)));
            parts.push(open_part(
                i,
                Hooks {
                    in_doubt: Some(in_doubt),
                    ..Hooks::default()
                },
            )?);
        }
        if !manifest.complete {
            Manifest {
                complete: true,
                ..manifest
            }
            .write(&*storage, &dir)?;
        }
        // Every participant is recovered (its in-doubt parts committed durably by the
        // checkpoint that ends its recovery): partition 0's log may now be truncated
        // below what the coordinated commits from here on pin.
        coordinator.participants_open(&parts);
        // Tables: where each one lives.
        let mut tables = HashMap::new();
        for (i, db) in parts.iter().enumerate() {
            for name in db.table_names()? {
                if let Some(j) = tables.insert(name.clone(), i) {
                    return Err(Error::Corruption(format!(
                        "table {name:?} exists in partitions {j} and {i}"
                    )));
                }
            }
        }
        for (name, &i) in &b.assigned {
            if let Some(&j) = tables.get(name) {
                if i != j {
                    return Err(Error::InvalidArgument(format!(
                        "table {name:?} lives in partition {j}, but it is assigned to {i} (a table never moves)"
                    )));
                }
            }
        }
        Ok(Partitioned {
            shared: Arc::new(Shared {
                parts,
                coordinator,
                tables: Mutex::new(tables),
                assigned: b.assigned,
                unassigned: b.unassigned,
                dir,
            }),
        })
    }

    /// What the commits did since the database was opened.
    pub fn stats(&self) -> PartitionedStats {
        let c = &self.shared.coordinator;
        PartitionedStats {
            coordinated_commits: c.coordinated.load(Ordering::Relaxed),
            local_commits: c.local.load(Ordering::Relaxed),
            commit_record_bytes: c.commit_bytes.load(Ordering::Relaxed),
        }
    }

    /// Log managers (partitions).
    pub fn log_managers(&self) -> usize {
        self.shared.parts.len()
    }

    /// Partition `i` (its log, counters, verify). Transactions must go through
    /// [`Partitioned::begin`]: one begun on a partition alone would commit without the
    /// coordinator.
    pub fn partition(&self, i: usize) -> &Database {
        &self.shared.parts[i]
    }

    /// The partition a new table `name` goes to.
    pub fn partition_for(&self, name: &str) -> usize {
        if let Some(&i) = self.shared.assigned.get(name) {
            return i;
        }
        match self.shared.unassigned {
            Unassigned::Partition(i) => i,
            Unassigned::Hash => crc32c::crc32c(name.as_bytes()) as usize % self.log_managers(),
        }
    }

    /// Creates a table in the partition the map gives it. [`Error::AlreadyExists`] if a
    /// table of that name exists in any partition.
    pub fn create_table(&self, name: &str) -> Result<PartitionedTable> {
        let mut tables = self.shared.tables.lock();
        if let Some(&i) = tables.get(name) {
            // Listed, unless a drop through the partition itself took it since.
            match self.shared.parts[i].table(name) {
                Err(Error::NotFound(_)) => {
                    tables.remove(name);
                }
                _ => return Err(Error::AlreadyExists(format!("table {name:?}"))),
            }
        }
        let i = self.partition_for(name);
        let table = self.shared.parts[i].create_table(name)?;
        tables.insert(name.to_string(), i);
        Ok(PartitionedTable {
            partition: i,
            table,
        })
    }

    /// The partition the map lists table `name` in; [`Error::NotFound`] if none.
    fn listed(&self, name: &str) -> Result<usize> {
        let tables = self.shared.tables.lock();
        tables
            .get(name)
            .copied()
            .ok_or_else(|| Error::NotFound(format!("table {name:?}")))
    }

    /// Opens an existing table. [`Error::NotFound`] if there is none by that name.
    pub fn table(&self, name: &str) -> Result<PartitionedTable> {
        let i = self.listed(name)?;
        Ok(PartitionedTable {
            partition: i,
            table: self.shared.parts[i].table(name)?,
        })
    }

    /// Drops table `name` in its partition (see
    /// [`Database::drop_table`]: it waits for every transaction using the table, and
    /// later uses of any handle on it return [`Error::NotFound`]) and frees the name.
    /// [`Error::NotFound`] if there is no such table.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let i = self.listed(name)?;
        // Not under the map's lock: the drop waits for the table's users, who may look
        // names up meanwhile.
        self.shared.parts[i].drop_table(name)?;
        let mut tables = self.shared.tables.lock();
        if tables.get(name) == Some(&i) {
            tables.remove(name);
        }
        Ok(())
    }

    /// Opens the table, creating it if it does not exist.
    pub fn table_or_create(&self, name: &str) -> Result<PartitionedTable> {
        match self.table(name) {
            Err(Error::NotFound(_)) => match self.create_table(name) {
                Err(Error::AlreadyExists(_)) => self.table(name),
                r => r,
            },
            r => r,
        }
    }

    /// Every table and its partition, by name.
    pub fn tables(&self) -> Vec<(String, usize)> {
        let mut v: Vec<_> = self
            .shared
            .tables
            .lock()
            .iter()
            .map(|(n, &i)| (n.clone(), i))
            .collect();
        v.sort();
        v
    }

    /// Begins a transaction over every partition.
    pub fn begin(&self) -> PartitionedTransaction {
        PartitionedTransaction::new(self.shared.clone())
    }

    /// What restart recovery did in each partition.
    pub fn recovery_reports(&self) -> Vec<&RecoveryReport> {
        self.shared
            .parts
            .iter()
            .map(|d| d.recovery_report())
            .collect()
    }

    /// Checkpoints every partition (the participants first).
    pub fn checkpoint(&self) -> Result<()> {
        for d in self.shared.parts.iter().rev() {
            d.checkpoint()?;
        }
        Ok(())
    }

    /// Checks every partition (see [`Database::verify`]); the first problem found.
    pub fn verify(&self) -> Result<Vec<crate::VerifyReport>> {
        self.shared.parts.iter().map(Database::verify).collect()
    }

    /// Compacts every partition's data file, each with its own free list (see
    /// [`Database::compact`]); a report per partition, in order.
    pub fn compact(&self) -> Result<Vec<crate::CompactReport>> {
        self.shared.parts.iter().map(Database::compact).collect()
    }

    /// Closes every partition: first the commits under way settle (a coordinated commit
    /// begun from now on is refused with [`Error::Closed`]) — each decided one has its
    /// participants' commit records appended, so none is split by the close; then the
    /// participants (each closes with its log durable), then the coordinator, whose
    /// closing checkpoint truncates its log only below what a participant still needs.
    pub fn close(self) -> Result<()> {
        self.shared.coordinator.drain(&self.shared.parts[0]);
        let mut first = Ok(());
        for d in self.shared.parts[1..].iter().rev() {
            let r = d.clone().close();
            if first.is_ok() {
                first = r;
            }
        }
        let r = self.shared.parts[0].clone().close();
        first.and(r)
    }

    /// Closes as a crash would (see [`Database::close_as_crashed`]): for tests and
    /// benchmarks of restart.
    pub fn close_as_crashed(self) -> Result<()> {
        let mut first = Ok(());
        for d in self.shared.parts.iter() {
            let r = d.clone().close_as_crashed();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// The coordinated commits partition 0's log holds: for each partition, the
/// (transaction, last record) of every part a coordinated commit record names.
fn coordinated_commits(db0: &Database, k: usize) -> Result<Vec<HashSet<(u64, u64)>>> {
    let mut decided = vec![HashSet::new(); k];
    let log = db0.log();
    for item in log.read_from(log.start_lsn())? {
        let sluice_wal::ReadRecord { lsn, payload, .. } = item?;
        let rec = crate::recovery::analysis::decode(lsn, &payload)?;
        if let Record::Coordinated { participants, .. } = rec {
            for p in participants {
                let i = usize::from(p.partition);
                if i == 0 || i >= k {
                    return Err(Error::Corruption(format!(
                        "the coordinated commit at LSN {lsn} names partition {i}, but there are {k} log managers"
                    )));
                }
                decided[i].insert((p.txn.0, p.last.0));
            }
        }
    }
    Ok(decided)
}
