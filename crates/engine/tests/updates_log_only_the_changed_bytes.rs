//! An update of an inline value logs only the bytes that changed (a delta: the common
//! prefix and suffix left out), and the delta is enough to redo it and to undo it
//! exactly — by rollback, by restart undo of a loser, and by redo of the compensation
//! records — whichever part of the value changed and whether its length changed.

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use sluice_testkit::fence::FencedStorage;

fn options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0; // only the checkpoints the tests ask for
    o.checkpoint_interval = std::time::Duration::ZERO;
    o
}

fn open(sim: &SimStorage) -> Database {
    Database::open_on(FencedStorage::for_incarnation(sim), "/db", options()).unwrap()
}

/// A TPC-B-like row: owner, balance, padding to 100 bytes.
fn row(owner: u32, balance: i64) -> Vec<u8> {
    let mut r = vec![b' '; 100];
    r[..4].copy_from_slice(&owner.to_le_bytes());
    r[4..12].copy_from_slice(&balance.to_le_bytes());
    r
}

#[test]
fn a_balance_update_logs_a_fraction_of_the_row() {
    let sim = SimStorage::new(1);
    let db = open(&sim);
    let t = db.create_table("accounts").unwrap();
    let mut tx = db.begin();
    for id in 0..5u32 {
        tx.put(&t, id.to_be_bytes(), row(id, 1_000)).unwrap();
    }
    tx.commit().unwrap();
    db.checkpoint().unwrap();
    // The first change to the leaf after the checkpoint logs its full image; measure the
    // second.
    let mut tx = db.begin();
    tx.put(&t, 2u32.to_be_bytes(), row(2, 1_500)).unwrap();
    tx.commit().unwrap();
    let before = db.stats().log_end;
    let mut tx = db.begin();
    let old = tx.put(&t, 2u32.to_be_bytes(), row(2, -77_777)).unwrap();
    tx.commit().unwrap();
    assert_eq!(old, Some(row(2, 1_500)));
    let bytes = db.stats().log_end - before;
    // One update record and one commit record, each with a 16-byte frame header: with
    // both whole rows the update alone took 272 bytes (issue 10).
    assert!(
        bytes <= 80,
        "{bytes} log bytes for an 8-byte change of a 100-byte row"
    );
    let mut tx = db.begin();
    assert_eq!(
        tx.get(&t, 2u32.to_be_bytes()).unwrap(),
        Some(row(2, -77_777))
    );
    tx.commit().unwrap();
}

/// The value every key starts with.
fn base() -> Vec<u8> {
    (0..100u8).collect()
}

/// A change of `v` by case: which part changes, and how.
fn changed(case: usize, v: &[u8], tag: u8) -> Vec<u8> {
    let mut v = v.to_vec();
    let n = v.len();
    match case {
        0 => v[0] ^= tag,                                         // the first byte
        1 => v[n - 1] ^= tag,                                     // the last byte
        2 => v[n / 2 - 4..n / 2 + 4].fill(tag),                   // eight bytes in the middle
        3 => v.iter_mut().for_each(|b| *b = b.wrapping_add(tag)), // every byte
        4 => drop(v.splice(n / 2..n / 2, vec![tag; 30])),         // grows in the middle
        5 => v.truncate(n - 10 - tag as usize % 5),               // shrinks at the end
        6 => drop(v.drain(..7)),                                  // shrinks at the start
        7 => v = vec![tag; 3],                                    // to a short value
        8 => v.extend(std::iter::repeat_n(tag, 40)),              // grows at the end
        _ => unreachable!(),
    }
    v
}

const CASES: usize = 9;

fn key(case: usize) -> Vec<u8> {
    format!("key{case}").into_bytes()
}

fn values(db: &Database) -> Vec<Option<Vec<u8>>> {
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let v = (0..CASES).map(|c| tx.get(&t, key(c)).unwrap()).collect();
    tx.commit().unwrap();
    v
}

#[test]
fn delta_updates_are_redone_and_undone_exactly() {
    let sim = SimStorage::new(2);
    let db = open(&sim);
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for c in 0..CASES {
        tx.put(&t, key(c), base()).unwrap();
    }
    tx.commit().unwrap();
    db.checkpoint().unwrap();

    // Committed: each key changed by its case, twice (the second a delta of the first).
    let mut want = Vec::new();
    let mut tx = db.begin();
    for c in 0..CASES {
        let v = changed(c, &base(), 0x11);
        tx.put(&t, key(c), &v).unwrap();
        let v = changed(c, &v, 0x22);
        tx.put(&t, key(c), &v).unwrap();
        want.push(Some(v));
    }
    tx.commit().unwrap();
    assert_eq!(values(&db), want);

    // Rolled back in the process: compensation records that are deltas too.
    let mut tx = db.begin();
    for (c, w) in want.iter().enumerate() {
        let v = changed(c, w.as_ref().unwrap(), 0x33);
        tx.put(&t, key(c), &v).unwrap();
        let v = changed((c + 1) % CASES, &v, 0x44);
        tx.put(&t, key(c), &v).unwrap();
    }
    tx.rollback().unwrap();
    assert_eq!(values(&db), want);

    // A loser: durable records, no outcome, then a power loss.
    let mut loser = db.begin();
    for (c, w) in want.iter().enumerate() {
        let v = changed(c, w.as_ref().unwrap(), 0x55);
        loser.put(&t, key(c), &v).unwrap();
        let v = changed((c + 2) % CASES, &v, 0x66);
        loser.put(&t, key(c), &v).unwrap();
    }
    db.log().sync().unwrap();
    sim.crash();
    drop(loser);
    drop(t);
    drop(db);

    // Recovery redoes the committed deltas, the rollback's compensation deltas and the
    // loser's deltas on the pages of the checkpoint, then undoes the loser from the
    // values its deltas made.
    let db = open(&sim);
    let r = db.recovery_report();
    assert_eq!(r.losers, 1);
    assert_eq!(r.undone, 2 * CASES as u64);
    assert!(
        r.redone >= 8 * CASES as u64,
        "only {} changes redone",
        r.redone
    );
    assert_eq!(values(&db), want);
    db.verify().unwrap();

    // And once more after a crash right after that recovery (its checkpoint included).
    sim.crash();
    drop(db);
    let db = open(&sim);
    assert_eq!(db.recovery_report().losers, 0);
    assert_eq!(values(&db), want);
    db.verify().unwrap();
}
