//! Large values (`crate::blob`): a value too large for its leaf is stored apart, in
//! chunks of a hidden table written as this transaction's changes.

use super::transaction::Transaction;
use super::write::TxnLogger;
use crate::blob::{self, chunk_size, Descriptor};
use crate::btree::Btree;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::table::Table;

impl Transaction {
    /// The hidden table of large values (`crate::blob`), created if `create` and absent.
    pub(super) fn blob_table(&self, create: bool) -> Result<Table> {
        self.db
            .blob_table(create.then_some(self.durability))?
            .ok_or_else(|| {
                Error::Corruption("a large value's descriptor, but no table of large values".into())
            })
    }

    /// The descriptor a large `value` of `key` will have: its chunks go under the
    /// generation the key's current value does not use (`crate::blob`). The caller holds
    /// record X on the key, so that value cannot change before the descriptor replaces it.
    pub(super) fn next_descriptor(
        &self,
        table: &Table,
        key: &[u8],
        value: &[u8],
        crc: u32,
    ) -> Result<Descriptor> {
        let tree = Btree::new(&self.db.store, table.root, &table.latch);
        let generation = match tree.get(key)? {
            Some(old) if old.external => 1 - Descriptor::decode(&old.bytes)?.generation,
            _ => 0,
        };
        let chunk = chunk_size(self.db.store.limits.max_entry, key.len())
            .expect("the key was checked to allow a large value");
        Ok(Descriptor {
            generation,
            len: value.len() as u64,
            chunk: chunk as u32,
            crc,
        })
    }

    /// Stores a large value's chunks in the hidden table, logged as this transaction's
    /// changes, without locks of their own (the user's key, locked, covers them).
    pub(super) fn write_blob(
        &mut self,
        table: PageId,
        key: &[u8],
        d: &Descriptor,
        value: &[u8],
    ) -> Result<()> {
        let blobs = self.blob_table(true)?;
        let mut logger = TxnLogger {
            txn: &self.shared,
            undo: &mut self.undo,
        };
        let tree = Btree::new(&self.db.store, blobs.root, &blobs.latch).for_runs();
        blob::write(&tree, table, key, d, value, &mut logger)
    }

    /// Deletes the chunks of the large value of `key` in this transaction; returns the
    /// value they held.
    pub(super) fn delete_blob(
        &mut self,
        table: PageId,
        key: &[u8],
        desc: &[u8],
    ) -> Result<Vec<u8>> {
        let d = Descriptor::decode(desc)?;
        let blobs = self.blob_table(false)?;
        let mut logger = TxnLogger {
            txn: &self.shared,
            undo: &mut self.undo,
        };
        let tree = Btree::new(&self.db.store, blobs.root, &blobs.latch).for_runs();
        blob::delete(
            &tree,
            table,
            key,
            &d,
            self.db.store.limits.max_value,
            &mut logger,
        )
    }

    /// Reads the large value of `key` from its chunks. The caller holds a lock on the
    /// key, so nobody changes them meanwhile; no page latch is held.
    pub(super) fn read_blob(&self, table: PageId, key: &[u8], desc: &[u8]) -> Result<Vec<u8>> {
        let d = Descriptor::decode(desc)?;
        let blobs = self.blob_table(false)?;
        let tree = Btree::new(&self.db.store, blobs.root, &blobs.latch).for_runs();
        blob::read(&tree, table, key, &d, self.db.store.limits.max_value)
    }
}
