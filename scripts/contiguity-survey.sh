#!/bin/sh
# Live contiguity of a few real programs (docs/contiguity.md): each runs under
# `xlat contiguity --interval 1 --json`, one JSON file per program in OUT (default out/contiguity).
# Root needed. Inputs are generated in OUT the first time (about 400 MB).
set -eu
OUT=${1:-out/contiguity}
PY=${PY:-$(pwd)/.venv/bin/python}  # absolute: the script works in OUT
XLAT="$PY -m xlat contiguity --interval ${INTERVAL:-1} --json"
mkdir -p "$OUT"
cd "$OUT"
[ -f lines.txt ] || "$PY" - <<'PYEOF'
import random
random.seed(1)
words = ["".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(3, 12))) for _ in range(50000)]
with open("lines.txt", "w") as f:  # 6M lines, about 300 MB
    for _ in range(6_000_000):
        f.write(" ".join(random.choice(words) for _ in range(6)) + "\n")
with open("big.c", "w") as f:  # 4000 small functions for cc1
    f.write("int printf(const char *, ...);\nvoid *memset(void *, int, unsigned long);\n")  # cc1 alone has no include path
    for i in range(4000):
        f.write(f"static int f{i}(int *a, int n) {{ int s = {i};\n"
                f"  for (int k = 0; k < n; k++) {{ s += a[k] * {i % 7 + 1} ^ (s >> 3); if (s & {i}) s -= a[(k + {i}) % n]; }}\n"
                f"  switch (s & 7) {{ case 0: s += {i}; break; case 1: s ^= {i * 3}; break; case 2: s -= 5; break; default: s *= 3; }}\n"
                "  return s; }\n")
    f.write("int main(void) { int a[64]; memset(a, 1, sizeof a); long t = 0;\n")
    f.writelines(f"  t += f{i}(a, 64);\n" for i in range(4000))
    f.write('  printf("%ld\\n", t); return 0; }\n')
with open("big.rs", "w") as f:  # 1500 small functions for rustc
    for i in range(1500):
        f.write(f"#[inline(never)]\nfn f{i}(v: &mut Vec<u64>, n: u64) -> u64 {{ let mut s: u64 = {i};\n"
                f"    for k in 0..n {{ v.push(k ^ s); s = s.wrapping_mul({i % 13 + 3}).wrapping_add(v[(k as usize) % v.len()]); }}\n"
                f"    match s % 5 {{ 0 => s + {i}, 1 => s ^ {i * 7}, 2 => s.rotate_left(3), _ => s / 3 + 1 }} }}\n")
    f.write("fn main() { let mut v = Vec::new(); let mut t = 0u64;\n")
    f.writelines(f"    t = t.wrapping_add(f{i}(&mut v, 16));\n" for i in range(1500))
    f.write('    println!("{}", t); }\n')
with open("numpy1g.py", "w") as f:  # 1 GiB of float64, written, then scaled for 12 s
    f.write("import time\nimport numpy as np\na = np.ones(1 << 27)\nt = time.time()\n"
            "while time.time() - t < 12:\n    a *= 1.0000001\nprint(a[:: 1 << 20].sum())\n")
with open("touch.py", "w") as f:  # SIZE MiB of anonymous memory, written, with or without THP
    f.write("import mmap, sys, time\nn = int(sys.argv[1]) << 20\n"
            "m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n"
            "if sys.argv[2] == 'madvise':\n    m.madvise(mmap.MADV_HUGEPAGE)\n"
            "for i in range(0, n, 4096):\n    m[i] = 1\ntime.sleep(3)\n")
PYEOF
[ -f xzin.txt ] || head -c 80M lines.txt > xzin.txt
$XLAT -- "$PY" touch.py 512 madvise > anon-512m-madvise.json
$XLAT -- "$PY" touch.py 512 plain > anon-512m-plain.json
$XLAT -- "$PY" numpy1g.py > numpy-1g.json
$XLAT -- xz -9 -T1 -k -f xzin.txt > xz-9.json
$XLAT -- sort -S 1G --parallel=1 -o sorted.txt lines.txt > sort.json
$XLAT -- "$(gcc -print-prog-name=cc1)" -quiet -O2 big.c -o big.s > cc1.json
$XLAT -- rustc -C opt-level=2 -C codegen-units=1 big.rs -o big-rs > rustc.json
