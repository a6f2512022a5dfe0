#!/bin/bash
# Wall time of the RMM designs against the plain Skylake configuration, alternated pair by pair
# with farm-bench (medians; docs/rmm.md "Cost"). Each design as configs/rmm/ configures it on
# top of the same core: eager paging, then its structure.
#   benches/rmm-2026-11-24/overhead.sh GUPS_TRACE REAL_TRACE [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p xlat-core --example simfile
B=target/release/examples/simfile
RUNS=${3:-5}
declare -A D=(
  [rmm]="os.allocation=eager os.ranges=contiguous range_tlb=[{name=\"range\",entries=32,stage=2,latency=9}]"
  [ctlb]="os.allocation=eager cluster_tlb.entries=512 cluster_tlb.cluster=8 cluster_tlb.stage=2 cluster_tlb.latency=7"
  [ds]="os.allocation=eager os.ranges=contiguous direct_segment.stage=2 direct_segment.latency=7"
  [ctlb-demand]="cluster_tlb.entries=512 cluster_tlb.cluster=8 cluster_tlb.stage=2 cluster_tlb.latency=7"
)
for t in "$1" "$2"; do
  for d in rmm ctlb ds ctlb-demand; do
    echo "== $(basename "$t") $d: ${D[$d]}"
    # (The design's settings are single words: farm-bench splits --vs as a shell does.)
    farm-bench -n "$RUNS" --timeout 900 --vs "$B $t skylake" -- $B "$t" skylake ${D[$d]}
  done
done
