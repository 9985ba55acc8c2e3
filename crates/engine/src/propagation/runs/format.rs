//! The bytes of a run file: writing one, and reading it back with every structure
//! verified (see the parent module's docs for the layout).

use super::{Damage, RunEntry, ScanError};
use crate::data_file::file_error;
use crate::error::Result;
use crate::ids::PageId;
use sluice_storage::FileHandle;
use sluice_wal::Lsn;
use std::path::{Path, PathBuf};

/// The first bytes of every run file.
pub(super) const MAGIC: &[u8; 8] = b"SLUICERN";
/// The footer's own magic, so a footer is told from the bytes of a block.
pub(super) const FOOTER_MAGIC: &[u8; 8] = b"RUNINDEX";
/// The run format version.
pub(super) const VERSION: u32 = 1;
/// Bytes of the header.
pub(super) const HEADER_LEN: u64 = 64;
/// Bytes of the footer.
pub(super) const FOOTER_LEN: u64 = 32;
/// Bytes of one index entry: first page, offset, length, entry count.
pub(super) const INDEX_ENTRY_LEN: u64 = 24;
/// Bytes before a block's entries: payload length and entry count.
const BLOCK_HEAD: usize = 8;
/// Bytes after a block's entries: its CRC32C.
const BLOCK_TAIL: usize = 4;
/// Bytes before an entry's record: page, LSN, end LSN, record length.
const ENTRY_HEAD: usize = 28;
/// Bytes a run writer buffers before it writes them out.
const WRITE_CHUNK: usize = 1 << 20;

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

/// What the header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) from: Lsn,
    pub(super) to: Lsn,
    pub(super) entries: u64,
    pub(super) blocks: u64,
}

impl Header {
    pub(super) fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut b = [0u8; HEADER_LEN as usize];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[16..24].copy_from_slice(&self.from.0.to_le_bytes());
        b[24..32].copy_from_slice(&self.to.0.to_le_bytes());
        b[32..40].copy_from_slice(&self.entries.to_le_bytes());
        b[40..48].copy_from_slice(&self.blocks.to_le_bytes());
        let crc = crc32c::crc32c(&b[..56]);
        b[56..60].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub(super) fn decode(b: &[u8]) -> std::result::Result<Header, String> {
        if b.len() != HEADER_LEN as usize {
            return Err(format!("header is {} bytes, not {HEADER_LEN}", b.len()));
        }
        if u32_at(b, 56) != crc32c::crc32c(&b[..56]) {
            return Err("header checksum mismatch".into());
        }
        if &b[0..8] != MAGIC {
            return Err("bad magic number in the header".into());
        }
        let version = u32_at(b, 8);
        if version != VERSION {
            return Err(format!(
                "run format version {version} is not supported (this sluice reads {VERSION})"
            ));
        }
        if u32_at(b, 12) != 0 || u64_at(b, 48) != 0 || u32_at(b, 60) != 0 {
            return Err("reserved header bytes are set".into());
        }
        Ok(Header {
            from: Lsn(u64_at(b, 16)),
            to: Lsn(u64_at(b, 24)),
            entries: u64_at(b, 32),
            blocks: u64_at(b, 40),
        })
    }
}

/// What the footer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Footer {
    pub(super) index_offset: u64,
    pub(super) blocks: u64,
}

impl Footer {
    pub(super) fn encode(&self) -> [u8; FOOTER_LEN as usize] {
        let mut b = [0u8; FOOTER_LEN as usize];
        b[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.blocks.to_le_bytes());
        b[16..24].copy_from_slice(FOOTER_MAGIC);
        let crc = crc32c::crc32c(&b[..24]);
        b[24..28].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub(super) fn decode(b: &[u8]) -> std::result::Result<Footer, String> {
        debug_assert_eq!(b.len(), FOOTER_LEN as usize);
        if u32_at(b, 24) != crc32c::crc32c(&b[..24]) {
            return Err("footer checksum mismatch".into());
        }
        if &b[16..24] != FOOTER_MAGIC {
            return Err("bad magic number in the footer".into());
        }
        if u32_at(b, 28) != 0 {
            return Err("reserved footer bytes are set".into());
        }
        Ok(Footer {
            index_offset: u64_at(b, 0),
            blocks: u64_at(b, 8),
        })
    }
}

/// One block as the index describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct IndexEntry {
    /// The page of the block's first entry.
    pub(super) first_page: PageId,
    /// Where the block starts in the file.
    pub(super) offset: u64,
    /// The block's bytes, head and checksum included.
    pub(super) len: u32,
    /// Entries in the block.
    pub(super) count: u32,
}

