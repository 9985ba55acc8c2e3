//! [`SimStorage`]: the simulated disk behind the [`Storage`] seam, with crash points,
//! fault injection, locks, statistics and a trace.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::disk::{normalize, Disk, Inode, InodeId};
use super::fault::{crash_error, is_crash_error, FaultPlan, Faults, OpKind};
use super::record::{SimStats, TraceEvent};
use crate::{FileHandle, LockGuard, OpenOptions, Storage};

/// Everything behind the one mutex. A test disk values simple and obviously correct over
/// concurrency: every operation takes the lock for a few memory copies.
#[derive(Debug)]
struct State {
    disk: Disk,
    /// Consumed only by crashes, so the same seed and operations give the same outcome.
    rng: StdRng,
    faults: Faults,
    /// `Some(n)`: the n-th counted operation from now crashes the machine.
    crash_countdown: Option<u64>,
    stats: SimStats,
    trace: Option<Vec<TraceEvent>>,
    /// Held locks: path -> the token of the guard holding it.
    locks: HashMap<PathBuf, u64>,
    next_lock_token: u64,
}

impl State {
    /// The gate every counted operation passes before it is applied: counts it, fires an
    /// armed crash (the operation is then not applied) and injected faults.
    fn begin(&mut self, op: OpKind) -> io::Result<()> {
        self.stats.ops += 1;
        if let Some(left) = self.crash_countdown {
            assert!(left >= 1);
            if left == 1 {
                self.crash();
                let detail = "this operation was the crash point and was not applied";
                return Err(crash_error(self.stats.crashes, detail));
            }
            self.crash_countdown = Some(left - 1);
        }
        match self.faults.check(op) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn crash(&mut self) {
        self.crash_countdown = None;
        self.disk.crash(&mut self.rng);
        self.locks.clear();
        self.stats.crashes += 1;
    }

    fn record(&mut self, event: impl FnOnce() -> TraceEvent) {
        if let Some(trace) = &mut self.trace {
            trace.push(event());
        }
    }

    /// Creates a file at `path` (checked free and valid) as a counted operation.
    fn create(&mut self, path: &Path) -> io::Result<InodeId> {
        self.disk.check_file_path(path)?;
        self.begin(OpKind::Create)?;
        let inode = self.disk.create_file(path);
        self.record(|| TraceEvent::Create(path.to_path_buf()));
        Ok(inode)
    }
}

/// Shared by every clone of one `SimStorage` and by its handles and lock guards.
struct Shared {
    seed: u64,
    state: Mutex<State>,
}

/// An in-memory disk for crash tests, deterministic from a seed.
///
/// Writes and length changes are volatile until `sync_data`; creates, renames and removes
/// are volatile until `sync_dir` of their directory (a rename is made durable by syncing
/// either of its directories); directories are durable when created. Clones are cheap
/// and are all the same disk.
///
/// [`SimStorage::crash`] (or a crash armed with [`SimStorage::crash_at_op`]) simulates
/// power loss: directory entries become the durable ones plus a random prefix of the
/// unsynced directory operations (file systems journal metadata in order); each 512-byte
/// sector (aligned to file offsets) of each unsynced write is kept, dropped or garbled
/// (about 50/35/15 %), the last unsynced write of a file may be torn (only a prefix of
/// its sectors reaches the disk), and each unsynced length change is kept or dropped.
/// The same seed and the same operations give the same outcome. After a crash the disk
/// stays usable (that is the reboot): files no entry names are gone, locks are released,
/// and every handle opened before it fails with EIO (see [`SimStorage::is_crash_error`]).
///
/// Operations that fail their checks (`NotFound`, `AlreadyExists`, ...) are not counted
/// as attempted operations and trigger neither crashes nor faults.
#[derive(Clone)]
pub struct SimStorage {
    shared: Arc<Shared>,
    /// `Some(n)`: a view pinned to the machine's incarnation after `n` crashes (see
    /// [`SimStorage::pinned`]).
    epoch: Option<u64>,
}

impl fmt::Debug for SimStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The seed is what a reader needs to replay; the state is too big to print.
        f.debug_struct("SimStorage")
            .field("seed", &self.shared.seed)
            .finish_non_exhaustive()
    }
}

impl SimStorage {
    /// An empty disk whose crash outcomes are drawn from `seed`.
    pub fn new(seed: u64) -> SimStorage {
        let state = State {
            disk: Disk::default(),
            rng: StdRng::seed_from_u64(seed),
            faults: Faults::default(),
            crash_countdown: None,
            stats: SimStats::default(),
            trace: None,
            locks: HashMap::new(),
            next_lock_token: 0,
        };
        SimStorage {
            shared: Arc::new(Shared {
                seed,
                state: Mutex::new(state),
            }),
            epoch: None,
        }
    }

