#![no_main]
//! The WAL segment header decoder (`sluice_wal::segment::decode_header`): 8 bytes of named start, then the header.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_wal::fuzzing::segment_header(data);
});
