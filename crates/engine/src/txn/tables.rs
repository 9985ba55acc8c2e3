//! Tables created inside a transaction.

use super::transaction::Transaction;
use crate::catalog::check_name;
use crate::error::{Error, Result};
use crate::table::Table;

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
