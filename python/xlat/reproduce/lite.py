"""Karakostas 2016, chapter 5: Lite, TLB_Lite and RMM_Lite (energy-efficient address
translation). Every finding of sections 5.1, 5.3, 5.4 and 5.6 (Figures 5.2, 5.4, 5.10-5.13,
Tables 5.5 and 5.6) against xlat's figures on the chapter's Sandy Bridge TLBs
(``configs/lite/*.toml``), with the document's own models: Table 5.3's dynamic energy over Table
5.2's values (:mod:`xlat.energy`, walk loads as L1 reads) and its cycles (7 per L1-TLB miss, 50
per L2-TLB miss).

Energy from a sweep row: a row carries every counter, the derived figures and the configuration
(``config_json``) but not the run's ``epochs["lite"]`` series, which ``xlat.energy`` reads to
split an L1 TLB's lookups and fills by active ways. The cumulative ``epoch.lite.<tlb>.lookups_wN``
and ``fills_wN`` counters (every complete interval) and the final ``ways`` (the rest of the run)
give the same split, so :func:`energy_of` passes them as ``active_ways`` and the *dynamic* energy
is exactly ``xlat sim --energy``'s (checked against a whole run). What the row cannot give is each
stretch's cycles, so leakage would be charged at the full structure; no figure here uses leakage.

Means over programs are means of per-program ratios, over the TLB-intensive programs (more than 5
L1-TLB misses per kilo-instruction with 4KB pages, section 5.5) as in Figure 5.10, or over all when
none is; section 5.6.2's "other workloads" are the remaining programs.

Ablations (variants that remove a suspected cause of a difference; docs/lite.md, issue 34):
- ``RMM, no promotion`` (``os.eager_promote=false``), ``RMM, any placement``
  (``os.eager_placement=any``) and ``RMM, 4KB fill`` (a range hit fills a 4KB entry): the modelling
  defects issue 34 fixed, each undone alone;
- ``TLB_Lite, minimum reference`` (``lite.reference=minimum``): Lite compares an interval with the
  lowest MPKI of the run, as the pseudocode reads, instead of the previous interval;
- ``RMM_Lite, eager files`` (``os.eager_files=true``): eager paging backs file mappings too, closer
  to the document's perfect eager paging;
- ``RMM_Lite, fragmented`` (half of the 2MB blocks pinned): less contiguity, as the document's
  actual eager paging under Pin (section 5.6.2, Figure 5.13).
"""

from __future__ import annotations

import json
from typing import Any

from xlat.reproduce import Data, Document, Finding, Program, Report, Table, Variant
from xlat.reproduce.fmt import mean as _mean
from xlat.reproduce.fmt import pct

#: Variant name -> configs/lite file.
CONFIGS = {
    "4KB": "4k",
    "THP": "thp",
    "TLB_Lite": "tlb-lite",
    "RMM": "rmm",
    "RMM+L1range": "rmm-l1",
    "RMM_Lite": "rmm-lite",
    "TLB_PP": "tlb-pp",
}
#: Extra variants: name -> (configs/lite file, --set overrides, ablation text or "").
EXTRA = {
    "THP, L1-4KB 32x2": ("thp", ("tlb.l1d-4k.entries=32", "tlb.l1d-4k.ways=2"), ""),
    "THP, L1-4KB 16x1": ("thp", ("tlb.l1d-4k.entries=16", "tlb.l1d-4k.ways=1"), ""),
    "TLB_Lite, 10M interval": ("tlb-lite", ("lite.interval=10000000",), ""),
    "TLB_Lite, p=1/8": ("tlb-lite", ("lite.probability=0.125",), ""),
    "TLB_Lite, minimum reference": (
        "tlb-lite",
        ("lite.reference=minimum",),
        "Lite's comparison with the previous interval (the lowest MPKI of the run instead)",
    ),
    "RMM, no promotion": (
        "rmm",
        ("os.eager_promote=false",),
        "eager paging's promotion of a 2MB region a later request completes",
    ),
    "RMM, any placement": (
        "rmm",
        ("os.eager_placement=any",),
        "eager blocks placed so that THP's 2MB pages fit (no 2MB pages)",
    ),
    "RMM, 4KB fill": (
        "rmm",
        ('range_tlb.range-l2.fill="4k"',),
        "a range-TLB hit filling the entry of the page the OS maps (a 4KB entry instead)",
    ),
    "RMM_Lite, eager files": (
        "rmm-lite",
        ("os.eager_files=true",),
        "file mappings left to demand paging (eager paging backs them too: toward perfect eager paging)",
    ),
    "THP, 2MB in the L2 TLB": (
        "thp",
        ('tlb.stlb.page_sizes=["4KB", "2MB"]',),
        "the Sandy Bridge L2 TLB holding no 2MB entry (it holds both sizes here, as Haswell's does)",
    ),
    "RMM_Lite, fragmented": (
        "rmm-lite",
        ("memory.fragmentation=0.5",),
        "the OS model's unfragmented memory (half of the 2MB blocks pinned: less contiguity)",
    ),
}
#: L1-TLB misses per kilo-instruction with 4KB pages above which a program is TLB-intensive.
INTENSIVE_MPKI = 5.0
LITE_TLBS = ("l1d-4k", "l1d-2m")
L2_2M = "THP, 2MB in the L2 TLB"


def _config(name: str) -> str:
    from xlat._data import configs_dir

    return str(configs_dir("lite") / f"{name}.toml")


def programs(quick: bool) -> list[Program]:
    if quick:
        # Enough accesses for a few 1M-instruction Lite intervals each.
        return [
            Program("gups", "workload:gups?size=1GiB&accesses=1500000"),
            Program("zipf", "workload:zipf?size=1GiB&accesses=700000"),
            Program("stream", "workload:stream?size=256MiB&accesses=1500000"),
        ]
    from xlat import real_workloads as rw

    # docs/lite.md's synthetic workloads (30M accesses), then the real-program suite.
    return [
        Program("gups", "workload:gups?size=8GiB&accesses=30000000"),
        Program("zipf", "workload:zipf?size=4GiB&accesses=30000000"),
        Program("bfs", "workload:bfs?scale=20&accesses=30000000"),
        Program("stream", "workload:stream?size=1GiB&accesses=30000000"),
    ] + [Program(r.name, f"recipe:{r.name}") for r in rw.recipes()]


def variants(quick: bool) -> list[Variant]:
    out = [Variant(n, "", (), config=_config(f)) for n, f in CONFIGS.items()]
    out += [Variant(n, "", s, ablation=a, config=_config(f)) for n, (f, s, a) in EXTRA.items()]
    return out


