//! The catalog: a B+tree at page 1 mapping table names to their root pages.
//!
//! A table's root page never moves (root splits happen in place), so the catalog entry
//! is written once, by the transaction that creates the table. Creating a table
//! allocates and formats its root (a redo-only action) and then inserts the catalog entry
//! as a change of the creating transaction (`txn/tables.rs`), under its X lock on the
//! name; if that transaction does not commit, its rollback or recovery removes the
//! entry and the root page stays allocated but unreachable until compaction reclaims
//! it (`space`; a new root's latch is registered at once, so compaction counts it in use
//! while its creator runs). The
//! cache of names (`Inner::catalog`) holds only committed tables: a lookup that misses it
//! reads the catalog under a lock, so it waits for a creating or renaming transaction
//! to end, and fills the cache while it holds that lock; a rename evicts the old name
//! once it holds the name X (`txn/tables.rs`).

use crate::db::Database;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::inner::Inner;
use crate::page::NodeMut;
use crate::store::TreeLatch;
use crate::table::Table;
use crate::txn::Durability;
use std::sync::Arc;

pub use crate::table::MAX_TABLE_NAME;
use crate::table::{check_name, decode_root};

impl Inner {
    pub(crate) fn catalog_table(self: &Arc<Self>) -> Table {
        Table::new(self, "", PageId::CATALOG)
    }

    /// The hidden table of large values' chunks (`crate::blob`), listed in the catalog
    /// under the empty name, which no user table can have. Created if it does not exist
    /// yet and `create` says how durable: `Some(Durable)` commits it durable at once, as
    /// any table; `Some(Async)` (for a transaction that chose not to wait for the log)
    /// commits it without waiting — every commit that writes into the table comes after
    /// its creation in the log, so none can survive a crash that loses it. `None` if it
    /// does not exist and `create` is `None`.
    pub(crate) fn blob_table(
        self: &Arc<Self>,
        create: Option<Durability>,
    ) -> Result<Option<Table>> {
        const NAME: &str = "";
        const SHOWN: &str = "(large values)";
        if let Some(root) = self.catalog.lock().get(NAME).copied() {
            return Ok(Some(Table::new(self, SHOWN, root)));
        }
        let cat = self.catalog_table();
        let mut tx = crate::Transaction::new(self.clone());
        let root = match tx.get_for_update(&cat, NAME.as_bytes())? {
            Some(v) => {
                tx.commit()?;
                decode_root(SHOWN, &v)?
            }
            None => {
                let Some(durability) = create else {
                    return Ok(None);
                };
                let (root, _listing) = self.allocate_root()?;
                tx.put(&cat, NAME.as_bytes(), root.0.to_le_bytes())?;
                tx.set_durability(durability);
                tx.commit()?;
                if durability == Durability::Durable {
                    self.store.log.sync()?;
                }
                root
            }
        };
        self.catalog.lock().insert(NAME.to_string(), root);
        Ok(Some(Table::new(self, SHOWN, root)))
    }

    /// Allocates and formats an empty leaf as a new table's root. Returns it with its
    /// structure latch, which the caller holds until the catalog lists the root:
    /// compaction counts a root in use while anything holds its latch (`space`).
    pub(crate) fn allocate_root(&self) -> Result<(PageId, Arc<TreeLatch>)> {
        let _space = self.store.space_gate.read();
        let id = {
            let mp = self.store.pool.fetch(PageId::META)?;
            let mut mw = mp.write_valid()?;
            let mut meta = mw.bytes().to_vec();
            let (ids, mut list) = crate::space::take(&self.store, &mut meta, 1)?;
            let id = ids[0];
            let rp = self.store.pool.fetch(id)?;
            let mut rw = rp.write();
            let mut root = vec![0u8; self.store.page_size];
            NodeMut::format(&mut root, id, 0);
            let mut pages = vec![(&mut mw, meta), (&mut rw, root)];
            if let Some((w, img)) = list.as_mut() {
                pages.push((w, std::mem::take(img)));
            }
            crate::space::log_images(&self.store, &mut pages)?;
            id
        };
        // A fresh latch and a count of 0, taken before the gate opens, so compaction
        // counts the root in use until the catalog holds it; and no mark of a dropped
        // tree that had this root page stays on it. After the page latches are let go:
        // retiring the page's old latch waits for whoever holds it (`fresh_latch`).
        let latch = self.store.tree_created(id)?;
        Ok((id, latch))
    }
}

