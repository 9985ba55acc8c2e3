//! `sluice stats` shows how full each table's leaves are (issue 24: space), and keys
//! loaded in ascending or descending order fill theirs to at least 90 %.

use crate::common;

use common::sluice;

/// `sluice stats --json DIR`'s leaf fill of table `t` after loading `keys` into it.
fn leaf_fill(keys: impl Iterator<Item = u32>) -> f64 {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    let t = db.table_or_create("t").unwrap();
    let keys: Vec<u32> = keys.collect();
    for chunk in keys.chunks(1000) {
        let mut tx = db.begin();
        for &i in chunk {
            tx.put(&t, i.to_be_bytes(), [7u8; 60]).unwrap();
        }
        tx.commit().unwrap();
    }
    drop(t);
    db.close().unwrap();
    let out = sluice(&["stats", "--json", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fill = j["tables"][0]["leaf_fill"]
        .as_f64()
        .expect("leaf_fill shown");
    let text = sluice(&["stats", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("% full"), "{text}");
    fill
}

#[test]
fn stats_shows_that_sequential_keys_fill_their_leaves() {
    const N: u32 = 30_000;
    let up = leaf_fill(0..N);
    assert!(up >= 0.9, "ascending: {up}");
    let down = leaf_fill((0..N).rev());
    assert!(down >= 0.9, "descending: {down}");
}
