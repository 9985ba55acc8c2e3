//! Outside review of the remembered leaf (`btree/remembered.rs`) and of undo from the
//! update record's change (`log_record::Undo`, `Btree::undo`): a put after
//! `get_for_update` whose leaf went stale in every way the brief lists, and rollback
//! and restart undo of chains of patches, whole updates, large values, deletes and
//! re-inserts of one key, each checked for the exact bytes.

use crate::btree::Btree;
use crate::propagation::{PageCleaner, Policy};
use crate::{Database, Error, Options, Strategy, Table};
use sluice_storage::SimStorage;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn opts(strategy: Strategy, pool: usize) -> Options {
    let mut o = Options::small();
    o.pool_pages = pool;
    o.propagation = strategy;
    // No checkpoint but those a test takes: a checkpoint holds every tree latch
    // exclusively for a moment (`Store::log_counts`), after which a put descends again.
    o.checkpoint_log_bytes = 1 << 40;
    o
}

fn open(sim: &SimStorage, o: &Options) -> Database {
    Database::open_on(Arc::new(sim.clone()), "/db", o.clone()).unwrap()
}

fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::CheckpointSweep,
        Strategy::Page(PageCleaner {
            policy: Policy::Oldest,
            heap: 0,
        }),
        Strategy::Log,
    ]
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A 100-byte row with a balance at bytes 40..48 (an update of it is a patch).
fn row(tag: u32, balance: u64) -> Vec<u8> {
    let mut v: Vec<u8> = (0..100u32).map(|i| (i * 7 + tag) as u8).collect();
    v[40..48].copy_from_slice(&balance.to_le_bytes());
    v
}

fn balance(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[40..48].try_into().unwrap())
}

fn remembered(t: &Table) -> [u64; 2] {
    let r = &t.latch.remembered;
    [r[0].load(Ordering::Relaxed), r[1].load(Ordering::Relaxed)]
}

fn leaf_of(db: &Database, t: &Table, key: &[u8]) -> crate::ids::PageId {
    let tree = Btree::new(&db.inner.store, t.root, &t.latch);
    let _shared = t.latch.read();
    let id = tree.leaf_for(t.root, key).unwrap().id();
    id
}

/// Every entry of `t`, as a reader sees it.
fn contents(db: &Database, t: &Table) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut tx = db.begin();
    let got = tx
        .scan(t, ..)
        .map(|e| e.unwrap())
        .collect::<BTreeMap<_, _>>();
    tx.commit().unwrap();
    got
}

fn check(db: &Database, t: &Table, want: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    db.verify().unwrap();
    let got = contents(db, t);
    assert_eq!(got.len(), want.len(), "{what}: entries");
    for (k, v) in want {
        let g = got.get(k);
        assert!(
            g == Some(v),
            "{what}: {} is {:?} bytes, want {} bytes (first diff at {:?})",
            String::from_utf8_lossy(k),
            g.map(|g| g.len()),
            v.len(),
            g.and_then(|g| g.iter().zip(v).position(|(a, b)| a != b))
        );
    }
    let mut tx = db.begin();
    for (k, v) in want {
        assert_eq!(tx.get(t, k).unwrap().as_ref(), Some(v), "{what}: get");
    }
    assert_eq!(tx.len(t).unwrap(), want.len() as u64, "{what}: len");
    tx.commit().unwrap();
}

/// The successive values one key takes in the chain of changes below (`None`: deleted):
/// patches that keep, grow and shrink the length, a whole new value, a large value and
/// an overwrite of it, back to inline, a delete and a re-insert, and patches again.
fn chain(max_entry: usize, tag: u32) -> Vec<Option<Vec<u8>>> {
    let v0 = row(tag, 1000);
    let mut out = Vec::new();
    let mut v = v0.clone();
    // Patches of the balance: each undo must reverse exactly its own delta.
    for b in [1001u64, 1002, 77, 1_000_000, 3] {
        v[40..48].copy_from_slice(&b.to_le_bytes());
        out.push(Some(v.clone()));
    }
    // A patch that grows the value in the middle, one that shrinks it at the end.
    v.splice(60..60, [0xAA, 0xBB, 0xCC]);
    out.push(Some(v.clone()));
    v.truncate(80);
    out.push(Some(v.clone()));
    // A whole new value (a delta would not be smaller).
    let w: Vec<u8> = (0..90u32).map(|i| (i * 13 + 5 + tag) as u8).collect();
    out.push(Some(w.clone()));
    // A large value, then an overwrite of it that changes a few bytes.
    let mut big: Vec<u8> = (0..3 * max_entry as u32)
        .map(|i| (i * 31 + tag) as u8)
        .collect();
    out.push(Some(big.clone()));
    big[100] ^= 0xFF;
    big.push(9);
    out.push(Some(big));
    // Back to an inline value that differs from the last inline one in one byte.
    let mut x = w.clone();
    x[3] ^= 1;
    out.push(Some(x.clone()));
    x[4] ^= 1;
    out.push(Some(x.clone()));
    // Deleted, re-inserted, patched.
    out.push(None);
    let mut y = row(tag + 1, 5);
    out.push(Some(y.clone()));
    y[40] = 6;
    out.push(Some(y.clone()));
    y[41] = 6;
    out.push(Some(y));
    out
}

