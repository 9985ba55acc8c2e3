//! What a pinned page and the page-write protocol need of the pool: its frames, the data
//! file and the log, the image floor and the write gate, and the pool's health. The
//! pool ([`BufferPool`](super::BufferPool)) is this plus its page table and counters;
//! [`PageRef`](super::PageRef) and [`Landing`](super::write_protocol::Landing) hold a reference
//! to this part only, so they sit below the pool that makes them.

use super::data_file::DataFile;
use super::frame::Frame;
use crate::error::{Error, Result};
use crate::health::Health;
use crate::log_sink::LogSink;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

pub(crate) struct PoolCore {
    pub(crate) frames: Box<[Frame]>,
    pub(super) file: DataFile,
    pub(super) log: Arc<LogSink>,
    /// The image floor F: a page is written only if its last full image is above F
    /// (otherwise one is logged first). F is the redo point of the last checkpoint whose
    /// data-file sync covers every write made before F was raised; only rises.
    pub(super) image_floor: AtomicU64,
    /// Restart recovery's redo pass is running (`set_redo`).
    pub(super) redo: AtomicBool,
    /// Held shared by every page write from reading the floor to the end of its
    /// `write_at`; exclusively by a checkpoint while it moves its redo point and the
    /// floor, so that no write straddles either move. Nobody waits for a latch while
    /// holding it, in either mode.
    pub(super) write_gate: RwLock<()>,
    /// Set, under the write gate held exclusively, when the database closes: no page is
    /// written from then on (`BufferPool::close`).
    pub(super) closed: AtomicBool,
    /// The first data-file write or sync failure (`fail`).
    pub(super) health: Health,
}

impl PoolCore {
    pub(super) fn new(frames: Box<[Frame]>, file: DataFile, log: Arc<LogSink>, floor: u64) -> Self {
        PoolCore {
            frames,
            file,
            log,
            image_floor: AtomicU64::new(floor),
            redo: AtomicBool::new(false),
            write_gate: RwLock::new(()),
            closed: AtomicBool::new(false),
            health: Health::default(),
        }
    }

    /// Records the data file's failure `e`: after it the pool refuses to write.
    pub(super) fn fail(&self, e: Error) -> Error {
        self.health.poison(format_args!("data file: {e}"));
        e
    }

    pub(super) fn check(&self) -> Result<()> {
        self.health.check()
    }

    /// The data file's path (for messages).
    pub(crate) fn data_path(&self) -> &std::path::Path {
        self.file.path()
    }
}
