//! Tables inside a transaction: the table lock every operation takes first, and
//! creating, renaming and dropping tables as changes of the transaction.

use super::transaction::TableHold;
use super::transaction::Transaction;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::lock::{LockMode, LockName, TableLock};
use crate::table::{check_name, decode_root, Table};
use std::sync::Arc;

impl Transaction {
    /// What every operation on `table` passes first: the handle must be this database's,
    /// and the transaction takes the table lock `how` (`crate::lock::TableLock`) on its
    /// first use of the table in that mode (later uses find it in `tables`, held until
    /// the transaction ends). A handle on a table that has been dropped —
    /// by a committed transaction, or by this one — is refused with
    /// [`Error::NotFound`]; the table lock makes that check exact: a drop holds the lock
    /// in a mode no use is compatible with until its commit marks the tree dropped.
    /// The catalog takes no table lock: it is never dropped.
    pub(super) fn use_table(&mut self, table: &Table, how: TableLock) -> Result<()> {
        self.check_table(table)?;
        if table.root == PageId::CATALOG {
            return Ok(());
        }
        if self.dropping.iter().any(|t| t.root == table.root) {
            return Err(Error::NotFound(format!(
                "table {:?} (dropped by this transaction)",
                table.name()
            )));
        }
        let want = how.mode();
        let txn = self.shared.id;
        // A hold is per tree latch, not per root page: a dropped table's handle and
        // the table that reuses its root share the page but not the latch, and a lock
        // held on one must not let a use of the other skip the checks below.
        let i = self
            .tables
            .iter()
            .position(|h| h.root == table.root && Arc::ptr_eq(&h.latch, &table.latch));
        if i.is_some_and(|i| self.tables[i].modes.covers(want)) {
            return Ok(());
        }
        let i = i.unwrap_or_else(|| {
            self.tables.push(TableHold {
                root: table.root,
                latch: table.latch.clone(),
                modes: LockMode::NONE,
                fast: false,
                strong: false,
                created: false,
            });
            self.tables.len() - 1
        });
        let fast = &table.latch.table_locks;
        let own = TableLock::own_stripe(txn);
        let first = self.tables[i].modes == LockMode::NONE;
        let log = &self.db.store.log;
        let taken = how.is_weak()
            && (first || self.tables[i].fast)
            && fast.try_weak(txn, own, want, first, &mut self.dep, || log.durable_lsn());
        if taken {
            self.tables[i].fast = true;
        } else {
            let durable = self.db.store.log.durable_lsn();
            if self.tables[i].fast {
                // One lock on the stripe's name, in one place: the lock table from now.
                fast.move_own(&self.db.locks, table.root, txn, own, durable);
            }
            if !how.is_weak() && !self.tables[i].strong {
                self.tables[i].strong = true;
                fast.begin_strong(&self.db.locks, table.root, durable);
            }
            for s in how.stripes(txn) {
                self.lock(table, LockName::Table(s), want)?;
            }
        }
        self.tables[i].modes = self.tables[i].modes.with(want);
        if table.latch.is_dropped() {
            // The drop released its lock early, perhaps: the refusal is an outcome that
            // depends on its commit (the lock, taken here or on the fast path, brought
            // the dependency), so it waits for it to be durable.
            self.read_barrier()?;
            return Err(Error::NotFound(format!(
                "table {:?} (dropped)",
                table.name()
            )));
        }
        if table.latch.is_abandoned() {
            return Err(Error::NotFound(format!(
                "table {:?} (its create was rolled back)",
                table.name()
            )));
        }
        Ok(())
    }
}

impl Transaction {
    /// Creates a table inside this transaction: its catalog entry is a change of the
    /// transaction like any other, so a rollback — or crash recovery, if the transaction
    /// did not commit — removes the table with everything written into it, and until
    /// the transaction ends, another transaction that looks the name up (with
    /// [`Database::table`](crate::Database::table) or a create of its own) waits for
    /// it. The handle works in this transaction at once; until the transaction ends,
    /// any other use of the handle waits for it (the transaction holds the new table's
    /// drop lock), and after a rollback every use of it returns [`Error::NotFound`]. Under
    /// an `async` commit protocol the table is as durable as the transaction's other
    /// changes.
    ///
    /// [`Error::AlreadyExists`] if a table of that name exists; [`Error::InvalidArgument`]
    /// for a name that is empty or longer than [`MAX_TABLE_NAME`](crate::MAX_TABLE_NAME) bytes;
    /// [`Error::ReadOnly`] in a read-only database. The root page of a table whose
    /// creation is rolled back stays allocated, unused, until a
    /// [`compact`](crate::Database::compact) after the database is next opened.
    pub fn create_table(&mut self, name: &str) -> Result<Table> {
        self.usable()?;
        let r = self.create_table_in(name);
        self.settle(r)
    }

    fn create_table_in(&mut self, name: &str) -> Result<Table> {
        check_name(name)?;
        let inner = self.db.clone();
        inner.check()?;
        if inner.options.read_only {
            return Err(Error::ReadOnly);
        }
        let cat = inner.catalog_table();
        if self.get_for_update(&cat, name.as_bytes())?.is_some() {
            return Err(Error::AlreadyExists(format!("table {name:?}")));
        }
        let (root, _listing) = inner.allocate_root()?;
        self.put(&cat, name.as_bytes(), root.0.to_le_bytes())?;
        let table = Table::new(&inner, name, root);
        // Until it ends, the new table is this transaction's alone: another holder of
        // the handle waits (and depends on its commit, if it releases early); if it
        // rolls back, the table is marked as never created first (`release_locks`).
        self.use_table(&table, TableLock::Drop)?;
        if let Some(h) = self
            .tables
            .iter_mut()
            .find(|h| Arc::ptr_eq(&h.latch, &table.latch))
        {
            h.created = true;
        }
        Ok(table)
    }
}

