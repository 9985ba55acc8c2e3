//! Compaction: empty trees give their pages back, pages nothing reaches are reclaimed,
//! and the free pages at the end of the data file go back to the file system.
//!
//! 1. **Empty trees.** A tree whose leaves are all empty (every key deleted) is cut back
//!    to its root, an empty leaf, under the tree's structure latch held exclusively, and
//!    its other pages are freed. A scan holds no page between batches (it resumes by key,
//!    `btree/scan.rs`), and a rollback re-inserts by key, so nothing follows a freed
//!    page. A tree with some keys left keeps its empty leaves (no merges).
//! 2. **Unreachable pages.** Under the space gate held exclusively (no allocation runs),
//!    every page that no tree (the catalog, every root it names, every root a latch was
//!    handed out for in this session and not marked dropped — a new root not yet in the
//!    catalog, a table in the middle of a rename or its rollback — or marked and still
//!    held: a dropped tree not yet freed; `Store::live_roots`) and not the free list
//!    reaches is
//!    freed: a crash between a drop's commit and its `free_tree`, between the records of
//!    a large free, or after a rolled-back create leaves such pages.
//! 3. **The file's end.** Still under the gate: the free pages at the end of the file are
//!    cut off. The free list is rebuilt without them — first its new pages are written
//!    (pages free on the old list, not its own pages, so the old list stays intact),
//!    then one record sets the meta page's new page count and list head. A checkpoint
//!    then writes everything and records the shorter length in the control file; then
//!    the pool drops the pages past the end and the file is truncated and synced. A crash
//!    anywhere leaves either the old list or the new one, and a data file no shorter
//!    than the control file says. Pages in the middle of the file are not moved: they
//!    stay free, for the next allocations.

use crate::buffer_pool::PageWrite;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::inner::Inner;
use crate::page::{CellValue, Meta, Node, NodeMut};
use crate::space::{free_list, free_pages, give, log_images, tree_pages, PAGES_PER_RECORD};
use std::collections::HashSet;

/// What [`Database::compact`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Pages put on the free list: those of empty trees and those nothing reached.
    pub pages_freed: u64,
    /// Free pages at the end of the data file given back to the file system.
    pub pages_returned: u64,
    /// Bytes the data file shrank by.
    pub bytes_returned: u64,
    /// The data file's size before, in bytes.
    pub size_before: u64,
    /// The data file's size after, in bytes.
    pub size_after: u64,
    /// Pages left on the free list (in the middle of the file), reused by the next
    /// allocations.
    pub pages_free: u64,
}

impl Database {
    /// Gives space back: cuts every table whose keys were all deleted back to one empty
    /// page, frees pages nothing reaches (left by a crash), and returns the free pages at
    /// the end of the data file to the file system. Free pages in the middle of the file
    /// stay on the free list for later allocations (pages are not moved). Crash-safe at
    /// every step. Writers of a tree wait while it is cut back; splits and table creation
    /// wait while the file's end is cut (which includes a checkpoint).
    /// [`Error::ReadOnly`] in a read-only database.
    pub fn compact(&self) -> Result<CompactReport> {
        let inner = &self.inner;
        inner.check()?;
        if inner.options.read_only {
            return Err(Error::ReadOnly);
        }
        let _one = inner.store.compacting.lock();
        let mut report = CompactReport {
            size_before: inner.store.pool.data_len()?,
            ..CompactReport::default()
        };
        for root in inner.tree_roots(false)? {
            report.pages_freed += inner.cut_back_if_empty(root)?;
        }
        let _gate = inner.store.space_gate.write();
        report.pages_freed += inner.reclaim_unreachable()?;
        inner.cut_file_end()?;
        report.size_after = inner.store.pool.data_len()?;
        report.bytes_returned = report.size_before.saturating_sub(report.size_after);
        report.pages_returned = report.bytes_returned / inner.store.page_size as u64;
        report.pages_free = free_list(&inner.store)?.1.len() as u64;
        Ok(report)
    }
}

impl Inner {
    /// The catalog's root and every root the catalog's leaves hold, as they are on the
    /// pages (uncommitted entries included). Under the catalog's structure latch, unless
    /// `gated` (the space gate held exclusively: no split can run, and a split waiting
    /// for the gate holds its tree's latch exclusively, so taking it here would deadlock).
    fn tree_roots(&self, gated: bool) -> Result<Vec<PageId>> {
        let latch = self.store.tree_latch(PageId::CATALOG);
        let _shared = (!gated).then(|| latch.read());
        let mut roots = vec![PageId::CATALOG];
        for id in tree_pages(&self.store, PageId::CATALOG)? {
            let p = self.store.pool.fetch(id)?;
            let g = p.read_valid()?;
            let n = Node::new(&g);
            if n.is_leaf() {
                for i in 0..n.len() {
                    let name = String::from_utf8_lossy(n.key(i)).into_owned();
                    roots.push(crate::table::decode_root(&name, n.value(i))?);
                }
            }
        }
        Ok(roots)
    }

