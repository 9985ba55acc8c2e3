//! [`SimStorage`]: the simulated disk behind the [`Storage`] seam, with power losses,
//! process kills, fault injection, locks, statistics and a trace.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::disk::{normalize, Disk, InodeId};
use super::fault::FailAction;
use super::fault::{is_halt_error, FaultPlan, Faults, Halt, OpKind};
use super::handle::{SimHandle, SimLock};
use super::record::{SimStats, TraceEvent};
use super::state::{ArmedPoint, Held, Shared, State, NEXT_DISK};
use crate::error::{with_path, with_paths};
use crate::{
    dirs_top_down, parent_dir, DeferredRing, DirIdentity, FileHandle, IoRing, LockGuard,
    OpenOptions, Storage,
};

/// An in-memory disk for crash tests, deterministic from a seed.
///
/// Writes and length changes are volatile until `sync_data`; creates, renames and removes
/// are volatile until `sync_dir` of their directory (a rename is made durable by syncing
/// either of its directories); a directory is itself an entry, durable once its parent is
/// synced (`create_dir_all` syncs the parent of every directory on its path before it
/// returns, as counted operations). Clones are cheap and are all the same disk.
///
/// # Halts: power loss and process kill
/// Both end the system's current *incarnation*: every handle, lock guard and
/// [`pinned`](SimStorage::pinned) view made in it goes stale (EIO, see
/// [`SimStorage::is_crash_error`]); the disk itself stays usable (the restart).
///
/// * [`SimStorage::crash`] (or [`SimStorage::crash_at_op`]) is a **power loss**: the name
///   space becomes the durable one plus a random prefix of the unsynced directory
///   operations (file systems journal metadata in order), less everything under a lost
///   directory; each 512-byte sector (aligned to file offsets) of each unsynced write is
///   kept, dropped or garbled (about 50/35/15 %), the last unsynced write of a file may be
///   torn (only a prefix of its sectors reaches the disk), and each unsynced length change
///   is kept or dropped.
/// * [`SimStorage::kill_process`] (or [`SimStorage::kill_at_op`]) is a **process kill**
///   (SIGKILL): the page cache survives, so the next incarnation reads every unsynced
///   write and sees every unsynced entry; nothing becomes durable by it, and a later
///   power loss still decides the fate of all of it.
///
/// The same seed and the same operations give the same outcome.
///
/// # Linux fsync-failure semantics
/// An injected failure of `sync_data` (EIO or ENOSPC, see [`FaultPlan`]) drops the file's
/// unsynced writes from write-back, as Linux does when it marks the failed pages clean:
/// they never reach the device, yet reads keep returning them until the page cache is
/// dropped ([`FileHandle::drop_cache`], [`SimStorage::evict_page_cache`]) or the power is
/// lost. A later `sync_data` then succeeds without writing them. A failed `sync_dir`
/// changes nothing.
///
/// Operations that fail their checks (`NotFound`, `AlreadyExists`, ...) are not counted
/// as attempted operations and trigger neither halts nor faults. Every error names the
/// path it concerns (see [`crate::PathError`]).
#[derive(Clone)]
pub struct SimStorage {
    shared: Arc<Shared>,
    /// `Some(n)`: a view pinned to the system's incarnation `n` (see
    /// [`SimStorage::pinned`]).
    incarnation: Option<u64>,
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
    /// What a scratch file ([`Storage::scratch`]) is called in errors and path-scoped
    /// faults (no directory of the simulated disk holds it).
    pub const SCRATCH: &str = "/(scratch)";

    /// An empty disk whose crash outcomes are drawn from `seed`.
    pub fn new(seed: u64) -> SimStorage {
        let state = State {
            disk: Disk::default(),
            rng: StdRng::seed_from_u64(seed),
            faults: Faults::default(),
            halt_countdown: None,
            incarnation: 0,
            ends: Vec::new(),
            stats: SimStats::default(),
            trace: None,
            locks: HashMap::new(),
            next_lock_token: 0,
            failpoints: HashMap::new(),
        };
        SimStorage {
            shared: Arc::new(Shared {
                seed,
                disk: NEXT_DISK.fetch_add(1, Ordering::Relaxed),
                state: Mutex::new(state),
                failpoints: AtomicBool::new(false),
                reached: Condvar::new(),
                ring_refused: AtomicBool::new(false),
                rings: AtomicU64::new(0),
            }),
            incarnation: None,
        }
    }

