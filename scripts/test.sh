#!/usr/bin/env bash
# The project's test command (README, .ci/run): every crate's unit and scenario tests,
# then the loom models of the lock-free protocols.
set -euo pipefail
cd "$(dirname "$0")/.."
# Incremental state is for edit-compile loops; for one full build it only costs disk.
export CARGO_INCREMENTAL=0
# Two test threads per core: most tests wait (on fsyncs, elections, timers, their own
# client threads) far more than they compute. On 2 cores, the replication tests took 153 s
# with 2 threads and 92 s with 4, the engine's scenarios 177 s and 137 s; the CPU time
# was the same. RUST_TEST_THREADS set by the caller wins.
RUST_TEST_THREADS="${RUST_TEST_THREADS:-$((2 * $(nproc)))}" cargo test --workspace

# Loom models of every log-buffer insertion algorithm and of durable notification
# (crates/wal/tests/loom.rs): about a minute on 2 cores, plus the build. `--cfg loom`
# rebuilds every dependency, so the models get a target directory of their own.
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
  CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-${CARGO_TARGET_DIR:-target}/loom}" \
  cargo test -p sluice-wal --release --test loom
