//! The model of the simulated disk: inodes with a durable and a volatile image, directory
//! entries with a durable and a volatile map, and the journal of directory operations that
//! are not durable yet. No locking and no fault logic here; `storage.rs` wraps this.
//!
//! Paths are normalised by the caller (see [`normalize`]) and directories are a plain set:
//! they are made durable when created and are never removed, which is all sluice needs.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::mem;
use std::path::{Component, Path, PathBuf};

use crate::parent_dir;

/// Identifies an inode for the life of one `SimStorage` (ids are never reused).
pub(super) type InodeId = u64;

/// The largest file the simulated disk holds. It lives in memory, so a write at an
/// absurd offset (a bug in the caller) must fail cleanly instead of allocating it.
pub(super) const MAX_FILE_BYTES: u64 = 1 << 30;
const _: () = assert!(MAX_FILE_BYTES <= usize::MAX as u64);

/// The canonical form of a path as a key: `.` components dropped, `.` for "here".
/// `..` is kept as it is (not resolved); sluice never uses it.
pub(super) fn normalize(path: &Path) -> PathBuf {
    let normal: PathBuf = path
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    if normal.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        normal
    }
}

/// One unsynced change to a file's contents or length.
#[derive(Debug, Clone)]
pub(super) enum DataOp {
    Write { offset: u64, bytes: Vec<u8> },
    SetLen(u64),
}

/// Copies `bytes` into `image` at `offset`, extending it with zeros if needed (what a write
/// past the end of a file does).
pub(super) fn apply_write(image: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let start = usize::try_from(offset).expect("offset checked against MAX_FILE_BYTES");
    let end = start + bytes.len();
    assert!(
        end as u64 <= MAX_FILE_BYTES,
        "write beyond the file size limit"
    );
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(bytes);
}

impl DataOp {
    fn apply(&self, image: &mut Vec<u8>) {
        match self {
            DataOp::Write { offset, bytes } => apply_write(image, *offset, bytes),
            DataOp::SetLen(len) => image.resize(*len as usize, 0),
        }
    }
}

/// A file's contents: what survives a crash for certain (`durable`), what reads see
/// (`volatile`), and the ordered changes between the two (`pending`).
#[derive(Debug, Default)]
pub(super) struct Inode {
    pub(super) durable: Vec<u8>,
    pub(super) volatile: Vec<u8>,
    pub(super) pending: Vec<DataOp>,
    /// Open handles of the current epoch; an open file stays alive when unlinked.
    pub(super) open_handles: u32,
}

impl Inode {
    /// Fails with `FileTooLarge` if a file would grow past [`MAX_FILE_BYTES`].
    pub(super) fn check_size(end: Option<u64>) -> io::Result<()> {
        match end {
            Some(end) if end <= MAX_FILE_BYTES => Ok(()),
            _ => Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("simulated files are limited to {MAX_FILE_BYTES} bytes"),
            )),
        }
    }

    pub(super) fn read(&self, buf: &mut [u8], offset: u64) -> usize {
        let len = self.volatile.len() as u64;
        if offset >= len {
            return 0;
        }
        let start = offset as usize;
        let n = buf.len().min(self.volatile.len() - start);
        buf[..n].copy_from_slice(&self.volatile[start..start + n]);
        n
    }

    /// The caller has checked the size limit.
    pub(super) fn write(&mut self, offset: u64, bytes: &[u8]) {
        if bytes.is_empty() {
            return; // POSIX: a zero-length write changes nothing, not even the length.
        }
        apply_write(&mut self.volatile, offset, bytes);
        self.pending.push(DataOp::Write {
            offset,
            bytes: bytes.to_vec(),
        });
    }

    /// The caller has checked the size limit.
    pub(super) fn set_len(&mut self, len: u64) {
        let op = DataOp::SetLen(len);
        op.apply(&mut self.volatile);
        self.pending.push(op);
    }

    /// fdatasync: every pending change becomes durable. Replaying the pending changes onto
    /// the durable image costs what was written, not the size of the file.
    pub(super) fn sync(&mut self) {
        for op in self.pending.drain(..) {
            op.apply(&mut self.durable);
        }
        assert_eq!(self.durable.len(), self.volatile.len());
        debug_assert!(self.durable.len() > 1 << 16 || self.durable == self.volatile);
    }
}

