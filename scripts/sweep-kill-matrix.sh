#!/usr/bin/env bash
# The whole kill matrix of xlat sweep (docs/sweep.md): kill -9 of a worker and of the client
# (also in make test) and of the scheduler (here only: a second cluster's start-up is too slow
# for make test), each followed by the same command again. About a minute or two.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
XLAT_SWEEP_KILL_MATRIX=1 "$PY" -m pytest tests/test_sweep.py -q -k "kill" "$@"
