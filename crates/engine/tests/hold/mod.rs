//! A storage wrapper for interleaving tests: the next read of one file, once armed, is
//! held (before it reaches the disk) until the test lets it go, and the test learns
//! when a reader is held there. Everything else passes straight through.

#![allow(dead_code)] // each test file uses part of it

use parking_lot::{Condvar, Mutex};
use sluice_storage::{DirIdentity, FileHandle, LockGuard, OpenOptions, Storage};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct State {
    /// The file whose next read is held.
    armed: Option<PathBuf>,
    /// A reader is held.
    held: bool,
    /// The held reader may go on.
    released: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Clone)]
pub struct HoldReads {
    inner: Arc<dyn Storage>,
    shared: Arc<Shared>,
}

impl HoldReads {
    pub fn new(inner: Arc<dyn Storage>) -> HoldReads {
        HoldReads {
            inner,
            shared: Arc::default(),
        }
    }

    /// The next read of `path` (by any thread) waits until [`HoldReads::release`].
    pub fn arm(&self, path: impl AsRef<Path>) {
        let mut s = self.shared.state.lock();
        s.armed = Some(path.as_ref().to_path_buf());
        s.held = false;
        s.released = false;
    }

    /// Blocks until a reader is held; panics after `limit` (a setup failure: the
    /// scenario never read the file).
    pub fn wait_held(&self, limit: Duration) {
        let mut s = self.shared.state.lock();
        let deadline = std::time::Instant::now() + limit;
        while !s.held {
            if self.shared.cv.wait_until(&mut s, deadline).timed_out() {
                panic!("setup: nobody read the armed file within {limit:?}");
            }
        }
    }

    /// Lets the held reader go on.
    pub fn release(&self) {
        self.shared.state.lock().released = true;
        self.shared.cv.notify_all();
    }
}

struct HoldFile {
    inner: Box<dyn FileHandle>,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl HoldFile {
    fn maybe_hold(&self) {
        let mut s = self.shared.state.lock();
        if s.armed.as_deref() != Some(self.path.as_path()) {
            return;
        }
        s.armed = None;
        s.held = true;
        self.shared.cv.notify_all();
        while !s.released {
            self.shared.cv.wait(&mut s);
        }
    }
}

impl FileHandle for HoldFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.maybe_hold();
        self.inner.read_at(buf, offset)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.maybe_hold();
        self.inner.read_exact_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.inner.allocate(len)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn drop_cache(&self) -> io::Result<()> {
        self.inner.drop_cache()
    }
    fn failpoint(&self, name: &'static str) -> io::Result<()> {
        self.inner.failpoint(name)
    }
}

impl Storage for HoldReads {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        Ok(Box::new(HoldFile {
            inner: self.inner.open(path, options)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.inner.lock(path)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.inner.lock_shared(path)
    }
    fn dir_identity(&self, dir: &Path) -> io::Result<DirIdentity> {
        self.inner.dir_identity(dir)
    }
    fn scratch(&self) -> io::Result<Box<dyn FileHandle>> {
        self.inner.scratch()
    }
    fn failpoint(&self, name: &'static str, path: &Path) -> io::Result<()> {
        self.inner.failpoint(name, path)
    }
}
