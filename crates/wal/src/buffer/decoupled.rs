//! `decoupled` (D): Aether Algorithm 3. The lock covers only the reservation (advancing
//! the reserved position, a few instructions); the copy runs outside it, in parallel with
//! other threads' copies; the release happens in LSN order — each thread waits until
//! `released` reaches its start, then publishes its end (`BufferCore::release_in_order`,
//! which also lets a parked thread's predecessor publish for it).
//!
//! The critical section no longer grows with the record size, but a large or descheduled
//! predecessor still holds up every release behind it.

use super::{BufferCore, InsertAlgorithm, Record};
use crate::error::Result;
use crate::sync::Mutex;
use crate::Lsn;

pub(crate) struct DecoupledInsert {
    /// The reserved position, guarded by the reservation lock.
    reserved: Mutex<Lsn>,
}

impl DecoupledInsert {
    pub(crate) fn new(start: Lsn) -> Self {
        DecoupledInsert {
            reserved: Mutex::new(start),
        }
    }
}

impl InsertAlgorithm for DecoupledInsert {
    fn insert(&self, core: &BufferCore, rec: &Record<'_>) -> Result<Lsn> {
        let p = {
            let mut reserved = crate::insert_wait::lock(&self.reserved);
            let p = core.place(*reserved, rec.frame_len);
            *reserved = p.end;
            p
        };
        // SAFETY: we advanced the reserved position past `p.end` under the lock, so the
        // range is ours until we release it; `prepare` waits for its space first.
        unsafe {
            core.prepare(p)?;
            core.fill_record(p.base, rec);
        }
        core.release_in_order(p.start, p.end)?;
        Ok(p.base)
    }

    fn wake_all(&self) {
        // Nothing parks in this algorithm's own structures: lock waiters queue behind a
        // holder whose waits the core's `stop` ends.
    }
}
