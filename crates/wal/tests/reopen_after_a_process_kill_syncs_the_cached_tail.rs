//! Issue 8, defect 1 (log side). After a process kill the page cache still holds the last
//! round the flush daemon wrote but had not synced. A log reopened in the same boot reads
//! that round back from the cache; it must make it durable before it calls it durable (or
//! stamps it into new records' durable hints). Then a power loss keeps every record the
//! reopened log reported, and never turns into "Corruption … a later record proves the log
//! was durable".

use crate::common;

use common::*;
use sluice_storage::{GatedStorage, SimStorage, Storage};
use sluice_wal::{GroupCommit, Log, LogOptions, Lsn};
use std::sync::Arc;
use std::time::Duration;

const SEGMENT_BYTES: u64 = 8192;

/// Small segments, a ring large enough to hold a round that crosses a segment boundary,
/// and no timed or waiter-driven rounds: only `Log::sync` starts one, so the test decides
/// exactly what the held round contains.
fn options() -> LogOptions {
    LogOptions {
        segment_bytes: SEGMENT_BYTES,
        buffer_bytes: 64 << 10,
        group_commit: GroupCommit {
            max_waiters: usize::MAX,
            max_bytes: 1 << 30,
            max_delay: Duration::from_secs(3600),
            adaptive: false,
        },
        ..LogOptions::default()
    }
}

fn wait_for_prepared_segments(log: &Log, n: usize) {
    while log.segments().len() < n {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The first incarnation: synced records filling the first segment past its half (so the
/// preparer has made the first segment's file whole and the second segment, and has
/// nothing left to do), then a round that crosses into the second segment, written but
/// held at its first sync when the process is killed.
fn first_incarnation_killed_mid_sync(sim: &SimStorage) {
    let gated = GatedStorage::new(Arc::new(sim.pinned()));
    let log = Arc::new(Log::open(Arc::new(gated.clone()), DIR, options()).unwrap());
    let mut seq = 0;
    while log.released_lsn() < Lsn(SEGMENT_BYTES / 2 + 600) {
        log.append(&payload(0, seq, 600)).unwrap();
        seq += 1;
    }
    log.sync().unwrap();
    wait_for_prepared_segments(&log, 2);
    gated.close();
    while log.released_lsn() < Lsn(SEGMENT_BYTES + 1500) {
        log.append(&payload(0, seq, 600)).unwrap();
        seq += 1;
    }
    let syncer = {
        let log = log.clone();
        std::thread::spawn(move || log.sync())
    };
    // The daemon's sync of the first segment (the preparer makes the third segment only
    // once the second is half full).
    gated.wait_held(1);
    sim.kill_process();
    gated.open();
    assert!(
        syncer.join().unwrap().is_err(),
        "the killed round never finished"
    );
    drop(log);
}

#[test]
fn a_log_reopened_after_a_kill_calls_durable_only_what_the_device_holds() {
    for seed in 0..24u64 {
        let sim = SimStorage::new(seed);
        first_incarnation_killed_mid_sync(&sim);

        let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
        let log = Log::open(storage, DIR, options()).unwrap();
        let mut reported = read_all(&log);
        assert_eq!(log.durable_lsn(), log.recovery().end);
        if seed % 2 == 1 {
            // A new record in the second segment: its sync does not reach the first one's
            // tail, but its durable hint says the whole log up to the open is durable.
            let marker = payload(1, seed as u32, 600);
            let a = log.append(&marker).unwrap();
            log.sync().unwrap();
            reported.push((a.lsn, marker));
        }
        sim.crash(); // power loss, the reopened log still running
        drop(log);

        let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
        let log = Log::open(storage, DIR, options())
            .unwrap_or_else(|e| panic!("seed {seed}: reopen after the power loss: {e}"));
        let survived = read_all(&log);
        for (lsn, record) in &reported {
            assert!(
                survived.iter().any(|(l, r)| l == lsn && r == record),
                "seed {seed}: the record at LSN {lsn}, reported durable by the reopened \
                 log, did not survive the power loss"
            );
        }
    }
}
