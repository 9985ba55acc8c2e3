#![no_main]
//! The page checks (`checksum_ok`, `validate`) and, on a page that passes, every `Node`/`Meta` accessor.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice::fuzzing::page(data);
});
