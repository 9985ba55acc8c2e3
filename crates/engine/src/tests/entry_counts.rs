//! Exact per-tree entry counts (`tree_count`): after every kind of change, rollback,
//! crash, repeated recovery, a checkpoint racing writers, and a read-only open, each
//! tree's count is the number of entries its leaves hold.

use crate::btree::Btree;
use crate::ids::PageId;
use crate::{CommitProtocol, Database, Options, Strategy, Table};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice_storage::SimStorage;
use std::sync::Arc;

fn options() -> Options {
    let mut o = Options::small();
    o.pool_pages = 16;
    o.checkpoint_log_bytes = 0; // only the checkpoints the tests take
    o
}

/// The count the store gives for the tree at `root`, and the entries its leaves hold.
fn count_and_walk(db: &Database, root: PageId) -> (u64, u64) {
    let store = &db.inner.store;
    let latch = store.tree_latch(root);
    let walked = Btree::new(store, root, &latch).verify().unwrap().entries;
    (store.entry_count(root).unwrap(), walked)
}

fn assert_exact(db: &Database, t: &Table, what: &str) {
    let (count, walked) = count_and_walk(db, t.root);
    assert_eq!(count, walked, "{what}: count {count}, leaves hold {walked}");
}

/// True if the store knows the tree's count without a scan.
fn known(db: &Database, root: PageId) -> bool {
    db.inner.store.tree_latch(root).known_entries().is_some()
}

/// One transaction of random puts (new keys and overwrites), deletes (present and
/// absent keys) and large values over `keys` keys; committed unless `rollback`.
fn random_txn(db: &Database, t: &Table, rng: &mut StdRng, keys: u32, rollback: bool) {
    let mut tx = db.begin();
    for _ in 0..rng.gen_range(1..12) {
        let k = format!("k{:05}", rng.gen_range(0..keys));
        match rng.gen_range(0..10) {
            0..=5 => {
                let len = if rng.gen_ratio(1, 20) {
                    3000
                } else {
                    rng.gen_range(0..60)
                };
                tx.put(t, &k, vec![7u8; len]).unwrap();
            }
            _ => {
                tx.delete(t, &k).unwrap();
            }
        }
    }
    if rollback {
        tx.rollback().unwrap();
    } else {
        tx.commit().unwrap();
    }
}

#[test]
fn counts_follow_inserts_deletes_overwrites_and_rollbacks() {
    let sim = SimStorage::new(1);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    assert!(known(&db, t.root), "a new table's count is known");
    assert_eq!(db.inner.store.entry_count(t.root).unwrap(), 0);
    let mut rng = StdRng::seed_from_u64(1);
    for i in 0..300 {
        let rollback = rng.gen_ratio(1, 4);
        random_txn(&db, &t, &mut rng, 400, rollback);
        if i % 25 == 0 {
            assert_exact(&db, &t, &format!("after transaction {i}"));
        }
    }
    assert_exact(&db, &t, "at the end");
    // Uncommitted changes count (the physical count), and their rollback uncounts them.
    let before = db.inner.store.entry_count(t.root).unwrap();
    let mut tx = db.begin();
    tx.put(&t, "new-a", b"1").unwrap();
    tx.put(&t, "new-b", b"1").unwrap();
    assert_eq!(db.inner.store.entry_count(t.root).unwrap(), before + 2);
    tx.rollback().unwrap();
    assert_eq!(db.inner.store.entry_count(t.root).unwrap(), before);
    db.verify().unwrap();
}

/// Crashes at random points (a power loss at a random storage operation, a process
/// kill, or a plain crash) with uncommitted work and checkpoints in between; recovery
/// must give exact counts, twice in a row, and a read-only open of the crashed database
/// too, under every commit protocol and propagation strategy.
#[test]
fn counts_survive_crashes_at_any_point_and_recovery_twice() {
    let protocols = [
        CommitProtocol::Classic,
        CommitProtocol::Elr,
        CommitProtocol::Pipelined,
        CommitProtocol::ElrPipelined,
        CommitProtocol::Async,
    ];
    let strategies = [
        Strategy::CheckpointSweep,
        Strategy::Page(crate::experiment::PageCleaner {
            policy: crate::experiment::Policy::Oldest,
            heap: 0,
        }),
        Strategy::Log,
    ];
    for seed in 0..12u64 {
        let mut o = options();
        o.commit = protocols[seed as usize % protocols.len()];
        o.propagation = strategies[seed as usize % strategies.len()];
        o.page_size = [1024, 2048, 4096, 8192][seed as usize % 4];
        let sim = SimStorage::new(seed);
        let mut rng = StdRng::seed_from_u64(seed);
        {
            let db = Database::open_on(Arc::new(sim.pinned()), "/db", o.clone()).unwrap();
            let t = db.create_table("t").unwrap();
            for i in 0..60 {
                let rollback = rng.gen_ratio(1, 5);
                random_txn(&db, &t, &mut rng, 200, rollback);
                if i % 17 == 0 {
                    db.checkpoint().unwrap();
                }
            }
            // Work in flight at the crash: an open transaction and a late table.
            let u = db.create_table("u").unwrap();
            let mut open = db.begin();
            for j in 0..30 {
                open.put(&t, format!("open{j}"), b"x").unwrap();
                open.put(&u, format!("u{j}"), b"y").unwrap();
            }
            match seed % 3 {
                0 => sim.crash(),
                1 => {
                    sim.crash_at_op(rng.gen_range(1..40));
                    for _ in 0..40 {
                        let mut tx = db.begin();
                        let _ = tx.put(&t, format!("late{}", rng.gen::<u16>()), b"z");
                        if tx.commit().is_err() {
                            break;
                        }
                    }
                    let _ = db.checkpoint();
                    sim.crash();
                }
                _ => sim.kill_process(),
            }
            drop(open);
        }
        let mut ro = o.clone();
        ro.read_only = true;
        for round in 0..2 {
            let db = Database::open_on(Arc::new(sim.pinned()), "/db", ro.clone()).unwrap();
            for name in ["t", "u"] {
                let t = db.table(name).unwrap();
                assert_exact(&db, &t, &format!("seed {seed} read-only {round} {name}"));
            }
            db.verify().unwrap();
            drop(db);
            sim.kill_process();
        }
        for round in 0..2 {
            let db = Database::open_on(Arc::new(sim.pinned()), "/db", o.clone()).unwrap();
            for name in ["t", "u"] {
                let t = db.table(name).unwrap();
                assert!(known(&db, t.root), "seed {seed}: {name} needs a scan");
                assert_exact(&db, &t, &format!("seed {seed} recovery {round} {name}"));
            }
            db.verify().unwrap();
            // Recovery twice: the second finds what the first left, uncheckpointed.
            drop(db);
            sim.crash();
        }
    }
}

