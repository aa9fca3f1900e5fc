"""TensorFlow reads the TFRecord files towerflow writes, with identical values.

- tfrecord_interop_tool `write` (RecordWriter + libprotobuf Examples), plain,
  GZIP and ZLIB: tf.data.TFRecordDataset(compression_type=...) gives the records,
  whose tf.train.Example, tf.io.parse_single_example, tf.io.parse_example and
  tf.io.decode_raw values equal what the writer says it wrote, floats bit for bit.
- `towerflow convert seed-synthetic`: TF (tf.data, and the seed's own TF1 queue
  pipeline) parses the same x/labels as `towerflow records show`.
- `towerflow convert fashion-mnist`: TF's parsed images and labels equal the IDX
  files of Debian's dataset-fashion-mnist, every record of both splits.
"""
import base64
import glob
import gzip
import os
import unittest
import zlib

import numpy as np
import tensorflow as tf

from interop_common import (DECODE, FIXED, TOWERFLOW, TOOL, VAR, TempDirTest, expected_from_jsonl,
                            expected_from_proto, f32_bits, read_bytes, read_jsonl, read_text, record_offsets,
                            run)

TF_DTYPE = {"float": tf.float32, "int64": tf.int64, "bytes": tf.string}
TF_DECODE = {"raw_i32": tf.int32, "raw_f32": tf.float32, "raw_u8": tf.uint8}
tf.get_logger().setLevel("ERROR")  # the TF1 queue API's deprecation notices
FASHION_MNIST = os.environ.get("TOWERFLOW_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")


def tf_spec():
    spec = {key: tf.io.FixedLenFeature(shape, TF_DTYPE[kind]) for key, (kind, shape) in FIXED.items()}
    spec.update({key: tf.io.VarLenFeature(TF_DTYPE[kind]) for key, kind in VAR.items()})
    return spec


def as_list(kind, array):
    """A numpy array from TF -> values comparable with (kind, values)."""
    if kind == "float":
        return f32_bits(array)
    if kind == "bytes":
        return [bytes(v) for v in np.asarray(array, dtype=object).reshape(-1)]
    return np.asarray(array).reshape(-1).tolist()


def decoded(key, tensor):
    arr = tensor.numpy()
    return (arr.view(np.uint32) if key == "raw_f32" else arr).reshape(-1).tolist()


