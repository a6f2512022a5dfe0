"""The Python API as a notebook user meets it (issue 37, item 6): tab completion finds the lazily
imported API, ``from xlat import *`` leaves the builtin ``open`` alone, ``set=`` takes a mapping,
``policy=`` is a keyword, and a wrong ``set=`` is one sentence."""

from __future__ import annotations

import builtins

import pytest
import xlat

SPEC = "workload:gups?size=1GiB&accesses=3000"


def test_dir_lists_the_lazy_api():
    names = dir(xlat)
    for n in ("simulate", "simulate_many", "mrc", "open", "read_accesses", "cut", "Run", "SimResult"):
        assert n in names, n


def test_star_import_keeps_the_builtin_open():
    ns: dict = {}
    exec("from xlat import *", ns)
    assert "open" not in ns and "simulate" in ns and "mrc" in ns
    exec("x = open", {**ns, "__builtins__": builtins})
    assert xlat.open is not builtins.open


def test_set_takes_a_mapping_and_policy_is_a_keyword():
    a = xlat.simulate(SPEC, set={"tlb.stlb.entries": 3072, "sim.data_through_caches": True}, policy="thp")
    b = xlat.simulate(SPEC, set=["tlb.stlb.entries=3072", "sim.data_through_caches=true", "os.policy=thp"])
    assert a.counters == b.counters and a.config_hash == b.config_hash
    assert a.policy == "thp-always"
    assert any(t["name"] == "stlb" and t["entries"] == 3072 for t in a.config["tlb"])
    runs = [xlat.Run(cpu="skylake", policy=p) for p in ("4k", "thp")]
    assert [r.policy for r in xlat.simulate_many(SPEC, runs)] == ["4k", "thp-always"]


@pytest.mark.parametrize("bad", [5, [3072], {"tlb.nope.entries": 1}])
def test_a_wrong_set_is_one_sentence(bad):
    with pytest.raises(xlat.ConfigError) as e:
        xlat.simulate(SPEC, set=bad)
    assert "\n" not in str(e.value)
