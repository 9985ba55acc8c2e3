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
        let leaf = self.descend_recording(root, key, Some(&mut path))?;
        Ok((path, leaf))
    }

    /// The leaf for `key`, pinned, without the path (every operation but a split): no
    /// allocation per descent.
    pub(crate) fn leaf_for(&self, root: PageId, key: &[u8]) -> Result<PageRef<'_>> {
        self.descend_recording(root, key, None)
    }

    /// The descent of [`Btree::descend`], pushing each page id onto `path` if given.
    fn descend_recording(
        &self,
        root: PageId,
        key: &[u8],
        mut path: Option<&mut Vec<PageId>>,
    ) -> Result<PageRef<'_>> {
        let mut id = root;
        let mut level: Option<u8> = None;
        for _ in 0..MAX_DEPTH {
            if let Some(path) = path.as_deref_mut() {
                path.push(id);
            }
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
                None => return Ok(p),
                Some(child) => id = child,
            }
        }
        Err(Error::Corruption(format!(
            "tree {root} deeper than {MAX_DEPTH}"
        )))
    }
}
