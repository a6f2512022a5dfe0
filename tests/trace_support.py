"""What the analyses' tests share (tests/test_fidelity.py, tests/test_reclaim.py,
tests/test_rainbow.py): hand-made text traces."""

from __future__ import annotations


def text_trace(tmp_path, accesses: list[tuple[int, str, int]]) -> str:
    """A text trace of (icount, kind, address) accesses by thread 1."""
    lines = ["#xlat-text 1", '#header {"format":"xlat-trace","producer":"test"}']
    lines += [f"A 1 {ic} {kind} {addr:#x} 8" for ic, kind, addr in accesses]
    p = tmp_path / "t.txt"
    p.write_text("\n".join(lines) + "\n")
    return str(p)
