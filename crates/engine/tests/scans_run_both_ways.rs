//! Scans are double-ended: `.rev()` returns the range in descending order, `next` and
//! `next_back` mixed meet in the middle handing out each entry once, and `first`/`last`
//! find the table's ends — all under the locks a forward scan takes, so no phantom
//! appears in a repeated reverse scan or behind a `first`/`last`.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{Database, Options, Partitioned, Table, Transaction};
use sluice_storage::SimStorage;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Duration;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn open(seed: u64, page_size: usize) -> Database {
    let mut o = Options::small();
    o.page_size = page_size;
    o.lock_timeout = Duration::from_secs(10);
    Database::open_on(Arc::new(SimStorage::new(seed)), "/db", o).unwrap()
}

fn bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    let k = format!("k{:04}", rng.gen_range(0..1100)).into_bytes();
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(k),
        _ => Bound::Excluded(k),
    }
}

/// The model's entries in the range (none if it is inverted, which scans accept).
fn in_range<'m>(
    model: &'m BTreeMap<Vec<u8>, Vec<u8>>,
    from: &Bound<Vec<u8>>,
    to: &Bound<Vec<u8>>,
) -> impl DoubleEndedIterator<Item = (&'m Vec<u8>, &'m Vec<u8>)> {
    let range = (from.clone(), to.clone());
    model.iter().filter(move |(k, _)| range.contains(*k))
}

fn value(i: u32, large: bool) -> Vec<u8> {
    let len = if large { 3000 } else { 1 + (i as usize % 40) };
    vec![(i % 251) as u8; len]
}

/// A table of random keys over many leaves, with runs deleted (empty leaves, which
/// nothing merges), some values stored apart; and its model.
fn filled(db: &Database, rng: &mut StdRng) -> (Table, BTreeMap<Vec<u8>, Vec<u8>>) {
    let t = db.create_table("filled").unwrap();
    let mut model = BTreeMap::new();
    let mut tx = db.begin();
    for i in 0..1000u32 {
        let k = format!("k{:04}", rng.gen_range(0..1000)).into_bytes();
        let v = value(i, i % 97 == 0);
        tx.put(&t, &k, &v).unwrap();
        model.insert(k, v);
    }
    for i in 300..500 {
        let k = format!("k{i:04}").into_bytes();
        tx.delete(&t, &k).unwrap();
        model.remove(&k);
    }
    tx.commit().unwrap();
    (t, model)
}

#[test]
fn a_reversed_scan_returns_the_range_in_descending_order() {
    for (seed, page_size) in [(1, 1024), (2, 4096), (3, 8192)] {
        let db = open(seed, page_size);
        let mut rng = StdRng::seed_from_u64(seed);
        let (t, model) = filled(&db, &mut rng);
        let mut tx = db.begin();
        for _ in 0..60 {
            let (from, to) = (bound(&mut rng), bound(&mut rng));
            let want: Entries = in_range(&model, &from, &to)
                .rev()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let got: Entries = tx
                .scan(&t, (from.clone(), to.clone()))
                .rev()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(got.len(), want.len(), "{from:?}..{to:?}");
            assert!(got == want, "reverse scan of {from:?}..{to:?} differs");
        }
        let all: Entries = tx.scan_all(&t).rev().collect::<Result<_, _>>().unwrap();
        assert_eq!(all.len(), model.len());
        tx.commit().unwrap();
    }
}

#[test]
fn next_and_next_back_meet_in_the_middle() {
    let db = open(4, 1024);
    let mut rng = StdRng::seed_from_u64(4);
    let (t, model) = filled(&db, &mut rng);
    let mut tx = db.begin();
    for round in 0..40 {
        let (from, to) = (bound(&mut rng), bound(&mut rng));
        let want: Vec<&Vec<u8>> = in_range(&model, &from, &to).map(|(k, _)| k).collect();
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        let mut s = tx.scan(&t, (from.clone(), to.clone()));
        // Runs of each direction, long enough to cross batches sometimes.
        loop {
            let forward = rng.gen_bool(0.5);
            let run = rng.gen_range(1..if round % 2 == 0 { 5 } else { 400 });
            let mut ended = false;
            for _ in 0..run {
                let e = if forward { s.next() } else { s.next_back() };
                match e {
                    Some(e) => {
                        let (k, _) = e.unwrap();
                        if forward { &mut lo } else { &mut hi }.push(k);
                    }
                    None => {
                        ended = true;
                        break;
                    }
                }
            }
            if ended {
                break;
            }
        }
        assert!(s.next().is_none() && s.next_back().is_none());
        drop(s);
        hi.reverse();
        lo.extend(hi);
        let got: Vec<&Vec<u8>> = lo.iter().collect();
        assert!(got == want, "mixed scan of {from:?}..{to:?}: {got:?}");
    }
    tx.commit().unwrap();
}

