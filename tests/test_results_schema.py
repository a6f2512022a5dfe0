"""One JSON shape for every command (docs/results-schema.md): each command's ``--json`` output
is validated against python/xlat/schema/xlat-results-1.schema.json, and its provenance (trace
identity, window, resolved configuration, inputs) is checked against what was run."""

import argparse
import hashlib
import json
import os
from pathlib import Path

import jsonschema
import pytest
from conftest import result, results
from xlat.cli import build_parser, main
from xlat.results import document, load, schema

GUPS = "workload:gups?size=64MiB&accesses=20000&seed=3"
MACH = str(Path(__file__).resolve().parent.parent / "configs" / "mach" / "ptlb.toml")


def json_commands(p: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> set[str]:
    """Every (sub)command of the CLI that takes --json."""
    found = set()
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                found |= json_commands(sp, (*prefix, name))
    if any("--json" in a.option_strings for a in p._actions):
        found.add(" ".join(prefix))
    return found


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("schema")
    assert main(["convert", "--no-progress", GUPS, str(d / "g.xlat")]) == 0
    return d / "g.xlat"


def run_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    results(doc)  # validated against the schema
    return doc


#: Commands whose run needs more than this file should do (QEMU, a Dask cluster, a finished
#: real-run experiment, soft-dirty bits): their --json is validated where they are tested, by
#: reading it through conftest's result()/results(), which validate.
ELSEWHERE = {
    "trace": "test_tracer.py",
    "sweep": "test_sweep.py",
    "experiment predict": "test_experiment.py",
    "reproduce": "test_reproduce.py",
}


def test_the_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(schema())


def test_every_command_with_json_is_validated_here_or_named(trace_file, capsys, tmp_path):
    t = str(trace_file)
    sim_json = tmp_path / "mach.json"
    assert main(["sim", "--no-progress", "workload:clientserver?servers=2&words=10&accesses=20000",
                 "--config", MACH, "--json", str(sim_json)]) == 0  # fmt: skip
    runs = {
        "workloads": ["workloads"],
        "trace-info": ["trace-info", t],
        "convert": ["convert", "--no-progress", t, str(tmp_path / "c.xlat")],
        "cut": ["cut", "--no-progress", t, str(tmp_path / "cut.xlat"), "--skip", "100", "--limit", "1000"],
        "sim": ["sim", "--no-progress", t],
        "rmm": ["rmm", "--no-progress", t, "--designs", "4KB,RMM"],
        "fidelity": ["fidelity", "--no-progress", t, "--epoch", "5000"],
        "reclaim": ["reclaim", "--no-progress", t],
        "mrc": ["mrc", "--no-progress", t, "--max-entries", "64"],
        "superpage-touch": ["superpage-touch", "--no-progress", t, "--interval", "1000"],
        "rainbow": ["rainbow", "--no-progress", t, "--configs", "rainbow,flat-static"],
        "contiguity": ["contiguity", t],
        "model mach": ["model", "mach", "--counts", str(sim_json), "--st", "0.5"],
        "config show": ["config", "show", "skylake"],
    }
    assert set(runs) | set(ELSEWHERE) == json_commands(build_parser())
    for f in ELSEWHERE.values():
        text = (Path(__file__).parent / f).read_text()
        assert "result(" in text, f  # the other file reads its --json through the validating helper
    for command, argv in runs.items():
        doc = run_json(capsys, *argv)
        assert doc["command"] == command and doc["argv"] == [*argv, "--json"]
        for r in doc["results"]:
            prov = r["provenance"]
            if command not in ("workloads", "model mach", "config show"):
                assert prov["trace"]["path"] == str(trace_file.resolve()), command
    # the old spellings still make the same document (trace-info's --json before the trace)
    capsys.readouterr()
    assert main(["trace-info", "--json", t]) == 0
    assert result(capsys.readouterr().out)["info"]["accesses"] == 20000


def test_provenance_names_the_trace_by_content_the_window_and_the_resolved_configuration(trace_file, capsys):
    t = str(trace_file)
    argv = [
        "sim",
        "--no-progress",
        t,
        "--cpu",
        "skylake",
        "--cpu",
        "zen4",
        "--set",
        "skylake:tlb.stlb.entries=3072",
    ]
    doc = run_json(capsys, *argv, "--skip", "1000", "--warmup", "2000", "--limit", "5000")
    sky, zen = doc["results"]
    digest = hashlib.sha256(trace_file.read_bytes()).hexdigest()
    for r in (sky, zen):
        p = r["provenance"]
        assert p["trace"] == {
            "spec": t,
            "path": str(trace_file.resolve()),
            "bytes": trace_file.stat().st_size,
            "sha256": digest,
        }
        assert p["window"] == {"skip": 1000, "warmup": 2000, "limit": 5000}
        assert r["counters"]["accesses"] == 5000
    # the configuration is the resolved one, as `xlat config show` resolves it
    shown = run_json(capsys, "config", "show", "skylake", "--set", "tlb.stlb.entries=3072")["results"][0]
    assert sky["provenance"]["config"] == shown["config"] == shown["provenance"]["config"]
    assert {t["name"]: t["entries"] for t in sky["provenance"]["config"]["tlb"]}["stlb"] == 3072
    assert zen["provenance"]["config"]["name"] == "zen4"
    # a generated workload is named by its spec (it is deterministic), with no file behind it
    w = run_json(capsys, "sim", "--no-progress", GUPS)["results"][0]["provenance"]
    assert w["trace"] == {"spec": GUPS, "path": None, "bytes": None, "sha256": None} and w["window"] is None


def test_a_trace_is_hashed_once_and_again_when_it_changes(tmp_path, monkeypatch):
    from xlat.results import trace_identity

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    f = tmp_path / "t.txt"
    f.write_text("R 0x1000 8\n")
    first = trace_identity(str(f))
    assert first["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
    (memo,) = (tmp_path / "cache" / "xlat" / "sha256").iterdir()
    memo.write_text("0" * 64 + "\n")  # the memo is what is read while the file is unchanged
    assert trace_identity(str(f))["sha256"] == "0" * 64
    st = f.stat()
    f.write_text("R 0x2000 8\n")  # same size, new content; even with the old modification time
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert trace_identity(str(f))["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
    # behind an importer prefix, the file is what is hashed
    lk = trace_identity(f"lackey:{f}")
    assert lk["path"] == str(f.resolve()) and lk["spec"] == f"lackey:{f}"


def test_the_schema_rejects_what_is_not_a_results_document():
    v = jsonschema.Draft202012Validator(schema())
    good = document("sim", {"config_name": "x", "config_hash": "0", "config": {}, "policy": "4k",
                            "counters": {"accesses": 1}, "derived": {}, "trace": "t"})  # fmt: skip
    assert not list(v.iter_errors(good))
    no_prov = json.loads(json.dumps(good))
    del no_prov["results"][0]["provenance"]
    float_counter = json.loads(json.dumps(good))
    float_counter["results"][0]["counters"]["accesses"] = 1.5
    bare = good["results"]  # the bare list `xlat rmm --json` used to write
    missing = json.loads(json.dumps(good))
    del missing["results"][0]["counters"]
    for bad in (no_prov, float_counter, bare, missing):
        assert list(v.iter_errors(bad))


def test_nan_is_written_as_null_and_load_reads_every_shape(tmp_path):
    doc = document("rainbow", [{"config": "rainbow", "ipc_vs_flat": float("nan"), "x": [float("inf")]}])
    assert doc["results"][0]["ipc_vs_flat"] is None and doc["results"][0]["x"] == [None]
    json.dumps(doc, allow_nan=False)  # strict JSON
    f = tmp_path / "d.json"
    f.write_text(json.dumps(doc))
    assert load(f)[0]["config"] == "rainbow"
    assert load({"counters": {}}) == [{"counters": {}}]  # one object, as `xlat sim --json` wrote
    assert load({"results": [{"a": 1}, {"a": 2}]}) == [{"a": 1}, {"a": 2}]
    assert load([{"design": "4KB"}]) == [{"design": "4KB"}]
