//! Free pages: the free list and walking a tree's pages. Freeing a tree and compaction,
//! which need the database around them, are in `db/compact.rs`.
//!
//! The free list lives in the data file. The meta page holds its head and its length;
//! the list is a chain of *list pages*, each formatted as a leaf node whose keys are the
//! ids of free pages (8 bytes, big-endian, empty values) and whose link is the next list
//! page. A list page is itself a free page: when its ids are used up, it is the next page
//! handed out. List pages holding hundreds of ids each (rather than a chain through every
//! free page) keep a change to the list small: freeing a page rewrites the head list page
//! and the meta page, not the freed page, so freeing a tree of thousands of pages logs a
//! few dozen images. The leaf format brings its checksum, validation and compact images
//! along; a list page is never in a tree.
//!
//! Every change to the list is in the same [`Record::Images`] as the change that takes or
//! frees the pages (a split logs the list page it took an id from with its nodes and the
//! meta page), so redo, log propagation and read-only open see a consistent list. The
//! list is changed only under the meta page's X latch.
//!
//! Allocation takes a free page first (the lowest id of the head list page, so that pages
//! near the file's end stay free for compaction to return) and extends the file only
//! when the list is empty.

use crate::buffer_pool::PageWrite;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::Record;
use crate::page::MAX_DEPTH;
use crate::page::{compress, CellValue, Meta, Node, NodeMut, PageType};
use crate::store::Store;
use std::collections::HashSet;

/// The most pages one record of this module carries (`MAX_IMAGES_PER_RECORD`).
pub(crate) const PAGES_PER_RECORD: usize = 5;

/// A list page changed by an allocation or a free: its latch and its new image.
pub(crate) type Changed<'a> = (PageWrite<'a>, Vec<u8>);

fn key_of(id: PageId) -> [u8; 8] {
    id.0.to_be_bytes()
}

fn id_of(list: PageId, key: &[u8]) -> Result<PageId> {
    let b: [u8; 8] = key.try_into().map_err(|_| {
        Error::Corruption(format!(
            "free list page {list} holds a key that is not a page id"
        ))
    })?;
    Ok(PageId(u64::from_be_bytes(b)))
}

fn list_node(b: &[u8], id: PageId) -> Result<Node<'_>> {
    match crate::page::page_type(b) {
        Some(PageType::Leaf) => Ok(Node::new(b)),
        _ => Err(Error::Corruption(format!(
            "free list page {id} is not a list page"
        ))),
    }
}

fn check_id(id: PageId, count: u64, what: &str) -> Result<PageId> {
    if id.0 < 2 || id.0 >= count {
        return Err(Error::Corruption(format!(
            "{what} names page {id}, outside pages 2..{count}"
        )));
    }
    Ok(id)
}

/// Takes `n` page ids for a structure change, from the free list first, then from the
/// end of the file. `meta` is the caller's copy of the meta page (X-latched by it),
/// updated here; the list page changed, if any, comes back latched with its new image,
/// which the caller logs in the same record as `meta` and the pages that use the ids.
/// (A list page whose ids are used up is itself taken: the caller overwrites it.)
pub(crate) fn take<'a>(
    store: &'a Store,
    meta: &mut [u8],
    n: usize,
) -> Result<(Vec<PageId>, Option<Changed<'a>>)> {
    let mut ids = Vec::with_capacity(n);
    let mut list: Option<Changed<'a>> = None;
    let count = Meta::page_count(meta);
    for _ in 0..n {
        let Some(head) = Meta::free_head(meta) else {
            let id = Meta::page_count(meta);
            Meta::set_page_count(meta, id + 1);
            ids.push(PageId(id));
            continue;
        };
        check_id(head, count, "the free list")?;
        if list.as_ref().is_none_or(|(w, _)| w.id() != head) {
            let w = store.pool.fetch(head)?.write_valid()?;
            let img = w.bytes().to_vec();
            list = Some((w, img));
        }
        let (_, img) = list.as_mut().expect("loaded above");
        let len = Meta::free_len(meta);
        if len == 0 {
            return Err(Error::Corruption(
                "meta page: free list head with length 0".into(),
            ));
        }
        let node = list_node(img, head)?;
        if node.is_empty() {
            let next = node.link();
            Meta::set_free(meta, next.is_some().then_some(next), len - 1);
            ids.push(head);
            list = None;
        } else {
            let id = check_id(id_of(head, node.key(0))?, count, "the free list")?;
            NodeMut::new(img).remove(0);
            Meta::set_free(meta, Some(head), len - 1);
            ids.push(id);
        }
    }
    Ok((ids, list))
}

