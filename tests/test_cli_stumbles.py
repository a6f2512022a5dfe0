"""The CLI stumbles of issue 24 (items 8-13): one --json convention, progress and timing that say
where the time went, quoted help examples, one number format in the result table, and --set for
one configuration among several."""

import json
import re
import shlex
import time

import pytest
from conftest import result, run_xlat
from xlat.cli.notice import still_running
from xlat.cli.numfmt import count, ratio, share

GUPS = "workload:gups?size=64MiB&accesses=1000&seed=3"


def one_sentence_error(p, *needles: str) -> str:
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlat: error: "), p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# ---- item 8: --json [FILE], '-' or no value = stdout, everywhere ---------------------------------


def test_json_dash_is_stdout_for_sim_and_writes_no_file_named_dash(tmp_path):
    p = run_xlat("sim", GUPS, "--json", "-", cwd=tmp_path)
    assert result(p.stdout)["counters"]["accesses"] == 1000  # stdout is the JSON document alone
    assert not (tmp_path / "-").exists()
    p = run_xlat("sim", GUPS, "--json", cwd=tmp_path)
    assert result(p.stdout)["counters"]["accesses"] == 1000


def test_json_file_keeps_the_table_on_stdout(tmp_path):
    p = run_xlat("sim", GUPS, "--json", "r.json", cwd=tmp_path)
    assert result((tmp_path / "r.json").read_text())["counters"]["accesses"] == 1000
    assert "walks (M)" in p.stdout
    p = run_xlat("trace-info", GUPS, "--json", "i.json", cwd=tmp_path)
    assert result((tmp_path / "i.json").read_text())["info"]["accesses"] == 1000
    assert re.search(r"^accesses\s+1,000 ", p.stdout, re.M)


@pytest.mark.parametrize(
    "argv",
    [
        ["trace-info", GUPS, "--json", "-"],
        ["trace-info", "--json", GUPS],  # the old switch form, before the trace
        ["trace-info", GUPS, "--json"],
        ["convert", "--json", GUPS, "out.xlat"],  # old switch form of convert
        ["convert", GUPS, "out.xlat", "--json", "-"],
    ],
)
def test_json_stdout_forms_old_and_new(tmp_path, argv):
    doc = result(run_xlat(*argv, cwd=tmp_path).stdout)
    assert (doc["info"] if "info" in doc else doc)["accesses"] == 1000


def test_help_and_docs_agree_on_json(tmp_path):
    for cmd in ("trace", "trace-info", "sim", "convert", "rmm", "fidelity", "workloads", "contiguity"):
        out = " ".join(run_xlat(cmd, "--help").stdout.split())
        assert "[--json [FILE]]" in out, cmd
    from conftest import ROOT

    doc = (ROOT / "docs" / "tracing.md").read_text()
    assert "[--json [FILE]]" in doc and "prints a JSON summary on stdout instead" not in doc


# ---- item 10: xlat --help examples are quoted ------------------------------------------------------


def test_help_examples_survive_the_shell():
    out = run_xlat("--help").stdout
    examples = out.split("examples", 1)[1].splitlines()[1:]
    specs = 0
    for line in examples:
        cmd = line.split("#", 1)[0].strip()
        if "workload:" not in cmd:
            continue
        specs += 1
        # shlex splits as a POSIX shell would: a spec must stay one word with its ? and &
        words = shlex.split(cmd)
        spec = next(w for w in words if w.startswith("workload:"))
        assert f"'{spec}'" in cmd, line
    assert specs >= 2


# ---- item 11: the rate line separates generating the workload from simulating ---------------------


def test_rate_line_reports_generation_and_simulation_apart():
    p = run_xlat("sim", "workload:bfs?scale=14&accesses=20000")
    m = re.search(
        r"simulated 20,000 accesses in ([\d.]+) s: generating the workload ([\d.]+) s, "
        r"simulating ([\d.]+) s \(([\d.]+) M accesses/s\)",
        p.stderr,
    )
    assert m, p.stderr
    wall, gen, sim = (float(m[i]) for i in (1, 2, 3))
    assert gen + sim <= wall + 0.02
    assert gen > 0  # bfs builds its graph before the first access


