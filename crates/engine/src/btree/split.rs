//! Splits: redo-only structure changes, each logged as one record of page images.

use crate::btree::page_op::fits;
use crate::btree::Btree;
use crate::btree::MAX_DEPTH;
use crate::buffer_pool::{PageRef, PageWrite};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::Record;
use crate::page::node::{INTERNAL_CELL_HEADER, SLOT};
use crate::page::{compress, Node, NodeMut};

impl Btree<'_> {
    /// With the space gate held shared and then the tree latch exclusively (in that
    /// order: `Store::space_gate`): splits nodes on the path to `key` until its leaf can
    /// take `new`; returns that leaf, pinned.
    pub(crate) fn make_room(
        &self,
        root: PageId,
        key: &[u8],
        new: Option<&[u8]>,
    ) -> Result<PageRef<'_>> {
        // A separator of the largest key must fit every internal node on the path, so
        // that the split below it can always post its separator.
        let need = INTERNAL_CELL_HEADER + self.store.limits.max_key + SLOT;
        for _ in 0..2 * MAX_DEPTH + 2 {
            let (path, leaf) = self.descend(root, key)?;
            let mut split_at = None;
            // The key goes to the level's first leaf: the leftmost child at every level.
            let mut leftmost = true;
            for (depth, &id) in path[..path.len() - 1].iter().enumerate() {
                let p = self.store.pool.fetch(id)?;
                let g = p.read_valid()?;
                let n = Self::node_of(&g, id)?;
                if n.free_space() < need {
                    split_at = Some(depth);
                    break;
                }
                leftmost &= n.search(key) == Err(0);
            }
            let (depth, how) = match split_at {
                Some(d) => (d, Split::Middle),
                None => {
                    let g = leaf.read_valid()?;
                    let n = Self::node_of(&g, leaf.id())?;
                    let old = n.search(key).ok().map(|i| n.value(i));
                    if fits(&n, key, old, new) {
                        drop(g);
                        return Ok(leaf);
                    }
                    (path.len() - 1, leaf_split(&n, key, self.runs, leftmost))
                }
            };
            drop(leaf);
            if depth == 0 {
                self.split_root(root, how)?;
            } else {
                self.split_child(path[depth - 1], path[depth], how)?;
            }
        }
        Err(Error::Corruption(format!(
            "tree {root}: no room for a key after {} splits",
            2 * MAX_DEPTH + 2
        )))
    }

    /// Splits non-root node `child` of `parent` where `how` says (see [`Split`]); the
    /// new sibling takes the upper part.
    fn split_child(&self, parent: PageId, child: PageId, how: Split<'_>) -> Result<()> {
        let pp = self.store.pool.fetch(parent)?;
        let cp = self.store.pool.fetch(child)?;
        let mp = self.store.pool.fetch(PageId::META)?;
        let mut pw = pp.write_valid()?;
        let mut cw = cp.write_valid()?;
        let mut mw = mp.write_valid()?;
        let mut meta = mw.bytes().to_vec();
        let (ids, mut list) = crate::space::take(self.store, &mut meta, 1)?;
        let sib_id = ids[0];
        let sp = self.store.pool.fetch(sib_id)?;
        let mut sw = sp.write();

        let mut left = cw.bytes().to_vec();
        let mut sib = vec![0u8; left.len()];
        let sep = {
            let n = Self::node_of(&left, child)?;
            let (m, sep) = split_point(&n, child, how)?;
            let cells: Vec<Vec<u8>> = (0..n.len()).map(|i| n.cell(i).to_vec()).collect();
            let mut s = NodeMut::format(&mut sib, sib_id, n.level());
            let leaf = n.is_leaf();
            if leaf {
                s.set_link(n.link());
                s.rebuild(&cells[m..]);
            } else {
                s.set_link(n.child(m));
                s.rebuild(&cells[m + 1..]);
            }
            let mut l = NodeMut::new(&mut left);
            l.truncate(m);
            if leaf {
                l.set_link(sib_id);
            }
            debug_assert_split(&l.view(), &sep, &s.view(), cells.len());
            sep
        };
        let mut par = pw.bytes().to_vec();
        {
            let mut p = NodeMut::new(&mut par);
            let Err(i) = p.view().search(&sep) else {
                return Err(Error::Corruption(format!(
                    "separator of {child} already in parent {parent}"
                )));
            };
            assert!(
                p.fits(INTERNAL_CELL_HEADER + sep.len()),
                "parent {parent} was checked to have room"
            );
            p.insert_internal(i, &sep, sib_id);
        }
        let mut pages = vec![
            (&mut cw, left),
            (&mut sw, sib),
            (&mut pw, par),
            (&mut mw, meta),
        ];
        if let Some((w, img)) = list.as_mut() {
            pages.push((w, std::mem::take(img)));
        }
        self.log_split(&mut pages)
    }

    /// Splits the root in place: its cells move to two new children and it becomes
    /// their parent, one level higher, so a table's root page never changes. `how`: as
    /// for [`Btree::split_child`].
    fn split_root(&self, root: PageId, how: Split<'_>) -> Result<()> {
        let rp = self.store.pool.fetch(root)?;
        let mp = self.store.pool.fetch(PageId::META)?;
        let mut rw = rp.write_valid()?;
        let mut mw = mp.write_valid()?;
        let mut meta = mw.bytes().to_vec();
        let (ids, mut list) = crate::space::take(self.store, &mut meta, 2)?;
        let (lid, rid) = (ids[0], ids[1]);
        let lp = self.store.pool.fetch(lid)?;
        let qp = self.store.pool.fetch(rid)?;
        let mut lw = lp.write();
        let mut qw = qp.write();

        let size = rw.bytes().len();
        let (mut lbuf, mut rbuf, mut top) = (vec![0u8; size], vec![0u8; size], vec![0u8; size]);
        {
            let n = Self::node_of(rw.bytes(), root)?;
            let level = n.level();
            if level as usize + 1 >= MAX_DEPTH {
                return Err(Error::Corruption(format!("tree {root} too deep to split")));
            }
            let (m, sep) = split_point(&n, root, how)?;
            let cells: Vec<Vec<u8>> = (0..n.len()).map(|i| n.cell(i).to_vec()).collect();
            let mut l = NodeMut::format(&mut lbuf, lid, level);
            let mut r = NodeMut::format(&mut rbuf, rid, level);
            l.rebuild(&cells[..m]);
            if n.is_leaf() {
                l.set_link(rid);
                r.set_link(n.link());
                r.rebuild(&cells[m..]);
            } else {
                l.set_link(n.link());
                r.set_link(n.child(m));
                r.rebuild(&cells[m + 1..]);
            }
            debug_assert_split(&l.view(), &sep, &r.view(), cells.len());
            let mut t = NodeMut::format(&mut top, root, level + 1);
            t.set_link(lid);
            t.insert_internal(0, &sep, rid);
        }
        let mut pages = vec![
            (&mut rw, top),
            (&mut lw, lbuf),
            (&mut qw, rbuf),
            (&mut mw, meta),
        ];
        if let Some((w, img)) = list.as_mut() {
            pages.push((w, std::mem::take(img)));
        }
        self.log_split(&mut pages)
    }

    /// Logs the after-images of a split in one record, then installs and stamps them.
    /// Nothing touches a frame before the record is in the log: if the append fails, the
    /// pages are as they were.
    fn log_split(&self, pages: &mut [(&mut PageWrite<'_>, Vec<u8>)]) -> Result<()> {
        for (w, img) in pages.iter() {
            debug_assert_eq!(crate::page::validate(img, w.id()).map(|_| ()), Ok(()));
        }
        let rec = Record::Images {
            pages: pages
                .iter()
                .map(|(w, img)| (w.id(), compress(img)))
                .collect(),
        };
        let a = self.store.append(&rec)?;
        #[cfg(test)]
        if let Some(hook) = self.store.after_split_logged.lock().take() {
            hook();
        }
        for (w, img) in pages.iter_mut() {
            // The image LSN goes into the bytes before they are installed (`install`
            // takes the frame's image LSN from them). Stamped after, a checkpoint reading
            // the frame in between saw the LSN the bytes were built with — 0 for a new
            // page, the page's previous image otherwise — and recorded the page dirty
            // from there; while the log still began at LSN 0 that pinned every
            // checkpoint's truncation point at 0, and under many concurrent splits the
            // log was never truncated.
            crate::page::set_image_lsn(img, a.lsn.0);
            w.install(img);
            w.mark_dirty(a.lsn, a.end);
        }
        Ok(())
    }
}

/// The separator's bounds after a split of a node of `cells` cells into `left` and
/// `right` (debug builds: the insert path's): every key of `left` is below `sep`, every
/// key of `right` at or above it (a leaf's right half starts with it, an internal node's
/// just above it, the separator having moved up), and no cell was lost or doubled. The
/// halves' own order is asserted where they are built (`NodeMut::rebuild`).
fn debug_assert_split(left: &Node<'_>, sep: &[u8], right: &Node<'_>, cells: usize) {
    debug_assert!(
        left.is_empty() || left.key(left.len() - 1) < sep,
        "B+tree split: separator bounds — the left half's last key is not below the separator"
    );
    debug_assert!(
        right.is_empty() || right.key(0) > sep || (right.is_leaf() && right.key(0) == sep),
        "B+tree split: separator bounds — the right half's first key is below the separator"
    );
    let moved_up = usize::from(!right.is_leaf());
    debug_assert_eq!(
        left.len() + right.len() + moved_up,
        cells,
        "B+tree split: the halves do not hold the node's cells"
    );
}

/// How a full node splits.
#[derive(Clone, Copy)]
enum Split<'k> {
    /// In the middle by bytes ([`split_index`]).
    Middle,
    /// A key above every key of a leaf in a tree of ascending runs (a large value's
    /// chunks): every cell stays and the new sibling starts empty, separated at the key.
    Append(&'k [u8]),
    /// A key above every key of the level's last leaf (ascending inserts): the leaf keeps
    /// [`FILL`] of its space, the rest and the key go to the new sibling.
    Ascending(&'k [u8]),
    /// A key below every key of the level's first leaf (descending inserts): the new
    /// sibling takes [`FILL`] of a page from the top, the leaf keeps the rest and the key.
    Descending,
}

/// The share of a page that a split at an end of the leaf level leaves filled at least
/// (up to the cell that crosses it), as InnoDB's 15/16: full pages, with some room for
/// values that grow in place (a full leaf would split again at its first growing update).
const FILL: (usize, usize) = (15, 16);

/// How the leaf `n`, full, splits for `key`: at the level's ends (the last leaf, or with
/// `leftmost` the first) the half that stays behind sequential inserts is kept full,
/// as InnoDB and SQLite do; anywhere else in the middle (random inserts, which a
/// lopsided split would not help), except in a tree of ascending runs (`runs`).
fn leaf_split<'k>(n: &Node<'_>, key: &'k [u8], runs: bool, leftmost: bool) -> Split<'k> {
    let len = n.len();
    if len == 0 {
        return Split::Middle;
    }
    if key > n.key(len - 1) {
        if runs {
            return Split::Append(key);
        }
        if !n.link().is_some() {
            return Split::Ascending(key);
        }
    }
    if leftmost && key < n.key(0) {
        return Split::Descending;
    }
    Split::Middle
}

/// Where to split a node and its separator (see [`Split`]).
fn split_point(n: &Node<'_>, id: PageId, how: Split<'_>) -> Result<(usize, Vec<u8>)> {
    if !n.is_leaf() {
        let m = split_index(n, id)?;
        return Ok((m, n.key(m).to_vec()));
    }
    let len = n.len();
    // A cell's bytes in the page: the cell and its slot.
    let size = |i: usize| n.cell(i).len() + SLOT;
    let capacity = n.free_space() + (0..len).map(size).sum::<usize>();
    let target = capacity * FILL.0 / FILL.1;
    match how {
        Split::Middle => {
            let m = split_index(n, id)?;
            Ok((m, n.key(m).to_vec()))
        }
        Split::Append(key) => Ok((len, key.to_vec())),
        Split::Ascending(key) => {
            // The shortest prefix that reaches the target (keeping the cell that crosses
            // it: with small pages one cell is several percent); all cells if they do
            // not reach it.
            let mut used = 0;
            let mut m = 0;
            while m < len && used < target {
                used += size(m);
                m += 1;
            }
            if m == len {
                Ok((len, key.to_vec()))
            } else {
                Ok((m, n.key(m).to_vec()))
            }
        }
        Split::Descending => {
            // As for `Ascending`, from the top.
            let (mut used, mut m) = (0, len);
            while m > 0 && used < target {
                used += size(m - 1);
                m -= 1;
            }
            Ok((m, n.key(m).to_vec()))
        }
    }
}

/// Where to split a node: the first cell at which the left part holds half the bytes.
/// A leaf keeps at least one cell on each side; an internal node promotes cell `m`.
fn split_index(n: &Node<'_>, id: PageId) -> Result<usize> {
    let count = n.len();
    let min = if n.is_leaf() { 2 } else { 1 };
    if count < min {
        return Err(Error::Corruption(format!(
            "node {id} with {count} cells cannot split"
        )));
    }
    let total: usize = (0..count).map(|i| n.cell(i).len()).sum();
    let mut acc = 0;
    let mut m = count / 2;
    for i in 0..count {
        acc += n.cell(i).len();
        if 2 * acc >= total {
            m = i + 1;
            break;
        }
    }
    Ok(if n.is_leaf() {
        m.clamp(1, count - 1)
    } else {
        m.min(count - 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leaf of `keys`, one-byte values.
    fn leaf(keys: &[&[u8]]) -> Vec<u8> {
        let mut b = vec![0u8; 1024];
        let mut n = NodeMut::format(&mut b, PageId(9), 0);
        for (i, k) in keys.iter().enumerate() {
            n.insert_leaf(i, k, b"v");
        }
        b
    }

    #[test]
    fn a_split_at_its_own_separator_keeps_the_bounds() {
        let (l, r) = (leaf(&[b"a", b"b"]), leaf(&[b"c", b"d"]));
        debug_assert_split(&Node::new(&l), b"c", &Node::new(&r), 4);
        let empty = leaf(&[]);
        debug_assert_split(&Node::new(&r), b"e", &Node::new(&empty), 2); // an append
    }

    /// The check can fail: a separator below a key of the left half would route that
    /// key's readers to the right half, where it is not.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "separator bounds")]
    fn a_separator_below_the_left_half_panics() {
        let (l, r) = (leaf(&[b"a", b"m"]), leaf(&[b"n", b"z"]));
        debug_assert_split(&Node::new(&l), b"k", &Node::new(&r), 4);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "separator bounds")]
    fn a_separator_above_the_right_half_panics() {
        let (l, r) = (leaf(&[b"a", b"b"]), leaf(&[b"m", b"z"]));
        debug_assert_split(&Node::new(&l), b"n", &Node::new(&r), 4);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "do not hold the node's cells")]
    fn a_split_that_loses_a_cell_panics() {
        let (l, r) = (leaf(&[b"a", b"b"]), leaf(&[b"c", b"d"]));
        debug_assert_split(&Node::new(&l), b"c", &Node::new(&r), 5);
    }
}
