#![no_main]
//! The control file decoder (`Control::decode`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice::fuzzing::control(data);
});
