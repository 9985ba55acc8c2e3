//! A storage in front of another that changes only what its files' reads, writes and
//! syncs do (and perhaps how a directory is synced): [`DeviceModel`](crate::DeviceModel)
//! charges device time for them, [`GatedStorage`](crate::GatedStorage) holds syncs.
//! Every other call passes through, written once here instead of in each wrapper.

use crate::{DirIdentity, FileHandle, LockGuard, OpenOptions, Storage};
use std::io;
use std::path::Path;

/// A storage in front of [`StorageLayer::below`]; it is a [`Storage`] that hands out the
/// files below through [`StorageLayer::wrap`] and forwards everything else.
pub trait StorageLayer: Send + Sync + 'static {
    /// The storage this one is in front of.
    fn below(&self) -> &dyn Storage;
    /// A file opened below, as this layer hands it out.
    fn wrap(&self, file: Box<dyn FileHandle>) -> Box<dyn FileHandle>;
    /// [`Storage::sync_dir`] through this layer: the storage below's, unless the layer
    /// says otherwise.
    fn sync_dir_through(&self, dir: &Path) -> io::Result<()> {
        self.below().sync_dir(dir)
    }
}

impl<L: StorageLayer> Storage for L {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn FileHandle>> {
        Ok(self.wrap(self.below().open(path, options)?))
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.below().create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.below().list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.below().exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.below().remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.below().rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.sync_dir_through(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.below().lock(path)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn LockGuard>> {
        self.below().lock_shared(path)
    }
    fn dir_identity(&self, dir: &Path) -> io::Result<DirIdentity> {
        self.below().dir_identity(dir)
    }
    fn scratch(&self) -> io::Result<Box<dyn FileHandle>> {
        Ok(self.wrap(self.below().scratch()?))
    }
    fn failpoint(&self, name: &'static str, path: &Path) -> io::Result<()> {
        self.below().failpoint(name, path)
    }
}

/// A file call that reaches the device, as a [`FileLayer`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    /// A read of this many bytes.
    Read(usize),
    /// A write of this many bytes.
    Write(usize),
    /// A `sync_data`.
    Sync,
}

/// A file in front of [`FileLayer::below`]: a [`FileHandle`] whose reads, writes and
/// syncs go through [`FileLayer::around`], and whose other calls pass through.
pub trait FileLayer: Send + Sync {
    /// The file this one is in front of.
    fn below(&self) -> &dyn FileHandle;
    /// Makes the call `op` (`call`, on the file below): a layer may charge for it or
    /// hold it first.
    fn around<T>(&self, op: FileOp, call: impl FnOnce() -> io::Result<T>) -> io::Result<T>;
}

impl<L: FileLayer> FileHandle for L {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.around(FileOp::Read(buf.len()), || {
            self.below().read_at(buf, offset)
        })
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.around(FileOp::Read(buf.len()), || {
            self.below().read_exact_at(buf, offset)
        })
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.around(FileOp::Write(buf.len()), || {
            self.below().write_at(buf, offset)
        })
    }
    fn sync_data(&self) -> io::Result<()> {
        self.around(FileOp::Sync, || self.below().sync_data())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.below().set_len(len)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.below().allocate(len)
    }
    fn len(&self) -> io::Result<u64> {
        self.below().len()
    }
    fn drop_cache(&self) -> io::Result<()> {
        self.below().drop_cache()
    }
    fn path(&self) -> Option<&Path> {
        self.below().path()
    }
    fn failpoint(&self, name: &'static str) -> io::Result<()> {
        self.below().failpoint(name)
    }
}
