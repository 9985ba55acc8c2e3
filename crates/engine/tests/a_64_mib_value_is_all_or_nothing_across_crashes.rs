//! A 64 MiB value overwriting a committed 1 MiB one, with the simulated disk halted at
//! several points while it is written and committed (power losses, and a process kill
//! followed by a power loss): after recovery the key holds either the old value or the
//! new one, whole, byte for byte; once the commit returned, always the new one. Every
//! tree verifies, and the recovered database takes the overwrite again.

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use sluice_testkit::fence::FencedStorage;

const KEY: &[u8] = b"movie";

fn value(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn options() -> Options {
    Options {
        // A pool of 8 MiB: the value's pages are evicted while it is written.
        pool_pages: 1024,
        // Checkpoints run while it is written.
        checkpoint_log_bytes: 16 << 20,
        ..Options::default()
    }
}

fn open(sim: &SimStorage) -> Database {
    Database::open_on(FencedStorage::for_incarnation(sim), "/db", options()).unwrap()
}

/// A database holding the old value, committed.
fn setup(sim: &SimStorage, old: &[u8]) {
    let db = open(sim);
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, KEY, old).unwrap();
    tx.commit().unwrap();
    drop(t);
    db.close().unwrap();
}

/// Overwrites the value; true if the commit returned.
fn overwrite(sim: &SimStorage, new: &[u8]) -> bool {
    let db = open(sim);
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let r = tx.put(&t, KEY, new).and_then(|old| {
        assert!(old.is_some(), "the old value was there");
        tx.commit()
    });
    r.is_ok()
}

#[test]
fn a_64_mib_value_is_all_or_nothing_across_crashes() {
    let old = value(1, 1 << 20);
    let new = value(2, 64 << 20);

    // Count the operations of a whole overwrite, to halt at points spread across it.
    let sim = SimStorage::new(1);
    setup(&sim, &old);
    let before = sim.stats().ops;
    assert!(overwrite(&sim, &new));
    let ops = sim.stats().ops - before;
    drop(sim);

    // Halts from early in the chunks to just after the commit record's sync.
    for (i, at) in [ops / 10, ops / 3, ops / 2, 4 * ops / 5, ops - 2, ops + 5]
        .into_iter()
        .enumerate()
    {
        let sim = SimStorage::new(10 + i as u64);
        setup(&sim, &old);
        let kill = i % 3 == 1;
        if kill {
            sim.kill_at_op(at.max(1));
        } else {
            sim.crash_at_op(at.max(1));
        }
        let committed = overwrite(&sim, &new);
        sim.disarm_crash();
        if kill {
            // A reopen from the page cache first, then the power goes too.
            let db = open(&sim);
            drop(db);
            sim.crash();
        } else if committed {
            sim.crash();
        }
        let db = open(&sim);
        let t = db.table("t").unwrap();
        let mut tx = db.begin();
        let got = tx.get(&t, KEY).unwrap().expect("the key is there");
        tx.commit().unwrap();
        let is_new = got.len() == new.len() && got == new;
        let is_old = got.len() == old.len() && got == old;
        assert!(
            is_new || is_old,
            "halt at op {at} of {ops}: {} bytes, neither the old value nor the new one",
            got.len()
        );
        assert!(
            !committed || is_new,
            "halt at op {at}: a committed overwrite was lost"
        );
        println!(
            "halt at op {at} of {ops} ({}): {}",
            if kill {
                "kill, then power loss"
            } else {
                "power loss"
            },
            if is_new { "new value" } else { "old value" }
        );
        db.verify().unwrap();
        // The recovered database takes the overwrite again.
        let mut tx = db.begin();
        tx.put(&t, KEY, &new).unwrap();
        tx.commit().unwrap();
        let mut tx = db.begin();
        assert!(tx.get(&t, KEY).unwrap().unwrap() == new);
        tx.commit().unwrap();
        drop(t);
        db.close().unwrap();
    }
}
