//! The ring's memory. The only `unsafe` in the log buffer lives here.

use crate::Lsn;
use std::cell::UnsafeCell;

/// A power-of-two byte ring indexed by LSN (`lsn mod capacity`).
///
/// Threads write disjoint reserved ranges concurrently and the flush side reads released
/// ranges, so the bytes sit in `UnsafeCell`s and every access states which range it owns.
pub(crate) struct Ring {
    mem: Box<[UnsafeCell<u8>]>,
    mask: u64,
}

// SAFETY: the ring hands out no references; `write` and `read` copy bytes, and their
// contracts require that no two threads touch the same bytes at once (a reserved range
// belongs to its inserter until released; a released range is read only by the flush side
// until it marks it written, after which only a new reservation may touch it).
unsafe impl Sync for Ring {}
// SAFETY: plain bytes, no thread affinity.
unsafe impl Send for Ring {}

impl Ring {
    /// A ring of `capacity` bytes (a power of two).
    pub(crate) fn new(capacity: usize) -> Ring {
        assert!(
            capacity.is_power_of_two(),
            "ring capacity must be a power of two"
        );
        let mem: Box<[UnsafeCell<u8>]> = (0..capacity).map(|_| UnsafeCell::new(0)).collect();
        Ring {
            mem,
            mask: capacity as u64 - 1,
        }
    }

    /// Bytes in the ring.
    pub(crate) fn capacity(&self) -> u64 {
        self.mask + 1
    }

    fn base(&self) -> *mut u8 {
        // `UnsafeCell<u8>` has the layout of `u8`, so the slice is a contiguous byte array.
        UnsafeCell::raw_get(self.mem.as_ptr())
    }

    /// Copies `bytes` into the ring at `lsn`, wrapping at the end.
    ///
    /// # Safety
    /// The caller owns `[lsn, lsn + bytes.len())`: it reserved the range, the flush side has
    /// freed it (`lsn + len <= written + capacity`), and no other thread writes or reads it
    /// until the caller releases it.
    pub(crate) unsafe fn write(&self, lsn: Lsn, bytes: &[u8]) {
        debug_assert!(bytes.len() as u64 <= self.capacity());
        let start = (lsn.0 & self.mask) as usize;
        let first = bytes.len().min(self.capacity() as usize - start);
        // SAFETY: both copies stay inside the allocation (start + first <= capacity, and the
        // wrapped rest is shorter than start); the caller owns these bytes exclusively.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base().add(start), first);
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr().add(first),
                self.base(),
                bytes.len() - first,
            );
        }
    }

    /// Copies the ring's bytes at `[lsn, lsn + out.len())` into `out`.
    ///
    /// # Safety
    /// The range is released and not yet marked written: no thread writes it meanwhile.
    pub(crate) unsafe fn read(&self, lsn: Lsn, out: &mut [u8]) {
        debug_assert!(out.len() as u64 <= self.capacity());
        let start = (lsn.0 & self.mask) as usize;
        let first = out.len().min(self.capacity() as usize - start);
        // SAFETY: in bounds as in `write`; the caller guarantees no concurrent writer.
        unsafe {
            std::ptr::copy_nonoverlapping(self.base().add(start), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(
                self.base(),
                out.as_mut_ptr().add(first),
                out.len() - first,
            );
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn writes_wrap_around_the_end() {
        let r = Ring::new(16);
        // SAFETY: single-threaded test; nothing else touches the ring.
        unsafe {
            r.write(Lsn(12), b"abcdefgh");
            let mut out = [0u8; 8];
            r.read(Lsn(28), &mut out);
            assert_eq!(&out, b"abcdefgh");
            let mut head = [0u8; 4];
            r.read(Lsn(0), &mut head);
            assert_eq!(&head, b"efgh");
        }
    }
}
