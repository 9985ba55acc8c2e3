//! The real-file backend: [`OsStorage`] maps the seam one-to-one onto `std::fs`.
//!
//! Every error names the path it concerns ([`crate::PathError`]) and keeps the operating
//! system's `kind()` (EIO, ENOSPC as `StorageFull`, ...); [`crate::raw_os_error`] finds
//! the OS error number through the wrapping.

use std::fs::{self, File, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{with_path, with_paths};
use crate::{dirs_top_down, parent_dir, DirIdentity, FileHandle, LockGuard, OpenOptions, Storage};

/// The environment variable that switches io_uring off for [`OsStorage`] (`off`).
pub const IO_URING_SWITCH: &str = "SLUICE_IO_URING";

/// Real files through `std::fs`: the storage that production code runs on.
///
/// Stateless, so clones are free and interchangeable.
#[derive(Debug, Default, Clone)]
pub struct OsStorage;

impl OsStorage {
    /// A handle to the real file system.
    pub fn new() -> OsStorage {
        OsStorage
    }
}

/// An open real file. Every access is positional (`pread`/`pwrite`), so one handle can be
/// shared between threads without a cursor to fight over.
#[derive(Debug)]
struct OsFile {
    file: File,
    /// The path it was opened with, for errors.
    path: PathBuf,
}

impl OsFile {
    fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        loop {
            match self.file.read_at(buf, offset) {
                // A signal may interrupt pread before it transfers anything; that is not a
                // failure of the disk, so try again (write_all_at does the same inside std).
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                result => {
                    if let Ok(n) = result {
                        assert!(n <= buf.len(), "pread returned more than was asked");
                    }
                    return result;
                }
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn fadvise_dontneed(&self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: the descriptor belongs to `self.file`, which outlives the call;
        // posix_fadvise takes plain integers and touches no memory of ours.
        let rc =
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        // posix_fadvise returns the error number instead of setting errno.
        match rc {
            0 => Ok(()),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }

    /// `fallocate(fd, 0, 0, len)`: reserves every block below `len` that has none (they
    /// read as zeros; the blocks already there are untouched) and extends the length to
    /// `len` if it is shorter. A file system without it answers `EOPNOTSUPP`, reported as
    /// `Unsupported` (std would call it `Other`), as is a kernel without the call.
    #[cfg(target_os = "linux")]
    fn fallocate(&self, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let len = libc::off_t::try_from(len).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "length past the largest offset",
            )
        })?;
        loop {
            // SAFETY: the descriptor belongs to `self.file`, which outlives the call;
            // fallocate takes plain integers and touches no memory of ours.
            let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, 0, len) };
            if rc == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EOPNOTSUPP | libc::ENOSYS) => {
                    return Err(io::Error::new(io::ErrorKind::Unsupported, e))
                }
                _ => return Err(e),
            }
        }
    }

    /// Elsewhere the log writes zeros instead (the trait's contract for `Unsupported`).
    #[cfg(not(target_os = "linux"))]
    fn fallocate(&self, _len: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "allocation without writing is implemented on Linux only",
        ))
    }

    /// Elsewhere there is no portable way to drop a file's pages; the kernels that keep
    /// failed pages dirty (the BSDs) also make a retried fsync meaningful, so the cache
    /// never holds what the device will not get.
    #[cfg(not(target_os = "linux"))]
    fn fadvise_dontneed(&self) -> io::Result<()> {
        Ok(())
    }
}

impl FileHandle for OsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.read(buf, offset).map_err(|e| with_path(&self.path, e))
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn os_fd(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        Some(self.file.as_raw_fd())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| with_path(&self.path, e))
    }

    fn sync_data(&self) -> io::Result<()> {
        // fdatasync: the data and the length (metadata needed to read the data back) are
        // made durable; timestamps are not, which is what lets it be cheaper than fsync.
        // On a read-only descriptor too (Linux needs no write access for it, and the
        // kernel refuses the writes themselves: `File` opened without write).
        self.file.sync_data().map_err(|e| with_path(&self.path, e))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len).map_err(|e| with_path(&self.path, e))
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        // Never shortens: fallocate leaves a longer file's length as it is.
        self.fallocate(len).map_err(|e| with_path(&self.path, e))
    }

    fn len(&self) -> io::Result<u64> {
        let metadata = self.file.metadata().map_err(|e| with_path(&self.path, e))?;
        Ok(metadata.len())
    }

    fn drop_cache(&self) -> io::Result<()> {
        // POSIX_FADV_DONTNEED starts write-back of dirty pages and drops the clean ones;
        // pages still dirty or under write-back stay, as the trait promises.
        self.fadvise_dontneed()
            .map_err(|e| with_path(&self.path, e))
    }
}