/// Runs `chain` on the keys `ks` in transaction `tx`, interleaved (so each key's changes
/// are spread over other changes of the same leaf), each change a `get_for_update` of the
/// key (checked against what the previous change left) then a put or delete (its return
/// checked too), which starts from the leaf the read remembered. On every other step,
/// another transaction changes the key's neighbour in the same leaf between the read
/// and the put and commits (the leaf's PageLSN moves: the slot is searched again); `want`
/// follows those committed changes.
fn run_chains(
    db: &Database,
    tx: &mut crate::Transaction,
    t: &Table,
    ks: &[u32],
    want: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    max_entry: usize,
) {
    let chains: Vec<_> = ks.iter().map(|&k| chain(max_entry, k)).collect();
    let mut cur: Vec<Option<Vec<u8>>> = ks.iter().map(|&k| want.get(&key(k)).cloned()).collect();
    let (mut used, mut changes) = ([0u64; 2], 0u64);
    // Step by step across every key's chain (the chains index by step and by key).
    #[allow(clippy::needless_range_loop)]
    for step in 0..chains[0].len() {
        for (j, &k) in ks.iter().enumerate() {
            let before = remembered(t);
            let got = tx.get_for_update(t, key(k)).unwrap();
            assert_eq!(got, cur[j], "key {k} before step {step}");
            if step % 4 == 1 {
                let n = key(k + 1);
                let mut other = db.begin();
                let mut nv = other.get_for_update(t, &n).unwrap().unwrap();
                nv[0] = nv[0].wrapping_add(1);
                nv[45] = nv[45].wrapping_add(1);
                other.put(t, &n, &nv).unwrap();
                other.commit().unwrap();
                want.insert(n, nv);
            } else if step % 4 == 3 {
                // An insert below the key (below its predecessor, whose gap is not the
                // key's): the key's slot moves up by one.
                let n = format!("key{:06}+{step:03}", k - 2).into_bytes();
                let mut other = db.begin();
                other.put(t, &n, row(step as u32, 7)).unwrap();
                other.commit().unwrap();
                want.insert(n, row(step as u32, 7));
            }
            let old = match &chains[j][step] {
                Some(v) => tx.put(t, key(k), v).unwrap(),
                None => tx.delete(t, key(k)).unwrap(),
            };
            assert_eq!(
                old, cur[j],
                "key {k} step {step}: the old value the change returned"
            );
            cur[j] = chains[j][step].clone();
            let after = remembered(t);
            // The change started from the remembered leaf unless something took the tree
            // latch exclusively meanwhile (a split); with its slot when the PageLSN did
            // not move.
            used[0] += after[0] - before[0];
            used[1] += after[1] - before[1];
            changes += 1;
        }
    }
    // The remembered path is what these chains exercise.
    assert!(used[0] * 2 > changes, "{used:?} of {changes}");
    assert!(used[1] > 0 && used[1] < used[0], "{used:?} of {changes}");
}

fn setup(db: &Database, n: u32) -> (Table, BTreeMap<Vec<u8>, Vec<u8>>) {
    let t = db.table_or_create("t").unwrap();
    let mut want = BTreeMap::new();
    let mut tx = db.begin();
    for i in 0..n {
        let v = row(i, 1000);
        tx.put(&t, key(i), &v).unwrap();
        want.insert(key(i), v);
    }
    tx.commit().unwrap();
    (t, want)
}

