"""Tracing real programs under QEMU, and importing foreign traces.

``xlat trace -o OUT -- PROGRAM ARGS`` runs PROGRAM under Debian's ``qemu-x86_64`` with xlat's TCG
plugin (``native/qemu-trace``) and writes the compressed xlat format directly; a forked child's
trace goes to ``OUT`` with ``.<pid>.xlat`` in place of ``.xlat``. ``xlat import
lackey|champsim|drmemtrace`` converts Valgrind lackey text, ChampSim binary traces and DynamoRIO
drmemtrace offline traces. See ``docs/tracing.md`` and ``docs/importers.md``.

From Python::

    from xlat.tracing import trace
    r = trace(["xz", "-9", "-k", "big.txt"], "xz.xlat", max_accesses=10_000_000)
    r["processes"][0]["accesses"]
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from typing import Any

from xlat import __version__
from xlat._data import NativeBuildError, build_native, cache_dir, checkout
from xlat._native import XlatError

QEMU = "qemu-x86_64"
QEMU_INSTALL = "sudo apt-get install qemu-user"
PLUGIN_NAME = "xlat_trace_plugin.so"
SHIM_NAME = "xlat_exec_shim.so"
EM_X86_64 = 62

__all__ = ["TracingError", "find_plugin", "find_qemu", "import_trace", "resolve_program", "trace"]


class TracingError(XlatError, RuntimeError):
    """A tracing problem the user can fix (missing tool, program that cannot start, full disk);
    ``str(err)`` is one sentence. A :class:`xlat.XlatError` (and, as before, a ``RuntimeError``)."""


def find_qemu() -> str:
    """Path of ``qemu-x86_64``, or a :class:`TracingError` saying how to install it."""
    q = shutil.which(QEMU)
    if q is None:
        raise TracingError(f"{QEMU} is not installed; install Debian's qemu-user with: {QEMU_INSTALL}")
    return q


def qemu_version(qemu: str) -> str:
    try:
        out = subprocess.run([qemu, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.splitlines()[0].strip() if out else "unknown"


def find_plugin(build: bool = True) -> str:
    """Path of the plugin: ``$XLAT_QEMU_PLUGIN``; else, in a checkout, ``out/native/qemu-trace/``
    (built with ``make -C native/qemu-trace`` when missing and ``build`` is true); else (an
    installed wheel) the one built from the sources the wheel carries into the user's cache
    (``~/.cache/xlat/native/``), on first use."""
    env = os.environ.get("XLAT_QEMU_PLUGIN")
    if env:
        if not os.path.isfile(env):
            raise TracingError(f"XLAT_QEMU_PLUGIN={env} does not exist")
        return env
    root = checkout()
    if root is None:
        header = cache_dir() / "qemu-plugin"  # qemu-plugin.h, fetched once for every version
        try:
            return str(
                build_native(
                    "qemu-trace", "the QEMU plugin", {"OUT": ".", "HDR_DIR": str(header)}, PLUGIN_NAME, build
                )
            )
        except NativeBuildError as e:
            raise TracingError(str(e)) from None
    plugin = root / "out" / "native" / "qemu-trace" / PLUGIN_NAME
    src = root / "native" / "qemu-trace"
    if build and (src / "Makefile").is_file() and shutil.which("make") is not None:
        # make is a no-op when the plugin is up to date.
        r = subprocess.run(["make", "-s", "-C", str(src)], capture_output=True, text=True)
        if r.returncode != 0:
            tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-5:])
            raise TracingError(f"building the QEMU plugin failed (make -C {src}):\n{tail}")
    if not plugin.is_file():
        raise TracingError(f"the QEMU plugin is not built: run make -C {src} (or scripts/setup.sh)")
    return str(plugin)


def resolve_program(argv: list[str]) -> tuple[list[str], str]:
    """Resolve ``argv[0]`` through PATH and check it is an x86-64 Linux program. A ``#!`` script
    becomes its interpreter plus the script (qemu-user only loads ELF files). Returns the argv
    to run (with absolute paths) and the path of the ELF file that runs."""
    if not argv:
        raise TracingError("no program given: use xlat trace -o OUT -- PROGRAM ARGS")
    name = argv[0]
    path = name if "/" in name else shutil.which(name)
    if path is None:
        raise TracingError(f"cannot start '{name}': it is not found in PATH")
    if not os.path.exists(path):
        raise TracingError(f"cannot start '{name}': {path} does not exist")
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise TracingError(f"cannot start '{name}': {path} is not an executable file")
    path = os.path.abspath(path)
    with open(path, "rb") as f:
        head = f.read(256)
    if head.startswith(b"#!"):
        line = head[2:].split(b"\n", 1)[0].decode(errors="replace").strip()
        parts = line.split(None, 1)
        if not parts:
            raise TracingError(f"cannot start '{name}': its #! line names no interpreter")
        interp = parts[:1] + parts[1:]
        if interp[0] == "/usr/bin/env" and len(interp) > 1:
            interp = interp[1].split()
        inner, elf = resolve_program([*interp, path, *argv[1:]])
        return inner, elf
    if not head.startswith(b"\x7fELF"):
        raise TracingError(f"cannot start '{name}': {path} is neither an ELF program nor a #! script")
    machine = int.from_bytes(head[18:20], "little")
    if head[4] != 2 or machine != EM_X86_64:
        raise TracingError(f"cannot start '{name}': {path} is not an x86-64 program (ELF machine {machine})")
    return [path, *argv[1:]], path


def _check_output(out: str) -> None:
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise TracingError(f"cannot write {out}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise TracingError(f"cannot write {out}: directory {parent} is not writable")


def _disk_full(e: Exception, out: str) -> Exception:
    msg = str(e)
    if "No space left" in msg or "os error 28" in msg:
        return TracingError(f"the disk is full: writing the trace {out} failed ({msg})")
    return e


def trace(
    argv: list[str],
    out: str,
    *,
    skip: int = 0,
    max_accesses: int | None = None,
    ifetch: bool = False,
    level: int = 1,
    progress: bool = False,
    qemu_args: list[str] | tuple[str, ...] = (),
    timeout: float | None = None,
    follow_exec: bool = False,
) -> dict[str, Any]:
    """Run ``argv`` under QEMU with the xlat plugin and write its trace to ``out``.

    ``skip`` instructions of each process's first thread run before accesses are recorded
    (address-space syscalls are recorded from the start); ``max_accesses`` stops the program
    once the first process's trace holds that many accesses. Returns the summary: ``status``
    (the program's exit status), ``stopped_at_max``, ``interrupted``, ``timed_out``, ``seconds``
    and ``processes`` (one dict per trace written, the first process first; ``exited`` is false
    for a process that ran another program with execve, which is not traced).

    With ``follow_exec``, programs that the traced processes start with execve (or posix_spawn)
    run under QEMU with the plugin too, each to a trace of its own (a preloaded wrapper, which
    adds its own loading to every traced process; see ``docs/tracing.md``); without it (the
    default) they run natively, untraced.

    ``timeout`` seconds after the start, a program still running is killed (with its forked
    children) and ``timed_out`` is true; the traces written so far are kept, complete and valid,
    up to where the program was stopped (``truncated`` when the kill cut a chunk short).
    """
    from xlat import _native

    if skip < 0:
        raise ValueError(f"--skip must be >= 0, not {skip}")
    if max_accesses is not None and max_accesses <= 0:
        raise ValueError(f"--max must be > 0, not {max_accesses}")
    if not 1 <= level <= 19:
        raise ValueError(f"level must be between 1 and 19, not {level}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"--timeout must be a positive number of seconds, not {timeout}")
    qemu = find_qemu()
    plugin = find_plugin()
    run_argv, elf = resolve_program(list(argv))
    _check_output(out)
    shim = os.path.join(os.path.dirname(plugin), SHIM_NAME)
    # A caller preloading its own library (the mosaic allocator: -E LD_PRELOAD=...) keeps it alone.
    own_preload = any(a.startswith("LD_PRELOAD=") for a in qemu_args)
    follow_exec = follow_exec and os.path.isfile(shim) and not own_preload
    exec_env = {}
    if follow_exec:
        # Read by the preloaded wrapper in the guest (qemu-user passes its environment on; the
        # recorder adds XLAT_TRACE_SOCK). -E sets LD_PRELOAD for the guest only, not for qemu.
        exec_env = {
            "XLAT_EXEC_QEMU": qemu,
            "XLAT_EXEC_PLUGIN": plugin,
            "XLAT_EXEC_SHIM": shim,
            "XLAT_EXEC_SKIP": str(skip),
            "XLAT_EXEC_IFETCH": "on" if ifetch else "off",
        }
        qemu_args = ["-E", f"LD_PRELOAD={shim}", *qemu_args]
    header = {
        "format": "xlat-trace",
        "producer": f"xlat {__version__} qemu-trace",
        "command": list(argv),
        "page_size_hint": os.sysconf("SC_PAGE_SIZE"),
        "threads": [],
        "metadata": {
            "tracer": "xlat QEMU TCG plugin (native/qemu-trace)",
            "qemu": qemu_version(qemu),
            "qemu_path": qemu,
            "plugin": plugin,
            "xlat": __version__,
            "program_path": elf,
            "argv_run": run_argv,
            "skip_instructions": skip,
            "max_accesses": max_accesses,
            "ifetch": ifetch,
            "zstd_level": level,
            "qemu_args": list(qemu_args),
            "timeout_s": timeout,
            "follow_exec": follow_exec,
            "host": {
                "kernel": platform.release(),
                "machine": platform.machine(),
                "python": platform.python_version(),
            },
        },
    }
    saved = {k: os.environ.get(k) for k in exec_env}
    os.environ.update(exec_env)
    try:
        r = _native.record_trace(
            qemu,
            plugin,
            run_argv,
            str(out),
            json.dumps(header),
            # The name as typed, unless a #! line made the interpreter the program.
            argv0=argv[0] if run_argv[1:] == list(argv[1:]) else None,
            qemu_args=list(qemu_args),
            skip=skip,
            max=max_accesses,
            ifetch=ifetch,
            level=level,
            progress=progress,
            timeout=timeout,
        )
    except XlatError as e:
        raise _disk_full(e, str(out)) from None
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    summary = json.loads(r)
    summary["follow_exec"] = follow_exec
    if summary["interrupted"] and not summary["timed_out"]:
        raise KeyboardInterrupt
    if not any(p["path"] == str(out) for p in summary["processes"]):
        raise TracingError(
            f"{QEMU} exited with status {summary['status']} before {argv[0]} started (see its message above)"
        )
    for p in summary["processes"]:
        # A forked child that ran another program at once (fork + execve, as a shell or a
        # compiler driver does) recorded nothing: keep no empty file.
        if p["path"] != str(out) and p["accesses"] == 0 and p["side_events"] == 0:
            os.remove(p["path"])
            p["path"] = None
    return summary


def import_trace(
    kind: str, path: str, out: str, *, ifetch: bool = False, level: int = 3, progress: bool = False
) -> dict[str, Any]:
    """Convert a foreign trace (``kind`` ``lackey``, ``champsim`` or ``drmemtrace``) at ``path`` to
    ``out`` (for ``drmemtrace``, ``path`` may be a directory of per-thread files)."""
    from xlat.trace import convert

    if kind not in ("lackey", "champsim", "drmemtrace"):
        raise ValueError(f"unknown trace kind '{kind}' (known: lackey, champsim, drmemtrace)")
    if not os.path.exists(path):
        raise TracingError(f"{path} does not exist")
    spec = f"{kind}:{path}"
    if ifetch:
        spec += "?ifetch=1"
    return convert(spec, out, level=level, progress=progress)
