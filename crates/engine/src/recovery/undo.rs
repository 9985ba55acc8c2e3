//! The undo pass: rolling back the losers with compensation records.

use crate::btree::Btree;
use crate::btree::ClrLogger;
use crate::error::{Error, Result};
use crate::ids::TxnId;
use crate::log_record::Record;
use crate::recovery::analysis::Loser;
use crate::recovery::{Context, Pass, Ticker};
use crate::txn_table::Chain;
use std::collections::{BinaryHeap, HashMap};

/// Commits each loser the coordinator of a partitioned database committed (`decide`:
/// true for its number and the start of its last record), with a commit record, and
/// takes it off `losers`; returns how many. The record's time is this log's clock now
/// (at or after the coordinator's commit, which is the time that decided it: a reader
/// after the time of a partitioned database's commit takes the coordinator's record).
pub(crate) fn commit_in_doubt(
    cx: &Context<'_>,
    losers: &mut HashMap<TxnId, Loser>,
    decide: &(dyn Fn(TxnId, sluice_wal::Lsn) -> bool + Send + Sync),
) -> Result<usize> {
    let committed: Vec<TxnId> = losers
        .iter()
        .filter(|(&id, l)| decide(id, l.last))
        .map(|(&id, _)| id)
        .collect();
    for id in &committed {
        let l = losers.remove(id).expect("listed above");
        let txn = cx.txns.register(
            *id,
            Chain {
                last_end: None,
                first: Some(l.first),
                last: Some(l.last),
            },
        );
        txn.append(&cx.store.log, |prev| Record::Commit {
            txn: *id,
            prev,
            at: cx.store.commit_clock.stamp(),
        })?;
        cx.txns.end(*id);
    }
    Ok(committed.len())
}

/// Undoes every loser; returns the number of changes undone.
pub(crate) fn run(cx: &Context<'_>, losers: HashMap<TxnId, Loser>) -> Result<u64> {
    let mut heap = BinaryHeap::new();
    let mut shared = HashMap::new();
    for (&id, l) in &losers {
        let s = cx.txns.register(
            id,
            Chain {
                last_end: None,
                first: Some(l.first),
                last: Some(l.last),
            },
        );
        shared.insert(id, s);
        heap.push((l.last, id));
    }
    let mut undone = 0;
    let to_undo = losers.values().map(|l| l.records.len() as u64).sum();
    let mut ticker = Ticker::start(cx, Pass::Undo, to_undo);
    let mut visited = 0;
    while let Some((lsn, id)) = heap.pop() {
        ticker.at(visited);
        visited += 1;
        let rec = losers[&id].records.get(&lsn).ok_or_else(|| {
            Error::Corruption(format!("{id}: record {lsn} on its undo chain is missing"))
        })?;
        let txn = &shared[&id];
        let next = match rec {
            Record::Update {
                prev,
                tree,
                key,
                change,
                ..
            } => {
                let latch = cx.store.tree_latch(*tree);
                let mut logger = ClrLogger {
                    txn,
                    undo_next: *prev,
                };
                let btree = Btree::new(cx.store, *tree, &latch);
                let undo = change.clone().into_undo();
                btree.undo(key, &undo, &mut logger).map_err(|e| match e {
                    Error::Corruption(e) => {
                        Error::Corruption(format!("{id}: undo of record {lsn}: {e}"))
                    }
                    e => e,
                })?;
                undone += 1;
                *prev
            }
            Record::Clr { undo_next, .. } => *undo_next,
            other => {
                return Err(Error::Corruption(format!(
                    "{id}: {other:?} at {lsn} on an undo chain"
                )))
            }
        };
        match next {
            Some(n) => {
                if n >= lsn {
                    return Err(Error::Corruption(format!(
                        "{id}: undo chain goes forward from {lsn} to {n}"
                    )));
                }
                heap.push((n, id));
            }
            None => {
                txn.append(&cx.store.log, |prev| Record::End { txn: id, prev })?;
                cx.txns.end(id);
            }
        }
    }
    ticker.finish();
    Ok(undone)
}
