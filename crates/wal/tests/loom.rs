//! Loom models of the log buffer's insertion protocols and of durable notification.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p sluice-wal --release --test loom`.
//!
//! Each buffer model is the production `LogBuffer` (its atomics, mutexes, condition
//! variables and parking swapped for loom's by `crate::sync`) with two or three inserting
//! threads and the main thread as the flush side: it waits for released bytes, copies them
//! out, and marks them written and durable. Loom runs every interleaving (up to the
//! preemption bound) and the model checks, in each: no deadlock (loom fails a model in
//! which every thread is blocked), no assertion inside the buffer fails (contiguous,
//! monotone releases; hints below frames), and the stream the flush side saw is exactly
//! the inserted records at the LSNs their inserts returned, tiled with padding. The ring's
//! bytes are plain memory, outside loom's view; the protocols that hand them between
//! threads are what is checked.
//!
//! Under loom the buffer allows a 256-byte ring and 128-byte segments (frames up to 64
//! bytes), so a handful of records wraps the ring, waits for space and meets segment ends.
#![cfg(loom)]

use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use sluice_wal::frame::{self, Decoded};
use sluice_wal::loom_model::DurableWaiters;
use sluice_wal::{BufferOptions, InsertVariant, LogBuffer, Lsn};
use std::time::Duration;

/// A scenario: each inner slice is one thread's payload sizes, in order.
struct Scenario {
    threads: &'static [&'static [usize]],
    /// Records the main thread inserts before starting the others (filling the ring
    /// without adding interleavings).
    prefill: &'static [usize],
    start: u64,
    segment_bytes: u64,
    capacity: usize,
    slots: usize,
    /// Whether the flush side runs alongside the inserters (needed once they wait for
    /// space) or only after they have all returned (a thread fewer to interleave).
    concurrent_drain: bool,
    /// A preemption bound below the run's (`LOOM_MAX_PREEMPTIONS`), for models that would
    /// otherwise take minutes.
    max_preemptions: Option<usize>,
}

const SMALL: Scenario = Scenario {
    threads: &[&[8], &[8]],
    prefill: &[],
    start: 0,
    segment_bytes: 1024,
    capacity: 256,
    slots: 1,
    concurrent_drain: true,
    max_preemptions: None,
};

/// The payload of record `seq` of thread `t`: identifiable and checkable.
fn payload(t: usize, seq: usize, len: usize) -> Vec<u8> {
    assert!(len >= 2);
    let mut p = vec![(t * 16 + seq) as u8; len];
    p[0] = t as u8;
    p[1] = seq as u8;
    p
}

fn run(variant: InsertVariant, s: &'static Scenario) {
    let mut builder = loom::model::Builder::new();
    if let Some(bound) = s.max_preemptions {
        builder.preemption_bound = Some(builder.preemption_bound.map_or(bound, |b| b.min(bound)));
    }
    builder.check(move || {
        let opts = BufferOptions {
            capacity: s.capacity,
            segment_bytes: s.segment_bytes,
            variant,
            slots: s.slots,
        };
        let start = Lsn(s.start);
        let buf = Arc::new(LogBuffer::new(&opts, start).unwrap());
        let mut inserted: Vec<(Lsn, Vec<u8>)> = Vec::new();
        for (q, &len) in s.prefill.iter().enumerate() {
            let p = payload(9, q, len);
            inserted.push((buf.insert(&p).unwrap(), p));
        }
        let finished = Arc::new(AtomicUsize::new(0));
        let n = s.threads.len();
        let mut handles: Vec<_> = s
            .threads
            .iter()
            .enumerate()
            .map(|(t, sizes)| {
                let (buf, finished) = (buf.clone(), finished.clone());
                thread::spawn(move || {
                    let mut mine = Vec::new();
                    for (q, &len) in sizes.iter().enumerate() {
                        let p = payload(t, q, len);
                        mine.push((buf.insert(&p).unwrap(), p));
                    }
                    if finished.fetch_add(1, Ordering::SeqCst) + 1 == n {
                        // All inserts have returned, so all are released; stopping wakes
                        // the flush side for its last look.
                        buf.stop();
                    }
                    mine
                })
            })
            .collect();
        if !s.concurrent_drain {
            inserted.extend(handles.drain(..).flat_map(|h| h.join().unwrap()));
        }
        // The flush side.
        let mut stream = Vec::new();
        let mut written = start;
        loop {
            if finished.load(Ordering::SeqCst) == n && buf.released() == written {
                break;
            }
            let released = buf.wait_released(written, Duration::from_millis(1));
            if released > written {
                buf.copy_out(written, released, &mut stream);
                buf.mark_written(released);
                buf.mark_durable(released);
                written = released;
            } else {
                // Woken with nothing new: an inserter wants space that only a predecessor
                // still copying can free. Let it run.
                thread::yield_now();
            }
        }
        inserted.extend(handles.into_iter().flat_map(|h| h.join().unwrap()));
        inserted.sort_by_key(|r| r.0);
        // Walk the stream: records in LSN order, padding anywhere, nothing else.
        let mut found = Vec::new();
        let mut pos = start;
        let end = start.add(stream.len() as u64);
        while pos < end {
            let off = (pos.0 - start.0) as usize;
            let seg_end = (pos.0 / s.segment_bytes + 1) * s.segment_bytes;
            let limit = (seg_end.min(end.0) - start.0) as usize;
            match frame::decode(&stream[off..limit], pos) {
                Decoded::Record {
                    payload, frame_len, ..
                } => {
                    found.push((pos, payload.to_vec()));
                    pos = pos.add(frame_len);
                }
                Decoded::Padding { frame_len } => pos = pos.add(frame_len),
                Decoded::Invalid(why) => panic!("{variant}: at {pos}: {}", why.describe()),
            }
        }
        assert_eq!(
            found, inserted,
            "{variant}: the stream holds exactly the inserts"
        );
    });
}

