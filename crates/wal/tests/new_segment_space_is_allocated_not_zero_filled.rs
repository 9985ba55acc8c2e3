//! Issue 28, "no second write of the log": new segment space is reserved with
//! `FileHandle::allocate` (fallocate) instead of zero-filled, so every log byte is written
//! once. What a file system returns for allocated space is zeros, but the log must not
//! rely on it: a recycled file already holds old frames there, and these tests run the
//! log over a disk whose new space holds junk (`common::JunkSpace`: random words and
//! frames that verify only at other LSNs) — a clean close and reopen, a read-only open,
//! and a power loss at every operation of a workload.

use crate::common;

use common::*;
use sluice_storage::{OpenOptions, SimStorage, Storage, TraceEvent};
use sluice_wal::{segment, Log, LogOptions, Lsn, Preallocate, WalError};
use std::path::Path;
use std::sync::Arc;

const MAX_LEN: usize = 300;
/// The operations [`crash_at`] is tried at.
const OPS: u64 = 300;

/// Appends records until the log has gone `segments` segments in, waiting for each to be
/// durable; returns them (LSN, payload), oldest first.
fn fill(log: &Log, segment_bytes: u64, segments: u64) -> Vec<(Lsn, Vec<u8>)> {
    let mut written = Vec::new();
    let mut seq = 0;
    while log.released_lsn() < Lsn(segments * segment_bytes + 500) {
        let p = payload(0, seq, MAX_LEN);
        let a = log.append(&p).unwrap();
        log.wait_durable(a.end).unwrap();
        written.push((a.lsn, p));
        seq += 1;
    }
    written
}

/// Bytes written into segment files' data (past their header blocks), and whether any
/// segment file was allocated, from a trace.
fn data_writes(trace: &[TraceEvent]) -> (u64, bool) {
    let is_segment_file = |p: &Path| {
        let n = p.file_name().unwrap().to_str().unwrap();
        n.ends_with(".wal") || n.ends_with(".wal.tmp")
    };
    let written = trace
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Write { path, offset, len }
                if is_segment_file(path) && *offset >= segment::SEGMENT_HEADER_BYTES =>
            {
                Some(*len)
            }
            _ => None,
        })
        .sum();
    let allocated = trace
        .iter()
        .any(|e| matches!(e, TraceEvent::Allocate { path, .. } if is_segment_file(path)));
    (written, allocated)
}

#[test]
fn only_log_bytes_are_written_into_new_segments() {
    for preallocate in Preallocate::ALL {
        let (sim, storage) = sim(2801);
        let options = LogOptions {
            preallocate,
            ..small_options()
        };
        sim.set_trace(true);
        let log = Log::open(storage.clone(), DIR, options).unwrap();
        let written = fill(&log, options.segment_bytes, 4);
        let stats = log.stats();
        log.close().unwrap();
        drop(log);
        let (data, allocated) = data_writes(&sim.take_trace());
        assert_eq!(stats.segments_recycled, 0);
        match preallocate {
            Preallocate::Allocate => {
                assert_eq!(stats.bytes_zero_filled, 0, "{stats:?}");
                assert!(
                    stats.bytes_allocated >= 4 * options.segment_bytes,
                    "{stats:?}"
                );
                assert!(allocated);
                // Every byte written past a header block is a log byte: written once.
                assert_eq!(data, stats.bytes_written, "{stats:?}");
            }
            Preallocate::Zeros => {
                assert_eq!(stats.bytes_allocated, 0, "{stats:?}");
                assert!(stats.bytes_zero_filled >= 4 * options.segment_bytes);
                assert!(!allocated);
                assert_eq!(data, stats.bytes_written + stats.bytes_zero_filled);
            }
        }
        let log = Log::open(storage, DIR, options).unwrap();
        assert_eq!(read_all(&log), written, "{preallocate}");
    }
}

fn junk_space(seed: u64) -> (SimStorage, Arc<dyn Storage>) {
    let sim = SimStorage::new(seed);
    let junk = JunkSpace {
        sim: sim.clone(),
        segment_bytes: small_options().segment_bytes,
        seed,
    };
    (sim, Arc::new(junk))
}

/// The bytes of segment `start`'s file past data byte `from`.
fn file_tail(storage: &dyn Storage, start: Lsn, from: u64) -> Vec<u8> {
    let f = storage
        .open(
            &Path::new(DIR).join(segment::segment_name(start)),
            OpenOptions::READ_ONLY,
        )
        .unwrap();
    let at = segment::SEGMENT_HEADER_BYTES + from;
    let mut buf = vec![0u8; (f.len().unwrap() - at) as usize];
    f.read_exact_at(&mut buf, at).unwrap();
    buf
}

