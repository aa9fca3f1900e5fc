"""towerflow's checkpoints and Hugging Face's safetensors read each other's files.

- safetensors.numpy.load_file reads the file checkpoint_interop_tool writes
  (tw::train::WriteSafetensors) with the exact dtypes, shapes, values (floats bit
  for bit: NaN payloads, -0, infinities, denormals) and metadata, and the header
  is laid out as the reference lays it out (padded with spaces to 8 bytes).
- towerflow reads what safetensors.numpy.save_file writes (tw::train::
  ReadSafetensors), value for value, in the file's order; rewriting it with
  towerflow gives the reference's bytes exactly.
- Damaged reference files (cut short, header length too large, offsets changed)
  are DataLoss for towerflow, naming the file; the reference rejects them too.

Run by tests/interop/run.sh, which CTest calls with TOWERFLOW_CHECKPOINT_TOOL
(checkpoint_interop_tool) in the environment.
"""
import json
import os
import shutil
import struct
import tempfile
import unittest

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from interop_common import read_bytes, read_jsonl, run

TOOL = os.environ.get("TOWERFLOW_CHECKPOINT_TOOL", "")

ST_DTYPE = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.int32): "I32",
            np.dtype(np.int64): "I64", np.dtype(np.uint8): "U8", np.dtype(np.bool_): "BOOL"}
BITS = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def f32(bits, shape):
    return np.array(bits, dtype=np.uint32).view(np.float32).reshape(shape)


def f64(bits, shape):
    return np.array(bits, dtype=np.uint64).view(np.float64).reshape(shape)


# What `checkpoint_interop_tool write` writes, in its order.
EXPECTED = {
    "f32": f32([0x3F800000, 0x80000000, 0x7FC12345, 0xFF800000, 0x00000001, 0x7F7FFFFF], (2, 3)),
    "f64": f64([0x7FF8000000000ABC, 0x8000000000000000, 0x0000000000000001], (3,)),
    "i32": np.array([-2 ** 31, -1, 0, 2 ** 31 - 1], dtype=np.int32),
    "i64": np.array([[-2 ** 63, 1 << 40], [2 ** 63 - 1, -3]], dtype=np.int64),
    "u8": np.array([0, 1, 127, 128, 255], dtype=np.uint8),
    "bool": np.array([[True, False], [False, True]]),
    "scalar_f32": np.array(3.5, dtype=np.float32),
    "scalar_i64": np.array(-42, dtype=np.int64),
    "empty_f32": np.zeros((0, 4), dtype=np.float32),
    "empty_bool": np.zeros((0,), dtype=np.bool_),
    "unicode \u2713/name": np.array([7], dtype=np.uint8),
}
METADATA = {"format": "towerflow", "global_step": "12", "note": "\u00fcn\u00efcode \u2713 \"quoted\""}

# What the reference writes for towerflow to read: the same kinds of values,
# other numbers, other shapes.
REFERENCE = {
    "w": f32([0x7FC00001, 0x00000000, 0x80000001, 0x7F800000, 0x3DCCCCCD, 0x40490FDB, 0xC0000000, 0x00800000],
             (2, 2, 2)),
    "d": f64([0xFFF0000000000000, 0x3FB999999999999A], (2, 1)),
    "n": np.arange(-5, 7, dtype=np.int32).reshape(3, 4),
    "big": np.array([2 ** 62, -(2 ** 62) - 1], dtype=np.int64),
    "bytes": np.arange(0, 256, 17, dtype=np.uint8),
    "mask": np.array([False, True, True]),
    "s": np.array(2.0, dtype=np.float64),
    "none": np.zeros((3, 0), dtype=np.int32),
}
REFERENCE_METADATA = {"step": "7"}  # one key: the reference orders metadata keys by hash


def header_of(data):
    (n,) = struct.unpack_from("<Q", data, 0)
    return n, data[8:8 + n]


def tool_values(entry):
    """A tensor printed by `checkpoint_interop_tool read` -> numpy array."""
    dtype = {v: k for k, v in ST_DTYPE.items()}[entry["dtype"]]
    if dtype in BITS:
        return np.array(entry["values"], dtype=BITS[dtype]).view(dtype).reshape(entry["shape"])
    return np.array(entry["values"], dtype=np.uint8 if dtype == np.bool_ else dtype).astype(dtype).reshape(
        entry["shape"])


