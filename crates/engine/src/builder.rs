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
    /// example on another device. The same directory must be given at every open.
    pub fn log_dir(mut self, dir: impl AsRef<Path>) -> Builder {
        self.log_dir = Some(dir.as_ref().to_path_buf());
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
    /// [`Database::open_with_log`] for what it refuses.
    pub fn open(self) -> Result<Database> {
        let storage = self
            .storage
            .unwrap_or_else(|| Arc::new(OsStorage::new()) as Arc<dyn Storage>);
        let log_storage = self.log_storage.unwrap_or_else(|| storage.clone());
        let log_dir = self.log_dir.unwrap_or_else(|| self.dir.join("log"));
        Database::open_with_log(storage, &self.dir, log_storage, log_dir, self.options)
    }
}