/// Rollback, every way a transaction is rolled back: each key maps to exactly its value
/// before the transaction, after a chain of patches (undone one delta at a time from
/// what the tree holds), whole updates, large values, deletes and re-inserts.
#[test]
fn a_chain_of_changes_of_one_key_rolls_back_to_the_exact_first_value() {
    for how in ["explicit", "drop", "failed", "deadlock"] {
        let sim = SimStorage::new(9101);
        let o = opts(Strategy::CheckpointSweep, 32);
        let db = open(&sim, &o);
        let max_entry = db.limits().max_entry;
        let (t, mut want) = setup(&db, 120);
        let before = remembered(&t);
        let mut tx = db.begin();
        run_chains(&db, &mut tx, &t, &[10, 40, 90], &mut want, max_entry);
        let after = remembered(&t);
        assert!(
            after[0] > before[0] && after[1] > before[1],
            "{after:?} {before:?}"
        );
        match how {
            "explicit" => tx.rollback().unwrap(),
            "drop" => drop(tx),
            "failed" => {
                // An operation that fails fails the transaction; its rollback follows.
                let huge = vec![1u8; db.limits().max_key + 1];
                assert!(tx.put(&t, &huge, b"x").is_err());
                tx.rollback().unwrap();
            }
            "deadlock" => {
                // Another transaction waits for a key this one holds while this one
                // waits for one it holds: one of them is the victim and rolls back.
                let db2 = db.clone();
                let t2 = t.clone();
                let mut other = db.begin();
                other.get_for_update(&t, key(100)).unwrap();
                let h = std::thread::spawn(move || {
                    let r = other.get_for_update(&t2, key(10));
                    match r {
                        Ok(_) => other.commit().unwrap(),
                        Err(_) => drop(other),
                    }
                    drop(db2);
                });
                std::thread::sleep(Duration::from_millis(50));
                let r = tx.get_for_update(&t, key(100));
                match r {
                    Err(e) => {
                        assert!(e.is_retryable(), "{e}");
                        tx.rollback().unwrap();
                    }
                    Ok(_) => tx.rollback().unwrap(),
                }
                h.join().unwrap();
            }
            _ => unreachable!(),
        }
        check(&db, &t, &want, how);
        // And after a crash: the rollback's compensations redo to the same values.
        db.inner.store.log.sync().unwrap();
        sim.crash();
        drop((t, db));
        let db = open(&sim, &o);
        let t = db.table("t").unwrap();
        check(&db, &t, &want, &format!("{how}, after a crash"));
    }
}

/// Restart undo of a loser with the same chains, under each propagation strategy, with
/// the loser's pages written (a checkpoint in the middle of it) or not.
#[test]
fn a_loser_with_chains_of_changes_is_undone_exactly_by_recovery() {
    for (s, strategy) in strategies().into_iter().enumerate() {
        for checkpoint in [false, true] {
            let sim = SimStorage::new(9200 + s as u64 * 2 + checkpoint as u64);
            let o = opts(strategy, 24);
            let db = open(&sim, &o);
            let max_entry = db.limits().max_entry;
            let (t, mut want) = setup(&db, 120);
            let mut tx = db.begin();
            run_chains(&db, &mut tx, &t, &[10, 12, 60], &mut want, max_entry);
            if checkpoint {
                db.checkpoint().unwrap();
            }
            // More changes after the checkpoint.
            run_chains(&db, &mut tx, &t, &[30, 32], &mut want, max_entry);
            db.inner.store.log.sync().unwrap();
            sim.crash();
            std::mem::forget(tx);
            drop((t, db));
            let db = open(&sim, &o);
            let t = db.table("t").unwrap();
            check(
                &db,
                &t,
                &want,
                &format!("{strategy:?}, checkpoint {checkpoint}"),
            );
            // And a second crash right after recovery (its compensations redone).
            db.inner.store.log.sync().unwrap();
            sim.crash();
            drop((t, db));
            let db = open(&sim, &o);
            let t = db.table("t").unwrap();
            check(
                &db,
                &t,
                &want,
                &format!("{strategy:?}, checkpoint {checkpoint}, twice"),
            );
        }
    }
}

