#!/usr/bin/env bash
# Regression diff of the simulator's results: runs the matrix of
# crates/xlat-core/examples/regress/ (every preset x 4KB/THP/mosaic x stream, gups, chase, zipf,
# bfs x LRU/tree-PLRU/FIFO/random x data through the caches off/on) with the working tree and
# with a base commit (default: where the current branch left main), and fails unless the result
# JSON is byte-identical, showing the first difference. (`make test` checks the same matrix
# against the digests checked in: crates/xlat-core/tests/regress.rs; this script shows what
# changed.)
#
#   scripts/sim-regress.sh [BASE]          (XLAT_REGRESS_ONLY=gups: one workload only)
#
# The base's output is computed once, by building the same example file in a temporary
# worktree of BASE, and kept in target/sim-regress/<commit>[-<only>].txt.
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(git rev-parse "${1:-$(git merge-base HEAD main)}")
only=${XLAT_REGRESS_ONLY:-}
dir=target/sim-regress
mkdir -p "$dir"
ref="$dir/$base${only:+-$only}.txt"
if [ ! -s "$ref" ]; then
    wt="$dir/base-$base"
    rm -rf "$wt"
    git worktree add --detach "$wt" "$base" > /dev/null
    mkdir -p "$wt/crates/xlat-core/examples"
    rm -rf "$wt/crates/xlat-core/examples/regress.rs" "$wt/crates/xlat-core/examples/regress"
    cp -r crates/xlat-core/examples/regress "$wt/crates/xlat-core/examples/"
    (cd "$wt" && CARGO_TARGET_DIR="$PWD/../target" cargo build --release -q -p xlat-core --example regress)
    "$dir/target/release/examples/regress" > "$ref.tmp"
    mv "$ref.tmp" "$ref"
    git worktree remove --force "$wt"
fi
cargo build --release -q -p xlat-core --example regress
new="$dir/new${only:+-$only}.txt"
target/release/examples/regress > "$new"
if cmp -s "$ref" "$new"; then
    echo "sim-regress: $(grep -c '^===' "$new") cases byte-identical to $(git rev-parse --short "$base")"
else
    echo "sim-regress: results differ from $(git rev-parse --short "$base"); first differing case:" >&2
    diff "$ref" "$new" | head -20 >&2
    line=$(cmp "$ref" "$new" | sed -n 's/.* line \([0-9]*\).*/\1/p')
    head -n "${line:-1}" "$new" | grep '^===' | tail -1 >&2
    exit 1
fi
