//! Slotted B+tree nodes.
//!
//! After the header comes an array of `u16` slots, sorted by key, each the offset of a
//! cell; cells grow down from the end of the page. A leaf cell is
//! `[key_len u16][value_len u16][key][value]`; an internal cell is
//! `[key_len u16][child u64][key]`, meaning "keys >= key live under child" (keys below
//! the first separator live under the leftmost child, kept in the header's link field).
//! Removing a cell leaves a hole counted in `frag`; inserts compact the page when the
//! contiguous gap is too small but the total free space suffices.

use crate::ids::PageId;
use crate::page::layout::{
    format, get_u16, get_u32, get_u64, page_type, put_u16, put_u32, put_u64, PageType, HEADER_LEN,
    OFF_CELL_START, OFF_FRAG, OFF_LEVEL, OFF_LINK, OFF_NSLOTS,
};
use std::cmp::Ordering;

/// Bytes of a leaf cell's fixed part.
pub(crate) const LEAF_CELL_HEADER: usize = 4;
/// Bytes of an internal cell's fixed part.
pub(crate) const INTERNAL_CELL_HEADER: usize = 10;
/// Bytes of one slot.
pub(crate) const SLOT: usize = 2;
/// The flag in a leaf cell's `value_len` marking a large value's descriptor. Pages are at
/// most 32 KiB, so no length reaches it.
pub(crate) const EXTERNAL: u16 = 0x8000;
const _: () = assert!(crate::page::layout::MAX_PAGE_SIZE <= EXTERNAL as usize);

/// A value as a leaf cell holds it: inline bytes, or (`external`) the descriptor of a
/// large value stored elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellValue<'a> {
    /// The cell's value bytes.
    pub bytes: &'a [u8],
    /// The bytes are a large value's descriptor.
    pub external: bool,
}

impl<'a> CellValue<'a> {
    /// Inline bytes.
    pub fn inline(bytes: &'a [u8]) -> CellValue<'a> {
        CellValue {
            bytes,
            external: false,
        }
    }
    /// An owned copy.
    pub fn to_owned(self) -> StoredValue {
        StoredValue {
            bytes: self.bytes.to_vec(),
            external: self.external,
        }
    }
}

/// An owned [`CellValue`]: what log records and undo carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredValue {
    /// The cell's value bytes.
    pub bytes: Vec<u8>,
    /// The bytes are a large value's descriptor.
    pub external: bool,
}

impl StoredValue {
    /// Inline bytes.
    pub fn inline(bytes: Vec<u8>) -> StoredValue {
        StoredValue {
            bytes,
            external: false,
        }
    }
    /// A borrowed view.
    pub fn as_cell(&self) -> CellValue<'_> {
        CellValue {
            bytes: &self.bytes,
            external: self.external,
        }
    }
}

/// The length in a leaf cell's `value_len` field.
fn value_len(field: u16) -> usize {
    (field & !EXTERNAL) as usize
}

/// A read-only view of a validated node page.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    b: &'a [u8],
}

