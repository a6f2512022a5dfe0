"""Every pair of designs either runs or is refused with the same sentence by ``Run.check()``,
``xlat.simulate()`` and ``xlat sim``: the conflicts come from the assembly room's plan
(crates/xlat-core/src/assembly/plan.rs), which the configuration's checks and the simulator share.

Each design is the part of a reference configuration that makes it (its sections and keys,
copied over the Skylake preset, and the sections it replaces removed); a pair is both parts on
the preset."""

from __future__ import annotations

import copy
import itertools
import tomllib
from pathlib import Path

import pytest
import tomli_w
import xlat
from xlat import sim
from xlat._native import ConfigError
from xlat.cli.config import without_none

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = "workload:stream?size=64MiB&accesses=3000"


def section(path: str, *keys: str) -> dict:
    """The dotted `keys` of the configuration file `path` (relative to the checkout); a file that
    `extends` a preset is read as it resolves (`xlat config show`)."""
    data = tomllib.loads((ROOT / path).read_text())
    if "extends" in data:
        data = without_none(sim.Run(config=str(ROOT / path)).check())
    out: dict = {}
    for k in keys:
        *parents, leaf = k.split(".")
        src, dst = data, out
        for p in parents:
            src, dst = src[p], dst.setdefault(p, {})
        dst[leaf] = src[leaf]
    return out


# design -> (what it sets, the top-level or dotted keys it removes first)
DESIGNS: dict[str, tuple[dict, tuple[str, ...]]] = {
    "range_tlb": (section("configs/rmm/rmm.toml", "range_tlb", "os.allocation", "os.ranges"), ()),
    "cluster_tlb": (section("configs/rmm/ctlb.toml", "cluster_tlb", "os.allocation"), ()),
    "direct_segment": (section("configs/rmm/ds.toml", "direct_segment", "os.allocation", "os.ranges"), ()),
    "lite": (section("configs/lite/tlb-lite.toml", "lite", "tlb"), ("tlb",)),
    "prism": ({"prism": {"enabled": True}, "os": {"metadata": "registry"}}, ()),
    "mach": (section("configs/mach/tlb-only.toml", "mach"), ("tlb", "psc")),
    "software": ({"walker": {"kind": "software"}}, ("psc",)),
    "kinds": (section("configs/rainbow/hscc-4kb.toml", "memory"), ("memory",)),
    "hscc": (
        section("configs/rainbow/hscc-4kb.toml", "memory", "hybrid", "sim.data_through_caches"),
        ("memory",),
    ),
    "rainbow": (
        section("configs/rainbow/rainbow.toml", "memory", "hybrid", "sim.data_through_caches", "os.policy"),
        ("memory",),
    ),
    "contiguity": ({"sim": {"contiguity_every": 1000}}, ()),
    "prefetch": ({"tlb_prefetch": {"kind": "distance"}}, ()),
    "virt": (section("configs/virt/skylake.toml", "virt"), ()),
    "hashed": (section("configs/hashed/cuckoo.toml", "hashed_pt"), ("psc",)),
}


def merge(into: dict, part: dict) -> None:
    for k, v in part.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v


def config(names: tuple[str, ...]) -> dict:
    data = tomllib.loads((ROOT / "configs/cpus/skylake.toml").read_text())
    data["name"] = "+".join(names)
    for n in names:
        part, removes = DESIGNS[n]
        for r in removes:
            data.pop(r, None)
        merge(data, copy.deepcopy(part))
    return data


def outcomes(path: Path) -> tuple[str | None, str | None]:
    """What Run.check() and simulate() say of the configuration at `path`: None
    where it ran, else its sentence."""
    run = sim.Run(config=str(path))
    try:
        run.check()
        checked = None
    except ConfigError as e:
        checked = str(e)
    try:
        xlat.simulate(WORKLOAD, config=str(path))
        simulated = None
    except ConfigError as e:
        simulated = str(e)
    return checked, simulated


