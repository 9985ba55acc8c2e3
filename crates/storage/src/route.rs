//! [`RoutedStorage`]: several storages mounted at path prefixes, seen as one — so that
//! each directory of a horizontally partitioned log (and its archive) can sit behind its
//! own [`crate::DeviceModel`], while the log takes one [`Storage`].

use crate::{FileHandle, LockGuard, OpenOptions, Storage};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Routes each operation to the storage mounted at the longest prefix of its path, or to
/// the default storage. A rename between two mounts fails (`CrossesDevices`), as it does
/// between two file systems.
#[derive(Clone)]
pub struct RoutedStorage {
    mounts: Vec<(PathBuf, Arc<dyn Storage>)>,
    default: Arc<dyn Storage>,
}

impl RoutedStorage {
    /// Everything goes to `default` until something is mounted.
    pub fn new(default: Arc<dyn Storage>) -> RoutedStorage {
        RoutedStorage {
            mounts: Vec::new(),
            default,
        }
    }

    /// Sends every path under `prefix` to `storage`.
    pub fn mount(mut self, prefix: impl Into<PathBuf>, storage: Arc<dyn Storage>) -> Self {
        self.mounts.push((prefix.into(), storage));
        // Longest first, so the most specific mount wins.
        self.mounts
            .sort_by_key(|(p, _)| std::cmp::Reverse(p.components().count()));
        self
    }

    fn route(&self, path: &Path) -> &dyn Storage {
        self.mounts
            .iter()
            .find(|(prefix, _)| path.starts_with(prefix))
            .map_or(&*self.default, |(_, s)| &**s)
    }

    fn mount_of(&self, path: &Path) -> Option<usize> {
        self.mounts.iter().position(|(p, _)| path.starts_with(p))
    }
}

impl Storage for RoutedStorage {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        self.route(path).open(path, options)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.route(dir).create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.route(dir).list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.route(path).exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.route(path).remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.mount_of(from) != self.mount_of(to) {
            return Err(io::Error::new(
                io::ErrorKind::CrossesDevices,
                format!(
                    "cannot rename {} to {}: they lie on different devices",
                    from.display(),
                    to.display()
                ),
            ));
        }
        self.route(from).rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.route(dir).sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.route(path).lock(path)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.route(path).lock_shared(path)
    }
    fn dir_identity(&self, dir: &Path) -> io::Result<crate::DirIdentity> {
        self.route(dir).dir_identity(dir)
    }
    /// The default storage's: a scratch file lies in no mounted directory.
    fn scratch(&self) -> io::Result<Box<dyn FileHandle>> {
        self.default.scratch()
    }
    fn failpoint(&self, name: &'static str, path: &Path) -> io::Result<()> {
        self.route(path).failpoint(name, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimStorage;

    #[test]
    fn each_path_goes_to_its_longest_mount() {
        let (a, b, c) = (SimStorage::new(1), SimStorage::new(2), SimStorage::new(3));
        let r = RoutedStorage::new(Arc::new(a.clone()))
            .mount("/d1", Arc::new(b.clone()))
            .mount("/d1/inner", Arc::new(c.clone()));
        for (dir, disk) in [("/x", &a), ("/d1", &b), ("/d1/inner", &c)] {
            let dir = Path::new(dir);
            r.create_dir_all(dir).unwrap();
            let f = r.open(&dir.join("f"), OpenOptions::CREATE).unwrap();
            f.write_at(b"hi", 0).unwrap();
            f.sync_data().unwrap();
            r.sync_dir(dir).unwrap();
            assert_eq!(disk.read_durable(&dir.join("f")).unwrap(), b"hi");
        }
        assert!(!a.exists(Path::new("/d1/f")).unwrap());
        let e = r.rename(Path::new("/d1/f"), Path::new("/x/g")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::CrossesDevices);
        r.rename(Path::new("/d1/f"), Path::new("/d1/g")).unwrap();
        assert!(b.exists(Path::new("/d1/g")).unwrap());
    }
}
