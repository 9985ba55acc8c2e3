//! The analysis pass.

use crate::control::Checkpoint;
use crate::error::{Error, Result};
use crate::ids::{PageId, TxnId};
use crate::log_record::{CommitTime, Record};
use crate::recovery::redo_rule::{self, RedoRule};
use crate::recovery::{Context, Pass, Ticker};
use crate::tree_count::Counts;
use sluice_wal::Lsn;
use std::collections::{BTreeMap, HashMap};

/// A transaction without an outcome in the log, and its records.
pub(crate) struct Loser {
    pub(crate) first: Lsn,
    pub(crate) last: Lsn,
    pub(crate) records: BTreeMap<Lsn, Record>,
}

pub(crate) struct Analysis {
    pub(crate) scan_from: Lsn,
    /// Where redo starts: the lowest recovery LSN of the dirty-page table analysis built
    /// (the checkpoint's, and each page a record from its begin on touched).
    pub(crate) redo_from: Option<Lsn>,
    /// Which records redo repeats (the dirty-page table's answer for every record
    /// analysis scanned, and the checkpoint's for those before).
    pub(crate) rule: RedoRule,
    pub(crate) losers: HashMap<TxnId, Loser>,
    pub(crate) next_txn: u64,
    pub(crate) records: u64,
    /// The entry counts the log gives (`tree_count`).
    pub(crate) counts: Counts,
    /// The highest commit time met: the commit records scanned and the checkpoint's
    /// record of the commit clock (`log_record::CommitClock` starts there).
    pub(crate) last_commit_time: CommitTime,
}

pub(crate) use super::redo_rule::decode;

pub(crate) fn run(cx: &Context<'_>, control: Option<Checkpoint>) -> Result<Analysis> {
    let log = &cx.store.log;
    let mut att: HashMap<TxnId, Loser> = HashMap::new();
    let mut dirty: HashMap<PageId, Lsn> = HashMap::new();
    let mut rule = RedoRule::everything();
    let mut next_txn = 1;
    let mut last_commit_time = CommitTime::UNKNOWN;
    // The dirty pages are the checkpoint's table plus the pages of records from its begin
    // on (ARIES). The scan may start earlier, at the first record of a transaction
    // active at the checkpoint (for its undo), but those earlier records' pages were
    // either written by then or are in the checkpoint's table: counting them dirty
    // would redo changes to pages that may no longer exist (compaction cut the data
    // file after the checkpoint wrote them out).
    let dirty_from = control.as_ref().map_or(Lsn(0), |c| c.begin);
    let scan_from = match control {
        Some(c) => {
            if c.begin < log.start_lsn() {
                return Err(cx.missing_log(c.begin, "the checkpoint"));
            }
            if c.end >= log.durable_lsn() {
                return Err(Error::Corruption(format!(
                    "the control file names a checkpoint ending at LSN {}, but the log in {} ends at {}",
                    c.end,
                    cx.log_dir.display(),
                    log.durable_lsn()
                )));
            }
            let d = redo_rule::end_record(c, log.read_from(c.end)?.next())?;
            next_txn = d.next_txn;
            last_commit_time = d.clock;
            for a in &d.active {
                att.insert(
                    a.txn,
                    Loser {
                        first: a.first,
                        last: a.last,
                        records: BTreeMap::new(),
                    },
                );
            }
            rule = RedoRule::new(c.begin, &d.dirty);
            dirty.extend(rule.dirty());
            d.active.iter().map(|a| a.first).fold(c.begin, Lsn::min)
        }
        None => log.start_lsn(),
    };
    if scan_from < log.start_lsn() {
        return Err(cx.missing_log(scan_from, "undo of a transaction active at the checkpoint"));
    }
    let mut records = 0;
    let mut counts = Counts::default();
    let mut ticker = Ticker::start(
        cx,
        Pass::Analysis,
        log.durable_lsn().0.saturating_sub(scan_from.0),
    );
    for item in log.read_from(scan_from)? {
        let sluice_wal::ReadRecord { lsn, payload, .. } = item?;
        ticker.at(lsn.0 - scan_from.0);
        records += 1;
        let rec = decode(lsn, &payload)?;
        counts.see(&rec);
        let mut touch = |p: PageId| {
            if lsn >= dirty_from {
                let e = dirty.entry(p).or_insert(lsn);
                *e = (*e).min(lsn);
            }
        };
        match &rec {
            Record::Update { txn, page, .. } | Record::Clr { txn, page, .. } => {
                touch(*page);
                next_txn = next_txn.max(txn.0 + 1);
                let l = att.entry(*txn).or_insert(Loser {
                    first: lsn,
                    last: lsn,
                    records: BTreeMap::new(),
                });
                l.first = l.first.min(lsn);
                l.last = l.last.max(lsn);
                l.records.insert(lsn, rec);
            }
            Record::Commit { txn, at, .. } | Record::Coordinated { txn, at, .. } => {
                next_txn = next_txn.max(txn.0 + 1);
                last_commit_time = last_commit_time.max(*at);
                att.remove(txn);
            }
            Record::End { txn, .. } => {
                next_txn = next_txn.max(txn.0 + 1);
                att.remove(txn);
            }
            Record::Images { pages } => {
                for (p, _) in pages {
                    touch(*p);
                }
            }
            Record::BeginCheckpoint | Record::EndCheckpoint(_) | Record::TreeCount { .. } => {}
        }
    }
    ticker.finish();
    let redo_from = dirty.values().min().copied();
    Ok(Analysis {
        scan_from,
        redo_from,
        rule,
        losers: att,
        next_txn,
        records,
        counts,
        last_commit_time,
    })
}
