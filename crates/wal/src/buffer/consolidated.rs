//! `consolidated` (C): Aether Algorithms 2 and 5. Threads that find the reservation lock
//! busy combine their requests in the consolidation array (`carray`); one leader per group
//! reserves for all, the members copy in parallel, and the last to finish releases the
//! group. Groups are serial: in the paper the leader holds the lock from reservation until
//! its group's release, so copies of different groups never overlap. Here the lock is
//! dropped after reservation but the next reservation first waits until the previous one
//! is released, which serialises the groups in the same way while letting arrivals keep
//! joining the waiting leader's slot.

use super::carray::{Consolidating, GroupRelease};
use super::BufferCore;
use crate::error::Result;
use crate::Lsn;

/// Releases a group directly: in serial mode nothing else is in flight, so the release
/// turn is already ours.
pub(crate) struct SerialRelease;

impl GroupRelease for SerialRelease {
    const SERIAL: bool = true;
    fn release(&self, core: &BufferCore, start: Lsn, end: Lsn) -> Result<()> {
        // `publish_released` asserts that `released` is exactly at `start`.
        core.publish_released(start, end);
        Ok(())
    }
}

pub(crate) fn new(core: &BufferCore, start: Lsn, slots: usize) -> Consolidating<SerialRelease> {
    Consolidating::new(core, start, slots, SerialRelease)
}
