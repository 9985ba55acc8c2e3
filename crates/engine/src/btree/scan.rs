//! Ordered range scans, one batch of entries at a time.

use crate::btree::TreeLatch;
use crate::db::Inner;
use crate::error::Result;
use crate::ids::PageId;
use std::ops::Bound;

/// Why a batch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchEnd {
    /// The range is exhausted.
    Done,
    /// The lock on this key was not free: wait for it (no latch held), then resume here.
    Blocked(Vec<u8>),
    /// The batch is full: resume after this key.
    More(Vec<u8>),
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

/// Reads up to `max` entries of `[from, to)` in key order from the tree at `root`,
/// calling `try_lock` on each key under the leaf's S latch (it must not block). Holds the
/// tree latch shared for the batch, so leaves do not split under it and the leaf chain
/// can be followed without re-descending.
pub(crate) fn scan_batch(
    inner: &Inner,
    latch: &TreeLatch,
    root: PageId,
    from: Bound<&[u8]>,
    to: Bound<&[u8]>,
    max: usize,
    try_lock: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Batch> {
    assert!(max >= 1);
    let _shared = latch.read();
    let start = match from {
        Bound::Included(k) | Bound::Excluded(k) => k,
        Bound::Unbounded => &[],
    };
    let (_, mut leaf) = inner.descend(root, start)?;
    let mut entries = Vec::new();
    loop {
        let next = {
            let g = leaf.read_valid()?;
            let n = Inner::node_of(&g, leaf.id())?;
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
                    return Ok(Batch {
                        entries,
                        end: BatchEnd::Done,
                    });
                }
                if entries.len() >= max {
                    let last = entries.last().map(|e: &(Vec<u8>, Vec<u8>)| e.0.clone());
                    return Ok(Batch {
                        entries,
                        end: BatchEnd::More(last.expect("max >= 1")),
                    });
                }
                if !try_lock(key) {
                    return Ok(Batch {
                        entries,
                        end: BatchEnd::Blocked(key.to_vec()),
                    });
                }
                entries.push((key.to_vec(), n.value(i).to_vec()));
            }
            n.link()
        };
        if !next.is_some() {
            return Ok(Batch {
                entries,
                end: BatchEnd::Done,
            });
        }
        leaf = inner.pool.fetch(next)?;
    }
}
