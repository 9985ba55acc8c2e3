//! The archive's `MANIFEST`: one entry per archived segment, appended by the archiver
//! once the segment's copy is durable, and the readers an operator (or a restore) uses to
//! trust an archive: [`read_archive_manifest`] and [`verify_archive`].
//!
//! # Format
//!
//! A text file of lines, one per segment, in the order the copies were made:
//!
//! ```text
//! segment 0000000000004000.wal lsn 16384..32768 bytes 20480 crc32c 1a2b3c4d entry-crc32c 5e6f7a8b
//! ```
//!
//! the copy's file name, the LSN range its records cover (`first..end`: frames, records
//! and padding, tile a finished segment, so `end` is its start plus the segment size),
//! the copy's length in bytes (header block included) and the CRC32C of all its bytes,
//! then the CRC32C of the line up to that point (`…4d`, without the space before
//! `entry-crc32c`). An entry is appended with one write and synced before the archiver
//! counts the segment archived, so at most the last entry can be torn by a crash: an
//! entry that is cut short (no newline) or fails its own CRC, with no valid entry after
//! it, is ignored (and cut off by the archiver's next open, before it appends); a bad
//! entry followed by a valid one is damage.
//!
//! A copy renamed into place whose entry a crash prevented is listed by the archiver's
//! next open ([`Manifest::open`]): it reads the copy (whole and durable by then: its data
//! was synced before the rename, and the open syncs the directory) and appends its entry.
//! Until then [`verify_archive`] reports it in [`ArchiveReport::unlisted`].

use super::segment::{self, SEGMENT_HEADER_BYTES};
use crate::error::{Result, WalError};
use crate::Lsn;
use sluice_storage::{FileHandle, OpenOptions, Storage};
use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

/// The manifest's file name in an archive directory.
pub const MANIFEST_NAME: &str = "MANIFEST";

/// Bytes read at a time when checksumming a copy.
const READ_CHUNK: usize = 256 << 10;

/// One archived segment, as its `MANIFEST` entry lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedSegment {
    /// The copy's file name in the archive directory (the segment's own name).
    pub name: String,
    /// The first LSN of its records (the segment's start).
    pub first: Lsn,
    /// The end of its records (the next segment's start).
    pub end: Lsn,
    /// The copy's length in bytes (its header block included).
    pub len: u64,
    /// The CRC32C of the copy's bytes.
    pub crc32c: u32,
}

impl ArchivedSegment {
    /// The entry's line, newline included.
    fn line(&self) -> String {
        let body = format!(
            "segment {} lsn {}..{} bytes {} crc32c {:08x}",
            self.name, self.first.0, self.end.0, self.len, self.crc32c
        );
        let crc = crc32c::crc32c(body.as_bytes());
        format!("{body} entry-crc32c {crc:08x}\n")
    }

    /// The entry a line (without its newline) holds, if it is one.
    fn parse(line: &[u8]) -> Option<ArchivedSegment> {
        let line = std::str::from_utf8(line).ok()?;
        let (body, crc) = line.rsplit_once(" entry-crc32c ")?;
        if crc.len() != 8 || u32::from_str_radix(crc, 16).ok()? != crc32c::crc32c(body.as_bytes()) {
            return None;
        }
        let f: Vec<&str> = body.split(' ').collect();
        let ["segment", name, "lsn", range, "bytes", len, "crc32c", crc] = f[..] else {
            return None;
        };
        let (first, end) = range.split_once("..")?;
        let (first, end) = (Lsn(first.parse().ok()?), Lsn(end.parse().ok()?));
        if segment::parse_segment_name(name) != Some(first) || end <= first || crc.len() != 8 {
            return None;
        }
        Some(ArchivedSegment {
            name: name.to_string(),
            first,
            end,
            len: len.parse().ok()?,
            crc32c: u32::from_str_radix(crc, 16).ok()?,
        })
    }
}

