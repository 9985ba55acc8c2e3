//! Options whose log cannot hold the largest record the engine writes are refused at
//! open with one line saying what minimum to use. A 4 KiB segment with 8 KiB pages used
//! to be accepted, and then the first split (four page images in one record) failed for
//! ever.

use sluice::{Database, Error, Options};
use sluice_storage::{SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

#[test]
fn a_segment_smaller_than_a_split_record_is_refused() {
    let sim = SimStorage::new(91);
    let mut o = Options {
        page_size: 8192,
        ..Options::default()
    };
    o.log.segment_bytes = 4096;
    let e = Database::open_on(Arc::new(sim.clone()), "/db", o).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::InvalidArgument(_)), "{msg}");
    assert!(
        msg.contains("segment_bytes"),
        "{msg} does not name the option"
    );
    assert!(
        msg.contains("at least"),
        "{msg} does not say what minimum to use"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");
    // Refused before anything was created.
    let left = sim.list(Path::new("/db")).unwrap_or_default();
    assert!(left.is_empty(), "left behind {left:?}");
}

#[test]
fn a_log_buffer_too_small_for_a_split_record_is_refused() {
    let sim = SimStorage::new(92);
    let mut o = Options {
        page_size: 32 * 1024,
        ..Options::default()
    };
    o.log.buffer_bytes = 64 << 10; // records up to 16 KiB: not four 32 KiB pages
    let e = Database::open_on(Arc::new(sim), "/db", o).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::InvalidArgument(_)), "{msg}");
    assert!(
        msg.contains("buffer_bytes"),
        "{msg} does not name the option"
    );
}

#[test]
fn the_smallest_accepted_options_really_take_a_split() {
    // Whatever minimum the refusal names must work: open with exactly it and split.
    let mut o = Options {
        page_size: 8192,
        ..Options::default()
    };
    o.log.segment_bytes = 4096;
    let Err(Error::InvalidArgument(msg)) =
        Database::open_on(Arc::new(SimStorage::new(93)), "/db", o.clone())
    else {
        panic!("accepted");
    };
    let min: u64 = msg
        .split("segment_bytes of at least ")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no minimum in {msg}"));
    o.log.segment_bytes = min;
    let db = Database::open_on(Arc::new(SimStorage::new(94)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for i in 0..200u32 {
        tx.put(&t, i.to_be_bytes(), [9u8; 1500]).unwrap();
    }
    tx.commit().unwrap();
    db.verify().unwrap();
}
