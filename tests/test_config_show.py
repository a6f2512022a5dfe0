"""Composable configurations (issue 37, item 10): ``extends`` (the Rust tests in
crates/xlat-core/src/config/tests.rs check the merge), ``xlat config list`` and ``xlat config
show``, and an unknown structure name answered with the names that exist."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import xlat
from xlat.sim import Run, presets

ROOT = Path(__file__).resolve().parents[1]
SPEC = "workload:gups?size=1GiB&accesses=20000"


def xlat_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xlat", *args], capture_output=True, text=True)


def test_list_names_every_preset():
    p = xlat_cli("config", "list")
    assert p.returncode == 0, p.stderr
    assert [ln.split()[0] for ln in p.stdout.splitlines()] == presets()


def test_show_prints_a_configuration_that_simulates_as_the_preset(tmp_path):
    p = xlat_cli("config", "show", "skylake", "--set", "tlb.stlb.entries=3072")
    assert p.returncode == 0, p.stderr
    f = tmp_path / "shown.toml"
    f.write_text(p.stdout)
    a = xlat.simulate(SPEC, config=str(f))
    b = xlat.simulate(SPEC, cpu="skylake", set={"tlb.stlb.entries": 3072})
    assert a.counters == b.counters and a.config_hash == b.config_hash


def test_the_lite_files_that_extend_sandybridge_resolve_as_their_full_copies_did(tmp_path):
    # configs/lite/4k.toml is `extends = "sandybridge"` plus a 2-way PDE cache.
    lite = Run(config=str(ROOT / "configs" / "lite" / "4k.toml")).check()
    sandy = Run(cpu="sandybridge", set={"psc.pde.ways": 2}).check()
    for k in ("tlb", "psc", "cache", "walker", "os", "memory", "sim"):
        assert lite[k] == sandy[k], k
    assert lite["name"] == "lite-4k"


def test_an_unknown_structure_lists_the_names_that_exist():
    p = xlat_cli("sim", "--cpu", "skylake", "--set", "tlb.l2d.entries=3", SPEC)
    assert p.returncode == 1
    assert "there is no tlb named 'l2d' (this configuration's: 'l1d-4k'" in p.stderr and "'stlb'" in p.stderr


def test_show_of_an_unknown_name_is_one_sentence():
    p = xlat_cli("config", "show", "pentium")
    assert p.returncode == 1
    assert p.stderr.strip().startswith("xlat: error: 'pentium' is neither a preset (sandybridge,")
    assert p.stderr.count("\n") == 1


def test_shipped_layouts_by_name(tmp_path):
    # Issue 37, item 5 (in part): `--layout all-2MB` names a shipped layout, as `--cpu skylake`
    # names a preset; a name that is neither a file nor a shipped layout lists the names.
    by_name = xlat.simulate(SPEC, layout="all-2MB")
    by_path = xlat.simulate(SPEC, layout=str(ROOT / "configs" / "layouts" / "all-2MB.toml"))
    assert by_name.counters == by_path.counters and by_name.policy == "mosaic"
    p = xlat_cli("sim", SPEC, "--layout", "all-3MB")
    assert p.returncode == 1
    assert "nor is it a shipped layout's name (all-1GB, all-2MB, all-4KB, mixed)" in p.stderr


def test_shipped_configurations_by_name():
    # `--config rainbow/hscc-4kb` names configs/rainbow/hscc-4kb.toml; config list --all names them.
    a = xlat.simulate(SPEC, config="lite/4k")
    b = xlat.simulate(SPEC, config=str(ROOT / "configs" / "lite" / "4k.toml"))
    assert a.counters == b.counters and a.config_name == "lite-4k"
    p = xlat_cli("config", "list", "--all")
    assert p.returncode == 0 and "rainbow/hscc-4kb" in p.stdout and "all-2MB" in p.stdout
    with pytest.raises(xlat.ConfigError, match="nor is it a shipped configuration's name"):
        xlat.simulate(SPEC, config="rainbow/nope")


L3 = {
    "level": 3,
    "role": "unified",
    "entries": 4096,
    "ways": 8,
    "page_sizes": ["4KB", "2MB"],
    "latency": 20,
}


def test_set_adds_and_removes_a_structure_as_a_file_would(tmp_path):
    """--set ARRAY.NAME={...} adds a structure (here a third-level TLB), and {remove = true}
    drops one; the same as an extends file that writes them, counter for counter."""
    f = tmp_path / "l3.toml"
    f.write_text(
        'extends = "skylake"\nname = "skylake"\n[[tlb]]\nname = "l3"\nlevel = 3\nrole = "unified"\n'
        'entries = 4096\nways = 8\npage_sizes = ["4KB", "2MB"]\nlatency = 20\n'
        '[[tlb]]\nname = "l1i-2m"\nremove = true\n'
    )
    from_file = xlat.simulate(SPEC, config=str(f))
    from_set = xlat.simulate(SPEC, cpu="skylake", set={"tlb.l3": L3, "tlb.l1i-2m": {"remove": True}})
    assert from_set.counters == from_file.counters and from_set.config_hash == from_file.config_hash
    names = [t["name"] for t in from_set.config["tlb"]]
    assert "l3" in names and "l1i-2m" not in names
    # the third level catches misses of the second: it changes the walks
    plain = xlat.simulate(SPEC, cpu="skylake")
    assert from_set.counters["walker.walks"] < plain.counters["walker.walks"]
    # the command line, the same
    inline = "{" + ", ".join(f"{k} = {v!r}".replace("'", '"') for k, v in L3.items()) + "}"
    p = xlat_cli(
        "config", "show", "skylake", "--set", f"tlb.l3={inline}", "--set", "tlb.l1i-2m={remove = true}"
    )
    assert p.returncode == 0, p.stderr
    shown = tmp_path / "shown.toml"
    shown.write_text(p.stdout)
    assert xlat.simulate(SPEC, config=str(shown)).counters == from_file.counters


def test_adding_a_structure_without_its_fields_is_one_sentence():
    p = xlat_cli("sim", "--cpu", "skylake", "--set", "tlb.l3={level = 3, entries = 64}", SPEC)
    assert p.returncode == 1
    (line,) = p.stderr.strip().splitlines()
    assert "'l3'" in line and "missing field" in line, line
