"""Energy of address translation (Karakostas 2016, chapter 5, Tables 5.2 and 5.3), computed
from a simulation's counters.

An *energy set* (``configs/energy/*.toml``, default ``cacti-32nm`` = Table 5.2) gives, per
structure geometry, the dynamic energy of a read and of a write (pJ) and the leakage power (mW).
The model is Table 5.3's:

- per TLB, range TLB and paging-structure cache: ``lookups x E_read + fills x E_write``;
- page walks: every walk load (page walk and range-table walk) is one read of the L1 data cache
  (the document's optimistic choice, ``walk_loads="l1"``), or, with ``walk_loads="levels"``,
  one read of every cache level it looked up down to the one where it hit (and one memory read
  when it went to DRAM), which needs those levels in the set;
- leakage: power x simulated time (``time.total_cycles`` / the set's clock), of every charged
  TLB and paging-structure cache (the caches leak whether or not anything is translated);
- Table 5.3's performance model: 7 cycles per L1-TLB miss, 50 per L2-TLB miss
  (:func:`xlat.models.lite_tlb_cycles`), beside the simulator's additive estimate;
- Lite (a ``[lite]`` run): each interval's lookups, fills and time of an L1 page TLB are
  charged at the values of the smaller structure its active ways make (64-entry 4-way with 2
  ways off = 32-entry 2-way, section 5.5), read from the run's ``epochs["lite"]`` series
  (:func:`lite_stretches`); ``Report.lite`` keeps them (Table 5.5's lookups per way count).

A structure that is never looked up in the run (instruction TLBs on a data-only trace) is not
part of the translation path and costs nothing. Structures looked up in parallel are charged on
every lookup, whether or not they hold entries or hit:

- the L1 page TLBs of every size on every access. Section 5.3.1 assumes a mask that disables the
  L1 TLB of a huge page size "for a running process that uses only 4 KB pages and no 2 MB or 1 GB
  pages"; ``l1_lookups="masked"`` (the default, what the thesis's results assume) charges an L1
  TLB that holds only huge pages when the process maps pages of one of its sizes (the run's
  ``os.faults_*``/``os.eager_*`` of that size), on all its lookups, and nothing otherwise;
  ``l1_lookups="all"`` charges every L1 TLB on every access (section 5.3.2: "the processor accesses
  all L1 TLB structures ... in parallel on every memory operation");
- range TLBs on every lookup their stage makes (the L1-range TLB on every access, the L2-range TLB
  on every L1 miss);
- the paging-structure caches on every page walk, all of them ("These structures are all accessed
  in parallel after an L2 TLB miss", section 5.5), not only those the walker's counters say it
  probed (``psc.*.accesses``: the walker skips the PDE cache when a 2MB leaf is found above it).

Every charged structure must have values in the set, else :class:`EnergyError` names it.

This is a thin model over the counters rather than Rust derived figures: the simulated loop is
untouched and the result JSON (whose digests are frozen, ``tests/data/regress-digests.txt``)
does not change; the energy set is an input of the report, not of the simulation::

    >>> import xlat.sim as sim, xlat.energy as en
    >>> thp = en.SETS_DIR.parent / "lite" / "thp.toml"
    >>> r = sim.simulate("workload:gups?size=1GiB&accesses=2000", config=str(thp))
    >>> e = en.energy(r)
    >>> round(e.dynamic_pj) == round(sum(s.dynamic_pj for s in e.structures))
    True
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlat._data import configs_dir
from xlat.layout import LayoutError, parse_size
from xlat.models import lite_tlb_cycles

__all__ = [
    "EnergyError",
    "EnergySet",
    "Report",
    "StructureEnergy",
    "Values",
    "energy",
    "energy_set",
    "lite_stretches",
    "plot",
    "sets",
]

#: Where the energy sets live: beside the CPU presets (``configs/cpus``), shipped in the package.
SETS_DIR = configs_dir("energy")
DEFAULT_SET = "cacti-32nm"
KINDS = ("page_tlb", "range_tlb", "psc", "cache", "memory")
WALK_LOADS = ("l1", "levels")
L1_LOOKUPS = ("masked", "all")


class EnergyError(ValueError):
    """A bad energy set, or a configuration the set has no values for."""


@dataclass(frozen=True)
class Values:
    """Dynamic energy per read and per write (pJ) and leakage power (mW) of one structure."""

    read_pj: float
    write_pj: float
    leakage_mw: float


def _describe(kind: str, size: int, ways: int) -> str:
    if kind == "memory":
        return "memory"
    if kind == "cache":
        return f"{size // 1024}KiB {ways}-way cache"
    assoc = "fully associative" if size == ways else f"{ways}-way"
    return f"{size}-entry {assoc} {kind.replace('_', ' ')}"


@dataclass(frozen=True)
class EnergySet:
    """Values per (kind, entries or bytes, ways); ``clock_ghz`` turns cycles into seconds."""

    name: str
    source: str
    clock_ghz: float
    table: Mapping[tuple[str, int, int], Values]

    def values(self, kind: str, size: int, ways: int, who: str) -> Values:
        """The values of a structure of this geometry; ``who`` names it in the error."""
        v = self.table.get((kind, size, ways))
        if v is None:
            raise EnergyError(
                f"the energy set '{self.name}' has no values for {who} ({_describe(kind, size, ways)}): "
                f"its values are those of the structures of {self.source}, which the lite/ "
                "configurations model (xlat sim --config lite/4k --energy ...; xlat config list --all "
                "names them); for another machine, copy configs/energy/cacti-32nm.toml, add its "
                "structures' values and pass the file to --energy (docs/lite.md)."
            )
        return v


def _number(raw: Any, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise EnergyError(f"{where} must be a number, not {raw!r}.")
    if raw < 0:
        raise EnergyError(f"{where} must not be negative, but is {raw}.")
    return float(raw)


def _count(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise EnergyError(f"{where} must be a positive integer, not {raw!r}.")
    return raw


def parse_energy_set(text: str, source: str = "<energy set>") -> EnergySet:
    """An energy set from its TOML text; every error is one sentence naming the field."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise EnergyError(f"{source} is not valid TOML: {e}.") from None
    known = {"name", "source", "clock_ghz", "structure"}
    for k in doc:
        if k not in known:
            raise EnergyError(f"{source}: unknown field '{k}' (known: {', '.join(sorted(known))}).")
    name = doc.get("name", Path(source).stem)
    clock = _number(doc.get("clock_ghz"), f"{source}: clock_ghz")
    if clock == 0:
        raise EnergyError(f"{source}: clock_ghz must be positive.")
    rows = doc.get("structure")
    if not isinstance(rows, list) or not rows:
        raise EnergyError(f"{source} lists no [[structure]].")
    table: dict[tuple[str, int, int], Values] = {}
    for i, row in enumerate(rows):
        where = f"{source}: structure {i + 1}"
        if not isinstance(row, dict):
            raise EnergyError(f"{where} must be a table.")
        kind = row.get("kind")
        if kind not in KINDS:
            raise EnergyError(f"{where}: kind must be one of {', '.join(KINDS)}, not {kind!r}.")
        allowed = {"kind", "read_pj", "write_pj", "leakage_mw"}
        if kind == "cache":
            allowed |= {"size", "ways"}
            try:
                size = parse_size(row.get("size"), f"{where}: size")
            except LayoutError as e:
                raise EnergyError(str(e)) from None
            ways = _count(row.get("ways"), f"{where}: ways")
        elif kind == "memory":
            size, ways = 0, 0
        else:
            allowed |= {"entries", "ways"}
            size = _count(row.get("entries"), f"{where}: entries")
            ways = _count(row.get("ways"), f"{where}: ways")
            if ways > size:
                raise EnergyError(f"{where}: {ways} ways is more than its {size} entries.")
        for k in row:
            if k not in allowed:
                raise EnergyError(f"{where}: unknown field '{k}' for a {kind}.")
        v = Values(
            _number(row.get("read_pj"), f"{where}: read_pj"),
            _number(row.get("write_pj"), f"{where}: write_pj"),
            _number(row.get("leakage_mw"), f"{where}: leakage_mw"),
        )
        key = (kind, size, ways)
        if key in table:
            raise EnergyError(f"{where} repeats the {_describe(*key)}.")
        table[key] = v
    return EnergySet(str(name), str(doc.get("source", "")), clock, table)


