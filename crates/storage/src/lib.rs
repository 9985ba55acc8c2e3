//! The I/O seam of sluice.
//!
//! Every byte that sluice reads from or writes to a disk goes through the [`Storage`] and
//! [`FileHandle`] traits. Production code runs over [`OsStorage`] (real files); crash tests
//! run the very same code over [`SimStorage`], a deterministic in-memory disk that models
//! what real machines do: power loss (unsynced writes lost, kept, garbled or torn), a
//! process kill that leaves the page cache behind, Linux's fsync-failure semantics, read
//! and write errors, ENOSPC, and directory entries that need their parent's fsync.
//! [`DeviceModel`] wraps either and adds per-device latency and a bandwidth cap, so slow
//! or several independent devices can be emulated on one real disk.
//!
//! Errors are [`std::io::Error`]s whose `kind()` is the operating system's (so the layers
//! above can tell ENOSPC, [`std::io::ErrorKind::StorageFull`], from EIO) and whose message
//! names the file or directory concerned ([`PathError`]); [`raw_os_error`] recovers the OS
//! error number through that wrapping.

use std::io;
use std::path::{Path, PathBuf};

mod device;
mod error;
pub mod failpoint;
mod gate;
mod identity;
mod layer;
mod os;
mod ring;
#[cfg(all(test, target_os = "linux"))]
mod ring_review_tests;
mod route;
mod settle;
mod sim;
mod sync_fence;
#[cfg(target_os = "linux")]
mod uring;

pub use device::{DeviceModel, DeviceProfile};
pub use error::{raw_os_error, PathError};
pub use gate::GatedStorage;
pub use identity::{find_same_dir, DirIdentity};
pub use layer::{FileLayer, FileOp, StorageLayer};
pub use os::{OsStorage, IO_URING_SWITCH};
pub use ring::{DeferredRing, IoRing, RingDone, RingOp};
pub use route::RoutedStorage;
pub use settle::{cannot_sync, settle, settle_dir};
pub use sim::{FailAction, FaultKind, FaultOp, FaultPlan, SimStats, SimStorage, TraceEvent};
pub use sync_fence::SyncFence;

/// Reads exactly `buf.len()` bytes at `offset` with `read_at`, or fails with
/// `UnexpectedEof` (the body of [`FileHandle::read_exact_at`], shared with the backends
/// that add their path to its errors).
pub(crate) fn read_exact_with(
    mut read_at: impl FnMut(&mut [u8], u64) -> io::Result<usize>,
    mut buf: &mut [u8],
    mut offset: u64,
) -> io::Result<()> {
    while !buf.is_empty() {
        let n = read_at(buf, offset)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("read past the end of the file (at offset {offset})"),
            ));
        }
        assert!(n <= buf.len(), "read_at returned more than was asked");
        buf = &mut buf[n..];
        offset += n as u64;
    }
    Ok(())
}

