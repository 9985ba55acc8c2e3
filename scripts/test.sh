#!/usr/bin/env bash
# The project's test command (README, .ci/run): every crate's unit and scenario tests,
# then the loom models of the lock-free protocols.
set -euo pipefail
cd "$(dirname "$0")/.."
# Incremental state is for edit-compile loops; for one full build it only costs disk.
export CARGO_INCREMENTAL=0
cargo test --workspace

# Loom models of every log-buffer insertion algorithm and of durable notification
# (crates/wal/tests/loom.rs): about a minute on 2 cores, plus the build. `--cfg loom`
# rebuilds every dependency, so the models get a target directory of their own.
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
  CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-${CARGO_TARGET_DIR:-target}/loom}" \
  cargo test -p sluice-wal --release --test loom