# ---- item 12: one number format, and a legend for H, M, C -----------------------------------------


def test_number_rule_by_hand():
    assert [ratio(v) for v in (161.0, 161.23, 1.2421, 0.0123456, 12345.6, 0.0)] == [
        "161.0",
        "161.2",
        "1.242",
        "0.01235",
        "12,346",
        "0",
    ]
    assert [count(v) for v in (1234567, 12.0, None, float("inf"))] == ["1,234,567", "12", "n/a", "n/a"]
    assert share(0.1234) == "12.3%" and ratio(float("nan")) == "n/a"


def test_table_has_one_precision_per_kind_and_a_legend():
    p = run_xlat("sim", "--policies", "4k,thp", "workload:bfs?scale=14&accesses=20000")
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^(\S.*?)\s{2,}(\S+)\s+(\S+)$", line)
        if m:
            rows[m[1]] = (m[2], m[3])
    for label in ("TLB L1 MPKI", "TLB L2 MPKI", "loads per walk", "cycles per walk"):
        for cell in rows[label]:
            digits = cell.replace(",", "").replace(".", "").lstrip("0")
            assert len(digits) == 4 or (len(digits) > 4 and "." not in cell), (label, cell)
    for label in ("accesses", "walks (M)", "walk cycles (C)", "L2-TLB hits (H)"):
        assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", c) for c in rows[label]), (label, rows[label])
    assert rows["accesses"] == ("20,000", "20,000")
    legend = " ".join(p.stdout.split())
    assert "H: translations that missed the first-level TLB" in legend
    assert "M: page walks" in legend and "C: cycles spent in page walks" in legend


# ---- item 13: --set NAME:KEY=VALUE for one configuration ------------------------------------------


def test_set_for_one_configuration(tmp_path):
    p = run_xlat(
        "sim",
        "--cpu",
        "skylake",
        "--cpu",
        "zen4",
        "--set",
        "skylake:tlb.stlb.entries=3072",
        "--set",
        "zen4:tlb.l2d.entries=3072",
        "--set",
        "sim.base_cpi=2",
        GUPS,
        "--json",
    )
    sky, zen = json.loads(p.stdout)["results"]
    tlbs = {c["config_name"]: {t["name"]: t["entries"] for t in c["config"]["tlb"]} for c in (sky, zen)}
    assert tlbs["skylake"]["stlb"] == 3072 and "l2d" not in tlbs["skylake"]
    assert tlbs["zen4"]["l2d"] == 3072 and "stlb" not in tlbs["zen4"]
    assert sky["config"]["sim"]["base_cpi"] == zen["config"]["sim"]["base_cpi"] == 2.0


def test_set_for_a_configuration_by_file_name(tmp_path):
    from conftest import ROOT

    cfg = str(ROOT / "configs" / "cpus" / "haswell.toml")
    p = run_xlat(
        "sim", "--cpu", "skylake", "--config", cfg, "--set", "haswell:tlb.stlb.entries=1536", GUPS, "--json"
    )
    sky, has = json.loads(p.stdout)["results"]
    assert {t["name"]: t["entries"] for t in has["config"]["tlb"]}["stlb"] == 1536
    assert {t["name"]: t["entries"] for t in sky["config"]["tlb"]}["stlb"] == 1536  # the preset's own


def test_set_errors_name_the_configuration():
    p = run_xlat(
        "sim", "--cpu", "skylake", "--cpu", "zen4", "--set", "amd:tlb.stlb.entries=2048", GUPS, check=False
    )
    one_sentence_error(p, "'amd'", "skylake, zen4")
    p = run_xlat(
        "sim", "--cpu", "skylake", "--cpu", "zen4", "--set", "tlb.stlb.entries=3072", GUPS, check=False
    )
    one_sentence_error(p, "zen4", "no tlb named 'stlb'")
    p = run_xlat("sim", "--cpu", "zen4", "--set", "zen4:tlb.stlb.entries=3072", GUPS, check=False)
    one_sentence_error(p, "zen4", "no tlb named 'stlb'")


# ---- item 9: a progress bar over several configurations, forced with --progress --------------------