class SafetensorsInterop(unittest.TestCase):
    def setUp(self):
        self.assertTrue(TOOL and os.path.exists(TOOL), "TOWERFLOW_CHECKPOINT_TOOL=%r: not built" % TOOL)
        self.dir = tempfile.mkdtemp(prefix="tw_safetensors_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def assertSameArray(self, got, want, what):
        self.assertEqual(got.dtype, want.dtype, what)
        self.assertEqual(got.shape, want.shape, what)
        # Bytes, so that floats compare bit for bit (NaN payloads, -0).
        self.assertEqual(got.tobytes(), want.tobytes(), what)

    def test_reference_reads_towerflow_files(self):
        path = self.path("towerflow.safetensors")
        run([TOOL, "write", "--out", path])
        loaded = load_file(path)
        self.assertEqual(sorted(loaded), sorted(EXPECTED))
        for name, want in EXPECTED.items():
            self.assertSameArray(loaded[name], want, name)
        with safe_open(path, framework="numpy") as f:
            self.assertEqual(f.metadata(), METADATA)

        # The header as the reference lays it out: compact JSON, "__metadata__"
        # first, the tensors in the order written and contiguous, spaces to 8.
        data = read_bytes(path)
        n, header = header_of(data)
        self.assertEqual(n % 8, 0)
        text = header.decode("utf-8")
        self.assertTrue(text.startswith("{"))
        self.assertLess(len(text) - len(text.rstrip(" ")), 8)
        parsed = json.loads(text)
        self.assertEqual(list(parsed), ["__metadata__"] + list(EXPECTED))
        offset = 0
        for name, want in EXPECTED.items():
            entry = parsed[name]
            self.assertEqual(entry, {"dtype": ST_DTYPE[want.dtype], "shape": list(want.shape),
                                     "data_offsets": [offset, offset + want.nbytes]}, name)
            offset += want.nbytes
        self.assertEqual(len(data), 8 + n + offset)
        self.assertEqual(text.rstrip(" "), json.dumps(parsed, separators=(",", ":"), ensure_ascii=False))

    def test_towerflow_reads_reference_files(self):
        path = self.path("reference.safetensors")
        save_file(REFERENCE, path, metadata=REFERENCE_METADATA)
        lines = read_jsonl(run([TOOL, "read", path]).stdout)
        self.assertEqual(lines[0], {"metadata": REFERENCE_METADATA})
        # File order: the order of the tensors in the reference's buffer.
        _, header = header_of(read_bytes(path))
        entries = {k: v for k, v in json.loads(header).items() if k != "__metadata__"}
        in_buffer = sorted(entries, key=lambda k: tuple(entries[k]["data_offsets"]))
        self.assertEqual([e["name"] for e in lines[1:]], in_buffer)
        for entry in lines[1:]:
            name = entry["name"]
            self.assertEqual(entry["dtype"], ST_DTYPE[REFERENCE[name].dtype], name)
            self.assertSameArray(tool_values(entry), REFERENCE[name], name)

    def test_towerflow_rewrites_reference_files_byte_for_byte(self):
        for metadata in (REFERENCE_METADATA, None):
            src, dst = self.path("reference.safetensors"), self.path("copy.safetensors")
            save_file(REFERENCE, src, metadata=metadata)
            run([TOOL, "copy", src, dst])
            self.assertEqual(read_bytes(dst), read_bytes(src), "metadata=%r" % metadata)

    def test_towerflow_round_trips_through_the_reference(self):
        # towerflow writes, the reference loads and saves again, towerflow reads.
        ours, theirs = self.path("ours.safetensors"), self.path("theirs.safetensors")
        run([TOOL, "write", "--out", ours])
        save_file(load_file(ours), theirs, metadata=METADATA)
        lines = read_jsonl(run([TOOL, "read", theirs]).stdout)
        self.assertEqual(lines[0], {"metadata": METADATA})
        self.assertEqual(sorted(e["name"] for e in lines[1:]), sorted(EXPECTED))
        for entry in lines[1:]:
            self.assertSameArray(tool_values(entry), EXPECTED[entry["name"]], entry["name"])

    def damaged(self, edit, expected):
        """The reference's file, edited, is DataLoss for towerflow (message naming
        the file and containing `expected`) and rejected by the reference too."""
        src = self.path("reference.safetensors")
        save_file(REFERENCE, src, metadata=REFERENCE_METADATA)
        bad = self.path("damaged.safetensors")
        with open(bad, "wb") as f:
            f.write(edit(read_bytes(src)))
        proc = run([TOOL, "read", bad], check=False)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("towerflow: DataLoss: " + bad + ": ", proc.stderr)
        self.assertIn(expected, proc.stderr)
        with self.assertRaises(Exception):
            load_file(bad)

    def test_damaged_reference_files_are_data_loss(self):
        size = len(read_bytes(self.write_reference()))
        n = header_of(read_bytes(self.path("reference.safetensors")))[0]
        self.damaged(lambda d: d[:5], "fewer than the 8-byte header length")
        self.damaged(lambda d: d[:8 + n // 2], "runs past the end of the file")
        self.damaged(lambda d: d[:size - 1], "end past the")
        self.damaged(lambda d: struct.pack("<Q", 2 ** 40) + d[8:], "exceeds the limit of 100000000 bytes")
        self.damaged(lambda d: d + b"\0\0\0\0", "belong to no tensor")

        def shift_offsets(d):
            # The first tensor claims 4 more bytes: it overlaps the next one.
            _, header = header_of(d)
            parsed = json.loads(header)
            first = min((k for k in parsed if k != "__metadata__"), key=lambda k: parsed[k]["data_offsets"][0])
            parsed[first]["data_offsets"][1] += 4
            text = json.dumps(parsed, separators=(",", ":")).encode()
            text += b" " * (-len(text) % 8)
            return struct.pack("<Q", len(text)) + text + d[8 + len(header):]

        self.damaged(shift_offsets, "hold ")

    def write_reference(self):
        path = self.path("reference.safetensors")
        save_file(REFERENCE, path, metadata=REFERENCE_METADATA)
        return path


if __name__ == "__main__":
    unittest.main()
