"""tf.data and towerflow's tw::data give the same elements over the same files.

TensorFlow writes TFRecord files of Fashion-MNIST-schema Examples (image: 784
random bytes, label: int64 0..9, plus tokens: 0 to 20 random bytes), plain and
GZIP. Every pipeline of dataset_interop_tool (TOWERFLOW_DATASET_TOOL) is built
here the same way with tf.data (deterministic: tf.data's default), and both must
give the same elements in the same order: dtype, shape and values, floats bit
for bit. The pipelines (see dataset_interop_tool.cc):

- records, interleave: TFRecordDataset(files), and num_parallel_reads=2 (one
  record per file in turn; the files have different lengths so that an ended
  file's slot going to the next file shows);
- parse_single: map(parse_single_example, decode_raw, reshape, cast * 1/255).batch(32);
- batch_parse: batch(50).map(parse_example, decode_raw, num_parallel_calls=2);
- take_skip_shard, repeat_batch: skip/take/shard, take/repeat/batch/map;
- range_ops: range(0, 100, 3).filter(x % 2 == 0).map(x * 2).batch(4, drop_remainder);
- padded: map(decode_raw(tokens)).padded_batch(5);
- the records of a glob (ListFiles / list_files(shuffle=False)), sorted.

Errors: a Map that fails on one element (an image of 783 bytes, which cannot be
reshaped to [784]) stops both after the same batches, towerflow naming the
element; a missing file is NotFound in both; a pattern matching nothing is
InvalidArgument "No files matched pattern" in both; an empty list of files is
InvalidArgument in towerflow.
"""
import glob
import os
import shutil
import tempfile
import unittest

import numpy as np
import tensorflow as tf

from interop_common import f32_bits, read_jsonl, run

TOOL = os.environ.get("TOWERFLOW_DATASET_TOOL", "")
RECORDS_PER_FILE = (37, 25, 31)  # 93 records
TF_COMPRESSION = {"none": "", "gzip": "GZIP"}

IMAGE_LABEL = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}
LABEL = {"label": tf.io.FixedLenFeature([], tf.int64)}
TOKENS_LABEL = {"tokens": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}


def make_records(rng, n, bad=None):
    """n serialized Examples; record `bad` (if any) gets a 783-byte image."""
    out = []
    for i in range(n):
        image = rng.randint(0, 256, 783 if i == bad else 784).astype(np.uint8).tobytes()
        length = rng.randint(0, 21)
        tokens = rng.randint(0, 256, length).astype(np.uint8).tobytes()
        feature = {
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[rng.randint(0, 10)])),
            "tokens": tf.train.Feature(bytes_list=tf.train.BytesList(value=[tokens])),
        }
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return out


def write_file(path, records, compression):
    with tf.io.TFRecordWriter(path, options=TF_COMPRESSION[compression]) as w:
        for r in records:
            w.write(r)
    return path


# ---- the pipelines in tf.data (dataset_interop_tool.cc builds the same) ------

def parse_single(record):
    f = tf.io.parse_single_example(record, IMAGE_LABEL)
    pixels = tf.reshape(tf.io.decode_raw(f["image"], tf.uint8), [784])
    # A python float times a float32 tensor: the float32 nearest to 1/255, as the tool's Const.
    return tf.cast(pixels, tf.float32) * (1 / 255), f["label"]


def parse_batch(records):
    f = tf.io.parse_example(records, IMAGE_LABEL)
    return tf.io.decode_raw(f["image"], tf.uint8), f["label"]


def tokens_label(record):
    f = tf.io.parse_single_example(record, TOKENS_LABEL)
    return tf.io.decode_raw(f["tokens"], tf.uint8), f["label"]


def tf_records(files, compression, parallel_reads=None):
    """files: a list of paths or a dataset of file names."""
    return tf.data.TFRecordDataset(files, compression_type=TF_COMPRESSION[compression],
                                   num_parallel_reads=parallel_reads)


PIPELINES = {
    "records": lambda f, c: tf_records(f, c),
    "interleave": lambda f, c: tf_records(f, c, parallel_reads=2),
    "parse_single": lambda f, c: tf_records(f, c).map(parse_single).batch(32),
    "batch_parse": lambda f, c: tf_records(f, c).batch(50, drop_remainder=False)
    .map(parse_batch, num_parallel_calls=2, deterministic=True),
    "take_skip_shard": lambda f, c: tf_records(f, c).skip(3).take(40).shard(3, 1),
    "repeat_batch": lambda f, c: tf_records(f, c).take(10).repeat(3).batch(7)
    .map(lambda r: tf.io.parse_example(r, LABEL)["label"]),
    "range_ops": lambda f, c: tf.data.Dataset.range(0, 100, 3).filter(lambda x: x % 2 == 0)
    .map(lambda x: x * 2).batch(4, drop_remainder=True),
    "padded": lambda f, c: tf_records(f, c).map(tokens_label).padded_batch(5),
}

