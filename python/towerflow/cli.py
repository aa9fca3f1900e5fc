"""The `towerflow` command from Python: ``towerflow.cli.train(data=..., model=
"mlp", devices="auto", steps=1000)`` runs ``towerflow train`` with those flags
(underscores become dashes; True is a bare flag) and returns its final JSON
line as a dict. The command is the one the wheel carries (towerflow/bin/), else
the first on PATH."""

import json
import os
import shutil
import subprocess
import sys


def binary():
    packaged = os.path.join(os.path.dirname(__file__), "bin", "towerflow")
    if os.access(packaged, os.X_OK):
        return packaged
    found = shutil.which("towerflow")
    if found is None:
        raise FileNotFoundError("no towerflow command: neither in the package (towerflow/bin) nor on PATH")
    return found


def flags(**kwargs):
    """--flag value arguments from keyword arguments."""
    args = []
    for key, value in kwargs.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args.append(flag)
            args.extend(str(v) for v in value)
        else:
            args.extend([flag, str(value)])
    return args


def run(args, echo=True):
    """Runs `towerflow ARGS...`; returns (exit code, stdout). stdout is echoed as
    it comes when `echo`; stderr (progress, warnings) goes to this process's."""
    p = subprocess.Popen([binary()] + list(args), stdout=subprocess.PIPE, text=True)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if echo:
            sys.stdout.write(line)
            sys.stdout.flush()
    return p.wait(), "".join(lines)


def _command(command, echo, kwargs):
    code, out = run([command] + flags(**kwargs), echo=echo)
    if code != 0:
        raise RuntimeError("towerflow %s exited with %d" % (command, code))
    for line in reversed(out.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    return {}


def train(echo=True, **kwargs):
    """`towerflow train` with keyword flags; its final JSON line as a dict."""
    return _command("train", echo, kwargs)


def evaluate(echo=True, **kwargs):
    """`towerflow eval` with keyword flags; its final JSON line as a dict."""
    return _command("eval", echo, kwargs)