class TfReadsToolExamples(TempDirTest):
    N = 37

    def write(self, name, compression):
        path = self.path(name)
        run([TOOL, "write", "--out", path, "--compression", compression, "--records", self.N])
        expected = [expected_from_jsonl(e) for e in read_jsonl(read_text(path + ".jsonl"))]
        self.assertEqual(len(expected), self.N)
        return path, expected

    def check_single(self, parsed, want, where):
        for key, (kind, shape) in FIXED.items():
            self.assertEqual(list(parsed[key].shape), shape, "%s %s" % (where, key))
            self.assertEqual(as_list(kind, parsed[key].numpy()), want[key][1], "%s %s" % (where, key))
        for key, kind in VAR.items():
            values = want[key][1] if key in want else []
            sp = parsed[key]
            self.assertEqual(as_list(kind, sp.values.numpy()), values, "%s %s" % (where, key))
            self.assertEqual(sp.indices.numpy().tolist(), [[k] for k in range(len(values))], "%s %s" % (where, key))
            self.assertEqual(sp.dense_shape.numpy().tolist(), [len(values)], "%s %s" % (where, key))
        for key, dtype in TF_DECODE.items():
            want_values = np.frombuffer(want[key][1][0], dtype=DECODE[key]).tolist()
            self.assertEqual(decoded(key, tf.io.decode_raw(parsed[key], dtype)), want_values, "%s %s" % (where, key))

    def check_file(self, path, tf_compression, expected):
        records = [r.numpy() for r in tf.data.TFRecordDataset(path, compression_type=tf_compression)]
        self.assertEqual(len(records), self.N)
        spec = tf_spec()
        for i, raw in enumerate(records):
            # The message itself, as libprotobuf (python) decodes it: every list kind.
            self.assertEqual(expected_from_proto(tf.train.Example.FromString(raw)), expected[i], "record %d" % i)
            self.check_single(tf.io.parse_single_example(raw, spec), expected[i], "record %d" % i)
        # Batched: parse_example and decode_raw over batches of 8 (the last one 5).
        ds = tf.data.TFRecordDataset(path, compression_type=tf_compression).batch(8)
        seen = 0
        for parsed in ds.map(lambda s: tf.io.parse_example(s, spec)):
            rows = parsed["fixed_f"].shape[0]
            for r in range(rows):
                want = expected[seen + r]
                for key, (kind, _) in FIXED.items():
                    self.assertEqual(as_list(kind, parsed[key][r].numpy()), want[key][1], "batch row %d %s" % (seen + r, key))
                for key, kind in VAR.items():
                    sp = parsed[key]
                    mask = sp.indices.numpy()[:, 0] == r
                    self.assertEqual(as_list(kind, sp.values.numpy()[mask]), want[key][1] if key in want else [],
                                     "batch row %d %s" % (seen + r, key))
            for key, dtype in TF_DECODE.items():
                rows_bytes = [expected[seen + r][key][1][0] for r in range(rows)]
                want_values = np.frombuffer(b"".join(rows_bytes), dtype=DECODE[key]).tolist()
                self.assertEqual(decoded(key, tf.io.decode_raw(parsed[key], dtype)), want_values, key)
            seen += rows
        self.assertEqual(seen, self.N)

    def test_plain(self):
        path, expected = self.write("plain.tfrecord", "none")
        self.check_file(path, "", expected)

    def test_gzip(self):
        path, expected = self.write("c.tfrecord.gz", "gzip")
        data = read_bytes(path)
        self.assertEqual(data[:2], b"\x1f\x8b", "not a gzip stream")
        # The whole framed stream is compressed, as TF writes it: it inflates to
        # the plain file's bytes.
        plain, _ = self.write("same.tfrecord", "none")
        self.assertEqual(gzip.decompress(data), read_bytes(plain))
        self.check_file(path, "GZIP", expected)

    def test_zlib(self):
        path, expected = self.write("c.tfrecord.zlib", "zlib")
        plain, _ = self.write("same.tfrecord", "none")
        self.assertEqual(zlib.decompress(read_bytes(path)), read_bytes(plain))
        self.check_file(path, "ZLIB", expected)


