#![no_main]
//! The engine's log record decoder (`Record::decode`, deltas included).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice::fuzzing::log_record(data);
});
