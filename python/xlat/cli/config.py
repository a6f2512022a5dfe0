"""``xlat config``: the CPU presets and what a configuration resolves to (issue 37, item 10).

``xlat config list`` names the presets; ``xlat config show NAME|FILE [--set K=V ...] [--layout
L]`` prints the effective configuration a simulation would run (every default filled in, the
overrides applied, checked as ``xlat sim`` checks it) as TOML, or as JSON with ``--json``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from xlat.cli.jsonopt import add_json_flag, emit_json, to_stdout


def without_none(v: Any) -> Any:
    """TOML has no null: absent optional fields are left out."""
    if isinstance(v, dict):
        return {k: without_none(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [without_none(x) for x in v if x is not None]
    return v


def cmd_list(args: argparse.Namespace) -> int:
    from xlat.layout import layout_names
    from xlat.sim import config_file, config_names, preset, presets

    def description(text: str) -> str:
        first = next((ln for ln in text.splitlines() if ln.startswith("description")), "")
        return first.split("=", 1)[1].strip().strip('"') if first else ""

    for name in presets():
        print(f"{name:16} {description(preset(name))}")
    if args.all:
        print()
        for name in config_names():
            print(f"{name:24} {description(config_file(name).read_text(encoding='utf-8'))}")
        print(f"\nlayouts (--layout NAME): {', '.join(layout_names())}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    import tomli_w

    from xlat.sim import Run, config_names, presets

    what = args.name
    is_file = what.endswith(".toml") or Path(what).is_file() or what in config_names()
    if not is_file and what not in presets():
        from xlat.sim import ConfigError

        raise ConfigError(
            f"'{what}' is neither a preset ({', '.join(presets())}), a shipped configuration "
            "(DIR/NAME, e.g. rainbow/hscc-4kb: xlat config list --all) nor a configuration file."
        )
    run = Run(
        cpu=None if is_file else what,
        config=what if is_file else None,
        set=tuple(args.set or ()),
        layout=args.layout,
    )
    cfg = run.check()
    emit_json(args.json, {"name": what, "config": cfg}, config=cfg, inputs=[what] if is_file else ())
    if not to_stdout(args):
        sys.stdout.write(f"# {what}: the effective configuration (xlat config show)\n")
        sys.stdout.write(tomli_w.dumps(without_none(cfg)))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "config",
        help="list the CPU presets, or show what a configuration resolves to",
        description="xlat config list: the CPU presets. xlat config show NAME|FILE: the effective "
        "configuration a simulation would run (defaults filled in, --set overrides applied, "
        "checked), as TOML or with --json as JSON (docs/config.md).",
    )
    s = p.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    ls = s.add_parser("list", help="the CPU presets and their descriptions")
    ls.add_argument(
        "--all", action="store_true", help="also the shipped design configurations and layouts, by name"
    )
    ls.set_defaults(func=cmd_list)
    sh = s.add_parser("show", help="the effective configuration of a preset or a TOML file")
    sh.add_argument("name", metavar="NAME_OR_FILE")
    sh.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="an override, as in xlat sim; repeatable"
    )
    sh.add_argument("--layout", metavar="LAYOUT.toml", help="a mosaic layout (selects the mosaic policy)")
    add_json_flag(sh, "the effective configuration")
    sh.set_defaults(func=cmd_show, parser=sh)
