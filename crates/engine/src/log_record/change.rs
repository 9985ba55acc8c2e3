//! A transaction's change to a key ([`Change`], what an update record says) and an
//! operation on a leaf ([`PageOp`], what redo does and a compensation record says), and
//! the rule for both: an update of an inline value logs only the bytes that changed
//! ([`Delta`]) when that takes fewer record bytes than the whole values.

use super::wire::varint_len;
use super::Delta;
use crate::page::{CellValue, StoredValue};

/// A transaction's change to one key, with what undo needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The key was absent and now maps to `value`.
    Insert {
        /// The new value.
        value: StoredValue,
    },
    /// The key mapped to `old` and now maps to `new` (whole values: a large value's
    /// descriptor on either side, or a change a delta would not make smaller).
    Update {
        /// The value before.
        old: StoredValue,
        /// The value after.
        new: StoredValue,
    },
    /// The key mapped to an inline value and still does; `delta` is what changed.
    Patch {
        /// The changed bytes, before and after.
        delta: Delta,
    },
    /// The key mapped to `old` and is now absent.
    Delete {
        /// The value before.
        old: StoredValue,
    },
}

/// Bytes a whole value takes in a record (its varint length and flag, its bytes).
fn value_record_len(v: CellValue<'_>) -> usize {
    varint_len(((v.bytes.len() as u64) << 1) | v.external as u64) + v.bytes.len()
}

/// The delta from `old` to `new` if both are inline and it takes fewer record bytes
/// than `whole`, what the record would carry instead.
fn delta_if_smaller(old: CellValue<'_>, new: CellValue<'_>, whole: usize) -> Option<Delta> {
    if old.external || new.external {
        // A descriptor is logged whole: redo and undo of a large value stay as simple
        // as they were, and its 18 bytes change almost everywhere on an overwrite.
        return None;
    }
    let d = Delta::between(old.bytes, new.bytes);
    (delta_record_len(&d) < whole).then_some(d)
}

/// Bytes a delta takes in a record.
fn delta_record_len(d: &Delta) -> usize {
    varint_len(d.at as u64)
        + varint_len(d.old.len() as u64)
        + d.old.len()
        + varint_len(d.new.len() as u64)
        + d.new.len()
        + varint_len(d.tail as u64)
}

impl Change {
    /// The change that takes a key from `old` to `new` (`None`: absent), as it is
    /// logged: a [`Change::Patch`] when that is smaller than [`Change::Update`].
    /// `None` if nothing changes.
    pub fn between(old: Option<CellValue<'_>>, new: Option<CellValue<'_>>) -> Option<Change> {
        Some(match (old, new) {
            (None, None) => return None,
            (None, Some(v)) => Change::Insert {
                value: v.to_owned(),
            },
            (Some(o), None) => Change::Delete { old: o.to_owned() },
            (Some(o), Some(v)) => {
                let whole = value_record_len(o) + value_record_len(v);
                match delta_if_smaller(o, v, whole) {
                    Some(delta) => Change::Patch { delta },
                    None => Change::Update {
                        old: o.to_owned(),
                        new: v.to_owned(),
                    },
                }
            }
        })
    }

    /// The page operation that redoes this change.
    pub fn redo(&self, key: &[u8]) -> PageOp {
        match self {
            Change::Insert { value } => PageOp::Insert {
                key: key.to_vec(),
                value: value.clone(),
            },
            Change::Update { new, .. } => PageOp::Set {
                key: key.to_vec(),
                value: new.clone(),
            },
            Change::Patch { delta } => PageOp::Patch {
                key: key.to_vec(),
                delta: delta.clone(),
            },
            Change::Delete { .. } => PageOp::Remove { key: key.to_vec() },
        }
    }

    /// What undoing this change takes (an update's new value is not needed): what a
    /// transaction keeps for its rollback, moved out of its update record once that is
    /// encoded, and what restart undo takes from the record it reads.
    pub(crate) fn into_undo(self) -> Undo {
        match self {
            Change::Insert { .. } => Undo::Value(None),
            Change::Update { old, .. } | Change::Delete { old } => Undo::Value(Some(old)),
            Change::Patch { delta } => Undo::Patch(delta),
        }
    }
}

/// How a [`Change`] is undone (`Btree::undo`, for rollback and restart undo alike).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Undo {
    /// The key maps to this value again (`None`: it is absent again).
    Value(Option<StoredValue>),
    /// The delta reversed, on the value the patch made (smaller than the whole value).
    Patch(Delta),
}

impl Undo {
    /// True if undo needs the key's current value ([`Undo::undone`]).
    pub(crate) fn reads_current(&self) -> bool {
        matches!(self, Undo::Patch(_))
    }

    /// What the key must map to after undo (`None`: absent), given what it maps to
    /// now (`current`; read only for a patch, whose undo is its delta reversed). An
    /// error if `current` is not the value the patch made: the log and the tree
    /// disagree.
    pub(crate) fn undone(
        &self,
        current: Option<&StoredValue>,
    ) -> Result<Option<StoredValue>, String> {
        match self {
            Undo::Value(v) => Ok(v.clone()),
            Undo::Patch(delta) => match current {
                Some(v) if !v.external => {
                    Ok(Some(StoredValue::inline(delta.reversed().apply(&v.bytes)?)))
                }
                Some(_) => Err("undo of a patch finds a large value's descriptor".into()),
                None => Err("undo of a patch finds the key absent".into()),
            },
        }
    }
}

