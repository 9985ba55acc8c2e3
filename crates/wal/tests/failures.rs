//! I/O failures and the log's promises around them (docs/RELIABILITY.md §3, §7 and the lessons
//! list): the first failed write or sync poisons the log; ENOSPC is a clear error and the
//! log recovers once space returns; a new segment's directory entry is synced before
//! anything in it is acknowledged; an explicit sync syncs even with nothing buffered; no
//! sync runs under the insertion lock; a held directory cannot be opened twice.

use crate::common;

use common::*;
use sluice_storage::{FaultKind, FaultOp, FaultPlan, GatedStorage, Storage, TraceEvent};
use sluice_wal::{Log, WalError};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

#[test]
fn first_failed_sync_poisons_the_log_for_good() {
    let (sim, storage) = sim(11);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let a = log.append(b"before").unwrap();
    log.wait_durable(a.end).unwrap();
    // The preparer made segment 0 before the daemon wrote into it, and a log this empty
    // asks it for nothing more (no extension, no next segment): the fault below hits the
    // daemon's sync of the record.
    assert_eq!(log.segments().len(), 1);
    sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio));
    let b = log.append(b"doomed").unwrap();
    let e = log.wait_durable(b.end).unwrap_err();
    assert!(e.is_io(), "{e}");
    assert_eq!(
        log.durable_lsn(),
        a.end,
        "nothing past the last good sync is durable"
    );
    // The fault was transient, but the log must not retry as if the sync had worked.
    for _ in 0..3 {
        let e = log.append(b"after").unwrap_err();
        assert!(matches!(e, WalError::Poisoned(_)), "{e}");
        assert!(matches!(log.sync().unwrap_err(), WalError::Poisoned(_)));
        assert!(matches!(
            log.wait_durable(b.end).unwrap_err(),
            WalError::Poisoned(_)
        ));
    }
    assert!(log.poisoned().is_some());
    assert!(log.close().is_err());
    drop(log);
    // Reopened, the acknowledged record is there.
    let log = Log::open(storage, DIR, small_options()).unwrap();
    let recs = read_all(&log);
    assert_eq!(recs[0].1, b"before");
}

#[test]
fn failed_write_poisons_callbacks_and_futures_too() {
    let (sim, storage) = sim(12);
    let log = Log::open(storage, DIR, small_options()).unwrap();
    sim.inject(FaultPlan::new(FaultOp::Write, 1, FaultKind::Eio).persistent());
    let a = log.append(b"x").unwrap();
    let got = Arc::new(Mutex::new(None));
    let g2 = got.clone();
    log.on_durable(a.end, Box::new(move |r| *g2.lock().unwrap() = Some(r)));
    let fut = log.durable_future(a.end);
    assert!(log.wait_durable(a.end).is_err());
    let r = block_on(fut);
    assert!(r.unwrap_err().is_io());
    // The callback ran (on the daemon, before the waiters were woken) with the error.
    let cb = got.lock().unwrap().take().expect("callback ran");
    assert!(cb.unwrap_err().is_io());
}