# Elements of each pipeline over the 93 records, counted by hand: a pipeline that
# yields nothing on both sides would otherwise pass.
COUNTS = {
    "records": 93,
    "interleave": 93,
    "parse_single": 3,  # 32 + 32 + 29
    "batch_parse": 2,  # 50 + 43
    "take_skip_shard": 13,  # records 4, 7, ..., 40
    "repeat_batch": 5,  # 30 labels: 7 7 7 7 2
    "range_ops": 4,  # 0, 6, ..., 96 (17 values) doubled, 4 full batches
    "padded": 19,  # 18 x 5 + 3
}


# ---- elements as comparable values --------------------------------------------

def tf_element(element):
    """A tf.data element -> [(dtype, shape, values)], floats as their bit patterns."""
    out = []
    for t in tf.nest.flatten(element):
        if t.dtype == tf.string:
            a = np.asarray(t.numpy(), dtype=object)
            values = [bytes(v).hex() for v in a.reshape(-1)]
        else:
            a = np.asarray(t.numpy())
            flat = a.reshape(-1)
            if t.dtype == tf.float32:
                values = f32_bits(flat)
            elif t.dtype == tf.float64:
                values = flat.view(np.uint64).tolist()
            else:
                values = flat.tolist()
        out.append((t.dtype.name, list(a.shape), values))
    return out


def tool_element(line):
    """A line of dataset_interop_tool -> [(dtype, shape, values)], as tf_element.
    The tool prints float32 with 9 significant digits, which parse back (through
    a double, never near a float32 rounding midpoint) to the very float."""
    out = []
    for c in line["components"]:
        values = c["values"]
        if c["dtype"] == "float32":
            values = f32_bits(values)
        elif c["dtype"] == "float64":
            values = np.asarray(values, dtype=np.float64).view(np.uint64).tolist()
        out.append((c["dtype"], list(c["shape"]), list(values)))
    return out


def tf_elements(dataset):
    """The elements of a tf.data dataset, and the error that ended it (or None)."""
    got = []
    try:
        for e in dataset:
            got.append(tf_element(e))
    except tf.errors.OpError as e:
        return got, e
    return got, None


