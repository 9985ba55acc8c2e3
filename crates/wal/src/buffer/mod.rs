//! The log buffer: a ring of bytes with four positions, and pluggable insertion.
//!
//! ```text
//!   durable ≤ written ≤ released ≤ reserved          (all LSNs, each monotone)
//!   [.. durable)            on disk and synced
//!   [durable, written)      copied out by the flush side, being written/synced
//!   [written, released)     filled, waiting for the flush side
//!   [released, reserved)    owned by inserting threads, being filled
//! ```
//! An inserter may reserve up to `written + capacity`; beyond that it waits for the flush
//! side (a record larger than the free space waits, it is not refused). Frames never cross
//! a segment end: a reservation that would is preceded by a padding frame up to the
//! boundary (see [`crate::frame`]).
//!
//! Each insertion algorithm (Aether §5, appendix A) is a module implementing
//! [`InsertAlgorithm`] on top of the shared [`BufferCore`]:
//!
//! * `mutex` — one lock around everything (Algorithm 1);
//! * `consolidated`, `hybrid`, `delegated` — the consolidation array (`carray`, Algorithms
//!   2 and 5) with serial groups, with in-order release (`turns`), and with the delegated
//!   release queue (`queue`, Algorithm 4);
//! * `decoupled` — the lock covers only reservation; release in LSN order (Algorithm 3);
//! * `atomic` — reservation by one fetch-add, release through the delegation queue.
//!
//! Files: `variant` (the [`InsertVariant`] enum), `options` ([`BufferOptions`]),
//! `buffer_core` (the ring and positions every algorithm shares, [`BufferCore`]), `parked`
//! (the threads parked for their release turn, for `turns`), `flush_signal` (how the
//! buffer wakes its flush side), `log_buffer` ([`LogBuffer`]), and one file per algorithm.

mod atomic;
mod buffer_core;
mod carray;
mod consolidated;
mod decoupled;
mod delegated;
mod flush_signal;
mod hybrid;
mod log_buffer;
mod mutex;
mod options;
mod parked;
mod queue;
mod ring;
mod turns;
mod variant;

pub(crate) use buffer_core::{BufferCore, InsertAlgorithm, Placement, Record};
pub use log_buffer::LogBuffer;
pub use options::BufferOptions;
pub use variant::InsertVariant;
