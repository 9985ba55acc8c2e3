//! The storage manager's log records: what they say and their byte encoding.
//!
//! The log itself treats payloads as opaque; this module gives them meaning. Page
//! changes are physiological: *redo* names a page and an operation on a key inside it
//! (so redo needs no tree traversal), *undo* names the tree and the key (so undo works
//! wherever the key lives by then, after any splits). Structure changes and full page
//! images are redo-only. Decoding never panics: any byte string decodes to a record or
//! to an error.

use crate::ids::{PageId, TxnId};
use crate::options::Limits;
use crate::page::{CellValue, StoredValue, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use sluice_wal::Lsn;

/// Bytes of one page in an `Images` record: page id, length, and a compact image of at
/// most the whole page plus its 8-byte hole header.
const fn image_entry_bytes(page_size: usize) -> usize {
    8 + 4 + 8 + page_size
}

/// The most pages one `Images` record carries: a split logs the node, its new sibling,
/// the parent and the meta page (a root split: the root, two new children, the meta
/// page); creating a database or a table logs two, a torn-page image one.
pub(crate) const MAX_IMAGES_PER_RECORD: usize = 4;

/// The largest record about pages the engine writes with pages of `page_size` bytes:
/// the larger of a split's `Images` record and an `Update` whose key, old and new value
/// are as large as [`Limits`] allow (a `Clr` carries one value, so it is smaller).
pub(crate) fn max_page_record_bytes(page_size: usize) -> usize {
    let images = 1 + 4 + MAX_IMAGES_PER_RECORD * image_entry_bytes(page_size);
    // key + old and key + new are each at most max_entry, so all three at most twice it.
    let entry = Limits::for_page_size(page_size).max_entry;
    let update = 1 + 8 + 9 + 8 + 8 + 4 + 1 + 4 + 4 + 2 * entry;
    let clr = 1 + 8 + 9 + 8 + 1 + 4 + 4 + entry + 9;
    images.max(update).max(clr)
}

/// Bytes of an `EndCheckpoint` record with `active` transactions and `dirty` pages.
pub(crate) const fn checkpoint_record_bytes(active: usize, dirty: usize) -> usize {
    1 + 8 + 8 + 4 + 24 * active + 4 + 16 * dirty
}

/// The largest record the engine writes with pages of `page_size` bytes and a pool of
/// `pool_pages` frames (so at most that many dirty pages in a checkpoint record),
/// counting no active transactions: each adds 24 bytes to a checkpoint record, and a
/// log that holds this has room for thousands.
pub(crate) fn max_record_bytes(page_size: usize, pool_pages: usize) -> usize {
    max_page_record_bytes(page_size).max(checkpoint_record_bytes(0, pool_pages))
}

/// For the encoder's self-check: the smallest page size whose records could carry
/// `key` with values of these lengths (the bound grows with the page size, so a record
/// must fit the bound of the smallest page that admits it).
fn smallest_page_for(key: usize, values: &[usize]) -> usize {
    let mut size = MIN_PAGE_SIZE;
    while size < MAX_PAGE_SIZE {
        let l = Limits::for_page_size(size);
        if key <= l.max_key && values.iter().all(|v| key + v <= l.max_entry) {
            break;
        }
        size *= 2;
    }
    size
}

/// For the encoder's self-check: the page size an image was taken from (its body plus
/// its hole), or 0 if the image is malformed (tests encode such records on purpose).
fn image_page_size(img: &[u8]) -> usize {
    match img.get(4..8) {
        Some(h) if img.len() >= 8 => {
            let hole = u32::from_le_bytes(h.try_into().expect("4 bytes")) as usize;
            img.len() - 8 + hole
        }
        _ => 0,
    }
}

/// A transaction's change to one key, with what undo needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The key was absent and now maps to `value`.
    Insert {
        /// The new value.
        value: StoredValue,
    },
    /// The key mapped to `old` and now maps to `new`.
    Update {
        /// The value before.
        old: StoredValue,
        /// The value after.
        new: StoredValue,
    },
    /// The key mapped to `old` and is now absent.
    Delete {
        /// The value before.
        old: StoredValue,
    },
}

