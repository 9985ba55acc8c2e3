#![no_main]
//! The reader of log-based propagation's sorted runs (header, footer, index, blocks), as is and with its checksums resealed.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice::fuzzing::sorted_run(data);
    sluice::fuzzing::sorted_run_resealed(data);
});