/// An open file. All offsets are absolute byte offsets; there is no cursor, so one handle
/// can be shared between threads.
pub trait FileHandle: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (0 at or past
    /// the end of the file).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes all of `buf` at `offset`, extending the file if needed. The data is volatile
    /// until [`FileHandle::sync_data`] returns successfully.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every write and length change made so far durable (fdatasync) — through a
    /// read-only handle too: a sync changes no byte, it makes the file's bytes as reads
    /// show them (a killed process's unsynced writes included) durable.
    ///
    /// After a failure, nothing may be assumed about the data written since the last
    /// success: Linux marks the failed pages clean, so they may never reach the device
    /// while reads keep returning them, and a later successful call does not write them.
    fn sync_data(&self) -> io::Result<()>;
    /// Truncates or extends (with zeros) the file to `len` bytes. Volatile until synced.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes the file at least `len` bytes long with its blocks reserved on the device,
    /// writing nothing (Linux `fallocate`, mode 0): the new bytes read as zeros, and a
    /// later write into them needs no block allocation. Never shortens the file. The new
    /// length and the allocation are volatile until [`FileHandle::sync_data`]; a power
    /// loss before it keeps or drops the length change, like `set_len`'s.
    ///
    /// Fails with [`io::ErrorKind::Unsupported`] where the file system (or the platform)
    /// cannot allocate without writing; the caller then decides how to make the space
    /// (the log writes zeros). (Wrappers must forward it: there is no default, because a
    /// default that extended with `set_len` would leave a sparse file without saying so.)
    fn allocate(&self, len: u64) -> io::Result<()>;
    /// The current length of the file, as reads see it.
    fn len(&self) -> io::Result<u64>;
    /// Drops this file's clean cached pages, so later reads come from the device; pages
    /// not yet written back stay cached. After a successful [`FileHandle::sync_data`],
    /// reads then return exactly what the device holds — also after an earlier failed
    /// sync left pages in the cache that the device never got.
    fn drop_cache(&self) -> io::Result<()>;
    /// True if the file has no bytes.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The file's path, where the handle knows it (a backend's files do): the errors of
    /// [`FileHandle::read_exact_at`] name it.
    fn path(&self) -> Option<&Path> {
        None
    }

    /// Reads exactly `buf.len()` bytes at `offset`, or fails with `UnexpectedEof`.
    /// Wrappers forward it, so that the backend's error names the file.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        read_exact_with(|b, o| self.read_at(b, o), buf, offset).map_err(|e| match self.path() {
            Some(path) => error::with_path(path, e),
            None => e,
        })
    }

    /// The operating system's descriptor behind this handle, for an [`IoRing`] of the
    /// storage that opened it to submit to (`None`: it has none, and a ring refuses its
    /// operations). A wrapper that changes what reads, writes or syncs do must not
    /// forward it: a ring would bypass the wrapper.
    fn os_fd(&self) -> Option<i32> {
        None
    }

    /// The named failure point `name` ([`failpoint`]) concerning this file: `Ok` unless a
    /// test armed it on a simulated disk ([`SimStorage::set_failpoint`]), which may fail
    /// the call or halt the machine there. Wrappers forward it.
    fn failpoint(&self, name: &'static str) -> io::Result<()> {
        let _ = name;
        Ok(())
    }
}

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenOptions {
    /// Create the file if it does not exist.
    pub create: bool,
    /// Fail if the file already exists (implies `create`).
    pub create_new: bool,
    /// Truncate the file to zero length on open.
    pub truncate: bool,
    /// Open for reading only: writes and length changes through the handle fail (as they
    /// do on a file opened `O_RDONLY`), and a file the process may read but not write
    /// (read-only media, another user's backup) can be opened. `sync_data` and
    /// `drop_cache` work, as on Linux they do through an `O_RDONLY` descriptor: they
    /// change no byte, and a reader uses them to make what it trusts durable first
    /// ([`settle`]). Cannot be combined with `create`, `create_new` or `truncate`
    /// (`InvalidInput`).
    pub read_only: bool,
}

impl OpenOptions {
    /// Open an existing file; fail with `NotFound` if it does not exist.
    pub const EXISTING: OpenOptions = OpenOptions {
        create: false,
        create_new: false,
        truncate: false,
        read_only: false,
    };
    /// Open an existing file for reading only (see [`OpenOptions::read_only`]); fail
    /// with `NotFound` if it does not exist.
    pub const READ_ONLY: OpenOptions = OpenOptions {
        create: false,
        create_new: false,
        truncate: false,
        read_only: true,
    };
    /// Open the file, creating it (empty) if it does not exist.
    pub const CREATE: OpenOptions = OpenOptions {
        create: true,
        create_new: false,
        truncate: false,
        read_only: false,
    };
    /// Create a new file; fail with `AlreadyExists` if it exists.
    pub const CREATE_NEW: OpenOptions = OpenOptions {
        create: true,
        create_new: true,
        truncate: false,
        read_only: false,
    };

    /// The `InvalidInput` error for a read-only open that would also create or truncate.
    pub(crate) fn check(&self) -> io::Result<()> {
        if self.read_only && (self.create || self.create_new || self.truncate) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a file opened read-only cannot be created or truncated",
            ));
        }
        Ok(())
    }
}

/// A held lock on a path (for example a database directory's `LOCK` file), exclusive
/// ([`Storage::lock`]) or shared ([`Storage::lock_shared`]). The lock is released when
/// the guard is dropped.
pub trait LockGuard: Send + Sync {}