/// One directory operation that is not durable yet. Each names the inode it moves, so that
/// applying it to the durable map does not depend on the volatile one.
#[derive(Debug, Clone)]
pub(super) enum DirOp {
    Create {
        path: PathBuf,
        inode: InodeId,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
        inode: InodeId,
    },
    Remove {
        path: PathBuf,
        inode: InodeId,
    },
}

impl DirOp {
    fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        let (first, second) = match self {
            DirOp::Create { path, .. } | DirOp::Remove { path, .. } => (path, None),
            DirOp::Rename { from, to, .. } => (from, Some(to)),
        };
        std::iter::once(first).chain(second)
    }

    pub(super) fn inode(&self) -> InodeId {
        match self {
            DirOp::Create { inode, .. }
            | DirOp::Rename { inode, .. }
            | DirOp::Remove { inode, .. } => *inode,
        }
    }

    fn touches_dir(&self, dir: &Path) -> bool {
        self.paths().any(|path| parent_dir(path) == dir)
    }

    /// Applies the operation to a durable map. Callers apply operations so that every
    /// earlier operation on the same paths has been applied first (whole prefixes, or the
    /// closure in [`Disk::sync_dir`]); the asserts check that this holds.
    pub(super) fn apply(&self, entries: &mut BTreeMap<PathBuf, InodeId>) {
        match self {
            DirOp::Create { path, inode } => {
                // Every earlier operation on `path` is applied, so the durable map holds
                // what the volatile one held at the create: nothing.
                let previous = entries.insert(path.clone(), *inode);
                assert_eq!(previous, None, "create over {path:?}");
            }
            DirOp::Rename { from, to, inode } => {
                assert_eq!(entries.remove(from), Some(*inode), "rename of {from:?}");
                entries.insert(to.clone(), *inode);
            }
            DirOp::Remove { path, inode } => {
                assert_eq!(entries.remove(path), Some(*inode), "remove of {path:?}");
            }
        }
    }
}

/// The whole simulated disk.
#[derive(Debug, Default)]
pub(super) struct Disk {
    /// Directories; durable as soon as they exist. `.` and `/` exist implicitly.
    pub(super) dirs: BTreeSet<PathBuf>,
    /// The directory entries that survive a crash.
    pub(super) durable_entries: BTreeMap<PathBuf, InodeId>,
    /// The directory entries that lookups see.
    pub(super) entries: BTreeMap<PathBuf, InodeId>,
    /// Directory operations applied to `entries` but not to `durable_entries`, in order.
    pub(super) journal: Vec<DirOp>,
    pub(super) inodes: BTreeMap<InodeId, Inode>,
    next_inode: InodeId,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

fn is_a_directory(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::IsADirectory,
        format!("{}: is a directory", path.display()),
    )
}

impl Disk {
    pub(super) fn is_dir(&self, path: &Path) -> bool {
        path == Path::new(".") || path == Path::new("/") || self.dirs.contains(path)
    }

    pub(super) fn lookup(&self, path: &Path) -> Option<InodeId> {
        self.entries.get(path).copied()
    }

    pub(super) fn inode(&self, id: InodeId) -> &Inode {
        self.inodes.get(&id).expect("a live inode is never freed")
    }

    pub(super) fn inode_mut(&mut self, id: InodeId) -> &mut Inode {
        self.inodes
            .get_mut(&id)
            .expect("a live inode is never freed")
    }

    /// Fails unless `path` could name a new or existing file.
    pub(super) fn check_file_path(&self, path: &Path) -> io::Result<()> {
        if self.is_dir(path) {
            return Err(is_a_directory(path));
        }
        let parent = parent_dir(path);
        if !self.is_dir(&parent) {
            return Err(not_found(&parent));
        }
        Ok(())
    }

    /// Creates an empty file; the caller checked that `path` is free and valid.
    pub(super) fn create_file(&mut self, path: &Path) -> InodeId {
        assert!(self.lookup(path).is_none(), "create over {path:?}");
        let inode = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(inode, Inode::default());
        self.entries.insert(path.to_path_buf(), inode);
        self.journal.push(DirOp::Create {
            path: path.to_path_buf(),
            inode,
        });
        inode
    }

