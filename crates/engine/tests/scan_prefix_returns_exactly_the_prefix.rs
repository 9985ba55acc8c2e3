//! `Transaction::scan_prefix` returns exactly the keys that start with the prefix, in
//! order — checked for every prefix over an alphabet that includes the edge bytes 0x00
//! and 0xFF (where "the next prefix" has to drop trailing 0xFF bytes, or does not exist).

use sluice::{Database, Options};
use sluice_storage::SimStorage;
use std::sync::Arc;

const ALPHABET: [u8; 4] = [0x00, 0x01, 0xFE, 0xFF];

fn strings(max_len: usize) -> Vec<Vec<u8>> {
    let mut all = vec![Vec::new()];
    let mut layer = vec![Vec::new()];
    for _ in 0..max_len {
        layer = layer
            .iter()
            .flat_map(|s: &Vec<u8>| {
                ALPHABET.iter().map(move |&b| {
                    let mut t = s.clone();
                    t.push(b);
                    t
                })
            })
            .collect();
        all.extend(layer.iter().cloned());
    }
    all
}

#[test]
fn every_prefix_over_edge_bytes_scans_exactly_its_keys() {
    let db = Database::open_on(Arc::new(SimStorage::new(3)), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let keys: Vec<Vec<u8>> = strings(3).into_iter().filter(|k| !k.is_empty()).collect();
    let mut tx = db.begin();
    for k in &keys {
        tx.put(&t, k, k).unwrap();
    }
    tx.commit().unwrap();
    let mut sorted = keys.clone();
    sorted.sort();

    let mut tx = db.begin();
    for prefix in strings(3) {
        let got: Vec<Vec<u8>> = tx.scan_prefix(&t, &prefix).map(|e| e.unwrap().0).collect();
        let want: Vec<Vec<u8>> = sorted
            .iter()
            .filter(|k| k.starts_with(&prefix))
            .cloned()
            .collect();
        assert_eq!(got, want, "prefix {prefix:02x?}");
    }
    // A prefix with nothing under it, and string-typed prefixes.
    assert_eq!(tx.scan_prefix(&t, [0x02u8]).count(), 0);
    assert_eq!(tx.scan_prefix(&t, "x").count(), 0);
    assert_eq!(tx.scan_prefix(&t, Vec::<u8>::new()).count(), keys.len());
    tx.commit().unwrap();
}
