"""The analytical model of TLB miss handling of Bala's thesis (1995), chapter 5.

Runtime in cycles (equation 5.1), with the application and the OS merged into one component A::

    R = I_A (1 + M_A T_C) + I_T (1 + M_T T_C)

- ``I_A``: instructions of the application and the OS, TLB miss handling excluded;
- ``I_T``: instructions executed in handling TLB misses;
- ``M_A = C_A / I_A``, ``M_T = C_T / I_T``: cache misses *per instruction* (section 5.1's note:
  not the fraction of accesses that miss) of each component;
- ``T_C``: cycles to service one cache miss (24 on the 40 MHz R3000, section 5.4).

The TLB component ``I_T (1 + M_T T_C)`` over ``R`` is the fraction of time in TLB handling. A
scheme (PTLB, STLB, both) that cuts TLB handling time by the fraction ``S_T`` saves (equation
5.2) ``delta = S_T I_T (1 + M_T T_C) / R`` of the runtime. Sections 5.4 and 5.5 predict delta on
a faster processor (``T_C`` grows as memory falls behind) with the same cache (equation 5.7) or a
better one that scales the miss rates by ``gamma_A``, ``gamma_T`` (equations 5.11, 5.12).

From simulated counts: :func:`inputs_from_counts` reads the counters of :data:`COUNTERS` (the
Mach machine's names; ``instructions`` is the engine's) from a flat dict or an ``xlat sim
--json`` result. :func:`chapter5` gives the chapter's table for any inputs;
:func:`document_chapter5` reproduces the document's own numbers from its own inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "COUNTERS",
    "DOC",
    "Inputs",
    "benchmark_sweeps",
    "chapter5",
    "delta",
    "delta_closed_form",
    "document_chapter5",
    "flatten_counts",
    "inputs_from_counts",
    "machine_counts",
    "plot_predictions",
    "runtime",
    "speedup_of_scheme",
    "sweep_tc",
    "tlb_fraction",
    "tlb_time",
]

#: Cycles per cache miss on the 40 MHz R3000 (section 5.4: "T_C^R3K is 24 cycles [9]").
T_C_R3K = 24.0
#: On a 100 MHz R3000 with the same memory (section 5.4: "T_C^R3K-ext = 60").
T_C_R3K_EXT = 60.0
#: On a 150 MHz Alpha-like chip (section 5.5: "T_C^alpha = 60 cycles [10]").
T_C_ALPHA = 60.0

#: The counters the model reads (name -> model symbol). ``instructions`` is the engine's; the
#: Mach machine's run gives the others through :func:`machine_counts` (docs/mach-benchmark.md).
COUNTERS: dict[str, str] = {
    "instructions": "I_A",  # the trace's instructions (application + OS; handlers are not in it)
    "mach.handler_instructions": "I_T",  # instructions of the TLB miss handlers (all kinds, STLB/PTLB code)
    "mach.app_cache_misses": "C_A",  # cache misses (each costing T_C) of the trace's own accesses
    "mach.handler_cache_misses": "C_T",  # cache misses of the handlers' loads
    "mach.handler_cycles": "T",  # cycles the machine charged to TLB handling (optional, a cross-check)
}
#: Miss counters reported beside the model (kernel misses = L1K + L2 + L3).
MISS_COUNTERS = (
    "mach.misses.l1u",
    "mach.misses.l1k",
    "mach.misses.l2",
    "mach.misses.l3",
    "mach.misses.invalid",
    "mach.cascaded",
)


@dataclass(frozen=True)
class Inputs:
    """The model's parameters (section 5.1) for one run on one architecture."""

    I_A: float
    I_T: float
    M_A: float
    M_T: float
    T_C: float = T_C_R3K

    def at(self, T_C: float, gamma_A: float = 1.0, gamma_T: float = 1.0) -> Inputs:
        """The same instruction counts on another architecture (section 5.3.1's assumptions):
        cache miss time ``T_C``, miss rates scaled by ``gamma_A`` and ``gamma_T`` (section 5.5)."""
        return Inputs(self.I_A, self.I_T, gamma_A * self.M_A, gamma_T * self.M_T, T_C)


def _check(x: Inputs) -> None:
    for k, v in asdict(x).items():
        if not v >= 0:
            raise ValueError(f"model input {k} = {v} must be a non-negative number")
    if x.I_A + x.I_T <= 0:
        raise ValueError("the model needs instructions: I_A + I_T is 0")


def tlb_time(x: Inputs) -> float:
    """Cycles in TLB handling: ``I_T (1 + M_T T_C)``."""
    return x.I_T * (1 + x.M_T * x.T_C)


