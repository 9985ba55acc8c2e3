//! The storage manager's log records: what they say and their byte encoding.
//!
//! The log itself treats payloads as opaque; this module gives them meaning. Page
//! changes are physiological: *redo* names a page and an operation on a key inside it
//! (so redo needs no tree traversal), *undo* names the tree and the key (so undo works
//! wherever the key lives by then, after any splits). Structure changes and full page
//! images are redo-only. Decoding never panics: any byte string decodes to a record or
//! to an error.
//!
//! An update of an inline value logs only the bytes that changed ([`Delta`]) when that is
//! smaller than the whole old and new values, and so does the compensation record that
//! undoes it. A transaction's records (update, compensation, commit, end) write their
//! numbers as LEB128 varints (tags 8–11); the fixed-width forms they replaced (tags 1–4,
//! format version 2 of the database, see `control.rs`) still decode, so a log written
//! before the change recovers, and is never written again. Commit records carry a time
//! since issue 26 (tags 15 and 16, and an end-checkpoint record carries the commit clock,
//! tag 17); the forms without one (tags 10, 12, 7) are still written for a record whose
//! time is unknown and decode with [`CommitTime::UNKNOWN`].
//!
//! One concept a file:
//! * `record.rs`: the records ([`Record`]) and what checkpoints and coordinated commits
//!   carry;
//! * `time.rs`: the time a commit record carries ([`CommitTime`]), the per-log clock that
//!   stamps it, and the running maximum a reader takes along the log;
//! * `change.rs`: a transaction's change to a key ([`Change`]), the leaf operation that
//!   redoes it ([`PageOp`]), and when a [`Delta`] (`delta.rs`) is logged instead of the
//!   whole values;
//! * `limits.rs`: the largest record the engine writes, which its options are checked
//!   against;
//! * `wire.rs`: the byte fields (fixed-width numbers, varints, byte strings);
//! * `codec.rs`: the encoder, and the one decoder of both format versions;
//! * `legacy.rs`: the fields of format version 2 that differ, for that decoder.

mod change;
mod codec;
mod delta;
pub(crate) mod fuzz;
mod legacy;
mod limits;
mod record;
#[cfg(test)]
mod samples;
#[cfg(test)]
pub(crate) mod tests_prop;
mod time;
mod wire;

pub(crate) use change::Undo;
pub use change::{Change, PageOp};
pub(crate) use codec::commit_of;
pub use delta::Delta;
pub(crate) use limits::max_record_bytes;
pub use limits::MAX_PARTICIPANTS;
pub use record::{ActiveTxn, CheckpointData, Participant, Record};
pub(crate) use time::CommitClock;
pub use time::CommitTime;
// Point-in-time restore (`db/restore.rs`) reads commit times along a log.
#[allow(unused_imports)] // effective_times: the tests' form of EffectiveTimes
pub(crate) use time::{effective_times, EffectiveTimes};
