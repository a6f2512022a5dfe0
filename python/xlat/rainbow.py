"""Rainbow (Wang et al. 2018) and its four baselines on one trace: the five configurations of
``configs/rainbow/`` (Flat-static, HSCC-4KB-mig, HSCC-2MB-mig, Rainbow, DRAM-only with 2MB
pages), run side by side, and the figures the paper compares: TLB misses per kilo-instruction,
the share of cycles in translation and its parts, IPC, migration traffic against the footprint,
and memory energy.

The configurations are plain TOML files over the one simulator (the hybrid DRAM/NVM memory,
``[hybrid]``); this module only runs them and turns their results into rows, tables and plots.
``docs/rainbow.md`` defines every figure, every default and where it comes from.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlat._data import configs_dir
from xlat.layout import parse_size
from xlat.sim import Run, SimResult, simulate_many

__all__ = ["CONFIGS", "LABELS", "Comparison", "compare", "config_dir", "memory_sizes", "plot_many", "runs"]

#: The configurations, in the order the paper lists them (section IV-A), Rainbow before the
#: upper bound.
CONFIGS = ("flat-static", "hscc-4kb", "hscc-2mb", "rainbow", "dram-only-2mb")
LABELS = {
    "flat-static": "Flat-static",
    "hscc-4kb": "HSCC-4KB-mig",
    "hscc-2mb": "HSCC-2MB-mig",
    "rainbow": "Rainbow",
    "dram-only-2mb": "DRAM-only (2MB)",
}
#: Cycles of the time model by part, as ``hybrid.time.<part>_cycles``; the first five are
#: translation (TLB hits below the first level, walks, Rainbow's 4KB-TLB hits below a superpage
#: hit, its bitmap cache and pointer reads).
TRANSLATION_PARTS = ("stlb_hit", "walk", "tlb4k", "bitmap", "pointer")
OTHER_PARTS = ("base", "memory_reads", "writebacks", "migration", "clflush", "shootdown", "remap")


#: A memory kind holds whole 2MB superpages (``memory.kinds.<kind>.size``): the smallest DRAM
#: or NVM, and the unit of their sizes.
SUPERPAGE = 2 << 20
#: The most simulated memory, DRAM and NVM together (``memory.size``).
MAX_MEMORY = 4 << 40


def config_dir() -> Path:
    """``configs/rainbow``, shipped in the package."""
    return configs_dir("rainbow")


def _kinds(path: Path) -> dict[str, dict[str, Any]]:
    with open(path, "rb") as f:
        return {k["name"]: k for k in tomllib.load(f)["memory"]["kinds"]}


def _show(n: int) -> str:
    for unit, b in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n % b == 0:
            return f"{n // b}{unit}"
    return f"{n} bytes"


def memory_sizes(
    dram: str | None = None,
    nvm: str | None = None,
    directory: Path | None = None,
    names: tuple[str, str] = ("dram", "nvm"),
) -> dict[str, int]:
    """The hybrid configurations' DRAM and NVM in bytes (``{"dram": ..., "nvm": ...}``): ``dram``
    and ``nvm`` where given, else Flat-static's. Each must be a whole number of 2MB superpages
    (at least one) and both together at most 4TiB, or ``ValueError`` names the value as
    ``names`` (the CLI passes its options, ``--dram`` and ``--nvm``)."""
    d = directory or config_dir()
    base = _kinds(d / "flat-static.toml")
    sizes = {k: parse_size(v["size"], f"memory.kinds.{k}.size") for k, v in base.items()}
    for kind, text, name in (("dram", dram, names[0]), ("nvm", nvm, names[1])):
        if text is None:
            continue
        n = parse_size(text, name)
        if n < SUPERPAGE or n % SUPERPAGE:
            what = "smaller than one 2MB superpage" if n < SUPERPAGE else "not a multiple of 2MiB"
            raise ValueError(
                f"{name} {text} is {what}: each memory holds whole 2MB superpages, at least one "
                "(give e.g. 256MiB)"
            )
        sizes[kind] = n
    if sizes["dram"] + sizes["nvm"] > MAX_MEMORY:
        given = " and ".join(f"{n} {t}" for n, t in zip(names, (dram, nvm), strict=True) if t is not None)
        raise ValueError(
            f"{given} would make {_show(sizes['dram'] + sizes['nvm'])} of memory (DRAM {_show(sizes['dram'])} + "
            f"NVM {_show(sizes['nvm'])}), above the simulator's 4TiB"
        )
    return sizes


def runs(
    dram: str | None = None,
    nvm: str | None = None,
    sets: tuple[str, ...] | list[str] = (),
    directory: Path | None = None,
) -> list[Run]:
    """The five runs. ``dram`` and ``nvm`` (e.g. ``"256MiB"``, ``"2GiB"``) scale the hybrid
    configurations' memory kinds, and DRAM-only's DRAM to their sum (the same capacity, all
    DRAM: the upper bound); a scaled DRAM keeps its static power per byte. ``sets`` go to every
    run, after these."""
    d = directory or config_dir()
    out = []
    for name in CONFIGS:
        path = d / f"{name}.toml"
        # The overlap time model beside the additive one (docs/time-model.md); a later
        # time.model=additive in ``sets`` turns it off.
        s: list[str] = ["time.model=overlap"]
        if dram is not None or nvm is not None:
            sizes = memory_sizes(dram, nvm, d)
            own = _kinds(path)
            if "nvm" not in own:
                sizes = {"dram": sizes["dram"] + sizes["nvm"]}
            for k, size in sizes.items():
                old = parse_size(own[k]["size"], f"memory.kinds.{k}.size")
                power = own[k]["static_power_mw"] * size / old
                s += [f"memory.kinds.{k}.size={size}", f"memory.kinds.{k}.static_power_mw={power!r}"]
        out.append(Run(config=str(path), set=tuple(s + list(sets))))
    return out


def _row(name: str, r: SimResult) -> dict[str, Any]:
    c, d = r.counters, r.derived
    total = d["hybrid.time.total_cycles"]
    share = {
        p: (d[f"hybrid.time.{p}_cycles"] / total if total else 0.0) for p in TRANSLATION_PARTS + OTHER_PARTS
    }
    kinds = [k for k in ("dram", "nvm") if f"hybrid.{k}.reads" in c]
    reads = {k: c[f"hybrid.{k}.reads"] - c[f"hybrid.{k}.walk_reads"] for k in kinds}
    copied = sum(c[f"hybrid.{k}.copy_reads"] for k in kinds) * 64
    footprint = (c["os.faults_4k"] << 12) + (c["os.faults_2m"] << 21) + (c["os.faults_1g"] << 30)
    instr = c["instructions"]
    row: dict[str, Any] = {
        "config": name,
        "label": LABELS[name],
        "instructions": instr,
        "tlb_mpki": 1000 * c["walker.walks"] / instr if instr else 0.0,
        "translation_share": d["hybrid.translation_fraction"],
        **{f"share_{p}": v for p, v in share.items()},
        "ipc": d["hybrid.ipc"],
        "ipc_overlap": d.get("hybrid.overlap_ipc", float("nan")),
        "dram_read_share": reads.get("dram", 0) / max(sum(reads.values()), 1),
        "migration_bytes": copied,
        "footprint_bytes": footprint,
        "energy_nj": d["hybrid.energy.total_nj"],
        "dynamic_nj": sum(d[f"hybrid.energy.{k}.dynamic_nj"] for k in kinds),
        "static_nj": sum(d[f"hybrid.energy.{k}.static_nj"] for k in kinds),
    }
    for key, prefix in (("migrate", "epoch.migrate."), ("rainbow", "epoch.rainbow.")):
        if f"{prefix}promotions" in c:
            row["promotions"] = c[f"{prefix}promotions"]
            row["demotions"] = c[f"{prefix}demotions_clean"] + c[f"{prefix}demotions_dirty"]
            row["intervals"] = c[f"{prefix}intervals"]
            row["controller"] = key
    if "rainbow.case1_4k_hit_2m_hit" in c:
        for i, n in enumerate(("4k_hit_2m_hit", "4k_hit_2m_miss", "4k_miss_2m_hit", "4k_miss_2m_miss"), 1):
            row[f"case{i}"] = c[f"rainbow.case{i}_{n}"]
        row["remaps"] = c["rainbow.remaps"]
        row["stale_remaps"] = c["rainbow.stale_remaps"]
        # DRAM copies made, and those a translation ever reached (Rainbow caches hot pages: a
        # copy never read again cost its migration for nothing).
        row["copies_made"] = c["rainbow.copies_made"]
        row["copies_used"] = c["rainbow.copies_used"]
        row["bitmap_misses"] = c["rainbow.bitmap_cache.misses"]
    return row


@dataclass
class Comparison:
    """The five configurations on one trace: ``results[name]`` the simulation results."""

    trace: str
    results: dict[str, SimResult]
    dram: str | None = None
    nvm: str | None = None

    def rows(self) -> list[dict[str, Any]]:
        """One row per configuration, with IPC and energy relative to Flat-static and IPC
        relative to HSCC-4KB-mig, and the migration traffic against the footprint of the
        4KB-page baseline (the 4KB pages the trace touches)."""
        rows = [_row(n, r) for n, r in self.results.items()]
        by = {r["config"]: r for r in rows}
        base, hscc = by.get("flat-static"), by.get("hscc-4kb")
        footprint = (base or rows[0])["footprint_bytes"]
        for r in rows:
            r["ipc_vs_flat"] = r["ipc"] / base["ipc"] if base and base["ipc"] else float("nan")
            r["ipc_vs_hscc4k"] = r["ipc"] / hscc["ipc"] if hscc and hscc["ipc"] else float("nan")
            for ref, key in ((base, "ipc_overlap_vs_flat"), (hscc, "ipc_overlap_vs_hscc4k")):
                r[key] = r["ipc_overlap"] / ref["ipc_overlap"] if ref and ref["ipc_overlap"] else float("nan")
            r["energy_vs_flat"] = (
                r["energy_nj"] / base["energy_nj"] if base and base["energy_nj"] else float("nan")
            )
            r["migration_vs_footprint"] = r["migration_bytes"] / footprint if footprint else 0.0
        return rows

    def to_pandas(self):
        from xlat._optional import need_pandas

        pd = need_pandas("to_pandas()")

        return pd.DataFrame(self.rows())  # one row per configuration, "config" a column (tidy)

    def to_json(self) -> dict[str, Any]:
        return {"trace": self.trace, "dram": self.dram, "nvm": self.nvm, "rows": self.rows()}


def compare(
    trace_or_spec: str | Path,
    dram: str | None = None,
    nvm: str | None = None,
    sets: tuple[str, ...] | list[str] = (),
    configs: tuple[str, ...] | list[str] = CONFIGS,
    threads: int | None = None,
    progress: bool = False,
    *,
    skip: int = 0,
    warmup: int = 0,
    limit: int | None = None,
) -> Comparison:
    """Run the configurations ``configs`` (of :data:`CONFIGS`) on a trace file or ``workload:``
    spec, with the memory scaled to ``dram`` and ``nvm`` if given (see :func:`runs`), over the
    window ``skip``, ``warmup``, ``limit`` (:mod:`xlat.window`)."""
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise ValueError(f"unknown configuration '{unknown[0]}' (known: {', '.join(CONFIGS)})")
    chosen = [r for n, r in zip(CONFIGS, runs(dram, nvm, sets), strict=True) if n in configs]
    names = [n for n in CONFIGS if n in configs]
    res = simulate_many(
        str(trace_or_spec), chosen, threads=threads, progress=progress, skip=skip, warmup=warmup, limit=limit
    )
    return Comparison(str(trace_or_spec), dict(zip(names, res, strict=True)), dram, nvm)


def _short(label: str) -> str:
    """A workload's tick label: a trace file's name without its directory, a spec as it is."""
    return label if label.startswith("workload:") else Path(label).name


def plot_many(comparisons: dict[str, Comparison], path: str | Path, title: str = "") -> None:
    """Grouped bars, one group per workload (``{label: comparison}``; a trace path is shown by
    its file name), one bar per configuration: IPC relative to Flat-static, TLB MPKI (log),
    % of cycles in translation, migration traffic / footprint, energy relative to Flat-static;
    titled ``title``; to a PNG. Needs matplotlib."""
    from xlat._optional import need_pyplot

    plt = need_pyplot()

    panels = [
        ("ipc_vs_flat", "IPC / Flat-static", False),
        ("tlb_mpki", "TLB misses per kilo-instruction", True),
        ("translation_share", "cycles in translation, %", False),
        ("migration_vs_footprint", "migration traffic / footprint", False),
        ("energy_vs_flat", "memory energy / Flat-static", False),
    ]
    wl = list(comparisons)
    ticks = [_short(w) for w in wl]
    rows = {w: {r["config"]: r for r in c.rows()} for w, c in comparisons.items()}
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(7, 1.4 * len(wl) + 2), 2.6 * len(panels)))
    width = 0.8 / len(CONFIGS)
    for ax, (key, panel, log) in zip(axes, panels, strict=True):
        for i, name in enumerate(CONFIGS):
            vals = [rows[w].get(name, {}).get(key, float("nan")) for w in wl]
            if key == "translation_share":
                vals = [100.0 * v for v in vals]  # the table's unit
            if log:
                vals = [max(v, 1e-3) for v in vals]
            ax.bar([x + (i - 2) * width for x in range(len(wl))], vals, width, label=LABELS[name])
        if log:
            # Bars grow from the axis' bottom: start it a decade below the smallest value, so the
            # smallest bar has a height (it started at that value, and the bar had none).
            ax.set_yscale("log")
            shown = [
                v
                for name in CONFIGS
                for w in wl
                if (v := rows[w].get(name, {}).get(key)) is not None and v > 0
            ]
            if shown:
                ax.set_ylim(bottom=max(min(shown) / 10, 1e-3))
        else:
            ax.set_ylim(bottom=0)  # ratios, shares and traffic are not negative (all 0: 0 to 1)
            if ax.get_ylim()[1] <= 0:
                ax.set_ylim(0, 1)
        ax.set_title(panel, fontsize=10)
        ax.set_xticks(range(len(wl)), ticks, fontsize=8)
        ax.grid(True, axis="y", lw=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, ncol=5, loc="lower center")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.5 / fig.get_figheight(), 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
