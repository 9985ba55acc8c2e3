//! [`Database::verify`]: every tree checked, every page of the data file read back.

use super::Database;
use crate::btree::{Btree, TreeReport};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::page::{self, Meta};

/// What [`Database::verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Tables checked (the catalog not included).
    pub tables: usize,
    /// Entries over all tables.
    pub entries: u64,
    /// Pages in the data file, each read back from disk with a valid checksum.
    pub pages: u64,
    /// Each table's name and what its tree holds, in name order (the catalog and the
    /// table of large values not included).
    pub per_table: Vec<(String, TreeReport)>,
    /// Pages on the free list (its own pages included).
    pub free_pages: u64,
}

/// A verification error, prefixed with the tree it was found in.
fn in_table(name: &str, e: Error) -> Error {
    match e {
        Error::Corruption(m) => Error::Corruption(format!("table {name}: {m}")),
        e => e,
    }
}

impl Database {
    /// The chunks in the table of large values (each up to [`Limits::chunk_len`](crate::Limits::chunk_len) bytes
    /// of one value stored apart), after checking that table's structure; changes
    /// nothing, so it also works on a read-only database. A value that was deleted,
    /// overwritten or rolled back leaves none behind, so with no transaction running this
    /// is the chunk count of the large values the tables hold.
    pub fn large_value_chunks(&self) -> Result<u64> {
        let inner = &self.inner;
        inner.check()?;
        match inner.blob_table(None)? {
            Some(t) => Ok(Btree::new(&inner.store, t.root, &t.latch).verify()?.entries),
            None => Ok(0),
        }
    }

    /// Checkpoints (writing every dirty page, whatever the propagation strategy), then
    /// checks every table (levels, key order, separators, leaf chain) and the free list
    /// (no page on it twice, its length the meta page's, no page both free and in a
    /// tree), and reads every
    /// page of the data file back from disk to verify its checksum.
    ///
    /// Read-only, it cannot checkpoint: it checks the tables as they are (with what
    /// recovery changed in memory) and skips on disk the pages recovery changed, whose
    /// disk image the log supersedes.
    pub fn verify(&self) -> Result<VerifyReport> {
        let superseded: std::collections::HashSet<PageId> = if self.inner.options.read_only {
            self.inner.check()?;
            self.inner
                .store
                .pool
                .changed_by_recovery()
                .into_iter()
                .collect()
        } else {
            self.inner.check()?;
            self.inner.checkpoint_with(true)?;
            Default::default()
        };
        let inner = &self.inner;
        let mut report = VerifyReport::default();
        let free = crate::space::free_list(&inner.store)?.1;
        report.free_pages = free.len() as u64;
        let catalog = inner.store.tree_latch(PageId::CATALOG);
        Btree::new(&inner.store, PageId::CATALOG, &catalog)
            .verify_counted()
            .map_err(|e| in_table("(catalog)", e))?;
        crate::space::check_not_free(&inner.store, PageId::CATALOG, &free)
            .map_err(|e| in_table("(catalog)", e))?;
        for name in self.table_names()? {
            let t = self.table(&name)?;
            let r = Btree::new(&inner.store, t.root, &t.latch)
                .verify_counted()
                .map_err(|e| in_table(&name, e))?;
            crate::space::check_not_free(&inner.store, t.root, &free)
                .map_err(|e| in_table(&name, e))?;
            report.tables += 1;
            report.entries += r.entries;
            report.per_table.push((name, r));
        }
        if let Some(t) = inner.blob_table(None)? {
            Btree::new(&inner.store, t.root, &t.latch)
                .verify_counted()
                .map_err(|e| in_table("(large values)", e))?;
            crate::space::check_not_free(&inner.store, t.root, &free)
                .map_err(|e| in_table("(large values)", e))?;
        }
        let count = {
            let p = inner.store.pool.fetch(PageId::META)?;
            let g = p.read_valid()?;
            Meta::page_count(&g)
        };
        let mut buf = vec![0u8; inner.store.page_size];
        let data = inner.store.pool.data_path().display();
        for id in 0..count {
            if superseded.contains(&PageId(id)) {
                continue;
            }
            inner.store.pool.read_disk(PageId(id), &mut buf)?;
            if !page::checksum_ok(&buf) {
                let offset = id * inner.store.page_size as u64;
                let file_len = inner.store.pool.data_len()?;
                if offset + inner.store.page_size as u64 > file_len {
                    // The read returned zeros past the end (a file that ends inside a
                    // page whose tail is zeros reads whole): say what is wrong, not that
                    // the zeros fail.
                    return Err(Error::Corruption(format!(
                        "data file {data}: page {id} is cut off by the file's end ({file_len} bytes; the meta page counts {count} pages) and fails its checksum"
                    )));
                }
                return Err(Error::Corruption(format!(
                    "data file {data}: page {id} on disk fails its checksum (page LSN field {}, at byte offset {offset})",
                    page::page_lsn(&buf),
                )));
            }
            page::validate(&buf, PageId(id)).map_err(|e| {
                Error::Corruption(format!("data file {data}: page {id} on disk: {e}"))
            })?;
        }
        report.pages = count;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use crate::ids::PageId;
    use crate::page::Meta;
    use crate::{Database, Error, Options};
    use sluice_storage::SimStorage;
    use std::path::Path;
    use std::sync::Arc;

    /// A meta page that counts pages the data file does not hold is named as that, not as
    /// a checksum failure of the zeros a read past the end returns.
    #[test]
    fn a_page_counted_past_the_end_of_the_data_file_is_named_so() {
        let sim = Arc::new(SimStorage::new(7));
        let db = Database::open_on(sim, Path::new("/db"), Options::small()).unwrap();
        let t = db.create_table("t").unwrap();
        let mut tx = db.begin();
        tx.put(&t, b"k", b"v").unwrap();
        tx.commit().unwrap();
        let pages = db.verify().unwrap().pages;
        {
            // The count raised in memory only (not stamped, so never written).
            let r = db.inner.store.pool.fetch(PageId::META).unwrap();
            let mut w = r.write();
            Meta::set_page_count(w.bytes_mut(), pages + 2);
        }
        match db.verify() {
            Err(Error::Corruption(m)) => assert!(
                m.contains(&format!("page {pages} is cut off by the file's end"))
                    && m.contains(&format!("counts {} pages", pages + 2)),
                "{m}"
            ),
            other => panic!("verify of a count past the file's end gave {other:?}"),
        }
    }
}
