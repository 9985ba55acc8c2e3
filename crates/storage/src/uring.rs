//! [`OsStorage`](crate::OsStorage)'s [`IoRing`]: io_uring (Linux). A chain's operations
//! are linked (`IOSQE_IO_LINK`), so each starts only once the one before it succeeded
//! and the first failure cancels the rest (`ECANCELED`); `fdatasync` is
//! `IORING_OP_FSYNC` with `IORING_FSYNC_DATASYNC`. Submitting is one `io_uring_enter`
//! that does not wait; reaping reads the completion queue in shared memory, with no
//! system call unless the caller waits.

use crate::error::with_path;
use crate::ring::{descriptors, IoRing, RingDone, RingOp};
use io_uring::{opcode, squeue, types, IoUring, Probe};
use std::collections::{HashMap, VecDeque};
use std::io;

/// Submission-queue entries: a log's chain has at most a few writes and syncs (two
/// segments' worth), and one chain is in flight at a time.
const ENTRIES: u32 = 64;

/// A chain submitted and not all of whose completions have arrived.
struct Pending {
    tag: u64,
    /// Kept until the chain completes: the files stay open and the bytes stay put
    /// while the kernel may still read them.
    ops: Vec<RingOp>,
    /// Entries submitted whose completions have not arrived.
    left: usize,
    /// The failed operation with the lowest index, and its error (a cancelled one,
    /// `ECANCELED`, gives way to the failure that cancelled it).
    failed: Option<(usize, io::Error)>,
    /// Times the chain's rest was submitted again after the kernel cancelled it.
    resubmitted: u32,
}

/// How often a chain cancelled by nobody's failure is submitted again before the
/// cancellation counts as its failure.
const MAX_RESUBMITS: u32 = 64;

/// See the module docs.
pub(crate) struct UringRing {
    ring: IoUring,
    /// Chains whose rest was submitted again after a cancellation (see `drain`).
    resubmits: u64,
    next_chain: u64,
    pending: HashMap<u64, Pending>,
    done: VecDeque<RingDone>,
}

/// Operations per chain at most (an operation's index sits in the low byte of its
/// completion's user data).
const MAX_OPS: usize = 255;

