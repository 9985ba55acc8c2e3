//! Settling a file before trusting what it shows: the one rule every open follows, a
//! read-only one included.
//!
//! After a process kill the page cache still holds what the dead process wrote and never
//! synced; after a failed fsync it may hold writes the device never got (Linux marks the
//! failed pages clean and a later fsync does not write them). Whatever an open reads and
//! acts on — a log's records, a control file, a data page — must therefore first be made
//! durable (`sync_data`; a directory's entries by `sync_dir`) and then read from the
//! device (`drop_cache`). A read-only open does the same through its read-only handles:
//! an fsync needs no write permission and changes no byte of any file (on Linux
//! `fdatasync` works on an `O_RDONLY` descriptor); it only makes bytes that are already
//! there durable. Without it, a read-only open after a kill showed commits that a later
//! power loss took away.

use std::io;
use std::path::Path;

use crate::{FileHandle, Storage};

/// True if `error` says the file system cannot sync at all — `EINVAL` (a file system
/// without fsync, such as squashfs or ISO 9660, or a special file) or `EROFS` — as
/// opposed to a sync that failed (`EIO`, `ENOSPC`, ...).
///
/// A read-only open accepts that and reads on: such a file system holds no writes to
/// make durable. A read-only mount has no dirty pages (a writer could not have written
/// through it, and remounting read-only writes every dirty page back first), and on a
/// file system that cannot sync no writer ever got a commit acknowledged (sluice's own
/// first sync there fails), so what it shows is a copy put there whole. Every other
/// error refuses the open: a device that failed a sync may not hold what the cache shows.
pub fn cannot_sync(error: &io::Error) -> bool {
    matches!(
        crate::raw_os_error(error),
        Some(libc::EINVAL) | Some(libc::EROFS)
    )
}

/// Makes what `file` shows durable, then drops its cached pages so that reads return
/// what the device holds. `read_only`: the file was opened read-only by an open that
/// changes nothing; a file system that cannot sync ([`cannot_sync`]) is then accepted.
pub fn settle(file: &dyn FileHandle, read_only: bool) -> io::Result<()> {
    match file.sync_data() {
        Ok(()) => {}
        Err(e) if read_only && cannot_sync(&e) => return Ok(()),
        Err(e) => return Err(e),
    }
    file.drop_cache()
}

/// Makes the entries of directory `dir` durable (creates, renames and removes a dead
/// process left in the cache). `read_only`: as for [`settle`].
pub fn settle_dir(storage: &dyn Storage, dir: &Path, read_only: bool) -> io::Result<()> {
    match storage.sync_dir(dir) {
        Err(e) if read_only && cannot_sync(&e) => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpenOptions, OsStorage, SimStorage};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A file whose sync fails with `errno`, counting cache drops.
    struct Refusing {
        errno: i32,
        drops: AtomicUsize,
    }

    impl FileHandle for Refusing {
        fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<usize> {
            Ok(0)
        }
        fn write_at(&self, _: &[u8], _: u64) -> io::Result<()> {
            unreachable!()
        }
        fn sync_data(&self) -> io::Result<()> {
            Err(crate::error::with_path(
                Path::new("/media/f"),
                io::Error::from_raw_os_error(self.errno),
            ))
        }
        fn set_len(&self, _: u64) -> io::Result<()> {
            unreachable!()
        }
        fn allocate(&self, _: u64) -> io::Result<()> {
            unreachable!()
        }
        fn len(&self) -> io::Result<u64> {
            Ok(0)
        }
        fn drop_cache(&self) -> io::Result<()> {
            self.drops.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
    }

    #[test]
    fn a_file_system_that_cannot_sync_is_accepted_read_only_and_nothing_else() {
        for (errno, accepted) in [
            (libc::EINVAL, true),
            (libc::EROFS, true),
            (libc::EIO, false),
            (libc::ENOSPC, false),
            (libc::EBADF, false),
        ] {
            let f = Refusing {
                errno,
                drops: AtomicUsize::new(0),
            };
            assert_eq!(settle(&f, true).is_ok(), accepted, "errno {errno}");
            let e = settle(&f, false).unwrap_err();
            assert!(e.to_string().contains("/media/f"), "{e}");
            assert_eq!(f.drops.load(Ordering::Relaxed), 0, "no sync, no drop");
        }
    }

    #[test]
    fn a_read_only_handle_makes_a_killed_writers_bytes_durable() {
        // On the real disk: fdatasync through O_RDONLY works (it is Linux's rule).
        let tmp = tempfile::tempdir().unwrap();
        let os = OsStorage::new();
        let path = tmp.path().join("f");
        os.open(&path, OpenOptions::CREATE)
            .unwrap()
            .write_at(b"abc", 0)
            .unwrap();
        settle(&*os.open(&path, OpenOptions::READ_ONLY).unwrap(), true).unwrap();
        settle_dir(&os, tmp.path(), true).unwrap();

        // On the simulated disk: the unsynced bytes a killed process left become durable.
        let sim = SimStorage::new(9);
        let p = Path::new("/d/f");
        sim.create_dir_all(Path::new("/d")).unwrap();
        let w = sim.open(p, OpenOptions::CREATE).unwrap();
        w.write_at(b"abc", 0).unwrap();
        sim.kill_process();
        assert_eq!(sim.durable_len(p), None, "neither the entry nor the bytes");
        let r = sim.open(p, OpenOptions::READ_ONLY).unwrap();
        settle(&*r, true).unwrap();
        settle_dir(&sim, Path::new("/d"), true).unwrap();
        assert_eq!(sim.read_durable(p).unwrap(), b"abc");
        assert!(r.write_at(b"x", 0).is_err(), "still a read-only handle");
        sim.crash();
        let mut back = [0u8; 3];
        sim.open(p, OpenOptions::READ_ONLY)
            .unwrap()
            .read_exact_at(&mut back, 0)
            .unwrap();
        assert_eq!(&back, b"abc");
    }
}