/// What a manifest's bytes hold: its entries, and the length of the valid prefix (a torn
/// last entry lies beyond it).
struct Parsed {
    entries: Vec<ArchivedSegment>,
    valid_len: u64,
}

/// Parses a manifest's bytes (see the module docs); `path` names it in errors.
fn parse(bytes: &[u8], path: &Path) -> Result<Parsed> {
    let mut entries = Vec::new();
    let mut valid_len = 0;
    let mut at = 0;
    // The first entry that did not read (its number and offset), if any.
    let mut bad: Option<(usize, usize)> = None;
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let whole = line.last() == Some(&b'\n');
        let entry = whole
            .then(|| ArchivedSegment::parse(&line[..line.len() - 1]))
            .flatten();
        match (entry, bad) {
            (Some(e), None) => {
                entries.push(e);
                valid_len = (at + line.len()) as u64;
            }
            (Some(_), Some((n, off))) => {
                return Err(WalError::Corruption {
                    lsn: entries.last().map_or(Lsn(0), |e: &ArchivedSegment| e.end),
                    reason: format!(
                        "archive manifest {} is damaged: entry {} (at byte {off}) does not read, but a later one does",
                        path.display(),
                        n + 1
                    ),
                });
            }
            (None, _) => {
                bad.get_or_insert((i, at));
            }
        }
        at += line.len();
    }
    Ok(Parsed { entries, valid_len })
}

/// Reads all of `path` (a manifest: small, about 100 bytes a segment), as the device
/// holds it: synced, then read past the page cache (`sluice_storage::settle`; after a
/// failed sync the cache may show an entry the device never got, and appending after it
/// could leave a hole a power loss exposes).
fn read_all(storage: &dyn Storage, path: &Path, read_only: bool) -> Result<Option<Vec<u8>>> {
    let options = if read_only {
        OpenOptions::READ_ONLY
    } else {
        OpenOptions::EXISTING
    };
    let f = match storage.open(path, options) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    sluice_storage::settle(&*f, read_only)?;
    let mut bytes = vec![0u8; usize::try_from(f.len()?).unwrap_or(usize::MAX)];
    f.read_exact_at(&mut bytes, 0)?;
    Ok(Some(bytes))
}

/// The segments the `MANIFEST` of archive directory `dir` lists, in the order they were
/// archived (a torn last entry, which a crash can leave, is left out). Reads only.
/// Fails with [`WalError::InvalidArgument`] if `dir` has no manifest (not an archive, or
/// one from before manifests: its copies are listed at its archiver's next open), and
/// with [`WalError::Corruption`] if an entry other than the last does not read.
pub fn read_archive_manifest(storage: &dyn Storage, dir: &Path) -> Result<Vec<ArchivedSegment>> {
    let path = dir.join(MANIFEST_NAME);
    match read_all(storage, &path, true)? {
        Some(bytes) => Ok(parse(&bytes, &path)?.entries),
        None => Err(WalError::InvalidArgument(format!(
            "{} has no {MANIFEST_NAME}: it is not a log archive",
            dir.display()
        ))),
    }
}

/// The entries of a manifest's bytes (an archive mirror's copy of a `MANIFEST`, say), as
/// [`read_archive_manifest`] reads them from a file: a torn last entry is left out, and
/// an entry other than the last that does not read is [`WalError::Corruption`].
pub fn parse_archive_manifest(bytes: &[u8]) -> Result<Vec<ArchivedSegment>> {
    Ok(parse(bytes, Path::new(MANIFEST_NAME))?.entries)
}

