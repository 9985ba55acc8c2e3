//! Which log records redo repeats, from a checkpoint's tables (ARIES) — the one place
//! the rule is written. Restart recovery's redo asks it, and so does the single-pass
//! restore (`db/restore_runs.rs`), which replays the same records in page order; a
//! backup and a checkpoint ask where it starts reading.

use crate::control::Checkpoint;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::log_record::{CheckpointData, Record};
use sluice_wal::{Lsn, ReadRecord};
use std::collections::HashMap;

/// The redo rule of one checkpoint: a record from the checkpoint's begin on may need
/// redoing (its page was dirty then or became so); an earlier one only on a page the
/// checkpoint's dirty-page table lists with a recovery LSN at or below it (the page was
/// dirty since then; any other page had been written). Analysis's dirty-page table
/// answers the same for every record it scanned: it holds the checkpoint's table plus
/// each page a record from the begin on touched, from that record.
pub(crate) struct RedoRule {
    begin: Lsn,
    /// The checkpoint's dirty-page table, each page's lowest recovery LSN.
    at_checkpoint: HashMap<PageId, Lsn>,
}

impl RedoRule {
    /// The rule of the checkpoint that began at `begin` and listed `dirty`.
    pub(crate) fn new(begin: Lsn, dirty: &[(PageId, Lsn)]) -> RedoRule {
        let mut at_checkpoint: HashMap<PageId, Lsn> = HashMap::new();
        for &(p, rec) in dirty {
            let e = at_checkpoint.entry(p).or_insert(rec);
            *e = (*e).min(rec);
        }
        RedoRule {
            begin,
            at_checkpoint,
        }
    }

    /// Without a checkpoint: every record from the log's start.
    pub(crate) fn everything() -> RedoRule {
        RedoRule::new(Lsn(0), &[])
    }

    /// True if the record at `lsn` that changes `page` may need redoing (it is redone if
    /// the page's LSN is below its end).
    pub(crate) fn wants(&self, page: PageId, lsn: Lsn) -> bool {
        lsn >= self.begin || self.at_checkpoint.get(&page).is_some_and(|&rec| rec <= lsn)
    }

    /// The checkpoint's dirty-page table.
    pub(crate) fn dirty(&self) -> impl Iterator<Item = (PageId, Lsn)> + '_ {
        self.at_checkpoint.iter().map(|(&p, &l)| (p, l))
    }

    /// The lowest LSN redo from this checkpoint may read: its begin, or a listed page's
    /// recovery LSN if lower.
    pub(crate) fn start(&self) -> Lsn {
        redo_start(self.begin, self.at_checkpoint.values().copied())
    }
}

/// [`RedoRule::start`] for a checkpoint that began at `begin` and lists `recovery_lsns`.
pub(crate) fn redo_start(begin: Lsn, recovery_lsns: impl IntoIterator<Item = Lsn>) -> Lsn {
    recovery_lsns.into_iter().fold(begin, Lsn::min)
}

/// The record at `lsn` decoded, damage named by its LSN.
pub(crate) fn decode(lsn: Lsn, payload: &[u8]) -> Result<Record> {
    Record::decode(payload).map_err(|e| Error::Corruption(format!("log record at LSN {lsn}: {e}")))
}

/// The end record of `checkpoint`, given the first record a log read from its end
/// yields: there, an end of a checkpoint, and one that says it began where the control
/// file does.
pub(crate) fn end_record(
    checkpoint: Checkpoint,
    first: Option<sluice_wal::Result<ReadRecord>>,
) -> Result<CheckpointData> {
    let r = first.ok_or_else(|| {
        Error::Corruption(format!("no checkpoint record at {}", checkpoint.end))
    })??;
    let Record::EndCheckpoint(d) = decode(r.lsn, &r.payload)? else {
        return Err(Error::Corruption(format!(
            "record at {} is not the end of a checkpoint",
            checkpoint.end
        )));
    };
    if d.begin != checkpoint.begin {
        return Err(Error::Corruption(format!(
            "checkpoint at {} says it began at {}, the control file says {}",
            checkpoint.end, d.begin, checkpoint.begin
        )));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_wanted_from_the_begin_on_or_from_its_pages_recovery_lsn() {
        let rule = RedoRule::new(Lsn(100), &[(PageId(7), Lsn(60)), (PageId(7), Lsn(40))]);
        assert_eq!(
            rule.start(),
            Lsn(40),
            "the lowest recovery LSN of a page listed twice"
        );
        assert!(rule.wants(PageId(3), Lsn(100)) && rule.wants(PageId(3), Lsn(500)));
        assert!(
            !rule.wants(PageId(3), Lsn(99)),
            "an unlisted page before the begin"
        );
        assert!(rule.wants(PageId(7), Lsn(40)) && rule.wants(PageId(7), Lsn(70)));
        assert!(
            !rule.wants(PageId(7), Lsn(39)),
            "below the page's recovery LSN"
        );
        assert!(RedoRule::everything().wants(PageId(3), Lsn(0)));
        assert_eq!(RedoRule::new(Lsn(100), &[]).start(), Lsn(100));
    }
}
