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
        let mut reserved = self.reserved.lock();
        let at = *reserved;
        let (pad, end) = core.place(at, rec.frame_len);
        core.wait_for_space(end)?;
        let lsn = match pad {
            Some(p) => {
                // SAFETY: we hold the lock, so `[at, end)` is ours alone, and the space was
                // waited for above.
                unsafe { core.fill_padding(at, p) };
                at.add(p)
            }
            None => at,
        };
        // SAFETY: as above.
        unsafe { core.fill_record(lsn, rec) };
        *reserved = end;
        core.publish_released(end);
        Ok(lsn)
    }
}