    pub(super) fn check_rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.is_dir(from) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{}: the simulated disk cannot rename directories",
                    from.display()
                ),
            ));
        }
        self.lookup(from).ok_or_else(|| not_found(from))?;
        self.check_file_path(to)
    }

    /// The caller has run [`Disk::check_rename`].
    pub(super) fn rename(&mut self, from: &Path, to: &Path) {
        let inode = self.entries.remove(from).expect("rename checked");
        self.entries.insert(to.to_path_buf(), inode);
        self.journal.push(DirOp::Rename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            inode,
        });
        self.free_unreferenced();
    }

    pub(super) fn check_remove(&self, path: &Path) -> io::Result<()> {
        if self.is_dir(path) {
            return Err(is_a_directory(path));
        }
        self.lookup(path).map(|_| ()).ok_or_else(|| not_found(path))
    }

    /// The caller has run [`Disk::check_remove`].
    pub(super) fn remove(&mut self, path: &Path) {
        let inode = self.entries.remove(path).expect("remove checked");
        self.journal.push(DirOp::Remove {
            path: path.to_path_buf(),
            inode,
        });
        self.free_unreferenced();
    }

    /// Creates `dir` and its missing parents, durably at once (the trait says so).
    pub(super) fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        let mut missing = Vec::new();
        let mut cursor = dir.to_path_buf();
        while !self.is_dir(&cursor) {
            if self.entries.contains_key(&cursor) {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a directory", cursor.display()),
                ));
            }
            missing.push(cursor.clone());
            cursor = parent_dir(&cursor);
        }
        self.dirs.extend(missing);
        assert!(self.is_dir(dir));
        Ok(())
    }

    /// The names of the files and directories directly in `dir`, sorted.
    pub(super) fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        if !self.is_dir(dir) {
            return Err(not_found(dir));
        }
        let mut names = BTreeSet::new();
        let children = self.entries.keys().chain(self.dirs.iter());
        for path in children.filter(|path| parent_dir(path) == dir) {
            let name = path.file_name().and_then(|name| name.to_str());
            let name = name.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: file name is not UTF-8", path.display()),
                )
            })?;
            names.insert(name.to_owned());
        }
        Ok(names.into_iter().collect())
    }

    /// fsync of a directory: makes durable every pending operation that touches `dir`,
    /// together with every earlier operation on the same paths (transitively), in order.
    /// Without that closure a later sync of another directory could apply an old create
    /// over a newer rename. The result is a state a real journaling file system can reach.
    pub(super) fn sync_dir(&mut self, dir: &Path) {
        let mut selected = vec![false; self.journal.len()];
        let mut tainted: BTreeSet<&PathBuf> = BTreeSet::new();
        for (index, op) in self.journal.iter().enumerate().rev() {
            if op.touches_dir(dir) || op.paths().any(|path| tainted.contains(path)) {
                selected[index] = true;
                tainted.extend(op.paths());
            }
        }
        let journal = mem::take(&mut self.journal);
        for (op, apply) in journal.into_iter().zip(selected) {
            if apply {
                op.apply(&mut self.durable_entries);
            } else {
                self.journal.push(op);
            }
        }
        assert!(self.journal.iter().all(|op| !op.touches_dir(dir)));
        self.free_unreferenced();
    }

    /// Frees every inode that no entry (durable or volatile), pending directory operation
    /// or open handle refers to: nothing can ever read it again.
    pub(super) fn free_unreferenced(&mut self) {
        let mut live: BTreeSet<InodeId> = self.entries.values().copied().collect();
        live.extend(self.durable_entries.values().copied());
        live.extend(self.journal.iter().map(DirOp::inode));
        self.inodes
            .retain(|id, inode| inode.open_handles > 0 || live.contains(id));
    }

    /// The durable image of the file that `path` durably names, if any.
    pub(super) fn durable_image(&self, path: &Path) -> Option<&[u8]> {
        let inode = self.durable_entries.get(path)?;
        Some(&self.inode(*inode).durable)
    }
}
