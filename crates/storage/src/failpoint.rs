//! Named failure points: the steps between two storage operations that a fault at the
//! n-th operation reaches only by chance (as raft-engine's and TiKV's failpoints).
//!
//! A halt or an error injected at a counted operation ([`crate::SimStorage::crash_at_op`],
//! [`crate::FaultPlan`]) lands *on* an operation. Some states exist only *between* two of
//! them — a segment renamed but its directory not yet synced, a data page written but not
//! synced, a checkpoint whose end record is durable but whose control file is not
//! written — and a test that must reach one of them names it instead. The code calls
//! [`Storage::failpoint`](crate::Storage::failpoint) (or
//! [`FileHandle::failpoint`](crate::FileHandle::failpoint)) with the point's name at that
//! step; every backend but the simulator does nothing there (the default method: one
//! virtual call that returns `Ok`, next to a disk operation). [`crate::SimStorage`] keeps
//! the points armed on *its* disk ([`crate::SimStorage::set_failpoint`]), so tests running
//! in parallel, each with its own disk, never see each other's points; when none is
//! armed, a call is one atomic load.
//!
//! Each name below says where the point is. [`ALL`] lists them, for sweeps.

/// What an armed point does: the simulated disk's, beside its other faults.
pub use crate::sim::FailAction;

/// `crates/wal`, segment creation and recycling: a new or recycled segment has been
/// renamed to its final name, and its directory is not synced yet.
pub const SEGMENT_RENAMED: &str = "wal.segment.renamed";
/// `crates/wal`, truncation: finished segments have been renamed to their `.free` names
/// (retired, to be recycled), and the directory is not synced yet.
pub const SEGMENT_RETIRED: &str = "wal.segment.retired";
/// `crates/wal`, the segment archiver: an archived copy has been renamed to its final
/// name, and the archive directory is not synced yet.
pub const ARCHIVE_RENAMED: &str = "wal.archive.renamed";
/// `crates/wal`, the flush daemon: a batch of log bytes has been written to its segment
/// file, and not synced yet.
pub const LOG_WRITTEN: &str = "wal.flush.written";
/// `crates/engine`, the data file: a page (or a cluster of pages) has been written, and
/// not synced yet (the sync comes with the next checkpoint).
pub const PAGE_WRITTEN: &str = "engine.page.written";
/// `crates/engine`, a checkpoint: its begin record is appended and the redo point moved,
/// no page written yet.
pub const CHECKPOINT_BEGUN: &str = "engine.checkpoint.begun";
/// `crates/engine`, a checkpoint: the pages are written and the data file synced; the
/// end record is not appended yet.
pub const CHECKPOINT_DATA_SYNCED: &str = "engine.checkpoint.data_synced";
/// `crates/engine`, a checkpoint: its end record is durable; the control file still
/// names the previous checkpoint.
pub const CHECKPOINT_ENDED: &str = "engine.checkpoint.ended";
/// `crates/engine`, the control file: the new `CONTROL` has been renamed over the old
/// one, and the directory is not synced yet.
pub const CONTROL_RENAMED: &str = "engine.control.renamed";
/// `crates/engine`, a checkpoint: the control file names it; the log is not truncated
/// yet.
pub const CHECKPOINT_CONTROL_WRITTEN: &str = "engine.checkpoint.control_written";

/// Every named point.
pub const ALL: [&str; 10] = [
    SEGMENT_RENAMED,
    SEGMENT_RETIRED,
    ARCHIVE_RENAMED,
    LOG_WRITTEN,
    PAGE_WRITTEN,
    CHECKPOINT_BEGUN,
    CHECKPOINT_DATA_SYNCED,
    CHECKPOINT_ENDED,
    CONTROL_RENAMED,
    CHECKPOINT_CONTROL_WRITTEN,
];
