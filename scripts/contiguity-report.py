#!/usr/bin/env python3
"""Tables and a plot from scripts/contiguity-survey.sh's JSON files (docs/contiguity.md).

    PYTHONPATH=python .venv/bin/python scripts/contiguity-report.py out/contiguity [PLOT.png]

Per program, the sample with the largest footprint is reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from xlat.contiguity import plot_coverage


def main(out: Path, plot: str | None) -> None:
    rows, curves = [], {}
    for f in sorted(out.glob("*.json")):
        try:
            d = json.loads(f.read_text())
        except json.JSONDecodeError:
            continue  # still being written, or the run failed
        if not d["samples"]:
            continue
        s = max(d["samples"], key=lambda x: (x["present_pages"], x["time_s"]))
        h = np.array(s["range_size_histogram"], dtype=np.int64).reshape(-1, 2)
        curves[f.stem] = np.repeat(h[:, 0], h[:, 1])
        rows.append((f.stem, len(d["samples"]), s))
    print(
        "| program | samples | at (s) | footprint (MiB) | entries 4KB + 2MB | ranges | ranges for 99% | largest range | ranges >= 8 pages | % covered by them | median / avg / max (pages) | anonymous: pages, ranges, for 99% | ideal ranges, for 99% |"
    )
    print("|---" * 13 + "|")
    for name, n, s in rows:
        a, t, i = s["anonymous"], s["threshold_range_pages"], s.get("ideal")
        print(
            f"| {name} | {n} | {s['time_s']:.0f} | {s['footprint_bytes'] / 2**20:.0f} | "
            f"{s['entries_4k']} + {s['entries_2m']} = {s['entries_with_huge_pages']} | {s['ranges']} | "
            f"{s['ranges_to_cover_99pct']} | {s['largest_range_pct']:.1f}% | {s['threshold_ranges']} | "
            f"{s['threshold_covered_pct']:.1f}% | {t['median']} / {t['average']:.0f} / {t['max']} | "
            f"{a['present_pages']}, {a['ranges']}, {a['ranges_to_cover_99pct']} | "
            + (f"{i['ranges']}, {i['ranges_to_cover_99pct']} |" if i else "- |")
        )
    if plot:
        plot_coverage(curves, plot, title="live processes (largest-footprint sample)")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
