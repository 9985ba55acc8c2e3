#!/usr/bin/env bash
# Object storage for the log archive (`sluice-objstore`, the `object-store` feature):
# lints and tests of the build that has it. Not part of scripts/test.sh: object_store and
# the URL and Unicode crates it pulls in take minutes to build on 2 cores, more than CI's
# budget has left, so the default build leaves the feature out (the archive mirror's seam,
# `sluice_wal::ArchiveMirror`, and its engine option are in the default build and tested
# there). Run this after changing crates/objstore, the archiver or `sluice archive`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL=0
cargo clippy -p sluice-objstore -p sluice-cli --features sluice-cli/object-store --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc -p sluice-objstore --features object-store --no-deps --lib
cargo test -p sluice-objstore --features object-store
cargo test -p sluice-cli --features object-store --test scenarios -- archive restore backup docs
