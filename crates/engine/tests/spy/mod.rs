//! A storage wrapper for scenario tests: it records which thread replaced `CONTROL` (only
//! a checkpoint does), and fails chosen operations on demand (segment removal, reads of
//! one file), passing everything else through.

#![allow(dead_code)] // each test file uses part of it

use parking_lot::{Condvar, Mutex};
use sluice_storage::{FileHandle, LockGuard, OpenOptions, Storage};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// Who replaced the control file.
#[derive(Debug, Clone)]
pub struct ControlWrite {
    pub thread: ThreadId,
    pub name: String,
}

#[derive(Default)]
struct State {
    control_writes: Vec<ControlWrite>,
    failing_reads: Option<PathBuf>,
}

pub struct Spy {
    inner: Arc<dyn Storage>,
    state: Arc<Mutex<State>>,
    changed: Arc<Condvar>,
    fail_segment_removal: AtomicBool,
}

impl Spy {
    pub fn new(inner: Arc<dyn Storage>) -> Arc<Spy> {
        Arc::new(Spy {
            inner,
            state: Arc::default(),
            changed: Arc::default(),
            fail_segment_removal: AtomicBool::new(false),
        })
    }

    /// Every replacement of `CONTROL` so far.
    pub fn control_writes(&self) -> Vec<ControlWrite> {
        self.state.lock().control_writes.clone()
    }

    pub fn forget_control_writes(&self) {
        self.state.lock().control_writes.clear();
    }

    /// Waits until some thread other than `not` has replaced `CONTROL`; false if none
    /// did within `limit` (a liveness bound, not a timing assertion).
    pub fn wait_control_write_not_by(&self, not: ThreadId, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut s = self.state.lock();
        loop {
            if s.control_writes.iter().any(|w| w.thread != not) {
                return true;
            }
            if self.changed.wait_until(&mut s, deadline).timed_out() {
                return false;
            }
        }
    }

    /// From now on, removing a log segment fails with EIO.
    pub fn fail_segment_removal(&self) {
        self.fail_segment_removal.store(true, Ordering::SeqCst);
    }

    /// From now on, reads of the file at `path` fail with EIO.
    pub fn fail_reads_of(&self, path: &Path) {
        self.state.lock().failing_reads = Some(path.to_path_buf());
    }
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(5)
}

struct SpyFile {
    inner: Box<dyn FileHandle>,
    path: PathBuf,
    state: Arc<Mutex<State>>,
}

impl FileHandle for SpyFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if self.state.lock().failing_reads.as_deref() == Some(self.path.as_path()) {
            return Err(eio());
        }
        self.inner.read_at(buf, offset)
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
}

impl Storage for Spy {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        Ok(Box::new(SpyFile {
            inner: self.inner.open(path, options)?,
            path: path.to_path_buf(),
            state: self.state.clone(),
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
        let segment = path.extension().is_some_and(|e| e == "wal");
        if segment && self.fail_segment_removal.load(Ordering::SeqCst) {
            return Err(eio());
        }
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)?;
        if to.file_name().is_some_and(|n| n == "CONTROL") {
            let t = std::thread::current();
            self.state.lock().control_writes.push(ControlWrite {
                thread: t.id(),
                name: t.name().unwrap_or("").to_string(),
            });
            self.changed.notify_all();
        }
        Ok(())
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
    fn dir_identity(&self, dir: &Path) -> io::Result<sluice_storage::DirIdentity> {
        self.inner.dir_identity(dir)
    }
    fn scratch(&self) -> io::Result<Box<dyn FileHandle>> {
        self.inner.scratch()
    }
}