/// [`parse_archive_manifest`] for a manifest that was never appended to in place — an
/// object store's copy, replaced whole by each put: an entry that does not read is
/// damage there, not a torn append, and is an error naming it.
pub fn parse_archive_manifest_whole(bytes: &[u8]) -> Result<Vec<ArchivedSegment>> {
    let parsed = parse(bytes, Path::new(MANIFEST_NAME))?;
    if parsed.valid_len != bytes.len() as u64 {
        return Err(WalError::Corruption {
            lsn: parsed.entries.last().map_or(Lsn(0), |e| e.end),
            reason: format!(
                "archive manifest is damaged: entry {} (at byte {}) does not read",
                parsed.entries.len() + 1,
                parsed.valid_len
            ),
        });
    }
    Ok(parsed.entries)
}

/// What is wrong with an archive, found by [`verify_archive`]. Each names the file and
/// the LSN range concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveProblem {
    /// A listed copy is not in the directory.
    Missing {
        /// Its file name.
        name: String,
        /// The LSN range it should hold.
        first: Lsn,
        /// Its end.
        end: Lsn,
    },
    /// A listed copy's length is not the listed one.
    Length {
        /// Its file name.
        name: String,
        /// The LSN range it should hold.
        first: Lsn,
        /// Its end.
        end: Lsn,
        /// The length the manifest lists.
        listed: u64,
        /// The file's length.
        found: u64,
    },
    /// A listed copy's bytes do not have the listed CRC32C.
    Checksum {
        /// Its file name.
        name: String,
        /// The LSN range it should hold.
        first: Lsn,
        /// Its end.
        end: Lsn,
        /// The checksum the manifest lists.
        listed: u32,
        /// The file's.
        found: u32,
    },
    /// No listed segment holds `[from, to)`: the archive has a hole before `next`.
    Gap {
        /// The end of the listed segments before the hole.
        from: Lsn,
        /// The start of the next listed segment.
        to: Lsn,
        /// That segment's file name.
        next: String,
    },
    /// A listed segment overlaps the one before it (listed twice, or two sizes).
    Overlap {
        /// Its file name.
        name: String,
        /// Its LSN range.
        first: Lsn,
        /// Its end.
        end: Lsn,
        /// Where the segments before it end.
        previous_end: Lsn,
    },
}

impl ArchiveProblem {
    /// Where the log the archive holds stops being whole because of this problem.
    fn breaks_at(&self) -> Lsn {
        match self {
            ArchiveProblem::Missing { first, .. }
            | ArchiveProblem::Length { first, .. }
            | ArchiveProblem::Checksum { first, .. }
            | ArchiveProblem::Overlap { first, .. } => *first,
            ArchiveProblem::Gap { from, .. } => *from,
        }
    }
}

impl fmt::Display for ArchiveProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchiveProblem::Missing { name, first, end } => {
                write!(f, "{name} (LSN {first}..{end}) is listed but missing")
            }
            ArchiveProblem::Length {
                name,
                first,
                end,
                listed,
                found,
            } => write!(
                f,
                "{name} (LSN {first}..{end}) is {found} bytes, the manifest lists {listed}"
            ),
            ArchiveProblem::Checksum {
                name,
                first,
                end,
                listed,
                found,
            } => write!(
                f,
                "{name} (LSN {first}..{end}) is damaged: its CRC32C is {found:08x}, the manifest lists {listed:08x}"
            ),
            ArchiveProblem::Gap { from, to, next } => write!(
                f,
                "no archived segment holds LSN {from}..{to} (the gap before {next})"
            ),
            ArchiveProblem::Overlap {
                name,
                first,
                end,
                previous_end,
            } => write!(
                f,
                "{name} (LSN {first}..{end}) overlaps the segments before it, which end at {previous_end}"
            ),
        }
    }
}

/// What [`verify_archive`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveReport {
    /// The segments the manifest lists, in LSN order.
    pub segments: Vec<ArchivedSegment>,
    /// The LSN range the archive holds whole, as one log: from the first listed segment
    /// to the first problem (or the last segment's end). `None` if nothing is listed or
    /// the first segment is bad.
    pub reachable: Option<(Lsn, Lsn)>,
    /// Every problem, in LSN order: the first one ends `reachable`.
    pub problems: Vec<ArchiveProblem>,
    /// Segment files in the directory the manifest does not list: a copy whose entry a
    /// crash prevented (its archiver's next open lists it), or a stranger. Not checked.
    pub unlisted: Vec<String>,
}