impl Change {
    /// The page operation that redoes this change.
    pub fn redo(&self, key: &[u8]) -> PageOp {
        match self {
            Change::Insert { value } => PageOp::Insert {
                key: key.to_vec(),
                value: value.clone(),
            },
            Change::Update { new, .. } => PageOp::Set {
                key: key.to_vec(),
                value: new.clone(),
            },
            Change::Delete { .. } => PageOp::Remove { key: key.to_vec() },
        }
    }
    /// What the key must map to after undo (`None`: absent).
    pub fn before(&self) -> Option<CellValue<'_>> {
        match self {
            Change::Insert { .. } => None,
            Change::Update { old, .. } | Change::Delete { old } => Some(old.as_cell()),
        }
    }
}

/// An operation on the cells of one leaf page (exact: redo fails loudly if the page does
/// not agree, because that means the log and the page disagree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageOp {
    /// Add a cell for an absent key.
    Insert {
        /// The key.
        key: Vec<u8>,
        /// Its value.
        value: StoredValue,
    },
    /// Replace the value of a present key.
    Set {
        /// The key.
        key: Vec<u8>,
        /// Its new value.
        value: StoredValue,
    },
    /// Remove the cell of a present key.
    Remove {
        /// The key.
        key: Vec<u8>,
    },
}

/// A transaction active at a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveTxn {
    /// Its number.
    pub txn: TxnId,
    /// Its first record (analysis must scan from the oldest of these to see every
    /// record a loser wrote).
    pub first: Lsn,
    /// Its last record so far.
    pub last: Lsn,
}

/// The tables a checkpoint saves for analysis.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckpointData {
    /// The LSN of the matching begin-checkpoint record.
    pub begin: Lsn,
    /// Transaction numbers below this were handed out before the checkpoint.
    pub next_txn: u64,
    /// Transactions with records and no outcome yet.
    pub active: Vec<ActiveTxn>,
    /// Dirty pages and their recovery LSN (the first record that dirtied them).
    pub dirty: Vec<(PageId, Lsn)>,
}

/// One log record of the storage manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A transaction changed `key` of tree `tree` on leaf `page`.
    Update {
        /// The transaction.
        txn: TxnId,
        /// Its previous record (`None` for its first).
        prev: Option<Lsn>,
        /// The leaf changed (redo target).
        page: PageId,
        /// The tree's root page (undo target).
        tree: PageId,
        /// The key.
        key: Vec<u8>,
        /// What happened to it.
        change: Change,
    },
    /// A compensation record: the redo of one undo step. Never undone itself; undo
    /// continues at `undo_next`.
    Clr {
        /// The transaction rolled back.
        txn: TxnId,
        /// Its previous record.
        prev: Option<Lsn>,
        /// The leaf changed.
        page: PageId,
        /// The change.
        op: PageOp,
        /// The next record of the transaction to undo (`None`: rollback is complete).
        undo_next: Option<Lsn>,
    },
    /// The transaction committed (durable once this record is).
    Commit {
        /// The transaction.
        txn: TxnId,
        /// Its previous record.
        prev: Option<Lsn>,
    },
    /// The transaction's rollback is complete.
    End {
        /// The transaction.
        txn: TxnId,
        /// Its previous record.
        prev: Option<Lsn>,
    },
    /// Full page images (compact form, see [`crate::page::compress`]): the first change
    /// to a page after a checkpoint (torn-page protection), new pages, and every page a
    /// split touches, all in one record so a split is atomic. Redo-only.
    Images {
        /// Pages and their images.
        pages: Vec<(PageId, Vec<u8>)>,
    },
    /// A checkpoint started here: its redo point.
    BeginCheckpoint,
    /// A checkpoint's tables.
    EndCheckpoint(CheckpointData),
}

impl Record {
    /// The transaction the record belongs to, if any.
    pub fn txn(&self) -> Option<TxnId> {
        match self {
            Record::Update { txn, .. }
            | Record::Clr { txn, .. }
            | Record::Commit { txn, .. }
            | Record::End { txn, .. } => Some(*txn),
            _ => None,
        }
    }
}

