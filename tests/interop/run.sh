#!/usr/bin/env bash
# CTest's hook for one interop script: runs it with the peers' python, the one
# scripts/peers prints (TOWERFLOW_PEERS_PYTHON, else <source>/.venv/bin/python).
# With TOWERFLOW_SKIP_INTEROP=1 it exits 77, which CTest reports as skipped;
# without a usable python it fails, naming the fix. Never skips silently.
set -euo pipefail
script=$1
if [ "${TOWERFLOW_SKIP_INTEROP:-}" = 1 ]; then
  echo "interop: skipped: TOWERFLOW_SKIP_INTEROP=1"
  exit 77
fi
python=${TOWERFLOW_PEERS_PYTHON:-${TOWERFLOW_SOURCE_DIR:-$(dirname "$0")/../..}/.venv/bin/python}
if ! [ -x "$python" ] || ! "$python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('tensorflow') is None)" 2>/dev/null; then
  echo "interop: FAILED: no python with tensorflow at '$python'." >&2
  echo "  Run scripts/peers (scripts/test does) to make .venv, or set TOWERFLOW_SKIP_INTEROP=1 to skip." >&2
  exit 1
fi
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
export PYTHONPATH=$(dirname "$script")${PYTHONPATH:+:$PYTHONPATH}
exec "$python" "$script" -v
