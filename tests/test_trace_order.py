"""Blocks of a real trace reordered, repeated or dropped, and text traces cut or with an
instruction count jumping to 2^64 - 1: one sentence naming where, a non-zero exit, from every
command, and from Python an exception that ``except Exception`` catches."""

from pathlib import Path

import pytest
import xlat
from conftest import run_xlat
from test_trace_cli import one_sentence_error

# The first 20,000 accesses of a real trace (python dict-lookups.py under xlat trace), in ten
# blocks of 2,000 accesses, format 1.2.
REAL = Path(__file__).parent.parent / "crates/xlat-trace/tests/corpus/trace/dict-lookups-20k.xlat"


def blocks(data: bytes) -> tuple[bytes, list[bytes], bytes]:
    """The header, the block records and the end record of a format 1.2 trace."""
    assert data[10:12] == (2).to_bytes(2, "little")
    at = 16 + int.from_bytes(data[12:16], "little") + 4
    head, out = data[:at], []
    while data[at : at + 1] == b"B":
        # tag, u64 sequence number, n_access, n_side, raw_len, comp_len, crc
        comp = int.from_bytes(data[at + 21 : at + 25], "little")
        out.append(data[at : at + 29 + comp])
        at += 29 + comp
    return head, out, data[at:]


def reassemble(tmp_path: Path, name: str, order: list[int]) -> tuple[Path, int]:
    """The real trace with its blocks in ``order``, and the offset of the first block that
    stands out of place."""
    head, bl, end = blocks(REAL.read_bytes())
    assert len(bl) == 10
    data = head + b"".join(bl[k] for k in order) + end
    first_bad = next(i for i, k in enumerate([*order, len(bl)]) if k != i)
    offset = len(head) + sum(len(bl[k]) for k in order[:first_bad])
    p = tmp_path / name
    p.write_bytes(data)
    return p, offset


CASES = {
    "swapped": ([0, 1, 2, 4, 3, 5, 6, 7, 8, 9], "block 4 stands where block 3 belongs"),
    "repeated": ([0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9], "block 2 stands where block 3 belongs"),
    "dropped": ([0, 1, 2, 3, 4, 6, 7, 8, 9], "block 6 stands where block 5 belongs"),
    "last dropped": ([0, 1, 2, 3, 4, 5, 6, 7, 8], "the end record counts 10 blocks but 9 precede it"),
}


@pytest.mark.parametrize("case", CASES)
def test_reordered_blocks_are_corrupt_in_every_command(tmp_path, case):
    order, detail = CASES[case]
    f, offset = reassemble(tmp_path, "t.xlat", order)
    needles = (f"{f} is corrupt at byte offset {offset}: ", detail)
    one_sentence_error(run_xlat("trace-info", str(f), check=False), *needles)
    one_sentence_error(run_xlat("sim", str(f), check=False), *needles)
    one_sentence_error(run_xlat("convert", str(f), str(tmp_path / "out.xlat"), check=False), *needles)
    assert not (tmp_path / "out.xlat").exists()
    for call in (lambda: xlat.trace_info(str(f)), lambda: xlat.simulate(str(f))):
        try:
            call()
        except Exception as e:  # what a user's script would write
            assert isinstance(e, xlat.TraceError)
            assert f"corrupt at byte offset {offset}: {detail}" in str(e)
        else:
            raise AssertionError("a trace with its blocks out of order was read")


def test_the_real_trace_reads_and_older_versions_upgrade(tmp_path):
    info = run_xlat("trace-info", str(REAL)).stdout
    assert "xlat 1.2" in info and "20,000" in info
    old = tmp_path / "old.xlat"
    run_xlat("convert", str(REAL), str(old), "--format-version", "1.1")
    assert old.read_bytes()[10:12] == (1).to_bytes(2, "little")
    assert "xlat 1.1 (blocks not numbered" in run_xlat("trace-info", str(old)).stdout
    new = tmp_path / "new.xlat"
    run_xlat("convert", str(old), str(new))
    assert new.read_bytes() == REAL.read_bytes()


def test_a_cut_text_trace_is_truncated(tmp_path):
    txt = tmp_path / "s.txt"
    run_xlat("convert", str(REAL), str(txt))
    lines = txt.read_text().splitlines(keepends=True)
    assert lines[0] == "#xlat-text 3\n" and lines[-1].startswith('#end {"accesses":20000,')
    # Like `head -5000 s.txt`: 2 header lines, 574 side events, then 4,424 accesses.
    cut = tmp_path / "cut.txt"
    cut.write_text("".join(lines[:5000]))
    needle = f"{cut} is truncated: it ends after 4424 accesses without the end-of-trace record"
    for cmd in (["trace-info", str(cut)], ["sim", str(cut)], ["convert", str(cut), str(tmp_path / "c.xlat")]):
        one_sentence_error(run_xlat(*cmd, check=False), needle)
    with pytest.raises(Exception, match="4424 accesses without the end-of-trace record"):
        xlat.trace_info(str(cut))
    # The whole text converts back to the same trace.
    back = tmp_path / "back.xlat"
    run_xlat("convert", str(txt), str(back))
    assert xlat.trace_info(str(back))["info"]["accesses"] == 20000


def test_an_instruction_count_jumping_to_the_top_is_refused_alike(tmp_path):
    f = tmp_path / "jump.txt"
    f.write_text(
        '#xlat-text 1\n#header {"producer":"x"}\nA 1 5 L 0x10 8\nA 1 18446744073709551615 L 0x18 8\n'
        "   \nA 1 6 L 0x20 8\n"
    )
    needle = f"{f} line 6: instruction count of thread 1 went backwards from 18446744073709551615 to 6"
    for cmd in (["trace-info", str(f)], ["sim", str(f)], ["convert", str(f), str(tmp_path / "j.xlat")]):
        one_sentence_error(run_xlat(*cmd, check=False), needle)
