#![no_main]
//! The log archive's run reader (header, footer, index, blocks), as is and with its checksums resealed.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice::fuzzing::archive_run(data);
    sluice::fuzzing::archive_run_resealed(data);
});