    /// A view of this disk for the current incarnation: after the next power loss or
    /// process kill, every operation through it fails with EIO, as a handle opened before
    /// it does. The check happens under the disk's lock, atomically with the halt, so a
    /// thread of the dead incarnation can never change the disk of the next one (a zombie
    /// `remove` or `rename` landing after the crash). Give each incarnation of the system
    /// under test its own pinned view.
    pub fn pinned(&self) -> SimStorage {
        SimStorage {
            shared: Arc::clone(&self.shared),
            incarnation: Some(self.state().incarnation),
        }
    }

    /// The state, if this view's incarnation is still alive.
    fn live(&self) -> io::Result<MutexGuard<'_, State>> {
        let state = self.shared.state.lock();
        match self.incarnation {
            Some(mine) if state.incarnation != mine => {
                Err(state.stale(mine, "the view belongs to an earlier incarnation"))
            }
            _ => Ok(state),
        }
    }

    /// Makes [`Storage::io_ring`] fail (`refuse`) or work again, as a kernel without
    /// io_uring, or a seccomp filter, refuses a ring: for testing that a log falls back
    /// to its flush daemon.
    pub fn refuse_io_ring(&self, refuse: bool) {
        self.shared.ring_refused.store(refuse, Ordering::Release);
    }

    /// The seed this disk was made with (print it when a test fails, to replay it).
    pub fn seed(&self) -> u64 {
        self.shared.seed
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock()
    }

    /// Simulates power loss now (see the type's docs for what survives). Disarms a
    /// pending [`SimStorage::crash_at_op`] or [`SimStorage::kill_at_op`], releases every
    /// lock and makes every open handle and pinned view stale.
    pub fn crash(&self) {
        self.state().halt(Halt::PowerLoss);
    }

    /// Arms a power loss at the `n`-th (1-based) counted operation from now (write_at,
    /// set_len, sync_data, sync_dir, creating a file or directory, rename, remove; not
    /// reads): that operation is not applied, the machine crashes, and the operation
    /// returns EIO. Replaces an earlier arming. Panics if `n` is 0.
    pub fn crash_at_op(&self, n: u64) {
        assert!(n >= 1, "crash_at_op counts from 1 (the next operation)");
        self.state().halt_countdown = Some((n, Halt::PowerLoss));
    }

    /// Simulates a process kill (SIGKILL) now: the incarnation ends as after
    /// [`SimStorage::crash`] (stale handles and views, locks released, an armed halt
    /// disarmed), but the machine keeps running: the page cache, the write-back queues and
    /// the unsynced directory operations all survive, for a later power loss to decide.
    pub fn kill_process(&self) {
        self.state().halt(Halt::ProcessKill);
    }

    /// Arms a process kill at the `n`-th (1-based) counted operation from now (the same
    /// count as [`SimStorage::crash_at_op`]): that operation is not applied, the process
    /// dies, and the operation returns EIO. Replaces an earlier arming. Panics if `n` is 0.
    pub fn kill_at_op(&self, n: u64) {
        assert!(n >= 1, "kill_at_op counts from 1 (the next operation)");
        self.state().halt_countdown = Some((n, Halt::ProcessKill));
    }

    /// Disarms a halt armed by [`SimStorage::crash_at_op`] or [`SimStorage::kill_at_op`]
    /// that has not fired yet.
    pub fn disarm_crash(&self) {
        self.state().halt_countdown = None;
    }

    /// How many power losses (manual or armed) have happened.
    pub fn crashed_count(&self) -> u64 {
        self.state().stats.crashes
    }

    /// How many process kills (manual or armed) have happened.
    pub fn killed_count(&self) -> u64 {
        self.state().stats.process_kills
    }

    /// The current incarnation: power losses plus process kills so far.
    pub fn incarnation(&self) -> u64 {
        self.state().incarnation
    }

    /// Memory pressure: drops every file's clean cached pages, so reads come from the
    /// device again (writes still queued for write-back stay cached). Only writes
    /// orphaned by a failed sync make a difference: they disappear from reads. Not a
    /// counted operation.
    pub fn evict_page_cache(&self) {
        self.state().disk.evict_page_cache();
    }

    /// True if `error` (or an error it wraps) is the EIO of a simulated power loss or
    /// process kill (from a stale handle or view, or from the operation at which an armed
    /// halt fired), as opposed to an injected fault. Its message says which halt it was.
    pub fn is_crash_error(error: &io::Error) -> bool {
        is_halt_error(error)
    }

    /// Arms a fault plan. Several plans may be armed; each counts matching operations
    /// from the moment it is injected. Plans survive halts (a broken device stays broken
    /// when the power comes back); [`SimStorage::clear_faults`] removes them.
    pub fn inject(&self, plan: FaultPlan) {
        self.state().faults.inject(plan);
    }

    /// Removes every armed fault plan.
    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    /// Registers the named failure point `name` ([`crate::failpoint`]) on this disk: from
    /// now on every reach of it (through this disk, its views or its handles) is counted
    /// ([`SimStorage::failpoint_hits`]), and the `nth` reach (1-based) does `action`, once.
    /// Replaces an earlier registration of the name and restarts its count. Points, like
    /// fault plans, survive halts; [`SimStorage::clear_failpoints`] removes them. Panics
    /// if `nth` is 0.
    pub fn set_failpoint(&self, name: &'static str, nth: u64, action: FailAction) {
        assert!(nth >= 1, "set_failpoint counts reaches from 1");
        let mut state = self.state();
        let point = ArmedPoint {
            hits: 0,
            nth,
            action,
        };
        state.failpoints.insert(name, point);
        self.shared.failpoints.store(true, Ordering::Release);
    }

    /// How many times the code reached the named point `name` since it was registered
    /// ([`SimStorage::set_failpoint`]); 0 for a point not registered.
    pub fn failpoint_hits(&self, name: &str) -> u64 {
        self.state().failpoints.get(name).map_or(0, |p| p.hits)
    }

    /// Waits (parked) until the code has reached the registered point `name` at least
    /// `n` times, or `timeout` has passed; returns whether it has. For tests that must
    /// act after a background thread passed a point.
    pub fn wait_failpoint(&self, name: &str, n: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.state();
        loop {
            if state.failpoints.get(name).is_some_and(|p| p.hits >= n) {
                return true;
            }
            if self
                .shared
                .reached
                .wait_until(&mut state, deadline)
                .timed_out()
            {
                return state.failpoints.get(name).is_some_and(|p| p.hits >= n);
            }
        }
    }

    /// Removes every registered named failure point.
    pub fn clear_failpoints(&self) {
        self.state().failpoints.clear();
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

    /// The length the file that `path` durably names would have after a power loss now,
    /// if its entry and every directory above it are durable; unsynced writes and entries
    /// do not count.
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
            incarnation: state.incarnation,
            path,
            read_only: false,
            scratch: false,
        }
    }

    fn open_file(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        options.check()?;
        let mut state = self.live()?;
        state.disk.check_file_path(path)?;
        let inode = match state.disk.lookup(path) {
            Some(_) if options.create_new => {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, "file exists"));
            }
            Some(inode) => {
                if options.truncate {
                    state.begin(OpKind::SetLen, &[path])?;
                    state.disk.inode_mut(inode).set_len(0);
                    state.record(|| TraceEvent::SetLen {
                        path: path.to_path_buf(),
                        len: 0,
                    });
                }
                inode
            }
            None if options.create || options.create_new => state.create(path)?,
            None => {
                return Err(io::Error::new(io::ErrorKind::NotFound, "no such file"));
            }
        };
        let mut handle = self.new_handle(&mut state, inode, path.to_path_buf());
        handle.read_only = options.read_only;
        Ok(Box::new(handle))
    }

    /// Creates the missing directories top down, and syncs the parent of every directory
    /// on the way, new or not (see [`Storage::create_dir_all`]); each step is a counted
    /// operation a crash can land between.
    fn make_dirs(&self, dir: &Path) -> io::Result<()> {
        for step in dirs_top_down(dir) {
            let parent = parent_dir(&step);
            let mut state = self.live()?;
            if !state.disk.is_dir(&step) {
                let made = (|| {
                    state.disk.check_mkdir(&step)?;
                    state.begin(OpKind::Create, &[&step, &parent])?;
                    state.disk.mkdir(&step);
                    state.record(|| TraceEvent::CreateDir(step.clone()));
                    Ok(())
                })();
                made.map_err(|e| with_path(&step, e))?;
            }
            state.sync_dir(&parent).map_err(|e| with_path(&parent, e))?;
        }
        assert!(self.live()?.disk.is_dir(dir));
        Ok(())
    }

    fn lock_file(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        let mut state = self.live()?;
        state.disk.check_file_path(path)?;
        // Like the real backend: the lock file is created if needed, then locked.
        if state.disk.lookup(path).is_none() {
            state.create(path)?;
        }
        if state.locks.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "locked by another process or handle",
            ));
        }
        let token = state.next_lock_token;
        state.next_lock_token += 1;
        state
            .locks
            .insert(path.to_path_buf(), Held::Exclusive(token));
        Ok(Box::new(SimLock {
            shared: Arc::clone(&self.shared),
            path: path.to_path_buf(),
            token,
        }))
    }
}

