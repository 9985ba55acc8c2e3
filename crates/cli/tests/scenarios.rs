//! The command line's tests, in one test binary: each `tests/*.rs` file here is a module (a test is
//! named `file::test`), and the helpers under `tests/*/mod.rs` are declared once.
//! One binary instead of one per file: each test crate was compiled and linked on its
//! own, most of CI's build time.

mod common;

mod a_backup_label_with_absurd_values_is_damage_not_an_abort;
mod backup_cli;
mod bad_arguments;
mod bench_output_a_newcomer_can_read;
mod bench_reuse;
mod commit_sweep_bad_flags;
mod compact_cli;
mod compare_cli;
mod compare_peers;
mod compare_picks_each_postgres_variants_best_client_count;
mod crash_cluster_cli;
mod crash_history_cli;
mod crash_kill_cli;
mod crash_swarm_cli;
mod docs_do_not_rot;
mod flush_path_cli;
mod hardening;
mod log_insert_cli;
mod odd_inputs;
mod operator_tools;
mod partition_cli;
mod peer_kill_durability;
mod plan_cli;
mod propagation_cli;
mod read_only_tools_open_any_crashed_database;
mod report_cli;
mod restore_bench_cli;
mod restore_progress_review;
mod stats_shows_leaf_fill;
