//! The flush side of the log: one daemon thread that moves released bytes to disk
//! (`daemon.rs`), the group-commit decision of when it starts a round (`due.rs`), and
//! the tuner of how long a round waits for the last round's committers (`gather.rs`).

mod daemon;
mod due;
mod gather;

pub(crate) use daemon::FlushDaemon;
