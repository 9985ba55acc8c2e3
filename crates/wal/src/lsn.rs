//! Log sequence numbers.

use std::fmt;

/// A log sequence number: the byte offset of a position in the log stream.
///
/// The log stream is one contiguous byte sequence split into fixed-size segment files; an
/// `Lsn` names a byte in it. A record's LSN is the offset of its first frame byte; its end
/// LSN is the offset just past its frame. "Durable up to L" means every byte below L is on
/// disk.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    /// The first position of a new log.
    pub const ZERO: Lsn = Lsn(0);
    /// The offset as a plain number.
    pub const fn get(self) -> u64 {
        self.0
    }
    /// This LSN advanced by `bytes`.
    pub const fn add(self, bytes: u64) -> Lsn {
        Lsn(self.0 + bytes)
    }
}

impl fmt::Debug for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lsn({})", self.0)
    }
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