# --- figures -------------------------------------------------------------------------------


def _result(d: Data, p: str, v: str) -> dict[str, Any]:
    row = d(p, v)
    counters = {k: x for k, x in row.items() if x is not None and not isinstance(x, str)}
    derived = {k.removeprefix("derived."): x for k, x in counters.items() if k.startswith("derived.")}
    return {"counters": counters, "derived": derived, "config": json.loads(row["config_json"])}


def stretches(res: dict[str, Any]) -> dict[str, list[Any]]:
    """Per Lite-resized L1 TLB, its (ways, lookups, fills) from the row's cumulative
    ``epoch.lite.*`` counters plus the rest of the run at the final ways (cycles unknown)."""
    from xlat.energy import Stretch

    c = res["counters"]
    out = {}
    for t in res["config"].get("tlb") or []:
        n = t["name"]
        if f"epoch.lite.{n}.ways" not in c:
            continue
        pre = f"epoch.lite.{n}.lookups_w"
        ways = sorted({int(k.removeprefix(pre)) for k in c if k.startswith(pre)}, reverse=True)
        look = {w: int(c.get(f"{pre}{w}", 0)) for w in ways}
        fill = {w: int(c.get(f"epoch.lite.{n}.fills_w{w}", 0)) for w in ways}
        last = int(c[f"epoch.lite.{n}.ways"])
        look[last] = look.get(last, 0) + int(c.get(f"tlb.{n}.accesses", 0)) - sum(look.values())
        fill[last] = fill.get(last, 0) + int(c.get(f"tlb.{n}.fills", 0)) - sum(fill.values())
        out[n] = [Stretch(w, look[w], fill[w], None) for w in sorted(look, reverse=True)]
    return out


def energy_of(d: Data, p: str, v: str):
    """``xlat.energy``'s report of one row (Table 5.2's values, walk loads as L1 reads, each Lite
    stretch at its active ways)."""
    key = ("energy", p, v)
    if key not in d.memo:
        from xlat.energy import energy

        res = _result(d, p, v)
        d.memo[key] = energy(res, active_ways=stretches(res))
    return d.memo[key]


def dyn(d: Data, p: str, v: str) -> float:
    return energy_of(d, p, v).dynamic_pj


def cycles(d: Data, p: str, v: str) -> float:
    """Table 5.3's cycles spent in TLB misses."""
    return energy_of(d, p, v).lite_cycles


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def _config_of(d: Data, p: str, v: str) -> dict[str, Any]:
    return json.loads(d(p, v)["config_json"])


def l1_share(d: Data, p: str, v: str) -> float:
    """Share of the dynamic energy spent in the level-1 page TLBs."""
    e = energy_of(d, p, v)
    l1 = {t["name"] for t in _config_of(d, p, v)["tlb"] if t["level"] == 1}
    return ratio(sum(s.dynamic_pj for s in e.structures if s.name in l1), e.dynamic_pj)


def l1_energy(d: Data, p: str, v: str) -> float:
    """Dynamic energy (pJ) of the level-1 lookups: the L1 page TLBs and a stage-1 range TLB."""
    cfg = _config_of(d, p, v)
    l1 = {t["name"] for t in cfg["tlb"] if t["level"] == 1}
    l1 |= {t["name"] for t in cfg.get("range_tlb") or [] if t.get("stage", 2) == 1}
    return sum(s.dynamic_pj for s in energy_of(d, p, v).structures if s.name in l1)


def struct_share(d: Data, p: str, v: str, name: str) -> float:
    e = energy_of(d, p, v)
    return ratio(sum(s.dynamic_pj for s in e.structures if s.name == name), e.dynamic_pj)


def walk_share(d: Data, p: str, v: str) -> float:
    e = energy_of(d, p, v)
    return ratio(sum(s.dynamic_pj for s in e.structures if s.name.startswith("walk.")), e.dynamic_pj)


def mpki(d: Data, p: str, v: str, level: int) -> float:
    e = energy_of(d, p, v)
    return ratio(1000.0 * (e.l1_misses if level == 1 else e.l2_misses), e.instructions)


def shares(d: Data, p: str, v: str, tlb: str) -> dict[int, float]:
    """Table 5.5: percentage of the TLB's lookups at each active way count (empty: not looked up)."""
    s = energy_of(d, p, v).lookup_shares(tlb)
    return s if sum(s.values()) else {}


def l1_hits(d: Data, p: str, v: str) -> dict[str, int]:
    """Hits per level-1 data structure (page TLBs and the L1-range TLB)."""
    cfg = _config_of(d, p, v)
    out = {
        t["name"]: int(d.get(p, v, f"tlb.{t['name']}.hits"))
        for t in cfg["tlb"]
        if t["level"] == 1 and t["role"] == "data"
    }
    for t in cfg.get("range_tlb") or []:
        if t.get("stage", 2) == 1:
            out[t["name"]] = int(d.get(p, v, f"range_tlb.{t['name']}.hits"))
    return out


def hit_share(d: Data, p: str, v: str, name: str) -> float:
    h = l1_hits(d, p, v)
    return ratio(h.get(name, 0), sum(h.values()))


def lookups_below_full(d: Data, p: str, v: str) -> int:
    """Lookups an L1 TLB made with fewer than all its ways (way-disabling happened)."""
    return sum(
        x.lookups for st in stretches(_result(d, p, v)).values() for x in st[1:] if x.ways < st[0].ways
    )


def _pct(x: float, digits: int = 0) -> str:
    return pct(x, digits)


def _chg(x: float, digits: int = 0) -> str:
    """A ratio as a change: 0.77 -> -23%."""
    return "-" if x != x else f"{100 * (x - 1):+.{digits}f}%"


def _sgn(x: float, digits: int = 0) -> str:
    return "-" if x != x else f"{100 * x:+.{digits}f}%"


def _near(x: float, doc: float, tol: float) -> bool:
    return x == x and abs(x - doc) <= tol


def _verdict(ok: bool) -> str:
    return "reproduced" if ok else "differs"


# --- the report ------------------------------------------------------------------------------


