//! Finding the leaf for a key.

use crate::btree::Btree;
use crate::btree::MAX_DEPTH;
use crate::buffer_pool::PageRef;
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::page::{page_type, Node, PageType};

impl Btree<'_> {
    /// The node of a latched, valid page (an error if it is not a B+tree node).
    pub(crate) fn node_of<'b>(bytes: &'b [u8], id: PageId) -> Result<Node<'b>> {
        match page_type(bytes) {
            Some(PageType::Leaf | PageType::Internal) => Ok(Node::new(bytes)),
            t => Err(Error::Corruption(format!(
                "page {id} is {t:?} where a B+tree node was expected"
            ))),
        }
    }

    /// The path from `root` to the leaf for `key` (page ids, root first), with the leaf
    /// pinned. The caller holds the tree latch (shared or exclusive), so internal nodes
    /// cannot change during the descent.
    pub(crate) fn descend(&self, root: PageId, key: &[u8]) -> Result<(Vec<PageId>, PageRef<'_>)> {
        let mut path = Vec::with_capacity(8);
        let mut id = root;
        let mut level: Option<u8> = None;
        loop {
            if path.len() >= MAX_DEPTH {
                return Err(Error::Corruption(format!(
                    "tree {root} deeper than {MAX_DEPTH}"
                )));
            }
            path.push(id);
            let p = self.store.pool.fetch(id)?;
            let next = {
                let g = p.read_valid()?;
                let n = Self::node_of(&g, id)?;
                if let Some(above) = level {
                    if n.level() + 1 != above {
                        return Err(Error::Corruption(format!(
                            "page {id} at level {} below a level-{above} node",
                            n.level()
                        )));
                    }
                }
                level = Some(n.level());
                if n.is_leaf() {
                    None
                } else {
                    Some(n.child_for(key))
                }
            };
            match next {
                None => return Ok((path, p)),
                Some(child) => id = child,
            }
        }
    }
}
