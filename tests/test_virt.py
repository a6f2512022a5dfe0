"""Nested paging (``[virt]``) against an independent reference of the two-dimensional walk.

The reference below is written from the definition (docs/virtualisation.md), not from the
simulator's code: for every walk xlat made, it works out the loads the walk must make, in
order, from the guest's and the host's page tables, with its own least-recently-used models of
the guest's PSCs (combined entries), the nested TLB and the host's PSCs, and the TLB entry
the walk must fill (the smaller of the two pages). The page tables' contents are what xlat's
loads read (``virt.walk_log``): the reference learns each entry from the load that read it and
computes every address itself (table base + 8 x index, in each dimension); an entry xlat never
loaded but the reference needs fails the test.
"""

from collections import OrderedDict
from pathlib import Path

import pytest
import xlat

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "crates/xlat-trace/tests/corpus/trace/dict-lookups-20k.xlat"
GUEST_BASE = 0x4000_0000_0000
SIZES = {0: 12, 1: 21, 2: 30}  # size index -> shift
LEAF_SIZE = {1: 0, 2: 1, 3: 2}  # leaf level -> size index


class Lru:
    """A fully associative LRU structure of ``n`` entries."""

    def __init__(self, n: int):
        self.n, self.d = n, OrderedDict()

    def get(self, k):
        if k in self.d:
            self.d.move_to_end(k)
            return self.d[k]
        return None

    def put(self, k, v):
        assert k not in self.d
        if len(self.d) >= self.n:
            self.d.popitem(last=False)
        self.d[k] = v


def index(a: int, level: int) -> int:
    return (a >> (12 + 9 * (level - 1))) & 511


class Reference:
    def __init__(self, entries, guest_levels, host_levels, guest_psc, host_psc, ntlb):
        self.mem = entries  # physical address of an entry -> (value, leaf)
        self.gl, self.hl = guest_levels, host_levels
        self.gpsc = {lvl: Lru(n) for lvl, n in guest_psc.items()}
        self.hpsc = {lvl: Lru(n) for lvl, n in host_psc.items()}
        self.ntlb = Lru(ntlb) if ntlb else None

    def entry(self, pa):
        assert pa in self.mem, f"the reference needs the entry at {pa:#x}, which xlat never loaded"
        return self.mem[pa]

    def host_page(self, hroot, hva):
        """A plain walk of the host's tables: (first frame's address, size index)."""
        t = hroot
        for level in range(self.hl, 0, -1):
            v, leaf = self.entry(t + 8 * index(hva, level))
            if leaf:
                return v, LEAF_SIZE[level]
            t = v
        raise AssertionError("no leaf")

    def host_translate(self, hroot, gpa, loads):
        hva = GUEST_BASE + gpa
        base, s = self.host_page(hroot, hva)
        shift = SIZES[s]
        key = (hva >> shift, s)
        if self.ntlb is not None and self.ntlb.get(key) is not None:
            return base | (hva & ((1 << shift) - 1)), s
        level, t = self.hl, hroot
        for lvl in sorted(self.hpsc):
            if s + 1 < lvl <= self.hl:
                hit = self.hpsc[lvl].get(hva >> (12 + 9 * (lvl - 1)))
                if hit is not None:
                    level, t = lvl - 1, hit
                    break
        while True:
            pa = t + 8 * index(hva, level)
            loads.append((2, level, pa))
            v, leaf = self.entry(pa)
            if leaf:
                break
            if level in self.hpsc:
                self.hpsc[level].put(hva >> (12 + 9 * (level - 1)), v)
            t, level = v, level - 1
        if self.ntlb is not None:
            self.ntlb.put(key, base)
        return base | (hva & ((1 << shift) - 1)), s

    def guest_page(self, groot, hroot, va):
        t = groot
        for level in range(self.gl, 0, -1):
            hpa, _ = self._plain_host(hroot, t + 8 * index(va, level))
            v, leaf = self.entry(hpa)
            if leaf:
                return v, LEAF_SIZE[level]
            t = v
        raise AssertionError("no leaf")

    def _plain_host(self, hroot, gpa):
        hva = GUEST_BASE + gpa
        base, s = self.host_page(hroot, hva)
        return base | (hva & ((1 << SIZES[s]) - 1)), s

    def walk(self, va, groot, hroot):
        """The loads of the walk of ``va`` and the entry it fills (frame, size index)."""
        gframe, gs = self.guest_page(groot, hroot, va)
        loads = []
        level, t = self.gl, groot
        for lvl in sorted(self.gpsc):
            if gs + 1 < lvl <= self.gl:
                hit = self.gpsc[lvl].get(va >> (12 + 9 * (lvl - 1)))
                if hit is not None:
                    level, t = lvl - 1, hit
                    break
        while True:
            gpa = t + 8 * index(va, level)
            hpa, _ = self.host_translate(hroot, gpa, loads)
            loads.append((1, level, hpa))
            v, leaf = self.entry(hpa)
            if leaf:
                break
            if level in self.gpsc:
                self.gpsc[level].put(va >> (12 + 9 * (level - 1)), v)
            t, level = v, level - 1
        gpa = gframe | (va & ((1 << SIZES[gs]) - 1))
        hpa, hs = self.host_translate(hroot, gpa, loads)
        s = min(gs, hs)
        return loads, ((hpa & ~((1 << SIZES[s]) - 1)) >> 12, s)


