//! Review of the io_uring ring (`uring.rs`) on this machine's kernel: failure points'
//! place in a chain's `succeeded` count, a chain of only failure points, and a ring
//! dropped with chains in flight.

use crate::{FileHandle, IoRing, OpenOptions, OsStorage, RingOp, SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn ring_or_skip() -> Option<Box<dyn IoRing>> {
    match OsStorage::new().io_ring() {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("io_uring refused here: {e}");
            None
        }
    }
}

fn fp(file: &Arc<dyn FileHandle>) -> RingOp {
    RingOp::Failpoint {
        file: file.clone(),
        name: crate::failpoint::LOG_WRITTEN,
    }
}

/// A failed write after a failure point: `succeeded` counts the failure point (it is
/// the index of the failed operation), as the simulator's ring counts it.
#[test]
fn succeeded_counts_failure_points_like_the_deferred_ring() {
    let Some(mut ring) = ring_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let os = OsStorage::new();
    let path = dir.path().join("ro");
    os.open(&path, OpenOptions::CREATE).unwrap();
    let ro: Arc<dyn FileHandle> = Arc::from(os.open(&path, OpenOptions::READ_ONLY).unwrap());
    let rw: Arc<dyn FileHandle> = Arc::from(
        os.open(&dir.path().join("rw"), OpenOptions::CREATE)
            .unwrap(),
    );
    let data = Arc::new(vec![1u8; 100]);
    let w = |f: &Arc<dyn FileHandle>| RingOp::Write {
        file: f.clone(),
        data: data.clone(),
        range: 0..100,
        offset: 0,
    };
    let ops = vec![
        w(&rw),
        fp(&rw),
        w(&ro),
        fp(&ro),
        RingOp::SyncData { file: rw.clone() },
    ];
    ring.submit(3, ops).unwrap();
    let done = ring.complete(true).unwrap().unwrap();
    assert_eq!(done.succeeded, 2, "{done:?}");
    assert!(done.result.is_err());
    // A chain of failure points only: complete at once, all succeeded.
    ring.submit(4, vec![fp(&rw), fp(&rw)]).unwrap();
    let done = ring.complete(false).unwrap().unwrap();
    assert_eq!((done.tag, done.succeeded), (4, 2));
    done.result.unwrap();
    assert_eq!(ring.in_flight(), 0);
}

/// A ring dropped with chains in flight waits for them: the bytes are in the file when
/// the drop returns (and the kernel read no freed buffer).
#[test]
fn a_ring_dropped_with_chains_in_flight_lets_them_finish() {
    let Some(mut ring) = ring_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let os = OsStorage::new();
    let f: Arc<dyn FileHandle> =
        Arc::from(os.open(&dir.path().join("f"), OpenOptions::CREATE).unwrap());
    for tag in 0..8u64 {
        let data = Arc::new(vec![tag as u8 + 1; 1 << 20]);
        ring.submit(
            tag,
            vec![
                RingOp::Write {
                    file: f.clone(),
                    data,
                    range: 0..1 << 20,
                    offset: tag << 20,
                },
                RingOp::SyncData { file: f.clone() },
            ],
        )
        .unwrap();
    }
    assert!(ring.in_flight() > 0);
    drop(ring);
    let mut back = vec![0u8; 8 << 20];
    f.read_exact_at(&mut back, 0).unwrap();
    for (i, chunk) in back.chunks(1 << 20).enumerate() {
        assert!(chunk.iter().all(|&b| b == i as u8 + 1), "chunk {i}");
    }
}

/// A handle of another storage in a chain of this ring is refused before anything is
/// submitted, even behind operations that have descriptors.
#[test]
fn a_chain_mixing_in_a_simulated_file_is_refused_whole() {
    let Some(mut ring) = ring_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let os = OsStorage::new();
    let f: Arc<dyn FileHandle> =
        Arc::from(os.open(&dir.path().join("f"), OpenOptions::CREATE).unwrap());
    let sim = SimStorage::new(1);
    sim.create_dir_all(Path::new("/d")).unwrap();
    let s: Arc<dyn FileHandle> =
        Arc::from(sim.open(Path::new("/d/x"), OpenOptions::CREATE).unwrap());
    let data = Arc::new(b"x".to_vec());
    let e = ring
        .submit(
            1,
            vec![
                RingOp::Write {
                    file: f.clone(),
                    data,
                    range: 0..1,
                    offset: 0,
                },
                RingOp::SyncData { file: s },
            ],
        )
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
    assert_eq!(ring.in_flight(), 0);
    assert_eq!(f.len().unwrap(), 0, "nothing of the chain ran");
}