/// The transaction itself splits the remembered leaf between its read and its put
/// (inserting keys next to the one it read), deletes the key and puts it back, and puts
/// after scans; the leaf is evicted in between and the pool is tiny. (Any write of the
/// transaction takes the remembered leaf, so after its own inserts the put descends:
/// this shows that path is exact, not the remembered one.)
#[test]
fn a_remembered_leaf_the_transaction_itself_split_is_not_used() {
    for strategy in strategies() {
        let sim = SimStorage::new(9301);
        let o = opts(strategy, 16);
        let db = open(&sim, &o);
        let (t, mut want) = setup(&db, 200);
        let k = key(77);
        let leaf = leaf_of(&db, &t, &k);
        let mut tx = db.begin();
        let v = tx.get_for_update(&t, &k).unwrap().unwrap();
        assert_eq!(v, want[&k]);
        // Inserted just above and below the key until the leaf splits.
        let mut n = 0;
        while leaf_of(&db, &t, &k) == leaf || n < 20 {
            for near in [format!("key000076+{n:03}"), format!("key000077+{n:03}")] {
                tx.put(&t, &near, row(n, 1)).unwrap();
                want.insert(near.into_bytes(), row(n, 1));
            }
            n += 1;
            assert!(n < 200);
        }
        let mut v2 = v.clone();
        v2[45] = 0x55;
        assert_eq!(tx.put(&t, &k, &v2).unwrap(), Some(v.clone()));
        want.insert(k.clone(), v2.clone());
        // get_for_update, delete, put of the same key; a scan in between.
        assert_eq!(tx.get_for_update(&t, &k).unwrap(), Some(v2.clone()));
        assert_eq!(tx.delete(&t, &k).unwrap(), Some(v2.clone()));
        assert_eq!(tx.scan(&t, ..).count(), want.len() - 1);
        assert_eq!(tx.put(&t, &k, &v).unwrap(), None);
        want.insert(k.clone(), v.clone());
        // get_for_update, evicted, another key of the leaf changed by this transaction
        // (the PageLSN moves), evicted again, put.
        assert_eq!(tx.get_for_update(&t, &k).unwrap(), Some(v.clone()));
        let leaf = leaf_of(&db, &t, &k);
        let _ = db.inner.store.pool.evict(leaf);
        tx.put(&t, key(78), row(78, 2)).unwrap();
        want.insert(key(78), row(78, 2));
        let _ = db.inner.store.pool.evict(leaf);
        let mut v3 = v.clone();
        v3[0] = 0;
        assert_eq!(tx.put(&t, &k, &v3).unwrap(), Some(v.clone()));
        want.insert(k.clone(), v3);
        tx.commit().unwrap();
        check(&db, &t, &want, &format!("{strategy:?}"));
        db.inner.store.log.sync().unwrap();
        sim.crash();
        drop((t, db));
        let db = open(&sim, &o);
        let t = db.table("t").unwrap();
        check(&db, &t, &want, &format!("{strategy:?}, after a crash"));
    }
}