/// Checkpoints while several threads insert and delete: each snapshot must hold
/// exactly the changes logged before it, so a crash right after gives exact counts.
#[test]
fn a_checkpoint_racing_writers_snapshots_exact_counts() {
    let sim = SimStorage::new(7);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    std::thread::scope(|s| {
        for w in 0..3u64 {
            let (db, t) = (db.clone(), t.clone());
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(w);
                for i in 0..150 {
                    let mut tx = db.begin();
                    let k = format!("w{w}-{}", rng.gen_range(0..60));
                    let r = if i % 3 == 0 {
                        tx.delete(&t, &k).map(drop)
                    } else {
                        tx.put(&t, &k, b"v").map(drop)
                    };
                    match r {
                        Ok(()) if !rng.gen_ratio(1, 6) => tx.commit().unwrap(),
                        _ => tx.rollback().unwrap(),
                    }
                }
            });
        }
        s.spawn(|| {
            for _ in 0..8 {
                db.checkpoint().unwrap();
            }
        });
    });
    // No checkpoint after the writers: recovery starts from one taken among them.
    sim.crash();
    drop((t, db));
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.table("t").unwrap();
    assert!(known(&db, t.root));
    assert_exact(&db, &t, "after the crash");
}

/// A tree whose count nothing in the log gives (as in a database written before
/// counts) is counted by one scan on first use, and that count is logged: the next
/// recovery knows it without a scan.
#[test]
fn a_tree_without_a_logged_count_is_scanned_once_then_known() {
    let sim = SimStorage::new(3);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..40 {
        random_txn(&db, &t, &mut rng, 300, false);
    }
    db.checkpoint().unwrap();
    // Forget the count, as a database written before counts never had one.
    db.inner.store.forget_count(t.root).unwrap();
    assert!(!known(&db, t.root));
    for _ in 0..10 {
        random_txn(&db, &t, &mut rng, 300, false);
    }
    db.checkpoint().unwrap(); // logs no count for the tree
    sim.crash();
    drop((t, db));
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.table("t").unwrap();
    assert!(
        !known(&db, t.root),
        "no count in the log, yet one was recovered"
    );
    assert_exact(&db, &t, "counted by a scan");
    assert!(known(&db, t.root));
    random_txn(&db, &t, &mut rng, 300, false);
    let mut tx = db.begin();
    tx.put(&t, "last", b"1").unwrap();
    tx.commit().unwrap();
    sim.crash();
    drop((t, db));
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.table("t").unwrap();
    assert!(known(&db, t.root), "the scan's count was not logged");
    assert_exact(&db, &t, "after the scan's count was recovered");
}

/// A partitioned database: each partition's log carries the counts of its own tables.
#[test]
fn counts_of_a_partitioned_database_survive_a_crash() {
    let sim = SimStorage::new(5);
    let open = || {
        crate::Partitioned::builder("/p")
            .log_managers(2)
            .options(options())
            .storage(Arc::new(sim.pinned()))
            .open()
            .unwrap()
    };
    let p = open();
    let tables: Vec<_> = (0..4)
        .map(|i| p.create_table(&format!("t{i}")).unwrap())
        .collect();
    let mut rng = StdRng::seed_from_u64(5);
    for i in 0..80 {
        let mut tx = p.begin();
        for _ in 0..4 {
            let t = &tables[rng.gen_range(0..4)];
            let k = format!("k{}", rng.gen_range(0..50));
            if rng.gen_ratio(1, 3) {
                tx.delete(t, &k).unwrap();
            } else {
                tx.put(t, &k, b"v").unwrap();
            }
        }
        if i % 5 == 0 {
            tx.rollback().unwrap();
        } else {
            tx.commit().unwrap();
        }
        if i == 40 {
            p.checkpoint().unwrap();
        }
    }
    sim.crash();
    drop((tables, p));
    let p = open();
    for i in 0..4 {
        let t = p.table(&format!("t{i}")).unwrap();
        let db = p.partition(t.partition());
        assert_exact(db, &t.table, t.name());
    }
}

/// `verify` (which the crash sweeps, the swarm and the history checker run after every
/// recovery) checks every tree's count against its leaves: a count that is off fails it.
#[test]
fn verify_fails_on_a_count_that_is_off() {
    let sim = SimStorage::new(9);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, "a", b"1").unwrap();
    tx.commit().unwrap();
    db.verify().unwrap();
    db.inner.store.tree_latch(t.root).count(1);
    let e = db.verify().unwrap_err().to_string();
    assert!(e.contains("entry count is 2 but its leaves hold 1"), "{e}");
}
