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
}
