//! Helpers for the read-only tests: a storage wrapper that refuses and records every
//! call that could change the disk, and databases in the states a read-only opener
//! meets (closed cleanly, crashed with a loser in the log).

#![allow(dead_code)] // each test file uses part of it

use parking_lot::Mutex;
use sluice::{Database, Options};
use sluice_storage::{FileHandle, LockGuard, OpenOptions, SimStats, SimStorage, Storage};
use sluice_testkit::fence::FencedStorage;
use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Arc;

pub const DIR: &str = "/db";

/// Small pages and pool, no background checkpoints: what the tests write stays in the
/// log past the last checkpoint until they checkpoint or close.
pub fn options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = std::time::Duration::ZERO;
    o
}

pub fn read_only_options() -> Options {
    Options {
        read_only: true,
        ..options()
    }
}

/// Every entry of every table.
pub type Contents = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

pub fn contents(db: &Database) -> Contents {
    let mut all = Contents::new();
    for name in db.table_names().unwrap() {
        let t = db.table(&name).unwrap();
        let mut tx = db.begin();
        let rows = tx.scan_all(&t).map(|e| e.unwrap()).collect();
        tx.commit().unwrap();
        all.insert(name, rows);
    }
    all
}

pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Commits `n` keys with values tagged `tag` into `table`, in one transaction.
pub fn commit_keys(db: &Database, table: &str, n: u32, tag: &str) {
    let t = db.table_or_create(table).unwrap();
    let mut tx = db.begin();
    for i in 0..n {
        tx.put(&t, key(i), format!("{tag}{i}").as_bytes()).unwrap();
    }
    tx.commit().unwrap();
}

/// A database that crashed (power loss) with committed work and a loser in the log past
/// its last checkpoint: table `t` holds keys 0..300 = "old…" (before the checkpoint),
/// then "new…" for the even ones (committed after it); the loser overwrote keys
/// 0..300 with "loser…", inserted "loser-only" keys and deleted nothing that survives.
/// Its records are durable (a later commit synced the log past them). Returns the
/// contents a correct recovery must show.
pub fn crashed_with_a_loser(sim: &SimStorage) -> Contents {
    let db = Database::open_on(FencedStorage::for_incarnation(sim), DIR, options()).unwrap();
    commit_keys(&db, "t", 300, "old");
    db.checkpoint().unwrap();
    let t = db.table("t").unwrap();
    let mut loser = db.begin();
    for i in 0..300 {
        loser.put(&t, key(i), b"loser").unwrap();
    }
    for i in 0..50 {
        loser
            .put(&t, format!("loser-only{i}").as_bytes(), b"x")
            .unwrap();
    }
    let mut tx = db.begin();
    let u = db.table_or_create("u").unwrap();
    for i in 0..100 {
        tx.put(&u, key(i), b"committed after the loser").unwrap();
    }
    tx.commit().unwrap(); // durable, and with it every record before it
    let mut expected = Contents::new();
    expected.insert(
        "t".into(),
        (0..300)
            .map(|i| (key(i), format!("old{i}").into_bytes()))
            .collect(),
    );
    expected.insert(
        "u".into(),
        (0..100)
            .map(|i| (key(i), b"committed after the loser".to_vec()))
            .collect(),
    );
    sim.crash();
    drop(loser);
    drop(db);
    expected
}

/// A database closed cleanly, with `t` = keys 0..200 "v…" and an empty table `e`.
pub fn closed_cleanly(storage: Arc<dyn Storage>) -> Contents {
    let db = Database::open_on(storage, DIR, options()).unwrap();
    commit_keys(&db, "t", 200, "v");
    db.table_or_create("e").unwrap();
    db.close().unwrap();
    let mut expected = Contents::new();
    expected.insert(
        "t".into(),
        (0..200)
            .map(|i| (key(i), format!("v{i}").into_bytes()))
            .collect(),
    );
    expected.insert("e".into(), BTreeMap::new());
    expected
}

