//! The log's order assertions can fire: each test moves a position the wrong way through
//! a crate-internal path and expects the assertion that names the order it broke —
//! reserved ≥ released ≥ written ≥ durable, none moving back, LSNs strictly increasing,
//! segments at boundaries. An assertion that can never fail would guard nothing.

use crate::buffer::{BufferOptions, InsertVariant, LogBuffer, Placement};
use crate::segments::dirs::LogDirs;
use crate::segments::SegmentSet;
use crate::Lsn;
use sluice_storage::SimStorage;
use std::path::PathBuf;
use std::sync::Arc;

const SEGMENT: u64 = 4096;

/// A buffer with two records in it, released and not yet written.
fn buffer() -> (LogBuffer, Lsn) {
    let b = LogBuffer::new(
        &BufferOptions {
            capacity: 1 << 16,
            segment_bytes: SEGMENT,
            variant: InsertVariant::Mutex,
            slots: 1,
        },
        Lsn(0),
    )
    .unwrap();
    b.insert(b"first").unwrap();
    b.insert(b"second").unwrap();
    let released = b.released();
    assert!(released > Lsn(0));
    (b, released)
}

/// The flush side's whole round, in order: nothing fires.
#[test]
fn positions_moved_in_order_fire_nothing() {
    let (b, released) = buffer();
    let mut out = Vec::new();
    b.copy_out(Lsn(0), released, &mut out);
    b.mark_written(released);
    b.mark_durable(released);
    assert_eq!((b.written(), b.durable()), (released, released));
}

#[test]
#[should_panic(expected = "passes released")]
fn written_does_not_pass_released() {
    let (b, released) = buffer();
    b.mark_written(released.add(8));
}

#[test]
#[should_panic(expected = "passes written")]
fn durable_does_not_pass_written() {
    let (b, released) = buffer();
    b.mark_written(Lsn(8));
    b.mark_durable(released);
}

#[test]
#[should_panic(expected = "durable went backwards")]
fn durable_never_moves_back() {
    let (b, released) = buffer();
    b.mark_written(released);
    b.mark_durable(released);
    b.mark_durable(Lsn(8));
}

#[test]
#[should_panic(expected = "written went backwards")]
fn written_never_moves_back() {
    let (b, released) = buffer();
    b.mark_written(released);
    b.mark_written(Lsn(8));
}

/// A release must start exactly at the released position: one that skips a gap would
/// publish bytes nobody filled.
#[test]
#[should_panic(expected = "while released is")]
fn a_release_is_contiguous() {
    let (b, released) = buffer();
    b.core.publish_released(released.add(8), released.add(16));
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "LSNs strictly increasing")]
fn an_empty_reservation_is_refused() {
    let (b, released) = buffer();
    b.core.place(released, 0);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "reserved ≥ released")]
fn a_reservation_below_released_is_refused() {
    let (b, released) = buffer();
    assert!(released.0 >= 16);
    // SAFETY: the range is not ours (it was released): exactly what the assertion
    // catches, and it fires before `prepare` writes a byte.
    let _ = unsafe {
        b.core.prepare(Placement {
            start: Lsn(0),
            base: Lsn(0),
            end: Lsn(16),
        })
    };
}

#[test]
#[should_panic(expected = "segment boundaries")]
fn a_segment_off_a_boundary_is_refused() {
    let storage = Arc::new(SimStorage::new(1));
    let dirs = Arc::new(LogDirs::new(&[PathBuf::from("/log")]).unwrap());
    let set = SegmentSet::new(
        storage,
        dirs,
        SEGMENT,
        Vec::new(),
        Lsn(0),
        crate::Preallocate::default(),
    );
    set.note_segment(Lsn(SEGMENT));
    set.note_segment(Lsn(SEGMENT + 8));
}
