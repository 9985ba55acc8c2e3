//! Model test: random transactions (puts, deletes, gets, range scans; commits and
//! rollbacks) on sluice and on a `BTreeMap`, compared after every operation, with the
//! database reopened every ~900 operations — alternately after a clean close and after a
//! simulated power loss. Small pages and a 16-frame pool make the tree split and evict.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{Database, Options, Table};
use sluice_storage::SimStorage;
use sluice_testkit::fence::FencedStorage;
use std::collections::BTreeMap;
use std::ops::Bound;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const OPS: u64 = 24_000;
const REOPEN_EVERY: u64 = 900;

fn options() -> Options {
    let mut o = Options::small();
    o.pool_pages = 16;
    o
}

fn open(sim: &SimStorage) -> (Database, Vec<Table>) {
    let db = Database::open_on(FencedStorage::for_incarnation(sim), "/model", options()).unwrap();
    let tables = ["t0", "t1"]
        .iter()
        .map(|n| db.table_or_create(n).unwrap())
        .collect();
    (db, tables)
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    format!("k{:04}", rng.gen_range(0..500)).into_bytes()
}

fn check_all(db: &Database, tables: &[Table], models: &[Model]) {
    let mut tx = db.begin();
    for (t, m) in tables.iter().zip(models) {
        let got: Model = tx.scan_all(t).map(|e| e.unwrap()).collect();
        assert_eq!(&got, m, "table {} differs from the model", t.name());
    }
    tx.commit().unwrap();
}

#[test]
fn random_transactions_match_a_btreemap_across_reopens() {
    let mut rng = StdRng::seed_from_u64(0x5EED);
    let sim = SimStorage::new(42);
    let (mut db, mut tables) = open(&sim);
    let mut committed: Vec<Model> = vec![Model::new(), Model::new()];
    let (mut ops, mut reopens, mut commits, mut rollbacks, mut crashes) = (0u64, 0u64, 0, 0, 0);
    let mut next_reopen = REOPEN_EVERY;
    let max_value = db.limits().max_entry - 6;
    while ops < OPS {
        let mut view = committed.clone();
        let mut tx = db.begin();
        for _ in 0..rng.gen_range(1..=12) {
            ops += 1;
            let t = rng.gen_range(0..2);
            let k = key(&mut rng);
            match rng.gen_range(0..100) {
                0..=39 => {
                    let len = if rng.gen_bool(0.1) {
                        max_value
                    } else {
                        rng.gen_range(0..40)
                    };
                    let v: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                    let old = tx.put(&tables[t], &k, &v).unwrap();
                    assert_eq!(
                        old,
                        view[t].insert(k, v),
                        "put returned the wrong old value"
                    );
                }
                40..=59 => {
                    let old = tx.delete(&tables[t], &k).unwrap();
                    assert_eq!(
                        old,
                        view[t].remove(&k),
                        "delete returned the wrong old value"
                    );
                }
                60..=84 => {
                    let got = tx.get(&tables[t], &k).unwrap();
                    assert_eq!(got.as_ref(), view[t].get(&k), "get differs");
                }
                _ => {
                    let k2 = key(&mut rng);
                    let (lo, hi) = if k <= k2 { (k, k2) } else { (k2, k) };
                    let range = (Bound::Included(lo.clone()), Bound::Excluded(hi.clone()));
                    let got: Vec<_> = tx
                        .scan(&tables[t], range.clone())
                        .map(|e| e.unwrap())
                        .collect();
                    let want: Vec<_> = view[t]
                        .range(range)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    assert_eq!(got, want, "scan differs");
                }
            }
        }
        if rng.gen_bool(0.75) {
            tx.commit().unwrap();
            committed = view;
            commits += 1;
        } else {
            if rng.gen_bool(0.5) {
                tx.rollback().unwrap();
            } else {
                drop(tx); // rollback on drop
            }
            rollbacks += 1;
        }
        if ops >= next_reopen {
            next_reopen += REOPEN_EVERY;
            if reopens % 2 == 0 {
                db.close().unwrap();
            } else {
                sim.crash();
                drop(tables);
                drop(db);
                crashes += 1;
            }
            reopens += 1;
            (db, tables) = open(&sim);
            check_all(&db, &tables, &committed);
            if reopens % 5 == 0 {
                db.verify().unwrap();
            }
        }
    }
    check_all(&db, &tables, &committed);
    let report = db.verify().unwrap();
    println!(
        "model test: {ops} operations, {commits} commits, {rollbacks} rollbacks, {reopens} reopenings ({crashes} after crashes), {} entries at the end",
        report.entries
    );
    assert!(ops >= 20_000);
    assert!(reopens >= 20);
    assert_eq!(
        report.entries as usize,
        committed.iter().map(Model::len).sum::<usize>()
    );
}
