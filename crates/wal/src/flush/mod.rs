//! The flush side of the log: a round's steps, written once (`steps.rs`); the two paths
//! that run them — the committing threads through an io_uring (`ring.rs`), or one
//! daemon thread (`daemon.rs`, also the ring path's backstop); the group-commit
//! decision of when a round starts (`due.rs`), and the tuner of how long the daemon's
//! round waits for the last round's committers (`gather.rs`).

mod daemon;
mod due;
mod gather;
mod ring;
mod steps;

pub(crate) use daemon::FlushDaemon;
pub(crate) use ring::{Drive, RingDriver};
