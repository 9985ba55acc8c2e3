//! What the simulated disk records about the operations it serves: counters, and an
//! optional trace for tests that assert the order of writes, syncs and renames.

use std::path::PathBuf;

/// Counters of what the simulated disk has done. Successful operations only, except
/// `ops`, which counts every mutating or syncing operation attempted (the count that
/// [`SimStorage::crash_at_op`](super::SimStorage::crash_at_op) and fault plans see).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Successful `write_at` calls.
    pub writes: u64,
    /// Bytes written by successful `write_at` calls.
    pub bytes_written: u64,
    /// Successful `sync_data` calls.
    pub syncs: u64,
    /// Successful `sync_dir` calls.
    pub dir_syncs: u64,
    /// Power losses so far, manual or armed.
    pub crashes: u64,
    /// Process kills so far, manual or armed.
    pub process_kills: u64,
    /// Mutating or syncing operations attempted (write, set_len, sync_data, sync_dir,
    /// creating a file or directory, rename, remove; not reads), including ones that failed
    /// by injection or halt.
    pub ops: u64,
    /// `read_at` calls attempted on live handles, including ones that failed by
    /// injection (the count that read fault plans see; not part of `ops`).
    pub reads: u64,
}

/// One successful operation, as recorded by the trace (see
/// [`SimStorage::set_trace`](super::SimStorage::set_trace)).
/// Paths are normalised (no `.` components); a handle's events carry the path it was
/// opened with, even if the file was renamed since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEvent {
    /// A file was created (by `open` or `lock`).
    Create(PathBuf),
    /// A directory was created (by `create_dir_all`).
    CreateDir(PathBuf),
    /// `len` bytes were written at `offset`.
    Write {
        /// The file written.
        path: PathBuf,
        /// Where the write starts.
        offset: u64,
        /// How many bytes were written.
        len: u64,
    },
    /// The file's length was set (by `set_len` or a truncating `open`).
    SetLen {
        /// The file.
        path: PathBuf,
        /// Its new length.
        len: u64,
    },
    /// The file was allocated up to `len` bytes (`allocate`; recorded only when it grew).
    Allocate {
        /// The file.
        path: PathBuf,
        /// Its new length.
        len: u64,
    },
    /// `sync_data` on a handle of this file.
    SyncData(PathBuf),
    /// `sync_dir` on this directory.
    SyncDir(PathBuf),
    /// A file or a directory was renamed.
    Rename {
        /// The old name.
        from: PathBuf,
        /// The new name (replaced if it existed).
        to: PathBuf,
    },
    /// A file was removed.
    Remove(PathBuf),
}
