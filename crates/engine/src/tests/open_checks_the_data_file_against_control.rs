//! (A unit test: it damages a page through the crate-private page format.)
//!
//! The data file must hold at least what the control file says the last checkpoint
//! synced, and every table root in the catalog must be a page the meta page allocated.
//! A truncated or missing data file, or a catalog pointing past the end, fails the open
//! with one `Corruption` line naming the file — it used to open cleanly and fail later,
//! on some read.

use crate::page::{self, Node};
use crate::{Database, Error, Options};
use sluice_storage::{OpenOptions, SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn build(sim: &SimStorage) -> u64 {
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..400 {
        tx.put(&t, format!("key{i:05}").as_bytes(), [3u8; 100])
            .unwrap();
    }
    tx.commit().unwrap();
    db.close().unwrap();
    sim.durable_len(Path::new("/db/data")).unwrap()
}

fn data(sim: &SimStorage) -> Box<dyn sluice_storage::FileHandle> {
    sim.open(Path::new("/db/data"), OpenOptions::EXISTING)
        .unwrap()
}

fn assert_corruption_naming(e: &Error, parts: &[&str]) {
    let msg = e.to_string();
    assert!(matches!(e, Error::Corruption(_)), "{msg}");
    for p in parts {
        assert!(msg.contains(p), "{msg} does not say {p}");
    }
    assert!(!msg.contains('\n'), "one line: {msg}");
}

#[test]
fn a_truncated_data_file_is_refused_at_open() {
    let sim = SimStorage::new(71);
    let len = build(&sim);
    assert!(len >= 20 * 1024, "data file of {len} bytes");
    let f = data(&sim);
    f.set_len(4 * 1024).unwrap();
    f.sync_data().unwrap();
    let e = Database::open_on(Arc::new(sim), "/db", Options::small()).unwrap_err();
    assert_corruption_naming(&e, &["/db/data", "4096", &len.to_string()]);
}

#[test]
fn a_missing_data_file_is_refused_at_open() {
    let sim = SimStorage::new(72);
    build(&sim);
    sim.remove(Path::new("/db/data")).unwrap();
    sim.sync_dir(Path::new("/db")).unwrap();
    let e = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap_err();
    assert_corruption_naming(&e, &["/db/data"]);
    assert!(
        !sim.exists(Path::new("/db/data")).unwrap(),
        "open created an empty data file in a damaged database"
    );
}

#[test]
fn a_catalog_root_past_the_allocated_pages_is_refused_at_open() {
    let sim = SimStorage::new(73);
    build(&sim);
    // Point table "t" at page 10000 in the catalog (page 1, a leaf), resealed so only
    // the meaning is wrong, not the checksum.
    let f = data(&sim);
    let mut p = vec![0u8; 1024];
    f.read_exact_at(&mut p, 1024).unwrap();
    let off = {
        let n = Node::new(&p);
        let i = n.search(b"t").expect("table t in the catalog");
        n.value(i).as_ptr() as usize - p.as_ptr() as usize
    };
    p[off..off + 8].copy_from_slice(&10_000u64.to_le_bytes());
    page::seal(&mut p);
    f.write_at(&p, 1024).unwrap();
    f.sync_data().unwrap();
    let e = Database::open_on(Arc::new(sim), "/db", Options::small()).unwrap_err();
    assert_corruption_naming(&e, &["10000", "\"t\""]);
}
