//! Ordered range scans, one batch of entries at a time, under key-range locks.
//!
//! Every key found in the range is locked record S + gap S (the key and the gap below
//! it), and when the range ends, the first key beyond it (or the table's end) is locked
//! gap S: together these cover every key the range could ever hold, so no insert or
//! delete can change what the scan saw until the scanner ends (no phantoms, no skipped
//! uncommitted deletes).
//!
//! Each lock is tried under the latch of the leaf holding the key, *and* under the
//! latches of every leaf between the previous locked name and it (latch coupling to the
//! right, the order inserters use too). Without that, an insert into the tail of a leaf
//! the scan has just left could take its gap lock on the next leaf's first key, insert
//! and commit before the scan locks that key: the scan would then miss a committed
//! insert while seeing that transaction's later writes. When a lock is not free the
//! batch ends there; the caller waits for it with no latch held and resumes just after
//! the last key it read — not at the blocked key: something may have been inserted into
//! the gap below it meanwhile, and only what is re-read is protected.

use crate::btree::TreeLatch;
use crate::db::Inner;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::lock::{LockMode, LockName};
use std::ops::Bound;

/// Why a batch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchEnd {
    /// The range is exhausted (and the gap after it locked).
    Done,
    /// This lock was not free: wait for it (no latch held), then resume after the last
    /// entry read.
    Blocked(LockName, LockMode),
    /// The batch is full: resume after its last entry.
    More,
}

/// Entries in key order and where to go on.
pub(crate) struct Batch {
    pub(crate) entries: Vec<(Vec<u8>, Vec<u8>)>,
    pub(crate) end: BatchEnd,
}

fn below_upper(key: &[u8], to: Bound<&[u8]>) -> bool {
    match to {
        Bound::Included(t) => key <= t,
        Bound::Excluded(t) => key < t,
        Bound::Unbounded => true,
    }
}

fn above_lower(key: &[u8], from: Bound<&[u8]>) -> bool {
    match from {
        Bound::Included(f) => key >= f,
        Bound::Excluded(f) => key > f,
        Bound::Unbounded => true,
    }
}

/// Reads up to `max` entries of the range in key order from the tree at `root`,
/// calling `try_lock` (which must not block) under leaf latches (module docs):
/// [`LockMode::SCANNED`] for each key in range, [`LockMode::GAP_S`] for the first key
/// beyond the range or the table's end (`None`). Holds the tree latch shared for the batch, so
/// leaves do not split under it and the leaf chain can be followed without re-descending.
pub(crate) fn scan_batch(
    inner: &Inner,
    latch: &TreeLatch,
    root: PageId,
    from: Bound<&[u8]>,
    to: Bound<&[u8]>,
    max: usize,
    try_lock: &mut dyn FnMut(Option<&[u8]>, LockMode) -> bool,
) -> Result<Batch> {
    assert!(max >= 1);
    let _shared = latch.read();
    let start = match from {
        Bound::Included(k) | Bound::Excluded(k) => k,
        Bound::Unbounded => &[],
    };
    let (_, mut leaf) = inner.descend(root, start)?;
    let mut entries = Vec::new();
    // Leaves latched since the last name locked: the gap up to the next name to lock
    // lies in them. Guards come first in each pair so they drop before the pins.
    let mut coupled = Vec::new();
    loop {
        let g = leaf.read_valid()?;
        let next = {
            let n = Inner::node_of(&g, leaf.id())?;
            if !n.is_leaf() {
                return Err(Error::Corruption(format!(
                    "tree {root}: leaf chain reaches non-leaf {}",
                    leaf.id()
                )));
            }
            let first = match from {
                Bound::Unbounded => 0,
                Bound::Included(k) | Bound::Excluded(k) => n.search(k).unwrap_or_else(|i| i),
            };
            for i in first..n.len() {
                let key = n.key(i);
                if !above_lower(key, from) {
                    continue;
                }
                if !below_upper(key, to) {
                    // The range ends below this key: lock the gap up to it.
                    let end = if try_lock(Some(key), LockMode::GAP_S) {
                        BatchEnd::Done
                    } else {
                        BatchEnd::Blocked(LockName::Key(key.to_vec()), LockMode::GAP_S)
                    };
                    return Ok(Batch { entries, end });
                }
                if entries.len() >= max {
                    return Ok(Batch {
                        entries,
                        end: BatchEnd::More,
                    });
                }
                if !try_lock(Some(key), LockMode::SCANNED) {
                    return Ok(Batch {
                        entries,
                        end: BatchEnd::Blocked(LockName::Key(key.to_vec()), LockMode::SCANNED),
                    });
                }
                // The gap below this key is locked: the leaves before it can go.
                coupled.clear();
                entries.push((key.to_vec(), n.value(i).to_vec()));
            }
            n.link()
        };
        coupled.push((g, leaf));
        if !next.is_some() {
            // No key beyond the range: lock the gap up to the end of the table, still
            // holding the leaves after the last locked key.
            let end = if try_lock(None, LockMode::GAP_S) {
                BatchEnd::Done
            } else {
                BatchEnd::Blocked(LockName::End, LockMode::GAP_S)
            };
            return Ok(Batch { entries, end });
        }
        leaf = inner.pool.fetch(next)?;
    }
}
