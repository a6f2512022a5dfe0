"""The end record's figures and the header's ``format`` of a real trace, edited with their
checksums recomputed (issue 38, items 5 and 6): one sentence naming the figure and both values
from every command, and from Python a ``TraceError`` (``trace_info`` no longer reports the
edited numbers)."""

import json
import zlib
from pathlib import Path

import pytest
import xlat
from conftest import run_xlat
from test_trace_cli import one_sentence_error
from test_trace_order import REAL, blocks


def with_footer(tmp_path: Path, edit) -> tuple[Path, int]:
    """The real trace with its end record's JSON edited by ``edit``, and the record's offset."""
    head, bl, end = blocks(REAL.read_bytes())
    n = int.from_bytes(end[1:5], "little")
    footer = json.loads(end[5 : 5 + n])
    edit(footer)
    js = json.dumps(footer, separators=(",", ":")).encode()
    rec = b"E" + len(js).to_bytes(4, "little") + js + zlib.crc32(js).to_bytes(4, "little") + b"XLATEND\0"
    p = tmp_path / "t.xlat"
    p.write_bytes(head + b"".join(bl) + rec)
    return p, len(head) + sum(len(b) for b in bl)


def with_header(tmp_path: Path, edit) -> Path:
    """The real trace with its header's JSON edited by ``edit``."""
    data = REAL.read_bytes()
    n = int.from_bytes(data[12:16], "little")
    header = json.loads(data[16 : 16 + n])
    edit(header)
    js = json.dumps(header, separators=(",", ":")).encode()
    p = tmp_path / "h.xlat"
    p.write_bytes(
        data[:12] + len(js).to_bytes(4, "little") + js + zlib.crc32(js).to_bytes(4, "little") + data[20 + n :]
    )
    return p


def set_thread(key, value):
    def edit(f):
        f["threads"][0][key] = value

    return edit


FOOTER_CASES = {
    "thread accesses + 1": (
        set_thread("accesses", 20001),
        "the end record says thread 15112 made 20001 accesses but the trace holds 20000",
    ),
    "a changed tid": (
        set_thread("tid", 16004),
        "the end record does not list thread 15112, which made 20000 accesses in the trace",
    ),
    "instructions + 1000": (
        set_thread("instructions", 26500046774),
        "the end record says thread 15112's largest instruction count is 26500046774 but the trace's is 26500045774",
    ),
    "an extra thread": (
        lambda f: f["threads"].append({"tid": 16004, "accesses": 1, "instructions": 5}),
        "the end record lists thread 16004, which has no events in the trace",
    ),
    "no threads": (
        lambda f: f.update(threads=[]),
        "the end record does not list thread 15112, which made 20000 accesses in the trace",
    ),
}


def refused_everywhere(f: Path, needles: tuple[str, ...], tmp_path: Path) -> None:
    one_sentence_error(run_xlat("trace-info", str(f), check=False), *needles)
    one_sentence_error(run_xlat("trace-info", "--json", str(f), check=False), *needles)
    one_sentence_error(run_xlat("sim", str(f), check=False), *needles)
    one_sentence_error(run_xlat("convert", str(f), str(tmp_path / "out.xlat"), check=False), *needles)
    assert not (tmp_path / "out.xlat").exists()
    for call in (lambda: xlat.trace_info(str(f)), lambda: xlat.simulate(str(f))):
        with pytest.raises(xlat.TraceError) as e:
            call()
        assert all(n in str(e.value) for n in needles), str(e.value)


@pytest.mark.parametrize("case", FOOTER_CASES)
def test_an_edited_end_record_is_refused_by_every_command(tmp_path, case):
    edit, detail = FOOTER_CASES[case]
    f, offset = with_footer(tmp_path, edit)
    refused_everywhere(f, (f"{f} is corrupt at byte offset {offset}: ", detail), tmp_path)


def test_the_end_record_rewritten_unchanged_reads(tmp_path):
    f, _ = with_footer(tmp_path, lambda _: None)
    r = xlat.trace_info(str(f))
    assert r["footer"]["threads"] == [{"tid": 15112, "accesses": 20000, "instructions": 26500045774}]
    assert r["info"]["threads"]["15112"]["accesses"] == 20000


HEADER_CASES = {
    "missing": (
        lambda h: h.pop("format"),
        'the header names no format (it must hold "format": "xlat-trace")',
    ),
    "other": (lambda h: h.update(format="other"), 'the header names the format "other", not "xlat-trace"'),
    "x": (lambda h: h.update(format="x"), 'the header names the format "x", not "xlat-trace"'),
}


@pytest.mark.parametrize("case", HEADER_CASES)
def test_a_header_naming_no_or_another_format_is_refused(tmp_path, case):
    edit, detail = HEADER_CASES[case]
    f = with_header(tmp_path, edit)
    refused_everywhere(f, (f"{f} is corrupt at byte offset 16: ", detail), tmp_path)
    with pytest.raises(xlat.TraceError, match="the header names"):
        xlat.open(str(f))
