//! What a lock names: a key of a table, or one stripe of the table's end.

use super::LockMode;
use crate::ids::{PageId, TxnId};
use smallvec::SmallVec;

/// The bytes of a locked key: inline up to [`INLINE_KEY`] bytes, so a lock on a short
/// key (TPC-B's 4- and 8-byte keys, most primary keys) allocates nothing — neither the
/// name a transaction remembers nor the copy the lock table keeps. Each was a malloc and
/// a free per lock (issue 10 profile).
pub(crate) type KeyBytes = SmallVec<[u8; INLINE_KEY]>;

/// Key bytes a lock name holds without allocating.
pub(crate) const INLINE_KEY: usize = 16;

/// What a lock names inside a table: a key, or the end of the table (whose gap part
/// covers everything after the last key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum LockName {
    /// A key (present in the tree or not).
    Key(KeyBytes),
    /// `+∞`, the end of the table: one of [`END_STRIPES`] stripes (see
    /// [`LockName::end_stripes`]).
    End(u16),
    /// The table itself: one of [`TABLE_STRIPES`] stripes (see [`TableLock`]).
    Table(u16),
}

/// The table-level lock a transaction takes on its first use of a table, in the modes of
/// the key-range lock table (no mode of its own is needed). Every use takes an intention
/// on one stripe (picked by the transaction id, as the end's gap I), so uses never
/// meet each other on one lock entry; the whole-table modes take every stripe and so
/// meet every use.
///
/// | mode | as | conflicts with |
/// |---|---|---|
/// | `Read` (a get or scan) | record S | `Drop` |
/// | `Write` (a put or delete) | gap I | `Count`, `Drop` |
/// | `Count` (`len`: no uncommitted change of another) | gap S | `Write`, `Drop` |
/// | `Drop` | record X + gap D | everything |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableLock {
    Read,
    Write,
    Count,
    Drop,
}

/// The table lock's stripes.
pub(crate) const TABLE_STRIPES: u16 = 16;

impl TableLock {
    /// The lock mode that stands for it.
    pub(crate) fn mode(self) -> LockMode {
        match self {
            TableLock::Read => LockMode::RECORD_S,
            TableLock::Write => LockMode::GAP_I,
            TableLock::Count => LockMode::GAP_S,
            TableLock::Drop => LockMode::RECORD_X.with(LockMode::GAP_D),
        }
    }

    /// Read and Write, the weak modes: compatible with each other, and taken on the
    /// fast path while no strong one is about (`fast.rs`).
    pub(crate) fn is_weak(self) -> bool {
        matches!(self, TableLock::Read | TableLock::Write)
    }

    /// The stripe a weak mode of `txn` takes.
    pub(crate) fn own_stripe(txn: TxnId) -> u16 {
        (txn.0 % u64::from(TABLE_STRIPES)) as u16
    }

    /// The stripes of the table lock `txn` takes.
    pub(crate) fn stripes(self, txn: TxnId) -> std::ops::Range<u16> {
        match self {
            TableLock::Read | TableLock::Write => {
                let s = TableLock::own_stripe(txn);
                s..s + 1
            }
            TableLock::Count | TableLock::Drop => 0..TABLE_STRIPES,
        }
    }
}

/// The end of a table is locked in stripes. Appends (TPC-B's history) all take gap I on
/// the end; gap I–I is compatible, so they never wait, but one shared lock entry would
/// still be a cache line and a mutex every appender on every core touches twice per
/// transaction (measured: TPC-B elr-pipelined 13 % slower than without the lock).
pub(crate) const END_STRIPES: u16 = 16;

impl LockName {
    /// The name of `key`.
    pub(crate) fn key(key: &[u8]) -> LockName {
        LockName::Key(KeyBytes::from_slice(key))
    }

    /// The stripes of the end a transaction locks in `mode`: gap I takes the one stripe
    /// its transaction id picks; every other part conflicts with gap I, so it takes them
    /// all, and meets every appender whichever stripe it holds.
    pub(crate) fn end_stripes(txn: TxnId, mode: LockMode) -> std::ops::Range<u16> {
        if mode == LockMode::GAP_I {
            let s = (txn.0 % u64::from(END_STRIPES)) as u16;
            s..s + 1
        } else {
            0..END_STRIPES
        }
    }
}

/// What a lock names: a name in a table (its root page).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LockKey {
    /// The table.
    pub(crate) table: PageId,
    /// The key or the end.
    pub(crate) name: LockName,
}

#[cfg(test)]
impl LockKey {
    /// The lock on `key` of `table`.
    pub(crate) fn key(table: PageId, key: &[u8]) -> LockKey {
        LockKey {
            table,
            name: LockName::key(key),
        }
    }
}
