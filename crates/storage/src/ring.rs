//! Asynchronous writes and syncs: an [`IoRing`] takes *chains* of operations on a
//! storage's files and completes them later, so the thread that submits them goes on
//! with other work while the device works (the log's commit path without a flush
//! thread: ARCHITECTURE.md, "Flush paths").
//!
//! A chain's operations run one after another, each only once the one before it
//! succeeded (io_uring's `IOSQE_IO_LINK`): a sync placed after writes covers them. The
//! first failure ends the chain; the operations after it do not run. Separate chains
//! are unordered: they may complete in any order, as the kernel may reorder unlinked
//! requests. Until its chain completes, nothing may be assumed about an operation: a
//! write may or may not have reached the page cache, and a crash before completion
//! may keep or lose it (and a completed write is as volatile as a `write_at` until a
//! sync after it completes).
//!
//! Backends: [`OsStorage`](crate::OsStorage) submits to an io_uring on Linux (where the
//! kernel refuses one, [`Storage::io_ring`](crate::Storage::io_ring) fails and the
//! caller takes its synchronous path); [`SimStorage`](crate::SimStorage) hands out a
//! [`DeferredRing`] that runs a chain through the files' own calls when it is reaped,
//! so every fault, halt and crash point of the simulated disk applies to it, and that
//! may leave a chain pending on a reap that does not wait, and complete chains out of
//! order. A wrapper that changes what a file's calls do (a [`crate::DeviceModel`]
//! charging device time) hands out no ring of the storage below: its users stay on the
//! path whose calls it sees.

use crate::FileHandle;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::io;
use std::ops::Range;
use std::sync::Arc;

/// One operation of a chain.
#[derive(Clone)]
pub enum RingOp {
    /// Writes `data[range]` at `offset` of `file` (as [`FileHandle::write_at`]).
    Write {
        /// The file (kept open until the chain completes).
        file: Arc<dyn FileHandle>,
        /// The bytes (kept until the chain completes).
        data: Arc<Vec<u8>>,
        /// Which of them.
        range: Range<usize>,
        /// Where in the file.
        offset: u64,
    },
    /// Makes `file`'s writes durable (as [`FileHandle::sync_data`]).
    SyncData {
        /// The file.
        file: Arc<dyn FileHandle>,
    },
    /// The named failure point `name` of `file` ([`FileHandle::failpoint`]), reached in
    /// its place in the chain: a simulated disk may fail the chain or halt there. A real
    /// file's failure points are no-ops, so io_uring submits nothing for it.
    Failpoint {
        /// The file.
        file: Arc<dyn FileHandle>,
        /// The point's name ([`crate::failpoint`]).
        name: &'static str,
    },
}

impl RingOp {
    /// Runs the operation on this thread, through the file's own calls.
    pub fn run(&self) -> io::Result<()> {
        match self {
            RingOp::Write {
                file,
                data,
                range,
                offset,
            } => file.write_at(&data[range.clone()], *offset),
            RingOp::SyncData { file } => file.sync_data(),
            RingOp::Failpoint { file, name } => file.failpoint(name),
        }
    }

    /// The file the operation concerns.
    pub fn file(&self) -> &Arc<dyn FileHandle> {
        match self {
            RingOp::Write { file, .. }
            | RingOp::SyncData { file }
            | RingOp::Failpoint { file, .. } => file,
        }
    }
}

impl std::fmt::Debug for RingOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingOp::Write {
                file,
                range,
                offset,
                ..
            } => write!(
                f,
                "write {} bytes at {offset} of {:?}",
                range.len(),
                file.path()
            ),
            RingOp::SyncData { file } => write!(f, "sync {:?}", file.path()),
            RingOp::Failpoint { file, name } => {
                write!(f, "failure point {name} of {:?}", file.path())
            }
        }
    }
}

/// A completed chain.
#[derive(Debug)]
pub struct RingDone {
    /// The tag it was submitted with.
    pub tag: u64,
    /// How many of its operations succeeded (all of them if `result` is `Ok`).
    pub succeeded: usize,
    /// `Ok`, or the first operation's failure (its error names the file).
    pub result: io::Result<()>,
}