/// Between the read and the put, another transaction changes other keys of the leaf
/// (the PageLSN moves: the slot must be searched again), deletes the keys around it
/// (their slots shift), a checkpoint writes the leaf, and the leaf is evicted and read
/// back into another frame; the read was of an absent key (the put inserts) or a
/// present one. Then the whole transaction rolls back.
#[test]
fn a_remembered_leaf_changed_by_others_writes_and_rolls_back_exactly() {
    for strategy in strategies() {
        for absent in [false, true] {
            let sim = SimStorage::new(9401);
            let o = opts(strategy, 16);
            let db = open(&sim, &o);
            let (t, mut want) = setup(&db, 200);
            let u = db.table_or_create("u").unwrap();
            let mut fill = db.begin();
            for i in 0..400 {
                fill.put(&u, key(i), row(i, 0)).unwrap();
            }
            fill.commit().unwrap();
            let k: Vec<u8> = if absent {
                b"key000100-new".to_vec()
            } else {
                key(100)
            };
            let mut tx = db.begin();
            let v = tx.get_for_update(&t, &k).unwrap();
            assert_eq!(v.as_ref(), want.get(&k));
            {
                let mut other = db.begin();
                for i in [95, 96, 97, 98, 103, 104, 105] {
                    other.delete(&t, key(i)).unwrap();
                    want.remove(&key(i));
                }
                for i in [93, 94, 106] {
                    other.put(&t, key(i), row(i, 9)).unwrap();
                    want.insert(key(i), row(i, 9));
                }
                other.commit().unwrap();
            }
            // A page cleaner writes the leaf meanwhile (a checkpoint would take the tree
            // latch exclusively, and the put would descend).
            std::thread::sleep(Duration::from_millis(100));
            let leaf = leaf_of(&db, &t, &k);
            let _ = db.inner.store.pool.evict(leaf);
            // Other pages take the frames.
            assert_eq!(contents(&db, &u).len(), 400);
            let mut nv = row(100, 4242);
            nv[99] = 1;
            let before = remembered(&t);
            assert_eq!(tx.put(&t, &k, &nv).unwrap(), v);
            let after = remembered(&t);
            assert_eq!(
                [after[0] - before[0], after[1] - before[1]],
                [1, 0],
                "the put used the remembered leaf, not its slot"
            );
            assert_eq!(tx.get(&t, &k).unwrap(), Some(nv.clone()));
            let committed = want.clone();
            let mut nv2 = nv.clone();
            nv2[41] ^= 0xFF;
            assert_eq!(tx.get_for_update(&t, &k).unwrap(), Some(nv.clone()));
            tx.put(&t, &k, &nv2).unwrap();
            tx.rollback().unwrap();
            check(
                &db,
                &t,
                &committed,
                &format!("{strategy:?} absent {absent}"),
            );
            // The same, committed.
            let mut tx = db.begin();
            assert_eq!(tx.get_for_update(&t, &k).unwrap(), v);
            let _ = db.inner.store.pool.evict(leaf_of(&db, &t, &k));
            tx.put(&t, &k, &nv).unwrap();
            tx.commit().unwrap();
            want.insert(k.clone(), nv);
            check(
                &db,
                &t,
                &want,
                &format!("{strategy:?} absent {absent}, committed"),
            );
            db.inner.store.log.sync().unwrap();
            sim.crash();
            drop((t, db));
            let db = open(&sim, &o);
            let t = db.table("t").unwrap();
            check(
                &db,
                &t,
                &want,
                &format!("{strategy:?} absent {absent}, crash"),
            );
        }
    }
}