/// An exclusive or shared `flock` on a file. The lock belongs to the open file description, so it
/// lives exactly as long as this `File`, and dropping the guard closes it and unlocks.
#[derive(Debug)]
struct OsLock {
    _file: File,
}

impl LockGuard for OsLock {}

fn list_dir(dir: &Path) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.into_string().map_err(|raw| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("file name {raw:?} is not UTF-8"),
            )
        })?;
        names.push(name);
    }
    names.sort_unstable();
    Ok(names)
}

fn lock_file(path: &Path) -> io::Result<Box<dyn LockGuard>> {
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Box::new(OsLock { _file: file })),
        Err(TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "locked by another process or handle",
        )),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// A shared lock on an existing file, opened read-only (so a reader that may not write
/// the directory can still take it).
fn lock_file_shared(path: &Path) -> io::Result<Box<dyn LockGuard>> {
    let file = File::open(path)?;
    match file.try_lock_shared() {
        Ok(()) => Ok(Box::new(OsLock { _file: file })),
        Err(TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "locked exclusively by another process or handle",
        )),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

impl Storage for OsStorage {
    /// io_uring, unless the kernel refuses it or the environment variable
    /// `SLUICE_IO_URING` is `off` (an operator's switch: the log then runs its flush
    /// daemon).
    #[cfg(target_os = "linux")]
    fn io_ring(&self) -> io::Result<Box<dyn crate::IoRing>> {
        if std::env::var_os(IO_URING_SWITCH).is_some_and(|v| v == "off") {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("io_uring is switched off ({IO_URING_SWITCH}=off)"),
            ));
        }
        Ok(Box::new(crate::uring::UringRing::new()?))
    }

    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        options.check().map_err(|e| with_path(path, e))?;
        let file = fs::OpenOptions::new()
            .read(true)
            .write(!options.read_only)
            .create(options.create || options.create_new)
            .create_new(options.create_new)
            .truncate(options.truncate)
            .open(path)
            .map_err(|e| with_path(path, e))?;
        Ok(Box::new(OsFile {
            file,
            path: path.to_path_buf(),
        }))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        // Top down: a directory entry is only durable once its parent directory is
        // fsynced, and a child is useless if its parent's entry is lost. Parents of
        // directories that already exist are synced too: a process killed between its
        // mkdir and the sync leaves a directory that exists but is not durable.
        for step in dirs_top_down(dir) {
            match fs::create_dir(&step) {
                Ok(()) => {}
                // It exists already (or someone else created it between our steps): fine
                // if it is a directory; we still sync its parent below.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && step.is_dir() => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(with_path(
                        &step,
                        io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            "exists and is not a directory",
                        ),
                    ));
                }
                Err(e) => return Err(with_path(&step, e)),
            }
            self.sync_dir(&parent_dir(&step))?;
        }
        if !dir.is_dir() {
            return Err(with_path(
                dir,
                io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "exists and is not a directory",
                ),
            ));
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        list_dir(dir).map_err(|e| with_path(dir, e))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        fs::exists(path).map_err(|e| with_path(path, e))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path).map_err(|e| with_path(path, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to).map_err(|e| with_paths(from, to, e))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // On Linux a directory can be opened read-only and fsynced; that commits its
        // entries (creates, renames, removes) to the journal.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| with_path(dir, e))
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        lock_file(path).map_err(|e| with_path(path, e))
    }

    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        lock_file_shared(path).map_err(|e| with_path(path, e))
    }

    fn dir_identity(&self, dir: &Path) -> io::Result<DirIdentity> {
        crate::identity::os_identity(dir).map_err(|e| with_path(dir, e))
    }

    fn scratch(&self) -> io::Result<Box<dyn FileHandle>> {
        // Errors name the directory it is in (it has no name of its own).
        let path = std::env::temp_dir();
        let file = tempfile::tempfile_in(&path).map_err(|e| with_path(&path, e))?;
        Ok(Box::new(OsFile { file, path }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().expect("create a temporary directory")
    }

    #[test]
    fn write_read_len_set_len() {
        let dir = temp();
        let storage = OsStorage::new();
        let path = dir.path().join("data");
        let file = storage.open(&path, OpenOptions::CREATE_NEW).unwrap();
        assert!(file.is_empty().unwrap());
        file.write_at(b"hello", 0).unwrap();
        // A write past the end leaves a hole of zeros, like any POSIX file.
        file.write_at(b"world", 10).unwrap();
        assert_eq!(file.len().unwrap(), 15);
        let mut buf = [0xffu8; 15];
        file.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"hello\0\0\0\0\0world");
        assert_eq!(
            file.read_at(&mut buf, 15).unwrap(),
            0,
            "nothing past the end"
        );
        file.sync_data().unwrap();

        file.set_len(3).unwrap();
        assert_eq!(file.len().unwrap(), 3);
        let mut short = [0u8; 8];
        assert_eq!(file.read_at(&mut short, 0).unwrap(), 3);
        assert_eq!(&short[..3], b"hel");
        let err = file.read_exact_at(&mut short, 0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn allocate_grows_with_zeros_and_never_shrinks() {
        let dir = temp();
        let storage = OsStorage::new();
        let file = storage
            .open(&dir.path().join("f"), OpenOptions::CREATE_NEW)
            .unwrap();
        file.write_at(b"abc", 0).unwrap();
        match file.allocate(1 << 20) {
            Ok(()) => {}
            // A file system without fallocate (the caller writes zeros instead).
            Err(e) if e.kind() == io::ErrorKind::Unsupported => return,
            Err(e) => panic!("{e}"),
        }
        assert_eq!(file.len().unwrap(), 1 << 20);
        let mut buf = vec![9u8; 1 << 20];
        file.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf[..3], b"abc");
        assert!(buf[3..].iter().all(|&b| b == 0));
        file.allocate(10).unwrap();
        assert_eq!(file.len().unwrap(), 1 << 20, "allocate never shrinks");
        file.sync_data().unwrap();
    }

    #[test]
    fn open_options_are_honoured() {
        let dir = temp();
        let storage = OsStorage::new();
        let path = dir.path().join("f");
        let err = storage.open(&path, OpenOptions::EXISTING).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        storage
            .open(&path, OpenOptions::CREATE)
            .unwrap()
            .write_at(b"abc", 0)
            .unwrap();
        let err = storage.open(&path, OpenOptions::CREATE_NEW).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        let reopened = storage.open(&path, OpenOptions::EXISTING).unwrap();
        assert_eq!(
            reopened.len().unwrap(),
            3,
            "open without truncate keeps data"
        );
        let truncating = OpenOptions {
            truncate: true,
            ..OpenOptions::EXISTING
        };
        assert_eq!(storage.open(&path, truncating).unwrap().len().unwrap(), 0);
    }

    #[test]
    fn directories_list_rename_remove() {
        let dir = temp();
        let storage = OsStorage::new();
        let nested = dir.path().join("a/b/c");
        storage.create_dir_all(&nested).unwrap();
        assert!(nested.is_dir());
        storage.create_dir_all(&nested).unwrap(); // idempotent
        for name in ["zeta", "alpha", "mid"] {
            storage
                .open(&nested.join(name), OpenOptions::CREATE_NEW)
                .unwrap();
        }
        assert_eq!(storage.list(&nested).unwrap(), ["alpha", "mid", "zeta"]);
        storage.sync_dir(&nested).unwrap();

        storage
            .rename(&nested.join("alpha"), &nested.join("omega"))
            .unwrap();
        storage.remove(&nested.join("mid")).unwrap();
        storage.sync_dir(&nested).unwrap();
        assert_eq!(storage.list(&nested).unwrap(), ["omega", "zeta"]);
        assert!(storage.exists(&nested.join("omega")).unwrap());
        assert!(!storage.exists(&nested.join("alpha")).unwrap());
        let err = storage.remove(&nested.join("mid")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);

        // create_dir_all over an existing file must fail, not pretend.
        let file_path = nested.join("zeta");
        assert!(storage.create_dir_all(&file_path).is_err());
        let err = storage.sync_dir(&dir.path().join("missing")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn rename_replaces_the_target() {
        let dir = temp();
        let storage = OsStorage::new();
        let (source, target) = (dir.path().join("new"), dir.path().join("current"));
        storage
            .open(&target, OpenOptions::CREATE_NEW)
            .unwrap()
            .write_at(b"old", 0)
            .unwrap();
        storage
            .open(&source, OpenOptions::CREATE_NEW)
            .unwrap()
            .write_at(b"newer", 0)
            .unwrap();
        storage.rename(&source, &target).unwrap();
        let file = storage.open(&target, OpenOptions::EXISTING).unwrap();
        assert_eq!(file.len().unwrap(), 5);
        assert_eq!(storage.list(dir.path()).unwrap(), ["current"]);
    }

    #[test]
    fn second_lock_on_the_same_path_would_block_until_the_first_drops() {
        let dir = temp();
        let storage = OsStorage::new();
        let path = dir.path().join("LOCK");
        let first = storage.lock(&path).unwrap();
        let err = storage.lock(&path).err().expect("second lock must fail");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        let message = err.to_string();
        assert!(message.contains("LOCK"), "{message}");
        assert!(message.contains("locked by another"), "{message}");
        drop(first);
        let _again = storage
            .lock(&path)
            .expect("lock is free after the guard drops");
    }

    #[test]
    fn shared_locks_coexist_and_exclude_an_exclusive_one() {
        let dir = temp();
        let storage = OsStorage::new();
        let path = dir.path().join("LOCK");
        let err = storage.lock_shared(&path).err().expect("no file to lock");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(!path.exists(), "a shared lock never creates the file");
        let exclusive = storage.lock(&path).unwrap();
        let err = storage.lock_shared(&path).err().expect("held exclusively");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        drop(exclusive);
        let a = storage.lock_shared(&path).unwrap();
        let b = storage.lock_shared(&path).expect("shared locks coexist");
        let err = storage.lock(&path).err().expect("held shared");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        drop(a);
        assert!(storage.lock(&path).is_err(), "one shared holder is left");
        drop(b);
        let _exclusive = storage.lock(&path).expect("free once every holder is gone");
    }

    #[test]
    fn read_only_handles_read_but_refuse_writes() {
        let dir = temp();
        let storage = OsStorage::new();
        let path = dir.path().join("f");
        storage
            .open(&path, OpenOptions::CREATE)
            .unwrap()
            .write_at(b"abc", 0)
            .unwrap();
        let f = storage.open(&path, OpenOptions::READ_ONLY).unwrap();
        let mut buf = [0u8; 3];
        f.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"abc");
        assert!(f.write_at(b"x", 0).is_err());
        assert!(f.set_len(0).is_err());
        let creating = OpenOptions {
            create: true,
            ..OpenOptions::READ_ONLY
        };
        let err = storage.open(&dir.path().join("g"), creating).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(!dir.path().join("g").exists());
    }

    #[test]
    fn errors_name_their_path_and_keep_kind_and_os_code() {
        let dir = temp();
        let storage = OsStorage::new();
        let missing = dir.path().join("missing");
        let err = storage.open(&missing, OpenOptions::EXISTING).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_eq!(crate::raw_os_error(&err), Some(libc::ENOENT));
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{}: ", missing.display())),
            "{text}"
        );
        let inner = err.get_ref().unwrap().downcast_ref::<crate::PathError>();
        assert_eq!(inner.unwrap().path(), missing);

        for err in [
            storage.list(&missing).unwrap_err(),
            storage.remove(&missing).unwrap_err(),
            storage.sync_dir(&missing).unwrap_err(),
        ] {
            assert!(err.to_string().contains("missing: "), "{err}");
            assert_eq!(err.kind(), io::ErrorKind::NotFound);
        }
        let err = storage
            .rename(&missing, &dir.path().join("target"))
            .unwrap_err();
        assert!(err.to_string().contains("missing -> "), "{err}");
        assert!(err.to_string().contains("target: "), "{err}");

        let file = storage
            .open(&dir.path().join("short"), OpenOptions::CREATE_NEW)
            .unwrap();
        file.write_at(b"abc", 0).unwrap();
        let err = file.read_exact_at(&mut [0; 8], 0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(err.to_string().contains("short: "), "{err}");
        let blocker = dir.path().join("short");
        let err = storage.create_dir_all(&blocker.join("sub")).unwrap_err();
        assert!(err.to_string().contains("short"), "{err}");
    }

    #[test]
    fn drop_cache_keeps_synced_and_unsynced_data_readable() {
        let dir = temp();
        let storage = OsStorage::new();
        let file = storage
            .open(&dir.path().join("f"), OpenOptions::CREATE_NEW)
            .unwrap();
        file.write_at(&[7u8; 8192], 0).unwrap();
        file.sync_data().unwrap();
        file.drop_cache().unwrap();
        file.write_at(b"dirty", 100).unwrap();
        file.drop_cache().unwrap();
        let mut back = vec![0u8; 8192];
        file.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(&back[100..105], b"dirty", "dirty pages are never dropped");
        assert!(back[..100].iter().chain(&back[105..]).all(|&b| b == 7));
    }

    #[test]
    fn create_dir_all_over_existing_directories_succeeds_and_syncs_again() {
        let dir = temp();
        let storage = OsStorage::new();
        let nested = dir.path().join("x/y");
        storage.create_dir_all(&nested).unwrap();
        storage.create_dir_all(&nested).unwrap();
        storage.create_dir_all(&dir.path().join("x")).unwrap();
        assert!(nested.is_dir());
    }
}