/// A submission queue of chains (the module docs). One owner submits and reaps; share it
/// behind a lock.
pub trait IoRing: Send {
    /// Submits `ops` as one chain, tagged `tag`. Returns once the kernel (or the
    /// simulator) has taken it; never waits for the device. An `Err` means the chain was
    /// not submitted (none of it will run).
    fn submit(&mut self, tag: u64, ops: Vec<RingOp>) -> io::Result<()>;
    /// A completed chain, if one is: with `wait`, blocks until one completes (`None`
    /// only if nothing is in flight). Without, never blocks.
    fn complete(&mut self, wait: bool) -> io::Result<Option<RingDone>>;
    /// Chains submitted and not yet reaped.
    fn in_flight(&self) -> usize;
    /// What the ring is, for the one line a log says about its flush path
    /// (`io_uring`, `simulated`).
    fn describe(&self) -> String;
}

/// Runs each chain through its files' own calls when it is reaped (the module docs):
/// the ring of [`SimStorage`](crate::SimStorage), and of any storage whose files have
/// no descriptor to submit. With a seed, a reap that does not wait may find nothing
/// completed, and the chain completed is drawn from those in flight (seeded: a run is
/// reproducible); without, chains complete in submission order at the first reap.
pub struct DeferredRing {
    chains: VecDeque<(u64, Vec<RingOp>)>,
    rng: Option<StdRng>,
}

impl DeferredRing {
    /// A ring that completes chains in order, at the first reap.
    pub fn new() -> DeferredRing {
        DeferredRing {
            chains: VecDeque::new(),
            rng: None,
        }
    }

    /// A ring that defers and reorders completions as `seed` draws.
    pub fn seeded(seed: u64) -> DeferredRing {
        DeferredRing {
            chains: VecDeque::new(),
            rng: Some(StdRng::seed_from_u64(seed)),
        }
    }
}

impl Default for DeferredRing {
    fn default() -> Self {
        DeferredRing::new()
    }
}

/// Runs a chain's operations in order up to the first failure.
pub(crate) fn run_chain(tag: u64, ops: &[RingOp]) -> RingDone {
    let mut succeeded = 0;
    for op in ops {
        if let Err(e) = op.run() {
            return RingDone {
                tag,
                succeeded,
                result: Err(e),
            };
        }
        succeeded += 1;
    }
    RingDone {
        tag,
        succeeded,
        result: Ok(()),
    }
}

impl IoRing for DeferredRing {
    fn submit(&mut self, tag: u64, ops: Vec<RingOp>) -> io::Result<()> {
        self.chains.push_back((tag, ops));
        Ok(())
    }

    fn complete(&mut self, wait: bool) -> io::Result<Option<RingDone>> {
        if self.chains.is_empty() {
            return Ok(None);
        }
        let index = match &mut self.rng {
            None => 0,
            Some(rng) => {
                // Not yet done: a reap that does not wait finds nothing one time in three.
                if !wait && rng.gen_ratio(1, 3) {
                    return Ok(None);
                }
                rng.gen_range(0..self.chains.len())
            }
        };
        let (tag, ops) = self
            .chains
            .remove(index)
            .expect("drawn from those in flight");
        Ok(Some(run_chain(tag, &ops)))
    }

    fn in_flight(&self) -> usize {
        self.chains.len()
    }

    fn describe(&self) -> String {
        match self.rng {
            Some(_) => "simulated (deferred, reordered)".into(),
            None => "deferred".into(),
        }
    }
}

