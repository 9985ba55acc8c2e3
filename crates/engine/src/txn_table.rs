//! The table of active transactions and each one's log chain.

use crate::error::Result;
use crate::ids::TxnId;
use crate::log_record::{ActiveTxn, Record};
use crate::log_sink::LogSink;
use parking_lot::Mutex;
use sluice_wal::{Appended, Lsn};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A transaction's first and last record.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Chain {
    pub(crate) first: Option<Lsn>,
    pub(crate) last: Option<Lsn>,
    /// The end of the last record (what must be durable for it to be on disk).
    pub(crate) last_end: Option<Lsn>,
}

/// What the checkpoint and the transaction share.
pub(crate) struct TxnShared {
    pub(crate) id: TxnId,
    /// Held across the append of each of the transaction's records, so a checkpoint that
    /// reads the chain sees every record appended before it (a record cannot be in the
    /// log without its transaction's chain saying so).
    chain: Mutex<Chain>,
}

impl TxnShared {
    /// Appends the record `build(prev)` to the transaction's chain.
    pub(crate) fn append(
        &self,
        log: &LogSink,
        build: impl FnOnce(Option<Lsn>) -> Record,
    ) -> Result<Appended> {
        self.append_keeping(log, build).map(|(a, _)| a)
    }

    /// [`TxnShared::append`], handing the record back (to keep parts of it without a
    /// copy: the undo list takes an update's key and change).
    pub(crate) fn append_keeping(
        &self,
        log: &LogSink,
        build: impl FnOnce(Option<Lsn>) -> Record,
    ) -> Result<(Appended, Record)> {
        let mut c = self.chain.lock();
        let rec = build(c.last);
        debug_assert_eq!(rec.txn(), Some(self.id));
        let a = log.append(&rec.encode())?;
        assert!(c.last.is_none_or(|l| l < a.lsn), "log chain must grow");
        c.first.get_or_insert(a.lsn);
        c.last = Some(a.lsn);
        c.last_end = Some(a.end);
        Ok((a, rec))
    }

    pub(crate) fn chain(&self) -> Chain {
        *self.chain.lock()
    }
}

/// Active transactions.
pub(crate) struct TxnTable {
    next: AtomicU64,
    /// Hashed with foldhash (hashbrown's default), not std's SipHash: the ids are ours,
    /// and every transaction inserts and removes itself here.
    active: Mutex<hashbrown::HashMap<TxnId, Arc<TxnShared>>>,
}

impl TxnTable {
    pub(crate) fn new(next: u64) -> TxnTable {
        TxnTable {
            next: AtomicU64::new(next.max(1)),
            active: Mutex::new(hashbrown::HashMap::new()),
        }
    }

    /// Numbers below this have been handed out.
    pub(crate) fn next_id(&self) -> u64 {
        self.next.load(Ordering::SeqCst)
    }

    pub(crate) fn begin(&self) -> Arc<TxnShared> {
        let id = TxnId(self.next.fetch_add(1, Ordering::SeqCst));
        self.register(id, Chain::default())
    }

    /// Registers a transaction (recovery re-registers losers with their chains).
    pub(crate) fn register(&self, id: TxnId, chain: Chain) -> Arc<TxnShared> {
        let t = Arc::new(TxnShared {
            id,
            chain: Mutex::new(chain),
        });
        let old = self.active.lock().insert(id, t.clone());
        assert!(old.is_none(), "{id} registered twice");
        self.next.fetch_max(id.0 + 1, Ordering::SeqCst);
        t
    }

    pub(crate) fn end(&self, id: TxnId) {
        let removed = self.active.lock().remove(&id);
        assert!(removed.is_some(), "{id} ended twice");
    }

    pub(crate) fn len(&self) -> usize {
        self.active.lock().len()
    }

    /// The transactions that have written records, for a checkpoint.
    pub(crate) fn snapshot(&self) -> Vec<ActiveTxn> {
        let all: Vec<Arc<TxnShared>> = self.active.lock().values().cloned().collect();
        let mut out: Vec<ActiveTxn> = all
            .iter()
            .filter_map(|t| {
                let c = t.chain();
                Some(ActiveTxn {
                    txn: t.id,
                    first: c.first?,
                    last: c.last?,
                })
            })
            .collect();
        out.sort_by_key(|a| a.txn);
        out
    }
}

impl TxnTable {
    /// Makes sure numbers below `next` are never handed out again.
    pub(crate) fn advance(&self, next: u64) {
        self.next.fetch_max(next, Ordering::SeqCst);
    }
}
