//! Checking a whole tree: levels, key order across pages, separators, the leaf chain.

use crate::btree::Btree;
use crate::btree::MAX_DEPTH;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::page::node::SLOT;
use crate::store::Store;

/// What a verified tree holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeReport {
    /// Entries (key/value pairs).
    pub entries: u64,
    /// Pages (leaves and internal nodes).
    pub pages: u64,
    /// Levels (1 for a lone leaf).
    pub depth: u32,
    /// Leaf pages.
    pub leaves: u64,
    /// Bytes the leaves' cells and slots take.
    pub leaf_bytes: u64,
    /// Bytes the leaves could hold (each page less its header).
    pub leaf_capacity: u64,
}

impl TreeReport {
    /// The share of the leaves' space that holds entries, 0 to 1 (0 for no leaves).
    pub fn leaf_fill(&self) -> f64 {
        if self.leaf_capacity == 0 {
            0.0
        } else {
            self.leaf_bytes as f64 / self.leaf_capacity as f64
        }
    }
}

struct Walk {
    report: TreeReport,
    leaves: Vec<(PageId, PageId)>,
}

/// Walks the tree at `root` under its shared latch and checks every invariant.
pub(crate) fn verify_tree(tree: &Btree<'_>) -> Result<TreeReport> {
    let _shared = tree.latch.read();
    check_tree(tree)
}

/// [`verify_tree`] under the latch held exclusively (no change in flight), checking
/// too that the tree's entry count, if known, is the number of entries walked
/// (`tree_count`).
pub(crate) fn verify_tree_and_count(tree: &Btree<'_>) -> Result<TreeReport> {
    let _exclusive = tree.latch.write();
    let report = check_tree(tree)?;
    if let Some(n) = tree.latch.known_entries() {
        if n != report.entries {
            return Err(Error::Corruption(format!(
                "tree {}: its entry count is {n} but its leaves hold {} entries",
                tree.root, report.entries
            )));
        }
    }
    Ok(report)
}

fn check_tree(tree: &Btree<'_>) -> Result<TreeReport> {
    let (store, root) = (tree.store, tree.root);
    let mut w = Walk {
        report: TreeReport::default(),
        leaves: Vec::new(),
    };
    let depth = walk(store, &mut w, root, None, None, None, 0)?;
    w.report.depth = depth;
    for pair in w.leaves.windows(2) {
        if pair[0].1 != pair[1].0 {
            return Err(Error::Corruption(format!(
                "tree {root}: leaf {} links to {} but the next leaf is {}",
                pair[0].0, pair[0].1, pair[1].0
            )));
        }
    }
    if let Some(last) = w.leaves.last() {
        if last.1.is_some() {
            return Err(Error::Corruption(format!(
                "tree {root}: last leaf {} links to {}",
                last.0, last.1
            )));
        }
    }
    Ok(w.report)
}

fn walk(
    store: &Store,
    w: &mut Walk,
    id: PageId,
    level: Option<u8>,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    depth: usize,
) -> Result<u32> {
    if depth > MAX_DEPTH {
        return Err(Error::Corruption(format!(
            "page {id} deeper than {MAX_DEPTH}"
        )));
    }
    let p = store.pool.fetch(id)?;
    let g = p.read_valid()?;
    let n = Btree::node_of(&g, id)?;
    if level.is_some_and(|l| l != n.level()) {
        return Err(Error::Corruption(format!("page {id} at the wrong level")));
    }
    w.report.pages += 1;
    for i in 0..n.len() {
        let k = n.key(i);
        if lo.is_some_and(|lo| k < lo) || hi.is_some_and(|hi| k >= hi) {
            return Err(Error::Corruption(format!(
                "page {id}: key {i} outside its parent's range"
            )));
        }
    }
    if n.is_leaf() {
        let used: usize = (0..n.len()).map(|i| n.cell(i).len() + SLOT).sum();
        w.report.entries += n.len() as u64;
        w.report.leaves += 1;
        w.report.leaf_bytes += used as u64;
        w.report.leaf_capacity += (used + n.free_space()) as u64;
        w.leaves.push((id, n.link()));
        return Ok(1);
    }
    let below = n.level() - 1;
    let mut children = vec![(n.link(), lo.map(<[u8]>::to_vec), None)];
    for i in 0..n.len() {
        let k = n.key(i).to_vec();
        children.last_mut().expect("one child at least").2 = Some(k.clone());
        children.push((n.child(i), Some(k), None));
    }
    children.last_mut().expect("one child at least").2 = hi.map(<[u8]>::to_vec);
    drop(g);
    drop(p);
    let mut d = 0;
    for (child, clo, chi) in children {
        d = walk(
            store,
            w,
            child,
            Some(below),
            clo.as_deref(),
            chi.as_deref(),
            depth + 1,
        )?;
    }
    Ok(d + 1)
}
