//! Workloads shared by the tests and the CLI, so both run exactly the same thing: the
//! crash sweep ([`crash::crash_test`]) and the bulk load ([`load::load_verify`]).

pub mod crash;
pub mod fence;
pub mod load;