#[test]
fn enospc_is_reported_clearly_and_the_log_recovers_when_space_returns() {
    let (sim, storage) = sim(13);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let mut acked = Vec::new();
    for i in 0..5u8 {
        let a = log.append(&[i; 50]).unwrap();
        log.wait_durable(a.end).unwrap();
        acked.push(vec![i; 50]);
    }
    sim.inject(FaultPlan::new(FaultOp::Write, 1, FaultKind::Enospc).persistent());
    // Enough to need the next segment (creating it writes) and to write records.
    let mut err = None;
    for i in 0..200u8 {
        match log.append(&[i; 100]).and_then(|a| log.wait_durable(a.end)) {
            Ok(_) => acked.push(vec![i; 100]),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    let e = err.expect("the disk is full");
    assert_eq!(e.io_kind(), Some(io::ErrorKind::StorageFull), "{e}");
    drop(log);
    sim.clear_faults();
    let log = Log::open(storage, DIR, small_options()).unwrap();
    let recs: Vec<_> = read_all(&log).into_iter().map(|r| r.1).collect();
    assert_eq!(
        recs, acked,
        "exactly the acknowledged records, nothing garbled"
    );
    let a = log.append(b"space is back").unwrap();
    log.wait_durable(a.end).unwrap();
}

#[test]
fn new_segment_directory_entry_is_synced_before_acknowledging_into_it() {
    let (sim, storage) = sim(14);
    let log = Log::open(storage, DIR, small_options()).unwrap();
    sim.set_trace(true);
    // 30 records of 1000 bytes: four segments.
    for i in 0..30u8 {
        let a = log.append(&[i; 1000]).unwrap();
        log.wait_durable(a.end).unwrap();
    }
    let trace = sim.take_trace();
    let mut segments_seen = 0;
    for (i, ev) in trace.iter().enumerate() {
        if let TraceEvent::Rename { to, .. } = ev {
            let name = to.file_name().unwrap().to_owned();
            let synced_dir = trace[i..]
                .iter()
                .position(|e| matches!(e, TraceEvent::SyncDir(d) if d == Path::new(DIR)));
            let first_write = trace[i..].iter().position(
                |e| matches!(e, TraceEvent::Write { path, .. } if path.file_name() == Some(&name)),
            );
            // The newest segment may be prepared ahead and not written yet: nothing in it
            // is acknowledged, so there is nothing to check.
            let Some(w) = first_write else { continue };
            segments_seen += 1;
            let d = synced_dir.expect("directory synced");
            assert!(
                d < w,
                "segment {name:?} written before its directory entry was synced"
            );
        }
    }
    assert!(
        segments_seen >= 3,
        "expected rollovers, saw {segments_seen}"
    );
}

#[test]
fn sync_with_nothing_new_buffered_still_syncs() {
    let (sim, storage) = sim(15);
    let log = Log::open(storage, DIR, small_options()).unwrap();
    let a = log.append(b"one").unwrap();
    log.wait_durable(a.end).unwrap();
    let before = sim.stats().syncs;
    assert_eq!(log.sync().unwrap(), a.end);
    assert_eq!(log.sync().unwrap(), a.end);
    assert!(
        sim.stats().syncs >= before + 2,
        "each explicit sync must reach the disk"
    );
}

#[test]
fn a_held_log_directory_cannot_be_opened_twice() {
    let (_sim, storage) = sim(16);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let e = Log::open(storage.clone(), DIR, small_options())
        .err()
        .unwrap();
    assert!(matches!(e, WalError::Locked(_)), "{e}");
    assert!(e.to_string().contains("in use"));
    drop(log);
    Log::open(storage, DIR, small_options()).unwrap();
}

#[test]
fn a_held_log_directory_on_the_real_disk_cannot_be_opened_twice() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(sluice_storage::OsStorage);
    let log = Log::open(storage.clone(), dir.path(), small_options()).unwrap();
    let e = Log::open(storage.clone(), dir.path(), small_options())
        .err()
        .unwrap();
    assert!(matches!(e, WalError::Locked(_)), "{e}");
    let a = log.append(b"real disk").unwrap();
    assert_eq!(log.close().unwrap(), a.end);
    drop(log);
    let log = Log::open(storage, dir.path(), small_options()).unwrap();
    assert_eq!(read_all(&log)[0].1, b"real disk");
}

#[test]
fn close_returns_the_final_durable_lsn_and_later_calls_fail() {
    let (_sim, storage) = sim(17);
    let log = Log::open(storage, DIR, small_options()).unwrap();
    let mut last = None;
    for i in 0..50u8 {
        last = Some(log.append(&[i; 33]).unwrap());
    }
    assert_eq!(log.close().unwrap(), last.unwrap().end);
    assert!(matches!(log.append(b"x").unwrap_err(), WalError::Closed));
    assert!(matches!(log.close().unwrap_err(), WalError::Closed));
}

/// While a sync is held, the insert path must keep working — proof that no sync runs
/// under the insertion lock.
#[test]
fn no_sync_runs_under_the_insertion_lock() {
    let (_sim, inner) = sim(18);
    let gated = GatedStorage::new(inner);
    let storage: Arc<dyn Storage> = Arc::new(gated.clone());
    let log = Arc::new(Log::open(storage, DIR, small_options()).unwrap());
    let first = log.append(b"first").unwrap();
    log.wait_durable(first.end).unwrap(); // segment created outside the gate
    gated.close();
    let l2 = log.clone();
    let waiter = std::thread::spawn(move || {
        let a = l2.append(b"second").unwrap();
        l2.wait_durable(a.end).unwrap()
    });
    gated.wait_held(1); // the daemon is now inside sync_data
                        // With the sync held, inserts from this thread still complete and are released.
    for i in 0..20u8 {
        let a = log.append(&[i; 64]).unwrap();
        assert!(log.released_lsn() >= a.end);
    }
    assert!(
        log.durable_lsn() < log.released_lsn(),
        "the held sync has not finished"
    );
    gated.open();
    waiter.join().unwrap();
    let last = log.append(b"last").unwrap();
    log.wait_durable(last.end).unwrap();
}
