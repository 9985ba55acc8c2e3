//! Horizontal log partitioning (Tandem §4): the directories a log's segments go to.
//!
//! A log may be given several directories — one per device. Segment `k` (LSNs
//! `[k·S, (k+1)·S)`) lives in directory `k mod D`, so consecutive segments alternate
//! between devices: when the flush daemon rolls over to the next segment it moves to the
//! next device ("baton passing"), and the archiver copies the segment it has just left
//! off a device the writer no longer uses. The first directory holds the `LOCK` and
//! anything else global.
//!
//! # The directory marker
//!
//! A log of `D > 1` directories records its layout durably: each directory holds a small
//! file [`MARKER_NAME`] with the log's identity (a random 64-bit id chosen when the log
//! was created), the directory's index and the count `D`, checksummed. Opening checks
//! every given directory's marker against the first one's, so a directory that is
//! missing, extra, swapped with another, or belongs to another log is refused with an
//! error naming it — never read as if it were the right one (which would lose or
//! reorder acknowledged records).
//!
//! Creation writes the markers of directories `1..D` first and the first directory's
//! last, each atomically (temporary name, sync, rename, directory sync), before any
//! segment exists. So a first directory with a marker means the layout is complete; one
//! without a marker, while no directory holds a segment, is a log whose creation was
//! interrupted (or never began), and its markers are written afresh — nothing was ever
//! acknowledged in it.
//!
//! A log of one directory writes no marker — its on-disk format is unchanged from before
//! partitioning — until it is opened with an archive, which must name the log it
//! archives: then it gets a marker of one directory (`D = 1`) carrying its id. A directory
//! without a marker and with segments is refused as part of a larger layout, and a first
//! directory whose marker says another `D` is refused.
//!
//! # Directories are compared by identity
//!
//! The directories of a log, and its archive, must be distinct directories — not distinct
//! spellings: `D/log` and `D/log/../log` (or a symlink to it) are one directory, and
//! taking them for two made the archiver copy each segment onto itself (then truncation
//! freed it) and made a log of "two" directories write both markers into one file. Every
//! open compares them by [`sluice_storage::DirIdentity`] before it creates or writes
//! anything (`LogDirs::refuse_aliases`).
//!
//! # The archive marker
//!
//! An archive directory holds [`ARCHIVE_MARKER_NAME`], naming the id of the log it
//! archives (the marker's encoding, with its own magic). An archive whose marker names
//! another log — an old archive reused after its log was wiped and recreated, whose
//! segment names the new log's segments would match — is refused, as is one that holds
//! segments but no marker: its copies would be taken for the log's own, and truncation
//! would free segments no copy holds.

use crate::error::{Result, WalError};
use crate::Lsn;
use sluice_storage::{OpenOptions, Storage};
use std::path::{Path, PathBuf};

/// The name of the marker file in each directory of a log of several directories (and
/// in the directory of an archived log of one).
pub const MARKER_NAME: &str = "LOG_DIR";
const MARKER_TMP: &str = "LOG_DIR.tmp";
const MAGIC: &[u8; 8] = b"SLUICEDR";
/// The name of the marker file in an archive directory: the id of the log it archives.
pub const ARCHIVE_MARKER_NAME: &str = "ARCHIVE_OF";
const ARCHIVE_MARKER_TMP: &str = "ARCHIVE_OF.tmp";
const ARCHIVE_MAGIC: &[u8; 8] = b"SLUICEAR";
const VERSION: u32 = 1;
const MARKER_BYTES: usize = 36;
/// The most directories a log may have (Tandem allowed 16 horizontal partitions).
pub const MAX_LOG_DIRS: usize = 64;

/// What a marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Marker {
    log_id: u64,
    index: u32,
    count: u32,
}

impl Marker {
    /// An archive's marker: the log's id (index and count are unused, 0).
    fn archive(log_id: u64) -> Marker {
        Marker {
            log_id,
            index: 0,
            count: 0,
        }
    }

    fn encode(&self, magic: &[u8; 8]) -> [u8; MARKER_BYTES] {
        let mut b = [0u8; MARKER_BYTES];
        b[..8].copy_from_slice(magic);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.index.to_le_bytes());
        b[16..20].copy_from_slice(&self.count.to_le_bytes());
        b[24..32].copy_from_slice(&self.log_id.to_le_bytes());
        let crc = crc32c::crc32c(&b[..32]);
        b[32..36].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn decode(b: &[u8], magic: &[u8; 8]) -> Option<Marker> {
        if b.len() < MARKER_BYTES || &b[..8] != magic {
            return None;
        }
        let crc = u32::from_le_bytes(b[32..36].try_into().unwrap());
        if crc32c::crc32c(&b[..32]) != crc
            || u32::from_le_bytes(b[8..12].try_into().unwrap()) != VERSION
        {
            return None;
        }
        Some(Marker {
            index: u32::from_le_bytes(b[12..16].try_into().unwrap()),
            count: u32::from_le_bytes(b[16..20].try_into().unwrap()),
            log_id: u64::from_le_bytes(b[24..32].try_into().unwrap()),
        })
    }
}

