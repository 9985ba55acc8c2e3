//! `hybrid` (CD): Aether §5.3. The consolidation array bounds contention for the
//! reservation lock by the number of slots; the lock covers only the reservation, so the
//! copies of successive groups overlap (decoupled fill); each group's last member releases
//! it in LSN order, waiting for its turn like `decoupled`.

use super::carray::{Consolidating, GroupRelease};
use super::BufferCore;
use crate::error::Result;
use crate::Lsn;

/// Releases a group (or a solo insert) in LSN order.
pub(crate) struct InOrderRelease;

impl GroupRelease for InOrderRelease {
    const SERIAL: bool = false;
    fn release(&self, core: &BufferCore, start: Lsn, end: Lsn) -> Result<()> {
        core.release_in_order(start, end)
    }
}

pub(crate) fn new(core: &BufferCore, start: Lsn, slots: usize) -> Consolidating<InOrderRelease> {
    Consolidating::new(core, start, slots, InOrderRelease)
}
