"""Shared by the interop scripts: where the binaries are, how to run them, and
how values are compared (exactly: floats by their bit patterns).

The scripts run under tests/interop/run.sh, which CTest calls with
TOWERFLOW_BIN (the `towerflow` CLI) and TOWERFLOW_INTEROP_TOOL
(tfrecord_interop_tool) in the environment.
"""
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import numpy as np

TOWERFLOW = os.environ.get("TOWERFLOW_BIN", "")
TOOL = os.environ.get("TOWERFLOW_INTEROP_TOOL", "")

# The schema every interop file uses (tfrecord_interop_tool.cc's `write` and
# make_tf_example below): FixedLen features with their shapes, VarLen
# features, raw-bytes features with the dtype decode_raw reads them as.
FIXED = {"fixed_f": ("float", [3]), "fixed_i": ("int64", [2]), "fixed_b": ("bytes", []),
         "raw_i32": ("bytes", []), "raw_f32": ("bytes", []), "raw_u8": ("bytes", []),
         "empty_f": ("float", [0])}
VAR = {"var_f": "float", "var_i": "int64", "var_b": "bytes", "sometimes_i": "int64"}
DECODE = {"raw_i32": "<i4", "raw_f32": "<u4", "raw_u8": "u1"}  # float32 compared as bits
DECODE_TOWERFLOW = {"raw_i32": "int32", "raw_f32": "float32", "raw_u8": "uint8"}
TOWERFLOW_DTYPE = {"float": "float", "int64": "int64", "bytes": "string"}


def f32_bits(values):
    """float32 values (any sequence or array) -> their uint32 bit patterns."""
    return np.asarray(values, dtype=np.float32).view(np.uint32).tolist()


def bits_f32(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def special_f32(k):
    """The awkward floats the C++ writer uses too: -0, denormals, NaN payloads."""
    table = [0x00000000, 0x80000000, 0x3F800000, 0x00800000, 0x00000001, 0x7F7FFFFF,
             0xFF800000, 0x7F800000, 0x7FC12345, 0xFFC00001, 0x40490FDB, 0x3DCCCCCD]
    return table[k % len(table)]


def run(args, check=True):
    """Runs a command, returns CompletedProcess with text stdout/stderr."""
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(map(str, args)), proc.returncode, proc.stdout[-4000:],
                                proc.stderr[-4000:]))
    return proc


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_text(path):
    with open(path) as f:
        return f.read()


def read_jsonl(text, **kwargs):
    """One JSON value per non-empty line; kwargs go to json.loads."""
    return [json.loads(line, **kwargs) for line in text.splitlines() if line.strip()]


def record_offsets(path):
    """Start offsets of the records of an uncompressed TFRecord file, and its size."""
    data = read_bytes(path)
    offsets, pos = [], 0
    while pos < len(data):
        offsets.append(pos)
        (length,) = struct.unpack_from("<Q", data, pos)
        pos += 12 + length + 4
    return offsets, len(data)


def expected_from_jsonl(entry):
    """A FILE.jsonl line of the C++ writer -> {key: (kind, values)}, floats as bits,
    bytes as bytes."""
    out = {}
    for key, feature in entry.items():
        if feature["kind"] == "float":
            out[key] = ("float", list(feature["bits"]))
        elif feature["kind"] == "int64":
            out[key] = ("int64", list(feature["values"]))
        else:
            out[key] = ("bytes", [bytes.fromhex(h) for h in feature["hex"]])
    return out


def expected_from_proto(example):
    """A tf.train.Example message -> {key: (kind, values)}, as expected_from_jsonl."""
    out = {}
    for key, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        if kind == "float_list":
            out[key] = ("float", f32_bits(list(feature.float_list.value)))
        elif kind == "int64_list":
            out[key] = ("int64", list(feature.int64_list.value))
        elif kind == "bytes_list":
            out[key] = ("bytes", list(feature.bytes_list.value))
        else:
            out[key] = (None, [])
    return out


def make_tf_example(tf, i):
    """Record i of the files TensorFlow writes: every list kind, awkward values.
    Returns (tf.train.Example, {key: (kind, values)})."""
    expected = {}
    feature = {}

    def floats(key, bits):
        expected[key] = ("float", list(bits))
        feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=bits_f32(bits).tolist()))

    def int64s(key, values):
        expected[key] = ("int64", list(values))
        feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    def byteses(key, values):
        expected[key] = ("bytes", list(values))
        feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))

    floats("fixed_f", [special_f32(i + 5)] + f32_bits([np.float32(i) * np.float32(0.7),
                                                        -np.float32(i) / np.float32(9)]))
    int64s("fixed_i", [-(2 ** 63) + 3 * i, 2 ** 63 - 1 - i])
    byteses("fixed_b", [bytes((i * 5 + k * 3) % 256 for k in range((i * 11) % 23))])
    floats("var_f", [special_f32(i + k) for k in range(i % 5)])
    int64s("var_i", [(-1) ** k * (k << 40) + i for k in range((i * 3) % 4)])
    byteses("var_b", [bytes([k, 0, 255 - k]) * k for k in range(i % 4)])
    byteses("raw_i32", [np.array([i, -i, 2 ** 31 - 1, -2 ** 31 + i * 1000], "<i4").tobytes()])
    byteses("raw_f32", [np.array([special_f32(i), special_f32(i + 1)], "<u4").tobytes()])
    byteses("raw_u8", [bytes([i % 256, 255, 0, (i * 37) % 256, 1])])
    if i % 3 != 1:
        int64s("sometimes_i", [i * 1000, -i])
    floats("empty_f", [])
    return tf.train.Example(features=tf.train.Features(feature=feature)), expected