def walks_of(log):
    """xlat's walk log as [(va, guest root, host root, [(dim, level, pa)], (frame, size))]."""
    out = []
    for kind, a, b, c, _d in log:
        if kind == 0:
            out.append([a, b, c, [], None])
        elif kind in (1, 2):
            out[-1][3].append((kind, a, b))
        else:
            out[-1][4] = (a, b)
    return out


PSCS = {"pml4e": 4, "pdpte": 3, "pde": 2}


def settings(guest_psc, host_psc, ntlb, host_policy, guest_policy, levels):
    s = {
        "os.levels": levels,
        "os.policy": guest_policy,
        "virt.host.levels": levels,
        "virt.host.policy": host_policy,
        "virt.host_memory": "160GiB",
        "virt.walk_log": 1_000_000,
        "psc": [{"name": k, "caches": k, "entries": n, "ways": n} for k, n in guest_psc.items()],
    }
    if host_psc:
        s["virt.host_psc"] = [
            {"name": f"h-{k}", "caches": k, "entries": n, "ways": n} for k, n in host_psc.items()
        ]
    if ntlb:
        s["virt.ntlb"] = {"entries": ntlb, "ways": ntlb}
    return s


CASES = [
    # guest PSCs, host PSCs, nested TLB entries, host policy, guest policy, levels
    pytest.param({}, {}, 0, "4k", "4k", 4, id="no-caches"),
    pytest.param({"pde": 4, "pdpte": 2}, {}, 8, "4k", "4k", 4, id="guest-psc+ntlb"),
    pytest.param({"pde": 8}, {"pde": 4, "pdpte": 2, "pml4e": 2}, 16, "thp", "4k", 4, id="all-host-thp"),
    pytest.param({"pde": 8, "pml4e": 2}, {"pdpte": 2}, 4, "4k", "thp", 4, id="guest-thp"),
    pytest.param({"pde": 4}, {"pde": 4}, 8, "1g", "thp", 5, id="5-level-host-1g"),
]


@pytest.mark.parametrize(
    "trace", ["workload:gups?size=256MiB&accesses=6000", str(REAL)], ids=["gups", "dict-lookups"]
)
@pytest.mark.parametrize("gpsc,hpsc,ntlb,hpol,gpol,levels", CASES)
def test_every_walk_makes_the_reference_loads_in_order(trace, gpsc, hpsc, ntlb, hpol, gpol, levels):
    r = xlat.simulate(trace, cpu="skylake", set=settings(gpsc, hpsc, ntlb, hpol, gpol, levels))
    walks = walks_of(r.walk_log)
    assert len(walks) == r.counters["walker.walks"] > 100
    mem = {}
    for kind, _a, b, c, d in r.walk_log:
        if kind in (1, 2):
            assert mem.setdefault(b, (c, d)) == (c, d), "an entry changed between loads"
    ref = Reference(
        mem,
        levels,
        levels,
        {PSCS[k]: n for k, n in gpsc.items()},
        {PSCS[k]: n for k, n in hpsc.items()},
        ntlb,
    )
    for i, (va, groot, hroot, loads, filled) in enumerate(walks):
        want, entry = ref.walk(va, groot, hroot)
        assert loads == want, f"walk {i} of {va:#x}"
        assert filled == entry, f"walk {i} of {va:#x}: the TLB entry"
    c = r.counters
    assert sum(len(w[3]) for w in walks) == c["walker.loads"]
    assert sum(1 for w in walks for x in w[3] if x[0] == 2) == c["walker.loads.host"]


def test_walk_log_is_off_by_default_and_the_cli_prints_both_dimensions(xlat_cli):
    r = xlat.simulate("workload:gups?size=64MiB&accesses=2000", config="virt/zen4")
    assert r.walk_log is None
    out = xlat_cli("sim", "--config", "virt/zen4", "workload:gups?size=64MiB&accesses=2000").stdout
    for row in (
        "guest loads per walk",
        "host loads per walk",
        "VM exits (host faults)",
        "nested TLB hit ratio",
    ):
        assert row in out, row


@pytest.mark.parametrize(
    "args,sentence",
    [
        (
            ["--config", "virt/skylake", "--set", "virt.host_memory=32GiB"],
            "does not fit in the host's (virt.host_memory = 34359738368 bytes)",
        ),
        (
            ["--config", "hashed/cuckoo", "--set", "hashed_pt.ways=0"],
            "hashed_pt.ways = 0 must be between 2 and 8",
        ),
        (["--config", "virt/skylake", "--set", "virt.host.levels=0"], "virt.host.levels = 0 must be 4 or 5"),
        (
            ["--config", "virt/skylake", "--set", "virt.host_hashed.kind=cuckoo"],
            "virt.host_hashed has no page-table levels for virt.host_psc to cache",
        ),
    ],
)
def test_bad_input_is_one_sentence_and_a_non_zero_exit(xlat_cli, args, sentence):
    r = xlat_cli("sim", *args, "workload:gups?size=64MiB&accesses=1000", check=False)
    assert r.returncode == 1, r.stderr
    said = r.stderr.strip()
    assert said.startswith("xlat: error: ") and sentence in said and "Traceback" not in said, said
    assert len(said.splitlines()) == 1, said