def test_progress_forced_without_a_terminal_over_several_configurations():
    # stderr is a pipe here; two configurations of about a second each
    p = run_xlat(
        "sim",
        "--progress",
        "--threads",
        "1",
        "--cpu",
        "skylake",
        "--cpu",
        "haswell",
        "workload:gups?size=1GiB&accesses=3000000",
    )
    bars = [line for line in p.stderr.splitlines() if line.startswith("simulating") and "%" in line]
    assert bars, p.stderr
    # one bar over the input, read once for both configurations
    assert any("simulating 2 configurations, input read once" in b for b in bars)
    assert "\x1b[" not in p.stderr  # plain lines, no cursor movement in a log


def test_no_progress_draws_nothing():
    p = run_xlat("sim", "--no-progress", "--cpu", "skylake", "--cpu", "haswell", GUPS)
    assert not [line for line in p.stderr.splitlines() if "%" in line]


def test_a_long_silent_run_says_something(capsys):
    with still_running("simulating x", after=0.2):
        time.sleep(0.5)
    assert capsys.readouterr().err == "xlat: simulating x\n"
    with still_running("quick", after=0.5):
        pass
    time.sleep(0.7)
    assert capsys.readouterr().err == ""


def test_every_long_command_says_it_is_still_running(capsys):
    """mrc, fidelity, reclaim, superpage-touch, convert, cut, import and export run their work
    through notice.noting (issue 37, item 8): a line after 3 s without a bar, nothing with one."""
    import inspect

    from xlat.cli import convert, fidelity, mrc, reclaim, touch
    from xlat.cli.notice import noting

    assert noting("sleeping", False, lambda x: time.sleep(0.5) or x, 7) == 7
    assert capsys.readouterr().err == ""  # quicker than the first line
    for mod, fn in [
        (mrc, "cmd_mrc"),
        (fidelity, "cmd_fidelity"),
        (reclaim, "cmd_reclaim"),
        (touch, "cmd_touch"),
        (convert, "cmd_convert"),
        (convert, "cmd_cut"),
        (convert, "cmd_import"),
        (convert, "cmd_export"),
    ]:
        assert "noting(" in inspect.getsource(getattr(mod, fn)), fn


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["mrc", "--sets", ""], "--sets needs at least one number of sets"),
        (["rainbow", "--configs", ""], "--configs needs at least one configuration"),
        (["rmm", "--designs", ""], "--designs needs at least one design"),
        (["fidelity", "--granularities", ""], "--granularities needs at least one granularity"),
        (["sim", "--policies", ""], "--policies needs at least one page policy"),
    ],
)
def test_an_option_given_an_empty_list_is_refused_not_taken_for_the_default(args, sentence):
    # Issue 38, item 10: `--designs ''` and the like ran the defaults without a word.
    w = "workload:stream?size=16MiB&accesses=1000"
    one_sentence_error(run_xlat(args[0], w, *args[1:], check=False), sentence)


def test_help_imports_no_numpy_and_the_contiguity_default_is_the_library_s():
    # Issue 37, item 15: `xlat --help` imported numpy (0.9 s under load) through the contiguity
    # command's module; it is imported when that command runs.
    import subprocess
    import sys

    import xlat.cli.contiguity as cli_contiguity
    import xlat.contiguity as contiguity

    code = "import sys; from xlat.cli import build_parser; build_parser(); print('numpy' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "False"
    assert cli_contiguity.DEFAULT_THRESHOLD == contiguity.DEFAULT_THRESHOLD


def test_a_long_run_without_a_terminal_says_so_periodically(capsys):
    # Issue 37, item 8: Rainbow was silent for 3 minutes, RMM for 1.5, when stderr was not a
    # terminal. still_running (sim, trace, rmm, rainbow, trace-info) now says so after a few
    # seconds and then once every 30 s; a short run prints nothing.
    import time

    from xlat.cli import notice

    with notice.still_running("working", after=0.05, every=0.2):
        time.sleep(0.5)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "xlat: working" and len(lines) >= 2
    assert all(ln.startswith("xlat: ... still running after ") for ln in lines[1:])
    with notice.still_running("quick", after=0.5):
        pass
    assert capsys.readouterr().err == ""