impl UringRing {
    /// A ring, or the kernel's refusal: no io_uring (`ENOSYS`, before 5.1), forbidden
    /// (`EPERM`: seccomp, `kernel.io_uring_disabled`), or without the operations a
    /// chain needs (positional write: 5.6).
    pub(crate) fn new() -> io::Result<UringRing> {
        let refused = |e: io::Error| io::Error::new(e.kind(), format!("io_uring refused: {e}"));
        let ring = IoUring::new(ENTRIES).map_err(refused)?;
        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(refused)?;
        for (code, name) in [
            (opcode::Write::CODE, "IORING_OP_WRITE"),
            (opcode::Fsync::CODE, "IORING_OP_FSYNC"),
        ] {
            if !probe.is_supported(code) {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("io_uring refused: the kernel's ring has no {name}"),
                ));
            }
        }
        Ok(UringRing {
            ring,
            resubmits: 0,
            next_chain: 0,
            pending: HashMap::new(),
            done: VecDeque::new(),
        })
    }

    /// Moves the completion queue's entries into `pending`, and finished chains into
    /// `done`.
    fn drain(&mut self) {
        let mut finished = Vec::new();
        let mut cq = self.ring.completion();
        cq.sync();
        for cqe in &mut cq {
            let (chain, index) = (cqe.user_data() >> 8, (cqe.user_data() & 0xff) as usize);
            let p = self
                .pending
                .get_mut(&chain)
                .expect("a completion of a chain in flight");
            let res = cqe.result();
            let outcome = if res < 0 {
                Err(io::Error::from_raw_os_error(-res))
            } else {
                match &p.ops[index] {
                    RingOp::Write { range, .. } if (res as usize) < range.len() => {
                        Err(io::Error::new(
                            io::ErrorKind::WriteZero,
                            format!("short write: {res} of {} bytes", range.len()),
                        ))
                    }
                    _ => Ok(()),
                }
            };
            if let Err(e) = outcome {
                let cancelled = |e: &io::Error| e.raw_os_error() == Some(libc::ECANCELED);
                let replace = match &p.failed {
                    None => true,
                    Some((i, old)) => {
                        (cancelled(old) && !cancelled(&e)) || (*i > index && !cancelled(&e))
                    }
                };
                if replace {
                    let e = match p.ops[index].file().path() {
                        Some(path) => with_path(path, e),
                        None => e,
                    };
                    p.failed = Some((index, e));
                }
            }
            p.left -= 1;
            if p.left == 0 {
                finished.push(chain);
            }
        }
        drop(cq);
        for chain in finished {
            let p = self.pending.get_mut(&chain).expect("present");
            // io_uring cancels the work a thread submitted when that thread exits (a
            // committer that submitted a round and ended): nothing failed, the operations
            // from the cancelled one on simply did not run. They are idempotent (the
            // same bytes at the same offsets, a sync), so the rest of the chain is
            // submitted again, from this live thread.
            let cancelled_only = matches!(&p.failed, Some((_, e)) if crate::raw_os_error(e) == Some(libc::ECANCELED));
            if cancelled_only && p.resubmitted < MAX_RESUBMITS {
                let from = p.failed.take().expect("cancelled").0;
                p.resubmitted += 1;
                self.resubmits += 1;
                let ops = std::mem::take(&mut p.ops);
                let queued = self.push_chain(chain, &ops, from);
                let p = self.pending.get_mut(&chain).expect("present");
                p.ops = ops;
                match queued {
                    Ok(n) if n > 0 => {
                        p.left = n;
                        // Submitted at the next enter (a reap that waits enters at once).
                        let _ = self.enter(0);
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => p.failed = Some((from, e)),
                }
            }
            let p = self.pending.remove(&chain).expect("present");
            let (succeeded, result) = match p.failed {
                // Linked: everything before the failed operation succeeded.
                Some((i, e)) => (i, Err(e)),
                None => (p.ops.len(), Ok(())),
            };
            self.done.push_back(RingDone {
                tag: p.tag,
                succeeded,
                result,
            });
        }
    }

    fn enter(&mut self, wait: usize) -> io::Result<()> {
        loop {
            let r = if wait > 0 {
                self.ring.submit_and_wait(wait)
            } else {
                self.ring.submit()
            };
            match r {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl UringRing {
    /// Queues the entries of `ops[from..]` (those that submit something) as one linked
    /// chain with user data `chain`; returns how many it queued (0: only failure points).
    fn push_chain(&mut self, chain: u64, ops: &[RingOp], from: usize) -> io::Result<usize> {
        let fds = descriptors(&ops[from..])?;
        let entries: Vec<squeue::Entry> = ops[from..]
            .iter()
            .zip(&fds)
            .enumerate()
            .filter_map(|(i, (op, fd))| Some((from + i, op, (*fd)?)))
            .map(|(i, op, fd)| {
                let entry = match op {
                    RingOp::Write {
                        data,
                        range,
                        offset,
                        ..
                    } => {
                        let bytes = &data[range.clone()];
                        let len = u32::try_from(bytes.len()).expect("a write under 4 GiB");
                        opcode::Write::new(types::Fd(fd), bytes.as_ptr(), len)
                            .offset(*offset)
                            .build()
                    }
                    RingOp::SyncData { .. } => opcode::Fsync::new(types::Fd(fd))
                        .flags(types::FsyncFlags::DATASYNC)
                        .build(),
                    RingOp::Failpoint { .. } => unreachable!("failure points submit nothing"),
                };
                entry.user_data(chain << 8 | i as u64)
            })
            .collect();
        // Linked: each entry but the last (`flags` adds to an entry's flags).
        let linked = entries.len().saturating_sub(1);
        let entries: Vec<squeue::Entry> = entries
            .into_iter()
            .enumerate()
            .map(|(k, e)| {
                if k < linked {
                    e.flags(squeue::Flags::IO_LINK)
                } else {
                    e
                }
            })
            .collect();
        if entries.is_empty() {
            return Ok(0);
        }
        let full = || {
            io::Error::new(
                io::ErrorKind::WouldBlock,
                "the io_uring submission queue is full",
            )
        };
        let mut sq = self.ring.submission();
        if sq.capacity() - sq.len() < entries.len() {
            drop(sq);
            self.enter(0)?;
            sq = self.ring.submission();
            if sq.capacity() - sq.len() < entries.len() {
                return Err(full());
            }
        }
        // SAFETY: every buffer an entry points into (`data`) and every descriptor
        // (`file`) is owned by `ops`, which `pending` keeps until the chain's last
        // completion is reaped.
        unsafe { sq.push_multiple(&entries) }.map_err(|_| full())?;
        Ok(entries.len())
    }
}

impl IoRing for UringRing {
    fn submit(&mut self, tag: u64, ops: Vec<RingOp>) -> io::Result<()> {
        let submitted = ops
            .iter()
            .filter(|op| !matches!(op, RingOp::Failpoint { .. }))
            .count();
        if ops.is_empty() || ops.len() > MAX_OPS || submitted > ENTRIES as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a chain of {} operations, {submitted} of them submitted (1 to {MAX_OPS}, \
                     at most {ENTRIES} submitted)",
                    ops.len()
                ),
            ));
        }
        let chain = self.next_chain;
        self.next_chain += 1;
        let queued = self.push_chain(chain, &ops, 0)?;
        if queued == 0 {
            // Only failure points (no-ops on real files): done at once.
            self.done.push_back(RingDone {
                tag,
                succeeded: ops.len(),
                result: Ok(()),
            });
            return Ok(());
        }
        self.pending.insert(
            chain,
            Pending {
                tag,
                left: queued,
                ops,
                failed: None,
                resubmitted: 0,
            },
        );
        // The entries are in the queue: if the enter fails, the kernel may still take
        // them at the next one, so the chain stays pending either way.
        self.enter(0)
    }

    fn complete(&mut self, wait: bool) -> io::Result<Option<RingDone>> {
        loop {
            self.drain();
            if let Some(d) = self.done.pop_front() {
                return Ok(Some(d));
            }
            if !wait || self.pending.is_empty() {
                return Ok(None);
            }
            self.enter(1)?;
        }
    }

    fn in_flight(&self) -> usize {
        self.pending.len() + self.done.len()
    }

    fn describe(&self) -> String {
        "io_uring".into()
    }
}

