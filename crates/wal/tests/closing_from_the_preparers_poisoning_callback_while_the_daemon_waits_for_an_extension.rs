//! Postmortem (outside review of the sync fence): the failing-sync path of the segment
//! preparer deadlocked `Log::close`. Fixed: `Shared::poison` wakes the preparer's waiters
//! (`Preparer::wake`) before it runs the callbacks.
//!
//! `a_callback_that_drops_the_log_on_the_preparer_thread.rs` fixed a close run from a
//! durable callback on the preparer's thread (poisoning runs the callbacks there), but
//! staged it with the preparer failing a segment *created ahead*, while the flush daemon
//! did not need it. Here the daemon needs the preparer: it has written the current
//! segment up to its published extent and parks on the preparer's condition variable
//! (`Preparer::reserve` -> `Preparer::wait`) for the extension the preparer is syncing.
//! That sync fails (through the log's `SyncFence`); the preparer poisons the log, and
//! `Shared::poison` runs the durable callbacks on the preparer's thread *before*
//! `Preparer::run` notifies the condition variable. A callback that drops the last owner
//! of the log runs `Log::close`, which joins the flush daemon — parked on a condition
//! variable that only the preparer (now inside `close`) would notify. Nothing wakes
//! anyone: the callback never returns, `close` never returns, and the daemon and the
//! preparer threads hang for good (the directory lock is never released either).
//!
//! The staging uses the technique of `a_failed_extension_sync_fails_the_daemons_next_sync`:
//! a storage wrapper that, by thread name, holds the preparer's extension sync of a
//! segment until the test lets it fail. The short sleep only gives the daemon time to
//! park; if it had not parked yet, the test would pass (never a false failure).

use crate::common;

use common::*;
use parking_lot::{Condvar, Mutex};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, FileHandle, FileLayer, FileOp, Storage};
use sluice_wal::Log;
use std::io;
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct Gate {
    /// The preparer is holding an extension sync at the gate.
    held: bool,
    /// The test lets the held sync go on (and fail).
    release: bool,
    /// The staged failure happened (once only).
    done: bool,
}

impl FileLayer for StagedFile<(Mutex<Gate>, Condvar)> {
    fn below(&self) -> &dyn FileHandle {
        &*self.inner
    }
    fn around<T>(&self, op: FileOp, call: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let preparer = std::thread::current().name() == Some("sluice-prepare");
        // The preparer syncs a segment under its final name only to extend it (a new
        // segment is synced as `.tmp`, a recycled one under its free name).
        if op == FileOp::Sync && preparer && is_segment(&self.path) {
            let (m, cv) = &*self.staged.stage;
            let mut g = m.lock();
            if !g.done {
                g.held = true;
                cv.notify_all();
                while !g.release {
                    cv.wait(&mut g);
                }
                g.done = true;
                drop(g);
                self.staged.sim.inject(
                    FaultPlan::new(FaultOp::Sync, 1, FaultKind::Eio)
                        .on(self.path.to_str().unwrap()),
                );
                let r = call();
                self.staged.sim.clear_faults();
                assert!(r.is_err(), "the injected failure");
                return r;
            }
        }
        call()
    }
}

#[test]
fn closing_from_the_preparers_poisoning_callback_while_the_daemon_waits_for_an_extension() {
    let (sim, _) = sim(5);
    let staged: Staged<(Mutex<Gate>, Condvar)> = Staged {
        sim,
        stage: Arc::default(),
    };
    let storage: Arc<dyn Storage> = Arc::new(staged.clone());
    // 8 KiB segments start with a 2 KiB extent; the daemon asks for 4 KiB once it
    // writes past 1 KiB, and cannot write past 2 KiB before that extension is synced.
    let opts = small_options();
    let log = Arc::new(Log::open(storage, DIR, opts).unwrap());
    let done_rx = last_owner_in_a_callback(&log);
    // About 3 KiB of records: past the 2 KiB extent, within the 4 KiB ring.
    let record = [7u8; 480];
    for _ in 0..6 {
        log.append(&record).unwrap();
    }
    // The preparer holds its extension sync; give the daemon time to run into the
    // extent and park on the preparer's condition variable.
    {
        let (m, cv) = &*staged.stage;
        let mut g = m.lock();
        while !g.held {
            cv.wait(&mut g);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    drop(log);
    {
        let (m, cv) = &*staged.stage;
        m.lock().release = true;
        cv.notify_all();
    }
    let answered = done_rx.recv_timeout(Duration::from_secs(20));
    assert!(
        answered.is_ok(),
        "deadlock: the preparer's failed extension sync poisoned the log and ran the \
         callback on the preparer's thread; the callback dropped the last owner, and \
         Log::close joined the flush daemon, which is parked in Preparer::reserve on the \
         condition variable only the preparer (now blocked in that close) notifies"
    );
    assert!(
        answered.unwrap(),
        "the callback is answered with the poison"
    );
}
