"""Metadata fidelity (PRISM, Ausavarungnirun et al. 2020, Section 3): how well G access/dirty
bits per 2MB page approximate the 512 bits of its 4KB pages, per epoch, from any trace or
workload.

The work is one pass in Rust (``xlat_core::analysis::fidelity``); this module passes the
options, and turns the result into tables and plots. ``docs/prism.md`` defines every figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlat import _native

__all__ = ["DEFAULT_EPOCH", "DEFAULT_SCALES", "GRANULARITIES", "FidelityResult", "analyze", "plot_loss"]

#: Instructions per epoch: "An epoch is a period of 100 million retired instructions" (Ausavarungnirun
#: et al. 2020, Section 3.1).
DEFAULT_EPOCH = 100_000_000
#: Window lengths of the spatial/temporal study, in epochs: Figure 3's 100 ms base and 200 ms to
#: 12.8 s (Ausavarungnirun et al. 2020, Section 3.1).
DEFAULT_SCALES = (1, 2, 4, 8, 16, 32, 64, 128)
#: Bits per 2MB page: 1 (THP) to 512 (4KB pages).
GRANULARITIES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)

_U32, _U64 = 1 << 32, 1 << 64


@dataclass
class FidelityResult:
    """The analysis of one trace: ``data`` is the JSON object the Rust analysis returns
    (``accessed``/``dirty``: per G mean, std, distinct, entropy; ``scales``: per window length the
    spatial loss per G and the temporal loss)."""

    trace: str
    data: dict[str, Any]

    @property
    def granularities(self) -> list[int]:
        return list(self.data["granularities"])

    def warnings(self) -> list[str]:
        """What makes rows of this result say less than they seem to (issue 37, item 13): a trace
        shorter than one epoch is one partial epoch, and a window longer than the trace repeats
        the shortest window that holds it, with no temporal loss (there is no second window)."""
        d, out = self.data, []
        n, epoch = d["instructions"], d["epoch"]
        if n < epoch:
            out.append(
                f"the trace has {n:,} instructions, fewer than one epoch of {epoch:,}: the whole trace is "
                f"one partial epoch; give an epoch well below {n:,} (--epoch)"
            )
        long = [sc["epoch"] for sc in d["scales"] if sc["epoch"] > n and sc["epoch"] > epoch]
        if long:
            out.append(
                f"{len(long)} window length(s) ({', '.join(f'{x:,}' for x in long)} instructions) exceed the "
                f"trace's {n:,} instructions: their rows repeat a window that holds the whole trace, and "
                "their temporal loss is 0 because no second window exists"
            )
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One row per (metadata type, G): loss mean and standard deviation (fractions),
        distinct vectors and entropy (bits)."""
        out = []
        for kind in ("accessed", "dirty"):
            for s in self.data[kind]:
                out.append({"type": kind, **{k: s[k] for k in ("g", "mean", "std", "distinct", "entropy")}})
        return out

    def scale_rows(self) -> list[dict[str, Any]]:
        """One row per (window length, G): spatial loss of both types, and the window's temporal
        loss (the same for every G)."""
        out = []
        for sc in self.data["scales"]:
            for j, g in enumerate(self.granularities):
                out.append(
                    {
                        "epoch": sc["epoch"],
                        "k": sc["k"],
                        "samples": sc["samples"],
                        "g": g,
                        "spatial_accessed": sc["spatial_accessed"][j],
                        "spatial_dirty": sc["spatial_dirty"][j],
                        "temporal_accessed": sc["temporal_accessed"],
                        "temporal_dirty": sc["temporal_dirty"],
                        "temporal_accessed_per_set_bit": sc["temporal_accessed_per_set_bit"],
                        "temporal_dirty_per_set_bit": sc["temporal_dirty_per_set_bit"],
                    }
                )
        return out

    def to_pandas(self):
        """The per-G table (:meth:`rows`) indexed by (type, g)."""
        from xlat._optional import need_pandas

        pd = need_pandas("to_pandas()")

        return pd.DataFrame(self.rows()).set_index(["type", "g"])

    def scales_to_pandas(self):
        """The per-window table (:meth:`scale_rows`) indexed by (epoch, g)."""
        from xlat._optional import need_pandas

        pd = need_pandas("scales_to_pandas()")

        return pd.DataFrame(self.scale_rows()).set_index(["epoch", "g"])

    def to_json(self) -> dict[str, Any]:
        return {"trace": self.trace, **self.data, "warnings": self.warnings()}

    def loss(self, kind: str, g: int) -> float:
        """Mean fidelity loss of ``kind`` ("accessed" or "dirty") at ``g`` bits per 2MB page."""
        return next(s["mean"] for s in self.data[kind] if s["g"] == g)

    def plot(self, path: str | Path, title: str | None = None) -> None:
        """Fidelity loss against G, accessed and dirty, to a PNG."""
        plot_loss({title or self.trace: self}, path)