class TfReadsConvertOutput(TempDirTest):
    F = 64

    def seed_files(self):
        out = self.path("seed")
        run([TOWERFLOW, "convert", "seed-synthetic", "--out", out, "--n-features", self.F, "--examples", 300,
             "--shards", 3, "--seed", 11])
        files = sorted(glob.glob(os.path.join(out, "train-*-of-00003.tfrecord")))
        self.assertEqual(len(files), 3)
        # What towerflow says each file holds: `records show`, base64 bytes.
        shown = {}
        for f in files:
            rows = read_jsonl(run([TOWERFLOW, "records", "show", f]).stdout)
            shown[f] = [(np.frombuffer(base64.b64decode(r["x"]["bytes_list"][0]), "<i4").reshape(2, self.F),
                         np.frombuffer(base64.b64decode(r["labels"]["bytes_list"][0]), "<i4").reshape(1, 2))
                        for r in rows]
        self.assertEqual(sum(len(v) for v in shown.values()), 300)
        return files, shown

    def test_seed_synthetic_with_tf_data(self):
        files, shown = self.seed_files()
        spec = {"x": tf.io.FixedLenFeature([], tf.string), "labels": tf.io.FixedLenFeature([], tf.string)}
        for f in files:
            got = []
            for raw in tf.data.TFRecordDataset(f):
                p = tf.io.parse_single_example(raw, spec)
                got.append((tf.reshape(tf.io.decode_raw(p["x"], tf.int32), [2, self.F]).numpy(),
                            tf.reshape(tf.io.decode_raw(p["labels"], tf.int32), [1, 2]).numpy()))
            self.assertEqual(len(got), len(shown[f]))
            for i, ((x, labels), (sx, slabels)) in enumerate(zip(got, shown[f])):
                np.testing.assert_array_equal(x, sx, "%s record %d x" % (f, i))
                np.testing.assert_array_equal(labels, slabels, "%s record %d labels" % (f, i))
                self.assertTrue(((x >= 0) & (x <= 15)).all())
                self.assertEqual(sorted(labels.reshape(-1).tolist()), [0, 1])

    def test_seed_synthetic_with_the_seeds_tf1_pipeline(self):
        """The seed's get_input(), verbatim in tf.compat.v1 graph mode, reads the files."""
        files, shown = self.seed_files()
        v1 = tf.compat.v1
        with tf.Graph().as_default():
            filename_queue = v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
            reader = v1.TFRecordReader()
            key, serialized_example = reader.read(filename_queue)
            features = v1.parse_single_example(serialized_example, features={
                "x": v1.FixedLenFeature([], tf.string), "labels": v1.FixedLenFeature([], tf.string)})
            x = tf.reshape(v1.decode_raw(features["x"], tf.int32), [2, self.F])
            labels = tf.reshape(v1.decode_raw(features["labels"], tf.int32), [1, 2])
            with v1.Session() as sess:
                sess.run(v1.local_variables_initializer())
                coord = v1.train.Coordinator()
                threads = v1.train.start_queue_runners(sess, coord)
                got = []
                try:
                    while True:
                        got.append(sess.run([key, x, labels]))
                except tf.errors.OutOfRangeError:
                    pass
                finally:
                    coord.request_stop()
                    coord.join(threads)
        self.assertEqual(len(got), 300)
        offsets = {f: record_offsets(f)[0] for f in files}
        for k, gx, glabels in got:
            # TF's keys are "<file>:<byte offset of the record>".
            f, offset = k.decode().rsplit(":", 1)
            i = offsets[f].index(int(offset))
            np.testing.assert_array_equal(gx, shown[f][i][0], k)
            np.testing.assert_array_equal(glabels, shown[f][i][1], k)

    def test_fashion_mnist(self):
        images_gz = os.path.join(FASHION_MNIST, "train-images-idx3-ubyte.gz")
        self.assertTrue(os.path.exists(images_gz),
                        "%s is missing: install Debian's dataset-fashion-mnist (or set TOWERFLOW_FASHION_MNIST)"
                        % images_gz)
        out = self.path("fmnist")
        run([TOWERFLOW, "convert", "fashion-mnist", "--out", out, "--shards", 3, "--source", FASHION_MNIST])
        spec = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}
        for split, prefix, n in (("train", "train", 60000), ("t10k", "test", 10000)):
            idx_images = gzip.decompress(read_bytes(os.path.join(FASHION_MNIST, split + "-images-idx3-ubyte.gz")))
            idx_labels = gzip.decompress(read_bytes(os.path.join(FASHION_MNIST, split + "-labels-idx1-ubyte.gz")))
            want_images = np.frombuffer(idx_images, np.uint8, offset=16).reshape(n, 784)
            want_labels = np.frombuffer(idx_labels, np.uint8, offset=8).astype(np.int64)
            files = sorted(glob.glob(os.path.join(out, prefix + "-*-of-00003.tfrecord")))
            self.assertEqual(len(files), 3)
            images, labels = [], []
            ds = tf.data.TFRecordDataset(files).batch(5000).map(lambda s: tf.io.parse_example(s, spec))
            for p in ds:
                images.append(tf.io.decode_raw(p["image"], tf.uint8).numpy())
                labels.append(p["label"].numpy())
            images, labels = np.concatenate(images), np.concatenate(labels)
            self.assertEqual(images.shape, (n, 784))
            np.testing.assert_array_equal(images, want_images, split)
            np.testing.assert_array_equal(labels, want_labels, split)


if __name__ == "__main__":
    unittest.main()
