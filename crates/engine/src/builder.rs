//! [`Builder`]: opening a database with options, on the real file system by default.

use crate::db::Database;
use crate::error::Result;
use crate::options::{CommitProtocol, Options};
use sluice_storage::{OsStorage, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Opens a database with chosen options. Start from [`Database::builder`]; every setter
/// has a default ([`Options::default`]), and [`Builder::open`] checks the combination
/// (an option out of range is an [`Error::InvalidArgument`](crate::Error) naming it).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use sluice::{CommitProtocol, Database};
/// use std::time::Duration;
///
/// let db = Database::builder(dir.path())
///     .pool_pages(1024)                 // 8 MiB of cache with 8 KiB pages
///     .commit(CommitProtocol::Classic)  // hold locks until the commit is durable
///     .lock_timeout(Duration::from_millis(500))
///     .open()?;
/// assert_eq!(db.options().pool_pages, 1024);
/// # Ok::<(), sluice::Error>(())
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `open` is called"]
pub struct Builder {
    dir: PathBuf,
    options: Options,
    log_dir: Option<PathBuf>,
    storage: Option<Arc<dyn Storage>>,
    log_storage: Option<Arc<dyn Storage>>,
    /// What a partitioned database installs in each partition (`coordination`).
    pub(crate) hooks: crate::coordination::Hooks,
}

impl Database {
    /// A [`Builder`] for the database in directory `dir`: set options, then
    /// [`Builder::open`]. On the real file system unless [`Builder::storage`] says
    /// otherwise. (Here, beside the builder, so that the database's modules need not
    /// import the builder that imports them.)
    pub fn builder(dir: impl AsRef<Path>) -> Builder {
        Builder::new(dir.as_ref())
    }
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("dir", &self.dir)
            .field("log_dir", &self.log_dir)
            .field("options", &self.options)
            .field("custom_storage", &self.storage.is_some())
            .finish()
    }
}

impl Builder {
    pub(crate) fn new(dir: &Path) -> Builder {
        Builder {
            dir: dir.to_path_buf(),
            options: Options::default(),
            log_dir: None,
            storage: None,
            log_storage: None,
            hooks: crate::coordination::Hooks::default(),
        }
    }

    /// Starts from `options` instead of the defaults (later setters change them).
    pub fn options(mut self, options: Options) -> Builder {
        self.options = options;
        self
    }

    /// Bytes per page, a power of two from 1 KiB to 32 KiB (default 8 KiB). Used when
    /// the database is created; an existing one keeps its own.
    pub fn page_size(mut self, bytes: usize) -> Builder {
        self.options.page_size = bytes;
        self
    }

    /// Pages the buffer pool caches in memory (default 4,096; at least 16).
    pub fn pool_pages(mut self, pages: usize) -> Builder {
        self.options.pool_pages = pages;
        self
    }

    /// How transactions commit (default [`CommitProtocol::ElrPipelined`]).
    pub fn commit(mut self, protocol: CommitProtocol) -> Builder {
        self.options.commit = protocol;
        self
    }

    /// How long a lock request waits before it fails as a deadlock victim (default 2 s).
    pub fn lock_timeout(mut self, timeout: Duration) -> Builder {
        self.options.lock_timeout = timeout;
        self
    }

    /// Bytes per log segment file (default 16 MiB). Used when the log is created; an
    /// existing log keeps its own.
    pub fn log_segment_bytes(mut self, bytes: u64) -> Builder {
        self.options.log.segment_bytes = bytes;
        self
    }

    /// Bytes of the in-memory log buffer (default 4 MiB).
    pub fn log_buffer_bytes(mut self, bytes: usize) -> Builder {
        self.options.log.buffer_bytes = bytes;
        self
    }