    /// A view of this disk for the machine's current incarnation: after the next crash,
    /// every operation through it fails with EIO, as a handle opened before the crash
    /// does. The check happens under the disk's lock, atomically with the crash, so a
    /// thread of the crashed incarnation can never change the rebooted disk (a zombie
    /// `remove` or `rename` landing after the crash). Give each incarnation of the
    /// system under test its own pinned view.
    pub fn pinned(&self) -> SimStorage {
        SimStorage {
            shared: Arc::clone(&self.shared),
            epoch: Some(self.state().stats.crashes),
        }
    }

    /// The state, if this view's incarnation is still alive.
    fn live(&self) -> io::Result<MutexGuard<'_, State>> {
        let state = self.shared.state.lock();
        match self.epoch {
            Some(e) if state.stats.crashes != e => Err(crash_error(
                state.stats.crashes,
                "the view belongs to an incarnation before a crash",
            )),
            _ => Ok(state),
        }
    }

    /// The seed this disk was made with (print it when a test fails, to replay it).
    pub fn seed(&self) -> u64 {
        self.shared.seed
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock()
    }

    /// Simulates power loss now (see the type's docs for what survives). Disarms a
    /// pending [`SimStorage::crash_at_op`], releases every lock and makes every open
    /// handle stale.
    pub fn crash(&self) {
        self.state().crash();
    }

    /// Arms a crash at the `n`-th (1-based) mutating or syncing operation from now
    /// (write_at, set_len, sync_data, sync_dir, create, rename, remove): that operation
    /// is not applied, the machine crashes, and the operation returns EIO. Replaces an
    /// earlier arming. Panics if `n` is 0.
    pub fn crash_at_op(&self, n: u64) {
        assert!(n >= 1, "crash_at_op counts from 1 (the next operation)");
        self.state().crash_countdown = Some(n);
    }

    /// Disarms a crash armed by [`SimStorage::crash_at_op`] that has not fired yet.
    pub fn disarm_crash(&self) {
        self.state().crash_countdown = None;
    }

    /// How many crashes (manual or armed) have happened.
    pub fn crashed_count(&self) -> u64 {
        self.state().stats.crashes
    }

    /// True if `error` is the EIO of a simulated crash (from a stale handle or from the
    /// operation at which an armed crash fired), as opposed to an injected fault.
    pub fn is_crash_error(error: &io::Error) -> bool {
        is_crash_error(error)
    }

    /// Arms a fault plan. Several plans may be armed; each counts matching operations
    /// from the moment it is injected. Plans survive crashes (a broken device stays
    /// broken when the power comes back); [`SimStorage::clear_faults`] removes them.
    pub fn inject(&self, plan: FaultPlan) {
        self.state().faults.inject(plan);
    }

    /// Removes every armed fault plan.
    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    /// The counters so far.
    pub fn stats(&self) -> SimStats {
        self.state().stats
    }

    /// Turns the trace of successful operations on or off (off discards what was
    /// recorded). Off by default: a long workload would record millions of events.
    pub fn set_trace(&self, on: bool) {
        let mut state = self.state();
        match (on, state.trace.is_some()) {
            (true, false) => state.trace = Some(Vec::new()),
            (false, true) => state.trace = None,
            _ => {}
        }
    }

    /// The events recorded since tracing was turned on or last taken (empty if off).
    pub fn take_trace(&self) -> Vec<TraceEvent> {
        self.state()
            .trace
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The length the file that `path` durably names would have after a crash now, if
    /// its entry is durable; unsynced writes and entries do not count.
    pub fn durable_len(&self, path: &Path) -> Option<u64> {
        let state = self.state();
        let image = state.disk.durable_image(&normalize(path))?;
        Some(image.len() as u64)
    }

    /// The durable bytes of the file that `path` durably names (see
    /// [`SimStorage::durable_len`]).
    pub fn read_durable(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state();
        state
            .disk
            .durable_image(&normalize(path))
            .map(<[u8]>::to_vec)
    }

    fn new_handle(&self, state: &mut State, inode: InodeId, path: PathBuf) -> SimHandle {
        state.disk.inode_mut(inode).open_handles += 1;
        SimHandle {
            shared: Arc::clone(&self.shared),
            inode,
            epoch: state.stats.crashes,
            path,
        }
    }
}