#[test]
fn a_log_over_junk_filled_new_space_reads_back_exactly_what_it_wrote() {
    let (_sim, storage) = junk_space(2802);
    let options = small_options();
    let log = Log::open(storage.clone(), DIR, options).unwrap();
    let written = fill(&log, options.segment_bytes, 3);
    // Records still in flight when the log closes are made durable by the close.
    let mut written = written;
    for seq in 10_000..10_003 {
        let p = payload(0, seq, MAX_LEN);
        written.push((log.append(&p).unwrap().lsn, p));
    }
    let end = log.close().unwrap();
    drop(log);
    let last = segment::segment_start(end, options.segment_bytes);
    let tail = file_tail(&*storage, last, end.0 - last.0);
    assert!(
        tail.len() >= 64 && tail.iter().filter(|&&b| b != 0).count() > tail.len() / 4,
        "the space past the log's end holds junk, not zeros"
    );

    // A read-only open reads to the end and stops at the junk, changing nothing.
    let ro = Log::open_read_only(storage.clone(), DIR, options).unwrap();
    assert_eq!(ro.durable_lsn(), end);
    assert_eq!(read_all(&ro), written);
    drop(ro);

    let log = Log::open(storage.clone(), DIR, options).unwrap();
    assert_eq!(log.durable_lsn(), end, "{:?}", log.recovery());
    assert_eq!(read_all(&log), written);
    assert!(
        log.recovery().cut_bytes > 0,
        "the junk after the end was cut as a tail: {:?}",
        log.recovery()
    );
    // And the log goes on over it.
    let more = fill(&log, options.segment_bytes, 5);
    written.extend(more);
    log.close().unwrap();
    drop(log);
    let log = Log::open(storage, DIR, options).unwrap();
    assert_eq!(read_all(&log), written);
}

/// One power loss at operation `op` of a workload over junk-filled new space; then every
/// acknowledged record is read back, in order, and nothing else.
fn crash_at(op: u64) -> (usize, bool) {
    let (sim, storage) = junk_space(2803 + op);
    let options = small_options();
    sim.crash_at_op(op);
    let mut appended = Vec::new();
    let mut acked = 0;
    if let Ok(log) = Log::open(storage.clone(), DIR, options) {
        for seq in 0..120 {
            let p = payload(0, seq, MAX_LEN);
            appended.push(p.clone());
            match log.append(&p).and_then(|a| log.wait_durable(a.end)) {
                Ok(_) => acked += 1,
                Err(_) => break,
            }
        }
    }
    let halted = sim.crashed_count() > 0;
    if !halted {
        sim.crash();
    }
    sim.disarm_crash();
    let log = Log::open(storage.clone(), DIR, options).unwrap_or_else(|e| {
        assert!(!matches!(e, WalError::Corruption { .. }), "op {op}: {e}");
        panic!("op {op}: reopen failed: {e}")
    });
    let records: Vec<Vec<u8>> = read_all(&log).into_iter().map(|(_, p)| p).collect();
    assert!(
        records.len() >= acked,
        "op {op}: {acked} acknowledged, {} recovered",
        records.len()
    );
    assert_eq!(
        records[..],
        appended[..records.len()],
        "op {op}: the recovered records are not a prefix of those appended"
    );
    // The recovered log takes appends and keeps them through another power loss.
    let a = log.append(b"after").unwrap();
    log.wait_durable(a.end).unwrap();
    drop(log);
    sim.crash();
    let log = Log::open(storage, DIR, options).unwrap();
    let again = read_all(&log);
    assert_eq!(again.len(), records.len() + 1, "op {op}");
    assert_eq!(
        again.last().unwrap(),
        &(a.lsn, b"after".to_vec()),
        "op {op}"
    );
    (acked, halted)
}

#[test]
fn a_power_loss_at_any_operation_over_junk_filled_new_space_keeps_every_acknowledged_record() {
    let (mut acked, mut halts) = (0, 0);
    for op in 1..=OPS {
        let (a, h) = crash_at(op);
        acked += a;
        halts += u64::from(h);
    }
    // Most crash points land inside the workload (about 290 operations over several
    // segments).
    assert!(halts > OPS * 4 / 5, "{halts} halts");
    assert!(acked > OPS as usize * 20, "{acked} acknowledged");
}
