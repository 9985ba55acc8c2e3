//! The test kit's sweeps and checkers, in one test binary: each `tests/*.rs` file here is a module (a test is
//! named `file::test`).
//! One binary instead of one per file: each test crate was compiled and linked on its
//! own, most of CI's build time.

mod every_test_file_is_compiled;
mod history_checker_names_every_anomaly_class;
mod history_is_serializable_under_every_protocol_strategy_and_page_size;
mod no_crate_has_an_import_circle;
mod swarm;
