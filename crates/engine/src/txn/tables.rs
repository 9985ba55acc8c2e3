//! Tables created inside a transaction.

use super::transaction::Transaction;
use crate::error::{Error, Result};
use crate::table::{check_name, decode_root, Table};

impl Transaction {
    /// Creates a table inside this transaction: its catalog entry is a change of the
    /// transaction like any other, so a rollback — or crash recovery, if the transaction
    /// did not commit — removes the table with everything written into it, and until
    /// the transaction ends, another transaction that looks the name up (with
    /// [`Database::table`](crate::Database::table) or a create of its own) waits for
    /// it. The handle works in this transaction at once. Under an `async` commit
    /// protocol the table is as durable as the transaction's other changes.
    ///
    /// [`Error::AlreadyExists`] if a table of that name exists; [`Error::InvalidArgument`]
    /// for a name that is empty or longer than [`MAX_TABLE_NAME`](crate::MAX_TABLE_NAME) bytes;
    /// [`Error::ReadOnly`] in a read-only database. The root page of a table whose
    /// creation is rolled back stays allocated, unused.
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
        let root = inner.allocate_root()?;
        self.put(&cat, name.as_bytes(), root.0.to_le_bytes())?;
        Ok(Table::new(&inner, name, root))
    }
}

impl Transaction {
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
