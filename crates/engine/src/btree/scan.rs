//! Ordered range scans, one batch of entries at a time, under key-range locks.
//!
//! Every key found in the range is locked record S + gap S (the key and the gap below
//! it), and when the range ends, so is the first key beyond it (or gap S on the table's
//! end): together these cover every key the range could ever hold, so no insert or
//! delete can change what the scan saw until the scanner ends (no phantoms, no skipped
//! uncommitted deletes). The record part on the key beyond the range is InnoDB's
//! next-key lock: that key bounds the last gap, so it must not be deleted, nor be an
//! uncommitted insert whose rollback would remove it, while the scanner relies on it.
//!
//! Each lock is tried under the latch of the leaf holding the key, *and* under the
//! latches of every leaf between the previous locked name and it (latch coupling to the
//! right, the order inserters use too). Without that, an insert into the tail of a leaf
//! the scan has just left could take its gap lock on the next leaf's first key, insert
//! and commit before the scan locks that key: the scan would then miss a committed
//! insert while seeing that transaction's later writes. Nothing merges empty leaves, so
//! the run between two keys can be longer than the buffer pool: past
//! [`MAX_COUPLED`] coupled leaves the batch is read again with the tree latch exclusive,
//! when no insert can be under way in the tree and no leaf needs to stay latched
//! (inserts walking to their next key do the same, `write.rs`). When a lock is not free the
//! batch ends there; the caller waits for it with no latch held and resumes just after
//! the last key it read — not at the blocked key: something may have been inserted into
//! the gap below it meanwhile, and only what is re-read is protected.

use crate::btree::write::MAX_COUPLED;

use crate::btree::Btree;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::lock::{LockMode, LockName};
use crate::page::StoredValue;
use std::ops::Bound;

/// Try-locks a mode on a key (`None`: the table's end) without waiting; the name to
/// wait for if it is not free.
pub(crate) type ScanLocker<'a> = dyn FnMut(Option<&[u8]>, LockMode) -> Result<(), LockName> + 'a;

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
    pub(crate) entries: Vec<(Vec<u8>, StoredValue)>,
    pub(crate) end: BatchEnd,
}

pub(super) fn below_upper(key: &[u8], to: Bound<&[u8]>) -> bool {
    match to {
        Bound::Included(t) => key <= t,
        Bound::Excluded(t) => key < t,
        Bound::Unbounded => true,
    }
}

pub(super) fn above_lower(key: &[u8], from: Bound<&[u8]>) -> bool {
    match from {
        Bound::Included(f) => key >= f,
        Bound::Excluded(f) => key > f,
        Bound::Unbounded => true,
    }
}

/// Reads up to `max` entries of the range in key order from the tree at `root`,
/// calling `try_lock` (which must not block) under leaf latches (module docs):
/// [`LockMode::SCANNED`] for each key in range and for the first key beyond it, or
/// [`LockMode::GAP_S`] on the table's end (`None`). Holds the tree latch shared for the batch, so
/// leaves do not split under it and the leaf chain can be followed without re-descending.
pub(crate) fn scan_batch(
    tree: &Btree<'_>,
    from: Bound<&[u8]>,
    to: Bound<&[u8]>,
    max: usize,
    try_lock: &mut ScanLocker<'_>,
) -> Result<Batch> {
    assert!(max >= 1);
    let (latch, root) = (tree.latch, tree.root);
    {
        let _shared = latch.read();
        if let Some(batch) = read_batch(tree, root, from, to, max, try_lock, false)? {
            return Ok(batch);
        }
    }
    // A run of more than MAX_COUPLED empty leaves: with the tree latch exclusive no
    // insert can enter the gap being walked, so no leaf needs to stay latched.
    let _exclusive = latch.write();
    Ok(read_batch(tree, root, from, to, max, try_lock, true)?
        .expect("an exclusive walk has no bound"))
}

