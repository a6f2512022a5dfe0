#!/usr/bin/env bash
# Host instructions of the simulator on the reference cases (cachegrind counts instructions, not
# seconds: repeatable on this shared machine). Prints one line per case: name, instructions.
#
#   scripts/cachegrind-sim.sh [SIMFILE]     (default: target/release/examples/simfile, built here)
#
# Cases: gups 8 GiB 20 M accesses with 4KB pages and with THP, stream 1 GiB 100 M accesses, each
# on the Skylake and the Haswell preset. Traces are written once to target/cachegrind-traces/.
# To compare two builds, run it with each binary (e.g. one built in a worktree of the base).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
    cargo build --release -q -p xlat-core --example simfile
    bin=target/release/examples/simfile
fi
dir=target/cachegrind-traces
mkdir -p "$dir"
gups="$dir/gups-8g-20m.xlat"
stream="$dir/stream-1g-100m.xlat"
xlat=${XLAT:-.venv/bin/xlat}
[ -s "$gups" ] || "$xlat" convert --no-progress 'workload:gups?size=8GiB&accesses=20000000' "$gups" > /dev/null
[ -s "$stream" ] || "$xlat" convert --no-progress 'workload:stream?size=1GiB&accesses=100000000' "$stream" > /dev/null
run() {
    local name=$1; shift
    local out
    out=$(valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$bin" "$@" 2>&1 >/dev/null)
    printf '%-22s %s\n' "$name" "$(echo "$out" | sed -n 's/.*I *refs: *//p' | tr -d ,)"
}
for cpu in skylake haswell; do
    run "gups-4k-$cpu" "$gups" "$cpu"
    run "gups-thp-$cpu" "$gups" "$cpu" os.policy=thp
    run "stream-$cpu" "$stream" "$cpu"
done