const TAG_UPDATE: u8 = 1;
const TAG_CLR: u8 = 2;
const TAG_COMMIT: u8 = 3;
const TAG_END: u8 = 4;
const TAG_IMAGES: u8 = 5;
const TAG_BEGIN_CKPT: u8 = 6;
const TAG_END_CKPT: u8 = 7;

/// The largest byte string a record field may carry (a page image is at most a page).
const MAX_FIELD: usize = 1 << 20;
/// In a value's length field: the value is a large value's descriptor.
const EXTERNAL_FLAG: u32 = 1 << 31;

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        assert!(b.len() <= MAX_FIELD, "record field of {} bytes", b.len());
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    /// A leaf value: its length with [`EXTERNAL_FLAG`] set for a descriptor, its bytes.
    fn value(&mut self, v: &StoredValue) {
        assert!(
            v.bytes.len() <= MAX_FIELD,
            "record field of {} bytes",
            v.bytes.len()
        );
        let flag = if v.external { EXTERNAL_FLAG } else { 0 };
        self.u32(v.bytes.len() as u32 | flag);
        self.0.extend_from_slice(&v.bytes);
    }
    fn opt_lsn(&mut self, l: Option<Lsn>) {
        match l {
            None => self.u8(0),
            Some(l) => {
                self.u8(1);
                self.u64(l.0);
            }
        }
    }
    fn op(&mut self, op: &PageOp) {
        match op {
            PageOp::Insert { key, value } => {
                self.u8(1);
                self.bytes(key);
                self.value(value);
            }
            PageOp::Set { key, value } => {
                self.u8(2);
                self.bytes(key);
                self.value(value);
            }
            PageOp::Remove { key } => {
                self.u8(3);
                self.bytes(key);
            }
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err(format!(
                "record truncated: wanted {n} bytes, {} left",
                self.0.len()
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.u32()? as usize;
        if n > MAX_FIELD {
            return Err(format!("record field of {n} bytes"));
        }
        Ok(self.take(n)?.to_vec())
    }
    fn value(&mut self) -> Result<StoredValue, String> {
        let field = self.u32()?;
        let n = (field & !EXTERNAL_FLAG) as usize;
        if n > MAX_FIELD {
            return Err(format!("record field of {n} bytes"));
        }
        Ok(StoredValue {
            bytes: self.take(n)?.to_vec(),
            external: field & EXTERNAL_FLAG != 0,
        })
    }
    fn opt_lsn(&mut self) -> Result<Option<Lsn>, String> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(Lsn(self.u64()?))),
            f => Err(format!("bad LSN flag {f}")),
        }
    }
    /// A count of items of at least `min_item` bytes each, checked against what is left.
    fn count(&mut self, min_item: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item) > self.0.len() {
            return Err(format!("count {n} exceeds the record"));
        }
        Ok(n)
    }
    fn op(&mut self) -> Result<PageOp, String> {
        Ok(match self.u8()? {
            1 => PageOp::Insert {
                key: self.bytes()?,
                value: self.value()?,
            },
            2 => PageOp::Set {
                key: self.bytes()?,
                value: self.value()?,
            },
            3 => PageOp::Remove { key: self.bytes()? },
            t => return Err(format!("bad page op {t}")),
        })
    }
}

