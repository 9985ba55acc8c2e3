//! How a log is opened: its options, and the group-commit policy that decides when the
//! flush daemon starts a round.

use crate::buffer::InsertVariant;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// How long the daemon may wait before flushing pending bytes nobody waits for.
const DEFAULT_MAX_DELAY: Duration = Duration::from_millis(1);

/// When the flush daemon starts a round (Aether §4.1): whichever threshold is met first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommit {
    /// `X`: flush once this many waits (blocking or registered) are outstanding.
    pub max_waiters: usize,
    /// `L`: flush once this many bytes are pending.
    pub max_bytes: u64,
    /// `T`: flush once bytes have been pending this long.
    pub max_delay: Duration,
    /// Tune at run time how long a round lets the last round's waiters re-join before it
    /// syncs (perturb and observe on the commits completed per second: see the `gather`
    /// module); `false` keeps a fixed budget of 8 scheduler yields.
    pub adaptive: bool,
}

impl Default for GroupCommit {
    /// `X = 1`, `L = 1 MiB`, `T = 1 ms`: any waiter starts a round at once, and the
    /// commits arriving during one sync share the next — a waiter never waits for more
    /// than the sync in flight plus its own.
    fn default() -> Self {
        GroupCommit {
            max_waiters: 1,
            max_bytes: 1 << 20,
            max_delay: DEFAULT_MAX_DELAY,
            adaptive: true,
        }
    }
}

/// How the segment preparer makes the space a segment's log is written into (the
/// `segment` module docs; ARCHITECTURE.md, Segments).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Preallocate {
    /// Reserve the blocks without writing them (`fallocate`): the log is written once.
    /// Where the file system cannot (`Unsupported`), the preparer writes zeros instead,
    /// and [`crate::LogStats::bytes_zero_filled`] counts them.
    #[default]
    Allocate,
    /// Write zeros and sync them: every byte of new log space is written twice, but a
    /// log write over it converts no extent (the choice before allocation; kept to
    /// measure one against the other).
    Zeros,
}

impl Preallocate {
    /// Every choice, in the order the CLI lists them.
    pub const ALL: [Preallocate; 2] = [Preallocate::Allocate, Preallocate::Zeros];

    /// The name the CLI and the benchmarks' JSON use.
    pub fn name(self) -> &'static str {
        match self {
            Preallocate::Allocate => "allocate",
            Preallocate::Zeros => "zeros",
        }
    }
}

impl fmt::Display for Preallocate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Preallocate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Preallocate::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown preallocation '{s}' (expected allocate or zeros)"))
    }
}

/// How the log's bytes reach the disk (ARCHITECTURE.md, "Flush paths").
///
/// The default is the daemon: on this project's 2-core machine it is the faster of the
/// two (TPC-B, 64 clients, `elr-pipelined`: 77,400 tps against 62,700, three
/// interleaved pairs, 2026-11-30; PERFORMANCE.md, issue 28).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlushPath {
    /// No flush thread on the commit path: the committing threads submit each round's
    /// writes and sync to an io_uring and reap them between transactions (the
    /// `flush::ring` module); the daemon only backs them up. Where the storage has no
    /// ring (the kernel refuses io_uring, or the storage is a wrapper that does not
    /// forward one), the log takes [`FlushPath::Daemon`] and says why once
    /// ([`crate::Log::flush_path`]).
    IoUring,
    /// A flush daemon thread writes and syncs every round (Aether's design).
    #[default]
    Daemon,
}

impl FlushPath {
    /// Every choice, in the order the CLI lists them.
    pub const ALL: [FlushPath; 2] = [FlushPath::IoUring, FlushPath::Daemon];

    /// The name the CLI and the benchmarks' JSON use.
    pub fn name(self) -> &'static str {
        match self {
            FlushPath::IoUring => "io-uring",
            FlushPath::Daemon => "daemon",
        }
    }
}

impl fmt::Display for FlushPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FlushPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        FlushPath::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown flush path '{s}' (expected io-uring or daemon)"))
    }
}

/// How a log is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOptions {
    /// LSN bytes per segment file (used when creating a new log; an existing log keeps
    /// the size in its headers).
    pub segment_bytes: u64,
    /// Log-buffer bytes (rounded up to a power of two).
    pub buffer_bytes: usize,
    /// The insertion algorithm.
    pub variant: InsertVariant,
    /// Consolidation-array slots, for the variants that consolidate.
    pub slots: usize,
    /// When the daemon flushes.
    pub group_commit: GroupCommit,
    /// How new segment space is made.
    pub preallocate: Preallocate,
    /// How rounds reach the disk: io_uring from the committing threads, or a daemon.
    pub flush: FlushPath,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            segment_bytes: 16 << 20,
            buffer_bytes: 4 << 20,
            variant: InsertVariant::default(),
            slots: 4,
            group_commit: GroupCommit::default(),
            preallocate: Preallocate::default(),
            flush: FlushPath::default(),
        }
    }
}