class TfDataMatches(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (TOOL and os.path.exists(TOOL)):
            raise AssertionError("TOWERFLOW_DATASET_TOOL=%r: not built" % TOOL)
        cls.dir = tempfile.mkdtemp(prefix="tw_tf_data_")
        rng = np.random.RandomState(20261203)
        records = [make_records(rng, n) for n in RECORDS_PER_FILE]
        # Each file the same records plain and GZIP: reading either gives the same elements.
        cls.files = {
            "none": [write_file(os.path.join(cls.dir, "train-%d.tfrecord" % k), r, "none")
                     for k, r in enumerate(records)],
            "gzip": [write_file(os.path.join(cls.dir, "train-%d.tfrecord.gz" % k), r, "gzip")
                     for k, r in enumerate(records)],
        }
        cls.bad = write_file(os.path.join(cls.dir, "bad.tfrecord"), make_records(rng, 10, bad=5), "none")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def tool(self, pipeline, files=(), compression="none", pattern=None, check=True):
        args = [TOOL, "run", "--pipeline", pipeline, "--compression", compression]
        if pattern is not None:
            args += ["--pattern", pattern]
        return run(args + list(files), check=check)

    def assertSameElements(self, got, want, where):
        self.assertEqual(len(got), len(want), "%s: element count" % where)
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertEqual([c[:2] for c in g], [c[:2] for c in w], "%s element %d: dtypes and shapes" % (where, i))
            for k, (gc, wc) in enumerate(zip(g, w)):
                self.assertEqual(gc[2], wc[2], "%s element %d component %d: values" % (where, i, k))

    def check(self, pipeline):
        compressions = ["none"] if pipeline == "range_ops" else ["none", "gzip"]
        for c in compressions:
            with self.subTest(compression=c):
                files = [] if pipeline == "range_ops" else self.files[c]
                want, error = tf_elements(PIPELINES[pipeline](files, c))
                self.assertIsNone(error)
                self.assertEqual(len(want), COUNTS[pipeline], "tf.data's %s" % pipeline)
                got = [tool_element(e) for e in read_jsonl(self.tool(pipeline, files, c).stdout)]
                self.assertSameElements(got, want, "%s (%s)" % (pipeline, c))

    def test_records(self):
        self.check("records")

    def test_interleave(self):
        self.check("interleave")
        # Not the plain order: the interleaving is what was compared.
        plain, _ = tf_elements(PIPELINES["records"](self.files["none"], "none"))
        mixed, _ = tf_elements(PIPELINES["interleave"](self.files["none"], "none"))
        self.assertNotEqual(plain, mixed)
        self.assertEqual(sorted(map(str, plain)), sorted(map(str, mixed)))

    def test_parse_single(self):
        self.check("parse_single")

    def test_batch_parse(self):
        self.check("batch_parse")

    def test_take_skip_shard(self):
        self.check("take_skip_shard")

    def test_repeat_batch(self):
        self.check("repeat_batch")

    def test_range_ops(self):
        self.check("range_ops")

    def test_padded(self):
        self.check("padded")
        # The batches do pad, each to its own longest tokens: the padded lengths differ.
        want, _ = tf_elements(PIPELINES["padded"](self.files["none"], "none"))
        self.assertGreater(len({e[0][1][1] for e in want}), 1, "every batch padded to the same length")

    def test_list_files_pattern(self):
        pattern = os.path.join(self.dir, "train-*.tfrecord")
        names = tf.data.Dataset.list_files(pattern, shuffle=False)
        self.assertEqual([n.numpy().decode() for n in names], sorted(glob.glob(pattern)))
        for pipeline in ("records", "interleave", "parse_single"):
            with self.subTest(pipeline=pipeline):
                want, error = tf_elements(PIPELINES[pipeline](names, "none"))
                self.assertIsNone(error)
                self.assertEqual(len(want), COUNTS[pipeline])
                got = [tool_element(e) for e in read_jsonl(self.tool(pipeline, pattern=pattern).stdout)]
                self.assertSameElements(got, want, "%s over %s" % (pipeline, pattern))

    def test_map_error_names_the_element(self):
        # Element 37 + 5 = 42 (file 0 has 37 records) cannot be reshaped: both
        # give the first batch (elements 0..31), then fail on the second with
        # InvalidArgument. Only towerflow's message is checked: TF 2.20's
        # function optimizer drops the Reshape (seen even with tf.data's own
        # optimizations off), so the [783] element fails later, in the batching
        # ("Cannot add tensor to the batch: number of elements does not match").
        files = [self.files["none"][0], self.bad]
        want, error = tf_elements(PIPELINES["parse_single"](files, "none"))
        self.assertIsInstance(error, tf.errors.InvalidArgumentError)
        self.assertEqual(len(want), 1)
        proc = self.tool("parse_single", files, check=False)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("towerflow: InvalidArgument: ", proc.stderr)
        self.assertIn("element 42", proc.stderr)
        self.assertIn("783", proc.stderr)  # the shape it could not reshape
        got = [tool_element(e) for e in read_jsonl(proc.stdout)]
        self.assertSameElements(got, want, "parse_single before the bad record")

    def test_missing_file(self):
        missing = os.path.join(self.dir, "missing.tfrecord")
        _, error = tf_elements(PIPELINES["records"]([self.files["none"][0], missing], "none"))
        self.assertIsInstance(error, tf.errors.NotFoundError)
        proc = self.tool("records", [self.files["none"][0], missing], check=False)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("towerflow: NotFound: ", proc.stderr)
        self.assertIn(missing, proc.stderr)
        self.assertEqual(len(read_jsonl(proc.stdout)), RECORDS_PER_FILE[0])  # file 0's records came first

    def test_no_matching_files(self):
        pattern = os.path.join(self.dir, "nothing-*.tfrecord")
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "No files matched pattern"):
            list(tf.data.Dataset.list_files(pattern, shuffle=False))
        proc = self.tool("records", pattern=pattern, check=False)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("towerflow: InvalidArgument: ", proc.stderr)
        self.assertIn("No files matched pattern: " + pattern, proc.stderr)
        self.assertEqual(proc.stdout, "")

    def test_empty_file_list(self):
        # towerflow's contract (data/dataset.h): an empty list is InvalidArgument.
        # tf.data.TFRecordDataset([]) is an empty dataset instead: not compared.
        for pipeline in ("records", "interleave", "parse_single"):
            with self.subTest(pipeline=pipeline):
                proc = self.tool(pipeline, [], check=False)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                self.assertIn("towerflow: InvalidArgument: ", proc.stderr)
                self.assertIn("empty list of files", proc.stderr)
                self.assertEqual(proc.stdout, "")


if __name__ == "__main__":
    unittest.main()