impl IndexEntry {
    fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.first_page.0.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
    }

    fn decode(b: &[u8]) -> IndexEntry {
        IndexEntry {
            first_page: PageId(u64_at(b, 0)),
            offset: u64_at(b, 8),
            len: u32_at(b, 16),
            count: u32_at(b, 20),
        }
    }
}

/// Writes `entries` (sorted by page, then LSN) as the run `[from, to)` into `file`,
/// which is empty; returns the bytes written. Blocks hold entries up to `block_bytes`
/// of payload (one larger entry gets a block of its own). Does not sync.
pub(super) fn write_run(
    file: &dyn FileHandle,
    path: &Path,
    from: Lsn,
    to: Lsn,
    entries: &[RunEntry],
    block_bytes: usize,
) -> Result<u64> {
    debug_assert!(entries
        .windows(2)
        .all(|w| (w[0].page, w[0].lsn) <= (w[1].page, w[1].lsn)));
    let mut w = ChunkWriter {
        file,
        path,
        buf: Vec::with_capacity(WRITE_CHUNK.min(entries.len() * 64 + 1024)),
        at: HEADER_LEN,
    };
    let mut index = Vec::new();
    let mut block = Vec::with_capacity(block_bytes.min(64 << 10) + ENTRY_HEAD);
    let mut block_first = PageId(0);
    let mut block_count = 0u32;
    for e in entries {
        let len = ENTRY_HEAD + e.record.len();
        if block_count > 0 && block.len() + len > block_bytes {
            index.push(w.block(&block, block_first, block_count)?);
            block.clear();
            block_count = 0;
        }
        if block_count == 0 {
            block_first = e.page;
        }
        block.extend_from_slice(&e.page.0.to_le_bytes());
        block.extend_from_slice(&e.lsn.0.to_le_bytes());
        block.extend_from_slice(&e.end.0.to_le_bytes());
        let record_len = u32::try_from(e.record.len()).expect("a log record is below 4 GiB");
        block.extend_from_slice(&record_len.to_le_bytes());
        block.extend_from_slice(&e.record);
        block_count += 1;
    }
    if block_count > 0 {
        index.push(w.block(&block, block_first, block_count)?);
    }
    let index_offset = w.at;
    let mut ib = Vec::with_capacity(index.len() * INDEX_ENTRY_LEN as usize + 4);
    for ie in &index {
        ie.encode_into(&mut ib);
    }
    let crc = crc32c::crc32c(&ib);
    ib.extend_from_slice(&crc.to_le_bytes());
    w.put(&ib)?;
    let footer = Footer {
        index_offset,
        blocks: index.len() as u64,
    };
    w.put(&footer.encode())?;
    w.flush()?;
    let header = Header {
        from,
        to,
        entries: entries.len() as u64,
        blocks: index.len() as u64,
    };
    // Last: the header's counts are only known now (the file is synced before anyone
    // may read it, so the order of the writes does not matter).
    file.write_at(&header.encode(), 0)
        .map_err(|e| file_error("sorted run", path, e))?;
    Ok(w.at)
}

/// Buffers the bytes of a run being written and writes them in large pieces.
struct ChunkWriter<'a> {
    file: &'a dyn FileHandle,
    path: &'a Path,
    buf: Vec<u8>,
    /// The file offset of the next byte put.
    at: u64,
}

