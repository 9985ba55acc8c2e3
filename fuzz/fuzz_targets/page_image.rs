#![no_main]
//! Compact page images (`expand`, `image_page_size`): a byte of page size, then the image.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice::fuzzing::page_image(data);
});
