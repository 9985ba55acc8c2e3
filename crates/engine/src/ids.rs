//! Identifiers that must not be mixed up: pages and transactions.

use std::fmt;

/// The number of a page in the data file (its byte offset is `id * page_size`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PageId(pub u64);

impl PageId {
    /// Page 0 holds the database's meta page (page size, allocation high-water mark).
    pub const META: PageId = PageId(0);
    /// Page 1 is the root of the catalog tree (table name -> root page).
    pub const CATALOG: PageId = PageId(1);
    /// "No page": the end of a leaf chain. Never a real page (the data file would have
    /// to be 2^64 pages long).
    pub const NONE: PageId = PageId(u64::MAX);

    /// The page number as a plain integer.
    pub const fn get(self) -> u64 {
        self.0
    }
    /// True unless this is [`PageId::NONE`].
    pub const fn is_some(self) -> bool {
        self.0 != u64::MAX
    }
}

impl fmt::Debug for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_some() {
            write!(f, "P{}", self.0)
        } else {
            write!(f, "P-")
        }
    }
}

impl fmt::Display for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A transaction's number, unique for the life of a database (recovery restarts the
/// counter above every number it found in the log).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TxnId(pub u64);

impl TxnId {
    /// The number as a plain integer.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}", self.0)
    }
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
