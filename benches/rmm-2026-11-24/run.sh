#!/bin/bash
# The runs behind docs/rmm.md's tables: xlat rmm --json on synthetic workloads and on real
# traces. Record the real ones first:
#   for w in numpy-gather xz dict-lookups; do xlat workloads real $w -o $TRACES/$w.xlat; done
set -euo pipefail
XLAT=${XLAT:-.venv/bin/xlat}
TRACES=${TRACES:-out/traces}
OUT=${OUT:-benches/rmm-2026-11-24}
declare -A T=(
  [gups-8g]='workload:gups?size=8GiB&accesses=50000000'
  [bfs-s22]='workload:bfs?scale=22&accesses=50000000'
  [zipf-8g]='workload:zipf?size=8GiB&accesses=50000000'
  [chase-8g]='workload:chase?size=8GiB&accesses=50000000'
  [numpy-gather]=$TRACES/numpy-gather.xlat
  [xz]=$TRACES/xz.xlat
  [dict-lookups]=$TRACES/dict-lookups.xlat
)
for n in numpy-gather xz dict-lookups gups-8g bfs-s22 zipf-8g chase-8g; do
  "$XLAT" rmm --no-progress --json "${T[$n]}" > "$OUT/$n.json"
done
