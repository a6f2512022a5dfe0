#!/usr/bin/env bash
# Set up xlat on a Debian 12 machine: system packages, a local virtualenv (.venv) with the
# Python dependencies, the Rust extension built into it, and the native (C) parts.
# Safe to run again: it only does what is missing, and rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# --- system packages -------------------------------------------------------------------
need_apt=()
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
command -v cc >/dev/null || need_apt+=(build-essential)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
if [ -f scripts/apt-packages.txt ]; then
    while read -r pkg; do
        pkg=${pkg%%#*}; pkg=$(echo "$pkg" | xargs)
        [ -z "$pkg" ] && continue
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
    done < scripts/apt-packages.txt
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    say "installing Debian packages: ${need_apt[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq || die "apt-get update failed; check the network or run as root"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null \
        || die "could not install ${need_apt[*]} with apt-get"
fi

command -v cargo >/dev/null || [ -x "$HOME/.cargo/bin/cargo" ] \
    || die "Rust is missing: install it with rustup (https://rustup.rs), then run this again"
export PATH="$HOME/.cargo/bin:$PATH"

# --- Python virtualenv -----------------------------------------------------------------
if [ ! -x .venv/bin/python ]; then
    say "creating the virtualenv .venv"
    python3 -m venv .venv || die "python3 -m venv failed"
fi
if ! .venv/bin/python -c 'import maturin, numpy, pytest, hypothesis, pandas, sklearn, distributed, pyarrow, tomli_w, jsonschema' 2>/dev/null \
    || [ ! -x .venv/bin/ruff ]; then
    say "installing Python packages into .venv"
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -r scripts/requirements-dev.txt
fi

# --- build -----------------------------------------------------------------------------
# XLAT_PROFILE: the Cargo profile of the extension; `dist` (release with fat LTO: what `xlat` and
# the benchmarks run) unless set. CI sets `release` (no LTO): the Rust tests build that profile
# anyway, so the extension reuses their crates instead of a second, fat-LTO build.
profile=${XLAT_PROFILE:-dist}
case "$profile" in
    dist) say "building the Rust extension (profile dist: release with fat LTO)" ;;
    release) say "building the Rust extension (profile release: no LTO, as the tests build it)" ;;
    *) die "XLAT_PROFILE=$profile: give dist (the default) or release" ;;
esac
mkdir -p out
if ! VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --profile "$profile" >out/build.log 2>&1; then
    tail -n 40 out/build.log >&2
    die "the Rust extension did not build (full log: out/build.log)"
fi
for d in native/*/; do
    if [ -f "$d/Makefile" ]; then
        say "building $d"
        make -s -C "$d" || die "building $d failed"
    fi
done
say "ready: .venv/bin/xlat"
