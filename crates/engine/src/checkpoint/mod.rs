//! Checkpoints: what one writes and in which order (`fuzzy`, the five steps and the
//! torn-page argument), and when one is taken (`checkpointer`: the triggers, the
//! background thread, and the entry points every checkpoint goes through, which poison
//! the database when one fails).

mod checkpointer;
mod fuzzy;

pub(crate) use checkpointer::{Checkpointer, Checkpointing};
pub(crate) use fuzzy::{Checkpoints, Scope};
