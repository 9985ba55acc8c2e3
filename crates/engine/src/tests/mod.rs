//! Scenario tests that need the crate's private modules (the page format); the others
//! are in `crates/engine/tests`.

mod a_handle_looked_up_across_a_committed_drop_is_refused;
mod a_put_after_get_for_update_lands_in_the_keys_leaf;
mod commit_times;
mod compaction_never_frees_a_dropped_trees_pages_again;
mod entry_counts;
mod open_checks_the_data_file_against_control;
mod review_agentcpu_remembered_leaf_and_undo;
mod space;
