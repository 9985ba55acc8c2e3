//! Entry points for the fuzz targets (the `fuzz/` crate at the repository root): one
//! function per decoder of on-disk bytes, each running the decoder on arbitrary input and
//! checking what a decoder promises. They panic only if a decoder misbehaves (panics,
//! or accepts bytes it then cannot hand on safely), which is what a fuzzer reports.
//!
//! Not part of the API: hidden, unstable, and present only because the decoders are
//! `pub(crate)` and a fuzz target is another crate. The property tests inside the crate
//! (`*/tests_prop.rs`) call the same functions.

use crate::control::Control;
use crate::ids::PageId;
use crate::log_record::{Change, PageOp, Record};
use crate::page::{self, Meta, Node, NodeMut, PageType};
use parking_lot::Mutex;
use sluice_storage::FileHandle;
use sluice_wal::Lsn;
use std::io;

/// A log record payload (`Record::decode`, the transaction records of both formats, and
/// the delta of an update). A record that decodes has deltas that apply to exactly the
/// values they describe.
pub fn log_record(data: &[u8]) {
    let Ok(r) = Record::decode(data) else {
        return;
    };
    let delta = match &r {
        Record::Update {
            change: Change::Patch { delta },
            ..
        } => Some(delta),
        Record::Clr {
            op: PageOp::Patch { delta, .. },
            ..
        } => Some(delta),
        _ => None,
    };
    if let Some(d) = delta {
        // Applied to arbitrary bytes: an error or a value, never a panic.
        let _ = d.apply(data);
        // Applied to a value it describes (sized by fields the decoder bounded).
        let mut value = vec![0u8; d.at];
        value.extend_from_slice(&d.old);
        value.resize(d.old_len(), 0);
        let new = d
            .apply(&value)
            .expect("a delta applies to the value it describes");
        assert_eq!(new.len(), d.new_len());
        assert_eq!(d.reversed().apply(&new), Ok(value));
    }
}

/// A page as read from the data file: the checksum, then `validate` against the id the
/// page itself claims, and, if it passes, every accessor the engine uses on it.
pub fn page(data: &[u8]) {
    let _ = page::checksum_ok(data);
    if data.len() < page::HEADER_LEN {
        return;
    }
    let id = PageId(u64::from_le_bytes(data[8..16].try_into().expect("8 bytes")));
    if let Ok(kind) = page::validate(data, id) {
        read_valid_page(data, kind);
    }
}

/// A compact page image from an `Images` record: the first byte picks the page size
/// (1 KiB to 32 KiB), the rest is the image. An image that expands and validates is read
/// as a page.
pub fn page_image(data: &[u8]) {
    let Some((&b, image)) = data.split_first() else {
        return;
    };
    let _ = page::image_page_size(image);
    let page_size = page::MIN_PAGE_SIZE << (b % 6);
    if let Ok(p) = page::expand(image, page_size) {
        assert_eq!(p.len(), page_size);
        page(&p);
    }
}