/// Puts `ids` on the free list: `meta` is the caller's X-latched copy of the meta page;
/// the list pages changed come back latched with their new images (to be logged with
/// `meta`). Stops before `changed` would hold more than `max` pages; returns how many of
/// `ids` it freed (at least one if `max` is at least 1).
pub(crate) fn give<'a>(
    store: &'a Store,
    meta: &mut [u8],
    ids: &[PageId],
    changed: &mut Vec<Changed<'a>>,
    max: usize,
) -> Result<usize> {
    let count = Meta::page_count(meta);
    let mut done = 0;
    for &id in ids {
        check_id(id, count, "a page to free")?;
        let head = Meta::free_head(meta);
        let len = Meta::free_len(meta);
        if let Some(h) = head {
            if !changed.iter().any(|(w, _)| w.id() == h) {
                if changed.len() >= max {
                    break;
                }
                let w = store.pool.fetch(h)?.write_valid()?;
                let img = w.bytes().to_vec();
                changed.push((w, img));
            }
            let (_, img) = changed
                .iter_mut()
                .find(|(w, _)| w.id() == h)
                .expect("above");
            let mut node = NodeMut::new(img);
            let key = key_of(id);
            if node.fits(crate::page::node::LEAF_CELL_HEADER + key.len()) {
                let Err(i) = node.view().search(&key) else {
                    return Err(Error::Corruption(format!("page {id} freed twice")));
                };
                node.insert_leaf_value(i, &key, CellValue::inline(b""));
                Meta::set_free(meta, head, len + 1);
                done += 1;
                continue;
            }
        }
        // The head list page is full (or there is none): the freed page becomes the new
        // head, holding no ids yet.
        if changed.len() >= max {
            break;
        }
        let w = store.pool.fetch(id)?.write();
        let mut img = vec![0u8; store.page_size];
        NodeMut::format(&mut img, id, 0).set_link(head.unwrap_or(PageId::NONE));
        changed.push((w, img));
        Meta::set_free(meta, Some(id), len + 1);
        done += 1;
    }
    Ok(done)
}

/// Logs `pages` (the meta page among them) as one redo-only record, then installs them.
pub(crate) fn log_images(store: &Store, pages: &mut [(&mut PageWrite<'_>, Vec<u8>)]) -> Result<()> {
    let rec = Record::Images {
        pages: pages
            .iter()
            .map(|(w, img)| (w.id(), compress(img)))
            .collect(),
    };
    let a = store.append(&rec)?;
    for (w, img) in pages.iter_mut() {
        crate::page::set_image_lsn(img, a.lsn.0);
        w.install(img);
        w.mark_dirty(a.lsn, a.end);
    }
    Ok(())
}

/// Frees `ids` onto the free list, in as many records as it takes (each consistent on
/// its own: a crash between two leaves the rest unreachable, for compaction to reclaim).
pub(crate) fn free_pages(store: &Store, mut ids: &[PageId]) -> Result<()> {
    while !ids.is_empty() {
        let mp = store.pool.fetch(PageId::META)?;
        let mut mw = mp.write_valid()?;
        let mut meta = mw.bytes().to_vec();
        let mut changed = Vec::new();
        let n = give(store, &mut meta, ids, &mut changed, PAGES_PER_RECORD - 1)?;
        let mut pages: Vec<(&mut PageWrite<'_>, Vec<u8>)> = changed
            .iter_mut()
            .map(|(w, img)| (w, std::mem::take(img)))
            .collect();
        pages.push((&mut mw, meta));
        log_images(store, &mut pages)?;
        ids = &ids[n..];
    }
    Ok(())
}

/// Every page of the tree at `root`, root first (internal nodes' children, depth first).
pub(crate) fn tree_pages(store: &Store, root: PageId) -> Result<Vec<PageId>> {
    let mut out = Vec::new();
    let mut stack = vec![(root, 0usize)];
    let mut seen = HashSet::new();
    while let Some((id, depth)) = stack.pop() {
        if depth > MAX_DEPTH || !seen.insert(id) {
            return Err(Error::Corruption(format!(
                "tree {root}: page {id} reached twice or too deep"
            )));
        }
        out.push(id);
        let p = store.pool.fetch(id)?;
        let g = p.read_valid()?;
        let n = match crate::page::page_type(&g) {
            Some(PageType::Leaf | PageType::Internal) => Node::new(&g),
            _ => {
                return Err(Error::Corruption(format!(
                    "tree {root}: page {id} is not a node"
                )))
            }
        };
        if !n.is_leaf() {
            stack.push((n.link(), depth + 1));
            for i in 0..n.len() {
                stack.push((n.child(i), depth + 1));
            }
        }
    }
    Ok(out)
}

/// The free list: its list pages (in chain order) and every page it holds (list pages
/// included), checking that no page is on it twice and that its length is the meta
/// page's.
pub(crate) fn free_list(store: &Store) -> Result<(Vec<PageId>, HashSet<PageId>)> {
    let (head, len, count) = {
        let p = store.pool.fetch(PageId::META)?;
        let g = p.read_valid()?;
        (
            Meta::free_head(&g),
            Meta::free_len(&g),
            Meta::page_count(&g),
        )
    };
    let mut lists = Vec::new();
    let mut free = HashSet::new();
    let mut next = head;
    while let Some(id) = next {
        check_id(id, count, "the free list")?;
        if !free.insert(id) || free.len() as u64 > len {
            return Err(Error::Corruption(format!(
                "free list: page {id} twice, or more than the {len} pages the meta page counts"
            )));
        }
        lists.push(id);
        let p = store.pool.fetch(id)?;
        let g = p.read_valid()?;
        let n = list_node(&g, id)?;
        for i in 0..n.len() {
            let f = check_id(id_of(id, n.key(i))?, count, "the free list")?;
            if !free.insert(f) {
                return Err(Error::Corruption(format!("free list: page {f} twice")));
            }
        }
        let link = n.link();
        next = link.is_some().then_some(link);
    }
    if free.len() as u64 != len {
        return Err(Error::Corruption(format!(
            "free list holds {} pages, the meta page counts {len}",
            free.len()
        )));
    }
    Ok((lists, free))
}

/// Verification: no page of the tree at `root` is on the free list `free`.
pub(crate) fn check_not_free(store: &Store, root: PageId, free: &HashSet<PageId>) -> Result<()> {
    match tree_pages(store, root)?
        .into_iter()
        .find(|p| free.contains(p))
    {
        Some(p) => Err(Error::Corruption(format!(
            "page {p} is both in the tree and on the free list"
        ))),
        None => Ok(()),
    }
}
