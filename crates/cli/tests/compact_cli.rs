//! `sluice compact DIR` (issue 24): after every key is deleted it shortens the data file
//! and says by how much; the database still opens and verifies; a missing directory or
//! one that is not a database is a usage error (exit 2), a database held by another
//! handle a runtime failure (exit 1).

use crate::common;

use common::{assert_usage_error, run};

fn data_len(dir: &std::path::Path) -> u64 {
    std::fs::metadata(dir.join("data")).unwrap().len()
}

#[test]
fn compact_gives_the_space_of_deleted_keys_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    let t = db.table_or_create("t").unwrap();
    let mut tx = db.begin();
    for i in 0u32..20_000 {
        tx.put(&t, i.to_be_bytes(), [1u8; 40]).unwrap();
    }
    tx.commit().unwrap();
    let mut tx = db.begin();
    for i in 0u32..20_000 {
        tx.delete(&t, i.to_be_bytes()).unwrap();
    }
    tx.commit().unwrap();
    drop(t);
    db.close().unwrap();
    let before = data_len(&dir);
    let d = dir.to_str().unwrap();
    let (code, out, err) = run(&["compact", d]);
    assert_eq!(code, Some(0), "{err}");
    let after = data_len(&dir);
    assert!(after * 10 < before, "{before} -> {after}");
    assert!(
        out.contains(&format!("data file {before} -> {after} bytes")),
        "{out}"
    );
    assert!(out.contains("returned to the file system"), "{out}");
    let (code, out, err) = run(&["verify", d]);
    assert_eq!(code, Some(0), "{out}{err}");
    // Nothing left to give back: it says so and succeeds.
    let (code, out, _) = run(&["compact", d]);
    assert_eq!(code, Some(0));
    assert!(out.contains("0 page(s) (0 bytes) returned"), "{out}");
}

#[test]
fn compact_exits_2_only_for_bad_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    assert_usage_error(&["compact", missing.to_str().unwrap()], "does not exist");
    assert_usage_error(&["compact"], "DIR");
    // A database held by another handle: the arguments were right, it failed.
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    let (code, _, err) = run(&["compact", dir.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    db.close().unwrap();
}
