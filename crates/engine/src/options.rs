//! How a database is opened.

use crate::error::{Error, Result};
use crate::page::{HEADER_LEN, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use sluice_wal::LogOptions;
use std::time::Duration;

/// When a committing transaction releases its locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockRelease {
    /// After the commit record is durable: strict two-phase locking (the default).
    #[default]
    AfterDurable,
    /// As soon as the commit record is in the log buffer (early lock release, Aether §3).
    /// Safe for update transactions because a dependent's commit record lies later in the
    /// same log; a reader that only read must still wait for durability before it
    /// reports what it saw (the commit path does).
    Early,
}

/// Options of a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Bytes per page: a power of two in 1 KiB..=32 KiB. Used when the database is
    /// created; an existing database keeps the page size it was created with.
    pub page_size: usize,
    /// Buffer-pool frames (pages cached in memory). At least 16.
    pub pool_pages: usize,
    /// The write-ahead log's options.
    pub log: LogOptions,
    /// How long a lock request waits before it fails with
    /// [`Error::LockTimeout`](crate::Error::LockTimeout) (deadlock handling).
    pub lock_timeout: Duration,
    /// Take a checkpoint after this many log bytes since the last one (0: only on
    /// request and at close).
    pub checkpoint_log_bytes: u64,
    /// When commit releases locks.
    pub lock_release: LockRelease,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: 8192,
            pool_pages: 4096,
            log: LogOptions::default(),
            lock_timeout: Duration::from_secs(2),
            checkpoint_log_bytes: 64 << 20,
            lock_release: LockRelease::AfterDurable,
        }
    }
}

impl Options {
    /// Small pages, a small pool, small log segments and frequent checkpoints: makes a
    /// few thousand operations split pages, evict, roll segments and checkpoint. For tests.
    pub fn small() -> Options {
        Options {
            page_size: 1024,
            pool_pages: 32,
            log: LogOptions {
                segment_bytes: 64 << 10,
                buffer_bytes: 256 << 10,
                group_commit: sluice_wal::GroupCommit {
                    max_delay: Duration::from_micros(200),
                    ..Default::default()
                },
                ..LogOptions::default()
            },
            lock_timeout: Duration::from_millis(200),
            checkpoint_log_bytes: 128 << 10,
            lock_release: LockRelease::AfterDurable,
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&self.page_size)
            || !self.page_size.is_power_of_two()
        {
            return Err(Error::InvalidArgument(format!(
                "page size {} must be a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}",
                self.page_size
            )));
        }
        if self.pool_pages < 16 {
            return Err(Error::InvalidArgument(format!(
                "pool of {} pages is below the minimum of 16",
                self.pool_pages
            )));
        }
        Ok(())
    }
}

/// Size limits of keys and values, derived from the page size so that every leaf holds
/// at least four entries and every internal node at least four separators (which keeps
/// splits simple: one split always makes room).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest key.
    pub max_key: usize,
    /// The longest key plus value.
    pub max_entry: usize,
}

impl Limits {
    /// The limits for pages of `page_size` bytes.
    pub fn for_page_size(page_size: usize) -> Limits {
        // Four cells of (cell header + slot + payload) must fit the page body; the
        // larger cell header is the internal one (10 bytes), plus a 2-byte slot.
        let max_entry = (page_size - HEADER_LEN) / 4 - 12;
        Limits {
            max_key: max_entry.min(1024),
            max_entry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_leave_room_for_four_cells() {
        for size in [1024, 4096, 8192, 32768] {
            let l = Limits::for_page_size(size);
            assert!(4 * (l.max_entry + 12) <= size - HEADER_LEN);
            assert!(l.max_key <= l.max_entry);
        }
        assert_eq!(Limits::for_page_size(8192).max_key, 1024);
    }

    #[test]
    fn bad_options_are_rejected() {
        let o = Options {
            page_size: 3000,
            ..Options::default()
        };
        assert!(matches!(o.check(), Err(Error::InvalidArgument(_))));
        let o = Options {
            pool_pages: 2,
            ..Options::default()
        };
        assert!(o.check().is_err());
        assert!(Options::small().check().is_ok());
    }
}