impl ChunkWriter<'_> {
    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(b);
        self.at += b.len() as u64;
        if self.buf.len() >= WRITE_CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let start = self.at - self.buf.len() as u64;
            self.file
                .write_at(&self.buf, start)
                .map_err(|e| file_error("sorted run", self.path, e))?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Puts one block of entries; returns its index entry.
    fn block(&mut self, payload: &[u8], first: PageId, count: u32) -> Result<IndexEntry> {
        let offset = self.at;
        let mut head = [0u8; BLOCK_HEAD];
        let payload_len = u32::try_from(payload.len()).expect("a block is below 4 GiB");
        head[0..4].copy_from_slice(&payload_len.to_le_bytes());
        head[4..8].copy_from_slice(&count.to_le_bytes());
        let mut crc = crc32c::crc32c(&head);
        crc = crc32c::crc32c_append(crc, payload);
        self.put(&head)?;
        self.put(payload)?;
        self.put(&crc.to_le_bytes())?;
        Ok(IndexEntry {
            first_page: first,
            offset,
            len: (BLOCK_HEAD + payload.len() + BLOCK_TAIL) as u32,
            count,
        })
    }
}

/// True if `count` entries, each at least an entry head, fit a block of `len` bytes. An
/// index entry that claims more is damage; trusted, its count would size the vector a
/// block is read into (a count of 4 billion asked for ~200 GiB and aborted the process).
fn counted_entries_fit(len: u32, count: u32) -> bool {
    let payload = (len as usize).saturating_sub(BLOCK_HEAD + BLOCK_TAIL);
    (count as usize).saturating_mul(ENTRY_HEAD) <= payload
}

/// A run file opened for reading, its header, footer and index verified.
pub(super) struct RunReader {
    pub(super) path: PathBuf,
    /// The run's LSN range, from its file name.
    pub(super) from: Lsn,
    pub(super) to: Lsn,
    file: Box<dyn FileHandle>,
    pub(super) index: Vec<IndexEntry>,
}

impl RunReader {
    /// Verifies the header, the footer and the index of the run `[from, to)` at `path`.
    pub(super) fn open(
        path: PathBuf,
        from: Lsn,
        to: Lsn,
        file: Box<dyn FileHandle>,
    ) -> std::result::Result<RunReader, ScanError> {
        let mut r = RunReader {
            path,
            from,
            to,
            file,
            index: Vec::new(),
        };
        let len = r.file.len().map_err(|e| r.io(e))?;
        if len < HEADER_LEN + 4 + FOOTER_LEN {
            return Err(r.damage(
                0,
                format!(
                    "the file is {len} bytes, shorter than an empty run ({})",
                    HEADER_LEN + 4 + FOOTER_LEN
                ),
            ));
        }
        let mut hb = [0u8; HEADER_LEN as usize];
        r.read(&mut hb, 0)?;
        let header = Header::decode(&hb).map_err(|w| r.damage(0, w))?;
        if header.from != from || header.to != to {
            return Err(r.damage(
                0,
                format!(
                    "the header says LSNs [{}, {}), the file name [{from}, {to})",
                    header.from, header.to
                ),
            ));
        }
        let footer_at = len - FOOTER_LEN;
        let mut fb = [0u8; FOOTER_LEN as usize];
        r.read(&mut fb, footer_at)?;
        let footer = Footer::decode(&fb).map_err(|w| r.damage(footer_at, w))?;
        let index_len = footer
            .blocks
            .checked_mul(INDEX_ENTRY_LEN)
            .and_then(|n| n.checked_add(4));
        let fits = index_len
            .and_then(|n| n.checked_add(footer.index_offset))
            .is_some_and(|end| end == footer_at);
        if footer.blocks != header.blocks || footer.index_offset < HEADER_LEN || !fits {
            return Err(r.damage(
                footer_at,
                format!(
                    "the footer's index (at {}, {} blocks) does not fit a {len}-byte file \
                     whose header says {} blocks",
                    footer.index_offset, footer.blocks, header.blocks
                ),
            ));
        }
        let index_at = footer.index_offset;
        let mut ib = vec![0u8; index_len.expect("checked") as usize];
        r.read(&mut ib, index_at)?;
        let body = ib.len() - 4;
        if u32_at(&ib, body) != crc32c::crc32c(&ib[..body]) {
            return Err(r.damage(index_at, "index checksum mismatch".into()));
        }
        let index: Vec<IndexEntry> = ib[..body]
            .chunks_exact(INDEX_ENTRY_LEN as usize)
            .map(IndexEntry::decode)
            .collect();
        // The blocks must tile the space between the header and the index, in page order.
        let mut next = HEADER_LEN;
        let mut entries = 0u64;
        for (i, ie) in index.iter().enumerate() {
            let bad = if ie.offset != next {
                Some(format!("block {i} is at {}, not at {next}", ie.offset))
            } else if (ie.len as usize) < BLOCK_HEAD + BLOCK_TAIL
                || ie.count == 0
                || !counted_entries_fit(ie.len, ie.count)
            {
                Some(format!(
                    "block {i} is {} bytes with {} entries",
                    ie.len, ie.count
                ))
            } else if i > 0 && ie.first_page < index[i - 1].first_page {
                Some(format!("block {i} starts below the block before it"))
            } else {
                None
            };
            if let Some(what) = bad {
                return Err(r.damage(index_at, format!("index: {what}")));
            }
            next += u64::from(ie.len);
            entries += u64::from(ie.count);
        }
        if next != index_at || entries != header.entries {
            return Err(r.damage(
                index_at,
                format!(
                    "index: the blocks end at {next} with {entries} entries, the index is at \
                     {index_at} and the header says {} entries",
                    header.entries
                ),
            ));
        }
        r.index = index;
        Ok(r)
    }

