#!/bin/bash
# The hybrid configurations against plain, paired wall clock (docs/rainbow.md, "Speed"):
#   benches/hybrid_pairs.sh WORKLOAD CONFIG   (CONFIG: a configs/rainbow/*.toml name, e.g. rainbow)
# farm-bench runs CONFIG and the plain configuration (Skylake, data through the caches) in turn,
# A B A B ..., 9 pairs after a warm-up; each run prints its timed pass's rate (simfile, warm); the
# ratio CONFIG / plain is taken pair by pair and its median printed. Build simfile first
# (cargo build --release -p xlat-core --example simfile).
w=$1; c=$2; a=/tmp/pairA.$$; b=/tmp/pairB.$$; rm -f $a $b
cd "$(dirname "$0")/.."; root=$PWD
sim=$root/target/release/examples/simfile
printf '#!/bin/sh\nexec %s "%s" %s sim.data_through_caches=true >>%s 2>&1\n' "$sim" "$w" "$root/configs/rainbow/$c.toml" "$a" > /tmp/runA.$$.sh
printf '#!/bin/sh\nexec %s "%s" skylake sim.data_through_caches=true >>%s 2>&1\n' "$sim" "$w" "$b" > /tmp/runB.$$.sh
chmod +x /tmp/runA.$$.sh /tmp/runB.$$.sh
XLAT_SIMFILE_WARM=1 farm-bench -n 9 --timeout 1200 --vs "/tmp/runB.$$.sh" -- /tmp/runA.$$.sh > /dev/null 2>&1
python3 - "$a" "$b" "$c" "$w" <<'PY'
import sys, statistics
r = lambda f: [float(l.split(", ")[-1].split()[0]) for l in open(f) if "acc/s" in l]
A, B = r(sys.argv[1]), r(sys.argv[2])
ratios = [x / y for x, y in zip(A[1:], B[1:])]  # (the first run of each is farm-bench's warm-up)
print(f"{sys.argv[4][9:30]:22} {sys.argv[3]:14} {statistics.median(A[1:]):7.2f} vs plain {statistics.median(B[1:]):7.2f} M acc/s; paired ratio median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}, n={len(ratios)})")
PY
rm -f $a $b /tmp/runA.$$.sh /tmp/runB.$$.sh