impl ArchiveReport {
    /// True if every listed copy is whole and they hold one contiguous range of the log.
    pub fn is_intact(&self) -> bool {
        self.problems.is_empty()
    }
}

impl fmt::Display for ArchiveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} archived segment(s)", self.segments.len())?;
        match self.reachable {
            Some((a, b)) => write!(f, ", LSN {a}..{b} whole")?,
            None => write!(f, ", none whole")?,
        }
        if let Some(p) = self.problems.first() {
            write!(f, "; first problem: {p}")?;
            if self.problems.len() > 1 {
                write!(f, " (and {} more)", self.problems.len() - 1)?;
            }
        }
        if !self.unlisted.is_empty() {
            write!(f, "; unlisted: {}", self.unlisted.join(", "))?;
        }
        Ok(())
    }
}

/// The length and CRC32C of the file `path` as the device holds it (settled, as
/// [`read_all`] reads), read in chunks.
fn checksum(storage: &dyn Storage, path: &Path, read_only: bool) -> Result<(u64, u32)> {
    let options = if read_only {
        OpenOptions::READ_ONLY
    } else {
        OpenOptions::EXISTING
    };
    let f = storage.open(path, options)?;
    sluice_storage::settle(&*f, read_only)?;
    let len = f.len()?;
    let mut buf = vec![0u8; READ_CHUNK.min(usize::try_from(len).unwrap_or(READ_CHUNK))];
    let (mut off, mut crc) = (0u64, 0u32);
    while off < len {
        let n = (len - off).min(buf.len() as u64) as usize;
        f.read_exact_at(&mut buf[..n], off)?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        off += n as u64;
    }
    Ok((len, crc))
}

/// Checks the archive in `dir` against its `MANIFEST`, reading only: every listed copy
/// is there with its listed length and CRC32C (all its bytes are read), and the listed
/// segments are contiguous in LSN. Returns what it found ([`ArchiveReport`]: the range
/// the archive holds whole and every problem, each naming its file and LSN range);
/// fails only if the directory or a file cannot be read, or the manifest is missing or
/// damaged ([`read_archive_manifest`]). It writes nothing; it syncs the directory, the
/// manifest and each copy through read-only handles before reading them (a sync changes
/// no byte: what it reports does not depend on what a power loss can take back).
pub fn verify_archive(storage: &dyn Storage, dir: &Path) -> Result<ArchiveReport> {
    // What a dead archiver renamed into place is listed as the device holds it.
    sluice_storage::settle_dir(storage, dir, true)?;
    let mut segments = read_archive_manifest(storage, dir)?;
    segments.sort_by_key(|s| s.first);
    let listed: BTreeSet<&str> = segments.iter().map(|s| s.name.as_str()).collect();
    let present: BTreeSet<String> = storage.list(dir)?.into_iter().collect();
    let unlisted = present
        .iter()
        .filter(|n| segment::parse_segment_name(n).is_some() && !listed.contains(n.as_str()))
        .cloned()
        .collect();
    let mut problems = Vec::new();
    let mut previous_end: Option<Lsn> = None;
    for s in &segments {
        match previous_end {
            Some(p) if s.first > p => problems.push(ArchiveProblem::Gap {
                from: p,
                to: s.first,
                next: s.name.clone(),
            }),
            Some(p) if s.first < p => problems.push(ArchiveProblem::Overlap {
                name: s.name.clone(),
                first: s.first,
                end: s.end,
                previous_end: p,
            }),
            _ => {}
        }
        previous_end = Some(previous_end.map_or(s.end, |p| p.max(s.end)));
        if !present.contains(&s.name) {
            problems.push(ArchiveProblem::Missing {
                name: s.name.clone(),
                first: s.first,
                end: s.end,
            });
            continue;
        }
        let (len, crc) = checksum(storage, &dir.join(&s.name), true)?;
        if len != s.len {
            problems.push(ArchiveProblem::Length {
                name: s.name.clone(),
                first: s.first,
                end: s.end,
                listed: s.len,
                found: len,
            });
        } else if crc != s.crc32c {
            problems.push(ArchiveProblem::Checksum {
                name: s.name.clone(),
                first: s.first,
                end: s.end,
                listed: s.crc32c,
                found: crc,
            });
        }
    }
    let reachable = segments.first().and_then(|first| {
        let end = problems
            .first()
            .map_or(previous_end.expect("a segment is listed"), |p| {
                p.breaks_at()
            });
        (end > first.first).then_some((first.first, end))
    });
    Ok(ArchiveReport {
        segments,
        reachable,
        problems,
        unlisted,
    })
}

