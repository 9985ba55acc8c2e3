//! A storage wrapper that makes a simulated crash kill the "process".
//!
//! After [`SimStorage::crash`] the simulated disk is rebooted and usable, and handles
//! opened before the crash fail. But a database instance that was running at the crash
//! could still open *new* files (a log segment, a control file) and write to the rebooted
//! disk — as if the dead process kept running. A crash test gives each incarnation its own
//! `FencedStorage`: once the disk has crashed after the incarnation began, every
//! operation through it fails with EIO, like a process that died with the power.

use sluice_storage::{FileHandle, LockGuard, OpenOptions, SimStorage, Storage};
use std::io;
use std::path::Path;
use std::sync::Arc;

/// A [`SimStorage`] view that dies with the first crash after it was made.
pub struct FencedStorage {
    sim: SimStorage,
    born: u64,
}

impl FencedStorage {
    /// A view of `sim` for one incarnation of a database.
    pub fn for_incarnation(sim: &SimStorage) -> Arc<dyn Storage> {
        Arc::new(FencedStorage {
            sim: sim.clone(),
            born: sim.crashed_count(),
        })
    }

    fn alive(&self) -> io::Result<()> {
        if self.sim.crashed_count() == self.born {
            Ok(())
        } else {
            Err(io::Error::other("the process died in a simulated crash"))
        }
    }
}

impl Storage for FencedStorage {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        self.alive()?;
        let h = self.sim.open(path, options)?;
        // A handle opened after the crash would be valid on the rebooted disk.
        self.alive()?;
        Ok(h)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.alive()?;
        self.sim.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.alive()?;
        self.sim.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.alive()?;
        self.sim.exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.alive()?;
        self.sim.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.alive()?;
        self.sim.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.alive()?;
        self.sim.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.alive()?;
        self.sim.lock(path)
    }
}
