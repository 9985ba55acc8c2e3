//! The real-file backend: [`OsStorage`] maps the seam one-to-one onto `std::fs`.
//!
//! Errors are the operating system's own, unwrapped, so that `raw_os_error()` and
//! `kind()` (EIO, ENOSPC as `StorageFull`, ...) reach the layers above unchanged; callers
//! add the path to their messages. The one exception is lock contention, whose message
//! names the locked path because "would block" alone is a useless thing to tell a user.

use std::fs::{self, File, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::{parent_dir, FileHandle, LockGuard, OpenOptions, Storage};

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
}

impl FileHandle for OsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
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

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        // fdatasync: the data and the length (metadata needed to read the data back) are
        // made durable; timestamps are not, which is what lets it be cheaper than fsync.
        self.file.sync_data()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
}

/// An exclusive `flock` on a file. The lock belongs to the open file description, so it
/// lives exactly as long as this `File`, and dropping the guard closes it and unlocks.
#[derive(Debug)]
struct OsLock {
    _file: File,
}

impl LockGuard for OsLock {}

impl Storage for OsStorage {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(options.create || options.create_new)
            .create_new(options.create_new)
            .truncate(options.truncate)
            .open(path)?;
        Ok(Box::new(OsFile { file }))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        // Find the missing ancestors first, so that each one can be created and made
        // durable in turn, top down: a directory entry is only durable once its parent
        // directory is fsynced, and a child is useless if its parent's entry is lost.
        let mut missing: Vec<PathBuf> = Vec::new();
        let mut cursor = Some(dir);
        while let Some(current) = cursor {
            if current.as_os_str().is_empty() || fs::exists(current)? {
                break;
            }
            missing.push(current.to_path_buf());
            cursor = current.parent();
        }
        for created in missing.iter().rev() {
            match fs::create_dir(created) {
                Ok(()) => {}
                // Someone else created it between our check and now: fine if it is a
                // directory, and we still sync its parent below (cheap, and that other
                // creator may not have).
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && created.is_dir() => {}
                Err(e) => return Err(e),
            }
            self.sync_dir(&parent_dir(created))?;
        }
        if !dir.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a directory", dir.display()),
            ));
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let name = entry?.file_name();
            let name = name.into_string().map_err(|raw| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: file name {raw:?} is not UTF-8", dir.display()),
                )
            })?;
            names.push(name);
        }
        names.sort_unstable();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        fs::exists(path)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // On Linux a directory can be opened read-only and fsynced; that commits its
        // entries (creates, renames, removes) to the journal.
        File::open(dir)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
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
                format!("{} is locked by another process or handle", path.display()),
            )),
            Err(TryLockError::Error(e)) => Err(e),
        }
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
}