impl Record {
    /// The bytes of the record, as handed to the log.
    pub fn encode(&self) -> Vec<u8> {
        // An update of a 100-byte row (TPC-B's) is ~250 bytes: starting at 64 cost two
        // reallocations per record, ~3 % of the agents' CPU (issue 10 profile).
        let mut w = Writer(Vec::with_capacity(256));
        match self {
            Record::Update {
                txn,
                prev,
                page,
                tree,
                key,
                change,
            } => {
                w.u8(TAG_UPDATE);
                w.u64(txn.0);
                w.opt_lsn(*prev);
                w.u64(page.0);
                w.u64(tree.0);
                w.bytes(key);
                match change {
                    Change::Insert { value } => {
                        w.u8(1);
                        w.value(value);
                    }
                    Change::Update { old, new } => {
                        w.u8(2);
                        w.value(old);
                        w.value(new);
                    }
                    Change::Delete { old } => {
                        w.u8(3);
                        w.value(old);
                    }
                }
            }
            Record::Clr {
                txn,
                prev,
                page,
                op,
                undo_next,
            } => {
                w.u8(TAG_CLR);
                w.u64(txn.0);
                w.opt_lsn(*prev);
                w.u64(page.0);
                w.op(op);
                w.opt_lsn(*undo_next);
            }
            Record::Commit { txn, prev } => {
                w.u8(TAG_COMMIT);
                w.u64(txn.0);
                w.opt_lsn(*prev);
            }
            Record::End { txn, prev } => {
                w.u8(TAG_END);
                w.u64(txn.0);
                w.opt_lsn(*prev);
            }
            Record::Images { pages } => {
                w.u8(TAG_IMAGES);
                w.u32(pages.len() as u32);
                for (id, img) in pages {
                    w.u64(id.0);
                    w.bytes(img);
                }
            }
            Record::BeginCheckpoint => w.u8(TAG_BEGIN_CKPT),
            Record::EndCheckpoint(c) => {
                debug_assert!(c.active.len() <= u32::MAX as usize);
                w.u8(TAG_END_CKPT);
                w.u64(c.begin.0);
                w.u64(c.next_txn);
                w.u32(c.active.len() as u32);
                for a in &c.active {
                    w.u64(a.txn.0);
                    w.u64(a.first.0);
                    w.u64(a.last.0);
                }
                w.u32(c.dirty.len() as u32);
                for (p, l) in &c.dirty {
                    w.u64(p.0);
                    w.u64(l.0);
                }
            }
        }
        debug_assert!(
            w.0.len() <= self.bound(),
            "{} bytes encoded, beyond the bound of {} that options are checked against: {self:?}",
            w.0.len(),
            self.bound()
        );
        w.0
    }

    /// The bound [`max_record_bytes`] promises for this record, given what it carries
    /// (the self-check of that promise in [`Record::encode`]).
    fn bound(&self) -> usize {
        match self {
            Record::Update { key, change, .. } => {
                let values = match change {
                    Change::Insert { value } => vec![value.bytes.len()],
                    Change::Update { old, new } => vec![old.bytes.len(), new.bytes.len()],
                    Change::Delete { old } => vec![old.bytes.len()],
                };
                max_page_record_bytes(smallest_page_for(key.len(), &values))
            }
            Record::Clr { op, .. } => {
                let (key, values) = match op {
                    PageOp::Insert { key, value } | PageOp::Set { key, value } => {
                        (key.len(), vec![value.bytes.len()])
                    }
                    PageOp::Remove { key } => (key.len(), vec![]),
                };
                max_page_record_bytes(smallest_page_for(key, &values))
            }
            Record::Images { pages } => {
                if pages.len() > MAX_IMAGES_PER_RECORD {
                    return 0;
                }
                let size = pages.iter().map(|(_, i)| image_page_size(i)).max();
                max_page_record_bytes(size.unwrap_or(0).max(MIN_PAGE_SIZE))
            }
            Record::EndCheckpoint(c) => checkpoint_record_bytes(c.active.len(), c.dirty.len()),
            Record::Commit { .. } | Record::End { .. } | Record::BeginCheckpoint => {
                max_page_record_bytes(MIN_PAGE_SIZE)
            }
        }
    }

