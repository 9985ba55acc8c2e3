//! What a directory *is*, as opposed to how its path is spelt.
//!
//! `D/log`, `D/log/../log`, `D/./log` and a symlink to `D/log` are four spellings of one
//! directory. Code that must keep two directories apart (a log and its archive, the
//! directories of a partitioned log, a database's data and log directories) compares
//! their [`DirIdentity`]s ([`crate::Storage::dir_identity`]), never their paths: comparing
//! spellings let an archiver copy each segment onto itself and count it archived.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::Storage;

/// The identity of a directory: two paths have equal identities exactly when they name
/// the same directory (on the real file system: the same device and inode).
///
/// A path that does not exist yet has the identity of what
/// [`Storage::create_dir_all`](crate::Storage::create_dir_all) would make of it: its
/// nearest existing ancestor's identity and the rest of the path, normalised by
/// resolving `.` and `..` in it as written (a component that does not exist yet is made a
/// real directory by `create_dir_all`; a dangling symlink is followed to its target). So a new directory spelt
/// two ways is recognised before either is created. Identities from different storages
/// compare meaningfully: each simulated disk has identities of its own, and the real
/// file system's are (device, inode) pairs. Compare identities taken together: creating
/// a directory changes its identity from the second form to the first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DirIdentity(Repr);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// An existing directory (`missing` empty), or the directory `missing` would name
    /// under the existing directory (device, inode).
    Os {
        device: u64,
        inode: u64,
        missing: PathBuf,
    },
    /// A simulated disk (by its number) and a path normalised on it: the simulator has
    /// no symlinks, so the normalised path is what the directory is.
    Sim { disk: u64, path: PathBuf },
}

impl DirIdentity {
    /// The identity of the existing directory with this device and inode number, or,
    /// with `missing` not empty, of the directory `missing` (normalised, relative) would
    /// name under it once created.
    pub(crate) fn os(device: u64, inode: u64, missing: PathBuf) -> DirIdentity {
        DirIdentity(Repr::Os {
            device,
            inode,
            missing,
        })
    }

    /// The identity of the normalised `path` on simulated disk number `disk`.
    pub(crate) fn sim(disk: u64, path: PathBuf) -> DirIdentity {
        DirIdentity(Repr::Sim { disk, path })
    }
}

/// `path` with `.` dropped and each `..` resolved against the component before it, as
/// written (never through the file system): the normalisation of a path's part that does
/// not exist yet, and of every path on a simulated disk (which has no symlinks). A `..`
/// at the root stays at the root; a `..` that climbs above the start of a relative path
/// is kept.
pub(crate) fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) | Some(Component::Prefix(_)) => {}
                Some(Component::ParentDir) | Some(Component::CurDir) | None => out.push(c),
            },
            other => out.push(other),
        }
    }
    out.iter().collect()
}

/// How many symlinks [`os_identity`] follows by hand (dangling ones) before it gives up,
/// as the kernel does (`ELOOP` after 40).
const MAX_LINKS: usize = 40;

/// The real file system's identity of `dir` (see [`DirIdentity`]): the nearest existing
/// ancestor is found by `stat` (which follows symlinks, so a link and its target are one
/// directory), and the part below it that does not exist yet is normalised as written.
/// A *dangling* symlink on the way (one whose target does not exist yet, so `stat`
/// reports it missing) is followed by hand: `create_dir_all` through it would create its
/// target, so the path names what the target names (a dangling link to a log directory
/// not yet created, given as that log's archive, passed as a directory of its own and
/// then became the log directory itself).
pub(crate) fn os_identity(dir: &Path) -> io::Result<DirIdentity> {
    os_identity_following(dir, 0)
}

