//! Pages: the on-disk layout, slotted B+tree nodes, the meta page, compact images, and
//! the size limits the layout puts on keys and values (`limits.rs`).
//!
//! Every page starts with the same 48-byte header:
//!
//! | offset | size | field                                                         |
//! |-------:|-----:|---------------------------------------------------------------|
//! | 0      | 4    | CRC32C of bytes 4.. (written on every page write)             |
//! | 4      | 1    | page type (0 unformatted, 1 meta, 2 leaf, 3 internal)         |
//! | 5      | 1    | level (0 for leaves, height above the leaves otherwise)       |
//! | 6      | 2    | slot count                                                    |
//! | 8      | 8    | page id (a misdirected write is caught by it)                 |
//! | 16     | 8    | page LSN: the page reflects the log up to here (a record end) |
//! | 24     | 8    | link: next leaf (leaves) or leftmost child (internal nodes)   |
//! | 32     | 4    | cell start: the lowest byte used by cells                     |
//! | 36     | 4    | fragmented bytes: garbage between cells, reclaimed by compact |
//! | 40     | 8    | image LSN: the last full-page-image record of this page       |

pub(crate) mod fuzz;
mod image;
mod layout;
mod limits;
mod meta;
pub(crate) mod node;
#[cfg(test)]
pub(crate) mod tests_prop;
mod validate;

pub use image::{compress, expand, image_page_size};
pub(crate) use layout::set_image_lsn;
pub use layout::{
    checksum_ok, image_lsn, page_lsn, page_type, seal, set_page_lsn, PageType, HEADER_LEN,
    MAX_PAGE_SIZE, MIN_PAGE_SIZE,
};
pub use limits::Limits;
pub(crate) use limits::{chunk_size, CHUNK_KEY_OVERHEAD, DESC_LEN, MAX_DEPTH};
pub use meta::Meta;
pub use node::{CellValue, Node, NodeMut, StoredValue};
pub use validate::validate;
