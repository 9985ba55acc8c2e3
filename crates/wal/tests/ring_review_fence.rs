//! Review of the io_uring flush path: the staged fsyncgate interleaving of
//! `a_failed_extension_sync_fails_the_daemons_next_sync`, on the RING path. That test's
//! storage is a `StorageLayer`, which hands out no ring, so it only ever runs the daemon
//! (the fallback). Here a wrapper forwards the simulated disk's ring: the writer is
//! whichever thread reaps the chain, and its sync settles through `SyncFence::confirm`.
//! The preparer's extension sync of a segment fails after a ring write into it and
//! before the ring's sync; the ring's raw sync then succeeds (nothing left to write), so
//! only the fence can refuse it. Guarantee: no record acknowledged that a power loss
//! then loses.

use crate::common::*;
use parking_lot::{Condvar, Mutex};
use sluice_storage::{
    DirIdentity, FaultKind, FaultOp, FaultPlan, FileHandle, FileLayer, FileOp, IoRing, LockGuard,
    OpenOptions, Storage,
};
use sluice_wal::{FlushPath, Log, Lsn, Preallocate};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Stage {
    preparer_waiting: Option<PathBuf>,
    writer_pending: Option<PathBuf>,
    preparer_failed: bool,
    writer_synced_after: Option<bool>,
    done: bool,
}

type St = (Mutex<Stage>, Condvar);

fn wait_for(stage: &St, limit: Duration, until: impl Fn(&Stage) -> bool) {
    let (m, cv) = stage;
    let deadline = Instant::now() + limit;
    let mut g = m.lock();
    while !until(&g) && !cv.wait_until(&mut g, deadline).timed_out() {}
}

/// The staged disk: forwards everything, the ring included.
#[derive(Clone)]
struct RingStaged {
    sim: sluice_storage::SimStorage,
    stage: Arc<St>,
}

struct File {
    inner: Box<dyn FileHandle>,
    path: PathBuf,
    disk: RingStaged,
}

impl FileLayer for File {
    fn below(&self) -> &dyn FileHandle {
        &*self.inner
    }
    fn around<T>(&self, op: FileOp, call: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        match op {
            FileOp::Write(_) => {
                let r = call()?;
                self.after_write();
                Ok(r)
            }
            FileOp::Sync => self.sync(call),
            FileOp::Read(_) => call(),
        }
    }
}

fn is_preparer() -> bool {
    thread_is("sluice-prepare")
}

impl File {
    fn after_write(&self) {
        if is_preparer() || !is_segment(&self.path) {
            return;
        }
        let (m, cv) = &*self.disk.stage;
        {
            let mut g = m.lock();
            if g.done || g.preparer_waiting.as_deref() != Some(&self.path) {
                return;
            }
            g.writer_pending = Some(self.path.clone());
            cv.notify_all();
        }
        wait_for(&self.disk.stage, Duration::from_secs(1), |s| {
            s.preparer_failed
        });
        let mut g = m.lock();
        if !g.preparer_failed {
            g.writer_pending = None;
        }
    }

    fn sync<T>(&self, call: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let (m, cv) = &*self.disk.stage;
        if is_preparer() && is_segment(&self.path) {
            if !m.lock().done {
                m.lock().preparer_waiting = Some(self.path.clone());
            }
            wait_for(&self.disk.stage, Duration::from_millis(300), |s| {
                s.writer_pending.is_some()
            });
            let staged_now = {
                let mut g = m.lock();
                g.preparer_waiting = None;
                !g.done && g.writer_pending.as_deref() == Some(&self.path)
            };
            if staged_now {
                self.disk.sim.inject(
                    FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio)
                        .on(self.path.to_str().unwrap()),
                );
                let r = call();
                self.disk.sim.clear_faults();
                assert!(r.is_err(), "the injected failure");
                {
                    let mut g = m.lock();
                    g.preparer_failed = true;
                    g.done = true;
                    cv.notify_all();
                }
                wait_for(&self.disk.stage, Duration::from_secs(1), |s| {
                    s.writer_synced_after.is_some()
                });
                return r;
            }
        }
        let r = call();
        if !is_preparer() && is_segment(&self.path) {
            let mut g = m.lock();
            if g.preparer_failed && g.writer_synced_after.is_none() {
                g.writer_synced_after = Some(r.is_ok());
                cv.notify_all();
            }
        }
        r
    }
}

impl RingStaged {
    fn wrap(&self, f: Box<dyn FileHandle>) -> Box<dyn FileHandle> {
        let path = f.path().unwrap().to_path_buf();
        Box::new(File {
            inner: f,
            path,
            disk: self.clone(),
        })
    }
}

impl Storage for RingStaged {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        Ok(self.wrap(self.sim.open(path, options)?))
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.sim.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.sim.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.sim.exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.sim.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.sim.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.sim.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.sim.lock(path)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.sim.lock_shared(path)
    }
    fn dir_identity(&self, dir: &Path) -> io::Result<DirIdentity> {
        self.sim.dir_identity(dir)
    }
    fn scratch(&self) -> io::Result<Box<dyn FileHandle>> {
        Ok(self.wrap(self.sim.scratch()?))
    }
    fn io_ring(&self) -> io::Result<Box<dyn IoRing>> {
        self.sim.io_ring()
    }
    fn failpoint(&self, name: &'static str, path: &Path) -> io::Result<()> {
        self.sim.failpoint(name, path)
    }
}

fn attempt(seed: u64, preallocate: Preallocate) -> bool {
    let (sim, _) = sim(seed);
    let disk = RingStaged {
        sim: sim.clone(),
        stage: Arc::default(),
    };
    let storage: Arc<dyn Storage> = Arc::new(disk.clone());
    let dir = Path::new("/log");
    let mut options = small_options();
    options.segment_bytes = 64 << 10;
    options.preallocate = preallocate;
    options.flush = FlushPath::IoUring;
    let log = Log::open(storage, dir, options).unwrap();
    assert_eq!(
        log.flush_path().path,
        FlushPath::IoUring,
        "{}",
        log.flush_path()
    );
    let mut acknowledged: Vec<(Lsn, Vec<u8>)> = Vec::new();
    for seq in 0..2000 {
        let p = payload(1, seq, 200);
        let Ok(a) = log.append(&p) else { break };
        if log.wait_durable(a.end).is_err() {
            break;
        }
        acknowledged.push((a.lsn, p));
    }
    let stage = disk.stage.0.lock();
    if !stage.preparer_failed {
        return false;
    }
    eprintln!(
        "seed {seed} {preallocate:?}: staged; the ring's raw sync after the failure: {:?}; \
         poisoned: {:?}",
        stage.writer_synced_after,
        log.poisoned().is_some()
    );
    drop(stage);
    drop(log);
    sim.crash();
    let log = Log::open(Arc::new(sim.clone()), dir, options).unwrap();
    let got = read_all(&log);
    assert!(
        got.starts_with(&acknowledged),
        "ring path: acknowledged records lost after a failed preparer sync: {} acknowledged, \
         {} recovered ({preallocate:?})",
        acknowledged.len(),
        got.len()
    );
    true
}

#[test]
fn a_failed_extension_sync_fails_the_rings_next_sync() {
    for preallocate in [Preallocate::Allocate, Preallocate::Zeros] {
        let staged = (0..5).filter(|i| attempt(61 + i, preallocate)).count();
        assert!(
            staged > 0,
            "the staged interleaving never happened ({preallocate:?})"
        );
    }
}
