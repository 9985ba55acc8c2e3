//! Making a simulated crash kill the "process".
//!
//! After [`SimStorage::crash`] the simulated disk is rebooted and usable, and handles
//! opened before the crash fail. But a database instance that was running at the crash
//! could still open *new* files (a log segment, a control file), rename or remove them on
//! the rebooted disk — as if the dead process kept running. A crash test gives each
//! incarnation its own view: once the disk has crashed after the incarnation began, every
//! operation through it fails with EIO, like a process that died with the power.
//!
//! The check is [`SimStorage::pinned`]'s, made under the disk's lock atomically with the
//! crash. (An earlier wrapper checked before calling into the disk; an operation that
//! passed the check just before another thread's crash still landed on the rebooted
//! disk — the crash sweep found a segment removed from the middle of a log that way.)

use sluice_storage::{SimStorage, Storage};
use std::sync::Arc;

/// Views of a [`SimStorage`] that die with the first crash after they were made.
pub struct FencedStorage;

impl FencedStorage {
    /// A view of `sim` for one incarnation of a database.
    pub fn for_incarnation(sim: &SimStorage) -> Arc<dyn Storage> {
        Arc::new(sim.pinned())
    }
}
