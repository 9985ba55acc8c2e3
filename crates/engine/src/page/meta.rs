//! The meta page (page 0): what every other page needs to be found.
//!
//! Body after the header: magic `u64`, page size `u32`, 4 bytes zero, page count `u64`
//! (the allocation high-water mark: pages `0..page_count` exist). Pages are never freed
//! (no merges), so allocation is a bump of `page_count`, logged with the page that uses it.

use crate::ids::PageId;
use crate::page::layout::{format, get_u32, get_u64, put_u32, put_u64, PageType, HEADER_LEN};

const MAGIC: u64 = u64::from_le_bytes(*b"SLUICEDB");
const OFF_MAGIC: usize = HEADER_LEN;
const OFF_PAGE_SIZE: usize = HEADER_LEN + 8;
const OFF_PAGE_COUNT: usize = HEADER_LEN + 16;
/// Bytes of the meta page that carry data (the rest is zero).
pub(crate) const META_USED: usize = HEADER_LEN + 24;

/// Accessors of the meta page.
pub struct Meta;

impl Meta {
    /// Formats page 0 for a database of `page_size` pages holding `page_count` pages.
    pub fn format(b: &mut [u8], page_count: u64) {
        format(b, PageId::META, PageType::Meta, 0);
        put_u64(b, OFF_MAGIC, MAGIC);
        put_u32(b, OFF_PAGE_SIZE, b.len() as u32);
        put_u64(b, OFF_PAGE_COUNT, page_count);
    }
    /// Pages `0..page_count` are allocated.
    pub fn page_count(b: &[u8]) -> u64 {
        get_u64(b, OFF_PAGE_COUNT)
    }
    /// Records a new allocation high-water mark.
    pub fn set_page_count(b: &mut [u8], count: u64) {
        assert!(count >= Meta::page_count(b), "page count must never shrink");
        put_u64(b, OFF_PAGE_COUNT, count);
    }
    pub(crate) fn check(b: &[u8]) -> Result<(), String> {
        if get_u64(b, OFF_MAGIC) != MAGIC {
            return Err("meta page has a bad magic number".into());
        }
        if get_u32(b, OFF_PAGE_SIZE) as usize != b.len() {
            return Err(format!(
                "meta page says page size {} but pages are {}",
                get_u32(b, OFF_PAGE_SIZE),
                b.len()
            ));
        }
        if Meta::page_count(b) < 2 {
            return Err("meta page counts fewer than the two fixed pages".into());
        }
        if b[META_USED..].iter().any(|&x| x != 0) {
            return Err("meta page has bytes past its fields".into());
        }
        Ok(())
    }
}
