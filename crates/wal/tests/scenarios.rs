//! The WAL's scenario tests, in one test binary: each `tests/*.rs` file here is a module
//! (a test is named `file::test`), and `tests/common` is declared once. One binary
//! instead of one per file: each test crate was compiled and linked on its own, most of
//! CI's build time. The loom models (`tests/loom.rs`) stay a binary of their own: they
//! build only under `--cfg loom`.

mod common;

mod a_callback_that_drops_the_log_on_the_preparer_thread;
mod a_clean_close_keeps_no_spare_segments;
mod a_crash_at_every_step_of_segment_recycling;
mod a_failed_extension_sync_fails_the_daemons_next_sync;
mod a_log_directory_given_twice_under_two_names_is_refused;
mod a_read_only_log_reads_and_changes_nothing;
mod an_archive_mirror_holds_truncation_until_each_upload;
mod an_archive_of_another_log_is_refused;
mod an_archive_symlinked_to_a_log_directory_not_yet_created_is_refused;
mod an_archive_that_is_a_log_directory_under_another_name_is_refused;
mod archive_mirror_review;
mod closing_from_the_preparers_poisoning_callback_while_the_daemon_waits_for_an_extension;
mod conformance;
mod corruption;
mod crash_sweep;
mod crash_sweep_partitioned;
mod extreme_segment_headers_are_corruption;
mod failures;
mod flush_paths;
mod horizontal_partitioning;
mod new_segment_space_is_allocated_not_zero_filled;
mod nozero_review;
mod recovery_refuses_to_open_when_it_cannot_sync;
mod reopen_after_a_failed_fsync_reads_the_device;
mod reopen_after_a_process_kill_syncs_the_cached_tail;
mod ring_review;
mod ring_review_fence;
mod segment_files_start_small_and_grow_ahead_of_the_writer;
mod segments;
mod the_archive_manifest_lists_every_durable_copy;
mod truncated_segments_are_recycled;
mod truncation_at_a_segment_boundary_keeps_the_log_position;
mod truncation_survives_a_failed_segment_removal;