/// A file system: the one place where sluice touches a disk.
///
/// Durability rules (the same for every implementation, and what [`SimStorage`] enforces):
/// file contents and lengths are durable only after [`FileHandle::sync_data`]; a created,
/// renamed or removed directory entry is durable only after [`Storage::sync_dir`] on its
/// parent directory. Every error names the path it concerns ([`PathError`]).
pub trait Storage: Send + Sync + 'static {
    /// Opens (and maybe creates) the file at `path`.
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>>;
    /// Creates `dir` and any missing parents, and makes `dir` and every directory above it
    /// durable before it returns (it is rare and always on a cold path): the parent of
    /// each directory on the path is synced, top down, whether the directory is new or
    /// not — one made by a process that was killed before it synced may exist without
    /// being durable, and a power loss that loses a directory loses everything under it.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The file names (not full paths) in `dir`, sorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// True if a file or directory exists at `path`.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Removes the file at `path`. Durable after `sync_dir` of its parent.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Atomically renames `from` to `to`, replacing `to`. Durable after `sync_dir`. A
    /// directory moves with everything in it, and only to a free name (all that the
    /// simulator offers; a real file system may also replace an empty directory).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the directory entries of `dir` durable (fsync on the directory).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path` (creating the file if needed). Fails with
    /// `WouldBlock` if another holder (another process, or another open in this one) has
    /// it, exclusive or shared.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>>;
    /// Takes a shared lock on the existing file at `path`, opening it read-only: it never
    /// creates or changes the file. Any number of shared holders coexist; fails with
    /// `WouldBlock` while an exclusive holder ([`Storage::lock`]) has it, and with
    /// `NotFound` if there is no file. (Wrappers must forward it: there is no default.)
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>>;
    /// What the directory `dir` is, independent of how its path is spelt
    /// ([`DirIdentity`]; for a path that does not exist yet, what `create_dir_all` would
    /// make of it). Fails if `dir` exists and is not a directory, or cannot be looked
    /// at. Changes nothing. (Wrappers must forward it: there is no default, because a
    /// wrapper that compared spellings instead would bring back the bug this exists to
    /// prevent.)
    fn dir_identity(&self, dir: &Path) -> io::Result<DirIdentity>;
    /// A new, empty scratch file for bytes a process needs only while it runs: in no
    /// directory the engine uses (no path names it, nothing lists it), gone when its
    /// handle drops, and never surviving a crash or a process kill. [`OsStorage`]: an
    /// unlinked temporary file in the system's temporary directory (`TMPDIR`);
    /// [`SimStorage`]: a file in no directory of the simulated disk, whose writes are
    /// counted operations a crash can land on. (Wrappers must forward it: there is no
    /// default.)
    fn scratch(&self) -> io::Result<Box<dyn FileHandle>>;

    /// A ring for asynchronous writes and syncs of this storage's files (the `ring`
    /// module: io_uring on Linux for [`OsStorage`], a [`DeferredRing`] for
    /// [`SimStorage`]). Fails where there is none — `Unsupported` by default, or the
    /// kernel's refusal (old kernels, seccomp, `io_uring_disabled`) — and the caller then
    /// uses the files' synchronous calls. (The default is safe for a wrapper: a storage
    /// that does not forward it only keeps its users on the synchronous path, whose
    /// calls it sees.)
    fn io_ring(&self) -> io::Result<Box<dyn IoRing>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this storage submits no asynchronous I/O",
        ))
    }

    /// The named failure point `name` ([`failpoint`]) concerning the file or directory
    /// `path`: `Ok` unless a test armed it on a simulated disk
    /// ([`SimStorage::set_failpoint`]), which may fail the call (the error names `path`)
    /// or halt the machine there. Wrappers forward it.
    fn failpoint(&self, name: &'static str, path: &Path) -> io::Result<()> {
        let _ = (name, path);
        Ok(())
    }
}

/// What a write or length change through a read-only handle fails with.
pub(crate) fn read_only_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "the file was opened read-only",
    )
}

/// Joins a file name onto a directory; a small helper so callers need not import `Path`.
pub fn join(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// The directories on the way to `dir`, top down, ending with `dir` itself; the roots
/// (`/`, `.`), which have no parent to sync, are left out.
pub(crate) fn dirs_top_down(dir: &Path) -> Vec<PathBuf> {
    let mut chain: Vec<PathBuf> = dir
        .ancestors()
        .filter(|d| !d.as_os_str().is_empty() && d.parent().is_some())
        .filter(|d| *d != Path::new("."))
        .map(Path::to_path_buf)
        .collect();
    chain.reverse();
    chain
}

/// The parent directory of `path`, or `.` if it has none.
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