/// The archiver's manifest: the entries listed so far, and the file it appends to.
pub(crate) struct Manifest {
    file: Box<dyn FileHandle>,
    /// Where the next entry goes.
    len: u64,
    /// The starts of the segments listed.
    listed: BTreeSet<Lsn>,
    /// The file's valid bytes (what an archive mirror is sent whole).
    text: Vec<u8>,
}

impl Manifest {
    /// Opens (creating if needed) the manifest of archive directory `dir` for appending:
    /// cuts a torn last entry off, and lists every copy among `copies` (the segment
    /// files in the directory, ascending, made durable by a directory sync before this)
    /// that it does not list yet, reading the copy (see the module docs). Copies that are
    /// not whole segments of `segment_bytes` with a valid header are left unlisted and
    /// returned, for the caller to copy again. A manifest it creates is made durable
    /// (file and directory entry) before anything is appended to it.
    pub(crate) fn open(
        storage: &dyn Storage,
        dir: &Path,
        copies: &[Lsn],
        segment_bytes: u64,
    ) -> Result<(Manifest, Vec<Lsn>)> {
        let path = dir.join(MANIFEST_NAME);
        let parsed = match read_all(storage, &path, false)? {
            Some(bytes) => {
                let p = parse(&bytes, &path)?;
                let len = bytes.len() as u64;
                Some((p, bytes, len))
            }
            None => None,
        };
        let file = storage.open(&path, OpenOptions::CREATE)?;
        let (entries, len, text) = match parsed {
            Some((p, bytes, file_len)) => {
                if p.valid_len < file_len {
                    // A torn last entry: cut it off before appending after it.
                    file.set_len(p.valid_len)?;
                    file.sync_data()?;
                }
                let text = bytes[..p.valid_len as usize].to_vec();
                (p.entries, p.valid_len, text)
            }
            None => {
                // A new manifest: its name is made durable by the directory sync that
                // follows (`Archiver::open`) before any entry counts.
                storage.sync_dir(dir)?;
                (Vec::new(), 0, Vec::new())
            }
        };
        let mut m = Manifest {
            file,
            len,
            listed: entries.iter().map(|e| e.first).collect(),
            text,
        };
        let whole = SEGMENT_HEADER_BYTES + segment_bytes;
        let mut bad = Vec::new();
        for &start in copies {
            if m.listed.contains(&start) {
                continue;
            }
            let name = segment::segment_name(start);
            let path = dir.join(&name);
            let header_ok = {
                let f = storage.open(&path, OpenOptions::EXISTING)?;
                let mut h = vec![0u8; SEGMENT_HEADER_BYTES as usize];
                f.len()? == whole
                    && f.read_exact_at(&mut h, 0).is_ok()
                    && segment::decode_header(&h, start).ok() == Some(segment_bytes)
            };
            if !header_ok {
                bad.push(start);
                continue;
            }
            let (len, crc32c) = checksum(storage, &path, false)?;
            m.append(&ArchivedSegment {
                name,
                first: start,
                end: start.add(segment_bytes),
                len,
                crc32c,
            })?;
        }
        Ok((m, bad))
    }

