//! The model of the simulated disk: inodes (see `inode.rs`) and a namespace of directory
//! entries and directories, kept twice — as lookups see it and as it would survive a
//! power loss — with the journal of directory operations between the two. No locking and
//! no fault logic here; `storage.rs` wraps this.
//!
//! Paths are normalised by the caller (see [`normalize`]). Directories are entries like
//! files: `mkdir` is journaled and durable only once its parent directory is synced, and a
//! power loss that loses a directory loses everything under it. A directory is renamed
//! whole to a free name (one journaled operation, atomic like a file's rename); it is
//! never removed, which is all sluice needs. Errors carry no path: `storage.rs` names the
//! path of the operation in every error it returns.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::mem;
use std::path::{Path, PathBuf};

use super::inode::Inode;
use crate::parent_dir;

/// Identifies an inode for the life of one `SimStorage` (ids are never reused).
pub(super) type InodeId = u64;

/// The canonical form of a path as a key: `.` components dropped and each `..` resolved
/// against the component before it (the simulated disk has no symlinks, so that is what
/// a real file system would resolve it to: `D/log/../log` is `D/log`), `.` for "here".
/// Keying by the spelling instead made `D/log/../log` a directory of its own, unlike on
/// a real disk, and hid the directory-identity bugs a test on the simulator should find.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let normal = crate::identity::normalize_lexically(path);
    if normal.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        normal
    }
}

/// `.` and `/` always exist and can never be lost.
fn is_root(path: &Path) -> bool {
    path == Path::new(".") || path == Path::new("/")
}

/// A set of directories and a map of file entries: one view of the name space.
#[derive(Debug, Default, Clone)]
pub(super) struct Namespace {
    /// Directories other than the roots.
    pub(super) dirs: BTreeSet<PathBuf>,
    /// File entries.
    pub(super) entries: BTreeMap<PathBuf, InodeId>,
}

impl Namespace {
    pub(super) fn is_dir(&self, path: &Path) -> bool {
        is_root(path) || self.dirs.contains(path)
    }

    /// Drops every directory and entry whose parent is not (transitively) a directory
    /// here: after a power loss nothing can be reached under a lost directory.
    fn prune_unreachable(&mut self) {
        // A parent sorts before its children (its components are a prefix of theirs), so
        // one pass in order sees every parent's fate before its children.
        let mut reachable = BTreeSet::new();
        for dir in &self.dirs {
            let parent = parent_dir(dir);
            if is_root(&parent) || reachable.contains(&parent) {
                reachable.insert(dir.clone());
            }
        }
        self.dirs = reachable;
        let dirs = &self.dirs;
        self.entries.retain(|path, _| {
            let parent = parent_dir(path);
            is_root(&parent) || dirs.contains(&parent)
        });
    }

    /// Moves the directory `from`, and every directory and entry under it, to `to`.
    fn move_tree(&mut self, from: &Path, to: &Path) {
        let moved = |path: PathBuf| match path.strip_prefix(from) {
            Ok(rest) if rest.as_os_str().is_empty() => to.to_path_buf(),
            Ok(rest) => to.join(rest),
            Err(_) => path,
        };
        self.dirs = mem::take(&mut self.dirs).into_iter().map(moved).collect();
        self.entries = mem::take(&mut self.entries)
            .into_iter()
            .map(|(path, inode)| (moved(path), inode))
            .collect();
    }
}

/// One directory operation that is not durable yet. Each names the inode it moves, so that
/// applying it to the durable name space does not depend on the volatile one.
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
    Mkdir {
        path: PathBuf,
    },
    /// A directory and everything under it moved to a free name.
    RenameDir {
        from: PathBuf,
        to: PathBuf,
    },
}