def runtime(x: Inputs) -> float:
    """Equation 5.1: ``R = I_A (1 + M_A T_C) + I_T (1 + M_T T_C)`` cycles."""
    _check(x)
    return x.I_A * (1 + x.M_A * x.T_C) + tlb_time(x)


def tlb_fraction(x: Inputs) -> float:
    """The fraction of the runtime spent handling TLB misses."""
    return tlb_time(x) / runtime(x)


def delta(x: Inputs, S_T: float) -> float:
    """Equation 5.2: the runtime a scheme saves, as a fraction of the unmodified runtime."""
    if not 0 <= S_T <= 1:
        raise ValueError(f"S_T = {S_T} must be between 0 and 1 (the fraction of TLB handling time saved)")
    return S_T * tlb_fraction(x)


def delta_closed_form(old: Inputs, new: Inputs, S_T: float) -> float:
    """Equations 5.10/5.11: ``delta_new - delta_old`` for the same ``I_A``, ``I_T`` and ``S_T``::

    S_T I_T I_A / (R_new R_old) [T_new (M_T' - M_A') - T_old (M_T - M_A)
                                 + T_new T_old (M_T' M_A - M_A' M_T)]

    (primes: the new miss rates). With equal miss rates it is equation 5.7."""
    if (old.I_A, old.I_T) != (new.I_A, new.I_T):
        raise ValueError("equation 5.10 assumes the same instruction counts on both architectures")
    k = S_T * old.I_T * old.I_A / (runtime(new) * runtime(old))
    bracket = (
        new.T_C * (new.M_T - new.M_A)
        - old.T_C * (old.M_T - old.M_A)
        + new.T_C * old.T_C * (new.M_T * old.M_A - new.M_A * old.M_T)
    )
    return k * bracket


def sweep_tc(
    x: Inputs, S_T: float, tcs: Iterable[float], gamma_A: float = 1.0, gamma_T: float = 1.0
) -> list[dict]:
    """Predictions for faster processors: for each cache miss time, the runtime, the fraction in
    TLB handling and ``delta`` (equation 5.2 evaluated on the new architecture)."""
    out = []
    for tc in tcs:
        y = x.at(tc, gamma_A, gamma_T)
        out.append({"T_C": tc, "R": runtime(y), "tlb_fraction": tlb_fraction(y), "delta": delta(y, S_T)})
    return out


# ---------------------------------------------------------------- from simulated counts


def flatten_counts(d: Mapping[str, Any]) -> dict[str, float]:
    """Counters as one flat ``{"a.b.c": value}`` dict, from a flat dict, a nested one, or an
    ``xlat sim --json`` result (its ``counters``)."""
    if "counters" in d and isinstance(d["counters"], Mapping):
        d = d["counters"]
    flat: dict[str, float] = {}

    def walk(x: Mapping[str, Any], prefix: str) -> None:
        for k, v in x.items():
            if isinstance(v, Mapping):
                walk(v, f"{prefix}{k}.")
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                flat[f"{prefix}{k}"] = float(v)

    walk(d, "")
    return flat


#: What the Mach machine (``[mach]``, docs/mach.md) reports, from which :func:`machine_counts`
#: derives the model's counters: its TLB-handling cycles, its handlers' loads served by memory
#: (cache misses), and the memory accesses of every access.
MACHINE_COUNTERS = (
    "instructions",
    "mach.cycles",
    "mach.loads_hit.DRAM",
    "dram.accesses",
    "dram.walk_accesses",
)


def machine_counts(flat: Mapping[str, float], T_C: float = T_C_R3K) -> dict[str, float]:
    """The model's counters (:data:`COUNTERS`) from the Mach machine's, for a machine whose cache
    miss costs ``T_C`` cycles on top of a hit (configs/mach/: 25 - 1 = 24, the R3000's):

    - ``C_T``: the handlers' loads served by memory (``mach.loads_hit.DRAM``: PTEs, STLB and PTLB
      probes and stores);
    - ``C_A``: the trace's own accesses served by memory (``dram.accesses - dram.walk_accesses``);
    - ``T``: every TLB-handling cycle (``mach.cycles``: handlers, STLB, PTLB overhead);
    - ``I_T = T - C_T T_C``: so that ``I_T (1 + M_T T_C) = T`` at the machine's ``T_C``.
    """
    need = [k for k in MACHINE_COUNTERS if k not in flat]
    if need:
        raise ValueError(f"the counts lack {', '.join(need)} (a run of the Mach machine has them)")
    C_T = flat["mach.loads_hit.DRAM"]
    T = flat["mach.cycles"]
    I_T = T - C_T * T_C
    if I_T < 0:
        raise ValueError(
            f"mach.cycles = {T:g} is less than its {C_T:g} cache misses at T_C = {T_C:g}: "
            "the counts are not of a machine with that cache miss time"
        )
    return {
        "instructions": flat["instructions"],
        "mach.handler_instructions": I_T,
        "mach.app_cache_misses": flat["dram.accesses"] - flat["dram.walk_accesses"],
        "mach.handler_cache_misses": C_T,
        "mach.handler_cycles": T,
    }