def tool_read_args(compression, batch_size=0):
    """tfrecord_interop_tool read's arguments for the interop schema."""
    args = [TOOL, "read", "--compression", compression, "--batch-size", batch_size]
    for key, (kind, shape) in FIXED.items():
        spec = "%s=%s" % (key, TOWERFLOW_DTYPE[kind])
        if shape:
            spec += ":" + "x".join(map(str, shape))
        args += ["--fixed", spec]
    for key, kind in VAR.items():
        args += ["--var", "%s=%s" % (key, TOWERFLOW_DTYPE[kind])]
    for key, dtype in DECODE_TOWERFLOW.items():
        args += ["--decode", "%s=%s" % (key, dtype)]
    return args


def json_values(kind, values):
    """Expected values in the form tfrecord_interop_tool prints them."""
    return [v.hex() for v in values] if kind == "bytes" else list(values)


def decoded_values(key, raw):
    arr = np.frombuffer(raw, dtype=DECODE[key])
    return arr.tolist()


class TempDirTest(unittest.TestCase):
    """A test with a fresh temporary directory self.dir."""

    def setUp(self):
        self.assertTrue(TOWERFLOW and os.path.exists(TOWERFLOW), "TOWERFLOW_BIN=%r: not built" % TOWERFLOW)
        self.assertTrue(TOOL and os.path.exists(TOOL), "TOWERFLOW_INTEROP_TOOL=%r: not built" % TOOL)
        self.dir = tempfile.mkdtemp(prefix="tw_interop_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def assertParsedRecord(self, features, expected, where):
        """Compares one record of `tfrecord_interop_tool read` (single mode) with
        {key: (kind, values)}."""
        for key, (kind, shape) in FIXED.items():
            got = features[key]
            self.assertEqual(got["shape"], shape, "%s %s shape" % (where, key))
            self.assertEqual(got["values"], json_values(kind, expected[key][1]), "%s %s" % (where, key))
        for key, kind in VAR.items():
            values = expected[key][1] if key in expected else []
            n = len(values)
            self.assertEqual(features[key + "/indices"]["shape"], [n, 1], "%s %s" % (where, key))
            self.assertEqual(features[key + "/indices"]["values"], list(range(n)), "%s %s" % (where, key))
            self.assertEqual(features[key + "/values"]["values"], json_values(kind, values), "%s %s" % (where, key))
            self.assertEqual(features[key + "/dense_shape"]["values"], [n], "%s %s" % (where, key))
        for key in DECODE:
            got = features[key + ":decoded"]
            want = decoded_values(key, expected[key][1][0])
            self.assertEqual(got["shape"], [len(want)], "%s %s decoded" % (where, key))
            self.assertEqual(got["values"], want, "%s %s decoded" % (where, key))

    def assertParsedBatch(self, features, expected_batch, where):
        """One batch of `tfrecord_interop_tool read --batch-size B` against the
        expected records it should hold, in order."""
        b = len(expected_batch)
        for key, (kind, shape) in FIXED.items():
            got = features[key]
            self.assertEqual(got["shape"], [b] + shape, "%s %s shape" % (where, key))
            want = []
            for e in expected_batch:
                want += json_values(kind, e[key][1])
            self.assertEqual(got["values"], want, "%s %s" % (where, key))
        for key, kind in VAR.items():
            indices, values, longest = [], [], 0
            for row, e in enumerate(expected_batch):
                v = e[key][1] if key in e else []
                longest = max(longest, len(v))
                for pos in range(len(v)):
                    indices += [row, pos]
                values += json_values(kind, v)
            self.assertEqual(features[key + "/indices"]["values"], indices, "%s %s indices" % (where, key))
            self.assertEqual(features[key + "/values"]["values"], values, "%s %s values" % (where, key))
            self.assertEqual(features[key + "/dense_shape"]["values"], [b, longest], "%s %s" % (where, key))
        for key in DECODE:
            got = features[key + ":decoded"]
            want = [decoded_values(key, e[key][1][0]) for e in expected_batch]
            self.assertEqual(got["shape"], [b, len(want[0])], "%s %s decoded" % (where, key))
            self.assertEqual(got["values"], [v for row in want for v in row], "%s %s decoded" % (where, key))
