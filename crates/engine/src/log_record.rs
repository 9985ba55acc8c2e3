//! The storage manager's log records: what they say and their byte encoding.
//!
//! The log itself treats payloads as opaque; this module gives them meaning. Page
//! changes are physiological: *redo* names a page and an operation on a key inside it
//! (so redo needs no tree traversal), *undo* names the tree and the key (so undo works
//! wherever the key lives by then, after any splits). Structure changes and full page
//! images are redo-only. Decoding never panics: any byte string decodes to a record or
//! to an error.
//!
//! An update of an inline value logs only the bytes that changed ([`Delta`]) when that is
//! smaller than the whole old and new values, and so does the compensation record that
//! undoes it. A transaction's records (update, compensation, commit, end) write their
//! numbers as LEB128 varints (tags 8–11); the fixed-width forms they replaced (tags 1–4,
//! format version 2 of the database, see `control.rs`) still decode, so a log written
//! before the change recovers, and is never written again.

use crate::ids::{PageId, TxnId};
use crate::options::Limits;
use crate::page::{image_page_size, CellValue, StoredValue, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use sluice_wal::Lsn;

mod delta;
pub(crate) mod fuzz;
#[cfg(test)]
pub(crate) mod tests_prop;
pub use delta::Delta;

/// Bytes of one page in an `Images` record: page id, length, and a compact image of at
/// most the whole page plus its 8-byte hole header.
const fn image_entry_bytes(page_size: usize) -> usize {
    8 + 4 + 8 + page_size
}

/// The most pages one `Images` record carries: a split logs the node, its new sibling,
/// the parent and the meta page (a root split: the root, two new children, the meta
/// page); creating a database or a table logs two, a torn-page image one.
pub(crate) const MAX_IMAGES_PER_RECORD: usize = 4;

/// The most bytes a varint takes (a `u64` in 7-bit groups).
const MAX_VARINT: usize = 10;
/// The most bytes a varint of a field length takes (at most [`MAX_FIELD`] · 2 + 1, 22 bits).
const MAX_LEN_VARINT: usize = 4;

/// The largest record about pages the engine writes with pages of `page_size` bytes:
/// the larger of a split's `Images` record and an `Update` whose key, old and new value
/// are as large as [`Limits`] allow (a `Clr` carries at most as much: one whole value,
/// or a delta of two, and one varint more).
pub(crate) fn max_page_record_bytes(page_size: usize) -> usize {
    let images = 1 + 4 + MAX_IMAGES_PER_RECORD * image_entry_bytes(page_size);
    // key + old and key + new are each at most max_entry, so all three at most twice it.
    // Numbers: txn, prev, page, tree (or undo next), and a delta's offset and tail.
    let entry = Limits::for_page_size(page_size).max_entry;
    let update = 1 + 6 * MAX_VARINT + 1 + 3 * MAX_LEN_VARINT + 2 * entry;
    images.max(update)
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

/// A transaction's change to one key, with what undo needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The key was absent and now maps to `value`.
    Insert {
        /// The new value.
        value: StoredValue,
    },
    /// The key mapped to `old` and now maps to `new` (whole values: a large value's
    /// descriptor on either side, or a change a delta would not make smaller).
    Update {
        /// The value before.
        old: StoredValue,
        /// The value after.
        new: StoredValue,
    },
    /// The key mapped to an inline value and still does; `delta` is what changed.
    Patch {
        /// The changed bytes, before and after.
        delta: Delta,
    },
    /// The key mapped to `old` and is now absent.
    Delete {
        /// The value before.
        old: StoredValue,
    },
}

/// Bytes a whole value takes in a record (its varint length and flag, its bytes).
fn value_record_len(v: CellValue<'_>) -> usize {
    varint_len(((v.bytes.len() as u64) << 1) | v.external as u64) + v.bytes.len()
}

/// The delta from `old` to `new` if both are inline and it takes fewer record bytes
/// than `whole`, what the record would carry instead.
fn delta_if_smaller(old: CellValue<'_>, new: CellValue<'_>, whole: usize) -> Option<Delta> {
    if old.external || new.external {
        // A descriptor is logged whole: redo and undo of a large value stay as simple
        // as they were, and its 18 bytes change almost everywhere on an overwrite.
        return None;
    }
    let d = Delta::between(old.bytes, new.bytes);
    (delta_record_len(&d) < whole).then_some(d)
}

/// Bytes a delta takes in a record.
fn delta_record_len(d: &Delta) -> usize {
    varint_len(d.at as u64)
        + varint_len(d.old.len() as u64)
        + d.old.len()
        + varint_len(d.new.len() as u64)
        + d.new.len()
        + varint_len(d.tail as u64)
}

impl Change {
    /// The change that takes a key from `old` to `new` (`None`: absent), as it is
    /// logged: a [`Change::Patch`] when that is smaller than [`Change::Update`].
    /// `None` if nothing changes.
    pub fn between(old: Option<CellValue<'_>>, new: Option<CellValue<'_>>) -> Option<Change> {
        Some(match (old, new) {
            (None, None) => return None,
            (None, Some(v)) => Change::Insert {
                value: v.to_owned(),
            },
            (Some(o), None) => Change::Delete { old: o.to_owned() },
            (Some(o), Some(v)) => {
                let whole = value_record_len(o) + value_record_len(v);
                match delta_if_smaller(o, v, whole) {
                    Some(delta) => Change::Patch { delta },
                    None => Change::Update {
                        old: o.to_owned(),
                        new: v.to_owned(),
                    },
                }
            }
        })
    }

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
            Change::Patch { delta } => PageOp::Patch {
                key: key.to_vec(),
                delta: delta.clone(),
            },
            Change::Delete { .. } => PageOp::Remove { key: key.to_vec() },
        }
    }

    /// True if undo needs the key's current value ([`Change::undone`]).
    pub fn undo_reads_current(&self) -> bool {
        matches!(self, Change::Patch { .. })
    }

    /// What the key must map to after undo (`None`: absent), given what it maps to
    /// now (`current`; read only for a [`Change::Patch`], whose undo is its delta
    /// reversed). An error if `current` is not the value the patch made: the log and
    /// the tree disagree.
    pub fn undone(&self, current: Option<&StoredValue>) -> Result<Option<StoredValue>, String> {
        match self {
            Change::Insert { .. } => Ok(None),
            Change::Update { old, .. } | Change::Delete { old } => Ok(Some(old.clone())),
            Change::Patch { delta } => match current {
                Some(v) if !v.external => {
                    Ok(Some(StoredValue::inline(delta.reversed().apply(&v.bytes)?)))
                }
                Some(_) => Err("undo of a patch finds a large value's descriptor".into()),
                None => Err("undo of a patch finds the key absent".into()),
            },
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
    /// Change bytes of a present key's inline value (exactly: the value must have the
    /// delta's old length and old bytes).
    Patch {
        /// The key.
        key: Vec<u8>,
        /// The change.
        delta: Delta,
    },
    /// Remove the cell of a present key.
    Remove {
        /// The key.
        key: Vec<u8>,
    },
}

impl PageOp {
    /// The operation that takes `key` from `old` to `new` (`None`: absent), as a
    /// compensation record logs it: a [`PageOp::Patch`] when that is smaller than the
    /// whole new value. `None` if nothing changes.
    pub fn between(
        key: &[u8],
        old: Option<CellValue<'_>>,
        new: Option<CellValue<'_>>,
    ) -> Option<PageOp> {
        let key = key.to_vec();
        Some(match (old, new) {
            (None, None) => return None,
            (None, Some(v)) => PageOp::Insert {
                key,
                value: v.to_owned(),
            },
            (Some(_), None) => PageOp::Remove { key },
            (Some(o), Some(v)) => match delta_if_smaller(o, v, value_record_len(v)) {
                Some(delta) => PageOp::Patch { key, delta },
                None => PageOp::Set {
                    key,
                    value: v.to_owned(),
                },
            },
        })
    }
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
    /// A transaction of a partitioned database committed (`crate::partitioned`): the
    /// commit record in the coordinator's log, written only once every other log that
    /// holds records of the transaction is durable past them. It commits the
    /// coordinator's own part, and it is the outcome recovery of each participant log
    /// looks up for a transaction that log holds without a commit record of its own.
    Coordinated {
        /// The transaction's part in the coordinator's partition.
        txn: TxnId,
        /// Its previous record there.
        prev: Option<Lsn>,
        /// The transaction's part in each other log.
        participants: Vec<Participant>,
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

/// A transaction's part in one log of a partitioned database, as the coordinator's
/// commit record names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Participant {
    /// The partition (its log manager), 1 and up (0 is the coordinator).
    pub partition: u16,
    /// The transaction's number in that partition.
    pub txn: TxnId,
    /// The start of its last record there: what recovery of that log finds as the
    /// in-doubt transaction's last record.
    pub last: Lsn,
}

/// Participants a coordinated commit names at most (one per log manager).
pub const MAX_PARTICIPANTS: usize = 64;
/// Encoded bytes of one participant, at most (two 10-byte varints and an LSN).
const PARTICIPANT_BYTES: usize = 28;

impl Record {
    /// The transaction the record belongs to, if any.
    pub fn txn(&self) -> Option<TxnId> {
        match self {
            Record::Update { txn, .. }
            | Record::Clr { txn, .. }
            | Record::Commit { txn, .. }
            | Record::Coordinated { txn, .. }
            | Record::End { txn, .. } => Some(*txn),
            _ => None,
        }
    }
}

/// Tags of the records as written now.
const TAG_IMAGES: u8 = 5;
const TAG_BEGIN_CKPT: u8 = 6;
const TAG_END_CKPT: u8 = 7;
const TAG_UPDATE: u8 = 8;
const TAG_CLR: u8 = 9;
const TAG_COMMIT: u8 = 10;
const TAG_END: u8 = 11;
const TAG_COORDINATED: u8 = 12;
/// Tags of the fixed-width transaction records of format version 2: decoded, never
/// written.
const LEGACY_UPDATE: u8 = 1;
const LEGACY_CLR: u8 = 2;
const LEGACY_COMMIT: u8 = 3;
const LEGACY_END: u8 = 4;

/// Kinds of [`Change`] and of [`PageOp`] in a record.
const KIND_INSERT: u8 = 1;
const KIND_WHOLE: u8 = 2;
const KIND_REMOVE: u8 = 3;
const KIND_PATCH: u8 = 4;

/// The largest byte string a record field may carry (a page image is at most a page).
const MAX_FIELD: usize = 1 << 20;
/// In a value's length field: the value is a large value's descriptor.
const EXTERNAL_FLAG: u32 = 1 << 31;

const _: () = assert!((MAX_FIELD as u64) << 1 < 1 << (7 * MAX_LEN_VARINT));

/// Bytes of `v` as a varint.
const fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

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
    /// LEB128: 7 bits a byte, low first, the top bit set on all but the last.
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn field_len(&mut self, n: usize) {
        assert!(n <= MAX_FIELD, "record field of {n} bytes");
        self.varint(n as u64);
    }
    /// A byte string, fixed-width length (page images).
    fn bytes(&mut self, b: &[u8]) {
        assert!(b.len() <= MAX_FIELD, "record field of {} bytes", b.len());
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    /// A byte string, varint length.
    fn vbytes(&mut self, b: &[u8]) {
        self.field_len(b.len());
        self.0.extend_from_slice(b);
    }
    /// A leaf value: varint of its length times two, plus one for a descriptor; its
    /// bytes.
    fn value(&mut self, v: &StoredValue) {
        let n = v.bytes.len();
        assert!(n <= MAX_FIELD, "record field of {n} bytes");
        self.varint(((n as u64) << 1) | v.external as u64);
        self.0.extend_from_slice(&v.bytes);
    }
    fn delta(&mut self, d: &Delta) {
        assert!(
            d.at <= MAX_FIELD && d.tail <= MAX_FIELD,
            "delta at {} with a tail of {}",
            d.at,
            d.tail
        );
        self.varint(d.at as u64);
        self.vbytes(&d.old);
        self.vbytes(&d.new);
        self.varint(d.tail as u64);
    }
    /// An optional record LSN: 0 for none, else LSN / 8 + 1 (record LSNs are 8-aligned
    /// frame starts, so the low three bits carry nothing).
    fn opt_lsn(&mut self, l: Option<Lsn>) {
        match l {
            None => self.varint(0),
            Some(l) => {
                assert!(l.0.is_multiple_of(8), "record LSN {l} is not 8-aligned");
                self.varint(l.0 / 8 + 1);
            }
        }
    }
    fn op(&mut self, op: &PageOp) {
        match op {
            PageOp::Insert { key, value } => {
                self.u8(KIND_INSERT);
                self.vbytes(key);
                self.value(value);
            }
            PageOp::Set { key, value } => {
                self.u8(KIND_WHOLE);
                self.vbytes(key);
                self.value(value);
            }
            PageOp::Patch { key, delta } => {
                self.u8(KIND_PATCH);
                self.vbytes(key);
                self.delta(delta);
            }
            PageOp::Remove { key } => {
                self.u8(KIND_REMOVE);
                self.vbytes(key);
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
    /// A LEB128 varint; at most 10 bytes, no bits beyond 64, no redundant zero groups
    /// (so each number has one encoding and re-encoding a decoded record gives its bytes).
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for i in 0..MAX_VARINT {
            let b = self.u8()?;
            let group = (b & 0x7F) as u64;
            if i == MAX_VARINT - 1 && b > 1 {
                return Err("varint beyond 64 bits".into());
            }
            v |= group << (7 * i);
            if b & 0x80 == 0 {
                if b == 0 && i > 0 {
                    return Err("varint with a redundant zero group".into());
                }
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }
    fn field_len(&mut self) -> Result<usize, String> {
        let n = self.varint()?;
        if n > MAX_FIELD as u64 {
            return Err(format!("record field of {n} bytes"));
        }
        Ok(n as usize)
    }
    fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.u32()? as usize;
        if n > MAX_FIELD {
            return Err(format!("record field of {n} bytes"));
        }
        Ok(self.take(n)?.to_vec())
    }
    fn vbytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.field_len()?;
        Ok(self.take(n)?.to_vec())
    }
    fn value(&mut self) -> Result<StoredValue, String> {
        let field = self.varint()?;
        let n = field >> 1;
        if n > MAX_FIELD as u64 {
            return Err(format!("record field of {n} bytes"));
        }
        Ok(StoredValue {
            bytes: self.take(n as usize)?.to_vec(),
            external: field & 1 != 0,
        })
    }
    fn delta(&mut self) -> Result<Delta, String> {
        let at = self.field_len()?;
        let old = self.vbytes()?;
        let new = self.vbytes()?;
        let tail = self.field_len()?;
        Ok(Delta { at, old, new, tail })
    }
    fn opt_lsn(&mut self) -> Result<Option<Lsn>, String> {
        match self.varint()? {
            0 => Ok(None),
            v => (v - 1)
                .checked_mul(8)
                .map(|l| Some(Lsn(l)))
                .ok_or_else(|| format!("record LSN field {v} out of range")),
        }
    }
    fn op(&mut self) -> Result<PageOp, String> {
        Ok(match self.u8()? {
            KIND_INSERT => PageOp::Insert {
                key: self.vbytes()?,
                value: self.value()?,
            },
            KIND_WHOLE => PageOp::Set {
                key: self.vbytes()?,
                value: self.value()?,
            },
            KIND_PATCH => PageOp::Patch {
                key: self.vbytes()?,
                delta: self.delta()?,
            },
            KIND_REMOVE => PageOp::Remove {
                key: self.vbytes()?,
            },
            t => return Err(format!("bad page op {t}")),
        })
    }

    // Format version 2's fixed-width transaction records.

    fn legacy_value(&mut self) -> Result<StoredValue, String> {
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
    fn legacy_opt_lsn(&mut self) -> Result<Option<Lsn>, String> {
        match self.u8()? {
            0 => Ok(None),
            1 => match self.u64()? {
                l if l.is_multiple_of(8) => Ok(Some(Lsn(l))),
                l => Err(format!("record LSN {l} is not 8-aligned")),
            },
            f => Err(format!("bad LSN flag {f}")),
        }
    }
    fn legacy_op(&mut self) -> Result<PageOp, String> {
        Ok(match self.u8()? {
            KIND_INSERT => PageOp::Insert {
                key: self.bytes()?,
                value: self.legacy_value()?,
            },
            KIND_WHOLE => PageOp::Set {
                key: self.bytes()?,
                value: self.legacy_value()?,
            },
            KIND_REMOVE => PageOp::Remove { key: self.bytes()? },
            t => return Err(format!("bad page op {t}")),
        })
    }
    /// A count of items of at least `min_item` bytes each, checked against what is left.
    fn count(&mut self, min_item: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item) > self.0.len() {
            return Err(format!("count {n} exceeds the record"));
        }
        Ok(n)
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
                w.varint(txn.0);
                w.opt_lsn(*prev);
                w.varint(page.0);
                w.varint(tree.0);
                w.vbytes(key);
                match change {
                    Change::Insert { value } => {
                        w.u8(KIND_INSERT);
                        w.value(value);
                    }
                    Change::Update { old, new } => {
                        w.u8(KIND_WHOLE);
                        w.value(old);
                        w.value(new);
                    }
                    Change::Patch { delta } => {
                        w.u8(KIND_PATCH);
                        w.delta(delta);
                    }
                    Change::Delete { old } => {
                        w.u8(KIND_REMOVE);
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
                w.varint(txn.0);
                w.opt_lsn(*prev);
                w.varint(page.0);
                w.op(op);
                w.opt_lsn(*undo_next);
            }
            Record::Commit { txn, prev } => {
                w.u8(TAG_COMMIT);
                w.varint(txn.0);
                w.opt_lsn(*prev);
            }
            Record::Coordinated {
                txn,
                prev,
                participants,
            } => {
                w.u8(TAG_COORDINATED);
                w.varint(txn.0);
                w.opt_lsn(*prev);
                w.varint(participants.len() as u64);
                for p in participants {
                    w.varint(u64::from(p.partition));
                    w.varint(p.txn.0);
                    w.u64(p.last.0);
                }
            }
            Record::End { txn, prev } => {
                w.u8(TAG_END);
                w.varint(txn.0);
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
                    Change::Patch { delta } => vec![delta.old_len(), delta.new_len()],
                    Change::Delete { old } => vec![old.bytes.len()],
                };
                max_page_record_bytes(smallest_page_for(key.len(), &values))
            }
            Record::Clr { op, .. } => {
                let (key, values) = match op {
                    PageOp::Insert { key, value } | PageOp::Set { key, value } => {
                        (key.len(), vec![value.bytes.len()])
                    }
                    PageOp::Patch { key, delta } => {
                        (key.len(), vec![delta.old_len(), delta.new_len()])
                    }
                    PageOp::Remove { key } => (key.len(), vec![]),
                };
                max_page_record_bytes(smallest_page_for(key, &values))
            }
            Record::Images { pages } => {
                if pages.len() > MAX_IMAGES_PER_RECORD {
                    return 0;
                }
                // The page size an image was taken from (0 for a malformed image: tests
                // encode such records on purpose).
                let size = pages.iter().map(|(_, i)| image_page_size(i)).max();
                let size = size.unwrap_or(0).clamp(MIN_PAGE_SIZE, MAX_PAGE_SIZE);
                max_page_record_bytes(size.next_power_of_two())
            }
            Record::EndCheckpoint(c) => checkpoint_record_bytes(c.active.len(), c.dirty.len()),
            Record::Commit { .. } | Record::End { .. } | Record::BeginCheckpoint => {
                max_page_record_bytes(MIN_PAGE_SIZE)
            }
            Record::Coordinated { .. } => {
                max_page_record_bytes(MIN_PAGE_SIZE) + MAX_PARTICIPANTS * PARTICIPANT_BYTES
            }
        }
    }

    /// Parses a record (the fixed-width transaction records of format version 2
    /// included). Never panics; trailing bytes are an error.
    pub fn decode(bytes: &[u8]) -> Result<Record, String> {
        let mut r = Reader(bytes);
        let rec = match r.u8()? {
            TAG_UPDATE => {
                let txn = TxnId(r.varint()?);
                let prev = r.opt_lsn()?;
                let page = PageId(r.varint()?);
                let tree = PageId(r.varint()?);
                let key = r.vbytes()?;
                let change = match r.u8()? {
                    KIND_INSERT => Change::Insert { value: r.value()? },
                    KIND_WHOLE => Change::Update {
                        old: r.value()?,
                        new: r.value()?,
                    },
                    KIND_PATCH => Change::Patch { delta: r.delta()? },
                    KIND_REMOVE => Change::Delete { old: r.value()? },
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
                txn: TxnId(r.varint()?),
                prev: r.opt_lsn()?,
                page: PageId(r.varint()?),
                op: r.op()?,
                undo_next: r.opt_lsn()?,
            },
            TAG_COMMIT => Record::Commit {
                txn: TxnId(r.varint()?),
                prev: r.opt_lsn()?,
            },
            TAG_END => Record::End {
                txn: TxnId(r.varint()?),
                prev: r.opt_lsn()?,
            },
            TAG_COORDINATED => {
                let txn = TxnId(r.varint()?);
                let prev = r.opt_lsn()?;
                let n = r.varint()?;
                if n > MAX_PARTICIPANTS as u64 {
                    return Err(format!(
                        "{n} participants in a coordinated commit (at most {MAX_PARTICIPANTS})"
                    ));
                }
                let mut participants = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let partition = r.varint()?;
                    let partition = u16::try_from(partition)
                        .map_err(|_| format!("participant partition {partition} out of range"))?;
                    participants.push(Participant {
                        partition,
                        txn: TxnId(r.varint()?),
                        last: Lsn(r.u64()?),
                    });
                }
                Record::Coordinated {
                    txn,
                    prev,
                    participants,
                }
            }
            LEGACY_UPDATE => {
                let txn = TxnId(r.u64()?);
                let prev = r.legacy_opt_lsn()?;
                let page = PageId(r.u64()?);
                let tree = PageId(r.u64()?);
                let key = r.bytes()?;
                let change = match r.u8()? {
                    KIND_INSERT => Change::Insert {
                        value: r.legacy_value()?,
                    },
                    KIND_WHOLE => Change::Update {
                        old: r.legacy_value()?,
                        new: r.legacy_value()?,
                    },
                    KIND_REMOVE => Change::Delete {
                        old: r.legacy_value()?,
                    },
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
            LEGACY_CLR => Record::Clr {
                txn: TxnId(r.u64()?),
                prev: r.legacy_opt_lsn()?,
                page: PageId(r.u64()?),
                op: r.legacy_op()?,
                undo_next: r.legacy_opt_lsn()?,
            },
            LEGACY_COMMIT => Record::Commit {
                txn: TxnId(r.u64()?),
                prev: r.legacy_opt_lsn()?,
            },
            LEGACY_END => Record::End {
                txn: TxnId(r.u64()?),
                prev: r.legacy_opt_lsn()?,
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
            Record::Update {
                txn: TxnId(1 << 40),
                prev: Some(Lsn(1 << 33)),
                page: PageId(300),
                tree: PageId(u64::MAX),
                key: b"account".to_vec(),
                change: Change::Patch {
                    delta: Delta {
                        at: 4,
                        old: b"1234".to_vec(),
                        new: b"98765".to_vec(),
                        tail: 88,
                    },
                },
            },
            Record::Update {
                txn: TxnId(0),
                prev: Some(Lsn(8)),
                page: PageId(1),
                tree: PageId(1),
                key: vec![],
                change: Change::Insert {
                    value: StoredValue::inline(vec![7; 200]),
                },
            },
            Record::Update {
                txn: TxnId(u64::MAX),
                prev: Some(Lsn(u64::MAX - 7)),
                page: PageId(0),
                tree: PageId(1),
                key: vec![0xFF; 3],
                change: Change::Delete {
                    old: StoredValue::inline(vec![]),
                },
            },
            Record::Clr {
                txn: TxnId(9),
                prev: Some(Lsn(0)),
                page: PageId(4),
                op: PageOp::Remove { key: vec![] },
                undo_next: Some(Lsn(16)),
            },
            Record::Clr {
                txn: TxnId(200),
                prev: Some(Lsn(4096)),
                page: PageId(77),
                op: PageOp::Patch {
                    key: b"k".to_vec(),
                    delta: Delta {
                        at: 0,
                        old: vec![],
                        new: b"x".to_vec(),
                        tail: 3,
                    },
                },
                undo_next: None,
            },
            Record::Clr {
                txn: TxnId(200),
                prev: None,
                page: PageId(77),
                op: PageOp::Set {
                    key: b"k".to_vec(),
                    value: StoredValue {
                        bytes: vec![1; 18],
                        external: true,
                    },
                },
                undo_next: Some(Lsn(64)),
            },
            Record::Clr {
                txn: TxnId(201),
                prev: None,
                page: PageId(78),
                op: PageOp::Insert {
                    key: b"i".to_vec(),
                    value: StoredValue::inline(b"v".to_vec()),
                },
                undo_next: None,
            },
            Record::Commit {
                txn: TxnId(1),
                prev: Some(Lsn(8)),
            },
            Record::End {
                txn: TxnId(1),
                prev: None,
            },
            Record::Coordinated {
                txn: TxnId(7),
                prev: None,
                participants: vec![
                    Participant {
                        partition: 1,
                        txn: TxnId(40),
                        last: Lsn(4096),
                    },
                    Participant {
                        partition: 2,
                        txn: TxnId(u64::MAX),
                        last: Lsn(u64::MAX),
                    },
                ],
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

    /// Format version 2's fixed-width encoding of a transaction record (the encoder this
    /// module had before deltas, for the transaction records it still decodes).
    fn legacy_encode(r: &Record) -> Vec<u8> {
        fn opt_lsn(b: &mut Vec<u8>, l: Option<Lsn>) {
            match l {
                None => b.push(0),
                Some(l) => {
                    b.push(1);
                    b.extend_from_slice(&l.0.to_le_bytes());
                }
            }
        }
        fn bytes(b: &mut Vec<u8>, x: &[u8]) {
            b.extend_from_slice(&(x.len() as u32).to_le_bytes());
            b.extend_from_slice(x);
        }
        fn value(b: &mut Vec<u8>, v: &StoredValue) {
            let flag = if v.external { EXTERNAL_FLAG } else { 0 };
            b.extend_from_slice(&(v.bytes.len() as u32 | flag).to_le_bytes());
            b.extend_from_slice(&v.bytes);
        }
        let mut b = Vec::new();
        match r {
            Record::Update {
                txn,
                prev,
                page,
                tree,
                key,
                change,
            } => {
                b.push(LEGACY_UPDATE);
                b.extend_from_slice(&txn.0.to_le_bytes());
                opt_lsn(&mut b, *prev);
                b.extend_from_slice(&page.0.to_le_bytes());
                b.extend_from_slice(&tree.0.to_le_bytes());
                bytes(&mut b, key);
                match change {
                    Change::Insert { value: v } => {
                        b.push(1);
                        value(&mut b, v);
                    }
                    Change::Update { old, new } => {
                        b.push(2);
                        value(&mut b, old);
                        value(&mut b, new);
                    }
                    Change::Delete { old } => {
                        b.push(3);
                        value(&mut b, old);
                    }
                    Change::Patch { .. } => unreachable!("format version 2 has no patches"),
                }
            }
            Record::Clr {
                txn,
                prev,
                page,
                op,
                undo_next,
            } => {
                b.push(LEGACY_CLR);
                b.extend_from_slice(&txn.0.to_le_bytes());
                opt_lsn(&mut b, *prev);
                b.extend_from_slice(&page.0.to_le_bytes());
                match op {
                    PageOp::Insert { key, value: v } => {
                        b.push(1);
                        bytes(&mut b, key);
                        value(&mut b, v);
                    }
                    PageOp::Set { key, value: v } => {
                        b.push(2);
                        bytes(&mut b, key);
                        value(&mut b, v);
                    }
                    PageOp::Remove { key } => {
                        b.push(3);
                        bytes(&mut b, key);
                    }
                    PageOp::Patch { .. } => unreachable!("format version 2 has no patches"),
                }
                opt_lsn(&mut b, *undo_next);
            }
            Record::Commit { txn, prev } | Record::End { txn, prev } => {
                b.push(if matches!(r, Record::Commit { .. }) {
                    LEGACY_COMMIT
                } else {
                    LEGACY_END
                });
                b.extend_from_slice(&txn.0.to_le_bytes());
                opt_lsn(&mut b, *prev);
            }
            _ => unreachable!("only transaction records changed format"),
        }
        b
    }

    /// The samples format version 2 could write.
    fn legacy_samples() -> Vec<Record> {
        samples()
            .into_iter()
            .filter(|r| match r {
                Record::Update { change, .. } => !matches!(change, Change::Patch { .. }),
                Record::Clr { op, .. } => !matches!(op, PageOp::Patch { .. }),
                Record::Commit { .. } | Record::End { .. } => true,
                _ => false,
            })
            .collect()
    }

    #[test]
    fn every_record_kind_round_trips() {
        for r in samples() {
            assert_eq!(Record::decode(&r.encode()), Ok(r.clone()));
        }
    }

    #[test]
    fn records_of_format_version_2_still_decode() {
        let legacy = legacy_samples();
        assert_eq!(legacy.len(), 8);
        for r in legacy {
            let old = legacy_encode(&r);
            assert_eq!(Record::decode(&old), Ok(r.clone()));
            assert!(
                r.encode().len() < old.len(),
                "{r:?} is not smaller than before"
            );
        }
    }

    #[test]
    fn truncated_records_are_errors() {
        let legacy = legacy_samples()
            .iter()
            .map(legacy_encode)
            .collect::<Vec<_>>();
        for b in samples().iter().map(Record::encode).chain(legacy) {
            for cut in 0..b.len() {
                assert!(Record::decode(&b[..cut]).is_err(), "{b:?} cut at {cut}");
            }
        }
    }

    #[test]
    fn varints_have_one_encoding() {
        for v in [0, 1, 127, 128, 16_383, 16_384, 1 << 35, u64::MAX] {
            let mut w = Writer(Vec::new());
            w.varint(v);
            assert_eq!(w.0.len(), varint_len(v), "{v}");
            let mut r = Reader(&w.0);
            assert_eq!(r.varint(), Ok(v));
            assert!(r.0.is_empty());
        }
        // A redundant zero group, a bit beyond 64, an eleventh byte.
        assert!(Reader(&[0x80, 0x00]).varint().is_err());
        assert!(
            Reader(&[0xFF; 9].iter().copied().chain([0x02]).collect::<Vec<_>>())
                .varint()
                .is_err()
        );
        assert!(Reader(&[0xFF; 11]).varint().is_err());
    }

    fn update(old: &[u8], new: &[u8]) -> Change {
        Change::between(Some(CellValue::inline(old)), Some(CellValue::inline(new)))
            .expect("a change")
    }

    #[test]
    fn an_update_of_a_few_bytes_logs_a_patch_that_undoes_exactly() {
        let mut old = vec![0u8; 100];
        old[4..12].copy_from_slice(&1_000i64.to_le_bytes());
        let mut new = old.clone();
        new[4..12].copy_from_slice(&(1_000i64 + 512).to_le_bytes());
        let c = update(&old, &new);
        let Change::Patch { delta } = &c else {
            panic!("whole values logged: {c:?}");
        };
        assert_eq!((delta.at, delta.old.len(), delta.tail), (5, 1, 94));
        let cur = StoredValue::inline(new.clone());
        assert_eq!(
            c.undone(Some(&cur)),
            Ok(Some(StoredValue::inline(old.clone())))
        );
        // The record is a fraction of one with both whole values.
        let rec = |change| Record::Update {
            txn: TxnId(1_000_000),
            prev: Some(Lsn(1 << 30)),
            page: PageId(1_000),
            tree: PageId(3),
            key: 42u32.to_be_bytes().to_vec(),
            change,
        };
        let whole = Change::Update {
            old: StoredValue::inline(old),
            new: StoredValue::inline(new),
        };
        let (small, big) = (rec(c).encode().len(), rec(whole).encode().len());
        assert!(
            small <= 30 && big >= 200,
            "patch {small} bytes, whole {big}"
        );
    }

    #[test]
    fn values_a_delta_would_not_shrink_and_descriptors_are_logged_whole() {
        assert!(matches!(update(b"abcd", b"wxyz"), Change::Update { .. }));
        let (a, b) = (vec![1u8; 18], vec![2u8; 18]);
        let d = |v| CellValue {
            bytes: v,
            external: true,
        };
        for (o, n) in [
            (d(&a), d(&a[..17])),
            (d(&a), CellValue::inline(&b)),
            (CellValue::inline(&a), d(&a)),
        ] {
            assert!(matches!(
                Change::between(Some(o), Some(n)),
                Some(Change::Update { .. })
            ));
            assert!(matches!(
                PageOp::between(b"k", Some(o), Some(n)),
                Some(PageOp::Set { .. })
            ));
        }
        assert_eq!(Change::between(None, None), None);
    }

    #[test]
    fn undo_of_a_patch_refuses_a_value_it_did_not_make() {
        let c = update(&[5; 50], &[5, 5, 6, 5, 5].repeat(10));
        let wrong = StoredValue::inline(vec![5; 50]);
        assert!(c.undone(Some(&wrong)).is_err());
        assert!(c.undone(None).is_err());
        let desc = StoredValue {
            bytes: [5, 5, 6, 5, 5].repeat(10),
            external: true,
        };
        assert!(c.undone(Some(&desc)).is_err());
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Record::decode(&bytes);
        }

        #[test]
        fn decode_of_mutated_records_never_panics(i in 0usize..64, pos in 0usize..300, x in any::<u8>(), legacy in any::<bool>()) {
            let mut b = if legacy {
                let l = legacy_samples();
                legacy_encode(&l[i % l.len()])
            } else {
                let s = samples();
                s[i % s.len()].encode()
            };
            let p = pos % b.len();
            b[p] ^= x;
            if let Ok(r) = Record::decode(&b) {
                prop_assert_eq!(Record::decode(&r.encode()), Ok(r));
            }
        }

        #[test]
        fn every_change_between_two_values_round_trips_and_undoes(
            old in proptest::collection::vec(0u8..3, 0..60),
            new in proptest::collection::vec(0u8..3, 0..60),
        ) {
            let c = update(&old, &new);
            let r = Record::Update {
                txn: TxnId(3),
                prev: None,
                page: PageId(9),
                tree: PageId(2),
                key: b"key".to_vec(),
                change: c.clone(),
            };
            prop_assert_eq!(Record::decode(&r.encode()), Ok(r));
            let cur = StoredValue::inline(new.clone());
            prop_assert_eq!(c.undone(Some(&cur)), Ok(Some(StoredValue::inline(old.clone()))));
            let op = PageOp::between(b"key", Some(CellValue::inline(&new)), Some(CellValue::inline(&old)));
            if let Some(PageOp::Patch { delta, .. }) = op {
                prop_assert_eq!(delta.apply(&new), Ok(old));
            }
        }
    }
}
