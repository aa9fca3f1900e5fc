"""towerflow reads the TFRecord files TensorFlow writes, with identical values.

tf.io.TFRecordWriter writes Examples holding all three list kinds (FixedLen-
and VarLen-style lists, empty lists, a feature missing from some records, raw
bytes for decode_raw, NaN payloads, -0, denormals, int64 extremes), plain, GZIP
and ZLIB (tf.io.TFRecordOptions). towerflow then:
- counts and verifies them (`towerflow records count|verify`, compression
  detected from the bytes);
- prints them (`towerflow records show`): the JSON values equal what TF wrote;
- parses them through its graph ops (tfrecord_interop_tool read):
  StringInputProducer -> TFRecordReader -> ParseSingleExample -> DecodeRaw, and
  Batch -> ParseExample -> DecodeRaw; every value equal, floats bit for bit.
"""
import base64
import math
import unittest

import numpy as np
import tensorflow as tf

from interop_common import (TOWERFLOW, TempDirTest, expected_from_proto, f32_bits, make_tf_example, read_jsonl,
                            run, tool_read_args)

N = 41  # not a multiple of the batch size: the final batch is smaller
BATCH = 8
TF_OPTIONS = {"none": None, "gzip": tf.io.TFRecordOptions(compression_type="GZIP"),
              "zlib": tf.io.TFRecordOptions(compression_type="ZLIB")}


def tf_reader_keys(paths, compression):
    """The keys TF1's own TFRecordReader gives the records of `paths`, in order
    (a queue-fed graph through tf.compat.v1, as the seed's program reads)."""
    names = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}
    graph = tf.Graph()
    keys = []
    with graph.as_default():
        queue = tf.compat.v1.train.string_input_producer(paths, num_epochs=1, shuffle=False)
        options = tf.io.TFRecordOptions(compression_type=names[compression]) if names[compression] else None
        key, _ = tf.compat.v1.TFRecordReader(options=options).read_up_to(queue, 1000)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.local_variables_initializer())
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(session, coord)
            try:
                while True:
                    keys += [k.decode() for k in session.run(key)]
            except tf.errors.OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads)
    return keys


def show_float_bits(value):
    """A float as `records show` prints it (the number's text: "-0" keeps its
    sign) -> float32 bits; None for NaN, whose payload JSON cannot carry."""
    if value == "NaN":
        return None
    if value in ("Infinity", "-Infinity"):
        return f32_bits([math.inf if value == "Infinity" else -math.inf])[0]
    return f32_bits([np.float32(float(value))])[0]


class TowerflowReadsTfFiles(TempDirTest):
    def write(self, name, compression):
        path = self.path(name)
        expected = []
        self.offsets = []  # where each record starts in the uncompressed stream
        offset = 0
        with tf.io.TFRecordWriter(path, options=TF_OPTIONS[compression]) as writer:
            for i in range(N):
                example, want = make_tf_example(tf, i)
                # The expectation is what TF's own protobuf reads back.
                self.assertEqual(expected_from_proto(tf.train.Example.FromString(example.SerializeToString())), want)
                writer.write(example.SerializeToString())
                expected.append(want)
                self.offsets.append(offset)
                offset += 12 + len(example.SerializeToString()) + 4  # length, its CRC, data, data CRC
        return path, expected

    def check(self, compression, name):
        path, expected = self.write(name, compression)

        # count / verify, with compression detected (auto) and named.
        self.assertEqual(run([TOWERFLOW, "records", "count", path]).stdout, "%d\n" % N)
        self.assertEqual(run([TOWERFLOW, "records", "count", "--compression", compression, path]).stdout, "%d\n" % N)
        verify = run([TOWERFLOW, "records", "verify", path])
        self.assertIn("%s: OK, %d records" % (path, N), verify.stdout)

        # show: one JSON object per record, values as TF wrote them. Numbers are
        # kept as their text, so that "-0" stays negative.
        shown = read_jsonl(run([TOWERFLOW, "records", "show", path]).stdout, parse_int=str, parse_float=str)
        self.assertEqual(len(shown), N)
        for i, (got, want) in enumerate(zip(shown, expected)):
            self.assertEqual(sorted(got), sorted(want), "record %d keys" % i)
            for key, (kind, values) in want.items():
                where = "record %d %s" % (i, key)
                if kind == "float":
                    got_bits = [show_float_bits(v) for v in got[key]["float_list"]]
                    want_bits = [None if math.isnan(bits_value) else b
                                 for b, bits_value in zip(values, np.asarray(values, np.uint32).view(np.float32))]
                    self.assertEqual(got_bits, want_bits, where)
                elif kind == "int64":
                    self.assertEqual([int(v) for v in got[key]["int64_list"]], values, where)
                else:
                    self.assertEqual([base64.b64decode(v) for v in got[key]["bytes_list"]], values, where)

        # The graph ops, one example at a time: TF's key "<file>:<offset>" (the
        # byte offset of the record in the uncompressed stream), every value.
        offsets = self.offsets
        single = read_jsonl(run(tool_read_args(compression) + [path]).stdout)
        self.assertEqual(len(single), N)
        self.assertEqual([r["key"] for r in single], tf_reader_keys([path], compression))
        for i, (got, want) in enumerate(zip(single, expected)):
            self.assertEqual(got["key"], "%s:%d" % (path, offsets[i]))
            self.assertParsedRecord(got["features"], want, "record %d" % i)

        # Batch of serialized records -> ParseExample -> DecodeRaw.
        batches = read_jsonl(run(tool_read_args(compression, BATCH) + [path]).stdout)
        self.assertEqual(len(batches), (N + BATCH - 1) // BATCH)
        for b, got in enumerate(batches):
            self.assertParsedBatch(got["features"], expected[b * BATCH:(b + 1) * BATCH], "batch %d" % b)

    def test_plain(self):
        self.check("none", "tf.tfrecord")

    def test_gzip(self):
        self.check("gzip", "tf.tfrecord.gz")

    def test_zlib(self):
        self.check("zlib", "tf.tfrecord.zlib")

    def test_several_files_in_order(self):
        """One reader over two TF-written files, in order."""
        a, ea = self.write("a.tfrecord", "none")
        offsets_a = self.offsets
        b, eb = self.write("b.tfrecord", "none")
        offsets_b = self.offsets
        self.assertEqual(run([TOWERFLOW, "records", "count", a, b]).stdout, "%d\n" % (2 * N))
        single = read_jsonl(run(tool_read_args("none") + [a, b]).stdout)
        self.assertEqual([r["key"] for r in single], ["%s:%d" % (a, o) for o in offsets_a] +
                         ["%s:%d" % (b, o) for o in offsets_b])
        self.assertEqual([r["key"] for r in single], tf_reader_keys([a, b], "none"))
        for i, (got, want) in enumerate(zip(single, ea + eb)):
            self.assertParsedRecord(got["features"], want, "record %d" % i)


if __name__ == "__main__":
    unittest.main()
