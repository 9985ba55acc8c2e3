//! A read-only open of a complete partitioned database — opened, read, refused a write,
//! closed (the close waits for the coordinator's pending decisions, of which a read-only
//! database has none) — makes no call that could change the disk, and the tree stays
//! byte for byte as it was. A guard beside `read_only_open_of_a_missing_…`.

use crate::read_only;

use read_only::NoChanges;
use sluice::{Options, Partitioned};
use sluice_storage::{OpenOptions, SimStorage, Storage};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

fn open(storage: Arc<dyn Storage>, read_only: bool) -> sluice::Result<Partitioned> {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = std::time::Duration::ZERO;
    o.read_only = read_only;
    Partitioned::builder("/db")
        .log_managers(2)
        .options(o)
        .storage(storage)
        .assign("a", 0)
        .assign("b", 1)
        .open()
}

/// Every file under `/` with its bytes (`None` for a directory).
fn tree(storage: &dyn Storage) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut all = BTreeMap::new();
    let mut todo = vec![PathBuf::from("/")];
    while let Some(p) = todo.pop() {
        match storage.list(&p) {
            Ok(names) => {
                all.insert(p.clone(), None);
                todo.extend(names.iter().map(|n| p.join(n)));
            }
            Err(_) => {
                let f = storage.open(&p, OpenOptions::READ_ONLY).unwrap();
                let mut b = vec![0; f.len().unwrap() as usize];
                f.read_exact_at(&mut b, 0).unwrap();
                all.insert(p, Some(b));
            }
        }
    }
    all
}

#[test]
fn read_only_open_of_a_partitioned_database_changes_nothing() {
    let sim = SimStorage::new(2);
    let db = open(Arc::new(sim.pinned()), false).unwrap();
    let (a, b) = (db.create_table("a").unwrap(), db.create_table("b").unwrap());
    let mut tx = db.begin();
    tx.put(&a, b"k", b"va").unwrap();
    tx.put(&b, b"k", b"vb").unwrap();
    tx.commit().unwrap();
    db.close().unwrap();

    let guard = NoChanges::new(Arc::new(sim.pinned()));
    let before = tree(&sim);
    let db = open(guard.clone(), true).unwrap();
    let (a, b) = (db.table("a").unwrap(), db.table("b").unwrap());
    let mut tx = db.begin();
    assert_eq!(tx.get(&a, b"k").unwrap().as_deref(), Some(&b"va"[..]));
    assert_eq!(tx.get(&b, b"k").unwrap().as_deref(), Some(&b"vb"[..]));
    tx.commit().unwrap();
    let mut tx = db.begin();
    assert!(matches!(
        tx.put(&b, b"k", b"x"),
        Err(sluice::Error::ReadOnly)
    ));
    drop(tx);
    db.close().unwrap();
    assert_eq!(guard.refused(), Vec::<String>::new());
    assert!(before == tree(&sim), "the read-only open changed a file");
}