/// The directories of one log, in order: segment `k` lives in `dirs[k mod D]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirs {
    dirs: Vec<PathBuf>,
}

impl LogDirs {
    /// The layout `dirs` (at least one, at most [`MAX_LOG_DIRS`], no duplicates).
    pub fn new(dirs: &[PathBuf]) -> Result<LogDirs> {
        if dirs.is_empty() || dirs.len() > MAX_LOG_DIRS {
            return Err(WalError::InvalidArgument(format!(
                "a log needs between 1 and {MAX_LOG_DIRS} directories, got {}",
                dirs.len()
            )));
        }
        for (i, d) in dirs.iter().enumerate() {
            if dirs[..i].contains(d) {
                return Err(WalError::InvalidArgument(format!(
                    "log directory {} is given twice",
                    d.display()
                )));
            }
        }
        Ok(LogDirs {
            dirs: dirs.to_vec(),
        })
    }

    /// One directory.
    pub fn single(dir: &Path) -> LogDirs {
        LogDirs {
            dirs: vec![dir.to_path_buf()],
        }
    }

    /// The directories, in order.
    pub fn all(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// How many there are.
    pub fn count(&self) -> usize {
        self.dirs.len()
    }

    /// The first directory: the `LOCK` and the global files live here.
    pub fn first(&self) -> &Path {
        &self.dirs[0]
    }

    /// The index of the directory segment `start` lives in.
    pub fn index_of(&self, start: Lsn, segment_bytes: u64) -> usize {
        ((start.0 / segment_bytes) % self.dirs.len() as u64) as usize
    }

    /// The directory segment `start` lives in.
    pub fn dir_of(&self, start: Lsn, segment_bytes: u64) -> &Path {
        &self.dirs[self.index_of(start, segment_bytes)]
    }

    /// Refuses two of these directories, or one of them and the archive directory
    /// `archive`, that are one directory however they are spelt (compared by
    /// [`sluice_storage::DirIdentity`], which also recognises directories that do not
    /// exist yet). Called before an open creates or writes anything.
    pub(crate) fn refuse_aliases(
        &self,
        storage: &dyn Storage,
        archive: Option<&Path>,
    ) -> Result<()> {
        let named: Vec<(&dyn Storage, &Path)> = self
            .dirs
            .iter()
            .map(PathBuf::as_path)
            .chain(archive)
            .map(|d| (storage, d))
            .collect();
        let Some((i, j)) = sluice_storage::find_same_dir(&named)? else {
            return Ok(());
        };
        let what = |k: usize| {
            let role = if k < self.count() {
                "log directory"
            } else {
                "the archive directory"
            };
            format!("{role} {}", named[k].1.display())
        };
        Err(WalError::InvalidArgument(format!(
            "{} is the same directory as {} (directories are compared by what they are, not \
             by how their paths are spelt): a log's directories and its archive must be \
             distinct directories",
            what(j),
            what(i)
        )))
    }

    /// The log's id, which its archive names ([`claim_archive`]): the first directory's
    /// marker's. A log of one directory has no marker until it is first archived; it
    /// gets one here (read-write opens only, after [`LogDirs::check_markers`]).
    pub(crate) fn log_id(&self, storage: &dyn Storage) -> Result<u64> {
        if let Some(m) = read_marker(storage, self.first())? {
            return Ok(m.log_id);
        }
        assert_eq!(
            self.count(),
            1,
            "check_markers wrote the markers of a new layout"
        );
        let m = Marker {
            log_id: new_log_id(),
            index: 0,
            count: 1,
        };
        write_atomically(
            storage,
            self.first(),
            (MARKER_TMP, MARKER_NAME),
            &m.encode(MAGIC),
        )?;
        Ok(m.log_id)
    }

    /// Checks the markers against this layout (see the module docs); for a read-write open
    /// of a new layout of several directories, creates the directories and writes the
    /// markers. `read_only`: create and write nothing.
    pub(crate) fn check_markers(
        &self,
        storage: &dyn Storage,
        has_segments: impl Fn(&Path) -> Result<bool>,
        read_only: bool,
    ) -> Result<()> {
        let d = self.count();
        let first = self.first();
        let first_marker = read_marker(storage, first)?;
        let refuse = |dir: &Path, why: String| {
            Err(WalError::InvalidArgument(format!(
                "log directory {}: {why}",
                dir.display()
            )))
        };
        match first_marker {
            Some(m) if m.index != 0 => refuse(
                first,
                format!(
                    "it is directory {} of a log of {} directories, given as the first",
                    m.index, m.count
                ),
            ),
            Some(m) if (m.count as usize) < d => refuse(
                &self.dirs[m.count as usize],
                format!(
                    "it is not part of the log, which was created with {} directories \
                         ({d} given)",
                    m.count
                ),
            ),
            Some(m) if m.count as usize > d => refuse(
                first,
                format!(
                    "it is the first of a log of {} directories, but only {d} were given: \
                         directory {d} is missing (open the log with all of its directories, \
                         in their order)",
                    m.count
                ),
            ),
            Some(m) => {
                for (i, dir) in self.dirs.iter().enumerate().skip(1) {
                    if !storage.exists(dir)? {
                        return refuse(dir, "it is missing".into());
                    }
                    match read_marker(storage, dir)? {
                        Some(o) if o.log_id == m.log_id && o.index as usize == i => {}
                        Some(o) if o.log_id == m.log_id => {
                            return refuse(
                                dir,
                                format!(
                                    "it is directory {} of this log, given as directory {i}: \
                                     the directories are out of order",
                                    o.index
                                ),
                            )
                        }
                        Some(_) => return refuse(dir, "it belongs to another log".into()),
                        None => {
                            return refuse(
                                dir,
                                format!(
                                    "it is not directory {i} of this log (it has no {MARKER_NAME} \
                                     marker): a directory is missing or was replaced"
                                ),
                            )
                        }
                    }
                }
                Ok(())
            }
            None if d == 1 => Ok(()),
            None => {
                // Not (completely) created: only acceptable while no segment exists
                // anywhere — then nothing was ever acknowledged in this layout.
                for dir in &self.dirs {
                    if storage.exists(dir)? && has_segments(dir)? {
                        return refuse(
                            dir,
                            format!(
                                "it holds log segments, but the first directory {} has no \
                                 {MARKER_NAME} marker of a log of {d} directories (a log of one \
                                 directory, or the directories are out of order)",
                                first.display()
                            ),
                        );
                    }
                }
                if read_only {
                    return refuse(
                        first,
                        format!(
                            "no log of {d} directories was created here (no {MARKER_NAME} marker)"
                        ),
                    );
                }
                self.write_markers(storage)
            }
        }
    }

    /// Creates every directory and writes the markers of a new layout, the first
    /// directory's last.
    fn write_markers(&self, storage: &dyn Storage) -> Result<()> {
        let log_id = new_log_id();
        let count = self.count() as u32;
        for (i, dir) in self.dirs.iter().enumerate().rev() {
            storage.create_dir_all(dir)?;
            let m = Marker {
                log_id,
                index: i as u32,
                count,
            };
            write_atomically(storage, dir, (MARKER_TMP, MARKER_NAME), &m.encode(MAGIC))?;
        }
        Ok(())
    }
}

/// Writes `bytes` as the file `names.1` in `dir`, atomically: to `names.0`, synced,
/// renamed, the directory synced.
fn write_atomically(
    storage: &dyn Storage,
    dir: &Path,
    (tmp, name): (&str, &str),
    bytes: &[u8],
) -> Result<()> {
    let tmp = dir.join(tmp);
    {
        let f = storage.open(&tmp, OpenOptions::CREATE)?;
        f.set_len(0)?;
        f.write_at(bytes, 0)?;
        f.sync_data()?;
    }
    storage.rename(&tmp, &dir.join(name))?;
    storage.sync_dir(dir)?;
    Ok(())
}

/// Makes the (existing) directory `archive` the archive of the log `log_id`, or refuses
/// it (see the module docs): its marker must name this log; without a marker it must
/// hold no segment file, and then gets one — before the archiver copies anything into
/// it, so every copy in an archive lies under its log's marker. `is_segment` tells a
/// segment file by its name (`segment::parse_segment_name`: passed in, as
/// [`LogDirs::check_markers`] is passed `has_segments`, so that this module, which the
/// segment files' module uses, does not use it back).
pub(crate) fn claim_archive(
    storage: &dyn Storage,
    archive: &Path,
    log_id: u64,
    is_segment: impl Fn(&str) -> bool,
) -> Result<()> {
    let refuse = |why: String| {
        Err(WalError::InvalidArgument(format!(
            "archive directory {}: {why}",
            archive.display()
        )))
    };
    match read_marker_file(
        storage,
        ("archive directory", archive),
        ARCHIVE_MARKER_NAME,
        ARCHIVE_MAGIC,
    )? {
        Some(m) if m.log_id == log_id => Ok(()),
        Some(m) => refuse(format!(
            "it archives another log (id {:016x}, this log is {log_id:016x}): an archive \
             reused after its log was recreated would pass the old log's copies off as the \
             new log's",
            m.log_id
        )),
        None => {
            let names = storage.list(archive)?;
            if let Some(seg) = names.iter().find(|n| is_segment(n)) {
                return refuse(format!(
                    "it holds log segments (`{seg}`) but no {ARCHIVE_MARKER_NAME} marker \
                     naming the log they belong to: it is not trusted as this log's archive"
                ));
            }
            write_atomically(
                storage,
                archive,
                (ARCHIVE_MARKER_TMP, ARCHIVE_MARKER_NAME),
                &Marker::archive(log_id).encode(ARCHIVE_MAGIC),
            )
        }
    }
}

/// The id of the log whose first directory is `dir`, if it has one (a log of one
/// directory gets its id when it is first archived): what the log's archive names.
pub fn read_log_id(storage: &dyn Storage, dir: &Path) -> Result<Option<u64>> {
    Ok(read_marker(storage, dir)?.map(|m| m.log_id))
}

/// The id of the log the archive in `dir` holds copies of (its `ARCHIVE_OF` marker), if
/// it has a marker.
pub fn read_archive_log_id(storage: &dyn Storage, dir: &Path) -> Result<Option<u64>> {
    Ok(read_marker_file(
        storage,
        ("archive directory", dir),
        ARCHIVE_MARKER_NAME,
        ARCHIVE_MAGIC,
    )?
    .map(|m| m.log_id))
}

/// The marker in `dir`, if it has a valid one. A marker file that does not decode is
/// damage (markers are written atomically, so it was never a half-written one).
fn read_marker(storage: &dyn Storage, dir: &Path) -> Result<Option<Marker>> {
    read_marker_file(storage, ("log directory", dir), MARKER_NAME, MAGIC)
}

/// The marker `name` (with `magic`) in `dir` (a `what`, for the error), if there is one;
/// a damaged one is an error.
fn read_marker_file(
    storage: &dyn Storage,
    (what, dir): (&str, &Path),
    name: &str,
    magic: &[u8; 8],
) -> Result<Option<Marker>> {
    let path = dir.join(name);
    let f = match storage.open(&path, OpenOptions::READ_ONLY) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut b = [0u8; MARKER_BYTES];
    let n = f.read_at(&mut b, 0)?;
    match Marker::decode(&b[..n], magic) {
        Some(m) => Ok(Some(m)),
        None => Err(WalError::InvalidArgument(format!(
            "{what} {}: its {name} marker is damaged",
            dir.display()
        ))),
    }
}

/// A log identity: random per process and time, so two logs created on one machine get
/// different ids.
fn new_log_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_and_damage_is_seen() {
        let m = Marker {
            log_id: 0xfeed,
            index: 2,
            count: 3,
        };
        assert_eq!(Marker::decode(&m.encode(MAGIC), MAGIC), Some(m));
        let mut bad = m.encode(MAGIC);
        bad[13] ^= 1;
        assert_eq!(Marker::decode(&bad, MAGIC), None);
        assert_eq!(Marker::decode(&m.encode(MAGIC)[..20], MAGIC), None);
        // An archive's marker is not a log directory's, nor the other way round.
        let a = Marker::archive(0xfeed);
        assert_eq!(
            Marker::decode(&a.encode(ARCHIVE_MAGIC), ARCHIVE_MAGIC),
            Some(a)
        );
        assert_eq!(Marker::decode(&a.encode(ARCHIVE_MAGIC), MAGIC), None);
        assert_eq!(Marker::decode(&m.encode(MAGIC), ARCHIVE_MAGIC), None);
    }

    #[test]
    fn segments_go_round_robin() {
        let dirs = LogDirs::new(&["/a".into(), "/b".into(), "/c".into()]).unwrap();
        let idx: Vec<usize> = (0..7).map(|k| dirs.index_of(Lsn(k * 4096), 4096)).collect();
        assert_eq!(idx, [0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(dirs.dir_of(Lsn(4096 * 4), 4096), Path::new("/b"));
        assert!(LogDirs::new(&[]).is_err());
        assert!(LogDirs::new(&["/a".into(), "/a".into()]).is_err());
    }
}