/// A storage wrapper that lets reads through and refuses — and records — every call
/// that could change what is on disk: opening a file other than read-only, writes,
/// length changes, creating directories, renames, removals and exclusive locks (which
/// create their file). Syncs (of a file, through its read-only handle, or of a
/// directory) and cache drops change no byte: they go through, and are recorded apart
/// ([`NoChanges::settled`]) — a read-only open makes what it reads durable first.
pub struct NoChanges {
    inner: Arc<dyn Storage>,
    refused: Arc<Mutex<Vec<String>>>,
    settled: Arc<Mutex<Vec<String>>>,
}

impl NoChanges {
    pub fn new(inner: Arc<dyn Storage>) -> Arc<NoChanges> {
        Arc::new(NoChanges {
            inner,
            refused: Arc::default(),
            settled: Arc::default(),
        })
    }

    /// Every refused call, as "operation path".
    pub fn refused(&self) -> Vec<String> {
        self.refused.lock().clone()
    }

    /// Every sync and cache drop let through, as "operation path".
    pub fn settled(&self) -> Vec<String> {
        self.settled.lock().clone()
    }

    fn refuse(&self, what: &str, path: &Path) -> io::Error {
        refuse(&self.refused, what, path)
    }
}

fn refuse(log: &Mutex<Vec<String>>, what: &str, path: &Path) -> io::Error {
    log.lock().push(format!("{what} {}", path.display()));
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{what} refused: the test storage is read-only"),
    )
}

struct NoChangesFile {
    inner: Box<dyn FileHandle>,
    path: std::path::PathBuf,
    refused: Arc<Mutex<Vec<String>>>,
    settled: Arc<Mutex<Vec<String>>>,
}

impl FileHandle for NoChangesFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(refuse(&self.refused, "write", &self.path))
    }
    fn sync_data(&self) -> io::Result<()> {
        self.settled
            .lock()
            .push(format!("sync {}", self.path.display()));
        self.inner.sync_data()
    }
    fn set_len(&self, _: u64) -> io::Result<()> {
        Err(refuse(&self.refused, "set_len", &self.path))
    }
    fn allocate(&self, _: u64) -> io::Result<()> {
        Err(refuse(&self.refused, "allocate", &self.path))
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn drop_cache(&self) -> io::Result<()> {
        self.settled
            .lock()
            .push(format!("drop_cache {}", self.path.display()));
        self.inner.drop_cache()
    }
}

impl Storage for NoChanges {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        if options != OpenOptions::READ_ONLY {
            return Err(self.refuse(&format!("open {options:?}"), path));
        }
        Ok(Box::new(NoChangesFile {
            inner: self.inner.open(path, options)?,
            path: path.to_path_buf(),
            refused: self.refused.clone(),
            settled: self.settled.clone(),
        }))
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        Err(self.refuse("create_dir_all", dir))
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        Err(self.refuse("remove", path))
    }
    fn rename(&self, from: &Path, _: &Path) -> io::Result<()> {
        Err(self.refuse("rename", from))
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.settled
            .lock()
            .push(format!("sync_dir {}", dir.display()));
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        Err(self.refuse("exclusive lock", path))
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.inner.lock_shared(path)
    }
    fn dir_identity(&self, dir: &Path) -> io::Result<sluice_storage::DirIdentity> {
        self.inner.dir_identity(dir)
    }
    /// Outside every directory: nothing to watch, passed through.
    fn scratch(&self) -> io::Result<Box<dyn FileHandle>> {
        self.inner.scratch()
    }
}

/// Asserts that every counted operation on `sim` since `before` (its stats then) was a
/// sync: a read-only open makes what it reads durable, and writes, creates, renames or
/// removes nothing.
pub fn assert_only_syncs(sim: &SimStorage, before: SimStats, context: &str) {
    let after = sim.stats();
    let syncs = (after.syncs - before.syncs) + (after.dir_syncs - before.dir_syncs);
    assert_eq!(
        after.ops - before.ops,
        syncs,
        "{context}: a read-only open made counted operations other than syncs"
    );
    assert_eq!(
        after.writes, before.writes,
        "{context}: a read-only open wrote"
    );
}