impl Drop for UringRing {
    fn drop(&mut self) {
        // The kernel may still read the buffers of chains in flight: wait for them
        // before the buffers go.
        while !self.pending.is_empty() {
            if self.enter(1).is_err() {
                // Cannot wait: leak the buffers rather than let the kernel read freed
                // memory.
                for (_, p) in self.pending.drain() {
                    std::mem::forget(p.ops);
                }
                return;
            }
            self.drain();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FileHandle, OpenOptions, OsStorage, Storage};
    use std::sync::Arc;

    fn ring_or_skip() -> Option<Box<dyn IoRing>> {
        match OsStorage::new().io_ring() {
            Ok(r) => Some(r),
            Err(e) => {
                // A kernel that refuses io_uring is a supported platform: the log takes
                // its daemon (tested in sluice-wal); here there is nothing to test.
                eprintln!("io_uring refused on this machine, nothing to test: {e}");
                None
            }
        }
    }

    fn write(file: &Arc<dyn FileHandle>, data: &Arc<Vec<u8>>, offset: u64) -> RingOp {
        RingOp::Write {
            file: file.clone(),
            data: data.clone(),
            range: 0..data.len(),
            offset,
        }
    }

    #[test]
    fn a_chain_of_writes_and_a_sync_completes_once_with_the_bytes_in_place() {
        let Some(mut ring) = ring_or_skip() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let os = OsStorage::new();
        let f: Arc<dyn FileHandle> = Arc::from(
            os.open(&dir.path().join("seg"), OpenOptions::CREATE)
                .unwrap(),
        );
        let a = Arc::new(vec![b'a'; 5000]);
        let b = Arc::new(vec![b'b'; 3000]);
        for round in 0..20u64 {
            let base = round * 8000;
            ring.submit(
                round,
                vec![
                    write(&f, &a, base),
                    write(&f, &b, base + 5000),
                    RingOp::SyncData { file: f.clone() },
                ],
            )
            .unwrap();
            let done = ring.complete(true).unwrap().expect("one chain in flight");
            assert_eq!((done.tag, done.succeeded), (round, 3));
            done.result.unwrap();
            assert_eq!(ring.in_flight(), 0);
        }
        assert!(ring.complete(true).unwrap().is_none(), "nothing left");
        let mut back = vec![0u8; 8000 * 20];
        f.read_exact_at(&mut back, 0).unwrap();
        for chunk in back.chunks(8000) {
            assert!(chunk[..5000].iter().all(|&x| x == b'a'));
            assert!(chunk[5000..].iter().all(|&x| x == b'b'));
        }
    }

    #[test]
    fn a_failed_write_cancels_the_rest_of_its_chain_and_names_the_file() {
        let Some(mut ring) = ring_or_skip() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let os = OsStorage::new();
        let path = dir.path().join("ro");
        os.open(&path, OpenOptions::CREATE).unwrap();
        // A read-only descriptor: the kernel refuses the write (EBADF).
        let f: Arc<dyn FileHandle> = Arc::from(os.open(&path, OpenOptions::READ_ONLY).unwrap());
        let data = Arc::new(b"refused".to_vec());
        ring.submit(
            9,
            vec![write(&f, &data, 0), RingOp::SyncData { file: f.clone() }],
        )
        .unwrap();
        let done = ring.complete(true).unwrap().unwrap();
        assert_eq!((done.tag, done.succeeded), (9, 0));
        let e = done.result.unwrap_err();
        assert_eq!(crate::raw_os_error(&e), Some(libc::EBADF), "{e}");
        assert!(e.to_string().contains("ro"), "{e}");
        assert_eq!(f.len().unwrap(), 0);
        // The ring goes on after a failed chain.
        let g: Arc<dyn FileHandle> = Arc::from(
            os.open(&dir.path().join("ok"), OpenOptions::CREATE)
                .unwrap(),
        );
        ring.submit(10, vec![write(&g, &data, 0)]).unwrap();
        ring.complete(true).unwrap().unwrap().result.unwrap();
        assert_eq!(g.len().unwrap(), 7);
    }

    #[test]
    fn a_reap_that_does_not_wait_never_blocks_and_chains_come_back_by_tag() {
        let Some(mut ring) = ring_or_skip() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let os = OsStorage::new();
        let f: Arc<dyn FileHandle> =
            Arc::from(os.open(&dir.path().join("f"), OpenOptions::CREATE).unwrap());
        let data = Arc::new(vec![7u8; 4096]);
        for tag in 0..4u64 {
            ring.submit(
                tag,
                vec![
                    write(&f, &data, tag * 4096),
                    RingOp::SyncData { file: f.clone() },
                ],
            )
            .unwrap();
        }
        let mut tags = Vec::new();
        while ring.in_flight() > 0 {
            if let Some(d) = ring.complete(false).unwrap() {
                d.result.unwrap();
                tags.push(d.tag);
            } else if let Some(d) = ring.complete(true).unwrap() {
                d.result.unwrap();
                tags.push(d.tag);
            }
        }
        tags.sort_unstable();
        assert_eq!(tags, vec![0, 1, 2, 3]);
    }

    /// io_uring cancels what a thread submitted when the thread exits (a committer that
    /// submitted a round, then ended): the chain is submitted again by the thread that
    /// reaps it, and completes, its bytes durable in place.
    #[test]
    fn a_chain_whose_submitter_exited_still_completes() {
        let Ok(ring) = UringRing::new() else {
            eprintln!("io_uring refused on this machine, nothing to test");
            return;
        };
        let ring = std::sync::Arc::new(parking_lot::Mutex::new(ring));
        let dir = tempfile::tempdir().unwrap();
        let os = OsStorage::new();
        let f: Arc<dyn FileHandle> = Arc::from(
            os.open(&dir.path().join("seg"), OpenOptions::CREATE)
                .unwrap(),
        );
        // Three chains per thread: the file's later syncs queue behind the first in the
        // kernel's worker, and queued work is what an exiting thread's cancellation hits.
        for round in 0..20u64 {
            let (r, f2) = (ring.clone(), f.clone());
            std::thread::spawn(move || {
                let mut r = r.lock();
                for k in 0..3 {
                    let block = round * 3 + k;
                    let data = Arc::new(vec![block as u8 + 1; 4096]);
                    r.submit(
                        block,
                        vec![
                            write(&f2, &data, block * 4096),
                            RingOp::SyncData { file: f2.clone() },
                        ],
                    )
                    .unwrap();
                }
            })
            .join()
            .unwrap();
            let mut tags = Vec::new();
            for _ in 0..3 {
                let done = ring.lock().complete(true).unwrap().expect("in flight");
                done.result.unwrap();
                tags.push(done.tag);
            }
            tags.sort_unstable();
            assert_eq!(tags, (round * 3..round * 3 + 3).collect::<Vec<_>>());
        }
        let mut back = vec![0u8; 60 * 4096];
        f.read_exact_at(&mut back, 0).unwrap();
        for (i, block) in back.chunks(4096).enumerate() {
            assert!(block.iter().all(|&b| b == i as u8 + 1), "block {i}");
        }
        eprintln!(
            "{} of 60 chains were cancelled and submitted again",
            ring.lock().resubmits
        );
    }

    #[test]
    fn a_handle_without_a_descriptor_is_refused_before_anything_is_submitted() {
        let Some(mut ring) = ring_or_skip() else {
            return;
        };
        let sim = crate::SimStorage::new(1);
        sim.create_dir_all(std::path::Path::new("/d")).unwrap();
        let f: Arc<dyn FileHandle> = Arc::from(
            sim.open(std::path::Path::new("/d/x"), OpenOptions::CREATE)
                .unwrap(),
        );
        let e = ring
            .submit(1, vec![RingOp::SyncData { file: f }])
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
        assert_eq!(ring.in_flight(), 0);
    }
}
