"""The one ``--json [FILE]`` convention every command shares: ``--json`` alone or ``--json -``
writes the JSON document to stdout (and nothing else goes to stdout), ``--json FILE`` writes it to
FILE (and the command's usual output still goes to stdout).

Before this convention, some commands took ``--json`` as a switch (``xlat trace-info --json
TRACE``) and some as ``--json FILE``. Both spellings keep working: an optional value cannot be
told from the positional that follows it, so when the positional is missing, the word ``--json``
took is the positional and the JSON goes to stdout (:func:`take_positional`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

STDOUT = "-"


def add_json_flag(p: argparse.ArgumentParser, what: str = "the result") -> None:
    """Add ``--json [FILE]`` to ``p``: ``args.json`` is None, ``"-"`` (stdout) or a path."""
    p.add_argument(
        "--json",
        nargs="?",
        const=STDOUT,
        default=None,
        metavar="FILE",
        help=f"write {what} as JSON to FILE; with no FILE or '-', to stdout instead of the table",
    )


def to_stdout(args: argparse.Namespace) -> bool:
    """Whether the JSON document owns stdout (the table is not printed)."""
    return args.json == STDOUT


def take_positional(args: argparse.Namespace, attr: str, what: str, allowed: tuple[str, ...] = ()) -> None:
    """Repair ``--json POSITIONAL`` (the old switch form): when ``args.<attr>`` is missing, the
    value ``--json`` swallowed is that positional and the JSON goes to stdout. With ``allowed``,
    only those values are taken (a positional with choices). Raises a usage error when the
    positional is still missing and was required (``what`` names it)."""
    if getattr(args, attr) in (None, []) and args.json not in (None, STDOUT):
        if not allowed or args.json in allowed:
            val = args.json
            setattr(args, attr, [val] if isinstance(getattr(args, attr), list) else val)
            args.json = STDOUT
    if what and getattr(args, attr) in (None, []):
        args.parser.error(f"the following arguments are required: {what}")


#: The command being run (``sim``, ``experiment mosmodel``) and its arguments, set by
#: :func:`xlat.cli.main` for the documents :func:`emit_json` writes.
INVOCATION: dict[str, Any] = {"command": None, "argv": None}


def set_invocation(argv: list[str]) -> None:
    """Remember the command ``argv`` runs (with its sub-command: ``config show``) and ``argv``."""
    # From argv, not from ``args``: a sub-command's own arguments may reuse a name (``experiment
    # run -- CMD`` has a ``command``). xlat has no option before the command but --version.
    words = [w for w in argv if not w.startswith("-")][:2]
    if words[:1] not in (["experiment"], ["model"], ["config"]):
        words = words[:1]
    INVOCATION.update(command=" ".join(words) or None, argv=list(argv))


def emit_json(dest: str | None, results: Any, **provenance: Any) -> None:
    """Write the results document (:func:`xlat.results.document`) of ``results`` to stdout
    (``dest`` ``"-"``) or to the file ``dest``; nothing if None. ``provenance``: ``trace``,
    ``window``, ``config``, ``inputs``, ``kind`` (see :func:`~xlat.results.document`)."""
    if dest is None:
        return
    from xlat.results import document

    doc = document(INVOCATION["command"] or "xlat", results, argv=INVOCATION["argv"], **provenance)
    if dest == STDOUT:
        json.dump(doc, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return
    with open(dest, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")
