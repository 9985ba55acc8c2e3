//! Scenario tests that need the crate's private modules (the page format); the others
//! are in `crates/engine/tests`.

mod entry_counts;
mod open_checks_the_data_file_against_control;
