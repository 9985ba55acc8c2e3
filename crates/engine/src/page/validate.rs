//! Structural validation of a whole page: the header (layout), then the body by its type
//! (the meta page or a node). Above the three, so that the layout, which they read their
//! fields from, imports neither of them.

use crate::ids::PageId;
use crate::page::layout::{
    image_lsn, page_id, page_lsn, page_type, PageType, MAX_PAGE_SIZE, MIN_PAGE_SIZE, OFF_TYPE,
};
use crate::page::meta::Meta;
use crate::page::node::Node;

/// Checks that `page` is a well-formed page `expected` (the checksum is checked
/// separately by [`checksum_ok`](crate::page::checksum_ok), because images in log records carry none). After this
/// returns `Ok`, every accessor of [`Node`] and [`Meta`] is panic-free on the bytes.
/// Never panics, whatever the bytes.
pub fn validate(page: &[u8], expected: PageId) -> Result<PageType, String> {
    let size = page.len();
    if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&size) || !size.is_power_of_two() {
        return Err(format!("page size {size} is not a power of two in range"));
    }
    let Some(kind) = page_type(page) else {
        return Err(format!("unknown page type {}", page[OFF_TYPE]));
    };
    if kind == PageType::Unformatted {
        return Err("page is unformatted".into());
    }
    if page_id(page) != expected {
        return Err(format!(
            "page holds id {} but was read as {expected}",
            page_id(page)
        ));
    }
    // An image record is applied to the page it carries, so its LSN is below the page's
    // (both are 0 only on a page formatted in memory and not yet logged).
    let (image, lsn) = (image_lsn(page), page_lsn(page));
    if image >= lsn && (image, lsn) != (0, 0) {
        return Err(format!("image LSN {image} is not below the page LSN {lsn}"));
    }
    match kind {
        PageType::Meta => Meta::check(page),
        PageType::Leaf | PageType::Internal => Node::check(page),
        PageType::Unformatted => unreachable!("handled above"),
    }
    .map(|()| kind)
}
