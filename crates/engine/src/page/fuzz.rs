//! The fuzz entry points of the page checks, node views and compact images (forwarded
//! by `crate::fuzzing` to the fuzz targets; called by the property tests).

use crate::ids::PageId;
use crate::page::{self, Meta, Node, NodeMut, PageType};

/// A page as read from the data file: the checksum, then `validate` against the id the
/// page itself claims, and, if it passes, every accessor the engine uses on it.
pub(crate) fn page(data: &[u8]) {
    let _ = page::checksum_ok(data);
    if data.len() < page::HEADER_LEN {
        return;
    }
    let id = PageId(u64::from_le_bytes(data[8..16].try_into().expect("8 bytes")));
    if let Ok(kind) = page::validate(data, id) {
        read_valid_page(data, kind);
    }
}

/// A compact page image from an `Images` record: the first byte picks the page size
/// (1 KiB to 32 KiB), the rest is the image. An image that expands and validates is read
/// as a page.
pub(crate) fn page_image(data: &[u8]) {
    let Some((&b, image)) = data.split_first() else {
        return;
    };
    let _ = page::image_page_size(image);
    let page_size = page::MIN_PAGE_SIZE << (b % 6);
    if let Ok(p) = page::expand(image, page_size) {
        assert_eq!(p.len(), page_size);
        page(&p);
    }
}

/// Reads `p`, which passed `validate` as `kind`, through every accessor the engine uses
/// on such a page; panics if any of them does, or if the page contradicts itself in a way
/// `validate` promised it does not.
pub(crate) fn read_valid_page(p: &[u8], kind: PageType) {
    let _ = page::page_lsn(p);
    let _ = page::image_lsn(p);
    match kind {
        PageType::Meta => {
            assert!(Meta::page_count(p) >= 2);
        }
        PageType::Leaf | PageType::Internal => {
            let n = Node::new(p);
            assert_eq!(n.is_leaf(), kind == PageType::Leaf);
            let _ = (n.level(), n.link(), n.is_empty(), n.free_space());
            let (hole_start, hole_end) = n.hole();
            assert!(hole_start <= hole_end && hole_end <= p.len());
            for i in 0..n.len() {
                let key = n.key(i);
                let cell = n.cell(i);
                assert!(cell.len() >= key.len());
                if n.is_leaf() {
                    let v = n.cell_value(i);
                    assert_eq!(v.bytes, n.value(i));
                } else {
                    let _ = n.child(i);
                    let _ = n.child_for(key);
                }
                // Keys are strictly increasing, so the search finds each at its slot.
                assert_eq!(n.search(key), Ok(i));
            }
            let _ = n.search(b"");
            let _ = n.search(&[0xFF; 8]);
            if !n.is_leaf() {
                let _ = n.child_for(b"");
            }
            // An insert compacts a page whose gap is too small: a validated page must
            // survive that and stay valid.
            let mut copy = p.to_vec();
            NodeMut::new(&mut copy).compact();
            let id = PageId(u64::from_le_bytes(p[8..16].try_into().expect("8 bytes")));
            assert_eq!(page::validate(&copy, id), Ok(kind));
        }
        PageType::Unformatted => unreachable!("validate refuses unformatted pages"),
    }
}