    /// Parses a record. Never panics; trailing bytes are an error.
    pub fn decode(bytes: &[u8]) -> Result<Record, String> {
        let mut r = Reader(bytes);
        let rec = match r.u8()? {
            TAG_UPDATE => {
                let txn = TxnId(r.u64()?);
                let prev = r.opt_lsn()?;
                let page = PageId(r.u64()?);
                let tree = PageId(r.u64()?);
                let key = r.bytes()?;
                let change = match r.u8()? {
                    1 => Change::Insert { value: r.value()? },
                    2 => Change::Update {
                        old: r.value()?,
                        new: r.value()?,
                    },
                    3 => Change::Delete { old: r.value()? },
                    t => return Err(format!("bad change kind {t}")),
                };
                Record::Update {
                    txn,
                    prev,
                    page,
                    tree,
                    key,
                    change,
                }
            }
            TAG_CLR => Record::Clr {
                txn: TxnId(r.u64()?),
                prev: r.opt_lsn()?,
                page: PageId(r.u64()?),
                op: r.op()?,
                undo_next: r.opt_lsn()?,
            },
            TAG_COMMIT => Record::Commit {
                txn: TxnId(r.u64()?),
                prev: r.opt_lsn()?,
            },
            TAG_END => Record::End {
                txn: TxnId(r.u64()?),
                prev: r.opt_lsn()?,
            },
            TAG_IMAGES => {
                let n = r.count(12)?;
                let mut pages = Vec::with_capacity(n);
                for _ in 0..n {
                    pages.push((PageId(r.u64()?), r.bytes()?));
                }
                Record::Images { pages }
            }
            TAG_BEGIN_CKPT => Record::BeginCheckpoint,
            TAG_END_CKPT => {
                let begin = Lsn(r.u64()?);
                let next_txn = r.u64()?;
                let n = r.count(24)?;
                let mut active = Vec::with_capacity(n);
                for _ in 0..n {
                    active.push(ActiveTxn {
                        txn: TxnId(r.u64()?),
                        first: Lsn(r.u64()?),
                        last: Lsn(r.u64()?),
                    });
                }
                let n = r.count(16)?;
                let mut dirty = Vec::with_capacity(n);
                for _ in 0..n {
                    dirty.push((PageId(r.u64()?), Lsn(r.u64()?)));
                }
                Record::EndCheckpoint(CheckpointData {
                    begin,
                    next_txn,
                    active,
                    dirty,
                })
            }
            t => return Err(format!("unknown record type {t}")),
        };
        if !r.0.is_empty() {
            return Err(format!("{} trailing bytes after a record", r.0.len()));
        }
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn samples() -> Vec<Record> {
        vec![
            Record::Update {
                txn: TxnId(9),
                prev: None,
                page: PageId(4),
                tree: PageId(2),
                key: b"k".to_vec(),
                change: Change::Update {
                    old: StoredValue::inline(b"a".to_vec()),
                    new: StoredValue {
                        bytes: b"bb".to_vec(),
                        external: true,
                    },
                },
            },
            Record::Clr {
                txn: TxnId(9),
                prev: Some(Lsn(0)),
                page: PageId(4),
                op: PageOp::Remove { key: vec![] },
                undo_next: Some(Lsn(16)),
            },
            Record::Commit {
                txn: TxnId(1),
                prev: Some(Lsn(8)),
            },
            Record::End {
                txn: TxnId(1),
                prev: None,
            },
            Record::Images {
                pages: vec![(PageId(3), vec![1, 2, 3]), (PageId(0), vec![])],
            },
            Record::BeginCheckpoint,
            Record::EndCheckpoint(CheckpointData {
                begin: Lsn(64),
                next_txn: 12,
                active: vec![ActiveTxn {
                    txn: TxnId(3),
                    first: Lsn(8),
                    last: Lsn(40),
                }],
                dirty: vec![(PageId(5), Lsn(24))],
            }),
        ]
    }

    #[test]
    fn every_record_kind_round_trips() {
        for r in samples() {
            assert_eq!(Record::decode(&r.encode()), Ok(r.clone()));
        }
    }

    #[test]
    fn truncated_records_are_errors() {
        for r in samples() {
            let b = r.encode();
            for cut in 0..b.len() {
                assert!(Record::decode(&b[..cut]).is_err(), "{r:?} cut at {cut}");
            }
        }
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Record::decode(&bytes);
        }

        #[test]
        fn decode_of_mutated_records_never_panics(i in 0usize..7, pos in 0usize..200, x in any::<u8>()) {
            let mut b = samples()[i].encode();
            let p = pos % b.len();
            b[p] ^= x;
            if let Ok(r) = Record::decode(&b) {
                prop_assert_eq!(Record::decode(&r.encode()), Ok(r));
            }
        }
    }
}