impl DirOp {
    fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        let (first, second) = match self {
            DirOp::Create { path, .. } | DirOp::Remove { path, .. } | DirOp::Mkdir { path } => {
                (path, None)
            }
            DirOp::Rename { from, to, .. } | DirOp::RenameDir { from, to } => (from, Some(to)),
        };
        std::iter::once(first).chain(second)
    }

    fn inode(&self) -> Option<InodeId> {
        match self {
            DirOp::Create { inode, .. }
            | DirOp::Rename { inode, .. }
            | DirOp::Remove { inode, .. } => Some(*inode),
            DirOp::Mkdir { .. } | DirOp::RenameDir { .. } => None,
        }
    }

    /// The directory a `RenameDir` moves, under its old and its new name.
    fn moved_tree(&self) -> Option<(&PathBuf, &PathBuf)> {
        match self {
            DirOp::RenameDir { from, to } => Some((from, to)),
            _ => None,
        }
    }

    fn touches_dir(&self, dir: &Path) -> bool {
        self.paths().any(|path| parent_dir(path) == dir)
    }

    /// Applies the operation to a durable name space. Callers apply operations so that
    /// every earlier operation on the same paths has been applied first (whole prefixes,
    /// or the closure in [`Disk::sync_dir`]); the asserts check that this holds.
    pub(super) fn apply(&self, names: &mut Namespace) {
        let entries = &mut names.entries;
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
            DirOp::Mkdir { path } => {
                // Directories are never removed, so the volatile set holds every durable
                // one: a journaled mkdir cannot already be durable. (A directory renamed
                // away frees its name, but a later mkdir there is applied after the
                // rename: see `Disk::sync_dir`.)
                assert!(names.dirs.insert(path.clone()), "mkdir over {path:?}");
            }
            DirOp::RenameDir { from, to } => {
                assert!(names.dirs.contains(from), "rename of directory {from:?}");
                assert!(
                    !names.dirs.contains(to) && !names.entries.contains_key(to),
                    "rename of a directory over {to:?}"
                );
                names.move_tree(from, to);
            }
        }
    }
}

/// The whole simulated disk.
#[derive(Debug, Default)]
pub(super) struct Disk {
    /// The name space that survives a power loss.
    pub(super) durable: Namespace,
    /// The name space that lookups see.
    pub(super) live: Namespace,
    /// Directory operations applied to `live` but not to `durable`, in order.
    pub(super) journal: Vec<DirOp>,
    pub(super) inodes: BTreeMap<InodeId, Inode>,
    next_inode: InodeId,
}

fn not_found() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "no such file or directory")
}

fn is_a_directory() -> io::Error {
    io::Error::new(io::ErrorKind::IsADirectory, "is a directory")
}

impl Disk {
    pub(super) fn is_dir(&self, path: &Path) -> bool {
        self.live.is_dir(path)
    }

