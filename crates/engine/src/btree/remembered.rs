//! A leaf remembered from a read for a change of the same key: `get_for_update` then
//! `put` (every TPC-B update) descends once, not twice.
//!
//! A read remembers the leaf it found (its page id), the tree's structure epoch at the
//! time ([`TreeLatch::epoch`](crate::tree_count::TreeLatch::epoch)) and the leaf's
//! PageLSN with the key's slot. The change then uses them under the same locks the
//! descent would take (the tree latch shared, the leaf X-latched):
//!
//! * **The leaf** is the key's leaf as long as the epoch is unchanged: which leaf holds
//!   which keys changes only under the tree latch held exclusively (a split, a
//!   compaction's cut-back, `btree` module docs; nothing merges leaves), and every
//!   exclusive hold starts a new epoch. Changes to the leaf's cells under the shared
//!   latch move keys within the leaf, never out of it. The PageLSN alone would not do:
//!   a cut-back frees the leaves of an emptied tree without writing them, so a freed
//!   leaf keeps its PageLSN. The leaf is fetched by page id, so an eviction in between
//!   costs a read, nothing else.
//! * **The slot** found by the read still holds if the leaf's PageLSN is unchanged:
//!   every change of a leaf's cells is stamped with the record that made it
//!   (`PageWrite::mark_dirty`), so the same PageLSN means the same bytes. Otherwise
//!   the key is searched for in the leaf again.
//!
//! Otherwise (another epoch) the change descends from the root, as without a read.
//! Either way the change logs and applies exactly what a descent would have found: the
//! same page id, the same slot, the same record.

use crate::btree::Btree;
use crate::buffer_pool::{PageRef, PageWrite};
use crate::error::Result;
use crate::ids::PageId;
use crate::page::{self, StoredValue};

/// Where a read found its key: a hint for a change of the same key in the same tree
/// ([`Btree::set_locking`]), checked before it is used (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RememberedLeaf {
    page: PageId,
    epoch: u64,
    page_lsn: u64,
    /// [`crate::page::Node::search`]'s answer for the key in that leaf.
    at: Result<usize, usize>,
}

impl RememberedLeaf {
    /// The key's slot in `w`, the remembered leaf X-latched again, if its cells are
    /// those the read searched (the same PageLSN).
    pub(super) fn slot_in(&self, w: &PageWrite<'_>) -> Option<Result<usize, usize>> {
        debug_assert_eq!(w.id(), self.page);
        (page::page_lsn(w.bytes()) == self.page_lsn).then_some(self.at)
    }
}

impl Btree<'_> {
    /// The value of `key` in the tree (the caller holds an S or X lock on it), and where
    /// it was found, for a change of the same key.
    pub(crate) fn get_remembering(
        &self,
        key: &[u8],
    ) -> Result<(Option<StoredValue>, RememberedLeaf)> {
        let _shared = self.latch.read();
        let leaf = self.leaf_for(self.root, key)?;
        let g = leaf.read_valid()?;
        let n = Self::node_of(&g, leaf.id())?;
        let at = n.search(key);
        let seen = RememberedLeaf {
            page: leaf.id(),
            epoch: self.latch.epoch(),
            page_lsn: page::page_lsn(&g),
            at,
        };
        Ok((at.ok().map(|i| n.cell_value(i).to_owned()), seen))
    }

    /// The leaf of `key` for a change, pinned: the remembered one if the tree's
    /// structure has not changed since it was found, returned with it; else a descent
    /// from the root. The caller holds the tree latch shared.
    pub(super) fn leaf_for_change(
        &self,
        key: &[u8],
        seen: Option<RememberedLeaf>,
    ) -> Result<(PageRef<'_>, Option<RememberedLeaf>)> {
        match seen.filter(|s| s.epoch == self.latch.epoch()) {
            Some(s) => {
                #[cfg(test)]
                self.latch.note_remembered();
                Ok((self.store.pool.fetch(s.page)?, Some(s)))
            }
            None => Ok((self.leaf_for(self.root, key)?, None)),
        }
    }
}