    /// Reads and verifies block `i`; returns its entries in file order.
    pub(super) fn block(&self, i: usize) -> std::result::Result<Vec<RunEntry>, ScanError> {
        let ie = self.index[i];
        let at = ie.offset;
        let mut b = vec![0u8; ie.len as usize];
        self.read(&mut b, at)?;
        let body = b.len() - BLOCK_TAIL;
        let damage = |what: String| self.damage(at, format!("block {i}: {what}"));
        if u32_at(&b, body) != crc32c::crc32c(&b[..body]) {
            return Err(damage("checksum mismatch".into()));
        }
        let payload_len = u32_at(&b, 0) as usize;
        let count = u32_at(&b, 4);
        if payload_len != body - BLOCK_HEAD || count != ie.count {
            return Err(damage(format!(
                "{payload_len} bytes with {count} entries, the index says {} and {}",
                body - BLOCK_HEAD,
                ie.count
            )));
        }
        // `count` equals the index's, which `open` bounded by the block's bytes: it is no
        // longer a number read from the disk alone, so it may size the vector.
        debug_assert!(counted_entries_fit(ie.len, count));
        let mut out = Vec::with_capacity(count as usize);
        let mut p = BLOCK_HEAD;
        while p < body {
            if body - p < ENTRY_HEAD {
                return Err(damage(format!("a truncated entry at byte {p}")));
            }
            let page = PageId(u64_at(&b, p));
            let lsn = Lsn(u64_at(&b, p + 8));
            let end = Lsn(u64_at(&b, p + 16));
            let rlen = u32_at(&b, p + 24) as usize;
            p += ENTRY_HEAD;
            if rlen > body - p {
                return Err(damage(format!(
                    "an entry of {rlen} bytes runs past the block"
                )));
            }
            if lsn < self.from || lsn >= end || end > self.to {
                return Err(damage(format!(
                    "an entry at LSNs [{lsn}, {end}) outside the run [{}, {})",
                    self.from, self.to
                )));
            }
            if let Some(prev) = out.last().map(|e: &RunEntry| (e.page, e.lsn)) {
                if (page, lsn) < prev {
                    return Err(damage(format!("entries out of order at page {page}")));
                }
            } else if page != ie.first_page {
                return Err(damage(format!(
                    "the first entry is of page {page}, the index says {}",
                    ie.first_page
                )));
            }
            out.push(RunEntry {
                page,
                lsn,
                end,
                record: b[p..p + rlen].to_vec(),
            });
            p += rlen;
        }
        if out.len() != count as usize {
            return Err(damage(format!(
                "{} entries, the head says {count}",
                out.len()
            )));
        }
        Ok(out)
    }