    pub(super) fn lookup(&self, path: &Path) -> Option<InodeId> {
        self.live.entries.get(path).copied()
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
            return Err(is_a_directory());
        }
        if !self.is_dir(&parent_dir(path)) {
            return Err(not_found());
        }
        Ok(())
    }

    /// Creates an empty file that no directory names (a scratch file): it lives while a
    /// handle holds it and a power loss or process kill frees it.
    pub(super) fn create_unlinked(&mut self) -> InodeId {
        let inode = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(inode, Inode::default());
        inode
    }

    /// Creates an empty file; the caller checked that `path` is free and valid.
    pub(super) fn create_file(&mut self, path: &Path) -> InodeId {
        assert!(self.lookup(path).is_none(), "create over {path:?}");
        let inode = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(inode, Inode::default());
        self.live.entries.insert(path.to_path_buf(), inode);
        self.journal.push(DirOp::Create {
            path: path.to_path_buf(),
            inode,
        });
        inode
    }

    pub(super) fn check_rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.is_dir(from) {
            return self.check_rename_dir(from, to);
        }
        self.lookup(from).ok_or_else(not_found)?;
        self.check_file_path(to)
    }

    /// A directory moves only to a free name outside itself. (A real file system also
    /// replaces an empty directory; no caller needs that.)
    fn check_rename_dir(&self, from: &Path, to: &Path) -> io::Result<()> {
        if is_root(from) || to.starts_with(from) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot move a directory into itself",
            ));
        }
        if self.is_dir(to) || self.lookup(to).is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "the simulated disk renames a directory only to a free name",
            ));
        }
        if !self.is_dir(&parent_dir(to)) {
            return Err(not_found());
        }
        Ok(())
    }

    /// The caller has run [`Disk::check_rename`].
    pub(super) fn rename(&mut self, from: &Path, to: &Path) {
        if self.is_dir(from) {
            self.live.move_tree(from, to);
            self.journal.push(DirOp::RenameDir {
                from: from.to_path_buf(),
                to: to.to_path_buf(),
            });
            return;
        }
        let inode = self.live.entries.remove(from).expect("rename checked");
        self.live.entries.insert(to.to_path_buf(), inode);
        self.journal.push(DirOp::Rename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            inode,
        });
        self.free_unreferenced();
    }

    pub(super) fn check_remove(&self, path: &Path) -> io::Result<()> {
        if self.is_dir(path) {
            return Err(is_a_directory());
        }
        self.lookup(path).map(|_| ()).ok_or_else(not_found)
    }

    /// The caller has run [`Disk::check_remove`].
    pub(super) fn remove(&mut self, path: &Path) {
        let inode = self.live.entries.remove(path).expect("remove checked");
        self.journal.push(DirOp::Remove {
            path: path.to_path_buf(),
            inode,
        });
        self.free_unreferenced();
    }

    /// Fails unless `dir` can be created now: its parent is a directory and nothing is in
    /// its place.
    pub(super) fn check_mkdir(&self, dir: &Path) -> io::Result<()> {
        if self.lookup(dir).is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "exists and is not a directory",
            ));
        }
        if !self.is_dir(&parent_dir(dir)) {
            return Err(not_found());
        }
        assert!(!self.is_dir(dir), "mkdir over an existing directory");
        Ok(())
    }

    /// Creates one directory, volatile until its parent is synced. The caller has run
    /// [`Disk::check_mkdir`].
    pub(super) fn mkdir(&mut self, dir: &Path) {
        assert!(self.live.dirs.insert(dir.to_path_buf()));
        self.journal.push(DirOp::Mkdir {
            path: dir.to_path_buf(),
        });
    }

    /// The names of the files and directories directly in `dir`, sorted.
    pub(super) fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        if !self.is_dir(dir) {
            return Err(not_found());
        }
        let mut names = BTreeSet::new();
        let children = self.live.entries.keys().chain(self.live.dirs.iter());
        for path in children.filter(|path| parent_dir(path) == dir) {
            let name = path.file_name().and_then(|name| name.to_str());
            let name = name.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("file name {:?} is not UTF-8", path.file_name()),
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
    ///
    /// A directory's rename moves every path under it, so the closure follows paths under
    /// it too: a selected operation on a path under the directory's old or new name
    /// selects the rename, and a selected rename selects every earlier operation under
    /// either name (a create in the directory before it moved must not land under the old
    /// name after it).
    pub(super) fn sync_dir(&mut self, dir: &Path) {
        let mut selected = vec![false; self.journal.len()];
        let mut tainted: BTreeSet<&PathBuf> = BTreeSet::new();
        let mut moved_trees: Vec<&PathBuf> = Vec::new();
        for (index, op) in self.journal.iter().enumerate().rev() {
            let under_moved = || {
                op.paths()
                    .any(|path| moved_trees.iter().any(|tree| path.starts_with(tree)))
            };
            let moves_tainted = || {
                op.moved_tree().is_some_and(|(from, to)| {
                    tainted
                        .iter()
                        .any(|path| path.starts_with(from) || path.starts_with(to))
                })
            };
            if op.touches_dir(dir)
                || op.paths().any(|path| tainted.contains(path))
                || under_moved()
                || moves_tainted()
            {
                selected[index] = true;
                tainted.extend(op.paths());
                if let Some((from, to)) = op.moved_tree() {
                    moved_trees.extend([from, to]);
                }
            }
        }
        let journal = mem::take(&mut self.journal);
        for (op, apply) in journal.into_iter().zip(selected) {
            if apply {
                op.apply(&mut self.durable);
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
        let mut live: BTreeSet<InodeId> = self.live.entries.values().copied().collect();
        live.extend(self.durable.entries.values().copied());
        live.extend(self.journal.iter().filter_map(DirOp::inode));
        self.inodes
            .retain(|id, inode| inode.open_handles > 0 || live.contains(id));
    }

    /// The durable image of the file that `path` durably names, if a power loss now would
    /// keep it: its entry and every directory above it are durable.
    pub(super) fn durable_image(&self, path: &Path) -> Option<&[u8]> {
        let inode = self.durable.entries.get(path)?;
        let mut dir = parent_dir(path);
        while !is_root(&dir) {
            if !self.durable.dirs.contains(&dir) {
                return None;
            }
            dir = parent_dir(&dir);
        }
        Some(&self.inode(*inode).durable)
    }

    /// A process kill: its open handles are gone (an unlinked file dies with its last
    /// handle), everything else — cache, write-back queues, the journal — lives on.
    pub(super) fn kill(&mut self) {
        for inode in self.inodes.values_mut() {
            inode.open_handles = 0;
        }
        self.free_unreferenced();
    }

    /// Memory pressure: every file's clean cached pages are dropped.
    pub(super) fn evict_page_cache(&mut self) {
        for inode in self.inodes.values_mut() {
            inode.drop_cache();
        }
    }

    /// After a power loss has applied a prefix of the journal to `durable`: nothing under
    /// a lost directory survives, and the live name space restarts from the durable one.
    pub(super) fn settle_namespace(&mut self) {
        assert!(self.journal.is_empty());
        self.durable.prune_unreachable();
        self.live = self.durable.clone();
    }
}