/// Transfers between accounts (get_for_update then put of each, patches of the balance)
/// from several threads, while another thread inserts and deletes filler keys between
/// the accounts (splits of the leaves the transfers remember), a third runs checkpoints,
/// counts, reverse scans and compactions, some transfers roll back after their puts,
/// and the pool is tiny. The total never changes, no account goes negative, every
/// account's version counter equals the transfers that committed on it (no lost
/// update), in memory and after a crash.
#[test]
fn concurrent_read_modify_writes_under_splits_evictions_and_rollbacks_lose_nothing() {
    const ACCOUNTS: u32 = 40;
    const START: u64 = 1000;
    for strategy in strategies() {
        let sim = SimStorage::new(9501);
        let mut o = opts(strategy, 20);
        o.lock_timeout = Duration::from_millis(300);
        let db = open(&sim, &o);
        let t = db.table_or_create("acct").unwrap();
        let acct = |a: u32| format!("a{a:04}").into_bytes();
        let mut tx = db.begin();
        for a in 0..ACCOUNTS {
            tx.put(&t, acct(a), row(a, START)).unwrap();
        }
        tx.commit().unwrap();
        // Per account: committed transfers that changed it (versions live in the row too,
        // at bytes 48..56).
        let commits: Arc<Vec<AtomicU64>> =
            Arc::new((0..ACCOUNTS).map(|_| AtomicU64::new(0)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..3u64)
            .map(|th| {
                let (db, t, commits) = (db.clone(), t.clone(), commits.clone());
                std::thread::spawn(move || {
                    let mut x = th * 7919 + 1;
                    let mut done = 0;
                    let mut rolled = 0;
                    while done < 80 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let (f, g) = ((x >> 33) as u32 % ACCOUNTS, (x >> 45) as u32 % ACCOUNTS);
                        if f == g {
                            continue;
                        }
                        let abort = x % 4 == 0;
                        let mut tx = db.begin();
                        let r = (|| {
                            let mut fv = tx.get_for_update(&t, acct(f))?.unwrap();
                            let mut gv = tx.get_for_update(&t, acct(g))?.unwrap();
                            let amount = (x % 13).min(balance(&fv));
                            let (fb, gb) = (balance(&fv) - amount, balance(&gv) + amount);
                            fv[40..48].copy_from_slice(&fb.to_le_bytes());
                            gv[40..48].copy_from_slice(&gb.to_le_bytes());
                            for v in [&mut fv, &mut gv] {
                                let n = u64::from_le_bytes(v[48..56].try_into().unwrap());
                                v[48..56].copy_from_slice(&(n + 1).to_le_bytes());
                            }
                            // Read again for update just before the put (the remembered leaf
                            // is the one of the second read).
                            tx.get_for_update(&t, acct(f))?;
                            tx.put(&t, acct(f), &fv)?;
                            tx.get_for_update(&t, acct(g))?;
                            tx.put(&t, acct(g), &gv)?;
                            Ok::<_, Error>(())
                        })();
                        match r {
                            Ok(()) if abort => {
                                tx.rollback().unwrap();
                                rolled += 1;
                            }
                            Ok(()) => {
                                tx.commit().unwrap();
                                commits[f as usize].fetch_add(1, Ordering::SeqCst);
                                commits[g as usize].fetch_add(1, Ordering::SeqCst);
                                done += 1;
                            }
                            Err(e) if e.is_retryable() => tx.rollback().unwrap(),
                            Err(e) => panic!("transfer failed: {e}"),
                        }
                    }
                    rolled
                })
            })
            .collect();
        let splitter = {
            let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut round = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    let mut tx = db.begin();
                    let r = (|| {
                        for a in (round % 3..ACCOUNTS).step_by(3) {
                            for j in 0..4 {
                                let k = format!("a{a:04}+{round:05}-{j}");
                                if round.is_multiple_of(2) {
                                    tx.put(&t, &k, [round as u8; 90])?;
                                } else {
                                    let k0 = format!("a{a:04}+{:05}-{j}", round - 1);
                                    tx.delete(&t, &k0)?;
                                }
                            }
                        }
                        Ok::<_, Error>(())
                    })();
                    match r {
                        Ok(()) => {
                            tx.commit().unwrap();
                            round += 1;
                        }
                        Err(e) if e.is_retryable() => tx.rollback().unwrap(),
                        Err(e) => panic!("filler failed: {e}"),
                    }
                }
            })
        };
        let other = {
            let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    match i % 4 {
                        0 => db.checkpoint().unwrap(),
                        1 => {
                            let mut tx = db.begin();
                            let _ = tx.len(&t);
                            let _ = tx.commit();
                        }
                        2 => {
                            let mut tx = db.begin();
                            let n = tx.scan(&t, ..).rev().take(5).count();
                            assert!(n <= 5);
                            let _ = tx.commit();
                        }
                        _ => {
                            db.compact().unwrap();
                        }
                    }
                    i += 1;
                    std::thread::sleep(Duration::from_millis(3));
                }
            })
        };
        let mut rolled = 0;
        for w in workers {
            rolled += w.join().unwrap();
        }
        stop.store(true, Ordering::SeqCst);
        splitter.join().unwrap();
        other.join().unwrap();
        assert!(rolled > 0);
        let verify = |db: &Database, what: &str| {
            db.verify().unwrap();
            let t = db.table("acct").unwrap();
            let mut tx = db.begin();
            let mut total = 0;
            for a in 0..ACCOUNTS {
                let v = tx.get(&t, acct(a)).unwrap().unwrap();
                let version = u64::from_le_bytes(v[48..56].try_into().unwrap());
                let base = u64::from_le_bytes(row(a, START)[48..56].try_into().unwrap());
                assert_eq!(
                    version - base,
                    commits[a as usize].load(Ordering::SeqCst),
                    "{what}: account {a}'s committed changes"
                );
                // Every byte but the balance and the version is the row's first one.
                let mut r = row(a, balance(&v));
                r[48..56].copy_from_slice(&v[48..56]);
                assert_eq!(v, r, "{what}: account {a}'s bytes");
                total += balance(&v);
            }
            tx.commit().unwrap();
            assert_eq!(total, START * ACCOUNTS as u64, "{what}: the total");
        };
        verify(&db, &format!("{strategy:?}"));
        db.inner.store.log.sync().unwrap();
        sim.crash();
        drop((t, db));
        let db = open(&sim, &o);
        verify(&db, &format!("{strategy:?}, after a crash"));
    }
}