macro_rules! models {
    ($($name:ident => $variant:expr),* $(,)?) => {$(
        mod $name {
            use super::*;

            /// Two threads, one record each: the basic reserve/fill/release race.
            #[test]
            fn two_inserts_race() {
                run($variant, &SMALL);
            }

            /// Two threads, two records each: consolidation groups, release hand-overs,
            /// delegation chains, a thread inserting again after delegating. (The flush
            /// side reads afterwards, to keep the model small.)
            #[test]
            fn two_threads_two_records_each() {
                static S: Scenario = Scenario {
                    threads: &[&[8, 24], &[16, 8]],
                    concurrent_drain: false,
                    ..SMALL
                };
                run($variant, &S);
            }

            /// Three threads: three-way races for the lock, a slot, the release turn. (The
            /// flush side reads afterwards: with it, the model would take minutes.)
            #[test]
            fn three_inserts_race() {
                static S: Scenario = Scenario {
                    threads: &[&[8], &[16], &[8]],
                    slots: 2,
                    concurrent_drain: false,
                    ..SMALL
                };
                run($variant, &S);
            }

            /// Records meet a segment end: padding in front of a frame (or a group), and
            /// for fetch-add reservations, padding over a crossing and a placed retry.
            #[test]
            fn records_meet_a_segment_end() {
                static S: Scenario = Scenario {
                    threads: &[&[24], &[40]],
                    start: 104,
                    segment_bytes: 128,
                    ..SMALL
                };
                run($variant, &S);
            }

            /// The ring is full: an insert waits for the flush side to free space, and the
            /// ring's end wraps.
            #[test]
            fn an_insert_waits_for_ring_space() {
                static S: Scenario = Scenario {
                    threads: &[&[48]],
                    prefill: &[48, 48, 48, 48],
                    start: 200,
                    ..SMALL
                };
                run($variant, &S);
            }

            /// With the ring three-quarters full, the second of two racing inserts waits
            /// for space (while, in some variants, the first waits for its turn or
            /// delegates to it). One preemption: two take about a minute per variant.
            #[test]
            fn racing_inserts_wait_for_ring_space() {
                static S: Scenario = Scenario {
                    threads: &[&[48], &[48]],
                    prefill: &[48, 48, 48],
                    start: 200,
                    max_preemptions: Some(1),
                    ..SMALL
                };
                run($variant, &S);
            }
        }
    )*};
}

models! {
    mutex => InsertVariant::Mutex,
    consolidated => InsertVariant::Consolidated,
    decoupled => InsertVariant::Decoupled,
    hybrid => InsertVariant::Hybrid,
    delegated => InsertVariant::Delegated,
    atomic => InsertVariant::Atomic,
}

/// Durable notification: a blocking waiter registers and parks while the flush daemon
/// publishes the durable position and wakes the satisfied waiters. Two waiters for
/// different positions, two rounds: neither may be lost or woken early.
#[test]
fn durable_waiters_are_woken_exactly_when_satisfied() {
    loom::model(|| {
        let durable = Arc::new(AtomicU64::new(0));
        let waiters = Arc::new(DurableWaiters::default());
        let handles: Vec<_> = [8u64, 16]
            .into_iter()
            .map(|lsn| {
                let (durable, waiters) = (durable.clone(), waiters.clone());
                thread::spawn(move || {
                    waiters.block_until(Lsn(lsn), || durable.load(Ordering::Acquire) >= lsn);
                    assert!(durable.load(Ordering::Acquire) >= lsn, "woken early");
                })
            })
            .collect();
        for d in [8u64, 16] {
            durable.store(d, Ordering::Release);
            waiters.on_durable(Lsn(d));
        }
        for h in handles {
            h.join().unwrap();
        }
    });
}
