//! `mutex`: Aether Algorithm 1, the baseline. One lock covers reservation, the copy into
//! the ring, and the release, so releases are trivially in LSN order — and every insert
//! serialises behind every other one's copy.

use super::{BufferCore, InsertAlgorithm, Record};
use crate::error::Result;
use crate::sync::Mutex;
use crate::Lsn;

pub(crate) struct MutexInsert {
    /// The next free LSN (the reserved position), guarded by the one lock.
    reserved: Mutex<Lsn>,
}

impl MutexInsert {
    pub(crate) fn new(start: Lsn) -> Self {
        MutexInsert {
            reserved: Mutex::new(start),
        }
    }
}

impl InsertAlgorithm for MutexInsert {
    fn insert(&self, core: &BufferCore, rec: &Record<'_>) -> Result<Lsn> {
        let mut reserved = crate::insert_wait::lock(&self.reserved);
        let p = core.place(*reserved, rec.frame_len);
        // SAFETY: we hold the lock with the reserved position at `p.start`, so `[p.start,
        // p.end)` is ours alone; `prepare` waits for its space before we fill it.
        unsafe {
            core.prepare(p)?;
            core.fill_record(p.base, rec);
        }
        *reserved = p.end;
        core.publish_released(p.start, p.end);
        Ok(p.base)
    }

    fn wake_all(&self) {
        // Nothing parks in this algorithm's own structures: lock waiters queue behind a
        // holder whose waits the core's `stop` ends.
    }
}
