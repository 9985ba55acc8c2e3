//! A storage wrapper whose syncs can be held: for tests that need "the log is not yet
//! durable" to last exactly as long as they say.

use crate::{FileHandle, LockGuard, OpenOptions, Storage};
use parking_lot::{Condvar, Mutex};
use std::io;
use std::path::Path;
use std::sync::Arc;

#[derive(Default)]
struct GateState {
    closed: bool,
    /// `sync_data` calls currently held at the gate.
    held: usize,
}

#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

/// Wraps a storage; while the gate is closed, every `sync_data` waits at it (before
/// syncing). Everything else passes straight through.
#[derive(Clone)]
pub struct GatedStorage {
    inner: Arc<dyn Storage>,
    gate: Arc<Gate>,
}

impl GatedStorage {
    /// A gate, open, in front of `inner`.
    pub fn new(inner: Arc<dyn Storage>) -> GatedStorage {
        GatedStorage {
            inner,
            gate: Arc::new(Gate::default()),
        }
    }

    /// From now on, syncs wait.
    pub fn close(&self) {
        self.gate.state.lock().closed = true;
    }

    /// Lets held and future syncs through.
    pub fn open(&self) {
        self.gate.state.lock().closed = false;
        self.gate.cv.notify_all();
    }

    /// Blocks until at least `n` syncs are waiting at the closed gate.
    pub fn wait_held(&self, n: usize) {
        let mut g = self.gate.state.lock();
        while g.held < n {
            self.gate.cv.wait(&mut g);
        }
    }
}

struct GatedFile {
    inner: Box<dyn FileHandle>,
    gate: Arc<Gate>,
}

impl FileHandle for GatedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        {
            let mut g = self.gate.state.lock();
            if g.closed {
                g.held += 1;
                self.gate.cv.notify_all();
                while g.closed {
                    self.gate.cv.wait(&mut g);
                }
                g.held -= 1;
            }
        }
        self.inner.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
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

impl Storage for GatedStorage {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        Ok(Box::new(GatedFile {
            inner: self.inner.open(path, options)?,
            gate: self.gate.clone(),
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
    fn dir_identity(&self, dir: &Path) -> io::Result<crate::DirIdentity> {
        self.inner.dir_identity(dir)
    }
    fn failpoint(&self, name: &'static str, path: &Path) -> io::Result<()> {
        self.inner.failpoint(name, path)
    }
}