/// One batch (see [`scan_batch`]) with the tree latch held, shared or `exclusive`;
/// `None` if, shared, it would have to couple more than [`MAX_COUPLED`] leaves, or wait
/// for a frame while holding them.
fn read_batch(
    tree: &Btree<'_>,
    root: PageId,
    from: Bound<&[u8]>,
    to: Bound<&[u8]>,
    max: usize,
    try_lock: &mut ScanLocker<'_>,
    exclusive: bool,
) -> Result<Option<Batch>> {
    let start = match from {
        Bound::Included(k) | Bound::Excluded(k) => k,
        Bound::Unbounded => &[],
    };
    let store = tree.store;
    let mut leaf = tree.leaf_for(root, start)?;
    let mut entries = Vec::new();
    // Leaves latched since the last name locked: the gap up to the next name to lock
    // lies in them. Guards come first in each pair so they drop before the pins.
    let mut coupled = Vec::new();
    loop {
        let g = leaf.read_valid()?;
        let next = {
            let n = Btree::node_of(&g, leaf.id())?;
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
                    // The range ends below this key: lock the gap up to it, and the key
                    // too (InnoDB's next-key lock): deleting it would merge the gap
                    // into the next one, and if it is an uncommitted insert, its
                    // lock-free rollback would — so both must wait for the scanner.
                    let end = match try_lock(Some(key), LockMode::SCANNED) {
                        Ok(()) => BatchEnd::Done,
                        Err(name) => BatchEnd::Blocked(name, LockMode::SCANNED),
                    };
                    return Ok(Some(Batch { entries, end }));
                }
                if entries.len() >= max {
                    return Ok(Some(Batch {
                        entries,
                        end: BatchEnd::More,
                    }));
                }
                if let Err(name) = try_lock(Some(key), LockMode::SCANNED) {
                    return Ok(Some(Batch {
                        entries,
                        end: BatchEnd::Blocked(name, LockMode::SCANNED),
                    }));
                }
                // The gap below this key is locked: the leaves before it can go.
                coupled.clear();
                entries.push((key.to_vec(), n.cell_value(i).to_owned()));
            }
            n.link()
        };
        if !exclusive {
            if coupled.len() > MAX_COUPLED {
                return Ok(None);
            }
            coupled.push((g, leaf));
        }
        if !next.is_some() {
            // No key beyond the range: lock the gap up to the end of the table, still
            // holding the leaves after the last locked key.
            let end = match try_lock(None, LockMode::GAP_S) {
                Ok(()) => BatchEnd::Done,
                Err(name) => BatchEnd::Blocked(name, LockMode::GAP_S),
            };
            return Ok(Some(Batch { entries, end }));
        }
        // Shared, the batch holds the leaves coupled behind it: it must not wait for a
        // frame while holding them (`BufferPool::try_fetch`); a full pool sends it to
        // the exclusive walk, which holds one leaf at a time.
        leaf = if exclusive {
            store.pool.fetch(next)?
        } else {
            match store.pool.try_fetch(next)? {
                Some(l) => l,
                None => return Ok(None),
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TxnId;
    use crate::lock::LockKey;
    use crate::{Database, Options};
    use sluice_storage::SimStorage;
    use std::collections::HashSet;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// Pins the latch coupling (module docs): between leaving a leaf
    /// and locking the next leaf's first key, an insert into the tail of the leaf just
    /// left must not be able to complete. The scan's lock callback, called for that first
    /// key, lets a concurrent insert run; with coupling the insert cannot even latch the
    /// leaf, without it the insert commits in that window and the scan misses it.
    #[test]
    fn an_insert_behind_the_scan_cannot_commit_before_the_next_leaf_is_locked() {
        let mut o = Options::small();
        o.lock_timeout = Duration::from_secs(10);
        let db = Database::open_on(Arc::new(SimStorage::new(7)), "/db", o).unwrap();
        let t = db.create_table("t").unwrap();
        let mut tx = db.begin();
        for i in 0..100 {
            tx.put(&t, format!("k{i:03}").as_bytes(), [7u8; 20])
                .unwrap();
        }
        tx.commit().unwrap();
        // The first two leaves: the last key of the first and the first of the second.
        let inner = &db.inner;
        let tree = Btree::new(&inner.store, t.root, &t.latch);
        let (last, first) = {
            let _shared = t.latch.read();
            let (_, leaf) = tree.descend(t.root, b"").unwrap();
            let g = leaf.read_valid().unwrap();
            let n = Btree::node_of(&g, leaf.id()).unwrap();
            let next = inner.store.pool.fetch(n.link()).unwrap();
            let g2 = next.read_valid().unwrap();
            let n2 = Btree::node_of(&g2, next.id()).unwrap();
            (n.key(n.len() - 1).to_vec(), n2.key(0).to_vec())
        };
        let mut x = last.clone();
        x.push(b'5'); // between the two leaves: it goes into the tail of the first
        assert!(last < x && x < first);

        let scanner = TxnId(u64::MAX - 1);
        let mut held = HashSet::new();
        let mut dep = None;
        let (done_tx, done) = mpsc::channel();
        let mut inserter = None;
        let mut committed_in_window = false;
        let mut try_lock = |key: Option<&[u8]>, mode: LockMode| {
            if key == Some(&first[..]) && inserter.is_none() {
                let (db2, t2, x2, done_tx) = (db.clone(), t.clone(), x.clone(), done_tx.clone());
                inserter = Some(std::thread::spawn(move || {
                    let mut tx = db2.begin();
                    tx.put(&t2, &x2, b"behind the scan").unwrap();
                    tx.commit().unwrap();
                    done_tx.send(()).unwrap();
                }));
                committed_in_window = done.recv_timeout(Duration::from_millis(300)).is_ok();
            }
            // Gap S on the end: every stripe.
            let names: Vec<LockName> = match key {
                Some(k) => vec![LockName::key(k)],
                None => LockName::end_stripes(scanner, mode)
                    .map(LockName::End)
                    .collect(),
            };
            for name in names {
                let k = LockKey {
                    table: t.root,
                    name,
                };
                if inner.locks.try_lock(scanner, &k, mode, &mut dep).is_none() {
                    return Err(k.name);
                }
                held.insert(k);
            }
            Ok(())
        };
        let batch = scan_batch(
            &tree,
            Bound::Unbounded,
            Bound::Unbounded,
            1000,
            &mut try_lock,
        )
        .unwrap();
        assert_eq!(batch.end, BatchEnd::Done);
        let seen = batch.entries.iter().any(|(k, _)| *k == x);
        assert!(
            !committed_in_window || seen,
            "an insert committed behind the scan before it locked the next leaf, and the scan missed it"
        );
        inner
            .locks
            .release(scanner, &held, None, inner.store.log.durable_lsn());
        inserter.expect("the callback ran").join().unwrap();
    }
}
