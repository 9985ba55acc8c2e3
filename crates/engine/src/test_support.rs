//! Helpers the unit tests share (test builds only). The allocator probe
//! (`alloc_probe`) and the damaging mutations of encodings (`mutations`) that the
//! decoders' property tests use are test-only modules of their own.

/// Cases per property test: `default`, or `PROPTEST_CASES` when set (CI keeps the
/// defaults small so that all property tests together take seconds; raise it locally).
pub(crate) fn prop_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
