//! Review of issue 24 item 1 (read-only spill): a read-only open of a crashed database with
//! the smallest pool shows exactly what a writable recovery of the same files shows, and
//! changes nothing — under every propagation strategy, page sizes 1 and 4 KiB, with large
//! values (stored apart, in the hidden blob table) overwritten, deleted and written by a
//! loser past the last checkpoint.

use crate::read_only;

use read_only::*;
use sluice::{Database, Options, Strategy};
use sluice_storage::{SimStorage, Storage};
use sluice_testkit::fence::FencedStorage;
use std::sync::Arc;

fn opts(strategy: &str, page_size: usize) -> Options {
    let mut o = options();
    o.page_size = page_size;
    o.propagation = strategy.parse::<Strategy>().unwrap();
    o
}

fn big(i: u32, tag: &str, page_size: usize) -> Vec<u8> {
    let len = if i.is_multiple_of(3) {
        page_size * 3 + 17
    } else {
        40
    };
    let mut v = format!("{tag}{i}:").into_bytes();
    v.resize(len, (i % 251) as u8);
    v
}

fn crash(sim: &SimStorage, o: &Options) {
    let ps = o.page_size;
    let db = Database::open_on(FencedStorage::for_incarnation(sim), DIR, o.clone()).unwrap();
    let t = db.table_or_create("t").unwrap();
    let mut tx = db.begin();
    for i in 0..200 {
        let _ = tx.put(&t, key(i), big(i, "old", ps)).unwrap();
    }
    tx.commit().unwrap();
    db.checkpoint().unwrap();
    let mut tx = db.begin();
    for i in 0..200 {
        match i % 4 {
            0 => {
                tx.delete(&t, key(i)).unwrap();
            }
            _ => {
                tx.put(&t, key(i), big(i + 1, "new", ps)).unwrap();
            }
        }
    }
    for i in 200..400 {
        let _ = tx.put(&t, key(i), big(i, "added", ps)).unwrap();
    }
    tx.commit().unwrap();
    let mut loser = db.begin();
    for i in (0..400).step_by(5) {
        let _ = loser.put(&t, key(i), big(i, "loser", ps)).unwrap();
    }
    let u = db.table_or_create("u").unwrap();
    let mut tx = db.begin();
    let _ = tx.put(&u, b"sync", b"durable").unwrap();
    tx.commit().unwrap();
    sim.crash();
    drop(loser);
    drop(db);
}

#[test]
fn read_only_open_with_a_16_page_pool_agrees_with_recovery_under_every_strategy() {
    let mut failures = Vec::new();
    for (n, strategy) in ["checkpoint-sweep", "page-oldest", "log"]
        .into_iter()
        .enumerate()
    {
        for (m, page_size) in [1024usize, 4096].into_iter().enumerate() {
            let sim = SimStorage::new(100 + (n * 10 + m) as u64);
            let o = opts(strategy, page_size);
            crash(&sim, &o);
            let guard = NoChanges::new(Arc::new(sim.clone()));
            let ro = Database::builder(DIR)
                .options(Options {
                    read_only: true,
                    pool_pages: 16,
                    ..o.clone()
                })
                .storage(guard.clone() as Arc<dyn Storage>)
                .open();
            let ro = match ro {
                Ok(db) => db,
                Err(e) => {
                    failures.push(format!(
                        "{strategy} {page_size}: read-only open failed: {e}"
                    ));
                    continue;
                }
            };
            let seen = contents(&ro);
            let seen_again = contents(&ro);
            let verified = ro.verify().map(|r| r.entries);
            drop(ro);
            if !guard.refused().is_empty() {
                failures.push(format!(
                    "{strategy} {page_size}: wrote {:?}",
                    guard.refused()
                ));
            }
            let db = Database::open_on(Arc::new(sim.clone()), DIR, o).unwrap();
            let truth = contents(&db);
            db.close().unwrap();
            if seen != truth {
                let diff: Vec<_> = truth["t"]
                    .iter()
                    .filter(|(k, v)| seen.get("t").and_then(|s| s.get(*k)) != Some(v))
                    .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                    .take(5)
                    .collect();
                failures.push(format!(
                    "{strategy} {page_size}: read-only contents differ from recovery's (first keys differing: {diff:?})"
                ));
            }
            if seen_again != seen {
                failures.push(format!("{strategy} {page_size}: a second read differs"));
            }
            if let Err(e) = verified {
                failures.push(format!("{strategy} {page_size}: verify failed: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