    /// If every leaf of the tree at `root` is empty, cuts it back to its root (an empty
    /// leaf) and frees its other pages; the pages freed. `root` was listed by the
    /// catalog a moment ago: if a drop has committed since, its pages may be free or
    /// reused (as another tree's root, which has a latch of its own, or as a page inside
    /// another tree), so a root whose latch is marked dropped is left alone; the space
    /// gate, held shared, keeps the drop from freeing the tree while this runs (a drop
    /// marks the latch before it frees). Without that check a stale root's page was read
    /// as a tree, and pages of another tree were freed (the swarm's compaction
    /// dimension: a table showed another's rows).
    fn cut_back_if_empty(&self, root: PageId) -> Result<u64> {
        let _space = self.store.space_gate.read();
        let latch = self.store.tree_latch(root);
        let _x = latch.write();
        if latch.is_dropped() {
            return Ok(0);
        }
        let pages = tree_pages(&self.store, root)?;
        if pages.len() == 1 {
            return Ok(0);
        }
        for &id in &pages {
            let p = self.store.pool.fetch(id)?;
            let g = p.read_valid()?;
            let n = Node::new(&g);
            if n.is_leaf() && !n.is_empty() {
                return Ok(0);
            }
        }
        let rest = &pages[1..];
        // The root becomes an empty leaf in the same record as the first pages freed, so
        // the free list never holds a page the tree still links to; a crash before the
        // other records leaves them unreachable, for the next compaction.
        let n = {
            let rp = self.store.pool.fetch(root)?;
            let mut rw = rp.write_valid()?;
            let mp = self.store.pool.fetch(PageId::META)?;
            let mut mw = mp.write_valid()?;
            let mut meta = mw.bytes().to_vec();
            let mut changed = Vec::new();
            let n = give(
                &self.store,
                &mut meta,
                rest,
                &mut changed,
                PAGES_PER_RECORD - 2,
            )?;
            let mut img = vec![0u8; self.store.page_size];
            NodeMut::format(&mut img, root, 0);
            let mut pages: Vec<(&mut PageWrite<'_>, Vec<u8>)> = changed
                .iter_mut()
                .map(|(w, img)| (w, std::mem::take(img)))
                .collect();
            pages.push((&mut rw, img));
            pages.push((&mut mw, meta));
            log_images(&self.store, &mut pages)?;
            n
        };
        free_pages(&self.store, &rest[n..])?;
        Ok(rest.len() as u64)
    }

    /// With the space gate held exclusively: frees every page that no tree and not the
    /// free list reaches; how many.
    fn reclaim_unreachable(&self) -> Result<u64> {
        let (_, free) = free_list(&self.store)?;
        let mut reached: HashSet<PageId> = free.clone();
        reached.insert(PageId::META);
        for root in self.tree_roots(true)? {
            reached.extend(tree_pages(&self.store, root)?);
        }
        // Roots whose trees may be in use without being in the catalog's pages (a create,
        // rename or drop in flight, or its rollback; `Store::live_roots`): counted with
        // their pages when they still hold a tree. One that was freed meanwhile (or
        // reused) only makes this count more pages in use, never fewer.
        let count = self.page_count()?;
        for root in self.store.live_roots() {
            if root.0 >= 2 && root.0 < count && !free.contains(&root) {
                // A page that is no longer a node (the root was freed and reused) holds
                // no tree; any other failure (a full pool, a read error) ends the
                // compaction: skipping the root would free the pages of a tree in use
                // (the swarm's compaction dimension, with a pool of 16 pages).
                match tree_pages(&self.store, root) {
                    Ok(pages) => reached.extend(pages),
                    Err(Error::Corruption(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let lost: Vec<PageId> = (2..count)
            .map(PageId)
            .filter(|id| !reached.contains(id))
            .collect();
        if !lost.is_empty() {
            tracing::info!(
                pages = lost.len(),
                "compaction: reclaiming unreachable pages"
            );
        }
        free_pages(&self.store, &lost)?;
        Ok(lost.len() as u64)
    }

    fn page_count(&self) -> Result<u64> {
        let p = self.store.pool.fetch(PageId::META)?;
        let g = p.read_valid()?;
        Ok(Meta::page_count(&g))
    }

    /// With the space gate held exclusively: returns the free pages at the end of the
    /// data file to the file system (module docs, step 3).
    fn cut_file_end(&self) -> Result<()> {
        let (lists, free) = free_list(&self.store)?;
        let count = self.page_count()?;
        let mut end = count;
        while end > 2 && free.contains(&PageId(end - 1)) {
            end -= 1;
        }
        let page = self.store.page_size as u64;
        if end == count && self.store.pool.data_len()? <= end * page {
            return Ok(());
        }
        if end < count && !self.rebuild_list(&lists, &free, end)? {
            return Ok(());
        }
        self.store.pool.cap_data_len(end * page);
        let cut = self
            .checkpoint_with(true)
            .and_then(|()| self.store.pool.truncate_at(PageId(end)));
        self.store.pool.cap_data_len(u64::MAX);
        cut.map(|_| ())
    }

    /// Replaces the free list by one without the pages at or past `end` and shrinks the
    /// page count to `end`. False if the pages left cannot hold the new list without
    /// overwriting the old one's (then nothing changed).
    fn rebuild_list(&self, lists: &[PageId], free: &HashSet<PageId>, end: u64) -> Result<bool> {
        let old: HashSet<PageId> = lists.iter().copied().collect();
        let mut keep: Vec<PageId> = free.iter().copied().filter(|id| id.0 < end).collect();
        keep.sort_unstable();
        let per_page = ids_per_list_page(self.store.page_size);
        let need = keep.len().div_ceil(per_page + 1);
        let mut heads: Vec<PageId> = keep
            .iter()
            .copied()
            .filter(|id| !old.contains(id))
            .collect();
        if heads.len() < need {
            return Ok(false);
        }
        heads.truncate(need);
        let held: Vec<PageId> = keep
            .iter()
            .copied()
            .filter(|id| !heads.contains(id))
            .collect();
        // The new list's pages, written while the old list is still the meta page's.
        let mut images = Vec::with_capacity(need);
        for (i, (&id, ids)) in heads.iter().zip(held.chunks(per_page.max(1))).enumerate() {
            let mut img = vec![0u8; self.store.page_size];
            let mut n = NodeMut::format(&mut img, id, 0);
            n.set_link(heads.get(i + 1).copied().unwrap_or(PageId::NONE));
            for (j, f) in ids.iter().enumerate() {
                n.insert_leaf_value(j, &f.0.to_be_bytes(), CellValue::inline(b""));
            }
            images.push((id, img));
        }
        // (`chunks` yields nothing for no held ids: list pages without ids.)
        for &id in heads.iter().skip(images.len()) {
            let mut img = vec![0u8; self.store.page_size];
            NodeMut::format(&mut img, id, 0).set_link(PageId::NONE);
            images.push((id, img));
        }
        for batch in images.chunks_mut(PAGES_PER_RECORD) {
            let refs: Vec<_> = batch
                .iter()
                .map(|(id, _)| self.store.pool.fetch(*id))
                .collect::<Result<_>>()?;
            let mut ws: Vec<PageWrite<'_>> = refs.iter().map(|r| r.write()).collect();
            let mut pages: Vec<(&mut PageWrite<'_>, Vec<u8>)> = ws
                .iter_mut()
                .zip(batch.iter_mut())
                .map(|(w, (_, img))| (w, std::mem::take(img)))
                .collect();
            log_images(&self.store, &mut pages)?;
        }
        let mp = self.store.pool.fetch(PageId::META)?;
        let mut mw = mp.write_valid()?;
        let mut meta = mw.bytes().to_vec();
        Meta::set_page_count(&mut meta, end);
        Meta::set_free(&mut meta, heads.first().copied(), keep.len() as u64);
        log_images(&self.store, &mut [(&mut mw, meta)])?;
        Ok(true)
    }
}

/// How many page ids one free-list page holds.
fn ids_per_list_page(page_size: usize) -> usize {
    let mut img = vec![0u8; page_size];
    let mut n = NodeMut::format(&mut img, PageId(2), 0);
    let mut i = 0u64;
    while n.fits(crate::page::node::LEAF_CELL_HEADER + 8) {
        n.insert_leaf_value(i as usize, &i.to_be_bytes(), CellValue::inline(b""));
        i += 1;
    }
    i as usize
}

impl Inner {
    /// Frees every page of the tree at `root`, root included, onto the free list. The
    /// caller guarantees that nothing uses the tree any more (`drop_table`, after its
    /// transaction committed under the table's X lock). Until then compaction counts the
    /// tree in use: the dropping transaction holds a `Table`, so its latch is held
    /// (`Store::live_roots`). A crash part-way leaves the rest of the tree unreachable; compaction
    /// reclaims it.
    pub(crate) fn free_tree(&self, root: PageId) -> Result<()> {
        let _gate = self.store.space_gate.write();
        let pages = tree_pages(&self.store, root)?;
        free_pages(&self.store, &pages)
    }
}