fn os_identity_following(dir: &Path, links: usize) -> io::Result<DirIdentity> {
    use std::os::unix::fs::MetadataExt;
    let components: Vec<Component<'_>> = dir.components().collect();
    // The longest prefix that exists: at worst "/" or ".", which always do.
    for k in (0..=components.len()).rev() {
        let base: PathBuf = components[..k].iter().collect();
        let probe = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base
        };
        let meta = match std::fs::metadata(&probe) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound && k > 0 => {
                let dangling =
                    std::fs::symlink_metadata(&probe).is_ok_and(|m| m.file_type().is_symlink());
                if !dangling {
                    continue;
                }
                if links >= MAX_LINKS {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("too many levels of symbolic links at {}", probe.display()),
                    ));
                }
                // Follow it: its target, relative to the link's directory, then the rest.
                let target = std::fs::read_link(&probe)?;
                let mut via = match probe.parent() {
                    Some(parent) if target.is_relative() => parent.join(&target),
                    _ => target,
                };
                via.extend(&components[k..]);
                return os_identity_following(&via, links + 1);
            }
            Err(e) => return Err(e),
        };
        if k == components.len() {
            if !meta.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "exists and is not a directory",
                ));
            }
            return Ok(DirIdentity::os(meta.dev(), meta.ino(), PathBuf::new()));
        }
        let rest: PathBuf = components[k..].iter().collect();
        let normal = normalize_lexically(&rest);
        if normal == rest {
            // Nothing to resolve: `rest` names a directory-to-be under `probe`.
            return Ok(DirIdentity::os(meta.dev(), meta.ino(), normal));
        }
        // `rest` had `.` or `..` in it: what it names may exist after all (`D/new/../old`
        // is `D/old`), or climb above `probe` (through the real `..`, which a symlink
        // makes differ from the written one). Resolve again from the shorter spelling;
        // it has no `..` below `probe`, so this recursion ends at the next level.
        let mut again = probe;
        let mut climbs: Vec<OsString> = Vec::new();
        for c in normal.components() {
            match c {
                Component::ParentDir if climbs.is_empty() => again.push(".."),
                other => climbs.push(other.as_os_str().to_owned()),
            }
        }
        again.extend(climbs);
        return os_identity_following(&again, links);
    }
    unreachable!("the empty prefix, `.`, exists or its error was returned")
}

