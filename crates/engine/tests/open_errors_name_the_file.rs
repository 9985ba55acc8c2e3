//! Every error from opening a database says which file it is about: the control file,
//! the data file, the log directory.

use crate::spy;

use sluice::{Database, Error, Options};
use sluice_storage::{OpenOptions, SimStorage, Storage};
use spy::Spy;
use std::path::Path;
use std::sync::Arc;

fn build(sim: &SimStorage) {
    let db = Database::open_on(Arc::new(sim.clone()), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"k", b"v").unwrap();
    tx.commit().unwrap();
    db.close().unwrap();
}

fn flip_byte(sim: &SimStorage, path: &str, at: u64) {
    let f = sim.open(Path::new(path), OpenOptions::EXISTING).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_at(&[b[0] ^ 0x10], at).unwrap();
    f.sync_data().unwrap();
}

fn assert_names(e: &Error, path: &str) {
    let msg = e.to_string();
    assert!(msg.contains(path), "{msg} does not name {path}");
    assert!(!msg.contains('\n'), "one line: {msg}");
}

#[test]
fn a_damaged_control_file_is_named() {
    let sim = SimStorage::new(81);
    build(&sim);
    flip_byte(&sim, "/db/CONTROL", 20);
    let e = Database::open_on(Arc::new(sim), "/db", Options::small()).unwrap_err();
    assert!(matches!(e, Error::Corruption(_)), "{e}");
    assert_names(&e, "/db/CONTROL");
}

#[test]
fn a_data_file_read_error_is_named() {
    let sim = SimStorage::new(82);
    build(&sim);
    let spy = Spy::new(Arc::new(sim));
    spy.fail_reads_of(Path::new("/db/data"));
    let e = Database::open_on(spy, "/db", Options::small()).unwrap_err();
    assert!(e.is_io(), "{e}");
    assert_names(&e, "/db/data");
}

#[test]
fn a_damaged_log_segment_is_named_with_its_directory() {
    let sim = SimStorage::new(83);
    build(&sim);
    let first = sim.list(Path::new("/db/log")).unwrap();
    let seg = first.iter().find(|n| n.ends_with(".wal")).unwrap();
    flip_byte(&sim, &format!("/db/log/{seg}"), 12); // inside the segment header
    let e = Database::open_on(Arc::new(sim), "/db", Options::small()).unwrap_err();
    assert!(matches!(e, Error::Corruption(_)), "{e}");
    assert_names(&e, "/db/log");
}
