//! The segment preparer: a background thread that creates (zero-fills, syncs, renames)
//! the next segment while the flush daemon is still filling the current one, so a
//! rollover costs the daemon an `open`, not the write of a whole segment.

use crate::error::Result;
use crate::log::Shared;
use crate::segment;
use crate::sync::{Condvar, Mutex};
use crate::Lsn;
use sluice_storage::FileHandle;
use std::sync::Arc;

#[derive(Default)]
struct State {
    /// The segment to prepare next.
    want: Option<Lsn>,
    /// The segment being prepared now.
    busy: Option<Lsn>,
    stop: bool,
}

/// The preparer's queue (one segment ahead is enough: a segment takes far longer to fill
/// than to zero).
#[derive(Default)]
pub(crate) struct Preparer {
    state: Mutex<State>,
    cv: Condvar,
}

impl Preparer {
    /// Asks for `start` to be prepared (if it does not exist yet).
    pub(crate) fn request(&self, start: Lsn) {
        let mut s = self.state.lock();
        if s.busy != Some(start) {
            s.want = Some(start);
            drop(s);
            self.cv.notify_all();
        }
    }

    /// Stops the thread after the segment in progress.
    pub(crate) fn stop(&self) {
        self.state.lock().stop = true;
        self.cv.notify_all();
    }

    /// The segment file for `start`: prepared (waiting for the preparer if it is on it
    /// right now) or created here.
    pub(crate) fn obtain(&self, shared: &Shared, start: Lsn) -> Result<Box<dyn FileHandle>> {
        {
            let mut s = self.state.lock();
            while s.busy == Some(start) {
                s = self.cv.wait(s);
            }
            if s.want == Some(start) {
                s.want = None; // the daemon makes it itself
            }
        }
        if shared.existing_segment(start) {
            return segment::open(&*shared.storage, &shared.dir, start);
        }
        let f = segment::create(&*shared.storage, &shared.dir, start, shared.segment_bytes)?;
        shared.note_segment(start);
        Ok(f)
    }

    /// The thread's body.
    pub(crate) fn run(shared: Arc<Shared>) {
        let p = &shared.preparer;
        loop {
            let start = {
                let mut s = p.state.lock();
                loop {
                    if s.stop {
                        return;
                    }
                    if let Some(w) = s.want.take() {
                        s.busy = Some(w);
                        break w;
                    }
                    s = p.cv.wait(s);
                }
            };
            let r: Result<()> = if shared.existing_segment(start) || shared.is_poisoned() {
                Ok(())
            } else {
                segment::create(&*shared.storage, &shared.dir, start, shared.segment_bytes)
                    .map(|_| shared.note_segment(start))
            };
            // A failed write or sync poisons the log like any other: after a failed fsync
            // the kernel may have dropped the dirty pages (the header, say), so a later
            // "successful" sync would not mean the segment is whole.
            if let Err(e) = r {
                shared.poison(e);
            }
            p.state.lock().busy = None;
            p.cv.notify_all();
        }
    }
}
