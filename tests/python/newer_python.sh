#!/usr/bin/env bash
# The package on the newest Python 3 the machine has beyond the peers' 3.11
# (python3.13, python3.12 on PATH, or pyenv's versions): a venv of its own
# (build/python-newest/, kept between runs), the wheel built for it over this
# tree's install (as scripts/python does), and the tests of tests/python/ that
# need no TensorFlow run under it. Exits 77 (skipped) on a machine without a
# newer Python, saying so.
set -euo pipefail
if [ "${TOWERFLOW_SKIP_INTEROP:-}" = 1 ]; then
  echo "newer_python: skipped: TOWERFLOW_SKIP_INTEROP=1"
  exit 77
fi
source_dir=${TOWERFLOW_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
binary_dir=${TOWERFLOW_BINARY_DIR:-$source_dir/build}
candidates=()
for v in 3.14 3.13 3.12; do
  command -v "python$v" >/dev/null && candidates+=("$(command -v "python$v")")
done
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
for p in $(ls -d "$pyenv_root"/versions/3.1[2-9]*/bin/python 2>/dev/null | sort -V -r); do candidates+=("$p"); done
python=""
for p in "${candidates[@]}"; do
  if "$p" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then python=$p; break; fi
done
if [ -z "$python" ]; then
  echo "newer_python: skipped: no Python 3.12 or newer on this machine (PATH, $pyenv_root/versions)"
  exit 77
fi
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
echo "newer_python: Python $version at $python"
venv=$binary_dir/python-newest
if ! [ -x "$venv/bin/python" ] || [ "$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$version" ]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input numpy scikit-build-core==1.1.2 nanobind==3.1.0
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
# Always: an install left from an older build would hold older headers (it
# copies only what changed).
cmake --install "$binary_dir" --prefix "$binary_dir/install" >/dev/null
(cd "$source_dir" && CCACHE_BASEDIR=$source_dir "$venv/bin/python" -m pip wheel -q --disable-pip-version-check \
   --no-deps --no-build-isolation -w "$wheels" . \
   --config-settings=cmake.define.towerflow_DIR="$binary_dir/install/lib/cmake/towerflow" \
   --config-settings=build-dir="$binary_dir/python-newest-build")
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$wheels"/towerflow-*.whl
cd "$source_dir/tests/python"
TOWERFLOW_PEERS_PYTHON=$venv/bin/python "$venv/bin/python" -m unittest -v \
  package_test.SessionTest package_test.PythonicLayerTest examples_test