impl<'a> Node<'a> {
    /// Wraps bytes that passed [`crate::page::validate`] as a leaf or internal node.
    pub fn new(b: &'a [u8]) -> Node<'a> {
        debug_assert!(matches!(
            page_type(b),
            Some(PageType::Leaf | PageType::Internal)
        ));
        Node { b }
    }
    /// True for a leaf.
    pub fn is_leaf(&self) -> bool {
        page_type(self.b) == Some(PageType::Leaf)
    }
    /// 0 for leaves.
    pub fn level(&self) -> u8 {
        self.b[OFF_LEVEL]
    }
    /// The number of cells.
    pub fn len(&self) -> usize {
        get_u16(self.b, OFF_NSLOTS) as usize
    }
    /// True if the node has no cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Next leaf (leaves) or leftmost child (internal nodes).
    pub fn link(&self) -> PageId {
        PageId(get_u64(self.b, OFF_LINK))
    }
    fn cell_start(&self) -> usize {
        get_u32(self.b, OFF_CELL_START) as usize
    }
    fn frag(&self) -> usize {
        get_u32(self.b, OFF_FRAG) as usize
    }
    fn slot(&self, i: usize) -> usize {
        get_u16(self.b, HEADER_LEN + SLOT * i) as usize
    }
    fn cell_len_at(&self, off: usize) -> usize {
        let klen = get_u16(self.b, off) as usize;
        if self.is_leaf() {
            LEAF_CELL_HEADER + klen + value_len(get_u16(self.b, off + 2))
        } else {
            INTERNAL_CELL_HEADER + klen
        }
    }
    /// The raw bytes of cell `i` (for moving cells between pages in a split).
    pub(crate) fn cell(&self, i: usize) -> &'a [u8] {
        let off = self.slot(i);
        &self.b[off..off + self.cell_len_at(off)]
    }
    /// The key of cell `i`.
    pub fn key(&self, i: usize) -> &'a [u8] {
        let off = self.slot(i);
        let klen = get_u16(self.b, off) as usize;
        let h = if self.is_leaf() {
            LEAF_CELL_HEADER
        } else {
            INTERNAL_CELL_HEADER
        };
        &self.b[off + h..off + h + klen]
    }
    /// The value bytes of leaf cell `i` (a descriptor if the value is external).
    pub fn value(&self, i: usize) -> &'a [u8] {
        self.cell_value(i).bytes
    }
    /// The value of leaf cell `i`, inline or external.
    pub fn cell_value(&self, i: usize) -> CellValue<'a> {
        debug_assert!(self.is_leaf());
        let off = self.slot(i);
        let klen = get_u16(self.b, off) as usize;
        let field = get_u16(self.b, off + 2);
        let start = off + LEAF_CELL_HEADER + klen;
        CellValue {
            bytes: &self.b[start..start + value_len(field)],
            external: field & EXTERNAL != 0,
        }
    }
    /// The child of internal cell `i`.
    pub fn child(&self, i: usize) -> PageId {
        debug_assert!(!self.is_leaf());
        PageId(get_u64(self.b, self.slot(i) + 2))
    }
    /// Binary search: `Ok(i)` if cell `i` has `key`, else `Err(i)` where it would go.
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            // The probed cells are scattered over the page, and each is a cache miss on
            // a page not touched lately: ask for both cells the next probe may read
            // while this one is compared, so the misses overlap.
            let (left, right) = ((lo + mid) / 2, (mid + 1 + hi) / 2);
            self.prefetch_cell(left);
            if right < hi {
                self.prefetch_cell(right);
            }
            match self.key(mid).cmp(key) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }
    /// Hints the CPU to load the start of cell `i` (no effect on the result).
    #[inline(always)]
    fn prefetch_cell(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let off = self.slot(i).min(self.b.len() - 1);
            let p = self.b[off..].as_ptr().cast();
            // SAFETY: `_mm_prefetch` is `unsafe` only for its `sse` target feature, which
            // every x86_64 CPU has (it is in the target's baseline). A prefetch reads
            // nothing the program sees and cannot fault; `p` points into the page anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }
    /// The child of an internal node under which `key` lives.
    pub fn child_for(&self, key: &[u8]) -> PageId {
        match self.search(key) {
            Ok(i) => self.child(i),
            Err(0) => self.link(),
            Err(i) => self.child(i - 1),
        }
    }
    /// Free bytes, counting fragmentation (what compaction would give).
    pub fn free_space(&self) -> usize {
        self.cell_start() - (HEADER_LEN + SLOT * self.len()) + self.frag()
    }
    /// True if the key of slot `i` lies strictly between its neighbours' (the order the
    /// slots keep, checked at an insert: two comparisons).
    pub(crate) fn sorted_around(&self, i: usize) -> bool {
        let key = self.key(i);
        (i == 0 || self.key(i - 1) < key) && (i + 1 >= self.len() || key < self.key(i + 1))
    }
    /// True if the keys strictly increase slot by slot (checked after a rebuild).
    pub(crate) fn sorted(&self) -> bool {
        (1..self.len()).all(|i| self.key(i - 1) < self.key(i))
    }

    /// The end of the slot array (the start of the gap before the cells).
    pub(crate) fn slots_end(&self) -> usize {
        HEADER_LEN + SLOT * self.len()
    }
    /// The gap between the slot array and the cells, which holds no data.
    pub(crate) fn hole(&self) -> (usize, usize) {
        (self.slots_end(), self.cell_start())
    }

    /// Structural checks of a node page; see [`crate::page::validate`]. Never panics.
    pub(crate) fn check(b: &[u8]) -> Result<(), String> {
        let size = b.len();
        let kind = page_type(b);
        let level = b[OFF_LEVEL];
        let leaf = kind == Some(PageType::Leaf);
        if leaf != (level == 0) {
            return Err(format!("node type {kind:?} at level {level}"));
        }
        let n = get_u16(b, OFF_NSLOTS) as usize;
        let cell_start = get_u32(b, OFF_CELL_START) as usize;
        let frag = get_u32(b, OFF_FRAG) as usize;
        if HEADER_LEN + SLOT * n > cell_start || cell_start > size {
            return Err(format!("{n} slots collide with cells at {cell_start}"));
        }
        if !leaf && !PageId(get_u64(b, OFF_LINK)).is_some() {
            return Err("internal node without a leftmost child".into());
        }
        let hdr = if leaf {
            LEAF_CELL_HEADER
        } else {
            INTERNAL_CELL_HEADER
        };
        let mut used = 0usize;
        let mut prev: Option<&[u8]> = None;
        for i in 0..n {
            let off = get_u16(b, HEADER_LEN + SLOT * i) as usize;
            if off < cell_start || off + hdr > size {
                return Err(format!("slot {i} points at {off}, outside the cells"));
            }
            let klen = get_u16(b, off) as usize;
            let len = if leaf {
                hdr + klen + value_len(get_u16(b, off + 2))
            } else {
                hdr + klen
            };
            if off + len > size {
                return Err(format!("cell {i} at {off} runs past the page end"));
            }
            let key = &b[off + hdr..off + hdr + klen];
            if prev.is_some_and(|p| p >= key) {
                return Err(format!("keys out of order at slot {i}"));
            }
            prev = Some(key);
            used += len;
        }
        if used + frag != size - cell_start {
            return Err(format!(
                "cells ({used} bytes) and fragments ({frag}) do not fill the cell area ({})",
                size - cell_start
            ));
        }
        Ok(())
    }
}