/// An operation on the cells of one leaf page (exact: redo fails loudly if the page does
/// not agree, because that means the log and the page disagree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageOp {
    /// Add a cell for an absent key.
    Insert {
        /// The key.
        key: Vec<u8>,
        /// Its value.
        value: StoredValue,
    },
    /// Replace the value of a present key.
    Set {
        /// The key.
        key: Vec<u8>,
        /// Its new value.
        value: StoredValue,
    },
    /// Change bytes of a present key's inline value (exactly: the value must have the
    /// delta's old length and old bytes).
    Patch {
        /// The key.
        key: Vec<u8>,
        /// The change.
        delta: Delta,
    },
    /// Remove the cell of a present key.
    Remove {
        /// The key.
        key: Vec<u8>,
    },
}

impl PageOp {
    /// The operation that takes `key` from `old` to `new` (`None`: absent), as a
    /// compensation record logs it: a [`PageOp::Patch`] when that is smaller than the
    /// whole new value. `None` if nothing changes.
    pub fn between(
        key: &[u8],
        old: Option<CellValue<'_>>,
        new: Option<CellValue<'_>>,
    ) -> Option<PageOp> {
        let key = key.to_vec();
        Some(match (old, new) {
            (None, None) => return None,
            (None, Some(v)) => PageOp::Insert {
                key,
                value: v.to_owned(),
            },
            (Some(_), None) => PageOp::Remove { key },
            (Some(o), Some(v)) => match delta_if_smaller(o, v, value_record_len(v)) {
                Some(delta) => PageOp::Patch { key, delta },
                None => PageOp::Set {
                    key,
                    value: v.to_owned(),
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{PageId, TxnId};
    use crate::log_record::Record;
    use proptest::prelude::*;
    use sluice_wal::Lsn;

    fn update(old: &[u8], new: &[u8]) -> Change {
        Change::between(Some(CellValue::inline(old)), Some(CellValue::inline(new)))
            .expect("a change")
    }

    #[test]
    fn an_update_of_a_few_bytes_logs_a_patch_that_undoes_exactly() {
        let mut old = vec![0u8; 100];
        old[4..12].copy_from_slice(&1_000i64.to_le_bytes());
        let mut new = old.clone();
        new[4..12].copy_from_slice(&(1_000i64 + 512).to_le_bytes());
        let c = update(&old, &new);
        let Change::Patch { delta } = &c else {
            panic!("whole values logged: {c:?}");
        };
        assert_eq!((delta.at, delta.old.len(), delta.tail), (5, 1, 94));
        let cur = StoredValue::inline(new.clone());
        assert_eq!(
            c.clone().into_undo().undone(Some(&cur)),
            Ok(Some(StoredValue::inline(old.clone())))
        );
        // The record is a fraction of one with both whole values.
        let rec = |change| Record::Update {
            txn: TxnId(1_000_000),
            prev: Some(Lsn(1 << 30)),
            page: PageId(1_000),
            tree: PageId(3),
            key: 42u32.to_be_bytes().to_vec(),
            change,
        };
        let whole = Change::Update {
            old: StoredValue::inline(old),
            new: StoredValue::inline(new),
        };
        let (small, big) = (rec(c).encode().len(), rec(whole).encode().len());
        assert!(
            small <= 30 && big >= 200,
            "patch {small} bytes, whole {big}"
        );
    }

    #[test]
    fn values_a_delta_would_not_shrink_and_descriptors_are_logged_whole() {
        assert!(matches!(update(b"abcd", b"wxyz"), Change::Update { .. }));
        let (a, b) = (vec![1u8; 18], vec![2u8; 18]);
        let d = |v| CellValue {
            bytes: v,
            external: true,
        };
        for (o, n) in [
            (d(&a), d(&a[..17])),
            (d(&a), CellValue::inline(&b)),
            (CellValue::inline(&a), d(&a)),
        ] {
            assert!(matches!(
                Change::between(Some(o), Some(n)),
                Some(Change::Update { .. })
            ));
            assert!(matches!(
                PageOp::between(b"k", Some(o), Some(n)),
                Some(PageOp::Set { .. })
            ));
        }
        assert_eq!(Change::between(None, None), None);
    }

    #[test]
    fn undo_of_a_patch_refuses_a_value_it_did_not_make() {
        let c = update(&[5; 50], &[5, 5, 6, 5, 5].repeat(10));
        let wrong = StoredValue::inline(vec![5; 50]);
        assert!(c.clone().into_undo().undone(Some(&wrong)).is_err());
        assert!(c.clone().into_undo().undone(None).is_err());
        let desc = StoredValue {
            bytes: [5, 5, 6, 5, 5].repeat(10),
            external: true,
        };
        assert!(c.clone().into_undo().undone(Some(&desc)).is_err());
    }

    proptest! {
        #[test]
        fn every_change_between_two_values_round_trips_and_undoes(
            old in proptest::collection::vec(0u8..3, 0..60),
            new in proptest::collection::vec(0u8..3, 0..60),
        ) {
            let c = update(&old, &new);
            let r = Record::Update {
                txn: TxnId(3),
                prev: None,
                page: PageId(9),
                tree: PageId(2),
                key: b"key".to_vec(),
                change: c.clone(),
            };
            prop_assert_eq!(Record::decode(&r.encode()), Ok(r));
            let cur = StoredValue::inline(new.clone());
            prop_assert_eq!(c.clone().into_undo().undone(Some(&cur)), Ok(Some(StoredValue::inline(old.clone()))));
            let op = PageOp::between(b"key", Some(CellValue::inline(&new)), Some(CellValue::inline(&old)));
            if let Some(PageOp::Patch { delta, .. }) = op {
                prop_assert_eq!(delta.apply(&new), Ok(old));
            }
        }
    }
}
