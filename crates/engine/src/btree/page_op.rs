//! Applying a [`PageOp`] to a leaf: the one place leaf cells change for a key, shared by
//! normal operation, rollback and redo.

use crate::log_record::{Delta, PageOp};
use crate::page::node::{LEAF_CELL_HEADER, SLOT};
use crate::page::{CellValue, Node, NodeMut};

/// Bytes a leaf cell for `(key, value)` takes.
pub(crate) fn leaf_cell_len(key: &[u8], value: &[u8]) -> usize {
    LEAF_CELL_HEADER + key.len() + value.len()
}

/// True if setting `key` from `old` to `new` fits the leaf without a split.
pub(crate) fn fits(node: &Node<'_>, key: &[u8], old: Option<&[u8]>, new: Option<&[u8]>) -> bool {
    let free = node.free_space();
    match (old, new) {
        (_, None) => true,
        (None, Some(v)) => free >= leaf_cell_len(key, v) + SLOT,
        (Some(o), Some(v)) => free + leaf_cell_len(key, o) >= leaf_cell_len(key, v),
    }
}

/// A [`PageOp`] over borrowed bytes: what a change applies to its leaf without copying
/// the key and value it already has (the owned [`PageOp`] is for log records).
#[derive(Debug, Clone, Copy)]
pub(crate) enum PageOpRef<'a> {
    /// Add a cell for an absent key.
    Insert { key: &'a [u8], value: CellValue<'a> },
    /// Replace the value of a present key.
    Set { key: &'a [u8], value: CellValue<'a> },
    /// Change part of a present key's inline value (see [`Delta`]).
    Patch { key: &'a [u8], delta: &'a Delta },
    /// Remove the cell of a present key.
    Remove { key: &'a [u8] },
}

impl PageOp {
    /// The borrowed form, to apply.
    pub(crate) fn as_op_ref(&self) -> PageOpRef<'_> {
        match self {
            PageOp::Insert { key, value } => PageOpRef::Insert {
                key,
                value: value.as_cell(),
            },
            PageOp::Set { key, value } => PageOpRef::Set {
                key,
                value: value.as_cell(),
            },
            PageOp::Patch { key, delta } => PageOpRef::Patch { key, delta },
            PageOp::Remove { key } => PageOpRef::Remove { key },
        }
    }
}

/// The borrowed page operation that takes `key` from `old` to
/// `new` (`None` if nothing changes).
pub(crate) fn op_ref_for<'a, O>(
    key: &'a [u8],
    old: Option<O>,
    new: Option<CellValue<'a>>,
) -> Option<PageOpRef<'a>> {
    match (old, new) {
        (None, None) => None,
        (None, Some(value)) => Some(PageOpRef::Insert { key, value }),
        (Some(_), Some(value)) => Some(PageOpRef::Set { key, value }),
        (Some(_), None) => Some(PageOpRef::Remove { key }),
    }
}

/// Applies `op` to a valid leaf. An error (never a panic) if the leaf disagrees with the
/// op — the key's presence is wrong or the cell does not fit — which during redo means
/// the log and the page do not match.
pub(crate) fn apply_op(page: &mut [u8], op: &PageOp) -> Result<(), String> {
    apply_op_ref(page, op.as_op_ref())
}

/// [`apply_op`] for a borrowed operation. An update to a value of the same length
/// overwrites it in place ([`NodeMut::overwrite_leaf_value`]); redo applies the same
/// operation the same way, so the page it rebuilds is the same.
pub(crate) fn apply_op_ref(page: &mut [u8], op: PageOpRef<'_>) -> Result<(), String> {
    let n = NodeMut::new(page);
    if !n.view().is_leaf() {
        return Err("page op on a non-leaf page".into());
    }
    let key = match op {
        PageOpRef::Insert { key, .. }
        | PageOpRef::Set { key, .. }
        | PageOpRef::Patch { key, .. }
        | PageOpRef::Remove { key } => key,
    };
    let at = n.view().search(key);
    apply_op_at(page, op, at)
}

