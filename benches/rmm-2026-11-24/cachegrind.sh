#!/bin/bash
cd /work/main
B=target/release/examples/simfile; T=target/cachegrind-traces/gups-8g-20m.xlat
run() { local n=$1; shift; printf '%-14s %s\n' "$n" "$(valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null $B $T skylake "$@" 2>&1 | sed -n 's/.*I *refs: *//p' | tr -d ,)"; }
run plain
run eager os.allocation=eager
run rmm os.allocation=eager os.ranges=contiguous 'range_tlb=[{name="range",entries=32,stage=2,latency=9}]'
run ds os.allocation=eager os.ranges=contiguous direct_segment.stage=2 direct_segment.latency=7
run ctlb os.allocation=eager cluster_tlb.entries=512 cluster_tlb.cluster=8 cluster_tlb.stage=2 cluster_tlb.latency=7
run ctlb-demand cluster_tlb.entries=512 cluster_tlb.cluster=8 cluster_tlb.stage=2 cluster_tlb.latency=7