    /// Keeps the log in `dir` instead of `log/` inside the database directory — for
    /// example on another device. The same directory must be given at every open, and
    /// it must not be the database directory itself under another spelling (`D/../D`, a
    /// symlink): the two are compared by identity, and such a `dir` is refused with
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    pub fn log_dir(mut self, dir: impl AsRef<Path>) -> Builder {
        self.log_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Archives the log continuously in `dir` (default: no archive; see
    /// [`Options::log_archive`]): a background thread copies each finished log segment
    /// there (a temporary name, sync, rename, directory sync), then appends an entry to
    /// the archive's `MANIFEST` (file name, LSN range, length, CRC32C;
    /// [`sluice_wal::read_archive_manifest`], [`sluice_wal::verify_archive`]).
    /// Checkpoints free only segments already archived, so a stalled or failed archiver
    /// keeps the log growing: [`Database::metrics`](crate::Database::metrics) shows the
    /// archive's progress and error, and a checkpoint held back by more than two
    /// segments says so with a `tracing` warning. An archive I/O error stops archiving
    /// (the database goes on) until the next open. `dir` must be a directory of its own
    /// (not the database's or the log's under another spelling), on the log's storage,
    /// and the same archive must not serve two logs (it names the log it archives and
    /// refuses another). A read-only open ignores it.
    pub fn log_archive(mut self, dir: impl AsRef<Path>) -> Builder {
        self.options.log_archive = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Mirrors the log archive ([`Builder::log_archive`], which it needs) to `mirror`
    /// (see [`Options::archive_mirror`]; `sluice_objstore::ObjectStoreMirror` is one
    /// over an object store): after a segment's local copy and `MANIFEST` entry are
    /// durable, the copy and then the whole `MANIFEST` are uploaded, and only then does
    /// the segment count as archived — checkpoints wait for the upload before they free
    /// it. Local copies the mirror lacks (an interrupted upload, an archive mirrored for
    /// the first time) are uploaded at open. A failed upload is retried
    /// ([`sluice_wal::ArchiveMirror::retry`]), then stops archiving until the next open,
    /// reported like a local failure ([`Database::metrics`](crate::Database::metrics)).
    pub fn archive_mirror(mut self, mirror: Arc<dyn sluice_wal::ArchiveMirror>) -> Builder {
        self.options.archive_mirror = Some(sluice_wal::SharedMirror::new(mirror));
        self
    }

    /// Log bytes between background checkpoints (default 64 MiB; 0: only the timer).
    pub fn checkpoint_log_bytes(mut self, bytes: u64) -> Builder {
        self.options.checkpoint_log_bytes = bytes;
        self
    }

    /// Time between background checkpoints of a database that wrote something (default
    /// 30 s; zero: no timer).
    pub fn checkpoint_interval(mut self, interval: Duration) -> Builder {
        self.options.checkpoint_interval = interval;
        self
    }

    /// How changed pages reach the data file (default
    /// [`Strategy::CheckpointSweep`](crate::Strategy::CheckpointSweep)): a page cleaner
    /// with a policy, or log-based propagation (see [`Strategy`](crate::Strategy) and
    /// [`Database::backlog`](crate::Database::backlog)). Every strategy gives the same
    /// guarantees; they differ in how much log a restart replays and in how they write.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use sluice::{Database, Strategy};
    ///
    /// let db = Database::builder(dir.path())
    ///     .propagation("log".parse::<Strategy>()?)
    ///     .open()?;
    /// let t = db.table_or_create("t")?;
    /// db.transaction(|tx| tx.put(&t, b"k", b"v"))?;
    /// db.checkpoint()?; // the log cleaner writes the page from the sorted runs
    /// assert!(db.backlog().propagated_bytes > 0);
    /// # Ok::<(), sluice::Error>(())
    /// ```
    pub fn propagation(mut self, strategy: crate::Strategy) -> Builder {
        self.options.propagation = strategy;
        self
    }

    /// Opens the database read-only (default `false`), as SQLite's
    /// `SQLITE_OPEN_READONLY` or redb's `ReadOnlyDatabase` do: for a second process
    /// reading a database that no process holds for writing, or for a copy of one (a
    /// backup, the directory of a crashed process), also on media it may not write.
    ///
    /// * **No byte on disk changes.** No file or directory is created, written,
    ///   renamed, removed or resized, and no log record is appended: no checkpoint at
    ///   open, none in the background (no checkpointer thread) and none at close. A
    ///   missing directory, or one that is not a sluice database, is an error.
    /// * **What it shows is durable.** Before it reads them it syncs the directory, the
    ///   control file, the data file and the log — through read-only handles: an fsync
    ///   needs no write permission and changes no byte — and drops their cached pages,
    ///   as a read-write open does. A killed writer's unsynced log bytes, still in the
    ///   page cache, would otherwise show a commit that a power loss then takes away. A
    ///   file system that cannot sync at all (`EINVAL`, `EROFS`: read-only media) is
    ///   read as it is, having nothing waiting to be made durable; any other failed sync
    ///   refuses the open.
    /// * **Locking.** It takes a *shared* lock on the directory's `LOCK` file (and on
    ///   the log directory's): any number of read-only openers coexist, while a
    ///   read-write opener and read-only openers exclude each other with
    ///   [`Error::Locked`](crate::Error::Locked). A directory without a `LOCK` file (a
    ///   copy made without it) is opened without a lock — the file is not created — and
    ///   then nothing stops a read-write opener from arriving later and changing the
    ///   files underneath: open copies read-only only where no writer will.
    /// * **A database that was not closed cleanly** (a crash: log beyond the last
    ///   checkpoint) shows the state recovery would give it: restart recovery runs *in
    ///   memory* — redo into the buffer pool, losers undone without logging — and the
    ///   pages it changed are never written back to the data file. Those the pool has no
    ///   room for go to a temporary file outside the database directory (an anonymous
    ///   file in the system's temporary directory, `TMPDIR`, gone when the process
    ///   ends) and are read back from there, so a pool of any size opens a redo of any
    ///   size. Writes a killed process left unsynced in the page cache count: they were
    ///   made durable first (above).
    /// * **Transactions.** Reads (`get`, `get_for_update`, `scan`, `scan_prefix`) work;
    ///   every write (`put`, `delete`, a `retain` that deletes, creating a table, also
    ///   through [`Database::table_or_create`](crate::Database::table_or_create) of a
    ///   missing one) fails with [`Error::ReadOnly`](crate::Error::ReadOnly), which
    ///   fails its transaction as every error does; so does
    ///   [`Database::checkpoint`](crate::Database::checkpoint). Committing a transaction
    ///   that wrote nothing succeeds. [`Database::verify`](crate::Database::verify)
    ///   checks without checkpointing first.
    /// * The data file's page size and the log's segment size come from the database;
    ///   the commit protocol and the checkpoint options have nothing to do.
    ///
    /// [`Database::options`](crate::Database::options) reports `read_only: true`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use sluice::{Database, Error};
    ///
    /// let db = Database::open(dir.path())?;
    /// let t = db.table_or_create("t")?;
    /// db.transaction(|tx| tx.put(&t, b"k", b"v"))?;
    /// db.close()?;
    ///
    /// let ro = Database::builder(dir.path()).read_only(true).open()?;
    /// assert!(ro.options().read_only);
    /// let t = ro.table("t")?;
    /// let mut tx = ro.begin();
    /// assert_eq!(tx.get(&t, b"k")?, Some(b"v".to_vec()));
    /// assert!(matches!(tx.put(&t, b"k", b"w"), Err(Error::ReadOnly)));
    /// # Ok::<(), sluice::Error>(())
    /// ```
    pub fn read_only(mut self, read_only: bool) -> Builder {
        self.options.read_only = read_only;
        self
    }

    /// Opens the files through `storage` instead of the real file system — for example
    /// a [`sluice_storage::SimStorage`] in tests. The log uses it too unless
    /// [`Builder::log_storage`] says otherwise.
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Builder {
        self.storage = Some(storage);
        self
    }

    /// Opens the log's files through `storage` (with [`Builder::log_dir`], a log on a
    /// device of its own, or behind a [`sluice_storage::DeviceModel`]).
    pub fn log_storage(mut self, storage: Arc<dyn Storage>) -> Builder {
        self.log_storage = Some(storage);
        self
    }

    /// The options as set so far.
    pub fn current_options(&self) -> &Options {
        &self.options
    }

    /// Opens (creating if needed) the database, running restart recovery; see
    /// [`Database::open_with_log`] for what it refuses. Read-only
    /// ([`Builder::read_only`]), it opens an existing database and changes nothing.
    pub fn open(self) -> Result<Database> {
        let storage = self
            .storage
            .unwrap_or_else(|| Arc::new(OsStorage::new()) as Arc<dyn Storage>);
        let log_storage = self.log_storage.unwrap_or_else(|| storage.clone());
        let log_dir = self.log_dir.unwrap_or_else(|| self.dir.join("log"));
        Database::open_hooked(
            storage,
            &self.dir,
            log_storage,
            log_dir,
            self.options,
            self.hooks,
        )
    }
}