/// The control file. One that decodes re-encodes to a file that decodes to it. A 65th
/// byte with its low bit set asks for the first 64 bytes' checksum to be rewritten first,
/// so that inputs reach the checks behind it.
pub fn control(data: &[u8]) {
    let mut file = data.to_vec();
    if let Some((&flag, rest)) = data.split_last() {
        if rest.len() == 64 {
            file.truncate(64);
            if flag & 1 != 0 {
                let crc = crc32c::crc32c(&file[..56]);
                file[56..60].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    if let Ok(c) = Control::decode(&file) {
        assert_eq!(Control::decode(&c.encode()), Ok(c));
    }
}

/// A run file of the log archive, read block by block as a scan reads it. Its LSN range
/// (which a scan takes from the file name) is taken from the header's own fields, so
/// inputs can get past that check.
pub fn archive_run(data: &[u8]) {
    let field = |o: usize| {
        data.get(o..o + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    let (from, to) = (Lsn(field(16)), Lsn(field(24)));
    if let Ok(entries) = crate::propagation::archive::decode_run(data, from, to) {
        for e in &entries {
            assert!(from <= e.lsn && e.lsn < e.end && e.end <= to, "{e:?}");
        }
    }
}

/// [`archive_run`] after rewriting every checksum the run's structure locates, so that
/// mutated inputs reach the checks behind them.
pub fn archive_run_resealed(data: &[u8]) {
    let mut b = data.to_vec();
    crate::propagation::archive::reseal_run(&mut b);
    archive_run(&b);
}

/// Reads `p`, which passed `validate` as `kind`, through every accessor the engine uses
/// on such a page; panics if any of them does, or if the page contradicts itself in a way
/// `validate` promised it does not.
pub(crate) fn read_valid_page(p: &[u8], kind: PageType) {
    let _ = page::page_lsn(p);
    let _ = page::image_lsn(p);
    match kind {
        PageType::Meta => {
            assert!(Meta::page_count(p) >= 2);
        }
        PageType::Leaf | PageType::Internal => {
            let n = Node::new(p);
            assert_eq!(n.is_leaf(), kind == PageType::Leaf);
            let _ = (n.level(), n.link(), n.is_empty(), n.free_space());
            let (hole_start, hole_end) = n.hole();
            assert!(hole_start <= hole_end && hole_end <= p.len());
            for i in 0..n.len() {
                let key = n.key(i);
                let cell = n.cell(i);
                assert!(cell.len() >= key.len());
                if n.is_leaf() {
                    let v = n.cell_value(i);
                    assert_eq!(v.bytes, n.value(i));
                } else {
                    let _ = n.child(i);
                    let _ = n.child_for(key);
                }
                // Keys are strictly increasing, so the search finds each at its slot.
                assert_eq!(n.search(key), Ok(i));
            }
            let _ = n.search(b"");
            let _ = n.search(&[0xFF; 8]);
            if !n.is_leaf() {
                let _ = n.child_for(b"");
            }
            // An insert compacts a page whose gap is too small: a validated page must
            // survive that and stay valid.
            let mut copy = p.to_vec();
            NodeMut::new(&mut copy).compact();
            let id = PageId(u64::from_le_bytes(p[8..16].try_into().expect("8 bytes")));
            assert_eq!(page::validate(&copy, id), Ok(kind));
        }
        PageType::Unformatted => unreachable!("validate refuses unformatted pages"),
    }
}

/// A file held in memory, for reading a run without a file system.
pub(crate) struct MemFile(Mutex<Vec<u8>>);

impl MemFile {
    pub(crate) fn new(bytes: Vec<u8>) -> MemFile {
        MemFile(Mutex::new(bytes))
    }
    #[cfg(test)]
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.0.into_inner()
    }
}

impl FileHandle for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let b = self.0.lock();
        let Some(src) = usize::try_from(offset).ok().and_then(|o| b.get(o..)) else {
            return Ok(0);
        };
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        Ok(n)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut b = self.0.lock();
        let at = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        let end = at + buf.len();
        if b.len() < end {
            b.resize(end, 0);
        }
        b[at..end].copy_from_slice(buf);
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        self.0.lock().resize(len, 0);
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.lock().len() as u64)
    }
    fn drop_cache(&self) -> io::Result<()> {
        Ok(())
    }
}

/// Damaging changes to a valid encoding, for the property tests: flipped bits,
/// truncation, extension, a 4- or 8-byte field (a length, count or offset) overwritten
/// with an extreme value, and a varint of an extreme value spliced in.
#[cfg(test)]
pub(crate) mod mutations {
    use proptest::prelude::*;

    /// One damaging change.
    #[derive(Debug, Clone)]
    pub(crate) enum Mutation {
        Flip { at: usize, bit: u8 },
        Truncate { keep: usize },
        Extend { bytes: Vec<u8> },
        Field { at: usize, wide: bool, value: u64 },
        Varint { at: usize, value: u64 },
    }

    fn extreme() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(u32::MAX as u64),
            Just(u64::MAX),
            Just(1 << 31),
            Just(1 << 20),
            Just((1 << 20) + 1),
            any::<u64>(),
            0u64..300,
        ]
    }

    pub(crate) fn mutation() -> impl Strategy<Value = Mutation> {
        prop_oneof![
            (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
            any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
            proptest::collection::vec(any::<u8>(), 1..40)
                .prop_map(|bytes| Mutation::Extend { bytes }),
            (any::<usize>(), any::<bool>(), extreme())
                .prop_map(|(at, wide, value)| Mutation::Field { at, wide, value }),
            (any::<usize>(), extreme()).prop_map(|(at, value)| Mutation::Varint { at, value }),
        ]
    }

    /// Up to `n` mutations.
    pub(crate) fn mutations(n: usize) -> impl Strategy<Value = Vec<Mutation>> {
        proptest::collection::vec(mutation(), 1..=n)
    }

    pub(crate) fn apply(b: &mut Vec<u8>, ms: &[Mutation]) {
        for m in ms {
            apply_one(b, m);
        }
    }

    fn apply_one(b: &mut Vec<u8>, m: &Mutation) {
        match m {
            Mutation::Extend { bytes } => b.extend_from_slice(bytes),
            _ if b.is_empty() => {}
            Mutation::Flip { at, bit } => {
                let at = at % b.len();
                b[at] ^= 1 << bit;
            }
            Mutation::Truncate { keep } => b.truncate(keep % b.len()),
            Mutation::Field { at, wide, value } => {
                let w = if *wide { 8 } else { 4 };
                if b.len() >= w {
                    let at = at % (b.len() - w + 1);
                    b[at..at + w].copy_from_slice(&value.to_le_bytes()[..w]);
                }
            }
            Mutation::Varint { at, value } => {
                let mut v = *value;
                let mut enc = Vec::new();
                while v >= 0x80 {
                    enc.push(v as u8 | 0x80);
                    v >>= 7;
                }
                enc.push(v as u8);
                let at = at % (b.len() + 1);
                b.splice(at..at, enc);
            }
        }
    }
}

