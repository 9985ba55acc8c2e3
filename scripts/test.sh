#!/usr/bin/env bash
# The project's test command (README, .ci/run): every crate's unit and scenario tests,
# then the loom models of the lock-free protocols.
set -euo pipefail
cd "$(dirname "$0")/.."
# Incremental state is for edit-compile loops; for one full build it only costs disk.
export CARGO_INCREMENTAL=0
# Two test threads per core: most tests wait (on fsyncs, timers, their own client
# threads) far more than they compute. On 2 cores the engine's scenarios took 177 s with
# 2 threads and 137 s with 4, for the same CPU time. RUST_TEST_THREADS set by the caller
# wins.
RUST_TEST_THREADS="${RUST_TEST_THREADS:-$((2 * $(nproc)))}" cargo test --workspace --exclude sluice-raft
# The replication tests keep one thread per core (cargo's default): their clusters elect
# leaders on 300-600 ms timeouts, and with two threads per core (92 s instead of 153 s) a
# starved leader lost its term between its election and a test's first write (CI:
# review2_each_batch_..., NotLeader with no leader known).
cargo test -p sluice-raft

# Loom models of every log-buffer insertion algorithm and of durable notification
# (crates/wal/tests/loom.rs): about a minute on 2 cores, plus the build. `--cfg loom`
# rebuilds every dependency, so the models get a target directory of their own.
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
  CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-${CARGO_TARGET_DIR:-target}/loom}" \
  cargo test -p sluice-wal --release --test loom