def inputs_from_counts(counts: Mapping[str, Any], T_C: float = T_C_R3K) -> Inputs:
    """The model's inputs from a run's counters (:data:`COUNTERS`, or the Mach machine's own,
    :func:`machine_counts`, read at ``T_C``): ``M_A = C_A / I_A``, ``M_T = C_T / I_T``."""
    c = flatten_counts(counts)
    if "mach.handler_instructions" not in c and "mach.cycles" in c:
        c = machine_counts(c, T_C)
    required = [k for k, sym in COUNTERS.items() if sym != "T"]
    need = [k for k in required if k not in c]
    if need:
        raise ValueError(f"the counts lack {', '.join(need)} (the model needs {', '.join(required)})")
    I_A, I_T = c["instructions"], c["mach.handler_instructions"]
    C_A, C_T = c["mach.app_cache_misses"], c["mach.handler_cache_misses"]
    x = Inputs(I_A, I_T, C_A / I_A if I_A else 0.0, C_T / I_T if I_T else 0.0, T_C)
    _check(x)
    return x


#: How the TLB-handling time of a run is split into handler instructions and cache misses:
#: ``counted`` (the machine's modelled misses, the rest of every handler's Table 2.1 cost counted
#: as instructions: a low M_T) or ``document`` (section 5.4's split, I_T about half of the TLB
#: time, so M_T = 1 / T_C).
SPLITS = ("counted", "document")


def with_split(x: Inputs, split: str) -> Inputs:
    """``x`` with its TLB time split as ``split`` says (:data:`SPLITS`); the TLB time
    ``I_T (1 + M_T T_C)`` is unchanged."""
    if split == "counted":
        return x
    if split != "document":
        raise ValueError(f"the split must be one of {', '.join(SPLITS)}, not {split!r}")
    return Inputs(x.I_A, tlb_time(x) / 2, x.M_A, 1 / x.T_C, x.T_C)


def speedup_of_scheme(base: Mapping[str, Any], scheme: Mapping[str, Any], T_C: float = T_C_R3K) -> float:
    """``S_T`` from two runs of one trace: 1 - (TLB time with the scheme) / (TLB time of Mach)."""
    tb = tlb_time(inputs_from_counts(base, T_C))
    ts = tlb_time(inputs_from_counts(scheme, T_C))
    if tb <= 0:
        raise ValueError("the unmodified run spends no time in TLB handling: S_T is undefined")
    return 1 - ts / tb


#: The scenarios of sections 5.4 and 5.5: (name, T_C new, gamma_A, gamma_T).
SCENARIOS = (
    ("R3K-ext, same cache (eq. 5.9)", T_C_R3K_EXT, 1.0, 1.0),
    ("alpha, gamma = 0.8 (eq. 5.13)", T_C_ALPHA, 0.8, 0.8),
    ("alpha, best case gamma_T = 1, gamma_A = 0 (eq. 5.15)", T_C_ALPHA, 0.0, 1.0),
    ("alpha, gamma_T = 1, gamma_A = 0.5", T_C_ALPHA, 0.5, 1.0),
    ("alpha, gamma_T = 0.8, gamma_A = 0.5", T_C_ALPHA, 0.5, 0.8),
)


def chapter5(x: Inputs, S_T: float) -> dict[str, Any]:
    """The chapter's table for inputs ``x`` measured at ``x.T_C`` (the R3000): runtime, TLB
    fraction, delta, and delta on each architecture of :data:`SCENARIOS` (directly from
    equation 5.2 and from the closed forms 5.7/5.11, which agree)."""
    rows = []
    for name, tc, ga, gt in SCENARIOS:
        y = x.at(tc, ga, gt)
        rows.append(
            {
                "scenario": name,
                "T_C": tc,
                "gamma_A": ga,
                "gamma_T": gt,
                "tlb_fraction": tlb_fraction(y),
                "delta": delta(y, S_T),
                "delta_increase": delta_closed_form(x, y, S_T),
            }
        )
    return {
        "inputs": asdict(x),
        "S_T": S_T,
        "R": runtime(x),
        "tlb_cycles": tlb_time(x),
        "tlb_fraction": tlb_fraction(x),
        "delta": delta(x, S_T),
        "scenarios": rows,
    }


