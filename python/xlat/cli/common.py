"""What every ``xlat`` command shares: progress flags, table and JSON printing, and the mapping
of errors to one sentence on stderr and an exit status.

Errors a user can cause print one sentence (``xlat: error: ...``) and exit with status 1;
usage errors exit with 2 (argparse's convention).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any


class CliError(Exception):
    """A user error detected by the CLI itself (reported like the library's errors)."""


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def mib(n: float) -> str:
    return f"{n / (1 << 20):.2f} MiB"


def progress(args: argparse.Namespace) -> bool:
    """Whether to draw a progress bar: as asked, else when stderr is a terminal."""
    if args.progress is not None:
        return args.progress
    return sys.stderr.isatty()


def add_progress_flags(p: argparse.ArgumentParser) -> None:
    """--progress / --no-progress (default: a progress bar when stderr is a terminal)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="show a progress bar on stderr (default: when stderr is a terminal)",
    )
    g.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")


def name_list(text: str | None, option: str, what: str) -> list[str] | None:
    """The comma-separated names of ``option`` (None when not given); an option given with no
    name (``--designs ''``) is refused, not taken for the default."""
    if text is None:
        return None
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise CliError(f"{option} needs at least one {what}")
    return names


def not_empty(values: list | None, option: str, what: str) -> None:
    """Refuse ``option`` given with an empty list (``--sets ''``): no value, not the default."""
    if values is not None and not values:
        raise CliError(f"{option} needs at least one {what}")


def int_list(text: str) -> list[int]:
    """An argparse type: comma-separated integers (``_`` allowed as a digit separator)."""
    try:
        return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, not {text!r}") from None


def int_arg(text: str) -> int:
    """An argparse type: one integer (``_`` allowed as a digit separator)."""
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, not {text!r}") from None


_SUFFIX = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def count_arg(text: str) -> int:
    """An argparse type: a count of accesses, ``_`` allowed as a digit separator, with an optional
    decimal suffix k, M, G or T (``10M`` is 10,000,000, as ChampSim and drcachesim counts are)."""
    t = text.strip().replace("_", "")
    mult = _SUFFIX.get(t[-1:], 1)
    if mult > 1:
        t = t[:-1]
    if not t.isdigit():
        raise argparse.ArgumentTypeError(f"expected a count of accesses such as 2000000 or 2M, not {text!r}")
    return int(t) * mult


def add_window_flags(p: argparse.ArgumentParser, warmup: bool = True) -> None:
    """--skip, --warmup (simulating commands) and --limit: the window of the trace, in accesses
    (xlat.window, docs/windows.md)."""
    g = p.add_argument_group("window of the trace (in accesses; docs/windows.md)")
    g.add_argument(
        "--skip",
        type=count_arg,
        default=0,
        metavar="N",
        help="pass over the first N accesses (not simulated; their mmaps, munmaps and switches "
        "still reach the OS model)",
    )
    if warmup:
        g.add_argument(
            "--warmup",
            type=count_arg,
            default=0,
            metavar="N",
            help="then simulate N accesses without counting them: TLBs, caches, page tables "
            "and the OS start warm, every counter starts after them",
        )
    g.add_argument(
        "--limit",
        type=count_arg,
        default=None,
        metavar="N",
        help="then count at most N accesses (default: to the end)",
    )


def window_kw(args: argparse.Namespace) -> dict[str, Any]:
    """The window flags as keyword arguments of the Python API."""
    kw: dict[str, Any] = {"skip": args.skip, "limit": args.limit}
    if hasattr(args, "warmup"):
        kw["warmup"] = args.warmup
    return kw


def load_counts(spec: str) -> dict[str, Any]:
    """The result of ``spec``, a saved ``xlat sim --json``: FILE, or FILE:NAME for one
    configuration (its ``config_name``) of a several-configuration file (``xlat model``, and
    ``xlat experiment predict --result``)."""
    path, name = spec, None
    if ":" in spec and not spec.endswith(".json"):
        path, name = spec.rsplit(":", 1)
    try:
        with open(path) as f:
            d = json.load(f)
    except OSError as e:
        raise CliError(f"cannot read the counts file {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise CliError(f"the counts file {path} is not JSON ({e.msg} at line {e.lineno})") from None
    if isinstance(d, dict) and isinstance(d.get("results"), list):
        d = d["results"]  # xlat sim --json with several configurations
    if isinstance(d, list):
        names = [r.get("config_name") if isinstance(r, dict) else None for r in d]
        if name is not None:
            if name not in names:
                raise CliError(
                    f"the counts file {path} has no configuration {name!r} (it has {', '.join(map(str, names))})"
                )
            d = d[names.index(name)]
        elif len(d) == 1:
            d = d[0]
        else:
            raise CliError(
                f"the counts file {path} holds {len(d)} configurations ({', '.join(map(str, names))}): "
                f"give one as {path}:NAME"
            )
    elif name is not None:
        raise CliError(
            f"the counts file {path} holds one set of counters, not configurations to choose {name!r} from"
        )
    if not isinstance(d, dict):
        raise CliError(f"the counts file {path} holds no object of counters")
    return d


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


def table(rows: list[tuple[str, str]]) -> str:
    """Two columns: labels padded to the longest, then values."""
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def grid(header: list[str], rows: list[list[str]]) -> str:
    """Several columns under a header: the first left-aligned, the others right-aligned."""
    lines = [header, *rows]
    widths = [max(len(r[i]) for r in lines) for i in range(len(header))]
    out = []
    for r in lines:
        cells = [f"{r[0]:<{widths[0]}}"] + [f"{c:>{w}}" for c, w in zip(r[1:], widths[1:], strict=True)]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def error(msg: object) -> None:
    """Print ``msg`` as the one line a user error gets."""
    print(f"xlat: error: {msg}", file=sys.stderr)


def _user_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that are a user's to fix: the CLI's own, the library's (``XlatError`` and
    its subclasses, the mosaic allocator's, bad values)."""
    from xlat.mosaic import MosaicError

    errs: list[type[BaseException]] = [CliError, MosaicError, ValueError]
    try:
        from xlat._native import XlatError
    except ImportError:  # the Rust extension is not built: nothing can raise its errors
        pass
    else:
        errs.append(XlatError)
    return tuple(errs)


def run_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a command and turn what it raises into an exit status: a user error prints one
    sentence and gives 1, a closed pipe 141, an interrupt 130."""
    user_errors = _user_errors()
    try:
        return int(func(args) or 0)
    except user_errors as e:
        error(e)
        return 1
    except BrokenPipeError:
        return 141
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        error(f"{where}{e.strerror or e}")
        return 1
    except KeyboardInterrupt:
        print("xlat: interrupted", file=sys.stderr)
        return 130