impl SimStorage {
    fn lock_file_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        let mut state = self.live()?;
        state.disk.check_file_path(path)?;
        // Like the real backend: the file is opened read-only, never created.
        if state.disk.lookup(path).is_none() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no such file"));
        }
        let token = state.next_lock_token;
        match state.locks.get_mut(path) {
            Some(Held::Exclusive(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "locked exclusively by another process or handle",
                ));
            }
            Some(Held::Shared(tokens)) => tokens.push(token),
            None => {
                state
                    .locks
                    .insert(path.to_path_buf(), Held::Shared(vec![token]));
            }
        }
        state.next_lock_token += 1;
        Ok(Box::new(SimLock {
            shared: Arc::clone(&self.shared),
            path: path.to_path_buf(),
            token,
        }))
    }
}

impl Storage for SimStorage {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        let path = normalize(path);
        self.open_file(&path, options)
            .map_err(|e| with_path(&path, e))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let dir = normalize(dir);
        self.make_dirs(&dir).map_err(|e| with_path(&dir, e))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let dir = normalize(dir);
        let result = self.live().and_then(|state| state.disk.list(&dir));
        result.map_err(|e| with_path(&dir, e))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let path = normalize(path);
        let state = self.live().map_err(|e| with_path(&path, e))?;
        Ok(state.disk.is_dir(&path) || state.disk.lookup(&path).is_some())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let path = normalize(path);
        let removed = self.live().and_then(|mut state| {
            state.disk.check_remove(&path)?;
            state.begin(OpKind::Remove, &[&path, &parent_dir(&path)])?;
            state.disk.remove(&path);
            state.record(|| TraceEvent::Remove(path.clone()));
            Ok(())
        });
        removed.map_err(|e| with_path(&path, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (normalize(from), normalize(to));
        let renamed = self.live().and_then(|mut state| {
            state.disk.check_rename(&from, &to)?;
            let paths = [&*from, &to, &parent_dir(&from), &parent_dir(&to)];
            state.begin(OpKind::Rename, &paths)?;
            state.disk.rename(&from, &to);
            state.record(|| TraceEvent::Rename {
                from: from.clone(),
                to: to.clone(),
            });
            Ok(())
        });
        renamed.map_err(|e| with_paths(&from, &to, e))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let dir = normalize(dir);
        let synced = self.live().and_then(|mut state| state.sync_dir(&dir));
        synced.map_err(|e| with_path(&dir, e))
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        let path = normalize(path);
        self.lock_file(&path).map_err(|e| with_path(&path, e))
    }

    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        let path = normalize(path);
        self.lock_file_shared(&path)
            .map_err(|e| with_path(&path, e))
    }

