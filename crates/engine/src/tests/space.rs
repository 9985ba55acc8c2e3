//! Freeing a tree, reclaiming what nothing reaches, and verify's checks of the free list.

use crate::space::{free_list, free_pages, tree_pages};
use crate::{Database, Error, Options, Table};
use sluice_storage::SimStorage;
use std::sync::Arc;

pub(super) fn open(sim: &SimStorage) -> Database {
    Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap()
}

pub(super) fn fill(db: &Database, name: &str, n: u32) -> Table {
    let t = db.table_or_create(name).unwrap();
    let mut tx = db.begin();
    for i in 0..n {
        tx.put(&t, format!("key{i:06}"), [5u8; 60]).unwrap();
    }
    tx.commit().unwrap();
    t
}

/// Takes table `name` out of the catalog, as a committed drop does before its
/// `free_tree`.
fn unlist(db: &Database, name: &str) {
    let cat = db.inner.catalog_table();
    let mut tx = db.begin();
    assert!(tx.delete(&cat, name).unwrap().is_some());
    tx.commit().unwrap();
    db.inner.catalog.lock().remove(name);
}

#[test]
fn free_tree_puts_every_page_of_a_tree_on_the_free_list() {
    let sim = SimStorage::new(11);
    let db = open(&sim);
    fill(&db, "other", 100);
    let t = fill(&db, "t", 2000);
    let pages = tree_pages(&db.inner.store, t.root).unwrap();
    assert!(pages.len() > 100, "{} pages", pages.len());
    unlist(&db, "t");
    db.inner.free_tree(t.root).unwrap();
    let free = free_list(&db.inner.store).unwrap().1;
    for p in &pages {
        assert!(free.contains(p), "page {p} of the tree is not free");
    }
    let v = db.verify().unwrap();
    assert_eq!(v.free_pages, pages.len() as u64);
    assert_eq!(v.entries, 100);
    // A power loss after the free: recovery redoes it (or not), the file verifies, and a
    // compaction leaves no page of the tree unaccounted for.
    db.inner.store.log.sync().unwrap();
    sim.crash();
    drop(db);
    let db = open(&sim);
    let v = db.verify().unwrap();
    assert_eq!(v.free_pages, pages.len() as u64);
    let r = db.compact().unwrap();
    assert_eq!(r.pages_freed, 0, "{r:?}");
    assert!(r.pages_returned > 0, "{r:?}");
    db.close().unwrap();
}

#[test]
fn compaction_reclaims_the_pages_of_a_tree_nothing_reaches() {
    let sim = SimStorage::new(12);
    let db = open(&sim);
    fill(&db, "kept", 50);
    let t = fill(&db, "lost", 2000);
    let pages = tree_pages(&db.inner.store, t.root).unwrap().len() as u64;
    // A drop that committed but crashed before freeing its tree.
    unlist(&db, "lost");
    db.close().unwrap();
    let db = open(&sim);
    let r = db.compact().unwrap();
    assert_eq!(r.pages_freed, pages, "{r:?}");
    assert!(r.pages_returned >= pages - 2, "{r:?}");
    let v = db.verify().unwrap();
    assert_eq!(v.entries, 50);
    db.close().unwrap();
}

/// A dropped tree not yet freed (its drop committed, its `free_tree` to come, the
/// dropping transaction holding the table) is not reclaimed by a compaction in between,
/// which would free every page twice.
#[test]
fn compaction_leaves_a_dropped_tree_not_yet_freed_alone() {
    let sim = SimStorage::new(13);
    let db = open(&sim);
    fill(&db, "kept", 50);
    let t = fill(&db, "dropped", 1000);
    let root = t.root;
    let pages = tree_pages(&db.inner.store, root).unwrap().len() as u64;
    unlist(&db, "dropped");
    // The dropping transaction holds the table (`Transaction::finish_drops`) until its
    // pages are freed.
    let r = db.compact().unwrap();
    assert_eq!(r.pages_freed, 0, "{r:?}");
    db.inner.free_tree(root).unwrap();
    drop(t);
    assert_eq!(db.verify().unwrap().free_pages, r.pages_free + pages);
    db.close().unwrap();
}

