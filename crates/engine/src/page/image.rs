//! Compact page images for the log: the page without its free gap.
//!
//! A node page's gap between the slot array and the cells is always zero, so an image
//! is `[hole_start u32][hole_len u32]` followed by the bytes before and after the hole
//! (PostgreSQL's full-page-write "hole" compression). A half-full 8 KiB page logs ~4 KiB.

use crate::page::layout::{page_type, PageType, HEADER_LEN};
use crate::page::meta::META_USED;
use crate::page::node::Node;

/// The image of `page` (a validated page) for a log record.
pub fn compress(page: &[u8]) -> Vec<u8> {
    let (start, end) = match page_type(page) {
        Some(PageType::Leaf | PageType::Internal) => Node::new(page).hole(),
        Some(PageType::Meta) => (META_USED, page.len()),
        _ => (page.len(), page.len()),
    };
    debug_assert!(
        page[start..end].iter().all(|&b| b == 0),
        "the hole is not zero"
    );
    let mut out = Vec::with_capacity(8 + page.len() - (end - start));
    out.extend_from_slice(&(start as u32).to_le_bytes());
    out.extend_from_slice(&((end - start) as u32).to_le_bytes());
    out.extend_from_slice(&page[..start]);
    out.extend_from_slice(&page[end..]);
    out
}

/// Rebuilds a page of `page_size` bytes from an image. Never panics: a malformed image
/// is an error (the caller still validates the result as a page).
pub fn expand(image: &[u8], page_size: usize) -> Result<Vec<u8>, String> {
    if image.len() < 8 {
        return Err("page image shorter than its header".into());
    }
    let start = u32::from_le_bytes(image[0..4].try_into().expect("4 bytes")) as usize;
    let hole = u32::from_le_bytes(image[4..8].try_into().expect("4 bytes")) as usize;
    let body = &image[8..];
    let fits = start
        .checked_add(hole)
        .is_some_and(|end| end <= page_size && body.len() + hole == page_size);
    if start < HEADER_LEN || !fits {
        return Err(format!(
            "page image hole {start}+{hole} with {} bytes does not make a {page_size}-byte page",
            body.len()
        ));
    }
    let mut page = vec![0u8; page_size];
    page[..start].copy_from_slice(&body[..start]);
    page[start + hole..].copy_from_slice(&body[start..]);
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::PageId;
    use crate::page::NodeMut;

    #[test]
    fn image_round_trips_and_omits_the_hole() {
        let mut b = vec![0u8; 4096];
        let mut n = NodeMut::format(&mut b, PageId(5), 0);
        n.insert_leaf(0, b"key", b"value");
        let img = compress(&b);
        assert!(
            img.len() < 200,
            "image of a nearly empty page is {} bytes",
            img.len()
        );
        assert_eq!(expand(&img, 4096).unwrap(), b);
        assert!(expand(&img, 8192).is_err());
        assert!(expand(&img[..7], 4096).is_err());
    }
}