/// The descriptor each operation of `ops` targets, where each file has one
/// ([`FileHandle::os_fd`]); `None` for a failure point, which submits nothing.
pub(crate) fn descriptors(ops: &[RingOp]) -> io::Result<Vec<Option<i32>>> {
    ops.iter()
        .map(|op| {
            if matches!(op, RingOp::Failpoint { .. }) {
                return Ok(None);
            }
            op.file()
                .os_fd()
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::Unsupported,
                        format!(
                            "{:?} has no descriptor to submit asynchronous I/O to",
                            op.file().path()
                        ),
                    )
                })
                .map(Some)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FaultKind, FaultOp, FaultPlan, OpenOptions, SimStorage, Storage};
    use std::path::Path;

    fn file(sim: &SimStorage, path: &str) -> Arc<dyn FileHandle> {
        sim.create_dir_all(Path::new("/d")).unwrap();
        Arc::from(sim.open(Path::new(path), OpenOptions::CREATE).unwrap())
    }

    fn write(file: &Arc<dyn FileHandle>, bytes: &[u8], offset: u64) -> RingOp {
        RingOp::Write {
            file: file.clone(),
            data: Arc::new(bytes.to_vec()),
            range: 0..bytes.len(),
            offset,
        }
    }

    #[test]
    fn a_chain_runs_in_order_and_its_sync_covers_its_writes() {
        let sim = SimStorage::new(1);
        let f = file(&sim, "/d/a");
        let mut ring = DeferredRing::new();
        let ops = vec![
            write(&f, b"hello ", 0),
            write(&f, b"world", 6),
            RingOp::SyncData { file: f.clone() },
        ];
        ring.submit(7, ops).unwrap();
        assert_eq!(ring.in_flight(), 1);
        let mut buf = [0u8; 11];
        assert_eq!(
            f.read_at(&mut buf, 0).unwrap(),
            0,
            "nothing runs before a reap"
        );
        let done = ring.complete(false).unwrap().unwrap();
        assert_eq!((done.tag, done.succeeded), (7, 3));
        done.result.unwrap();
        sim.crash();
        let f = sim.open(Path::new("/d/a"), OpenOptions::EXISTING).unwrap();
        f.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(
            &buf, b"hello world",
            "the chain's sync made both writes durable"
        );
        assert!(ring.complete(true).unwrap().is_none(), "nothing in flight");
    }

    #[test]
    fn the_first_failure_ends_the_chain_and_names_the_file() {
        let sim = SimStorage::new(2);
        let f = file(&sim, "/d/b");
        sim.inject(FaultPlan::new(FaultOp::Write, 2, FaultKind::Enospc).on("/d/b"));
        let mut ring = DeferredRing::new();
        let ops = vec![
            write(&f, b"one", 0),
            write(&f, b"two", 3),
            RingOp::SyncData { file: f.clone() },
        ];
        let syncs = sim.stats().syncs;
        ring.submit(1, ops).unwrap();
        let done = ring.complete(true).unwrap().unwrap();
        assert_eq!(done.succeeded, 1);
        let e = done.result.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
        assert!(e.to_string().contains("/d/b"), "{e}");
        assert_eq!(
            sim.stats().syncs,
            syncs,
            "the sync after the failure did not run"
        );
    }

    #[test]
    fn a_crash_before_the_reap_loses_the_chain() {
        let sim = SimStorage::new(3);
        let f = file(&sim, "/d/c");
        f.sync_data().unwrap();
        sim.sync_dir(Path::new("/d")).unwrap();
        let mut ring = DeferredRing::new();
        ring.submit(1, vec![write(&f, b"lost", 0), RingOp::SyncData { file: f }])
            .unwrap();
        sim.crash();
        let f = sim.open(Path::new("/d/c"), OpenOptions::EXISTING).unwrap();
        assert_eq!(f.len().unwrap(), 0, "submitted, never completed: gone");
    }

    #[test]
    fn a_seeded_ring_defers_and_reorders_but_completes_every_chain_once() {
        let sim = SimStorage::new(4);
        let f = file(&sim, "/d/e");
        let mut orders = std::collections::BTreeSet::new();
        let mut deferred = 0;
        for seed in 0..40 {
            let mut ring = DeferredRing::seeded(seed);
            for tag in 0..4u64 {
                ring.submit(tag, vec![write(&f, &[tag as u8], tag)])
                    .unwrap();
            }
            let mut order = Vec::new();
            while ring.in_flight() > 0 {
                match ring.complete(false).unwrap() {
                    Some(d) => {
                        d.result.unwrap();
                        order.push(d.tag);
                    }
                    None => deferred += 1,
                }
            }
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0, 1, 2, 3], "each chain exactly once");
            orders.insert(order);
        }
        assert!(orders.len() > 1, "completions were reordered: {orders:?}");
        assert!(deferred > 0, "some reaps found nothing completed");
    }
}