impl Transaction {
    /// The number of entries in `table` as this transaction sees them, exact, in O(1)
    /// (not a scan: the engine keeps each table's count, and rebuilds it after a crash
    /// from the log). Serializable as any read: it takes the table's count lock, which
    /// waits for every other transaction that has written the table to end, and keeps
    /// every other writer of the table waiting until this transaction ends (readers
    /// are not held up). This transaction's own uncommitted changes are counted.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&mut self, table: &Table) -> Result<u64> {
        self.usable()?;
        let r = self.len_in(table);
        self.settle(r)
    }

    fn len_in(&mut self, table: &Table) -> Result<u64> {
        self.use_table(table, TableLock::Count)?;
        self.db.check()?;
        self.db.store.entry_count(table.root)
    }

    /// Drops `table` inside this transaction: its catalog entry goes (undone by a
    /// rollback, or by recovery if the transaction does not commit), with the chunks of
    /// its large values. It first takes the table's drop lock, so it waits for every
    /// other transaction that uses the table to end, and until it ends every other use
    /// waits; once it commits, every use of a handle on the table — taken before or
    /// after — returns [`Error::NotFound`], and so does a use in this transaction after
    /// the drop. The table's pages are freed when it commits.
    ///
    /// [`Error::NotFound`] if `table` is no longer listed under its handle's name
    /// (renamed or dropped since); [`Error::InvalidArgument`] for a table of another
    /// database; [`Error::ReadOnly`] in a read-only database. A lock wait that times
    /// out or is chosen as a deadlock victim fails the transaction, as any.
    pub fn drop_table(&mut self, table: &Table) -> Result<()> {
        self.usable()?;
        let r = self.drop_table_in(table);
        self.settle(r)
    }

    fn drop_table_in(&mut self, table: &Table) -> Result<()> {
        self.check_table(table)?;
        let inner = self.db.clone();
        inner.check()?;
        if inner.options.read_only {
            return Err(Error::ReadOnly);
        }
        if table.root == PageId::CATALOG {
            return Err(Error::InvalidArgument(
                "the catalog cannot be dropped".into(),
            ));
        }
        self.use_table(table, TableLock::Drop)?;
        let name = table.name();
        let cat = inner.catalog_table();
        let listed = self.get_for_update(&cat, name.as_bytes())?;
        if listed.map(|v| decode_root(name, &v)).transpose()? != Some(table.root) {
            return Err(Error::NotFound(format!(
                "table {name:?} (renamed or dropped since this handle was taken)"
            )));
        }
        // Under the X lock on the name, as in a rename.
        inner.catalog.lock().remove(name);
        self.delete(&cat, name.as_bytes())?;
        self.delete_table_blobs(table.root)?;
        self.dropping.push(table.clone());
        Ok(())
    }

    /// At commit, with the commit record in the log and every lock still held: marks
    /// the tables this transaction dropped, so that a use waiting for the drop lock
    /// finds them dropped, and frees their pages.
    pub(super) fn finish_drops(&mut self) {
        for t in std::mem::take(&mut self.dropping) {
            // After the commit record: a crash that keeps a freeing keeps the drop. One
            // that comes between leaves the tree's pages unreachable, and compaction
            // reclaims them; so does a failure here, which cannot undo the commit (and
            // a failed log append has stopped the database anyway). The mark is set
            // whatever fails.
            let freed =
                (self.db.store.tree_dropped(t.root)).and_then(|()| self.db.free_tree(t.root));
            if let Err(e) = freed {
                tracing::warn!(table = t.name(), error = %e, "a dropped table's pages were not freed; compaction reclaims them");
            }
        }
    }

    /// Renames `table` to `to` inside this transaction: undone by its rollback, or by
    /// recovery if the transaction does not commit. Until the transaction ends, lookups
    /// of either name wait for it (it holds both catalog entries X). A rename changes
    /// only the name: handles of the table, taken before or after, keep reaching the
    /// same tree and its data (as an open file survives a rename of its path).
    ///
    /// [`Error::NotFound`] if `table` is no longer listed under its handle's name
    /// (renamed since); [`Error::AlreadyExists`] if a table is named `to`;
    /// [`Error::InvalidArgument`] for a bad name or a table of another database;
    /// [`Error::ReadOnly`] in a read-only database.
    pub fn rename_table(&mut self, table: &Table, to: &str) -> Result<()> {
        self.usable()?;
        let r = self.rename_table_in(table, to);
        self.settle(r)
    }

    fn rename_table_in(&mut self, table: &Table, to: &str) -> Result<()> {
        check_name(to)?;
        self.check_table(table)?;
        let inner = self.db.clone();
        inner.check()?;
        if inner.options.read_only {
            return Err(Error::ReadOnly);
        }
        let from = table.name();
        let cat = inner.catalog_table();
        let listed = self.get_for_update(&cat, from.as_bytes())?;
        if listed.map(|v| decode_root(from, &v)).transpose()? != Some(table.root) {
            return Err(Error::NotFound(format!(
                "table {from:?} (renamed since this handle was taken)"
            )));
        }
        // Under the X lock on the name: a lookup that filled the cache did so holding
        // its S lock (`Database::table`), so it is done, and later ones wait for us.
        inner.catalog.lock().remove(from);
        if from == to {
            return Ok(());
        }
        if self.get_for_update(&cat, to.as_bytes())?.is_some() {
            return Err(Error::AlreadyExists(format!("table {to:?}")));
        }
        self.delete(&cat, from.as_bytes())?;
        self.put(&cat, to.as_bytes(), table.root.0.to_le_bytes())?;
        Ok(())
    }
}