    fn read(&self, buf: &mut [u8], at: u64) -> std::result::Result<(), ScanError> {
        self.file.read_exact_at(buf, at).map_err(|e| self.io(e))
    }

    fn io(&self, e: std::io::Error) -> ScanError {
        ScanError::Other(file_error("sorted run", &self.path, e))
    }

    pub(super) fn damage(&self, offset: u64, what: String) -> ScanError {
        ScanError::Damaged(Damage {
            run: self.path.clone(),
            offset,
            what,
            from: self.from,
            to: self.to,
        })
    }
}

/// Reads a whole run held in memory as a scan reads it: the header, footer and index
/// verified, then every block. `from` and `to` stand for the LSN range of its file name.
/// For the fuzz target (`crate::fuzzing`) and the property tests; never panics.
pub(crate) fn decode_run(
    bytes: &[u8],
    from: Lsn,
    to: Lsn,
) -> std::result::Result<Vec<RunEntry>, ScanError> {
    let file = Box::new(super::mem_file::MemFile::new(bytes.to_vec()));
    let r = RunReader::open(PathBuf::from("run-in-memory"), from, to, file)?;
    let mut out = Vec::new();
    for i in 0..r.index.len() {
        out.extend(r.block(i)?);
    }
    Ok(out)
}

/// The bytes of the run `[from, to)` holding `entries` (sorted by page, then LSN).
#[cfg(test)]
pub(crate) fn encode_run(from: Lsn, to: Lsn, entries: &[RunEntry], block_bytes: usize) -> Vec<u8> {
    let file = super::mem_file::MemFile::new(Vec::new());
    write_run(
        &file,
        Path::new("run-in-memory"),
        from,
        to,
        entries,
        block_bytes,
    )
    .expect("an in-memory write cannot fail");
    file.into_bytes()
}

/// Rewrites every checksum of a (possibly damaged) run that can be located: the
/// header's, the footer's, the index's where the footer points at it, and each block's
/// the index places inside the file. A mutated run resealed this way gets past the
/// checksums to the structural checks behind them (what a fuzzer rarely reaches by
/// chance). Never panics.
pub(crate) fn reseal_run(b: &mut [u8]) {
    let len = b.len();
    if len >= HEADER_LEN as usize {
        let crc = crc32c::crc32c(&b[..56]);
        b[56..60].copy_from_slice(&crc.to_le_bytes());
    }
    if len < FOOTER_LEN as usize {
        return;
    }
    let footer_at = len - FOOTER_LEN as usize;
    let crc = crc32c::crc32c(&b[footer_at..footer_at + 24]);
    b[footer_at + 24..footer_at + 28].copy_from_slice(&crc.to_le_bytes());
    let index_at = u64_at(b, footer_at);
    let Ok(index_at) = usize::try_from(index_at) else {
        return;
    };
    if index_at > footer_at || footer_at - index_at < 4 {
        return;
    }
    let body = footer_at - 4;
    // Blocks first: the index is resealed after, over its final bytes.
    for e in b[index_at..body]
        .chunks_exact(INDEX_ENTRY_LEN as usize)
        .map(IndexEntry::decode)
        .collect::<Vec<_>>()
    {
        let (Ok(at), blen) = (usize::try_from(e.offset), e.len as usize) else {
            continue;
        };
        if blen < BLOCK_HEAD + BLOCK_TAIL || at.checked_add(blen).is_none_or(|end| end > len) {
            continue;
        }
        let tail = at + blen - BLOCK_TAIL;
        let crc = crc32c::crc32c(&b[at..tail]);
        b[tail..tail + 4].copy_from_slice(&crc.to_le_bytes());
    }
    let crc = crc32c::crc32c(&b[index_at..body]);
    b[body..body + 4].copy_from_slice(&crc.to_le_bytes());
}
