"""``--set`` for one configuration among several: ``--set NAME:KEY=VALUE``.

``xlat sim --cpu skylake --cpu zen4 --set skylake:tlb.stlb.entries=2048 --set zen4:tlb.l2d.entries=4096``
overrides each preset's own structure. NAME is a preset as given to ``--cpu``, or a file given to
``--config`` by its path, file name or file name without ``.toml``. A plain ``--set KEY=VALUE``
applies to every configuration, before the named ones (so a named value wins). See docs/config.md.
"""

from __future__ import annotations

import os

from xlat.cli.common import CliError


def split(item: str) -> tuple[str | None, str]:
    """``NAME:KEY=VALUE`` -> (NAME, ``KEY=VALUE``); ``KEY=VALUE`` -> (None, ``KEY=VALUE``). Only a
    colon before the first ``=`` names a configuration (values may hold colons)."""
    key = item.split("=", 1)[0]
    if ":" not in key:
        return None, item
    name, rest = item.split(":", 1)
    return name.strip(), rest


def names_of(kind: str, value: str) -> set[str]:
    """The names ``--set NAME:...`` may use for one ``--cpu``/``--config`` value."""
    if kind == "cpu":
        return {value}
    base = os.path.basename(value)
    return {value, base, base.removesuffix(".toml")}


def sets_for(items: list[str], bases: list[tuple[str, str]]) -> list[tuple[str, ...]]:
    """The overrides of each base configuration (``(kind, value)``), in order: the plain ones, then
    the ones naming it. A name that matches no configuration is an error."""
    plain = [rest for name, rest in map(split, items) if name is None]
    named = [(item, *split(item)) for item in items]
    out = []
    for kind, value in bases:
        names = names_of(kind, value)
        out.append((*plain, *(rest for _, name, rest in named if name is not None and name in names)))
    known = set().union(*(names_of(k, v) for k, v in bases))
    for item, name, _ in named:
        if name is not None and name not in known:
            given = ", ".join(v for _, v in bases)
            raise CliError(
                f"--set '{item}' names '{name}', which is none of this run's configurations ({given})"
            )
    return out


def check_sets(runs: list, labels: list[str]) -> None:
    """Build each configuration before simulating, so that an override its preset does not have
    is reported with the configuration's name (one sentence)."""
    from xlat._native import ConfigError

    seen = set()
    for run, label in zip(runs, labels, strict=True):
        key = (run.cpu, run.config, tuple(run.set))
        if key in seen:
            continue
        seen.add(key)
        try:
            run.check()
        except ConfigError as e:
            msg = str(e)
            if msg.startswith(f"{label}:") or msg.startswith(f"config '{label}'"):
                raise
            raise ConfigError(f"{label}: {msg}") from None
