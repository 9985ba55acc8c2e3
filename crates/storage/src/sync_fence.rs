//! The one rule for a file that several threads sync: **after the first failed sync, no
//! later one counts.**
//!
//! A failed fsync drops the pages it could not write from write-back (Linux marks them
//! clean; [`FileHandle::sync_data`]), *whoever wrote them*: one thread's failed sync can
//! take another thread's writes with it, and that thread's next sync, with nothing left
//! to write, succeeds (fsyncgate; kernels before 4.13 reported the error to one
//! descriptor only). Two places in sluice sync files that another thread writes or syncs
//! too:
//! - the data file: the page cleaner, the log cleaner, eviction and the checkpoint;
//! - a log segment: the flush daemon syncs the records it wrote, the segment preparer
//!   syncs the zeros it extends the same file with.
//!
//! Both sync through a [`SyncFence`]. It serialises the syncs of one file (a stripe per
//! file, so that files do not wait for each other) and records a failure *before* the
//! stripe is released, so no sync that starts after a failure, or waits on one in
//! progress, can report success. From then on every sync through the fence fails with
//! the first failure's kind and message, without asking the device: the owner (the log,
//! the buffer pool) is poisoned for good either way.

use crate::FileHandle;
use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

/// See the module docs.
pub struct SyncFence {
    /// One lock per stripe of files; a file's key picks its stripe.
    stripes: Box<[Mutex<()>]>,
    failed: AtomicBool,
    /// The first failure: its kind and message.
    failure: Mutex<Option<(io::ErrorKind, String)>>,
}

impl SyncFence {
    /// A fence over files spread on `stripes` locks (at least one).
    pub fn new(stripes: usize) -> SyncFence {
        SyncFence {
            stripes: (0..stripes.max(1)).map(|_| Mutex::new(())).collect(),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    /// Syncs `file`, whose key is `key` (the same file must always use the same key;
    /// different files may share one): fails without syncing once any sync through this
    /// fence has failed. A sync of the same key in progress finishes first.
    pub fn sync(&self, key: u64, file: &dyn FileHandle) -> io::Result<()> {
        let _stripe = self.stripes[(key % self.stripes.len() as u64) as usize].lock();
        if let Some(e) = self.failure() {
            return Err(e);
        }
        file.sync_data().inspect_err(|e| self.record(e))
    }

    /// Settles a sync of the file keyed `key` that ran outside the fence (submitted to an
    /// [`IoRing`](crate::IoRing)) and returned `result`: it counts only if it succeeded
    /// and no sync through the fence had failed by now — taken under the file's stripe,
    /// so a failing sync of the same file in progress finishes (and is recorded) first.
    /// A failure is recorded as [`SyncFence::sync`]'s are. (The kernel reports a
    /// write-back error to every descriptor's next sync, so a ring sync that overlapped
    /// another's failure fails itself; the fence keeps the rule for the simulator and
    /// for the order in which the two are seen.)
    pub fn confirm(&self, key: u64, result: io::Result<()>) -> io::Result<()> {
        let _stripe = self.stripes[(key % self.stripes.len() as u64) as usize].lock();
        if let Some(e) = self.failure() {
            return Err(e);
        }
        result.inspect_err(|e| self.record(e))
    }

    fn record(&self, e: &io::Error) {
        let mut first = self.failure.lock();
        if first.is_none() {
            *first = Some((e.kind(), e.to_string()));
        }
        self.failed.store(true, Ordering::Release);
    }

    /// The error every sync returns from now on, if one has failed.
    pub fn failure(&self) -> Option<io::Error> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        let first = self.failure.lock();
        let (kind, what) = first.as_ref()?;
        Some(io::Error::new(
            *kind,
            format!("an earlier sync failed ({what}); no later one can be trusted"),
        ))
    }
}

impl Default for SyncFence {
    fn default() -> SyncFence {
        SyncFence::new(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FaultKind, FaultOp, FaultPlan, OpenOptions, SimStorage, Storage};
    use std::path::Path;
    use std::sync::{Arc, Barrier};
    use std::thread;

    fn file(sim: &SimStorage, path: &str) -> Box<dyn FileHandle> {
        sim.open(Path::new(path), OpenOptions::CREATE).unwrap()
    }

    /// The segment's story: the preparer's sync fails and drops the daemon's write; the
    /// daemon's sync through another handle, with nothing left to write, must not succeed.
    #[test]
    fn a_sync_after_another_handles_failed_sync_fails_without_the_device() {
        let sim = SimStorage::new(1);
        sim.create_dir_all(Path::new("/d")).unwrap();
        let (daemon, preparer) = (file(&sim, "/d/seg"), file(&sim, "/d/seg"));
        let fence = SyncFence::new(8);
        daemon.write_at(b"a commit record", 0).unwrap();
        sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio).on("/d/seg"));
        assert!(fence.sync(3, &*preparer).is_err(), "the injected failure");
        sim.clear_faults();
        let syncs = sim.stats().syncs;
        let e = fence.sync(3, &*daemon).unwrap_err();
        assert!(e.to_string().contains("an earlier sync failed"), "{e}");
        assert_eq!(sim.stats().syncs, syncs, "the device was not asked");
        // Another file, another stripe: the fence is failed all the same.
        assert!(fence.sync(4, &*file(&sim, "/d/other")).is_err());
        assert!(fence.failure().is_some());
    }

