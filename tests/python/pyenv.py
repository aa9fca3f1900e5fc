"""What the tests of tests/python/ share: the paths CTest passes (or their
defaults in a checkout), and running a Python program in a subprocess."""

import json
import os
import subprocess
import sys

SOURCE_DIR = os.environ.get("TOWERFLOW_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY_DIR = os.environ.get("TOWERFLOW_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
TOWERFLOW_BIN = os.environ.get("TOWERFLOW_BIN", os.path.join(BINARY_DIR, "bin", "towerflow"))
PYTHON = os.environ.get("TOWERFLOW_PEERS_PYTHON", sys.executable)
TF_IMPORT = "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()"
TW_IMPORT = "import towerflow.compat.v1 as tf"


def run_python(args, timeout=600, env=None):
    """Runs PYTHON with `args`; returns (returncode, stdout, stderr)."""
    e = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    e.update(env or {})
    p = subprocess.run([PYTHON] + list(args), capture_output=True, text=True, timeout=timeout, env=e)
    return p.returncode, p.stdout, p.stderr


def last_json(stdout):
    """The JSON object on the last non-empty line of `stdout`."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    return json.loads(lines[-1])


def towerflow_convert(*args):
    subprocess.run([TOWERFLOW_BIN, "convert"] + list(args), check=True, capture_output=True, timeout=600)
