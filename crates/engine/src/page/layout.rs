//! The page header, the checksum and structural validation.

use crate::ids::PageId;

pub(crate) const OFF_CRC: usize = 0;
pub(crate) const OFF_TYPE: usize = 4;
pub(crate) const OFF_LEVEL: usize = 5;
pub(crate) const OFF_NSLOTS: usize = 6;
pub(crate) const OFF_PAGE_ID: usize = 8;
pub(crate) const OFF_LSN: usize = 16;
pub(crate) const OFF_LINK: usize = 24;
pub(crate) const OFF_CELL_START: usize = 32;
pub(crate) const OFF_FRAG: usize = 36;
pub(crate) const OFF_IMAGE_LSN: usize = 40;
/// Bytes of the common page header.
pub const HEADER_LEN: usize = 48;
const _: () = assert!(OFF_FRAG + 4 == OFF_IMAGE_LSN && OFF_IMAGE_LSN + 8 == HEADER_LEN);

/// The smallest page size (small pages make tests split and evict a lot).
pub const MIN_PAGE_SIZE: usize = 1024;
/// The largest page size: slot offsets are `u16`, so a cell must start below 64 KiB.
pub const MAX_PAGE_SIZE: usize = 32 * 1024;
const _: () = assert!(MAX_PAGE_SIZE <= u16::MAX as usize + 1);

/// What a page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageType {
    /// All zeros or never written: no valid content.
    Unformatted,
    /// Page 0: the database's meta page.
    Meta,
    /// A B+tree leaf: sorted (key, value) cells.
    Leaf,
    /// A B+tree internal node: sorted (separator, child) cells plus a leftmost child.
    Internal,
}

impl PageType {
    pub(crate) fn from_byte(b: u8) -> Option<PageType> {
        match b {
            0 => Some(PageType::Unformatted),
            1 => Some(PageType::Meta),
            2 => Some(PageType::Leaf),
            3 => Some(PageType::Internal),
            _ => None,
        }
    }
    pub(crate) fn to_byte(self) -> u8 {
        match self {
            PageType::Unformatted => 0,
            PageType::Meta => 1,
            PageType::Leaf => 2,
            PageType::Internal => 3,
        }
    }
}

pub(crate) fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}
pub(crate) fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}
pub(crate) fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}
pub(crate) fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// The page type byte (or `None` if it is not a known type). Needs `HEADER_LEN` bytes.
pub fn page_type(page: &[u8]) -> Option<PageType> {
    PageType::from_byte(page[OFF_TYPE])
}
/// The page id stored in the header.
pub fn page_id(page: &[u8]) -> PageId {
    PageId(get_u64(page, OFF_PAGE_ID))
}
/// The page LSN: the page reflects every log record that ends at or below it.
pub fn page_lsn(page: &[u8]) -> u64 {
    get_u64(page, OFF_LSN)
}
/// Stamps the page LSN.
pub fn set_page_lsn(page: &mut [u8], lsn: u64) {
    put_u64(page, OFF_LSN, lsn)
}
/// The image LSN: where the last full image of this page was logged (0: none since the
/// page was formatted). Written to disk with the page, so a reload knows it exactly.
pub fn image_lsn(page: &[u8]) -> u64 {
    get_u64(page, OFF_IMAGE_LSN)
}
/// Records that a full image of the page was logged at `lsn`.
pub(crate) fn set_image_lsn(page: &mut [u8], lsn: u64) {
    put_u64(page, OFF_IMAGE_LSN, lsn)
}

fn crc_of(page: &[u8]) -> u32 {
    crc32c::crc32c(&page[OFF_CRC + 4..])
}

/// Writes the checksum into the header; call on the copy that goes to disk.
pub fn seal(page: &mut [u8]) {
    let c = crc_of(page);
    put_u32(page, OFF_CRC, c);
}

/// True if the stored checksum matches the page bytes.
pub fn checksum_ok(page: &[u8]) -> bool {
    page.len() >= HEADER_LEN && get_u32(page, OFF_CRC) == crc_of(page)
}

/// Formats `page` as an empty page of `kind`: zeroes it and writes a fresh header.
pub(crate) fn format(page: &mut [u8], id: PageId, kind: PageType, level: u8) {
    page.fill(0);
    page[OFF_TYPE] = kind.to_byte();
    page[OFF_LEVEL] = level;
    put_u16(page, OFF_NSLOTS, 0);
    put_u64(page, OFF_PAGE_ID, id.0);
    put_u64(page, OFF_LSN, 0);
    put_u64(page, OFF_LINK, PageId::NONE.0);
    put_u32(page, OFF_CELL_START, page.len() as u32);
    put_u32(page, OFF_FRAG, 0);
    put_u64(page, OFF_IMAGE_LSN, 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::validate;

    #[test]
    fn seal_then_verify_and_detect_a_flipped_bit() {
        let mut p = vec![0u8; 4096];
        format(&mut p, PageId(7), PageType::Leaf, 0);
        seal(&mut p);
        assert!(checksum_ok(&p));
        assert_eq!(validate(&p, PageId(7)), Ok(PageType::Leaf));
        assert!(
            validate(&p, PageId(8)).is_err(),
            "misdirected page accepted"
        );
        p[2000] ^= 1;
        assert!(!checksum_ok(&p));
    }

    #[test]
    fn zero_page_is_unformatted_not_valid() {
        let p = vec![0u8; 1024];
        assert!(validate(&p, PageId(0)).is_err());
        assert!(
            !checksum_ok(&p),
            "an all-zero page must not pass its checksum"
        );
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use crate::page::{expand, validate, Node};
    use proptest::prelude::*;

    /// Reads everything a validated node offers; must not panic.
    fn touch(b: &[u8]) {
        let n = Node::new(b);
        for i in 0..n.len() {
            let _ = n.key(i);
            if n.is_leaf() {
                let _ = n.value(i);
            } else {
                let _ = n.child(i);
            }
        }
        let _ = n.search(b"probe");
        let _ = n.free_space();
    }

    proptest! {
        #[test]
        fn validate_never_panics_on_arbitrary_pages(
            kind in 0u8..5, level in 0u8..3, nslots in 0u16..40,
            body in proptest::collection::vec(any::<u8>(), 1024 - HEADER_LEN),
            cell_start in 0u32..1100,
        ) {
            let mut b = vec![0u8; HEADER_LEN];
            b[OFF_TYPE] = kind;
            b[OFF_LEVEL] = level;
            put_u16(&mut b, OFF_NSLOTS, nslots);
            put_u64(&mut b, OFF_PAGE_ID, 5);
            put_u64(&mut b, OFF_LINK, 9);
            put_u32(&mut b, OFF_CELL_START, cell_start);
            b.extend_from_slice(&body);
            if let Ok(PageType::Leaf | PageType::Internal) = validate(&b, PageId(5)) {
                touch(&b);
            }
            let _ = checksum_ok(&b);
        }

        #[test]
        fn expand_never_panics(image in proptest::collection::vec(any::<u8>(), 0..1100)) {
            if let Ok(p) = expand(&image, 1024) {
                prop_assert_eq!(p.len(), 1024);
                if let Ok(PageType::Leaf | PageType::Internal) = validate(&p, page_id(&p)) {
                    touch(&p);
                }
            }
        }
    }
}