impl Database {
    /// Creates a table in a transaction of its own, committed and durable at once,
    /// whatever the commit protocol (a table must not vanish in a crash even under
    /// `async`); [`Transaction::create_table`](crate::Transaction::create_table) creates
    /// one inside a transaction. [`Error::AlreadyExists`] if it exists;
    /// [`Error::ReadOnly`] in a read-only database.
    pub fn create_table(&self, name: &str) -> Result<Table> {
        check_name(name)?;
        let inner = &self.inner;
        inner.check()?;
        if inner.options.read_only {
            return Err(Error::ReadOnly);
        }
        let mut tx = self.begin();
        let table = tx.create_table(name)?;
        tx.commit()?;
        inner.store.log.sync()?;
        // Not cached here: by now a rename may have taken the name (the cache is filled
        // only under the name's lock, by `table`).
        Ok(table)
    }

    /// Opens an existing table. [`Error::NotFound`] if there is none by that name.
    pub fn table(&self, name: &str) -> Result<Table> {
        check_name(name)?;
        let inner = &self.inner;
        // The handle takes the tree's latch while the name is known to be listed: under
        // the cache's mutex (a drop evicts the name before it commits and marks the
        // latch after), or under the name's S lock. Taken after, a drop could have
        // committed and forgotten the latch in between, and the handle would get a
        // fresh latch that no drop marked.
        if let Some(&root) = inner.catalog.lock().get(name) {
            return Ok(Table::new(inner, name, root));
        }
        let mut tx = self.begin();
        let v = tx.get(&inner.catalog_table(), name.as_bytes())?;
        let Some(v) = v else {
            tx.commit()?;
            return Err(Error::NotFound(format!("table {name:?}")));
        };
        let root = decode_root(name, &v)?;
        let table = Table::new(inner, name, root);
        // Cached under the name's S lock, so a rename or drop (which evicts the name
        // under its X lock) cannot come between the read and the cache.
        inner.catalog.lock().insert(name.to_string(), root);
        tx.commit()?;
        Ok(table)
    }

    /// Opens the table, creating it if it does not exist (which a read-only database
    /// refuses with [`Error::ReadOnly`]).
    pub fn table_or_create(&self, name: &str) -> Result<Table> {
        match self.table(name) {
            Err(Error::NotFound(_)) => match self.create_table(name) {
                Err(Error::AlreadyExists(_)) => self.table(name),
                r => r,
            },
            r => r,
        }
    }

    /// The names of all tables, in order.
    pub fn table_names(&self) -> Result<Vec<String>> {
        let cat = self.inner.catalog_table();
        let mut tx = self.begin();
        let mut names = Vec::new();
        for e in tx.scan_all(&cat) {
            let (k, _) = e?;
            if k.is_empty() {
                // The hidden table of large values.
                continue;
            }
            names.push(String::from_utf8(k).map_err(|_| {
                Error::Corruption("catalog holds a table name that is not UTF-8".into())
            })?);
        }
        tx.commit()?;
        Ok(names)
    }
}

impl Database {
    /// Drops table `name` in a transaction of its own, committed at once (see
    /// [`Transaction::drop_table`](crate::Transaction::drop_table): it waits for every
    /// transaction that uses the table, and later uses of any handle on it return
    /// [`Error::NotFound`]). [`Error::NotFound`] if there is no such table.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let table = self.table(name)?;
        let mut tx = self.begin();
        tx.drop_table(&table)?;
        tx.commit()
    }

    /// Renames table `from` to `to` in a transaction of its own, committed at once (see
    /// [`Transaction::rename_table`](crate::Transaction::rename_table)). [`Error::NotFound`] if there is no table `from`.
    pub fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        let table = self.table(from)?;
        let mut tx = self.begin();
        tx.rename_table(&table, to)?;
        tx.commit()
    }
}