    /// Appends `entry` and makes it durable — unless its segment is listed already (a
    /// copy made again, after a resume below a copy that was not whole: a segment's
    /// bytes never change, so the entry listed holds).
    pub(crate) fn append(&mut self, entry: &ArchivedSegment) -> Result<()> {
        if self.listed.contains(&entry.first) {
            return Ok(());
        }
        let line = entry.line();
        self.file.write_at(line.as_bytes(), self.len)?;
        self.file.sync_data()?;
        self.len += line.len() as u64;
        self.listed.insert(entry.first);
        self.text.extend_from_slice(line.as_bytes());
        Ok(())
    }

    /// The manifest's bytes as the file holds them (every entry durable).
    pub(crate) fn text(&self) -> &[u8] {
        &self.text
    }

    /// The entries, parsed back from [`Manifest::text`].
    pub(crate) fn entries(&self) -> Result<Vec<ArchivedSegment>> {
        parse_archive_manifest(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(start: u64) -> ArchivedSegment {
        ArchivedSegment {
            name: segment::segment_name(Lsn(start)),
            first: Lsn(start),
            end: Lsn(start + 16384),
            len: 16384 + 4096,
            crc32c: 0x1a2b_3c4d,
        }
    }

    #[test]
    fn an_entry_reads_back_and_any_change_to_it_is_refused() {
        let e = entry(16384);
        let line = e.line();
        assert_eq!(
            line,
            "segment 0000000000004000.wal lsn 16384..32768 bytes 20480 crc32c 1a2b3c4d entry-crc32c 0ec1ff41\n"
        );
        let body = &line.as_bytes()[..line.len() - 1];
        assert_eq!(ArchivedSegment::parse(body), Some(e));
        for i in 0..body.len() {
            let mut b = body.to_vec();
            b[i] ^= 0x01;
            assert_eq!(ArchivedSegment::parse(&b), None, "byte {i} changed");
        }
        // A name that is not the segment's own is refused even with a fresh entry CRC.
        let mut e = entry(16384);
        e.name = segment::segment_name(Lsn(0));
        let line = e.line();
        assert_eq!(
            ArchivedSegment::parse(&line.as_bytes()[..line.len() - 1]),
            None
        );
    }

    #[test]
    fn a_torn_last_entry_is_ignored_and_a_bad_middle_one_is_damage() {
        let p = Path::new("/a/MANIFEST");
        let (a, b) = (entry(0).line(), entry(16384).line());
        let both = format!("{a}{b}");
        let parsed = parse(both.as_bytes(), p).unwrap();
        assert_eq!(parsed.entries, vec![entry(0), entry(16384)]);
        assert_eq!(parsed.valid_len, both.len() as u64);
        // Every cut of the second entry leaves the first.
        for cut in a.len()..both.len() {
            let parsed = parse(&both.as_bytes()[..cut], p).unwrap();
            assert_eq!(parsed.entries, vec![entry(0)], "cut at {cut}");
            assert_eq!(parsed.valid_len, a.len() as u64);
        }
        // The last entry zeroed in part (a torn write keeping some sectors).
        let mut torn = both.clone().into_bytes();
        torn[a.len() + 3..a.len() + 20].fill(0);
        assert_eq!(parse(&torn, p).unwrap().entries, vec![entry(0)]);
        // A bad entry followed by a good one is damage, named.
        let mut damaged = format!("{a}{b}{}", entry(32768).line()).into_bytes();
        damaged[a.len() + 10] ^= 1;
        let e = parse(&damaged, p).err().unwrap().to_string();
        assert!(e.contains("/a/MANIFEST") && e.contains("entry 2"), "{e}");
        assert_eq!(parse(b"", p).unwrap().entries, vec![]);
    }
}