def benchmark_sweeps(rounds: int = 5000, seed: int = 1) -> list[dict[str, Any]]:
    """The workload specs of section 4.5's sweeps, one dict per point (``sweep``, ``x``,
    ``spec``): hypothesis 1, 1 client and 1..10 servers at 30 words per IPC (§4.5.1); hypothesis 2,
    4 servers and 5..50 words (§4.5.2); hypothesis 3, fine/medium/coarse with 3..10 servers at 30
    words (§4.5.3, Tables 4.11-4.13). Each point runs ``rounds`` client iterations."""
    base = "workload:clientserver?clients=1&rounds={r}&seed={s}&servers={n}&words={w}&granularity={g}"
    pts: list[dict[str, Any]] = []
    for n in range(1, 11):
        pts.append({"sweep": "servers", "x": n, "spec": base.format(r=rounds, s=seed, n=n, w=30, g="fine")})
    for w in range(5, 51, 5):
        pts.append({"sweep": "words", "x": w, "spec": base.format(r=rounds, s=seed, n=4, w=w, g="fine")})
    for g in ("fine", "medium", "coarse"):
        for n in range(3, 11):
            pts.append(
                {"sweep": f"granularity-{g}", "x": n, "spec": base.format(r=rounds, s=seed, n=n, w=30, g=g)}
            )
    return pts


# ---------------------------------------------------------------- the document's own numbers

#: The document's instantiation (section 5.4, "Predictions"): S_T = 0.5, I_A = 0.5 R_new,
#: I_T = 0.06 R_R3K, M_T - M_A = 0.05; M_T = 0.07, M_A = 0.02 (section 5.5); delta_R3K of
#: video_play 3.5% (section 5.5).
DOC = {
    "S_T": 0.5,
    "I_A_share_new": 0.5,
    "I_T_share_r3k": 0.06,
    "M_T": 0.07,
    "M_A": 0.02,
    "delta_video_play": 0.035,
}


def _doc_bracket(M_T: float, M_A: float, tc_new: float, tc_old: float, gA: float, gT: float) -> float:
    """The bracket of equation 5.11."""
    return (
        M_T * (gT * tc_new - tc_old) - M_A * (gA * tc_new - tc_old) + tc_new * tc_old * M_T * M_A * (gT - gA)
    )


def document_chapter5() -> dict[str, float]:
    """The values of sections 5.4-5.5 computed from the document's own inputs (:data:`DOC`).
    The factor ``S_T I_T I_A / (R_new R_R3K)`` becomes ``S_T * 0.06 * 0.5 = 0.015`` there."""
    k = DOC["S_T"] * DOC["I_T_share_r3k"] * DOC["I_A_share_new"]
    mt, ma, video = DOC["M_T"], DOC["M_A"], DOC["delta_video_play"]
    coef = k * (mt - ma)  # equation 5.8: 0.00075 per cycle of T_C
    best = k * _doc_bracket(mt, ma, T_C_ALPHA, T_C_R3K, 0.0, 1.0)
    real1 = k * _doc_bracket(mt, ma, T_C_ALPHA, T_C_R3K, 0.5, 1.0)
    real08 = k * _doc_bracket(mt, ma, T_C_ALPHA, T_C_R3K, 0.5, 0.8)
    worst = coef * (0.8 * T_C_ALPHA - T_C_R3K)  # equation 5.13 with gamma = 0.8
    return {
        "k": k,
        "eq5_8_coefficient": coef,
        "eq5_9_increase": coef * (T_C_R3K_EXT - T_C_R3K),
        "eq5_13_increase": worst,
        "eq5_13_video_play": video + worst,
        "eq5_15_increase": best,
        "eq5_15_video_play": video + best,
        "realistic_gT1_increase": real1,
        "realistic_gT1_video_play": video + real1,
        "realistic_gT08_increase": real08,
        "realistic_gT08_video_play": video + real08,
    }


def plot_predictions(x: Inputs, S_T: float, path: str, tcs: Iterable[float] | None = None) -> None:
    """PNG: delta and the TLB fraction against the cache miss time, for the same cache and for
    gamma_A = 0.5 with gamma_T = 1 and 0.8 (the chapter's scenarios as curves)."""
    from xlat._optional import need_pyplot

    plt = need_pyplot()

    tcs = list(tcs) if tcs is not None else [float(t) for t in range(8, 201, 4)]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for label, ga, gt in (("same cache", 1.0, 1.0), ("gA=0.5, gT=1", 0.5, 1.0), ("gA=0.5, gT=0.8", 0.5, 0.8)):
        rows = sweep_tc(x, S_T, tcs, ga, gt)
        a.plot(tcs, [100 * r["delta"] for r in rows], label=label)
        b.plot(tcs, [100 * r["tlb_fraction"] for r in rows], label=label)
    for ax, what in ((a, f"delta: runtime saved (%), S_T = {S_T:g}"), (b, "time in TLB handling (%)")):
        ax.axvline(x.T_C, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("cache miss time T_C (cycles)")
        ax.set_title(what)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
