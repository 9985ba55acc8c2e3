//! The meta page (page 0): what every other page needs to be found.
//!
//! Body after the header: magic `u64`, page size `u32`, 4 bytes zero, page count `u64`
//! (the allocation high-water mark: pages `0..page_count` exist), the free list's head
//! page `u64` (0: the list is empty) and its length `u64` (free pages, the list's own
//! pages included). A database written before the free list existed has zeros there: an
//! empty list. The list itself is in `crate::space`.

use crate::ids::PageId;
use crate::page::layout::{format, get_u32, get_u64, put_u32, put_u64, PageType, HEADER_LEN};

const MAGIC: u64 = u64::from_le_bytes(*b"SLUICEDB");
const OFF_MAGIC: usize = HEADER_LEN;
const OFF_PAGE_SIZE: usize = HEADER_LEN + 8;
const OFF_PAGE_COUNT: usize = HEADER_LEN + 16;
const OFF_FREE_HEAD: usize = HEADER_LEN + 24;
const OFF_FREE_LEN: usize = HEADER_LEN + 32;
/// Bytes of the meta page that carry data (the rest is zero).
pub(crate) const META_USED: usize = HEADER_LEN + 40;

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
    /// Records a new allocation high-water mark (lower only when compaction returns
    /// the free pages at the file's end, `space::compact`).
    pub fn set_page_count(b: &mut [u8], count: u64) {
        assert!(count >= 2, "the two fixed pages always exist");
        put_u64(b, OFF_PAGE_COUNT, count);
    }
    /// The free list's first page (`None`: the list is empty).
    pub fn free_head(b: &[u8]) -> Option<PageId> {
        match get_u64(b, OFF_FREE_HEAD) {
            0 => None,
            id => Some(PageId(id)),
        }
    }
    /// Free pages, the list's own pages included.
    pub fn free_len(b: &[u8]) -> u64 {
        get_u64(b, OFF_FREE_LEN)
    }
    /// Records the free list's head and length.
    pub fn set_free(b: &mut [u8], head: Option<PageId>, len: u64) {
        put_u64(b, OFF_FREE_HEAD, head.map_or(0, |p| p.0));
        put_u64(b, OFF_FREE_LEN, len);
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
        let count = Meta::page_count(b);
        if let Some(h) = Meta::free_head(b) {
            if h.0 < 2 || h.0 >= count {
                return Err(format!(
                    "meta page: free list head {h} outside pages 2..{count}"
                ));
            }
        }
        if Meta::free_len(b) > count - 2 || (Meta::free_head(b).is_none() && Meta::free_len(b) != 0)
        {
            return Err(format!(
                "meta page: free list of {} pages in a file of {count}",
                Meta::free_len(b)
            ));
        }
        if b[META_USED..].iter().any(|&x| x != 0) {
            return Err("meta page has bytes past its fields".into());
        }
        Ok(())
    }
}