/// [`apply_op_ref`] for a caller that has just searched the leaf for the op's key
/// under the same X latch: `at` is [`Node::search`]'s answer (saves the second search
/// of every change).
pub(crate) fn apply_op_at(
    page: &mut [u8],
    op: PageOpRef<'_>,
    at: Result<usize, usize>,
) -> Result<(), String> {
    let mut n = NodeMut::new(page);
    if !n.view().is_leaf() {
        return Err("page op on a non-leaf page".into());
    }
    match op {
        PageOpRef::Insert { key, value } => {
            debug_assert_eq!(at, n.view().search(key));
            let Err(i) = at else {
                return Err("insert of a key already present".into());
            };
            if !fits(&n.view(), key, None, Some(value.bytes)) {
                return Err("insert does not fit the leaf".into());
            }
            n.insert_leaf_value(i, key, value);
        }
        PageOpRef::Set { key, value } => {
            debug_assert_eq!(at, n.view().search(key));
            let Ok(i) = at else {
                return Err("update of an absent key".into());
            };
            if n.overwrite_leaf_value(i, value) {
                return Ok(());
            }
            let old = n.view().value(i);
            if !fits(&n.view(), key, Some(old), Some(value.bytes)) {
                return Err("update does not fit the leaf".into());
            }
            n.remove(i);
            n.insert_leaf_value(i, key, value);
        }
        PageOpRef::Patch { key, delta } => {
            debug_assert_eq!(at, n.view().search(key));
            let Ok(i) = at else {
                return Err("patch of an absent key".into());
            };
            let old = n.view().cell_value(i);
            if old.external {
                return Err("patch of a large value's descriptor".into());
            }
            let new = delta.apply(old.bytes)?;
            // The same length is overwritten in place, as `Set` does, so redo of a patch
            // rebuilds the page the original update made.
            if n.overwrite_leaf_value(i, CellValue::inline(&new)) {
                return Ok(());
            }
            let old = n.view().value(i);
            if !fits(&n.view(), key, Some(old), Some(&new)) {
                return Err("patch does not fit the leaf".into());
            }
            n.remove(i);
            n.insert_leaf_value(i, key, CellValue::inline(&new));
        }
        PageOpRef::Remove { key } => {
            debug_assert_eq!(at, n.view().search(key));
            let Ok(i) = at else {
                return Err("delete of an absent key".into());
            };
            n.remove(i);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::PageId;

    #[test]
    fn ops_apply_exactly_or_fail_loudly() {
        let mut b = vec![0u8; 1024];
        NodeMut::format(&mut b, PageId(4), 0);
        let ins = PageOp::Insert {
            key: b"a".to_vec(),
            value: crate::page::StoredValue::inline(b"1".to_vec()),
        };
        apply_op(&mut b, &ins).unwrap();
        assert!(apply_op(&mut b, &ins).is_err(), "double insert accepted");
        let set = PageOp::Set {
            key: b"a".to_vec(),
            value: crate::page::StoredValue {
                bytes: b"22".to_vec(),
                external: true,
            },
        };
        apply_op(&mut b, &set).unwrap();
        assert_eq!(Node::new(&b).value(0), b"22");
        assert!(Node::new(&b).cell_value(0).external);
        let rm = PageOp::Remove { key: b"a".to_vec() };
        apply_op(&mut b, &rm).unwrap();
        assert!(apply_op(&mut b, &rm).is_err(), "double delete accepted");
        assert!(Node::new(&b).is_empty());
    }

    #[test]
    fn an_update_of_the_same_length_rewrites_the_cell_in_place() {
        let mut b = vec![0u8; 1024];
        NodeMut::format(&mut b, PageId(4), 0);
        for k in [b"a", b"b", b"c"] {
            let ins = PageOp::Insert {
                key: k.to_vec(),
                value: crate::page::StoredValue::inline(b"1234".to_vec()),
            };
            apply_op(&mut b, &ins).unwrap();
        }
        let (free, hole) = (Node::new(&b).free_space(), Node::new(&b).hole());
        let set = |v: &[u8], external| PageOp::Set {
            key: b"b".to_vec(),
            value: crate::page::StoredValue {
                bytes: v.to_vec(),
                external,
            },
        };
        apply_op(&mut b, &set(b"wxyz", true)).unwrap();
        let n = Node::new(&b);
        assert_eq!((n.value(1), n.cell_value(1).external), (&b"wxyz"[..], true));
        assert_eq!((n.free_space(), n.hole()), (free, hole), "not in place");
        assert!(crate::page::validate(&b, PageId(4)).is_ok());
        // Another length moves the cell (its old bytes become a fragment).
        apply_op(&mut b, &set(b"123456", false)).unwrap();
        let n = Node::new(&b);
        assert_eq!(
            (n.value(1), n.cell_value(1).external),
            (&b"123456"[..], false)
        );
        assert_eq!(n.free_space(), free - 2);
        assert_eq!(
            (n.key(0), n.key(1), n.key(2)),
            (&b"a"[..], &b"b"[..], &b"c"[..])
        );
        assert!(crate::page::validate(&b, PageId(4)).is_ok());
    }

    /// Redo of a patch on a leaf: the value it was taken from becomes exactly the new
    /// one, whatever part changed and whether the length did; a value it was not taken
    /// from (a page that disagrees with the log) is refused and left as it was.
    #[test]
    fn a_patch_redoes_exactly_or_fails_loudly() {
        use crate::log_record::Delta;
        use crate::page::StoredValue;
        let old: Vec<u8> = (0..100).collect();
        let mut cases: Vec<Vec<u8>> = Vec::new();
        let mut start = old.clone();
        start[0] = 200; // the first byte
        cases.push(start);
        let mut end = old.clone();
        end[99] = 200; // the last byte
        cases.push(end);
        let mut middle = old.clone();
        middle[40..48].copy_from_slice(&[9; 8]); // a balance in the middle
        cases.push(middle);
        cases.push((100..200).collect()); // every byte
        let mut longer = old.clone();
        longer.splice(50..50, [7u8; 30]); // grows in the middle
        cases.push(longer);
        cases.push(old[..60].to_vec()); // shrinks at the end
        cases.push(old[10..].to_vec()); // shrinks at the start
        cases.push(vec![]); // to nothing
        for new in cases {
            let mut b = vec![0u8; 1024];
            NodeMut::format(&mut b, PageId(4), 0);
            for (k, v) in [(&b"a"[..], &b"before"[..]), (b"k", &old), (b"z", b"after")] {
                let value = StoredValue::inline(v.to_vec());
                apply_op(
                    &mut b,
                    &PageOp::Insert {
                        key: k.to_vec(),
                        value,
                    },
                )
                .unwrap();
            }
            let delta = Delta::between(&old, &new);
            let patch = PageOp::Patch {
                key: b"k".to_vec(),
                delta: delta.clone(),
            };
            apply_op(&mut b, &patch).unwrap();
            let n = Node::new(&b);
            assert_eq!(
                (n.value(0), n.value(1), n.value(2)),
                (&b"before"[..], &new[..], &b"after"[..])
            );
            assert!(!n.cell_value(1).external);
            let before = b.clone();
            if delta.old != delta.new || delta.old_len() != delta.new_len() {
                assert!(apply_op(&mut b, &patch).is_err(), "a patch applied twice");
                assert_eq!(b, before, "a refused patch changed the page");
            }
            let undo = PageOp::Patch {
                key: b"k".to_vec(),
                delta: delta.reversed(),
            };
            apply_op(&mut b, &undo).unwrap();
            assert_eq!(Node::new(&b).value(1), &old[..]);
            let absent = PageOp::Patch {
                key: b"q".to_vec(),
                delta,
            };
            assert!(apply_op(&mut b, &absent).is_err(), "patch of an absent key");
        }
    }
}