/// Writes seed inputs for the fuzz targets (valid encodings of each kind) under the
/// directory `SLUICE_FUZZ_SEEDS` names, one folder per target: `cargo test -p sluice --lib
/// write_fuzz_seeds -- --ignored`, then `cargo fuzz run <target> fuzz/seeds/<target>`.
#[cfg(test)]
mod seeds {
    use super::*;
    use crate::log_record::tests_prop::record;
    use crate::propagation::archive::{encode_run, RunEntry};
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;
    use std::path::Path;

    fn put(dir: &Path, target: &str, name: String, bytes: &[u8]) {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    }

    #[test]
    #[ignore = "writes fuzz seeds when asked to"]
    fn write_fuzz_seeds() {
        let Some(dir) = std::env::var_os("SLUICE_FUZZ_SEEDS") else {
            return;
        };
        let dir = Path::new(&dir);
        let mut runner = TestRunner::deterministic();
        let recs: Vec<Vec<u8>> = (0..40)
            .map(|_| record().new_tree(&mut runner).unwrap().current().encode())
            .collect();
        for (i, r) in recs.iter().enumerate() {
            put(dir, "log_record", format!("rec{i}"), r);
        }
        for (i, p) in crate::page::tests_prop::seed_pages().iter().enumerate() {
            put(dir, "page", format!("page{i}"), p);
            let mut img = vec![(p.len() / page::MIN_PAGE_SIZE).trailing_zeros() as u8];
            img.extend_from_slice(&page::compress(p));
            put(dir, "page_image", format!("img{i}"), &img);
        }
        let mut c = Control::created(4096).encode().to_vec();
        put(dir, "control", "created".into(), &c);
        c.push(1);
        put(dir, "control", "created_resealed".into(), &c);
        for (i, n) in [0usize, 1, 5, 30].into_iter().enumerate() {
            let entries: Vec<RunEntry> = (0..n)
                .map(|k| RunEntry {
                    page: PageId(k as u64 / 3),
                    lsn: Lsn(4096 + 8 * k as u64),
                    end: Lsn(4104 + 8 * k as u64),
                    record: recs[k % recs.len()].clone(),
                })
                .collect();
            let run = encode_run(Lsn(4096), Lsn(1 << 20), &entries, 200);
            put(dir, "archive_run", format!("run{i}"), &run);
        }
    }
}