impl Storage for SimStorage {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        let path = normalize(path);
        let mut state = self.live()?;
        state.disk.check_file_path(&path)?;
        let inode = match state.disk.lookup(&path) {
            Some(_) if options.create_new => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{}: file exists", path.display()),
                ));
            }
            Some(inode) => {
                if options.truncate {
                    state.begin(OpKind::SetLen)?;
                    state.disk.inode_mut(inode).set_len(0);
                    state.record(|| TraceEvent::SetLen {
                        path: path.clone(),
                        len: 0,
                    });
                }
                inode
            }
            None if options.create || options.create_new => state.create(&path)?,
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{}: no such file", path.display()),
                ));
            }
        };
        Ok(Box::new(self.new_handle(&mut state, inode, path)))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.live()?.disk.create_dir_all(&normalize(dir))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.live()?.disk.list(&normalize(dir))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let path = normalize(path);
        let state = self.live()?;
        Ok(state.disk.is_dir(&path) || state.disk.lookup(&path).is_some())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let path = normalize(path);
        let mut state = self.live()?;
        state.disk.check_remove(&path)?;
        state.begin(OpKind::Remove)?;
        state.disk.remove(&path);
        state.record(|| TraceEvent::Remove(path));
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (normalize(from), normalize(to));
        let mut state = self.live()?;
        state.disk.check_rename(&from, &to)?;
        state.begin(OpKind::Rename)?;
        state.disk.rename(&from, &to);
        state.record(|| TraceEvent::Rename { from, to });
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let dir = normalize(dir);
        let mut state = self.live()?;
        if !state.disk.is_dir(&dir) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: no such directory", dir.display()),
            ));
        }
        state.begin(OpKind::SyncDir)?;
        state.disk.sync_dir(&dir);
        state.stats.dir_syncs += 1;
        state.record(|| TraceEvent::SyncDir(dir));
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        let path = normalize(path);
        let mut state = self.live()?;
        state.disk.check_file_path(&path)?;
        // Like the real backend: the lock file is created if needed, then locked.
        if state.disk.lookup(&path).is_none() {
            state.create(&path)?;
        }
        if state.locks.contains_key(&path) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another process or handle", path.display()),
            ));
        }
        let token = state.next_lock_token;
        state.next_lock_token += 1;
        state.locks.insert(path.clone(), token);
        Ok(Box::new(SimLock {
            shared: Arc::clone(&self.shared),
            path,
            token,
        }))
    }
}

/// A held simulated lock; dropping it releases the lock unless a crash already did.
struct SimLock {
    shared: Arc<Shared>,
    path: PathBuf,
    token: u64,
}

impl LockGuard for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock();
        // After a crash released it, someone else may hold the path: leave theirs alone.
        if state.locks.get(&self.path) == Some(&self.token) {
            state.locks.remove(&self.path);
        }
    }
}

/// An open simulated file. It names its inode, not its path, so it keeps working after
/// the file is renamed or removed, as on POSIX; after a crash it is stale.
struct SimHandle {
    shared: Arc<Shared>,
    inode: InodeId,
    /// `stats.crashes` when opened: the handle is live while no crash has happened since.
    epoch: u64,
    /// The path it was opened with, for the trace.
    path: PathBuf,
}

impl SimHandle {
    /// The state, if this handle is still live, or the EIO that a stale handle returns.
    fn live(&self) -> io::Result<MutexGuard<'_, State>> {
        let state = self.shared.state.lock();
        if state.stats.crashes != self.epoch {
            assert!(state.stats.crashes > self.epoch);
            let detail = "this handle was opened before the crash";
            return Err(crash_error(self.epoch + 1, detail));
        }
        Ok(state)
    }
}

impl FileHandle for SimHandle {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let state = self.live()?;
        Ok(state.disk.inode(self.inode).read(buf, offset))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut state = self.live()?;
        Inode::check_size(offset.checked_add(buf.len() as u64))?;
        state.begin(OpKind::Write)?;
        state.disk.inode_mut(self.inode).write(offset, buf);
        state.stats.writes += 1;
        state.stats.bytes_written += buf.len() as u64;
        state.record(|| TraceEvent::Write {
            path: self.path.clone(),
            offset,
            len: buf.len() as u64,
        });
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut state = self.live()?;
        state.begin(OpKind::SyncData)?;
        state.disk.inode_mut(self.inode).sync();
        state.stats.syncs += 1;
        state.record(|| TraceEvent::SyncData(self.path.clone()));
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = self.live()?;
        Inode::check_size(Some(len))?;
        state.begin(OpKind::SetLen)?;
        state.disk.inode_mut(self.inode).set_len(len);
        state.record(|| TraceEvent::SetLen {
            path: self.path.clone(),
            len,
        });
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let state = self.live()?;
        Ok(state.disk.inode(self.inode).volatile.len() as u64)
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock();
        if state.stats.crashes != self.epoch {
            return; // The crash already forgot every handle of that epoch.
        }
        let inode = state.disk.inode_mut(self.inode);
        assert!(inode.open_handles > 0);
        inode.open_handles -= 1;
        if inode.open_handles == 0 {
            // An unlinked file dies with its last handle.
            state.disk.free_unreferenced();
        }
    }
}