def test_every_design_runs_alone(tmp_path):
    for name in DESIGNS:
        f = tmp_path / f"{name}.toml"
        f.write_text(tomli_w.dumps(config((name,))))
        checked, simulated = outcomes(f)
        assert checked is None and simulated is None, f"{name}: {checked or simulated}"


@pytest.mark.slow
def test_every_pair_runs_or_gets_one_sentence_everywhere(tmp_path, xlat_cli):
    seen: dict[tuple[str, str], str] = {}
    for pair in itertools.combinations(DESIGNS, 2):
        f = tmp_path / f"{'+'.join(pair)}.toml"
        f.write_text(tomli_w.dumps(config(pair)))
        checked, simulated = outcomes(f)
        assert checked == simulated, f"{pair}: Run.check() said {checked!r}, simulate() {simulated!r}"
        cli = xlat_cli("sim", "--config", str(f), WORKLOAD, check=False)
        if checked is None:
            assert cli.returncode == 0, f"{pair}: xlat sim failed where the API ran:\n{cli.stderr}"
        else:
            assert cli.returncode == 1, f"{pair}: xlat sim exited {cli.returncode}:\n{cli.stderr}"
            # (The CLI names the configuration's file before the sentence.)
            said = cli.stderr.strip()
            assert said.startswith("xlat: error: ") and said.endswith(checked), f"{pair}: {said}"
            seen[pair] = checked
    # What is refused, and by which rule: the plan's (no copy of the loop runs the pair) or a
    # section's own. A change here is a change of the table or of a section's rules.
    plan = {p for p, s in seen.items() if "cannot run together yet" in s}
    assert plan == PLAN_REFUSES, sorted(plan ^ PLAN_REFUSES)
    assert set(seen) - plan == SECTION_REFUSES, sorted((set(seen) - plan) ^ SECTION_REFUSES)


# No copy of the loop serves both designs' claims (COPIES in assembly/plan.rs).
PLAN_REFUSES: set[tuple[str, str]] = {
    ("range_tlb", "hscc"),
    ("range_tlb", "rainbow"),
    ("cluster_tlb", "hscc"),
    ("cluster_tlb", "rainbow"),
    ("direct_segment", "hscc"),
    ("direct_segment", "rainbow"),
    ("lite", "prism"),
    ("lite", "mach"),
    ("lite", "kinds"),
    ("lite", "hscc"),
    ("lite", "rainbow"),
    ("prism", "mach"),
    ("prism", "hscc"),
    ("prism", "rainbow"),
    ("mach", "software"),
    ("mach", "kinds"),
    ("mach", "hscc"),
    ("mach", "rainbow"),
    ("software", "hscc"),
    ("software", "rainbow"),
    ("hscc", "prefetch"),
    ("rainbow", "prefetch"),
    # One miss handler each: nested paging's and the hashed tables' against the others.
    ("lite", "virt"),
    ("lite", "hashed"),
    ("mach", "virt"),
    ("mach", "hashed"),
    ("software", "virt"),
    ("software", "hashed"),
    ("hscc", "hashed"),
    ("rainbow", "hashed"),
}

# A section's own rule refuses the pair first (Mach has no TLB levels for a miss-path stage or a
# prefetcher; Lite needs the radix walker; two [hybrid] sections make one Rainbow with HSCC's counting;
# [virt] and [hashed_pt] name what they do not run with).
SECTION_REFUSES: set[tuple[str, str]] = {
    ("range_tlb", "mach"),
    ("cluster_tlb", "mach"),
    ("direct_segment", "mach"),
    ("lite", "software"),
    ("hscc", "rainbow"),
    ("mach", "prefetch"),
    # [virt]'s rule: designs that read the guest's frames as the machine's.
    ("range_tlb", "virt"),
    ("cluster_tlb", "virt"),
    ("direct_segment", "virt"),
    ("prism", "virt"),
    ("kinds", "virt"),
    ("hscc", "virt"),
    ("rainbow", "virt"),
    ("prefetch", "virt"),
    # [hashed_pt]'s: PRISM's registry sits beside radix page-directory pages.
    ("prism", "hashed"),
}
