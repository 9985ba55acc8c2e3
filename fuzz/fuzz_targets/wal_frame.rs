#![no_main]
//! The WAL frame decoder (`sluice_wal::frame::decode`): 8 bytes of LSN, then the frame.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_wal::fuzzing::frame(data);
});