def _check_range(v: int, limit: int, sentence: str) -> None:
    if not isinstance(v, int) or not 0 <= v < limit:
        raise ValueError(sentence.format(v=v))


def analyze(
    trace_or_spec: str | Path,
    epoch: int = DEFAULT_EPOCH,
    granularities: tuple[int, ...] | list[int] = GRANULARITIES,
    epochs: tuple[int, ...] | list[int] | None = None,
    progress: bool = False,
    *,
    skip: int = 0,
    limit: int | None = None,
) -> FidelityResult:
    """Analyse a trace file or ``workload:`` spec in one pass.

    ``epoch``: instructions per epoch (the bits are cleared at each epoch's end).
    ``granularities``: bits per 2MB page, powers of two from 1 to 512.
    ``epochs``: window lengths in instructions for the spatial/temporal study, each a multiple of
    ``epoch`` (default: ``epoch`` times 1, 2, 4, ..., 128).
    ``skip``, ``limit``: the accesses read (:mod:`xlat.window`).
    Bad values raise ``ValueError`` or ``xlat.ConfigError`` with one sentence.
    """
    from xlat.window import window

    win = window(skip, 0, limit)
    spec = str(trace_or_spec)
    scales = [epoch * k for k in DEFAULT_SCALES] if epochs is None else list(epochs)
    _check_range(epoch, _U64, "the epoch must be at least 1 instruction, not {v}")
    for g in granularities:
        _check_range(
            g,
            _U32,
            "granularity {v} is not a power of two from 1 to 512 (bits per 2MB page: 1, 2, 4, ..., 512)",
        )
    for s in scales:
        _check_range(
            s, _U64, f"epoch length {{v}} is not a positive multiple of the epoch ({epoch} instructions)"
        )
    raw = _native.fidelity(
        spec, int(epoch), [int(g) for g in granularities], [int(s) for s in scales], progress, win.native()
    )
    return FidelityResult(spec, json.loads(raw))


def plot_loss(results: dict[str, FidelityResult], path: str | Path) -> None:
    """Mean fidelity loss (%) against bits per 2MB page, accessed and dirty side by side, one
    line per result (``{label: result}``), to a PNG. Needs matplotlib."""
    from xlat._optional import need_pyplot

    plt = need_pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for ax, kind in zip(axes, ("accessed", "dirty"), strict=True):
        for label, r in results.items():
            gs = [s["g"] for s in r.data[kind]]
            ax.plot(gs, [100 * s["mean"] for s in r.data[kind]], marker="o", ms=3, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(GRANULARITIES), [str(g) for g in GRANULARITIES])
        ax.set_ylim(0, 100)
        ax.set_xlabel("bits per 2MB page (G)")
        ax.set_title(f"{kind} bits")
        ax.grid(True, lw=0.3)
    axes[0].set_ylabel("mean fidelity loss (% of 4KB bits wrong)")
    axes[1].legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