#[test]
fn first_and_last_are_the_tables_ends() {
    let db = open(5, 1024);
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.first(&t).unwrap(), None);
    assert_eq!(tx.last(&t).unwrap(), None);
    tx.commit().unwrap();
    let mut rng = StdRng::seed_from_u64(5);
    let (u, model) = filled(&db, &mut rng);
    let _ = t;
    let mut tx = db.begin();
    let ends = |e: Option<(&Vec<u8>, &Vec<u8>)>| e.map(|(k, v)| (k.clone(), v.clone()));
    assert_eq!(tx.first(&u).unwrap(), ends(model.iter().next()));
    assert_eq!(tx.last(&u).unwrap(), ends(model.iter().next_back()));
    // A large value at the end.
    tx.put(&u, b"z", vec![9u8; 5000]).unwrap();
    assert_eq!(tx.last(&u).unwrap(), Some((b"z".to_vec(), vec![9u8; 5000])));
    tx.commit().unwrap();
}

fn rev_keys(tx: &mut Transaction, t: &Table, from: &[u8], to: &[u8]) -> Vec<Vec<u8>> {
    tx.scan(t, from..to)
        .rev()
        .map(|e| e.map(|(k, _)| k))
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Writers into, just above, just below the scanned range and at the table's ends; the
/// reverse scan, `first` and `last`, repeated, see none of them until the reader ends.
#[test]
fn a_reverse_scan_and_the_ends_see_no_phantom() {
    let db = open(6, 1024);
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for i in (10..90).step_by(10) {
        tx.put(&t, format!("k{i:02}"), b"v").unwrap();
    }
    tx.commit().unwrap();

    let mut reader = db.begin();
    let range = rev_keys(&mut reader, &t, b"k25", b"k55");
    assert_eq!(range, [b"k50".to_vec(), b"k40".to_vec(), b"k30".to_vec()]);
    let first = reader.first(&t).unwrap();
    let last = reader.last(&t).unwrap();
    // Into the range, into the gap just above it (below k60, the key that bounds it),
    // the gap just below it (above k20, whose gap is locked by k30), below the first key
    // and above the last; and a delete of the bounding key.
    let writes: Vec<(&[u8], bool)> = vec![
        (b"k35", true),
        (b"k57", true),
        (b"k22", true),
        (b"k05", true),
        (b"k95", true),
        (b"k60", false),
    ];
    let writers: Vec<_> = writes
        .into_iter()
        .map(|(k, insert)| {
            let (db, t, k) = (db.clone(), t.clone(), k.to_vec());
            std::thread::spawn(move || {
                let mut tx = db.begin();
                if insert {
                    tx.put(&t, &k, b"phantom").unwrap();
                } else {
                    tx.delete(&t, &k).unwrap();
                }
                tx.commit().unwrap();
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(rev_keys(&mut reader, &t, b"k25", b"k55"), range);
    assert_eq!(
        rev_keys(&mut reader, &t, b"k25", b"k60"),
        range,
        "a phantom in the gap above the range"
    );
    assert_eq!(
        reader.first(&t).unwrap(),
        first,
        "a phantom before the first key"
    );
    assert_eq!(
        reader.last(&t).unwrap(),
        last,
        "a phantom after the last key"
    );
    reader.commit().unwrap();
    for w in writers {
        w.join().unwrap();
    }
    let mut tx = db.begin();
    let all = rev_keys(&mut tx, &t, b"", b"\xff");
    assert_eq!(all.len(), 8 + 5 - 1);
    assert_eq!(tx.first(&t).unwrap().unwrap().0, b"k05");
    assert_eq!(tx.last(&t).unwrap().unwrap().0, b"k95");
    tx.commit().unwrap();
}

/// A partitioned database's scans run both ways, and it has `first` and `last` too.
#[test]
fn a_partitioned_table_scans_both_ways_and_has_ends() {
    let sim = SimStorage::new(7);
    let db = Partitioned::builder("/db")
        .log_managers(2)
        .options(Options::small())
        .storage(Arc::new(sim.pinned()))
        .assign("a", 1)
        .open()
        .unwrap();
    let a = db.create_table("a").unwrap();
    let mut tx = db.begin();
    assert_eq!(tx.first(&a).unwrap(), None);
    for i in 0..200u32 {
        tx.put(&a, format!("k{i:03}"), b"v").unwrap();
    }
    let down: Vec<Vec<u8>> = tx
        .scan(&a, ..)
        .unwrap()
        .rev()
        .map(|e| e.map(|(k, _)| k))
        .collect::<Result<_, _>>()
        .unwrap();
    let want: Vec<Vec<u8>> = (0..200u32)
        .rev()
        .map(|i| format!("k{i:03}").into_bytes())
        .collect();
    assert!(down == want);
    assert_eq!(tx.first(&a).unwrap().unwrap().0, b"k000");
    assert_eq!(tx.last(&a).unwrap().unwrap().0, b"k199");
    tx.commit().unwrap();
}