def sets() -> list[str]:
    """Names of the energy sets in ``configs/energy``."""
    return sorted(p.stem for p in SETS_DIR.glob("*.toml"))


def energy_set(name_or_path: str | EnergySet | None = None) -> EnergySet:
    """A set by name (``configs/energy/NAME.toml``) or path; None gives Table 5.2's."""
    if isinstance(name_or_path, EnergySet):
        return name_or_path
    name = name_or_path or DEFAULT_SET
    path = Path(name)
    if not path.is_file():
        path = SETS_DIR / f"{name}.toml"
        if not path.is_file():
            raise EnergyError(
                f"no energy set '{name}': neither a file nor one of {', '.join(sets()) or 'none'}."
            )
    return parse_energy_set(path.read_text(encoding="utf-8"), str(path))


@dataclass(frozen=True)
class StructureEnergy:
    """One structure's reads, writes, dynamic energy (pJ) and leakage energy (pJ)."""

    name: str
    reads: int
    writes: int
    dynamic_pj: float
    leakage_pj: float


@dataclass(frozen=True)
class Report:
    """Energy of one run: per structure, totals, per kilo-instruction, and Table 5.3's cycles."""

    set_name: str
    walk_loads: str
    l1_lookups: str
    instructions: int
    seconds: float
    structures: tuple[StructureEnergy, ...]
    l1_misses: int
    l2_misses: int
    #: Per resized TLB: its stretches at each active way count, most ways first.
    lite: Mapping[str, tuple[Stretch, ...]] = field(default_factory=dict)

    def lookup_shares(self, name: str) -> dict[int, float]:
        """Table 5.5: the percentage of TLB ``name``'s lookups made with each active way count."""
        st = self.lite.get(name, ())
        n = sum(x.lookups for x in st)
        return {x.ways: 100.0 * x.lookups / n if n else 0.0 for x in st}

    @property
    def dynamic_pj(self) -> float:
        return sum(s.dynamic_pj for s in self.structures)

    @property
    def leakage_pj(self) -> float:
        return sum(s.leakage_pj for s in self.structures)

    @property
    def total_pj(self) -> float:
        return self.dynamic_pj + self.leakage_pj

    def per_ki(self, pj: float) -> float:
        return pj * 1000 / self.instructions if self.instructions else 0.0

    @property
    def lite_cycles(self) -> float:
        """Table 5.3: 7 cycles per L1-TLB miss plus 50 per L2-TLB miss."""
        return lite_tlb_cycles(self.l1_misses, self.l2_misses)

    def to_dict(self) -> dict[str, float]:
        """Flat ``energy.*`` figures (pJ), as ``to_pandas`` and the JSON show them."""
        d: dict[str, float] = {}
        for s in self.structures:
            d[f"energy.{s.name}.dynamic_pj"] = s.dynamic_pj
            d[f"energy.{s.name}.leakage_pj"] = s.leakage_pj
        d["energy.dynamic_pj"] = self.dynamic_pj
        d["energy.leakage_pj"] = self.leakage_pj
        d["energy.total_pj"] = self.total_pj
        d["energy.dynamic_pj_per_ki"] = self.per_ki(self.dynamic_pj)
        d["energy.total_pj_per_ki"] = self.per_ki(self.total_pj)
        d["energy.seconds"] = self.seconds
        d["perf.table53_cycles"] = self.lite_cycles
        for name in self.lite:
            for w, pct in self.lookup_shares(name).items():
                d[f"lite.{name}.lookups_pct_w{w}"] = pct
        return d

    def to_json(self) -> dict[str, Any]:
        """The ``energy`` object ``xlat sim --energy`` adds to the result JSON."""
        return {
            "set": self.set_name,
            "walk_loads": self.walk_loads,
            "l1_lookups": self.l1_lookups,
            "structures": {
                s.name: {
                    "reads": s.reads,
                    "writes": s.writes,
                    "dynamic_pj": s.dynamic_pj,
                    "leakage_pj": s.leakage_pj,
                }
                for s in self.structures
            },
            **{
                k.removeprefix("energy."): v
                for k, v in self.to_dict().items()
                if k.count(".") == 1 and not k.startswith("lite.")
            },
            "lite": {
                name: {
                    str(x.ways): {
                        "lookups": x.lookups,
                        "fills": x.fills,
                        "cycles": x.cycles,
                        "lookups_pct": self.lookup_shares(name)[x.ways],
                    }
                    for x in st
                }
                for name, st in self.lite.items()
            },
        }