def report(d: Data, r: Report) -> None:
    P = [p.name for p in d.programs]
    V = {v.name for v in d.variants}
    intensive = [p for p in P if d.get(p, "4KB", "derived.tlb_level1.mpki") > INTENSIVE_MPKI]
    others = [p for p in P if p not in intensive]
    S = intensive or P  # the programs of Figure 5.10's means
    on = "TLB-intensive programs (" + ", ".join(S) + ")" if intensive else "all programs (none TLB-intensive)"
    E = {p: {v: dyn(d, p, v) for v in V} for p in P}
    CY = {p: {v: cycles(d, p, v) for v in V} for p in P}

    def mean_vs(v: str, base: str, progs: list[str] = S, f=E) -> float:
        return _mean([ratio(f[p][v], f[p][base]) for p in progs])

    walking = [p for p in P if mpki(d, p, "THP", 2) >= 1]  # THP still walks (L2 MPKI >= 1)
    quiet = [p for p in P if p not in walking]

    def split(v: str, base: str = "THP", f=E) -> str:
        """The mean change against ``base`` where THP walks and elsewhere (the measured cause of
        most differences: the Sandy Bridge L2 TLB holds no 2MB entry, so past the L1-2MB TLB's
        64 MiB reach THP walks on every L1 miss, which the document's programs rarely do)."""
        out = []
        for name, g in (("where THP still walks (L2 MPKI >= 1: ", walking), ("elsewhere (", quiet)):
            if g:
                out.append(f"{name}{', '.join(g)}) {_chg(_mean([ratio(f[p][v], f[p][base]) for p in g]))}")
        why = " (THP walks on every L1 miss past 64 MiB: the Sandy Bridge L2 TLB holds no 2MB entry)"
        return "; ".join(out) + (why if walking else "")

    def abl2m(text: str, fn) -> str:
        """The figure with the Sandy Bridge L2 TLB's missing 2MB entries removed (the ablation
        variant, when it ran): ``fn()``, written after ``text``."""
        return f"; ablation ({L2_2M}): {text} {fn()}" if L2_2M in V else ""

    def share_split(fn, v: str) -> str:
        out = []
        for name, g in (("where THP still walks (", walking), ("elsewhere (", quiet)):
            if g:
                out.append(f"{name}{', '.join(g)}) {_pct(_mean([fn(d, p, v) for p in g]))}")
        return "; ".join(out)

    # Tables ---------------------------------------------------------------------------------
    cmp = ["4KB", "TLB_Lite", "RMM", "RMM+L1range", "RMM_Lite", "TLB_PP"]
    r.tables.append(
        Table(
            "Dynamic energy and TLB-miss cycles relative to THP (Figures 5.2, 5.10)",
            [
                "program",
                "L1 MPKI 4KB",
                "THP pJ/ki",
                *(f"energy {v}" for v in cmp),
                *(f"cycles {v}" for v in cmp),
            ],
            [
                [
                    p,
                    round(d.get(p, "4KB", "derived.tlb_level1.mpki"), 2),
                    round(energy_of(d, p, "THP").per_ki(E[p]["THP"])),
                    *(_chg(ratio(E[p][v], E[p]["THP"])) for v in cmp),
                    *(_chg(ratio(CY[p][v], CY[p]["THP"])) for v in cmp),
                ]
                for p in P
            ]
            + [
                [
                    "mean (" + ("TLB-intensive" if intensive else "all") + ")",
                    "",
                    "",
                    *(_chg(mean_vs(v, "THP")) for v in cmp),
                    *(_chg(mean_vs(v, "THP", f=CY)) for v in cmp),
                ]
            ],
            "Table 5.3's dynamic energy over Table 5.2's values (walk loads as L1 reads, each Lite stretch at its "
            "active ways) and cycles (7 per L1-TLB miss, 50 per L2-TLB miss), against THP's on the same program.",
        )
    )
    mp = ["4KB", "THP", "TLB_Lite", "RMM", "RMM_Lite", "TLB_PP"]
    r.tables.append(
        Table(
            "L1 and L2 TLB misses per kilo-instruction (Figure 5.11)",
            ["program", *(f"{v} L1 / L2" for v in mp)],
            [[p, *(f"{mpki(d, p, v, 1):.2f} / {mpki(d, p, v, 2):.2f}" for v in mp)] for p in P],
        )
    )
    r.tables.append(
        Table(
            "Where the dynamic energy goes (section 5.3.2, Figure 5.2)",
            [
                "program",
                "4KB: L1 TLBs",
                "4KB: walks",
                "THP: L1 TLBs",
                "THP: L1-4KB TLB",
                "THP: walks",
                "RMM: L1 TLBs",
                "RMM: walks",
                "walks removed, RMM vs 4KB",
            ],
            [
                [
                    p,
                    _pct(l1_share(d, p, "4KB")),
                    _pct(walk_share(d, p, "4KB")),
                    _pct(l1_share(d, p, "THP")),
                    _pct(struct_share(d, p, "THP", "l1d-4k")),
                    _pct(walk_share(d, p, "THP")),
                    _pct(l1_share(d, p, "RMM")),
                    _pct(walk_share(d, p, "RMM")),
                    _pct(_removed(d, p, "RMM"), 2),
                ]
                for p in P
            ],
        )
    )

    def sh(p: str, v: str, t: str) -> str:
        s = shares(d, p, v, t)
        return "(not used)" if not s else " / ".join(f"{s.get(w, 0.0):.1f}" for w in (4, 2, 1))

    r.tables.append(
        Table(
            "Percentage of lookups with 4 / 2 / 1 active ways (Table 5.5)",
            ["program", "TLB_Lite L1-4KB", "TLB_Lite L1-2MB", "RMM_Lite L1-4KB", "RMM_Lite L1-2MB"],
            [[p, *(sh(p, v, t) for v in ("TLB_Lite", "RMM_Lite") for t in LITE_TLBS)] for p in P],
        )
    )
    r.tables.append(
        Table(
            "Percentage of L1 hits per L1 TLB (Table 5.6)",
            [
                "program",
                "TLB_Lite L1-4KB",
                "TLB_Lite L1-2MB",
                "RMM_Lite L1-4KB",
                "RMM_Lite L1-2MB",
                "RMM_Lite L1-range",
            ],
            [
                [
                    p,
                    *(_pct(hit_share(d, p, "TLB_Lite", t), 1) for t in LITE_TLBS),
                    *(_pct(hit_share(d, p, "RMM_Lite", t), 1) for t in (*LITE_TLBS, "range-l1")),
                ]
                for p in P
            ],
            "An access that hits two L1 TLBs looked up in parallel counts in both.",
        )
    )
    lv = ["TLB_Lite", "TLB_Lite, minimum reference", "RMM_Lite"]
    r.tables.append(
        Table(
            "Lite's decisions: intervals / growth / random re-activations (Algorithm 5.1)",
            ["program", *lv],
            [
                [
                    p,
                    *(
                        f"{int(d.get(p, v, 'epoch.lite.runs'))} / {int(d.get(p, v, 'epoch.lite.growth_enables'))} / "
                        f"{int(d.get(p, v, 'epoch.lite.random_enables'))}"
                        for v in lv
                    ),
                ]
                for p in P
            ],
        )
    )
    fig54 = ["THP", "THP, L1-4KB 32x2", "THP, L1-4KB 16x1"]
    r.tables.append(
        Table(
            "L1 TLB MPKI with THP and a smaller L1-4KB TLB (Figures 5.4, 5.5)",
            ["program", "4KB", "THP (64x4)", "32x2", "16x1"],
            [[p, *(round(mpki(d, p, v, 1), 3) for v in ("4KB", *fig54))] for p in P],
        )
    )
    abl = [
        "RMM",
        "RMM, no promotion",
        "RMM, any placement",
        "RMM, 4KB fill",
        "RMM_Lite",
        "RMM_Lite, eager files",
        "RMM_Lite, fragmented",
    ]
    r.tables.append(
        Table(
            "Ablations: dynamic energy vs THP (L1 TLB misses) with one cause removed (docs/lite.md, issue 34)",
            ["program", *abl],
            [
                [
                    p,
                    *(
                        f"{_chg(ratio(E[p][v], E[p]['THP']), 1)} ({energy_of(d, p, v).l1_misses:,})"
                        for v in abl
                    ),
                ]
                for p in P
            ],
        )
    )

    F = r.findings.append
    # Section 5.3.2, Figure 5.2 ---------------------------------------------------------------
    for v, doc in (("4KB", 0.60), ("THP", 0.91)):
        x = _mean([l1_share(d, p, v) for p in S])
        F(
            Finding(
                "5.3.2, Figure 5.2",
                f"the L1 TLBs consume {doc:.0%} of the dynamic energy with {v}",
                f"{doc:.0%}",
                f"{_pct(x)} (mean over {on})",
                _verdict(_near(x, doc, 0.15)),
                ""
                if _near(x, doc, 0.15)
                else f"page-walk loads take {_pct(_mean([walk_share(d, p, v) for p in S]))} of {v}'s energy here "
                "(TLB-intensive inputs that walk on most L1 misses); L1 TLBs' share "
                + share_split(l1_share, v)
                + (
                    abl2m("L1 TLBs' share", lambda: _pct(_mean([l1_share(d, p, L2_2M) for p in S])))
                    if v == "THP"
                    else ""
                ),
            )
        )
    x = _mean([struct_share(d, p, "THP", "l1d-4k") for p in S])
    F(
        Finding(
            "5.3.2",
            "the L1-4KB TLB is the most dominant source of dynamic energy: 50% with THP",
            "50%",
            f"{_pct(x)} (mean)",
            _verdict(_near(x, 0.5, 0.15)),
            ""
            if _near(x, 0.5, 0.15)
            else f"THP's walks take {_pct(_mean([walk_share(d, p, 'THP') for p in S]))}: the Sandy Bridge L2 TLB holds "
            "no 2MB entry, so every L1-2MB miss walks; L1-4KB share "
            + share_split(lambda d, p, v: struct_share(d, p, v, "l1d-4k"), "THP")
            + abl2m("L1-4KB share", lambda: _pct(_mean([struct_share(d, p, L2_2M, "l1d-4k") for p in S]))),
        )
    )
    walky = [p for p in P if walk_share(d, p, "4KB") > l1_share(d, p, "4KB")]
    F(
        Finding(
            "5.3.2, 5.6.1",
            "with 4KB pages either the L1 lookups or the page walks dominate; walks only for walk-heavy workloads "
            "(cactusADM, mcf)",
            "walks dominate 2 of 8",
            f"walks dominate {len(walky)} of {len(P)} ({', '.join(walky) or 'none'})",
            _verdict(0 < len(walky) < len(P)),
            ""
            if 0 < len(walky) < len(P)
            else "every program here is on one side: "
            + ", ".join(f"{p} walks {_pct(walk_share(d, p, '4KB'))}" for p in P),
        )
    )
    F(
        Finding(
            "5.3.2, Figure 5.3",
            "dynamic energy grows by up to 91% (mcf) when walk references miss the L1 cache and hit the L2",
            "up to +91%",
            "-",
            "not measured",
            "Table 5.2 prices no L2 cache, so xlat.energy's walk_loads='levels' has no value for it",
        )
    )
    # Section 5.3.3 ----------------------------------------------------------------------------
    x = 1 - mean_vs("THP", "4KB", f=CY)
    F(
        Finding(
            "5.3.3, 5.6.1",
            "THP reduces the cycles spent in TLB misses by 83% on average compared to 4KB",
            "-83%",
            f"{_sgn(-x)} (Table 5.3 cycles, mean)",
            _verdict(_near(x, 0.83, 0.15)),
            ""
            if _near(x, 0.83, 0.15)
            else split("THP", "4KB", CY)
            + f"; ablation ({L2_2M}): {_sgn(-(1 - mean_vs(L2_2M, '4KB', f=CY)))}",
        )
    )
    x = mean_vs("THP", "4KB")
    F(
        Finding(
            "5.3.3, 5.6.1",
            "THP increases the dynamic energy by 4% on average (up to 43%, canneal) compared to 4KB",
            "+4%",
            f"{_chg(x)} (mean)",
            _verdict(x == x and x > 1 and _near(x - 1, 0.04, 0.15)),
            ""
            if x == x and x > 1 and _near(x - 1, 0.04, 0.15)
            else f"walks are {_pct(_mean([walk_share(d, p, '4KB') for p in S]))} of 4KB's energy here, and THP removes "
            "walk loads (one per 2MB walk instead of up to four); "
            + split("THP", "4KB")
            + abl2m("THP against 4KB", lambda: _chg(mean_vs(L2_2M, "4KB"))),
        )
    )
    lower = [p for p in P if E[p]["THP"] < E[p]["4KB"]]
    ok = set(lower) == set(walky)
    F(
        Finding(
            "5.3.3",
            "THP lowers the dynamic energy only for the walk-heavy workloads (cactusADM, mcf), raises it for all others",
            "lower only where walks dominate",
            f"lower on {', '.join(lower) or 'none'}; walks dominate 4KB on {', '.join(walky) or 'none'}",
            _verdict(ok),
            ""
            if ok
            else "THP also lowers the energy where L1 lookups dominate but walks are still a large share",
        )
    )
    # Section 5.3.4 ----------------------------------------------------------------------------
    rm = [_removed(d, p, "RMM") for p in S]
    F(
        Finding(
            "5.3.4",
            "RMM eliminates almost completely the page walks",
            "almost all",
            f"{_pct(min(rm), 2)} to {_pct(max(rm), 2)} of 4KB's walks removed",
            _verdict(min(rm) >= 0.95),
        )
    )
    x = 1 - mean_vs("RMM", "4KB", f=CY)
    F(
        Finding(
            "5.3.4",
            "RMM reduces the cycles spent in TLB misses by 96% compared to 4KB",
            "-96%",
            f"{_sgn(-x)} (mean)",
            _verdict(_near(x, 0.96, 0.10)),
            ""
            if _near(x, 0.96, 0.10)
            else "RMM's cycles are its L1 misses at 7 each (L2 misses: "
            + ", ".join(f"{p} {energy_of(d, p, 'RMM').l2_misses:,}" for p in S)
            + "), as many as THP's where THP hits in the L1-2MB TLB; "
            + split("RMM", "4KB", CY),
        )
    )
    x = mean_vs("RMM", "4KB")
    F(
        Finding(
            "5.3.4",
            "RMM's dynamic energy is only 4% less than 4KB's on average (L1 TLBs as with THP)",
            "-4%",
            f"{_chg(x)} (mean)",
            _verdict(_near(x - 1, -0.04, 0.15)),
            ""
            if _near(x - 1, -0.04, 0.15)
            else f"the walks RMM removes are {_pct(_mean([walk_share(d, p, '4KB') for p in S]))} of 4KB's energy here; "
            + split("RMM", "4KB"),
        )
    )
    F(
        Finding(
            "5.3.5",
            "larger TLB organizations (Haswell, Broadwell: more L2 entries, also for 2MB) look like huge pages: "
            "fewer walks, still the L1 lookups' energy",
            "like THP",
            "-",
            "not measured",
            "Table 5.2 prices only the Sandy Bridge structures (configs/lite); TLB_PP's 2MB entries in the L2 TLB "
            "are the nearest measured case",
        )
    )
    up = [p for p in P if l1_energy(d, p, "THP") > l1_energy(d, p, "4KB")]
    F(
        Finding(
            "5.3.3, 5.6.1",
            "THP increases the energy spent in the L1 TLBs: the L1-2MB TLB is looked up on every memory operation",
            "higher on all",
            f"higher on {len(up)} of {len(P)} ("
            + ", ".join(f"{p} {_chg(ratio(l1_energy(d, p, 'THP'), l1_energy(d, p, '4KB')))}" for p in P)
            + ")",
            _verdict(len(up) == len(P)),
            ""
            if len(up) == len(P)
            else "L1-4KB TLB fills (6.858 pJ each), 4KB / THP: "
            + ", ".join(
                f"{p} {int(d.get(p, '4KB', 'tlb.l1d-4k.fills')):,} / {int(d.get(p, 'THP', 'tlb.l1d-4k.fills')):,}"
                for p in P
                if p not in up
            ),
        )
    )
    rl = {p: ratio(l1_energy(d, p, "RMM"), l1_energy(d, p, "THP")) for p in P}
    anyp = {p: ratio(l1_energy(d, p, "RMM, any placement"), l1_energy(d, p, "THP")) for p in P}
    ok = all(_near(x, 1.0, 0.20) for x in rl.values())
    F(
        Finding(
            "5.3.4, 5.6.1",
            "with RMM the energy spent in the L1 TLBs remains high, similar to THP's (both L1 TLBs looked up)",
            "similar to THP",
            "RMM's L1 energy / THP's: " + ", ".join(f"{p} {rl[p]:.2f}" for p in P),
            _verdict(ok),
            (
                ""
                if ok
                else "an L2-range hit fills the page's own entry, so L1 misses and fills differ from THP's; "
            )
            + "ablation, eager blocks placed anywhere (no 2MB page, the L1-2MB TLB masked, as before issue 34): "
            + ", ".join(f"{p} {anyp[p]:.2f}" for p in P),
        )
    )
    more = [p for p in P if l1_energy(d, p, "RMM+L1range") > l1_energy(d, p, "RMM")]
    F(
        Finding(
            "5.4.3",
            "the L1-range TLB itself increases the energy of the L1 lookups (one more structure on every access); "
            "Lite must then disable page-TLB ways",
            "higher without Lite",
            f"RMM + L1-range TLB above RMM on {len(more)} of {len(P)} ("
            + ", ".join(
                f"{p} {_chg(ratio(l1_energy(d, p, 'RMM+L1range'), l1_energy(d, p, 'RMM')))}" for p in P
            )
            + f"); with Lite (RMM_Lite) above RMM on "
            f"{sum(l1_energy(d, p, 'RMM_Lite') > l1_energy(d, p, 'RMM') for p in P)}",
            _verdict(bool(more)),
            ""
            if more
            else "the L1-range hits spare the L1-4KB TLB's fills (a 6.858 pJ write each) more than its 1.806 pJ reads cost",
        )
    )
    # Section 5.4.1, Figures 5.4 and 5.5 --------------------------------------------------------
    small = [
        p
        for p in P
        if all(
            mpki(d, p, v, 1) <= 1.1 * mpki(d, p, "THP", 1) + 0.5
            for v in ("THP, L1-4KB 32x2", "THP, L1-4KB 16x1")
        )
    ]
    F(
        Finding(
            "5.4.1, Figures 5.4, 5.5",
            "with huge pages most workloads show similar L1 MPKI with a 32x2 or a 16x1 L1-4KB TLB",
            "most of 8",
            f"{len(small)} of {len(P)} within 10% (+0.5 MPKI) of 64x4",
            _verdict(len(small) > len(P) / 2),
            ""
            if len(small) > len(P) / 2
            else "L1 MPKI 64x4 / 16x1: "
            + ", ".join(
                f"{p} {mpki(d, p, 'THP', 1):.2f} / {mpki(d, p, 'THP, L1-4KB 16x1', 1):.2f}" for p in P
            ),
        )
    )
    # Section 5.6.1: TLB_Lite --------------------------------------------------------------------
    x = mean_vs("TLB_Lite", "THP")
    ok = _near(x - 1, -0.23, 0.10)
    F(
        Finding(
            "5.1, 5.6.1, Figure 5.10",
            "TLB_Lite reduces the dynamic energy by 23% on average compared to THP",
            "-23%",
            f"{_chg(x)} (mean over {on})",
            _verdict(ok),
            ""
            if ok
            else f"THP's walks are {_pct(_mean([walk_share(d, p, 'THP') for p in S]))} of its energy, which Lite cannot "
            "save; " + split("TLB_Lite"),
        )
    )
    best = max(P, key=lambda p: 1 - ratio(E[p]["TLB_Lite"], E[p]["THP"]))
    x = 1 - ratio(E[best]["TLB_Lite"], E[best]["THP"])
    F(
        Finding(
            "5.6.1",
            "TLB_Lite reduces the dynamic energy by 40% and 37% for cactusADM and GemsFDTD",
            "-40%, -37% (largest)",
            f"largest {_sgn(-x)} ({best})",
            _verdict(_near(x, 0.40, 0.10)),
            ""
            if _near(x, 0.40, 0.10)
            else f"on {best} the L1 TLBs are {_pct(l1_share(d, best, 'THP'))} of THP's energy (walks "
            f"{_pct(walk_share(d, best, 'THP'))}); L1-4KB lookups at 1 way "
            f"{shares(d, best, 'TLB_Lite', 'l1d-4k').get(1, 0.0):.1f}%",
        )
    )
    for t, doc in (("l1d-4k", 0.512), ("l1d-2m", 0.811)):
        used = [p for p in S if shares(d, p, "TLB_Lite", t)]
        x = _mean([shares(d, p, "TLB_Lite", t).get(4, 0.0) / 100 for p in used])
        F(
            Finding(
                "5.6.1, Table 5.5",
                f"with TLB_Lite all 4 ways of the {'L1-4KB' if t == 'l1d-4k' else 'L1-2MB'} TLB are active for "
                f"{doc:.0%} of its lookups on average",
                f"{100 * doc:.1f}%",
                f"{_pct(x, 1)} (mean over {len(used)})",
                _verdict(_near(x, doc, 0.20)),
                ""
                if _near(x, doc, 0.20)
                else "Lite keeps 4 ways in the first interval and after a random re-activation or an MPKI rise; "
                "intervals / growth re-activations: "
                + ", ".join(
                    f"{p} {int(d.get(p, 'TLB_Lite', 'epoch.lite.runs'))} / "
                    f"{int(d.get(p, 'TLB_Lite', 'epoch.lite.growth_enables'))}"
                    for p in used
                ),
            )
        )
    l1m = mean_vs("TLB_Lite", "THP", f={p: {v: energy_of(d, p, v).l1_misses for v in V} for p in P})
    l2m = mean_vs("TLB_Lite", "THP", f={p: {v: energy_of(d, p, v).l2_misses for v in V} for p in P})
    ok = l1m == l1m and l2m == l2m and l1m - 1 <= 0.10 and l2m - 1 <= 0.10
    F(
        Finding(
            "5.6.1",
            "TLB_Lite increases the L1 and L2 TLB misses by 4% and 3% on average compared to THP",
            "+4%, +3%",
            f"{_chg(l1m)}, {_chg(l2m)}",
            _verdict(ok),
            "" if ok else "a rise of a small count reads large: see Figure 5.11's table",
        )
    )
    a, b = mean_vs("THP", "4KB", f=CY), mean_vs("TLB_Lite", "4KB", f=CY)
    ok = a == a and b == b and b - a <= 0.02
    F(
        Finding(
            "5.1, 5.6.1",
            "TLB_Lite barely affects performance: TLB-miss cycles from 16.6% to 17.2% of 4KB's",
            "16.6% -> 17.2%",
            f"{_pct(a, 1)} -> {_pct(b, 1)}",
            _verdict(ok),
            "" if ok else "THP's cycles against 4KB's: " + split("THP", "4KB", CY),
        )
    )
    # RMM, TLB_PP, RMM_Lite -------------------------------------------------------------------
    for v, doc_e, doc_c, sec in (("RMM", -0.08, -0.80, "5.6.1"), ("TLB_PP", -0.43, -0.67, "5.6.1")):
        x = mean_vs(v, "THP")
        ok = _near(x - 1, doc_e, 0.10)
        why = (
            ""
            if ok
            else split(v)
            + (
                ", which RMM's L2-range TLB removes"
                if v == "RMM"
                else ", which TLB_PP's L2 TLB holding 2MB entries removes"
            )
            + abl2m(f"{v} against that THP", lambda v=v: _chg(mean_vs(v, L2_2M)))
        )
        F(
            Finding(
                f"{sec}, Figure 5.10",
                f"{v} reduces the dynamic energy by {-doc_e:.0%} on average compared to THP",
                f"{doc_e:+.0%}",
                f"{_chg(x)} (mean)",
                _verdict(ok),
                why,
            )
        )
        x = mean_vs(v, "THP", f=CY)
        ok = _near(x - 1, doc_c, 0.15)
        F(
            Finding(
                f"{sec}, Figure 5.10",
                f"{v} reduces the cycles spent in TLB misses by {-doc_c:.0%} compared to THP",
                f"{doc_c:+.0%}",
                f"{_chg(x)} (mean)",
                _verdict(ok),
                ""
                if ok
                else split(v, f=CY)
                + abl2m(f"{v} against that THP", lambda v=v: _chg(mean_vs(v, L2_2M, f=CY))),
            )
        )
    x = mean_vs("RMM_Lite", "THP")
    ok = _near(x - 1, -0.71, 0.10)
    ef = mean_vs("RMM_Lite, eager files", "THP")
    F(
        Finding(
            "5.1, 5.6.1, Figure 5.10",
            "RMM_Lite reduces the dynamic energy by 71% on average compared to THP",
            "-71%",
            f"{_chg(x)} (mean over {on})",
            _verdict(ok),
            ""
            if ok
            else split("RMM_Lite")
            + f"; ablation, eager paging of file mappings too (toward perfect eager paging): {_chg(ef)}",
        )
    )
    best = max(P, key=lambda p: 1 - ratio(E[p]["RMM_Lite"], E[p]["THP"]))
    x = 1 - ratio(E[best]["RMM_Lite"], E[best]["THP"])
    F(
        Finding(
            "5.6.1",
            "RMM_Lite reduces the dynamic energy by more than 80% for mcf and cactusADM",
            "> 80% (largest)",
            f"largest {_sgn(-x)} ({best})",
            _verdict(x > 0.80),
            "" if x > 0.80 else split("RMM_Lite"),
        )
    )
    x = 1 - mean_vs("RMM_Lite", "THP", f=CY)
    F(
        Finding(
            "5.6.1",
            "RMM_Lite eliminates more than 99% of the cycles spent in TLB misses compared to THP",
            "> 99%",
            f"{_pct(x, 2)} (mean)",
            _verdict(x > 0.99),
            ""
            if x > 0.99
            else "per program "
            + ", ".join(f"{p} {_chg(ratio(CY[p]['RMM_Lite'], CY[p]['THP']), 2)}" for p in S),
        )
    )
    l1c = {p: {v: 7.0 * energy_of(d, p, v).l1_misses for v in V} for p in P}
    x = 1 - mean_vs("RMM_Lite", "RMM", f=l1c)
    F(
        Finding(
            "5.1",
            "above RMM's near-zero L2 misses, RMM_Lite further reduces the overhead of L1 TLB misses by 99%",
            "-99%",
            f"{_sgn(-x, 1)} of RMM's L1-miss cycles (mean)",
            _verdict(x >= 0.95),
            ""
            if x >= 0.95
            else "the 4-entry L1-range TLB misses where a program's accesses span more than 4 ranges",
        )
    )
    better = [p for p in P if CY[p]["RMM_Lite"] <= CY[p]["RMM"]]
    F(
        Finding(
            "5.6.1",
            "RMM_Lite improves performance more than RMM: it also eliminates most L1 TLB misses",
            "all",
            f"fewer TLB-miss cycles on {len(better)} of {len(P)}",
            _verdict(len(better) == len(P)),
        )
    )
    x = _mean([shares(d, p, "RMM_Lite", "l1d-4k").get(1, 0.0) / 100 for p in S])
    y = _mean([shares(d, p, "TLB_Lite", "l1d-4k").get(1, 0.0) / 100 for p in S])
    F(
        Finding(
            "5.4.4, 5.6.1, Table 5.5",
            "RMM_Lite runs the L1-4KB TLB with 1 way for 63.7% of its lookups",
            "63.7%",
            f"{_pct(x, 1)} (mean)",
            _verdict(_near(x, 0.637, 0.20)),
            ""
            if _near(x, 0.637, 0.20)
            else "the L1-range TLB answers nearly every access of these programs (Table 5.6's)",
        )
    )
    F(
        Finding(
            "Table 5.5",
            "RMM_Lite disables more ways than TLB_Lite (the L1-range TLB's high hit ratio)",
            "63.7% vs 15.9% at 1 way",
            f"{_pct(x, 1)} vs {_pct(y, 1)} of L1-4KB lookups at 1 way",
            _verdict(x > y),
            ""
            if x > y
            else "TLB_Lite's L1-4KB TLB has no hits here either (THP maps the data in 2MB pages): both run it at 1 way "
            "whenever Lite can",
        )
    )
    x = _mean([hit_share(d, p, "RMM_Lite", "range-l1") for p in S])
    F(
        Finding(
            "5.6.1, Table 5.6",
            "the L1-range TLB supplies 84.1% of RMM_Lite's L1 hits",
            "84.1%",
            f"{_pct(x, 1)} (mean)",
            _verdict(_near(x, 0.841, 0.15)),
            ""
            if _near(x, 0.841, 0.15)
            else "ranges (eager paging) per program: "
            + ", ".join(f"{p} {int(d.get(p, 'RMM_Lite', 'os.ranges'))}" for p in S)
            + ", which the 4-entry L1-range TLB covers",
        )
    )
    x = _mean([hit_share(d, p, "TLB_Lite", "l1d-4k") for p in S])
    F(
        Finding(
            "Table 5.6",
            "with TLB_Lite the L1-4KB TLB gives 64.4% of the L1 hits (the L1-2MB TLB 35.6%)",
            "64.4%",
            f"{_pct(x, 1)} (mean)",
            _verdict(_near(x, 0.644, 0.20)),
            ""
            if _near(x, 0.644, 0.20)
            else "THP maps these programs' data in 2MB pages: L1-2MB share of the hits "
            + ", ".join(f"{p} {_pct(hit_share(d, p, 'TLB_Lite', 'l1d-2m'), 1)}" for p in S),
        )
    )
    worse = [p for p in P if E[p]["RMM_Lite"] > E[p]["TLB_PP"]]
    full = [p for p in worse if shares(d, p, "RMM_Lite", "l1d-4k").get(4, 0.0) >= 50]
    ok = len(worse) < len(P) / 2 and full == worse
    F(
        Finding(
            "5.6.1",
            "RMM_Lite saves less than TLB_PP only where the L1-4KB TLB is highly used (omnetpp, canneal)",
            "2 of 8, L1-4KB at 4 ways",
            f"{len(worse)} of {len(P)} ({', '.join(worse) or 'none'}); of them at 4 ways >= 50%: {len(full)}",
            _verdict(ok),
            ""
            if ok
            else "where RMM_Lite saves less, the L1-range TLB gives "
            + ", ".join(f"{p} {_pct(hit_share(d, p, 'RMM_Lite', 'range-l1'))}" for p in worse)
            + " of the L1 hits and the L1-2MB TLB "
            + ", ".join(f"{p} {_pct(hit_share(d, p, 'RMM_Lite', 'l1d-2m'))}" for p in worse)
            + "; RMM_Lite's largest structures (pJ/ki): "
            + "; ".join(f"{p} " + _top(energy_of(d, p, "RMM_Lite")) for p in worse)
            + " against TLB_PP's "
            + "; ".join(f"{p} " + _top(energy_of(d, p, "TLB_PP")) for p in worse),
        )
    )
    x = mean_vs("RMM_Lite", "TLB_PP")
    F(
        Finding(
            "5.6.1",
            "RMM_Lite reduces the dynamic energy by 49% on average compared to TLB_PP",
            "-49%",
            f"{_chg(x)} (mean)",
            _verdict(_near(x - 1, -0.49, 0.15)),
            "" if _near(x - 1, -0.49, 0.15) else split("RMM_Lite", "TLB_PP"),
        )
    )
    # Section 5.6.2 ------------------------------------------------------------------------------
    if others:
        a = mean_vs("TLB_Lite", "THP", others)
        b = mean_vs("RMM_Lite", "THP", others)
        ok = a == a and b == b and a < 1 and b < a
        F(
            Finding(
                "5.6.2, Figure 5.12",
                "on the less TLB-intensive workloads TLB_Lite saves 26% / 20% and RMM_Lite 72% / 66% (SPEC / PARSEC)",
                "-20 to -26%; -66 to -72%",
                f"TLB_Lite {_chg(a)}, RMM_Lite {_chg(b)} (mean over {', '.join(others)})",
                _verdict(ok and _near(a - 1, -0.23, 0.15) and _near(b - 1, -0.69, 0.15)),
                ""
                if ok and _near(a - 1, -0.23, 0.15) and _near(b - 1, -0.69, 0.15)
                else "per program "
                + ", ".join(
                    f"{p} {_chg(ratio(E[p]['TLB_Lite'], E[p]['THP']))} / {_chg(ratio(E[p]['RMM_Lite'], E[p]['THP']))}"
                    for p in others
                ),
            )
        )
    else:
        F(
            Finding(
                "5.6.2, Figure 5.12",
                "on the less TLB-intensive workloads TLB_Lite saves 26% / 20% and RMM_Lite 72% / 66% (SPEC / PARSEC)",
                "-20 to -26%; -66 to -72%",
                "-",
                "not applicable",
                "every program is TLB-intensive",
            )
        )
    base = mean_vs("TLB_Lite", "THP", P)
    i10 = mean_vs("TLB_Lite, 10M interval", "THP", P)
    p8 = mean_vs("TLB_Lite, p=1/8", "THP", P)
    ok = base <= i10 + 0.005 and base <= p8 + 0.005
    F(
        Finding(
            "5.6.2",
            "Lite does slightly better with a shorter interval (1M vs 10M instructions) and a lower random probability "
            "(1/128 vs 1/8)",
            "1M, 1/128 best",
            f"energy vs THP: 1M, 1/128 {_chg(base, 1)}; 10M {_chg(i10, 1)}; 1/8 {_chg(p8, 1)} (mean, all programs)",
            _verdict(ok),
            "" if ok else "the inputs are short: few 10M intervals, so the longer interval changes little",
        )
    )
    gap = {
        p: ratio(E[p]["RMM_Lite, fragmented"], E[p]["THP"]) - ratio(E[p]["RMM_Lite"], E[p]["THP"]) for p in P
    }
    close = [p for p in P if gap[p] <= 0.05]
    ok = len(close) >= len(P) / 2
    F(
        Finding(
            "5.6.2, Figure 5.13",
            "RMM_Lite with actual (less contiguous) eager paging performs close to perfect eager paging on most "
            "workloads, saves less on some",
            "close on most",
            f"within 5 points on {len(close)} of {len(P)} (fragmented memory: "
            + ", ".join(f"{p} {100 * gap[p]:+.1f}" for p in P)
            + " points)",
            _verdict(ok),
            ""
            if ok
            else "ranges, unfragmented / fragmented: "
            + ", ".join(
                f"{p} {int(d.get(p, 'RMM_Lite', 'os.ranges'))} / {int(d.get(p, 'RMM_Lite, fragmented', 'os.ranges'))}"
                for p in P
            )
            + "; L1-range share of the L1 hits fragmented: "
            + ", ".join(f"{p} {_pct(hit_share(d, p, 'RMM_Lite, fragmented', 'range-l1'))}" for p in P),
        )
    )
    F(
        Finding(
            "5.6.2",
            "power-gating the disabled ways would also save leakage; the threshold trades dynamic for static energy",
            "future work",
            "-",
            "not measured",
            "a sweep row holds no per-interval cycles (epochs['lite']), so a disabled way's leakage is not split; "
            "the document measures it neither",
        )
    )
    # docs/lite.md's issue-34 ablations --------------------------------------------------------
    g = {
        v: sum(int(d.get(p, v, "epoch.lite.growth_enables")) for p in P)
        for v in ("TLB_Lite", "TLB_Lite, minimum reference")
    }
    F(
        Finding(
            "5.4.2, Algorithm 5.1 (docs/lite.md, issue 34)",
            "Lite re-enables every way when the MPKI rises over the previous interval's ('previous MPKI')",
            "previous interval",
            f"growth re-activations: previous interval {g['TLB_Lite']}, lowest MPKI of the run {g['TLB_Lite, minimum reference']}",
            _verdict(g["TLB_Lite"] < g["TLB_Lite, minimum reference"])
            if any(g.values())
            else "not applicable",
            ""
            if g["TLB_Lite"] < g["TLB_Lite, minimum reference"]
            else "no growth re-activation in either run: the MPKI never rose over an interval"
            if not any(g.values())
            else "the MPKI rose as often over the previous interval as over the run's lowest",
        )
    )

    # Mechanism-level checks (make test asserts them on --quick) --------------------------------
    r.checks["Lite disables ways on some program (TLB_Lite lookups at fewer than 4 ways)"] = any(
        lookups_below_full(d, p, "TLB_Lite") > 0 for p in P
    )
    r.checks["RMM_Lite disables ways on some program"] = any(
        lookups_below_full(d, p, "RMM_Lite") > 0 for p in P
    )
    r.checks["RMM_Lite's L1-range TLB hits on every program"] = all(
        d.get(p, "RMM_Lite", "range_tlb.range-l1.hits") > 0 for p in P
    )
    if "gups" in P:
        r.checks["THP walks <= 4KB walks on gups"] = d.get("gups", "THP", "walker.walks") <= d.get(
            "gups", "4KB", "walker.walks"
        )
        r.checks["RMM removes > 99% of 4KB's walks on gups"] = _removed(d, "gups", "RMM") > 0.99
    r.checks["TLB_PP makes one L1 lookup per access"] = all(
        d.get(p, "TLB_PP", "tlb.l1d.accesses") == d.get(p, "TLB_PP", "accesses") for p in P
    )
    r.checks["every configuration has positive dynamic energy"] = all(E[p][v] > 0 for p in P for v in V)


def _top(e, n: int = 3) -> str:
    """The ``n`` structures of an energy report that cost the most (pJ per kilo-instruction)."""
    top = sorted(e.structures, key=lambda s: -s.dynamic_pj)[:n]
    return ", ".join(f"{s.name} {e.per_ki(s.dynamic_pj):,.0f}" for s in top)


def _removed(d: Data, p: str, v: str) -> float:
    base = d.get(p, "4KB", "walker.walks")
    return float("nan") if not base else 1.0 - d.get(p, v, "walker.walks") / base


DOCUMENT = Document(
    "lite",
    "Lite: energy-efficient address translation (Karakostas 2016, chapter 5)",
    "000_a44384fd80f6240a.txt",
    programs,
    variants,
    report,
)