    /// A file whose sync blocks until released, then fails.
    struct SlowFailing(Arc<Barrier>);
    impl FileHandle for SlowFailing {
        fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<usize> {
            Ok(0)
        }
        fn write_at(&self, _: &[u8], _: u64) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&self) -> io::Result<()> {
            self.0.wait();
            Err(io::Error::other("EIO"))
        }
        fn set_len(&self, _: u64) -> io::Result<()> {
            Ok(())
        }
        fn allocate(&self, _: u64) -> io::Result<()> {
            Ok(())
        }
        fn len(&self) -> io::Result<u64> {
            Ok(0)
        }
        fn drop_cache(&self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The race the sweep found: a sync that starts while a failing one of the same file
    /// is in progress waits for it, and fails too.
    #[test]
    fn a_sync_during_a_failing_sync_of_the_same_file_fails_too() {
        let sim = SimStorage::new(2);
        sim.create_dir_all(Path::new("/d")).unwrap();
        let healthy = file(&sim, "/d/seg");
        let fence = Arc::new(SyncFence::new(4));
        let release = Arc::new(Barrier::new(2));
        let slow = SlowFailing(release.clone());
        thread::scope(|s| {
            let first = s.spawn(|| fence.sync(7, &slow));
            // Wait until the failing sync holds its stripe.
            while !fence.stripes[3].is_locked() {
                thread::yield_now();
            }
            let second = s.spawn(|| fence.sync(7, &*healthy));
            thread::sleep(std::time::Duration::from_millis(20));
            assert!(!second.is_finished(), "the second sync waits for the first");
            release.wait();
            assert!(first.join().unwrap().is_err());
            assert!(second.join().unwrap().is_err(), "it must not count");
        });
    }

    #[test]
    fn other_stripes_do_not_wait_and_success_stays_success() {
        let sim = SimStorage::new(3);
        sim.create_dir_all(Path::new("/d")).unwrap();
        let f = file(&sim, "/d/a");
        let fence = SyncFence::new(2);
        let _held = fence.stripes[0].lock();
        f.write_at(b"x", 0).unwrap();
        fence.sync(1, &*f).unwrap();
        assert!(fence.failure().is_none());
    }

    /// A ring's sync (settled by `confirm`) obeys the same rule as one through the fence:
    /// after another sync's failure it does not count, whatever the device said; and its
    /// own failure fails every later sync.
    #[test]
    fn a_ring_sync_settled_after_a_failure_does_not_count_and_its_failure_is_recorded() {
        let sim = SimStorage::new(2);
        sim.create_dir_all(Path::new("/d")).unwrap();
        let preparer = file(&sim, "/d/seg");
        let fence = SyncFence::new(4);
        fence.confirm(1, Ok(())).unwrap();
        sim.inject(FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio).on("/d/seg"));
        assert!(fence.sync(1, &*preparer).is_err());
        let e = fence.confirm(1, Ok(())).unwrap_err();
        assert!(e.to_string().contains("an earlier sync failed"), "{e}");

        let fence = SyncFence::new(4);
        let e = fence
            .confirm(2, Err(io::Error::from_raw_os_error(5)))
            .unwrap_err();
        assert_eq!(crate::raw_os_error(&e), Some(5));
        sim.clear_faults();
        let later = fence.sync(2, &*preparer).unwrap_err();
        assert!(
            later.to_string().contains("an earlier sync failed"),
            "{later}"
        );
    }
}