def _result_parts(result: Any) -> tuple[Mapping[str, int], Mapping[str, float], Mapping[str, Any]]:
    data = result.data if hasattr(result, "data") else result
    return data["counters"], data["derived"], data["config"]


def _cache_levels(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The caches a walk load looks up, first to last."""
    caches = list(config.get("cache") or [])
    first = (config.get("walker") or {}).get("first_cache")
    names = [c["name"] for c in caches]
    return caches[names.index(first) :] if first in names else caches


@dataclass(frozen=True)
class Stretch:
    """The part of a run an L1 TLB spent with ``ways`` active ways: its lookups and fills, and
    the simulated cycles (None: unknown, leakage charged at the full structure)."""

    ways: int
    lookups: int
    fills: int
    cycles: float | None = None


def lite_stretches(result: Any) -> dict[str, tuple[Stretch, ...]]:
    """Per L1 TLB that Lite resized, its lookups, fills and cycles at each active way count,
    from the ``epochs["lite"]`` series (cumulative rows, one per interval: the TLB runs interval
    *i* with the ways row *i - 1* left, all of them in the first) plus the rest of the run after
    the last interval, at the last row's ways. An interval's cycles are ``sim.base_cpi x`` its
    instructions plus its translation cycles (``xlat_cycles``): the additive time estimate,
    which the rows sum to ``time.total_cycles``. Empty for a run without ``[lite]``."""
    c, d, cfg = _result_parts(result)
    data = result.data if hasattr(result, "data") else result
    s = (data.get("epochs") or {}).get("lite")
    if not s:
        return {}
    col = {n: i for i, n in enumerate(s["columns"])}
    rows = s["rows"]
    cpi = float((cfg.get("sim") or {}).get("base_cpi", 1.0))
    timed = "xlat_cycles" in col  # results of xlat before the time columns: no split of leakage
    out: dict[str, tuple[Stretch, ...]] = {}
    for t in cfg.get("tlb") or []:
        name = t["name"]
        if f"{name}.ways" not in col:
            continue
        acc: dict[int, list[float]] = {}
        ways = t["ways"]
        l0 = f0 = i0 = x0 = 0

        def add(w: int, lookups: int, fills: int, cycles: float, acc: dict = acc) -> None:
            a = acc.setdefault(w, [0, 0, 0.0])
            a[0] += lookups
            a[1] += fills
            a[2] += cycles

        for row in rows:
            # Cumulative over every way count: only this interval's count grew.
            l1 = sum(row[i] for n, i in col.items() if n.startswith(f"{name}.lookups_w"))
            f1 = sum(row[i] for n, i in col.items() if n.startswith(f"{name}.fills_w"))
            i1 = row[col["instructions"]] if timed else 0
            x1 = row[col["xlat_cycles"]] if timed else 0
            add(ways, l1 - l0, f1 - f0, cpi * (i1 - i0) + (x1 - x0))
            l0, f0, i0, x0 = l1, f1, i1, x1
            ways = row[col[f"{name}.ways"]]
        total = d.get("time.total_cycles", 0.0)
        add(
            ways,
            c.get(f"tlb.{name}.accesses", 0) - l0,
            c.get(f"tlb.{name}.fills", 0) - f0,
            total - (cpi * i0 + x0),
        )
        out[name] = tuple(
            Stretch(w, int(a[0]), int(a[1]), a[2] if timed else None)
            for w, a in sorted(acc.items(), reverse=True)
        )
    return out


def energy(
    result: Any,
    set: str | EnergySet | None = None,
    walk_loads: str = "l1",
    active_ways: Mapping[str, Iterable[Stretch | tuple[int, ...]]] | None = None,
    l1_lookups: str = "masked",
) -> Report:
    """Table 5.3's energy of ``result`` (a :class:`xlat.sim.SimResult` or its JSON dict).

    ``active_ways`` (for way-disabling): per TLB name, :class:`Stretch` es or (active ways,
    lookups, fills[, cycles]) per stretch of the run; those lookups and fills (and the leakage
    over those cycles) are charged at the values of the smaller structure (entries x active /
    ways, active ways) instead of the full one; what no stretch covers is charged at the full
    structure. None (the default) takes them from the run's Lite series
    (:func:`lite_stretches`). ``l1_lookups``: ``"masked"`` or ``"all"`` (the module's text)."""
    if walk_loads not in WALK_LOADS:
        raise EnergyError(f"walk_loads must be one of {', '.join(WALK_LOADS)}, not {walk_loads!r}.")
    if l1_lookups not in L1_LOOKUPS:
        raise EnergyError(f"l1_lookups must be one of {', '.join(L1_LOOKUPS)}, not {l1_lookups!r}.")
    es = energy_set(set)
    c, d, cfg = _result_parts(result)
    secs = d.get("time.total_cycles", 0.0) / (es.clock_ghz * 1e9)
    leak = 1e9 * secs  # pJ per mW over the run
    out: list[StructureEnergy] = []
    if active_ways is None:
        stretched: dict[str, tuple[Stretch, ...]] = lite_stretches(result)
    else:
        stretched = {
            k: tuple(x if isinstance(x, Stretch) else Stretch(*x) for x in v) for k, v in active_ways.items()
        }
    total_cycles = d.get("time.total_cycles", 0.0)

    def charge(
        name: str, who: str, kind: str, entries: int, ways: int, prefix: str, reads: int | None = None
    ) -> None:
        writes = c.get(f"{prefix}.fills", 0)
        reads = c.get(f"{prefix}.accesses", 0) if reads is None else reads
        if reads == 0:
            return
        stretches = stretched.get(name, ())
        full_reads = reads - sum(x.lookups for x in stretches)
        full_writes = writes - sum(x.fills for x in stretches)
        full_cycles = total_cycles - sum(x.cycles or 0.0 for x in stretches)
        v = es.values(kind, entries, ways, who)
        dyn = full_reads * v.read_pj + full_writes * v.write_pj
        lk = v.leakage_mw * leak * (full_cycles / total_cycles if total_cycles else 1.0)
        for x in stretches:
            at = v
            if not (x.lookups or x.fills or x.cycles):
                continue  # an empty stretch (a run ending on an interval's end) needs no values
            if x.ways != ways:
                at = es.values(kind, entries * x.ways // ways, x.ways, f"{who} with {x.ways} of {ways} ways")
            dyn += x.lookups * at.read_pj + x.fills * at.write_pj
            if x.cycles is not None:
                lk += at.leakage_mw * 1e9 * x.cycles / (es.clock_ghz * 1e9)
        out.append(StructureEnergy(name, reads, writes, dyn, lk))

    # The page sizes the process maps (section 5.3.1's mask enables the L1 TLBs of those): a
    # size it faulted in, eagerly mapped or walked to, or that a TLB holding only that size hit.
    # The last two matter under a warm-up window, whose counters start after the faults that
    # mapped the huge pages (with faults alone, a THP run's 2MB L1 TLB went uncharged).
    def hit_only(size: str) -> int:
        tlbs = [t for t in cfg.get("tlb") or [] if (t.get("page_sizes") or ["4KB"]) == [size]]
        return sum(c.get(f"tlb.{t['name']}.hits", 0) for t in tlbs)

    mapped = {"4KB"} | {
        size
        for size, key in (("2MB", "2m"), ("1GB", "1g"))
        if c.get(f"os.faults_{key}", 0) + c.get(f"os.eager_{key}", 0) + c.get(f"walker.walks_{key}", 0) > 0
        or hit_only(size) > 0
    }
    for t in cfg.get("tlb") or []:
        sizes = t.get("page_sizes") or ["4KB"]
        masked = l1_lookups == "masked" and t["level"] == 1 and not any(x in mapped for x in sizes)
        if not masked:
            charge(t["name"], f"TLB {t['name']}", "page_tlb", t["entries"], t["ways"], f"tlb.{t['name']}")
    for t in cfg.get("range_tlb") or []:
        n = t["entries"]
        charge(t["name"], f"range TLB {t['name']}", "range_tlb", n, n, f"range_tlb.{t['name']}")
    walks = c.get("walker.walks", 0)
    for p in cfg.get("psc") or []:
        who = f"paging-structure cache {p['name']}"
        charge(p["name"], who, "psc", p["entries"], p["ways"], f"psc.{p['name']}", walks)

    levels = _cache_levels(cfg)
    loads = c.get("walker.loads", 0) + c.get("range_walk.loads", 0)
    if loads:
        if not levels:
            raise EnergyError("the configuration has no cache for page-walk loads to read.")
        reads_at = [0] * len(levels)
        dram = 0
        if walk_loads == "l1":
            reads_at[0] = loads
        else:
            for i, lv in enumerate(levels):
                hit = c.get(f"walker.loads_hit.{lv['name']}", 0) + c.get(
                    f"range_walk.loads_hit.{lv['name']}", 0
                )
                for j in range(i + 1):
                    reads_at[j] += hit
            dram = c.get("walker.loads_hit.DRAM", 0) + c.get("range_walk.loads_hit.DRAM", 0)
            for j in range(len(levels)):
                reads_at[j] += dram
        for lv, n in zip(levels, reads_at, strict=True):
            if n:
                v = es.values("cache", lv["size"], lv["ways"], f"cache {lv['name']}")
                out.append(StructureEnergy(f"walk.{lv['name']}", n, 0, n * v.read_pj, 0.0))
        if dram:
            v = es.values("memory", 0, 0, "memory (DRAM)")
            out.append(StructureEnergy("walk.DRAM", dram, 0, dram * v.read_pj, 0.0))

    l1 = c.get("tlb_level1.data.misses", 0) + c.get("tlb_level1.instruction.misses", 0)
    l2 = c.get("tlb_level2.data.misses", 0) + c.get("tlb_level2.instruction.misses", 0)
    lite = {k: v for k, v in stretched.items() if any(s.name == k for s in out)}
    return Report(es.name, walk_loads, l1_lookups, c.get("instructions", 0), secs, tuple(out), l1, l2, lite)


def plot(reports: Mapping[str, Report], path: str, per_ki: bool = True, title: str = "") -> None:
    """A stacked bar per configuration: dynamic energy by structure (pJ per kilo-instruction)."""
    from xlat._optional import need_pyplot

    plt = need_pyplot()

    names: list[str] = []
    for r in reports.values():
        names += [s.name for s in r.structures if s.name not in names]
    width = max(6.5, min(2.5 + 0.45 * len(reports), 14))  # room for the legend and the title
    fig, ax = plt.subplots(figsize=(width, 4.8))
    bottom = [0.0] * len(reports)
    labels = list(reports)
    for n in names:
        vals = []
        for r in reports.values():
            pj = sum(s.dynamic_pj for s in r.structures if s.name == n)
            vals.append(r.per_ki(pj) if per_ki else pj)
        ax.bar(labels, vals, bottom=bottom, label=n)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_ylabel("dynamic energy (pJ per kilo-instruction)" if per_ki else "dynamic energy (pJ)")
    if title:
        import textwrap

        # wrapped to the figure (about 11 characters an inch at this size), line breaks kept
        lines = [textwrap.fill(t, width=int(width * 11)) for t in title.split("\n")]
        ax.set_title("\n".join(lines), fontsize=9)
    ax.set_xlabel("configuration")
    ax.legend(title="structure", fontsize=7, title_fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    ax.tick_params(axis="x", labelrotation=60 if len(reports) > 6 else 30, labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