    fn dir_identity(&self, dir: &Path) -> io::Result<DirIdentity> {
        // The simulator has no symlinks: the normalised path (`..` resolved) is what the
        // directory is, whether it exists yet or not.
        let dir = normalize(dir);
        let state = self.live().map_err(|e| with_path(&dir, e))?;
        if !state.disk.is_dir(&dir) && state.disk.lookup(&dir).is_some() {
            let e = io::Error::new(
                io::ErrorKind::NotADirectory,
                "exists and is not a directory",
            );
            return Err(with_path(&dir, e));
        }
        Ok(DirIdentity::sim(self.shared.disk, dir))
    }

    fn scratch(&self) -> io::Result<Box<dyn FileHandle>> {
        // It changes nothing a crash leaves, so neither its creation nor its calls are
        // counted operations; they pass injected faults (path-scoped ones by this name).
        let path = PathBuf::from(SimStorage::SCRATCH);
        let mut state = self.live().map_err(|e| with_path(&path, e))?;
        state
            .fault(OpKind::Create, &[&path])
            .map_err(|e| with_path(&path, e))?;
        let inode = state.disk.create_unlinked();
        let mut handle = self.new_handle(&mut state, inode, path);
        handle.scratch = true;
        Ok(Box::new(handle))
    }

    fn io_ring(&self) -> io::Result<Box<dyn IoRing>> {
        if self.shared.ring_refused.load(Ordering::Acquire) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the simulated kernel refuses io_uring (SimStorage::refuse_io_ring)",
            ));
        }
        drop(self.live()?);
        // Seeded from the disk's seed and the rings made so far (not from the disk's
        // own draws, which decide crash outcomes: those stay what they were): a run is
        // reproducible from its seed.
        let n = self.shared.rings.fetch_add(1, Ordering::Relaxed);
        let seed = self.shared.seed ^ 0x7269_6e67_0000_0000 ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Ok(Box::new(DeferredRing::seeded(seed)))
    }

    fn failpoint(&self, name: &'static str, path: &Path) -> io::Result<()> {
        if !self.shared.failpoints_registered() {
            return Ok(());
        }
        let path = normalize(path);
        let reached = self.live().and_then(|mut state| state.failpoint(name));
        self.shared.reached.notify_all();
        reached.map_err(|e| with_path(&path, e))
    }
}