/// A mutable view of a node page.
pub struct NodeMut<'a> {
    b: &'a mut [u8],
}

impl<'a> NodeMut<'a> {
    /// Wraps a valid node page for modification.
    pub fn new(b: &'a mut [u8]) -> NodeMut<'a> {
        NodeMut { b }
    }
    /// Formats `b` as an empty leaf (`level` 0) or internal node.
    pub fn format(b: &'a mut [u8], id: PageId, level: u8) -> NodeMut<'a> {
        let kind = if level == 0 {
            PageType::Leaf
        } else {
            PageType::Internal
        };
        format(b, id, kind, level);
        NodeMut { b }
    }
    /// A read-only view.
    pub fn view(&self) -> Node<'_> {
        Node { b: self.b }
    }
    /// Sets the next leaf (leaves) or leftmost child (internal nodes).
    pub fn set_link(&mut self, id: PageId) {
        put_u64(self.b, OFF_LINK, id.0);
    }
    /// True if a cell of `cell_len` bytes (plus its slot) fits, compacting if needed.
    pub fn fits(&self, cell_len: usize) -> bool {
        self.view().free_space() >= cell_len + SLOT
    }

    /// Inserts a ready-made cell at slot `i`. The caller checked [`NodeMut::fits`].
    pub(crate) fn insert_cell(&mut self, i: usize, cell: &[u8]) {
        self.insert_cell_with(i, cell.len(), |c| c.copy_from_slice(cell));
    }

    /// Inserts a cell of `len` bytes at slot `i`, written in place by `write` (so a cell
    /// is never assembled in a heap buffer first: one allocation per change saved on the
    /// hot path). The caller checked [`NodeMut::fits`].
    fn insert_cell_with(&mut self, i: usize, len: usize, write: impl FnOnce(&mut [u8])) {
        let n = self.view().len();
        assert!(i <= n, "slot {i} beyond {n} cells");
        assert!(self.fits(len), "cell of {len} bytes does not fit");
        if self.view().cell_start() - self.view().slots_end() < len + SLOT {
            self.compact();
        }
        let start = self.view().cell_start() - len;
        write(&mut self.b[start..start + len]);
        let slots = HEADER_LEN + SLOT * i;
        self.b
            .copy_within(slots..HEADER_LEN + SLOT * n, slots + SLOT);
        put_u16(self.b, slots, start as u16);
        put_u16(self.b, OFF_NSLOTS, (n + 1) as u16);
        put_u32(self.b, OFF_CELL_START, start as u32);
        debug_assert!(self.view().slots_end() <= start);
        // (Debug only: the insert path's; `validate` checks the same of every page read.)
        debug_assert!(
            self.view().sorted_around(i),
            "B+tree node: keys sorted within a node — the key inserted at slot {i} of {} is \
             not between its neighbours'",
            n + 1
        );
    }

    /// Inserts `(key, value)` at slot `i` of a leaf, the value inline.
    #[cfg(test)]
    pub fn insert_leaf(&mut self, i: usize, key: &[u8], value: &[u8]) {
        self.insert_cell(i, &leaf_cell(key, CellValue::inline(value)));
    }

    /// Inserts `(key, value)` at slot `i` of a leaf.
    pub fn insert_leaf_value(&mut self, i: usize, key: &[u8], value: CellValue<'_>) {
        let len = LEAF_CELL_HEADER + key.len() + value.bytes.len();
        self.insert_cell_with(i, len, |c| write_leaf_cell(c, key, value));
    }

    /// Replaces the value of leaf cell `i` in place with `value` if it has the same
    /// length as the old one (and returns true): the cell keeps its bytes' place, so
    /// the update leaves no fragment behind and never compacts. TPC-B's updates (and
    /// most read-modify-writes of fixed-size rows) are all of this kind; removing and
    /// re-inserting the cell made every leaf compact (a copy of every cell) once its
    /// contiguous gap was used up. False, changing nothing, if the lengths differ.
    pub fn overwrite_leaf_value(&mut self, i: usize, value: CellValue<'_>) -> bool {
        debug_assert!(self.view().is_leaf());
        let off = self.view().slot(i);
        let klen = get_u16(self.b, off) as usize;
        if value_len(get_u16(self.b, off + 2)) != value.bytes.len() {
            return false;
        }
        put_u16(self.b, off + 2, value_field(value));
        let start = off + LEAF_CELL_HEADER + klen;
        self.b[start..start + value.bytes.len()].copy_from_slice(value.bytes);
        true
    }

    /// Inserts `(key, child)` at slot `i` of an internal node.
    pub fn insert_internal(&mut self, i: usize, key: &[u8], child: PageId) {
        self.insert_cell(i, &internal_cell(key, child));
    }

    /// Removes cell `i`; its bytes become fragmentation.
    pub fn remove(&mut self, i: usize) {
        let n = self.view().len();
        assert!(i < n, "slot {i} beyond {n} cells");
        let len = self.view().cell(i).len();
        let frag = self.view().frag() + len;
        let slots = HEADER_LEN + SLOT * i;
        self.b
            .copy_within(slots + SLOT..HEADER_LEN + SLOT * n, slots);
        put_u16(self.b, OFF_NSLOTS, (n - 1) as u16);
        put_u32(self.b, OFF_FRAG, frag as u32);
        // Zero the freed slot so the hole holds no stale bytes (images omit it).
        put_u16(self.b, HEADER_LEN + SLOT * (n - 1), 0);
    }

    /// Drops every cell from slot `from` on (the upper half moved away by a split).
    pub fn truncate(&mut self, from: usize) {
        self.rebuild_from_copy(from);
    }

    /// Rewrites the cells contiguously at the end of the page, in slot order.
    pub fn compact(&mut self) {
        self.rebuild_from_copy(self.view().len());
    }

    /// Rebuilds the page from its first `n` cells, read from one copy of the page (one
    /// allocation, where a copy of each cell cost one per cell).
    fn rebuild_from_copy(&mut self, n: usize) {
        let copy = self.b.to_vec();
        let old = Node { b: &copy };
        let cells: Vec<&[u8]> = (0..n).map(|i| old.cell(i)).collect();
        self.rebuild(&cells);
    }

    /// Replaces all cells with `cells` (already sorted).
    pub(crate) fn rebuild<C: AsRef<[u8]>>(&mut self, cells: &[C]) {
        let size = self.b.len();
        self.b[HEADER_LEN..].fill(0);
        let mut start = size;
        for (i, c) in cells.iter().enumerate() {
            let c = c.as_ref();
            start -= c.len();
            self.b[start..start + c.len()].copy_from_slice(c);
            put_u16(self.b, HEADER_LEN + SLOT * i, start as u16);
        }
        assert!(
            HEADER_LEN + SLOT * cells.len() <= start,
            "cells overflow the page"
        );
        put_u16(self.b, OFF_NSLOTS, cells.len() as u16);
        put_u32(self.b, OFF_CELL_START, start as u32);
        put_u32(self.b, OFF_FRAG, 0);
        debug_assert!(
            self.view().sorted(),
            "B+tree node: keys sorted within a node — a rebuild was given {} cells out of order",
            cells.len()
        );
    }
}

/// The `value_len` field of a leaf cell holding `value`.
fn value_field(value: CellValue<'_>) -> u16 {
    let len = value.bytes.len();
    assert!(len < EXTERNAL as usize, "leaf value of {len} bytes");
    len as u16 | if value.external { EXTERNAL } else { 0 }
}

/// Writes the leaf cell for `(key, value)` into `c`, which has exactly its length.
fn write_leaf_cell(c: &mut [u8], key: &[u8], value: CellValue<'_>) {
    assert_eq!(c.len(), LEAF_CELL_HEADER + key.len() + value.bytes.len());
    c[0..2].copy_from_slice(&(key.len() as u16).to_le_bytes());
    c[2..4].copy_from_slice(&value_field(value).to_le_bytes());
    let (k, v) = c[LEAF_CELL_HEADER..].split_at_mut(key.len());
    k.copy_from_slice(key);
    v.copy_from_slice(value.bytes);
}

/// The bytes of a leaf cell.
#[cfg(test)]
pub(crate) fn leaf_cell(key: &[u8], value: CellValue<'_>) -> Vec<u8> {
    let mut c = vec![0; LEAF_CELL_HEADER + key.len() + value.bytes.len()];
    write_leaf_cell(&mut c, key, value);
    c
}

/// The bytes of an internal cell.
pub(crate) fn internal_cell(key: &[u8], child: PageId) -> Vec<u8> {
    let mut c = Vec::with_capacity(INTERNAL_CELL_HEADER + key.len());
    c.extend_from_slice(&(key.len() as u16).to_le_bytes());
    c.extend_from_slice(&child.0.to_le_bytes());
    c.extend_from_slice(key);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::validate;

    #[test]
    fn insert_remove_compact_keep_the_page_valid() {
        let mut b = vec![0u8; 1024];
        let mut n = NodeMut::format(&mut b, PageId(3), 0);
        let mut i = 0u32;
        loop {
            let key = format!("k{:05}", (i * 7919) % 10007);
            let Err(at) = n.view().search(key.as_bytes()) else {
                unreachable!()
            };
            if !n.fits(LEAF_CELL_HEADER + key.len() + 10) {
                break;
            }
            n.insert_leaf(at, key.as_bytes(), b"0123456789");
            i += 1;
        }
        assert!(i > 20, "only {i} cells fit in 1 KiB");
        let before = n.view().len();
        n.remove(before / 2);
        n.remove(0);
        assert_eq!(n.view().len(), before - 2);
        // Fragmented space is reused through compaction.
        n.insert_leaf(0, b"a", b"0123456789");
        assert_eq!(n.view().key(0), b"a");
        assert!(
            validate(&b, PageId(3)).is_ok(),
            "{:?}",
            validate(&b, PageId(3))
        );
    }

    #[test]
    fn child_for_routes_by_separator() {
        let mut b = vec![0u8; 1024];
        let mut n = NodeMut::format(&mut b, PageId(2), 1);
        n.set_link(PageId(10));
        n.insert_internal(0, b"m", PageId(11));
        n.insert_internal(1, b"t", PageId(12));
        let v = n.view();
        assert_eq!(v.child_for(b"a"), PageId(10));
        assert_eq!(v.child_for(b"m"), PageId(11));
        assert_eq!(v.child_for(b"s"), PageId(11));
        assert_eq!(v.child_for(b"z"), PageId(12));
        assert!(validate(&b, PageId(2)).is_ok());
    }

    /// The order of a node's keys is asserted where it changes (debug builds): a key put
    /// in the wrong slot panics at the insert, not at the next reader.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "keys sorted within a node")]
    fn a_key_inserted_out_of_order_panics() {
        let mut b = vec![0u8; 1024];
        let mut n = NodeMut::format(&mut b, PageId(3), 0);
        n.insert_leaf(0, b"b", b"1");
        n.insert_leaf(1, b"a", b"2"); // belongs in slot 0
    }

    /// As above, for a page rebuilt from cells (a split's halves, a compaction).
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "keys sorted within a node")]
    fn a_rebuild_from_cells_out_of_order_panics() {
        let mut b = vec![0u8; 1024];
        let mut n = NodeMut::format(&mut b, PageId(3), 0);
        let (a, z) = (
            leaf_cell(b"a", CellValue::inline(b"1")),
            leaf_cell(b"z", CellValue::inline(b"2")),
        );
        n.rebuild(&[z, a]);
    }
}
