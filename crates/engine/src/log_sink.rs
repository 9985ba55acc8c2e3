//! The sink of the engine's log records: the write-ahead log, or nowhere for a
//! read-only database (see [`LogSink`]).

use sluice_wal::frame::frame_len;
use sluice_wal::{Appended, Log, Lsn, WalError};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Where the engine's log records go: the write-ahead log — or, in a read-only database
/// while restart recovery undoes losers in memory, nowhere. There each record gets the
/// next LSN past the end of the log (so PageLSNs and chains keep growing as usual) and is
/// dropped: the pages it changed stay in the buffer pool, which never writes them back.
/// Once recovery is over ([`LogSink::seal`]) even that stops, and any record fails with
/// [`WalError::ReadOnly`]: the API refuses writes first, this catches any it missed.
/// Everything else is the [`Log`]'s (through `Deref`).
pub(crate) struct LogSink {
    log: Arc<Log>,
    scratch: Option<Scratch>,
}

struct Scratch {
    next: AtomicU64,
    open: AtomicBool,
}

impl LogSink {
    pub(crate) fn new(log: Arc<Log>) -> LogSink {
        let scratch = log.is_read_only().then(|| Scratch {
            next: AtomicU64::new(log.durable_lsn().0),
            open: AtomicBool::new(true),
        });
        LogSink { log, scratch }
    }

    /// Appends a record to the log (see the type's docs for a read-only one).
    pub(crate) fn append(&self, payload: &[u8]) -> Result<Appended, WalError> {
        let Some(s) = &self.scratch else {
            return crate::breakdown::log_insert(|| self.log.append(payload));
        };
        if !s.open.load(Ordering::Acquire) {
            return Err(WalError::ReadOnly);
        }
        let len = frame_len(payload.len());
        let lsn = Lsn(s.next.fetch_add(len, Ordering::SeqCst));
        Ok(Appended {
            lsn,
            end: lsn.add(len),
        })
    }

    /// Blocks until everything below `lsn` is durable (as [`Log::wait_durable`]), counted
    /// as a wait for the log flush in an agent's time breakdown.
    pub(crate) fn wait_durable(&self, lsn: Lsn) -> Result<Lsn, WalError> {
        crate::breakdown::flush_wait(|| self.log.wait_durable(lsn))
    }

    /// Read-only: recovery is over; from now on every record is refused.
    pub(crate) fn seal(&self) {
        if let Some(s) = &self.scratch {
            s.open.store(false, Ordering::Release);
        }
    }
}

impl Deref for LogSink {
    type Target = Log;
    fn deref(&self) -> &Log {
        &self.log
    }
}