#[test]
fn verify_finds_a_page_both_free_and_in_a_tree() {
    let sim = SimStorage::new(14);
    let db = open(&sim);
    let t = fill(&db, "t", 500);
    let x = fill(&db, "x", 200);
    unlist(&db, "x");
    db.inner.free_tree(x.root).unwrap();
    db.verify().unwrap();
    // A leaf of `t` as an id on the free list (whose head page has room).
    let pages = tree_pages(&db.inner.store, t.root).unwrap();
    free_pages(&db.inner.store, &pages[3..4]).unwrap();
    let e = db.verify().unwrap_err();
    assert!(matches!(e, Error::Corruption(_)), "{e}");
    assert!(
        e.to_string()
            .contains("both in the tree and on the free list"),
        "{e}"
    );
}

#[test]
fn a_meta_page_without_a_free_list_reads_as_an_empty_list() {
    use crate::page::Meta;
    let mut b = vec![0u8; 1024];
    Meta::format(&mut b, 9);
    assert_eq!(Meta::free_head(&b), None);
    assert_eq!(Meta::free_len(&b), 0);
    assert_eq!(Meta::check(&b), Ok(()));
}

/// A table in the middle of a catalog change — a rename between its delete and its put,
/// a drop that failed after its delete, or the rollback of either between its undo
/// steps — is under no name in the catalog's pages, and perhaps in no handle (the
/// application dropped it). A compaction then must still count its tree in use: it
/// counted only roots whose latch something held, freed the tree, and the rollback put
/// back a catalog entry naming free pages (the swarm's compaction dimension: a table
/// showed another's rows).
#[test]
fn compaction_keeps_a_table_the_catalog_lists_under_no_name_for_a_moment() {
    let sim = SimStorage::new(14);
    let db = open(&sim);
    fill(&db, "kept", 50);
    let t = fill(&db, "moving", 1000);
    let pages = tree_pages(&db.inner.store, t.root).unwrap().len() as u64;
    assert!(pages > 10, "{pages} pages");
    drop(t);
    db.inner.catalog.lock().remove("moving");
    let cat = db.inner.catalog_table();
    let mut tx = db.begin();
    assert!(tx.delete(&cat, "moving").unwrap().is_some());
    let r = db.compact().unwrap();
    assert_eq!(r.pages_freed, 0, "{r:?}");
    tx.rollback().unwrap();
    let t = db.table("moving").expect("listed again");
    let mut tx = db.begin();
    assert_eq!(tx.len(&t).unwrap(), 1000);
    assert_eq!(tx.scan(&t, ..).count(), 1000);
    drop(tx);
    let v = db.verify().unwrap();
    assert_eq!(v.entries, 1050);
    db.close().unwrap();
}

/// A page that was a root with a known count — a create rolled back, its root reclaimed
/// after a reopen — becomes a new table's root. A checkpoint that took the page's old
/// latch before the new table replaced it must find no count there: it logged the old
/// count after the new table's inserts, and recovery counted the new table from it
/// (the swarm's compaction dimension: "its entry count is 0 but its leaves hold 2").
#[test]
fn a_latch_replaced_by_a_new_tree_on_its_page_forgets_the_old_count() {
    let sim = SimStorage::new(15);
    let db = open(&sim);
    fill(&db, "kept", 50);
    let mut tx = db.begin();
    let t = tx.create_table("abandoned").unwrap();
    let root = t.root;
    drop(t);
    tx.rollback().unwrap();
    db.close().unwrap();
    let db = open(&sim);
    let r = db.compact().unwrap();
    assert!(r.pages_freed >= 1, "{r:?}");
    // Recovery rebuilt the abandoned root's count from its snapshot; a checkpoint takes
    // the latch now.
    let old = db.inner.store.tree_latch(root);
    assert_eq!(old.known_entries(), Some(0));
    let t = db.create_table("new").unwrap();
    assert_eq!(t.root, root, "the freed root is the first page reused");
    let mut tx = db.begin();
    tx.put(&t, "a", "1").unwrap();
    tx.put(&t, "b", "2").unwrap();
    tx.commit().unwrap();
    assert_eq!(
        old.known_entries(),
        None,
        "the old latch still holds a count"
    );
    db.checkpoint().unwrap();
    db.inner.store.log.sync().unwrap();
    sim.crash();
    drop(db);
    let db = open(&sim);
    let t = db.table("new").unwrap();
    assert_eq!(db.begin().len(&t).unwrap(), 2);
    db.verify().unwrap();
    db.close().unwrap();
}
