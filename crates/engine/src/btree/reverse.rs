//! Reverse range scans: one batch of entries in descending key order, under the same
//! key-range locks as a forward scan (`scan.rs`).
//!
//! Leaves link only to the right, so the walk goes left by descending again: every
//! descent records the leaf's *lower fence* (the separator on the path just left of it,
//! none for the leftmost leaf), and the leaf before it is the one that holds the keys
//! just below that fence. A back link would have to be kept right by every split (two
//! more pages in each split record, and redo of them); a descent costs O(log n) pages
//! per leaf, almost all of them already in the pool.
//!
//! Locking. A reverse batch locks exactly the names a forward scan of the same range
//! locks — the first key beyond the upper end of the range [`LockMode::SCANNED`] (or
//! [`LockMode::GAP_S`] on the table's end), then every key of the range
//! [`LockMode::SCANNED`] — only top down: each key's gap part covers the gap below it,
//! so after the lowest key of the range its gap reaches below the range. The batch holds
//! the tree latch *exclusive*: an insert or delete takes its gap locks and changes its
//! leaf in one attempt under the tree latch shared (`write.rs`), so while a batch runs
//! none is half done, and every key and gap it locks is the tree's at that moment — the
//! argument of the forward scan's exclusive walk, with no leaf coupling to get right in
//! a direction the leaf chain does not go. The price: a reverse batch (at most `max`
//! entries) keeps other readers and writers of the same table out while it reads. When a
//! lock is not free the batch ends there; the caller waits with no latch held and
//! resumes just below the last key read.

use crate::btree::scan::{above_lower, below_upper, Batch, BatchEnd, ScanLocker};
use crate::btree::{Btree, MAX_DEPTH};
use crate::buffer_pool::PageRef;
use crate::error::{Error, Result};
use crate::lock::LockMode;
use std::ops::Bound;

/// Where a descent goes at each internal node.
#[derive(Clone, Copy)]
enum Probe<'k> {
    /// The leaf where `key` is or would go.
    At(&'k [u8]),
    /// The leaf holding the keys just below `key`.
    Below(&'k [u8]),
    /// The rightmost leaf.
    Last,
}

impl Btree<'_> {
    /// The leaf `probe` leads to, pinned, and its lower fence: every key of the leaf is
    /// at or above it, every key of the leaves before it below (`None`: the leftmost
    /// leaf). The caller holds the tree latch.
    fn descend_fenced(&self, probe: Probe<'_>) -> Result<(PageRef<'_>, Option<Vec<u8>>)> {
        let mut id = self.root;
        let mut fence: Option<Vec<u8>> = None;
        for _ in 0..MAX_DEPTH {
            let p = self.store.pool.fetch(id)?;
            {
                let g = p.read_valid()?;
                let n = Self::node_of(&g, id)?;
                if !n.is_leaf() {
                    // The number of separators at or below the probe: child(i - 1) holds
                    // the keys from separator i - 1 up; the link, those below the first.
                    let i = match probe {
                        Probe::At(k) => n.search(k).map_or_else(|i| i, |i| i + 1),
                        Probe::Below(k) => n.search(k).unwrap_or_else(|i| i),
                        Probe::Last => n.len(),
                    };
                    if i == 0 {
                        id = n.link();
                    } else {
                        id = n.child(i - 1);
                        fence = Some(n.key(i - 1).to_vec());
                    }
                    continue;
                }
            }
            return Ok((p, fence));
        }
        Err(Error::Corruption(format!(
            "tree {} deeper than {MAX_DEPTH}",
            self.root
        )))
    }

    /// The smallest key at or above `key` (above it if not `inclusive`), following the
    /// leaf chain over empty leaves; `None` at the table's end. The caller holds the
    /// tree latch exclusive.
    fn first_from(&self, key: &[u8], inclusive: bool) -> Result<Option<Vec<u8>>> {
        let mut leaf = self.leaf_for(self.root, key)?;
        loop {
            let next = {
                let g = leaf.read_valid()?;
                let n = Self::node_of(&g, leaf.id())?;
                let i = match n.search(key) {
                    Ok(i) if inclusive => i,
                    Ok(i) => i + 1,
                    Err(i) => i,
                };
                if i < n.len() {
                    return Ok(Some(n.key(i).to_vec()));
                }
                n.link()
            };
            if !next.is_some() {
                return Ok(None);
            }
            leaf = self.store.pool.fetch(next)?;
        }
    }
}

impl Btree<'_> {
    /// Reads up to `max` entries of `range` in descending key order, calling `try_lock`
    /// (which must not block) with the tree latch exclusive (module docs).
    pub(crate) fn scan_batch_rev(
        &self,
        (from, to): (Bound<&[u8]>, Bound<&[u8]>),
        max: usize,
        try_lock: &mut ScanLocker<'_>,
    ) -> Result<Batch> {
        assert!(max >= 1, "a batch of no entries");
        let tree = self;
        let _exclusive = tree.latch.write();
        let mut entries = Vec::new();
        // The name bounding the range from above, and the leaf to start in.
        let (beyond, start) = match to {
            Bound::Unbounded => (None, Probe::Last),
            Bound::Included(t) => (tree.first_from(t, false)?, Probe::At(t)),
            Bound::Excluded(t) => (tree.first_from(t, true)?, Probe::At(t)),
        };
        let mode = if beyond.is_some() {
            LockMode::SCANNED
        } else {
            LockMode::GAP_S
        };
        if let Err(name) = try_lock(beyond.as_deref(), mode) {
            return Ok(Batch {
                entries,
                end: BatchEnd::Blocked(name, mode),
            });
        }
        let (mut leaf, mut fence) = tree.descend_fenced(start)?;
        loop {
            {
                let g = leaf.read_valid()?;
                let n = Btree::node_of(&g, leaf.id())?;
                if !n.is_leaf() {
                    return Err(Error::Corruption(format!(
                        "tree {}: a descent ends at non-leaf {}",
                        tree.root,
                        leaf.id()
                    )));
                }
                for i in (0..n.len()).rev() {
                    let key = n.key(i);
                    if !below_upper(key, to) {
                        continue;
                    }
                    if !above_lower(key, from) {
                        // Below the range: the gap of the last key locked reaches here.
                        return Ok(Batch {
                            entries,
                            end: BatchEnd::Done,
                        });
                    }
                    if entries.len() >= max {
                        return Ok(Batch {
                            entries,
                            end: BatchEnd::More,
                        });
                    }
                    if let Err(name) = try_lock(Some(key), LockMode::SCANNED) {
                        return Ok(Batch {
                            entries,
                            end: BatchEnd::Blocked(name, LockMode::SCANNED),
                        });
                    }
                    entries.push((key.to_vec(), n.cell_value(i).to_owned()));
                }
            }
            // The leaves before this one hold only keys below its fence.
            let below_range = match (&fence, from) {
                (None, _) => true,
                (Some(f), Bound::Included(l) | Bound::Excluded(l)) => f.as_slice() <= l,
                (Some(_), Bound::Unbounded) => false,
            };
            if below_range {
                return Ok(Batch {
                    entries,
                    end: BatchEnd::Done,
                });
            }
            let f = fence.take().expect("checked above");
            (leaf, fence) = tree.descend_fenced(Probe::Below(&f))?;
        }
    }
}
