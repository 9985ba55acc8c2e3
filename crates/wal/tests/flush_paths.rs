//! The two flush paths (`LogOptions::flush`): the io_uring path, where the committing
//! threads submit and reap each round (on a simulated disk, its deferred ring that
//! defers and reorders completions), and the daemon; and the fallback from the first to
//! the second where the storage refuses a ring.

use crate::common::{check_payload, payload, sim, small_options, DIR};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice_storage::{FaultKind, FaultOp, FaultPlan};
use sluice_wal::{FlushPath, Log, LogOptions, Lsn, WalError};
use std::collections::BTreeSet;
use std::sync::mpsc;
use std::sync::Arc;

fn options(flush: FlushPath) -> LogOptions {
    LogOptions {
        flush,
        ..small_options()
    }
}

/// Every record acknowledged (waited for, or called back) before a power loss at a
/// drawn operation is there after it, on both paths; each seed's threads mix blocking
/// waits with callbacks that only a polling thread (or the backstop) completes.
#[test]
fn every_acknowledged_record_survives_a_crash_on_both_paths() {
    let mut crashed = [0u32; 2];
    for (p, flush) in FlushPath::ALL.into_iter().enumerate() {
        for seed in 0..24u64 {
            let (sim, storage) = sim(seed);
            let log = Arc::new(Log::open(storage.clone(), DIR, options(flush)).unwrap());
            let info = log.flush_path();
            assert_eq!(info.path, flush, "{info}");
            if flush == FlushPath::IoUring {
                assert!(
                    info.ring.as_deref().unwrap().contains("simulated"),
                    "{info}"
                );
            }
            let mut rng = StdRng::seed_from_u64(seed);
            sim.crash_at_op(rng.gen_range(5..120));
            let acked = Arc::new(parking_lot::Mutex::new(BTreeSet::new()));
            let threads: Vec<_> = (0..4u32)
                .map(|t| {
                    let (log, acked) = (log.clone(), acked.clone());
                    std::thread::spawn(move || {
                        for i in 0..40u32 {
                            let Ok(a) = log.append(&payload(t, i, 300)) else {
                                return;
                            };
                            if t % 2 == 0 {
                                if log.wait_durable(a.end).is_err() {
                                    return;
                                }
                                acked.lock().insert((t, i));
                            } else {
                                let (tx, rx) = mpsc::channel();
                                log.on_durable(a.end, Box::new(move |r| drop(tx.send(r))));
                                // The agents' loop: other work, then a poll.
                                loop {
                                    log.poll_flush();
                                    match rx.try_recv() {
                                        Ok(Ok(_)) => {
                                            acked.lock().insert((t, i));
                                            break;
                                        }
                                        Ok(Err(_)) => return,
                                        Err(_) => {
                                            log.wait_flush();
                                            std::thread::yield_now();
                                        }
                                    }
                                }
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            let _ = log.close();
            drop(log);
            crashed[p] += (sim.crashed_count() > 0) as u32;
            sim.disarm_crash();
            sim.crash();
            let log = Log::open(storage, DIR, options(flush)).unwrap();
            let mut found = BTreeSet::new();
            for r in log.read_from(log.start_lsn()).unwrap() {
                let r = r.unwrap();
                found.insert(check_payload(&r.payload, 300).expect("an intact record"));
            }
            let acked = acked.lock();
            let lost: Vec<_> = acked.difference(&found).collect();
            assert!(lost.is_empty(), "{flush} seed {seed}: lost {lost:?}");
        }
    }
    assert!(
        crashed.iter().all(|&c| c > 12),
        "most runs must crash mid-work: {crashed:?}"
    );
}

/// A storage that refuses a ring leaves the log on the daemon's path, saying why, and
/// the log works as before.
#[test]
fn a_refused_ring_falls_back_to_the_daemon_and_says_why() {
    let (sim, storage) = sim(7);
    sim.refuse_io_ring(true);
    let log = Log::open(storage.clone(), DIR, options(FlushPath::IoUring)).unwrap();
    let info = log.flush_path();
    assert_eq!(info.path, FlushPath::Daemon);
    assert!(info.ring.is_none());
    let why = info.fallback.clone().expect("a reason");
    assert!(why.contains("refuses io_uring"), "{why}");
    assert!(info.to_string().contains("io_uring not used"), "{info}");
    let a = log.append(b"after the fallback").unwrap();
    log.wait_durable(a.end).unwrap();
    assert_eq!(log.close().unwrap(), a.end);
    // The daemon asked for is no fallback.
    sim.refuse_io_ring(false);
    let log = Log::open(storage, DIR, options(FlushPath::Daemon)).unwrap();
    assert_eq!(log.flush_path().fallback, None);
}

/// A sync that fails when its chain completes poisons the log for good on the ring path,
/// as on the daemon's: the waiter gets the error, later appends are refused.
#[test]
fn a_sync_failing_at_completion_poisons_the_log_on_the_ring_path() {
    let (sim, storage) = sim(11);
    let log = Log::open(storage, DIR, options(FlushPath::IoUring)).unwrap();
    let a = log.append(b"before").unwrap();
    log.wait_durable(a.end).unwrap();
    sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio));
    let b = log.append(b"lost").unwrap();
    let e = log.wait_durable(b.end).unwrap_err();
    assert!(matches!(e, WalError::Io(_) | WalError::Poisoned(_)), "{e}");
    assert!(log.poisoned().is_some());
    assert!(log.append(b"refused").is_err());
    assert!(
        log.durable_lsn() < b.end,
        "nothing after the failure counts"
    );
}

/// On the ring path a thread that registers a callback and polls completes it itself:
/// no flush thread wakes for a commit (the callback runs on the polling thread), and an
/// explicit sync is served by the thread that asks.
#[test]
fn a_polling_thread_completes_its_own_callbacks() {
    let (_sim, storage) = sim(13);
    let log = Log::open(storage, DIR, options(FlushPath::IoUring)).unwrap();
    let me = std::thread::current().id();
    let mut on_me = 0;
    for i in 0..50u32 {
        let a = log.append(&payload(0, i, 100)).unwrap();
        let (tx, rx) = mpsc::channel();
        log.on_durable(
            a.end,
            Box::new(move |r| drop(tx.send((r, std::thread::current().id())))),
        );
        let (r, thread) = loop {
            log.poll_flush();
            if let Ok(x) = rx.try_recv() {
                break x;
            }
            log.wait_flush();
        };
        assert!(r.unwrap() >= a.end);
        on_me += (thread == me) as u32;
    }
    // The backstop may take a round nobody drove for the group-commit delay (200 µs
    // here); a thread that polls at once takes nearly all.
    assert!(
        on_me >= 45,
        "only {on_me} of 50 completed on the polling thread"
    );
    let before = log.stats().syncs;
    assert!(log.sync().unwrap() >= Lsn(0));
    assert!(
        log.stats().syncs > before,
        "an explicit sync reaches the disk"
    );
}
