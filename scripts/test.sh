#!/usr/bin/env bash
# The project's test command (README, .ci/run): every crate's unit and scenario tests,
# then the loom models of the lock-free protocols.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
