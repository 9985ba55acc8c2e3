//! `Log::open_read_only`: a log that another process may read while nobody writes it, or
//! a copy of one. It reads the records up to the end, leaves a torn tail where it is (a
//! read-write open cuts it later), changes no byte (its only counted disk operations are
//! the syncs that make what it reads durable), refuses appends, syncs and truncation with
//! `WalError::ReadOnly`, and shares the directory lock with other readers while
//! excluding a writer.

use crate::common;

use common::*;
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::segment::{segment_name, SEGMENT_HEADER_BYTES};
use sluice_wal::{Log, Lsn, WalError};
use std::path::Path;

fn records(log: &Log) -> Vec<Vec<u8>> {
    log.read_from(log.start_lsn())
        .unwrap()
        .map(|r| r.unwrap().payload)
        .collect()
}

#[test]
fn a_read_only_log_reads_and_changes_nothing() {
    let (sim, storage) = sim(41);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let written: Vec<Vec<u8>> = (0..20).map(|i| payload(1, i, 300)).collect();
    for p in &written {
        log.append(p).unwrap();
    }
    let end = log.sync().unwrap();
    log.close().unwrap();

    // A torn tail: garbage after the end, as a crash in the middle of a write leaves.
    let seg = Lsn(end.0 - end.0 % small_options().segment_bytes);
    let path = Path::new(DIR).join(segment_name(seg));
    let f = storage.open(&path, OpenOptions::EXISTING).unwrap();
    f.write_at(&[0xA5; 40], SEGMENT_HEADER_BYTES + (end.0 - seg.0))
        .unwrap();
    f.sync_data().unwrap();
    drop(f);
    let before = sim.read_durable(&path).unwrap();
    let stats = sim.stats();

    let a = Log::open_read_only(storage.clone(), DIR, small_options()).unwrap();
    let b = Log::open_read_only(storage.clone(), DIR, small_options())
        .expect("read-only openers share the lock");
    assert!(a.is_read_only());
    assert_eq!(a.durable_lsn(), end, "the log ends before the torn tail");
    assert_eq!(records(&a), written);
    assert_eq!(records(&b), written);
    assert!(matches!(a.append(b"x"), Err(WalError::ReadOnly)));
    assert!(matches!(a.sync(), Err(WalError::ReadOnly)));
    assert!(matches!(a.truncate_below(end), Err(WalError::ReadOnly)));
    assert!(matches!(
        a.wait_durable(end.add(8)),
        Err(WalError::ReadOnly)
    ));
    assert_eq!(a.wait_durable(end).unwrap(), end);
    let (tx, rx) = std::sync::mpsc::channel();
    a.on_durable(end.add(8), Box::new(move |r| tx.send(r).unwrap()));
    let answer = rx.try_recv().expect("answered at once, not left waiting");
    assert!(matches!(answer, Err(WalError::ReadOnly)), "{answer:?}");
    assert_eq!(a.close().unwrap(), end);
    assert!(matches!(a.close(), Err(WalError::Closed)));
    drop(a);
    assert_only_syncs(&sim, stats, "two read-only opens");
    assert_eq!(
        sim.read_durable(&path).unwrap(),
        before,
        "the tail is still there"
    );
    // (A writer's open creates the directory and syncs it before it finds the lock.)
    assert!(matches!(
        Log::open(storage.clone(), DIR, small_options()),
        Err(WalError::Locked(_))
    ));
    drop(b);

    // A writer may open it once the readers are gone, and cuts the tail itself.
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    assert!(log.recovery().cut_bytes > 0);
    assert_eq!(records(&log), written);
    let err = Log::open_read_only(storage.clone(), DIR, small_options()).err();
    assert!(matches!(err, Some(WalError::Locked(_))), "{err:?}");
    log.close().unwrap();

    let missing = Log::open_read_only(storage, "/nowhere/log", small_options()).err();
    let message = missing.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("/nowhere/log"), "{message}");
    assert!(
        !sim.exists(Path::new("/nowhere")).unwrap(),
        "nothing created"
    );
}
