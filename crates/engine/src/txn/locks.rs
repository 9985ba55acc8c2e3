//! Lock acquisition: a transaction's locks taken and waited for (`crate::lock`), the gap
//! locks a write try-locks under its leaf latch, and a lock given back unused.

use super::transaction::Transaction;
use crate::breakdown::{enter, Activity};
use crate::btree::GapLocker;
use crate::error::Result;
use crate::ids::PageId;
use crate::lock::{Granted, LockKey, LockManager, LockMode, LockName, Refused};
use crate::table::Table;
use sluice_wal::Lsn;

/// Takes a transaction's gap locks under latches (see `btree::write`).
pub(super) struct TxnGaps<'a> {
    pub(super) locks: &'a LockManager,
    pub(super) txn: crate::ids::TxnId,
    pub(super) table: PageId,
    pub(super) held: &'a mut Vec<LockKey>,
    pub(super) dep: &'a mut Option<Lsn>,
}

impl GapLocker for TxnGaps<'_> {
    fn try_lock(
        &mut self,
        name: LockName,
        mode: LockMode,
        check: LockMode,
    ) -> Result<LockMode, LockName> {
        try_lock_name(
            self.locks, self.txn, self.table, name, mode, check, self.held, self.dep,
        )
    }
}

/// Try-locks `mode` on `name` of `table` for `txn`, if `check` is free too (instant
/// duration; the end of the table: the stripes the mode needs, nothing to check),
/// remembering new locks in `held`. Returns the parts `txn` now holds on the name (on
/// the end: on the stripes taken), or the name to wait for if one is not free.
#[allow(clippy::too_many_arguments)]
pub(super) fn try_lock_name(
    locks: &LockManager,
    txn: crate::ids::TxnId,
    table: PageId,
    name: LockName,
    mode: LockMode,
    check: LockMode,
    held: &mut Vec<LockKey>,
    dep: &mut Option<Lsn>,
) -> Result<LockMode, LockName> {
    let _lock = enter(Activity::Lock);
    let mut holds = LockMode::NONE;
    let mut one = |name: LockName, check: LockMode| {
        let k = LockKey { table, name };
        match locks.try_lock_checked(txn, &k, mode, check, dep) {
            Some((g, h)) => {
                if g == Granted::New {
                    held.push(k);
                }
                holds = holds.with(h);
            }
            None => return Err(k.name),
        }
        Ok(())
    };
    match name {
        LockName::Key(_) => one(name, check)?,
        LockName::End(_) => LockName::end_stripes(txn, mode)
            .try_for_each(|s| one(LockName::End(s), LockMode::NONE))?,
        LockName::Table(_) => unreachable!("table locks are taken by waiting (`use_table`)"),
    }
    Ok(holds)
}

impl Transaction {
    /// Takes `mode` on `name` of `table`, waiting (no latch may be held); returns
    /// whether the transaction did not hold the name before.
    pub(super) fn lock(&mut self, table: &Table, name: LockName, mode: LockMode) -> Result<bool> {
        let _lock = enter(Activity::Lock);
        let k = LockKey {
            table: table.root,
            name,
        };
        let g = self
            .db
            .locks
            .lock_as(self.shared.id, self.seniority, &k, mode, &mut self.dep)
            .map_err(|r| match (r, self.db.check()) {
                // Say why the database stopped, not only that the wait ended.
                (Refused::Stopped, Err(stopped)) => stopped,
                (r, _) => r.into_error(table.name()),
            })?;
        if g == Granted::New {
            self.held.push(k);
        }
        // The holder we waited for may have been a transaction whose rollback could not
        // finish: it stopped the database and then let its locks go over changes it
        // could not undo (`rollback_in_place`). What lies under the lock is then not a
        // committed state; only a healthy database may show it.
        self.db.check()?;
        Ok(g == Granted::New)
    }

    /// Gives back a lock the current operation took and has not used: nothing was read
    /// or changed under it (the operation starts over), so 2PL does not need it kept.
    pub(super) fn unlock_unused(&mut self, table: PageId, name: LockName) {
        let _lock = enter(Activity::Lock);
        let k = LockKey { table, name };
        let i = self
            .held
            .iter()
            .rposition(|h| *h == k)
            .expect("an unused lock is held");
        self.held.swap_remove(i);
        self.db
            .locks
            .release(self.shared.id, [&k], None, self.db.store.log.durable_lsn());
    }
}
