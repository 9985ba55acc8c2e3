//! The log's segment files, as raft-engine's `file_pipe_log/` holds its files:
//!
//! * `segment.rs` — one segment file: its name, header, creation, extension, retirement
//!   and recycling, and the scan of a directory;
//! * `dirs.rs` — the directories segments go to (horizontal partitioning) and their
//!   markers;
//! * `set.rs` — the segments of an open log ([`SegmentSet`]): which exist, the first LSN
//!   still in the log, the recycling pool, truncation;
//! * `prepare.rs` — the preparer thread, which allocates and recycles files ahead of the
//!   flush daemon;
//! * `archive.rs` — the archiver thread, which copies each finished segment to an archive
//!   directory;
//! * `manifest.rs` — the archive's `MANIFEST` (an entry per copy: LSN range, length,
//!   CRC32C) and the readers that check an archive against it;
//! * `mirror.rs` — the [`ArchiveMirror`] seam: a second destination (an object store)
//!   the archiver ships each archived segment to before it counts as archived.
//!
//! The preparer and the archiver see the log through narrow contexts
//! ([`PrepareContext`], [`ArchiveContext`]): the segment set and the log's health, and for
//! the archiver the durable LSN. Nothing here imports the log, the flush daemon or the
//! state they share.

mod archive;
pub mod dirs;
mod manifest;
mod mirror;
mod prepare;
pub mod segment;
mod set;

pub(crate) use archive::{ArchiveContext, Archiver};
pub use manifest::{
    parse_archive_manifest, parse_archive_manifest_whole, read_archive_manifest, verify_archive,
    ArchiveProblem, ArchiveReport, ArchivedSegment, MANIFEST_NAME,
};
pub use mirror::{ArchiveMirror, MirrorRetry, SharedMirror};
pub(crate) use prepare::{PrepareContext, Preparer};
pub(crate) use set::SegmentSet;
pub use set::MAX_RECYCLED_SEGMENTS;