/// The first two of `dirs` (each a storage and a path) that are one directory, by
/// [`DirIdentity`]: `Some((i, j))` with `i < j`, or `None` if they are all distinct. The
/// one rule every caller that needs directories kept apart applies.
pub fn find_same_dir(dirs: &[(&dyn Storage, &Path)]) -> io::Result<Option<(usize, usize)>> {
    let mut seen: Vec<DirIdentity> = Vec::with_capacity(dirs.len());
    for (j, (storage, path)) in dirs.iter().enumerate() {
        let id = storage.dir_identity(path)?;
        if let Some(i) = seen.iter().position(|s| *s == id) {
            return Ok(Some((i, j)));
        }
        seen.push(id);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OsStorage, SimStorage};

    /// A dangling symlink (and a chain of them) names what its target will name once
    /// created; a loop of links is an error, not a hang.
    #[test]
    fn dangling_symlinks_are_followed_and_loops_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::os::unix::fs::symlink(p.join("log"), p.join("a")).unwrap();
        std::os::unix::fs::symlink("a", p.join("b")).unwrap();
        let log = os_identity(&p.join("log")).unwrap();
        assert_eq!(os_identity(&p.join("a")).unwrap(), log);
        assert_eq!(os_identity(&p.join("b")).unwrap(), log);
        assert_eq!(
            os_identity(&p.join("b/x")).unwrap(),
            os_identity(&p.join("log/x")).unwrap()
        );
        std::fs::create_dir(p.join("log")).unwrap();
        assert_eq!(
            os_identity(&p.join("b")).unwrap(),
            os_identity(&p.join("log")).unwrap()
        );
        std::os::unix::fs::symlink("loop2", p.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", p.join("loop2")).unwrap();
        assert!(os_identity(&p.join("loop1")).is_err());
    }

    #[test]
    fn lexical_normalisation() {
        for (from, to) in [
            ("/a/b/../c", "/a/c"),
            ("/a/./b/.", "/a/b"),
            ("/..", "/"),
            ("/a/../..", "/"),
            ("a/..", ""),
            ("../a/../b", "../b"),
            ("a/../../b", "../b"),
        ] {
            assert_eq!(
                normalize_lexically(Path::new(from)),
                Path::new(to),
                "{from}"
            );
        }
    }

    #[test]
    fn on_the_real_disk_a_directory_is_one_whatever_its_spelling() {
        let tmp = tempfile::tempdir().unwrap();
        let s = OsStorage::new();
        let d = tmp.path();
        let log = d.join("log");
        std::fs::create_dir(&log).unwrap();
        std::fs::create_dir(d.join("other")).unwrap();
        std::os::unix::fs::symlink(&log, d.join("link")).unwrap();
        std::os::unix::fs::symlink(d.join("other"), d.join("olink")).unwrap();
        let id = |p: PathBuf| s.dir_identity(&p).unwrap();
        let log_id = id(log.clone());
        for alias in [
            log.join("..").join("log"),
            log.join("."),
            d.join("other/../log"),
            d.join("link"),
            d.join("link/../log"), // the link's `..` is its target's parent: `d`
            d.join("missing/../log"),
        ] {
            assert_eq!(id(alias.clone()), log_id, "{}", alias.display());
        }
        assert_ne!(id(d.join("other")), log_id);
        // Directories to be: the same once created, however spelt, and distinct from
        // what exists.
        let new = id(d.join("new"));
        assert_eq!(id(d.join("log/../new")), new);
        assert_eq!(id(d.join("x/../new")), new);
        assert_eq!(id(d.join("link/../new")), new);
        assert_eq!(id(d.join("olink/../new")), new);
        assert_ne!(id(d.join("log/new")), new);
        assert_eq!(id(d.join("link/new")), id(d.join("log/new")));
        std::fs::create_dir(d.join("new")).unwrap();
        assert_ne!(id(d.join("new")), new, "an identity is taken when asked");
        // A file is not a directory.
        std::fs::write(d.join("f"), b"x").unwrap();
        let e = s.dir_identity(&d.join("f")).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        assert!(
            e.to_string().contains(&d.join("f").display().to_string()),
            "{e}"
        );
        let pairs: Vec<(&dyn Storage, PathBuf)> = vec![
            (&s, d.join("other")),
            (&s, log.clone()),
            (&s, d.join("link")),
        ];
        let dirs: Vec<(&dyn Storage, &Path)> =
            pairs.iter().map(|(s, p)| (*s, p.as_path())).collect();
        assert_eq!(find_same_dir(&dirs).unwrap(), Some((1, 2)));
        assert_eq!(find_same_dir(&dirs[..2]).unwrap(), None);
    }

    #[test]
    fn on_a_simulated_disk_paths_are_normalised_and_disks_are_apart() {
        let (a, b) = (SimStorage::new(1), SimStorage::new(1));
        a.create_dir_all(Path::new("/d/log")).unwrap();
        let id = |s: &SimStorage, p: &str| s.dir_identity(Path::new(p)).unwrap();
        assert_eq!(id(&a, "/d/log"), id(&a, "/d/x/../log"));
        assert_eq!(id(&a, "/d/log"), id(&a, "/d/./log/"));
        assert_ne!(id(&a, "/d/log"), id(&a, "/d"));
        assert_ne!(id(&a, "/d/log"), id(&b, "/d/log"), "two disks");
        assert_eq!(id(&a, "/d/log"), id(&a.clone(), "/d/log"), "one disk");
        a.open(Path::new("/d/f"), crate::OpenOptions::CREATE)
            .unwrap();
        assert!(a.dir_identity(Path::new("/d/f")).is_err());
        // `..` resolves on the simulated disk as it does on a real one without links:
        // a file created through it is the same file.
        a.open(Path::new("/d/x/../log/g"), crate::OpenOptions::CREATE)
            .unwrap();
        assert!(a.exists(Path::new("/d/log/g")).unwrap());
    }
}
