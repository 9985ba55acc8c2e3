//! Applying a [`PageOp`] to a leaf: the one place leaf cells change for a key, shared by
//! normal operation, rollback and redo.

use crate::log_record::PageOp;
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

/// The page operation that takes `key` from `old` to `new` (`None` if nothing changes).
pub(crate) fn op_for<O>(key: &[u8], old: Option<O>, new: Option<CellValue<'_>>) -> Option<PageOp> {
    let key = key.to_vec();
    match (old, new) {
        (None, None) => None,
        (None, Some(v)) => Some(PageOp::Insert {
            key,
            value: v.to_owned(),
        }),
        (Some(_), Some(v)) => Some(PageOp::Set {
            key,
            value: v.to_owned(),
        }),
        (Some(_), None) => Some(PageOp::Remove { key }),
    }
}

/// Applies `op` to a valid leaf. An error (never a panic) if the leaf disagrees with the
/// op — the key's presence is wrong or the cell does not fit — which during redo means
/// the log and the page do not match.
pub(crate) fn apply_op(page: &mut [u8], op: &PageOp) -> Result<(), String> {
    let mut n = NodeMut::new(page);
    if !n.view().is_leaf() {
        return Err("page op on a non-leaf page".into());
    }
    match op {
        PageOp::Insert { key, value } => {
            let Err(i) = n.view().search(key) else {
                return Err("insert of a key already present".into());
            };
            if !fits(&n.view(), key, None, Some(&value.bytes)) {
                return Err("insert does not fit the leaf".into());
            }
            n.insert_leaf_value(i, key, value.as_cell());
        }
        PageOp::Set { key, value } => {
            let Ok(i) = n.view().search(key) else {
                return Err("update of an absent key".into());
            };
            let old = n.view().value(i);
            if !fits(&n.view(), key, Some(old), Some(&value.bytes)) {
                return Err("update does not fit the leaf".into());
            }
            n.remove(i);
            n.insert_leaf_value(i, key, value.as_cell());
        }
        PageOp::Patch { key, delta } => {
            let Ok(i) = n.view().search(key) else {
                return Err("patch of an absent key".into());
            };
            let old = n.view().cell_value(i);
            if old.external {
                return Err("patch of a large value's descriptor".into());
            }
            let new = delta.apply(old.bytes)?;
            if !fits(&n.view(), key, Some(old.bytes), Some(&new)) {
                return Err("patch does not fit the leaf".into());
            }
            n.remove(i);
            n.insert_leaf_value(i, key, CellValue::inline(&new));
        }
        PageOp::Remove { key } => {
            let Ok(i) = n.view().search(key) else {
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
