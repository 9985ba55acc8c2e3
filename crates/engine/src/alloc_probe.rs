//! The unit tests' allocator: the system's, noting the largest single allocation each
//! thread asks for, so that the decoders' property tests can check that no input makes
//! a decoder allocate far beyond its size (a length field claiming 4 GiB must not become
//! a 4 GiB buffer, even where overcommit would let the allocation succeed).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

struct Probe;

fn note(size: usize) {
    // `try_with`: an allocation while the thread's locals are torn down is not noted.
    let _ = LARGEST.try_with(|c| {
        if size > c.get() {
            c.set(size);
        }
    });
}

// SAFETY: every call is forwarded unchanged to `System`; noting a size allocates nothing
// (a const-initialised thread local without a destructor).
unsafe impl GlobalAlloc for Probe {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static PROBE: Probe = Probe;

/// Runs `f` on this thread and returns the largest single allocation it made.
pub(crate) fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.with(|c| c.set(0));
    f();
    LARGEST.with(|c| c.get())
}

/// Runs a decoder's fuzz entry point on `input` and fails if it allocated more than
/// 4 MiB plus 64 bytes per input byte at once (the most any valid input needs: a page of
/// at most 32 KiB, a delta's value of at most 3 MiB, entries a few times their bytes).
pub(crate) fn assert_bounded(input: &[u8], f: impl FnOnce(&[u8])) {
    let bound = (4 << 20) + 64 * input.len();
    let largest = largest_allocation(|| f(input));
    assert!(
        largest <= bound,
        "a {}-byte input made one allocation of {largest} bytes (bound {bound})",
        input.len()
    );
}

#[test]
fn the_probe_sees_a_large_allocation() {
    let n = largest_allocation(|| {
        let v = vec![1u8; 10 << 20];
        std::hint::black_box(&v);
    });
    assert!(n >= 10 << 20, "{n}");
    let r = std::panic::catch_unwind(|| assert_bounded(&[0; 4], |_| drop(vec![0u8; 8 << 20])));
    assert!(r.is_err(), "an 8 MiB allocation for a 4-byte input passed");
}
