"""towerflow.compat.v1 against TensorFlow's own tf.compat.v1.

Each case is a short TF1 snippet that prints, as the last line of its stdout,
one JSON object describing what it observed: tensor names, static shapes,
dtypes, fetched values, exception classes and whether their messages name
what they should. The snippet runs twice, in separate processes (the two
libraries never share one): once after ``import towerflow.compat.v1 as tf``
and once after ``import tensorflow.compat.v1 as tf; tf.disable_v2_behavior()``.
The two objects must be equal: exactly for names, shapes, dtypes, error
classes and flags; within a float tolerance for numbers.

What a case compares is what a TF1 program relies on. A name that towerflow
builds differently by design (the helper nodes inside a composite op, the
internals of a loss or a gradient) is left out; so is a feature towerflow
documents as unsupported (it raises NotImplementedError naming itself).

Run: python -m unittest -v tests/python/tf1_surface_test.py (or directly).
The Python that runs the snippets is $TOWERFLOW_PEERS_PYTHON, else this one;
it needs towerflow and tensorflow (tensorflow-cpu) installed.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

PYTHON = os.environ.get("TOWERFLOW_PEERS_PYTHON", sys.executable)

PRELUDES = {
    "towerflow": "import towerflow.compat.v1 as tf\n",
    "tensorflow": "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n",
}

# Helpers every snippet has, after its engine's import.
COMMON = r'''
import json as _json
import os
import tempfile
import numpy as np


def _plain(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, bytes):
        return o.decode("latin-1")
    if isinstance(o, (tuple, set)):
        return list(o)
    raise TypeError("cannot report %r" % (o,))


def emit(obj):
    """Reports what the snippet observed: the last line of its stdout."""
    print(_json.dumps(obj, default=_plain))


def shape(t):
    return None if t.shape.ndims is None else t.shape.as_list()


def sig(t):
    """A tensor's name, static shape and dtype."""
    return [t.name, shape(t), t.dtype.name]


def raised(fn, *substrings):
    """The class of the exception fn() raises, and whether its message holds each substring."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return [type(e).__name__] + [s in str(e) for s in substrings]
    return ["no exception"]
'''

# Floats (values, losses, gradients) agree to this; everything else exactly.
RTOL = 1e-4
ATOL = 1e-5


def _mismatches(a, b, path="$"):
    """Where the towerflow result `a` and TensorFlow's `b` differ: a list of lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append("%s.%s: only in %s" % (path, k, "towerflow" if k in a else "tensorflow"))
            else:
                out += _mismatches(a[k], b[k], "%s.%s" % (path, k))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return ["%s: towerflow %s, tensorflow %s (lengths %d, %d)" % (path, _short(a), _short(b), len(a), len(b))]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += _mismatches(x, y, "%s[%d]" % (path, i))
        return out
    numbers = (int, float)
    if (isinstance(a, float) or isinstance(b, float)) and isinstance(a, numbers) and isinstance(b, numbers) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        if math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL) or (math.isnan(a) and math.isnan(b)):
            return []
    elif type(a) is type(b) and a == b:
        return []
    return ["%s: towerflow %s, tensorflow %s" % (path, _short(a), _short(b))]


def _short(v):
    s = json.dumps(v)
    return s if len(s) < 300 else s[:300] + "..."


def _run(engine, code, params):
    """Starts `code` under one engine; returns the Popen."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    source = (PRELUDES[engine] + COMMON + "PARAMS = %r\n" % (params,) + textwrap.dedent(code))
    return subprocess.Popen([PYTHON, "-c", source], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=params["tmp"])


def _result(engine, proc):
    out, err = proc.communicate(timeout=300)
    lines = [line for line in out.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        raise AssertionError("the %s snippet failed (exit %d):\n%s" % (engine, proc.returncode, err[-4000:]))
    try:
        return json.loads(lines[-1])
    except ValueError:
        raise AssertionError("the %s snippet's last line is not JSON: %r\n%s" % (engine, lines[-1], err[-2000:]))


class TF1SurfaceTest(unittest.TestCase):
    """Each test: one snippet, run under towerflow and under TensorFlow."""

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tf1_surface_")
        # The records the queue pipelines read, written by TensorFlow: 7
        # tf.train.Examples with image (4 raw bytes), label (int64) and x (2 floats).
        cls.records = os.path.join(cls.tmp, "data.tfrecord")
        writer = textwrap.dedent('''
            import numpy as np
            import tensorflow as tf
            with tf.io.TFRecordWriter(%r) as w:
                for i in range(7):
                    f = {"image": tf.train.Feature(bytes_list=tf.train.BytesList(
                             value=[np.arange(i, i + 4, dtype=np.uint8).tobytes()])),
                         "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                         "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i * 0.5, -i]))}
                    w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
            ''' % cls.records)
        subprocess.run([PYTHON, "-c", writer], check=True, capture_output=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def _params(self):
        tmp = tempfile.mkdtemp(dir=self.tmp)
        return {"records": self.records, "tmp": tmp}

    def run_both(self, code):
        """The snippet's JSON under towerflow and under TensorFlow (run at once)."""
        procs = {}
        for engine in ("towerflow", "tensorflow"):
            params = self._params()
            procs[engine] = _run(engine, code, params)
        try:
            return {engine: _result(engine, p) for engine, p in procs.items()}
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
                    p.communicate()

    def compare(self, code):
        """Runs the snippet under both engines and asserts the results match; returns towerflow's."""
        got = self.run_both(code)
        diffs = _mismatches(got["towerflow"], got["tensorflow"])
        if diffs:
            self.fail("towerflow differs from TensorFlow:\n  " + "\n  ".join(diffs))
        return got["towerflow"]

    # ---- constants, placeholders, dtypes ---------------------------------------------

    def test_constants_placeholders_dtypes(self):
        self.compare('''
            r = {}
            r["int"] = sig(tf.constant(1))
            r["float"] = sig(tf.constant(1.5))
            r["int_list"] = sig(tf.constant([1, 2]))
            r["float_list"] = sig(tf.constant([[1.0, 2]]))
            r["bool"] = sig(tf.constant(True))
            r["string"] = sig(tf.constant("s"))
            r["big_int"] = sig(tf.constant(2**40))
            r["np_float64"] = sig(tf.constant(np.zeros(2)))
            r["np_int64"] = sig(tf.constant(np.array([1, 2], dtype=np.int64)))
            r["np_scalar"] = [sig(tf.constant(np.int64(3))), sig(tf.constant(np.float64(3)))]
            r["np_uint8"] = sig(tf.constant(np.zeros(2, np.uint8)))
            r["dtype_given"] = sig(tf.constant([1, 2], dtype=tf.float32))
            r["filled"] = sig(tf.constant(3.0, shape=[2, 3]))
            r["padded"] = tf.constant([1, 2], shape=[2, 2])
            r["named"] = sig(tf.constant(1, name="k"))
            r["float_to_int"] = raised(lambda: tf.constant(2.0, dtype=tf.int32))
            r["too_many"] = raised(lambda: tf.constant([1, 2, 3], shape=[2]))
            r["convert"] = [sig(tf.convert_to_tensor([1.0, 2.0])), sig(tf.convert_to_tensor([[1, 2]], dtype=tf.int64))]
            f = tf.placeholder(tf.float32, [None, 3])
            r["convert_mismatch"] = raised(lambda: tf.convert_to_tensor(f, dtype=tf.int32))
            r["placeholders"] = [sig(tf.placeholder(tf.float32)), sig(tf.placeholder(tf.int32, [None, 3], name="x")),
                                 sig(tf.placeholder("float", (2,))), sig(f)]
            r["dtypes"] = [tf.float32.name, tf.as_dtype("float64").name, tf.as_dtype(np.int64).name,
                           tf.float32.is_floating, tf.int32.is_integer, tf.float32 == tf.float32,
                           tf.float32.as_numpy_dtype.__name__]
            r["shapes"] = [tf.TensorShape([None, 3]).as_list(), tf.TensorShape(None).ndims, str(tf.TensorShape([2])),
                           tf.TensorShape([1, 2]).num_elements(), f.shape[1].value, f.shape[0].value,
                           f.shape.is_fully_defined(), str(f.shape)]
            with tf.Session() as sess:
                r["padded"] = sess.run(r["padded"])
                r["values"] = sess.run([tf.constant(3.0, shape=[2, 2]), tf.constant(np.arange(4).reshape(2, 2))])
            emit(r)
        ''')

    # ---- operators and element-wise math -----------------------------------------------

    def test_operators_dtypes_and_names(self):
        self.compare('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            c = tf.constant(2.0)
            ops = {"add": x + 1, "radd": 1 + x, "sub": x - 2, "rsub": 2 - x, "mul": x * 3, "rmul": 3 * x,
                   "div": x / 2, "rdiv": 2 / x, "neg": -x, "tf_add": tf.add(x, c), "tf_sub": tf.subtract(x, c),
                   "tf_mul": tf.multiply(x, c), "tf_div": tf.divide(x, c), "truediv": tf.truediv(x, c),
                   "div_legacy": tf.div(x, c), "matmul_op": tf.ones([2, 2]) @ tf.ones([2, 2]),
                   "matmul": tf.matmul(tf.ones([2, 2]), tf.ones([2, 2])), "square": tf.square(x),
                   "maximum": tf.maximum(x, c), "equal": tf.equal(x, c), "ge": tf.greater_equal(x, c),
                   "negative": tf.negative(x), "np_operand": x + np.float32(2), "np64_operand": x + np.float64(2),
                   "np_array_operand": x * np.ones(3)}
            r["ops"] = {k: sig(t) for k, t in ops.items()}
            # Every op in the graph: the operators' helper constants ("add/y") too.
            r["graph"] = [op.name for op in tf.get_default_graph().get_operations()]
            i = tf.placeholder(tf.int32, [2], name="i")
            r["int_ops"] = [sig(i + 1), sig(2 * i), sig(i / 2), sig(i / i)]
            r["mixed"] = {"float_tensor_plus_int_tensor": raised(lambda: x[0] + i[0], "does not match"),
                          "int_tensor_plus_float": raised(lambda: i + 1.5, "does not match"),
                          "tf_add_mixed": raised(lambda: tf.add(x, tf.ones([3], tf.int32)), "does not match"),
                          "matmul_mixed": raised(lambda: tf.matmul(tf.ones([2, 2]), tf.ones([2, 2], tf.float64))),
                          "concat_mixed": raised(lambda: tf.concat([tf.ones([1]), tf.ones([1], tf.int32)], 0))}
            with tf.Session() as sess:
                v = np.array([[1.0, -2.0, 4.0]], np.float32)
                names = [k for k in ops if not k.startswith("matmul")]
                got = sess.run([ops[k] for k in names], {x: v})
                r["values"] = dict(zip(names, got))
                r["matmuls"] = sess.run([ops["matmul_op"], ops["matmul"]])
                r["int_values"] = sess.run([i + 1, 2 * i, i / 2, i / i, -i], {i: [3, -4]})
                r["int_value_dtypes"] = [str(a.dtype) for a in r["int_values"]]
            emit(r)
        ''')

    def test_matmul_and_reductions(self):
        self.compare('''
            r = {}
            a = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, name="a")
            p = tf.placeholder(tf.float32, [None, 3], name="p")
            b = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
            t = {"matmul": tf.matmul(a, b), "matmul_ta": tf.matmul(a, a, transpose_a=True),
                 "matmul_tb": tf.matmul(a, a, transpose_b=True), "matmul_p": tf.matmul(p, b),
                 "sum_all": tf.reduce_sum(a), "sum0": tf.reduce_sum(a, 0),
                 "sum1_keep": tf.reduce_sum(a, axis=1, keepdims=True),
                 "sum_neg": tf.reduce_sum(a, -1), "mean": tf.reduce_mean(a, axis=[0, 1]), "mean1": tf.reduce_mean(a, 1),
                 "max1_keep": tf.reduce_max(a, 1, keep_dims=True), "max_all": tf.reduce_max(a),
                 "sum_p": tf.reduce_sum(p, 1), "mean_p": tf.reduce_mean(p), "named": tf.reduce_sum(a, name="total"),
                 "sum_ri": tf.reduce_sum(a, reduction_indices=[0])}
            r["sigs"] = {k: sig(v) for k, v in t.items()}
            r["errors"] = [raised(lambda: tf.matmul(a, a)), raised(lambda: tf.reduce_sum(a, 2))]
            with tf.Session() as sess:
                r["values"] = sess.run(t, {p: np.ones((2, 3), np.float32)})
            emit(r)
        ''')

    # ---- array ops -------------------------------------------------------------------

    def test_array_ops(self):
        self.compare('''
            r = {}
            a = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
            p = tf.placeholder(tf.float32, [None, 3], name="p")
            t = {"reshape": tf.reshape(a, [3, -1]), "reshape_flat": tf.reshape(a, [-1]),
                 "cast": tf.cast(a, tf.int32), "cast_same": tf.cast(a, tf.float32),
                 "to_float": tf.to_float(tf.constant([1])),
                 "concat0": tf.concat([a, a], 0), "concat1": tf.concat([a, a], axis=1),
                 "concat_neg": tf.concat([a, a], -1),
                 "stack": tf.stack([a, a]), "stack1": tf.stack([a, a], axis=1), "stack_one": tf.stack([a]),
                 "expand0": tf.expand_dims(a, 0), "expand_neg": tf.expand_dims(a, -1),
                 "squeeze": tf.squeeze(tf.ones([1, 2, 1])), "squeeze_axis": tf.squeeze(tf.ones([1, 2, 1]), [2]),
                 "argmax": tf.argmax(a, 1), "argmax0": tf.argmax(a, axis=0),
                 "argmax32": tf.argmax(a, 1, output_type=tf.int32),
                 "equal": tf.equal(tf.argmax(a, 1), tf.constant([2, 2], tf.int64)), "index": a[1], "slice": a[:, 1:],
                 "index2": a[1, 2], "rank": tf.rank(a), "zeros": tf.zeros([2, 2]), "ones": tf.ones([3], tf.int32),
                 "zeros_like": tf.zeros_like(a), "ones_like": tf.ones_like(a), "fill": tf.fill([2, 2], 3.0),
                 "identity": tf.identity(a), "shape_of": tf.shape(a), "unstack1": tf.unstack(a)[1]}
            r["sigs"] = {k: shape(v) for k, v in t.items()}
            r["dtypes"] = {k: v.dtype.name for k, v in t.items()}
            # Names: the op's own, where towerflow builds TF's (tf.unstack is several ops).
            r["names"] = {k: v.name for k, v in t.items() if k not in ("unstack1", "cast_same", "to_float")}
            r["partial"] = [shape(tf.reshape(p, [-1])), shape(tf.reshape(p, [-1, 1, 3])), shape(tf.concat([p, a], 0)),
                            shape(tf.stack([p, p], axis=-1)), shape(tf.shape(p)), shape(tf.expand_dims(p, 1))]
            r["errors"] = {"squeeze": raised(lambda: tf.squeeze(a, [0])),
                           "reshape": raised(lambda: tf.reshape(a, [4, 2])),
                           "concat": raised(lambda: tf.concat([a, tf.ones([2, 2])], 0))}
            with tf.Session() as sess:
                r["values"] = sess.run({k: v for k, v in t.items() if k != "shape_of"})
                r["dynamic"] = sess.run([tf.shape(p), tf.reshape(p, [-1])], {p: np.ones((2, 3))})
            emit(r)
        ''')

    def test_helper_node_names(self):
        # Every top-level node a TF1 program builds with these wrappers is
        # named as TF names it (helpers below an op, "Sum/reduction_indices",
        # take no names like "Const_7" from the program's own nodes).
        self.compare('''
            a = tf.constant(np.ones((2, 3), np.float32), name="a")
            tf.reduce_sum(a); tf.reduce_sum(a, 1); tf.reduce_mean(a, [0, 1], name="m"); tf.argmax(a, 1)
            tf.expand_dims(a, 0); tf.reshape(a, [-1]); tf.concat([a, a], 0); tf.cast(a, tf.int32); tf.stack([a, a])
            a[0]; a[:, 1:]; tf.add(a, 1.0); tf.maximum(a, 0.0); tf.matmul(a, [[1.0], [2.0], [3.0]]); tf.equal(a, 1.0)
            tf.squeeze(a); tf.nn.bias_add(a, [1.0, 2.0, 3.0]); tf.zeros([2]); tf.ones([2]); tf.zeros_like(a)
            tf.fill([2], 1.0); tf.reduce_max(a, name="mx"); tf.shape(a); tf.identity(a); tf.nn.softmax(a)
            tf.nn.l2_loss(a); tf.add_n([a, a]); tf.add_n([a, a], name="an"); tf.random_normal([2])
            tf.truncated_normal([2], stddev=0.1); tf.random_uniform([2], -1, 1); tf.convert_to_tensor(1.0)
            tf.negative(a); tf.square(a); tf.sqrt(a); tf.exp(a); tf.log(a); tf.sigmoid(a); tf.tanh(a)
            tf.subtract(a, 1.0); tf.multiply(2.0, a); tf.divide(a, 2.0); tf.truediv(a, 2.0); tf.div(a, 2.0)
            tf.greater_equal(a, 1.0); tf.nn.relu(a); tf.rank(a); tf.no_op(); tf.group(a.op); tf.constant(0)
            a + 1; 1 - a; tf.nn.sigmoid(a) * 2; tf.add(a, a); a @ tf.ones([3, 1]); tf.constant(1)
            ops = [op.name for op in tf.get_default_graph().get_operations()]
            emit({"top_level": [n for n in ops if "/" not in n],
                  "random": [tf.random_normal([2], name="r").name, tf.truncated_normal([2]).name,
                             tf.random_uniform([2]).name, tf.random_normal([3], mean=1.0, stddev=2.0).name]})
        ''')

    # ---- tf.nn -----------------------------------------------------------------------

    def test_nn_activations_conv_pool(self):
        self.compare('''
            x = tf.constant(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4), name="x")
            img = tf.constant(np.arange(2 * 5 * 5 * 2, dtype=np.float32).reshape(2, 5, 5, 2) / 50.0, name="img")
            filt = tf.constant(np.linspace(-1, 1, 3 * 3 * 2 * 4, dtype=np.float32).reshape(3, 3, 2, 4), name="filt")
            t = {"relu": tf.nn.relu(x), "sigmoid": tf.nn.sigmoid(x), "tanh": tf.nn.tanh(x), "softmax": tf.nn.softmax(x),
                 "tf_sigmoid": tf.sigmoid(x), "tf_tanh": tf.tanh(x), "exp": tf.exp(x), "sqrt": tf.sqrt(x * x + 1.0),
                 "bias_add": tf.nn.bias_add(x, tf.constant([1.0, 2.0, 3.0, 4.0])),
                 "conv_same": tf.nn.conv2d(img, filt, strides=[1, 1, 1, 1], padding="SAME"),
                 "conv_valid_s2": tf.nn.conv2d(img, filt, [1, 2, 2, 1], "VALID"),
                 "conv_same_s2": tf.nn.conv2d(img, filt, [1, 2, 2, 1], "SAME"),
                 "pool_same": tf.nn.max_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"),
                 "pool_valid": tf.nn.max_pool(img, ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="VALID")}
            p = tf.placeholder(tf.float32, [None, 28, 28, 1])
            w = tf.ones([5, 5, 1, 8])
            r = {"sigs": {k: sig(v) for k, v in t.items()},
                 "partial": [shape(tf.nn.conv2d(p, w, [1, 1, 1, 1], "SAME")),
                             shape(tf.nn.conv2d(p, w, [1, 2, 2, 1], "VALID")),
                             shape(tf.nn.max_pool(p, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")), shape(tf.nn.relu(p))]}
            with tf.Session() as sess:
                r["values"] = sess.run(t)
            emit(r)
        ''')

    def test_losses_and_their_gradients(self):
        self.compare('''
            x = tf.constant(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4), name="x")
            labels = tf.constant(np.array([[1, 0, 0, 0], [0, 0.5, 0.5, 0], [0, 0, 0, 1]], np.float32))
            sparse = tf.constant([0, 2, 3])
            t = {"xent": tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=x),
                 "xent_v2": tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=x),
                 "sparse": tf.nn.sparse_softmax_cross_entropy_with_logits(labels=sparse, logits=x),
                 "sparse64": tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(sparse, tf.int64), logits=x),
                 "l2": tf.nn.l2_loss(x), "add_n": tf.add_n([x, x * 2.0, x]), "add_n1": tf.add_n([x])}
            # The losses' own names are their ops' internals in TF: shapes and dtypes only.
            r = {"sigs": {k: [shape(v), v.dtype.name] for k, v in t.items()},
                 "named": [tf.nn.l2_loss(x, name="l2").name, tf.add_n([x, x]).name]}
            g = {"xent": tf.gradients(tf.reduce_sum(t["xent"]), x)[0],
                 "xent_v2": tf.gradients(tf.reduce_mean(t["xent_v2"]), x)[0],
                 "sparse": tf.gradients(tf.reduce_sum(t["sparse"] * [1.0, 2.0, 3.0]), x)[0],
                 "l2": tf.gradients(t["l2"], x)[0], "add_n": tf.gradients(t["add_n"], x)[0],
                 "softmax": tf.gradients(tf.reduce_sum(tf.nn.softmax(x) * x), x)[0]}
            r["grad_sigs"] = {k: [shape(v), v.dtype.name] for k, v in g.items()}
            with tf.Session() as sess:
                r["values"] = sess.run(t)
                r["grads"] = sess.run(g)
            emit(r)
        ''')

    def test_dropout(self):
        # Random draws differ by engine: the shape, and that every element is
        # dropped (0) or kept and scaled by 1/keep_prob.
        self.compare('''
            x = tf.ones([50, 40])
            d = tf.nn.dropout(x, keep_prob=0.5)
            d2 = tf.nn.dropout(x, rate=0.25)
            p = tf.placeholder(tf.float32, [None, 8])
            d3 = tf.nn.dropout(p, 0.5)
            r = {"sigs": [[shape(t), t.dtype.name] for t in (d, d2, d3)]}
            with tf.Session() as sess:
                a, b = sess.run([d, d2])
                r["half"] = [bool((a == 0).any()), bool(np.all((a == 0) | np.isclose(a, 2.0))),
                             bool(0.35 < (a == 0).mean() < 0.65)]
                r["quarter"] = [bool((b == 0).any()), bool(np.all((b == 0) | np.isclose(b, 1 / 0.75))),
                                bool(0.15 < (b == 0).mean() < 0.35)]
                r["fed"] = list(sess.run(d3, {p: np.ones((3, 8))}).shape)
            emit(r)
        ''')

    def test_variable_collections_argument(self):
        # `collections` replaces the default ["variables"], as in TF.
        self.compare('''
            a = tf.Variable(1.0, name="a", collections=["mine", "variables"])
            b = tf.get_variable("b", [2], collections=["local_variables"], trainable=False,
                                initializer=tf.zeros_initializer())
            c = tf.get_variable("c", [], collections=["mine"], initializer=tf.ones_initializer())
            names = lambda key: sorted(v.name for v in tf.get_collection(key))
            r = {k: names(k) for k in ("variables", "trainable_variables", "local_variables", "mine")}
            with tf.Session() as sess:
                sess.run([tf.global_variables_initializer(), tf.local_variables_initializer(),
                          tf.variables_initializer([c])])
                r["values"] = [float(x) for x in sess.run([a, c])] + sess.run(b).tolist()
            emit(r)
        ''')

    def test_set_shape(self):
        # The TF1 idiom after decode_raw: refine an unknown dimension; then an
        # incompatible refinement is a ValueError.
        self.compare('''
            raw = tf.decode_raw(tf.constant(np.arange(6, dtype=np.int32).tobytes()), tf.int32)
            before = shape(raw)
            raw.set_shape([6])
            m = tf.reshape(raw, [2, 3]) * 2
            p = tf.placeholder(tf.float32, [None, 4])
            p.set_shape([3, 4])
            r = {"before": before, "after": shape(raw), "m": shape(m), "p": shape(p)}
            try:
                raw.set_shape([7])
            except ValueError:
                r["incompatible"] = "ValueError"
            with tf.Session() as sess:
                r["values"] = sess.run(m).tolist()
                r["fed"] = sess.run(p, {p: np.ones((3, 4))}).shape[0]
            emit(r)
        ''')

    # ---- gradients -------------------------------------------------------------------

    def test_gradients(self):
        self.compare('''
            a = tf.placeholder(tf.float32, [], name="a")
            b = tf.constant(3.0, name="b")
            y = a * a * b + 2.0 * a
            ga, gb = tf.gradients(y, [a, b])
            unconnected = tf.gradients(y, tf.placeholder(tf.float32, []))
            w = tf.get_variable("w", initializer=np.array([[1.0, 2.0], [3.0, -4.0]], np.float32))
            h = tf.matmul(tf.constant([[1.0, -1.0], [0.5, 2.0]]), w)
            loss = tf.reduce_mean(tf.square(tf.nn.relu(h) - 1.0))
            gw, = tf.gradients(loss, [w])
            stopped = tf.gradients(tf.stop_gradient(a) * a, a)[0]
            two = tf.gradients([y, a * 4.0], a)[0]
            weighted = tf.gradients(y, a, grad_ys=tf.constant(0.5))[0]
            r = {"unconnected": unconnected, "sigs": [[shape(t), t.dtype.name] for t in (ga, gb, gw)],
                 "scope": ga.name.split("/")[0]}
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["values"] = sess.run([ga, gb, stopped, two, weighted], {a: 2.0})
                r["gw"] = sess.run(gw)
            emit(r)
        ''')

    # ---- name scopes, variable scopes, variables ---------------------------------------

    def test_name_scopes(self):
        self.compare('''
            r = {}
            with tf.name_scope("a") as s1:
                r["s1"] = s1
                r["c"] = tf.constant(1.0).name
                with tf.name_scope("b") as s2:
                    r["s2"] = s2
                    r["inner"] = [tf.constant(1.0, name="k").name, (tf.constant(1.0) + 1).name]
            with tf.name_scope("a") as s3:
                r["s3"] = s3
                r["ph"] = tf.placeholder(tf.float32, name="p").name
                r["mm"] = tf.matmul(tf.ones([1, 1]), tf.ones([1, 1])).name
            with tf.name_scope("a/b/") as s4:
                r["reentered"] = [s4, tf.constant(1.0).name]
            with tf.name_scope(None, "default_name") as s5:
                r["default"] = s5
            with tf.name_scope("outer"):
                with tf.name_scope(None):
                    r["root"] = tf.constant(1).name
                with tf.name_scope("x"):
                    r["deep"] = tf.identity(tf.constant(1), name="id").name
            r["op_then_scope"] = [tf.add(1, 2, name="add").name]
            with tf.name_scope("add") as s6:
                r["op_then_scope"].append(s6)
            with tf.name_scope("MatMul") as s7:
                r["scope_vs_op_case"] = [s7, tf.matmul(tf.ones([1, 1]), tf.ones([1, 1])).name]
            emit(r)
        ''')

    def test_variable_scopes_sharing_and_reuse_errors(self):
        self.compare('''
            r = {}
            with tf.variable_scope("scope") as vs:
                w = tf.get_variable("w", [2, 3], initializer=tf.zeros_initializer())
                r["w"] = [w.name, shape(w), w.dtype.base_dtype.name, w.op.name]
                r["vs"] = [vs.name, vs.original_name_scope, tf.get_variable_scope().name]
                r["op_in_vs"] = tf.constant(1.0).name
                with tf.variable_scope("inner") as inner:
                    r["inner"] = [tf.get_variable("v", [1]).name, tf.identity(w).name, tf.get_variable_scope().name,
                                  inner.original_name_scope]
            with tf.variable_scope("scope", reuse=True):
                r["shared"] = tf.get_variable("w", [2, 3]) is w
                r["shared_no_shape"] = tf.get_variable("w") is w
                r["op_in_reopened"] = tf.constant(1.0).name
                r["missing"] = raised(lambda: tf.get_variable("nope", [1]), "Variable scope/nope does not exist",
                                     "tf.get_variable()")
                r["bad_shape"] = raised(lambda: tf.get_variable("w", [3, 3]), "scope/w")
            with tf.variable_scope("scope"):
                r["exists"] = raised(lambda: tf.get_variable("w", [2, 3]), "Variable scope/w already exists",
                                    "reuse=True")
                tf.get_variable_scope().reuse_variables()
                r["after_reuse_variables"] = [tf.get_variable("w", [2, 3]) is w, bool(tf.get_variable_scope().reuse)]
            # Re-entering a scope object opens a new name scope after its last
            # component below the current one ("scope_3"); the root scope none.
            with tf.variable_scope(vs, reuse=True):
                r["by_object"] = [tf.get_variable("w") is w, tf.constant(1.0).name, tf.get_variable_scope().name,
                                  tf.get_variable_scope().original_name_scope]
            with tf.name_scope("outer"):
                with tf.variable_scope(vs, reuse=True):
                    r["by_object_in_name_scope"] = [tf.constant(1.0).name, tf.get_variable("w").name]
            with tf.variable_scope("scope"):
                with tf.variable_scope(inner, reuse=True):
                    r["child_by_object"] = [tf.constant(1.0).name, tf.get_variable("v").name]
            # Not below its parent: the variables only (towerflow's ops keep the
            # scope's first name scope, TF's go below the current one).
            with tf.variable_scope("other"):
                with tf.variable_scope(vs, reuse=True):
                    r["by_object_elsewhere"] = [tf.get_variable("w").name, tf.get_variable_scope().name]
            # The multi-tower pattern: the root scope re-entered in each tower's name scope.
            for i in range(2):
                with tf.name_scope("tower_%d" % i):
                    with tf.variable_scope(tf.get_variable_scope(), reuse=i > 0) as root:
                        r["tower_%d" % i] = [tf.constant(1.0).name, tf.get_variable("shared", [1]).name, root.name,
                                             root.original_name_scope, bool(root.reuse)]
            with tf.variable_scope("scope"):
                with tf.variable_scope("inner", reuse=True):
                    r["nested_reuse"] = tf.get_variable("v").name
            with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
                a1 = tf.get_variable("x", [1])
            with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
                r["auto_reuse"] = [a1.name, tf.get_variable("x", [1]) is a1, tf.get_variable("y", [1]).name]
            with tf.variable_scope(None, default_name="layer"):
                r["default_1"] = tf.get_variable("w", [1]).name
            with tf.variable_scope(None, default_name="layer"):
                r["default_2"] = tf.get_variable("w", [1]).name
            with tf.name_scope("ns"):
                r["getvar_ignores_name_scope"] = tf.get_variable("g", [1]).name
                with tf.variable_scope("vs2"):
                    r["vs_in_ns"] = [tf.get_variable("g", [1]).name, tf.constant(0).name]
            r["top_exists"] = raised(lambda: tf.get_variable("g", [1]), "already exists")
            r["no_shape"] = raised(lambda: tf.get_variable("fresh"))
            i = tf.get_variable("i", [2], dtype=tf.int32, initializer=tf.zeros_initializer())
            r["dtype"] = i.dtype.base_dtype.name
            emit(r)
        ''')

    def test_variables_collections_initializers(self):
        self.compare('''
            r = {}
            v1 = tf.Variable(1.0)
            v2 = tf.Variable([1, 2])
            v3 = tf.Variable(np.zeros((2, 2)), name="v")
            v4 = tf.Variable(3.0, trainable=False, name="v")
            with tf.name_scope("ns"):
                v5 = tf.Variable(0.5, name="w")
            with tf.variable_scope("vs"):
                v6 = tf.Variable(0.5, name="w")
                g1 = tf.get_variable("z", [3], initializer=tf.zeros_initializer())
                g2 = tf.get_variable("c", [2, 2], initializer=tf.constant_initializer(0.25))
                g3 = tf.get_variable("t", [1000], initializer=tf.truncated_normal_initializer(stddev=0.1))
                g4 = tf.get_variable("o", [2], initializer=tf.ones_initializer(), trainable=False)
                g5 = tf.get_variable("i", [2], dtype=tf.int32, initializer=tf.zeros_initializer())
                g6 = tf.get_variable("d", [20, 30], initializer=tf.glorot_uniform_initializer())
                g7 = tf.get_variable("u", [500], initializer=tf.random_uniform_initializer(-1.0, 1.0))
                g8 = tf.get_variable("a", initializer=np.array([1.0, 2.0], np.float32))
                g9 = tf.get_variable("l", [2], initializer=tf.constant_initializer([3.0, 4.0]))
            every = [v1, v2, v3, v4, v5, v6, g1, g2, g3, g4, g5, g6, g7, g8, g9]
            r["vars"] = [[v.name, shape(v), v.dtype.base_dtype.name, v.op.name, v.initializer.name, v.value().name]
                         for v in every]
            r["global"] = [v.name for v in tf.global_variables()]
            r["trainable"] = [v.name for v in tf.trainable_variables()]
            r["scoped"] = [[v.name for v in tf.global_variables("vs")],
                           [v.name for v in tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="vs/")]]
            r["local"] = [v.name for v in tf.local_variables()]
            init = tf.global_variables_initializer()
            r["init"] = [init.name, init.type]
            a = v1.assign(2.0)
            aa = v1.assign_add(1.0)
            asub = tf.assign_sub(v1, 0.5)
            ta = tf.assign(v2, [5, 6])
            r["assigns"] = [a.name, aa.name, asub.name, ta.name]
            r["ops_on_variables"] = [sig(v1 + 1), sig(v1 * v1), sig(tf.identity(v1)), sig(v2 * 2)]
            with tf.Session() as sess:
                r["uninitialized"] = raised(lambda: sess.run(v1))
                sess.run(init)
                r["values"] = sess.run({"v1": v1, "v2": v2, "v3": v3, "g1": g1, "g2": g2, "g4": g4, "g5": g5,
                                        "g8": g8, "g9": g9})
                t, u, d = sess.run([g3, g7, g6])
                limit = np.sqrt(6.0 / (20 + 30))
                r["random"] = [bool(np.all(np.abs(t) <= 0.2)), bool(0.05 < t.std() < 0.1),
                               bool(np.all((u >= -1) & (u < 1))), bool(u.std() > 0.4),
                               bool(np.all(np.abs(d) <= limit)), bool(d.std() > limit / 3)]
                r["after"] = [sess.run(a), sess.run(aa), sess.run(asub), sess.run(ta)]
                v1.load(10.0, sess)
                r["load"] = [sess.run(v1), v1.eval(session=sess)]
            emit(r)
        ''')

    # ---- optimizers -------------------------------------------------------------------

    def test_optimizers_and_global_step(self):
        self.compare('''
            def train(make_opt, steps):
                with tf.Graph().as_default():
                    w = tf.get_variable("w", initializer=np.array([1.0, -2.0], np.float32))
                    b = tf.Variable(0.5, name="b")
                    loss = tf.reduce_sum(tf.square(w - 3.0)) + tf.square(b * 2.0)
                    gs = tf.train.get_or_create_global_step()
                    opt = make_opt()
                    op = opt.minimize(loss, global_step=gs)
                    plain = make_opt().minimize(loss)
                    # The train op is named as the optimizer's scope ("Adam", "Adam_1").
                    named = make_opt().minimize(loss, name="train_op")
                    out = {"op": [op.type, op.name], "plain_op": [plain.type, plain.name],
                           "named_op": named.name,
                           "gs": [gs.name, gs.dtype.base_dtype.name],
                           "variables": sorted(v.name for v in tf.global_variables()),
                           "trainable": sorted(v.name for v in tf.trainable_variables()),
                           "same_gs": tf.train.get_global_step() is gs}
                    with tf.Session() as sess:
                        sess.run(tf.global_variables_initializer())
                        out["losses"] = [sess.run([op, loss])[1] for _ in range(steps)]
                        out["w"], out["b"], out["step"] = sess.run([w, b, gs])
                    return out
            emit({"sgd": train(lambda: tf.train.GradientDescentOptimizer(0.1), 5),
                  "momentum": train(lambda: tf.train.MomentumOptimizer(0.05, 0.9), 5),
                  "nesterov": train(lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True), 5),
                  "adam": train(lambda: tf.train.AdamOptimizer(0.1), 10)})
        ''')

    def test_compute_and_apply_gradients(self):
        self.compare('''
            w = tf.get_variable("w", initializer=np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
            u = tf.get_variable("u", [2], initializer=tf.zeros_initializer())
            loss = tf.reduce_sum(tf.matmul(tf.constant([[1.0, -1.0]]), w) ** 2)
            opt = tf.train.GradientDescentOptimizer(0.05)
            gv = opt.compute_gradients(loss)
            r = {"pairs": [[None if g is None else shape(g), v.name] for g, v in gv]}
            gv = [(g, v) for g, v in gv if g is not None]
            step = opt.apply_gradients(gv)
            r["no_gradients"] = raised(lambda: opt.minimize(tf.reduce_sum(tf.constant([1.0]))))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["grad"] = sess.run(gv[0][0])
                sess.run(step)
                r["w"] = sess.run(w)
            emit(r)
        ''')

    # ---- sessions ----------------------------------------------------------------------

    def test_session_fetches_and_feeds(self):
        self.compare('''
            import collections
            r = {}
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            y = x * 2.0
            z = tf.reduce_sum(y)
            k = tf.placeholder(tf.int32, [], name="k")
            c = tf.constant(5, name="c")
            noop = tf.no_op(name="nothing")
            P = collections.namedtuple("P", ["a", "b"])
            feed = {x: [[1.0, 2.0], [3.0, 4.0]]}
            with tf.Session() as sess:
                out = sess.run([y, (z, c), {"z": z, "op": noop}, P(a=c, b=[z])], feed_dict=feed)
                r["structure"] = [type(out).__name__, type(out[1]).__name__, type(out[2]).__name__,
                                  type(out[3]).__name__, type(out[3].b).__name__, sorted(out[2])]
                r["values"] = out
                r["value_types"] = [type(out[1][0]).__name__, type(out[1][1]).__name__, type(out[0]).__name__,
                                    str(out[0].dtype)]
                r["by_name"] = sess.run("mul:0", {"x:0": [[1.0, 1.0]]})
                r["op_by_name"] = sess.run("nothing", feed)
                r["operation"] = sess.run(noop)
                r["duplicate"] = sess.run([y, y], feed)
                r["feeds"] = [sess.run(k * 2, {k: 7}), sess.run(z, {x: np.ones((3, 2))}), sess.run(c * 2, {c: 10}),
                              list(sess.run(y, {x: np.zeros((5, 2))}).shape)]
                r["eval"] = [z.eval(feed_dict=feed), noop.run()]
            emit(r)
        ''')

    def test_session_errors(self):
        self.compare('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            y = x * 2.0
            k = tf.placeholder(tf.int32, [], name="k")
            c = tf.constant(5, name="c")
            with tf.Session() as sess:
                # A value whose shape does not fit the placeholder's: ValueError before the run.
                r["wrong_rank"] = raised(lambda: sess.run(y, {x: [1.0, 2.0]}), "Cannot feed value of shape", "x:0")
                r["wrong_dim"] = raised(lambda: sess.run(y, {x: [[1.0, 2.0, 3.0]]}), "(1, 3)", "(?, 2)")
                r["not_scalar"] = raised(lambda: sess.run(k, {k: [1, 2]}))
                r["unfed"] = raised(lambda: sess.run(y), "You must feed a value for placeholder tensor 'x'")
                r["unfed_class"] = [issubclass(tf.errors.InvalidArgumentError, tf.errors.OpError)]
                try:
                    sess.run(y)
                except tf.errors.InvalidArgumentError as e:
                    r["unfed_class"].append(e.error_code == tf.errors.INVALID_ARGUMENT)
                r["fetch_none"] = raised(lambda: sess.run(None))
                r["fetch_number"] = raised(lambda: sess.run(3))
                r["fetch_missing"] = raised(lambda: sess.run("nope:0"), "nope")
                r["fetch_bad_index"] = raised(lambda: sess.run("x:3"))
                r["feed_tensor"] = raised(lambda: sess.run(y, {x: y}))
                r["feed_missing"] = raised(lambda: sess.run(y, {"nope:0": 1}))
                r["feed_op_name"] = raised(lambda: sess.run(y, {"x": [[1.0, 2.0]]}))
            r["closed"] = raised(lambda: sess.run(c))
            with tf.Graph().as_default():
                other = tf.constant(1)
            with tf.Session() as sess:
                r["other_graph"] = raised(lambda: sess.run(other))
            r["no_default_session"] = raised(lambda: c.eval())
            g = tf.get_default_graph()
            r["lookup"] = [raised(lambda: g.get_operation_by_name("zz")), raised(lambda: g.get_tensor_by_name("zz:0")),
                           raised(lambda: g.get_tensor_by_name("x:4")), raised(lambda: g.get_tensor_by_name("x"))]
            # A Tensor is no bool, no iterable: a TypeError (TF raises its subclass
            # OperatorNotAllowedInGraphError).
            r["tensor_as_bool_or_iterable"] = []
            for use in (bool, iter):
                try:
                    use(c)
                except TypeError:
                    r["tensor_as_bool_or_iterable"].append("TypeError")
            emit(r)
        ''')

    def test_graphs_and_control_dependencies(self):
        self.compare('''
            r = {}
            g = tf.Graph()
            with g.as_default():
                c = tf.constant(1.0, name="c")
                v = tf.Variable(0.0, name="v")
                inc = tf.assign_add(v, 1.0)
                with tf.control_dependencies([inc]):
                    e = tf.identity(c, name="e")
                r["default"] = [tf.get_default_graph() is g, c.graph is g]
                r["lookup"] = [g.get_tensor_by_name("c:0") is c, g.get_operation_by_name("e").type,
                               [i.name for i in e.op.control_inputs], [i.name for i in e.op.inputs]]
                r["ops"] = [op.name for op in g.get_operations() if "/" not in op.name]
                r["group"] = [tf.group(c, e).type, tf.group(c, e, name="grp").name, tf.group(inc).name]
                with tf.Session() as sess:
                    sess.run(v.initializer)
                    sess.run(e)
                    sess.run(e)
                    r["ran_dependency"] = sess.run(v)
            r["back_to_default"] = tf.get_default_graph() is not g
            emit(r)
        ''')

    # ---- input pipelines ------------------------------------------------------------------

    def test_queue_pipeline_ends_in_out_of_range(self):
        self.compare('''
            r = {}
            files = tf.train.string_input_producer([PARAMS["records"]], num_epochs=1, shuffle=False)
            key, serialized = tf.TFRecordReader().read(files)
            r["read"] = [[t.dtype.name, shape(t)] for t in (key, serialized)]
            feats = tf.parse_single_example(serialized, {"image": tf.FixedLenFeature([], tf.string),
                                                         "label": tf.FixedLenFeature([], tf.int64),
                                                         "x": tf.FixedLenFeature([2], tf.float32)})
            image = tf.decode_raw(feats["image"], tf.uint8)
            r["parsed"] = {k: [v.dtype.name, shape(v)] for k, v in feats.items()}
            r["decoded"] = [image.dtype.name, shape(image)]
            image = tf.cast(tf.reshape(image, [4]), tf.float32)
            images, labels, xs = tf.train.batch([image, feats["label"], feats["x"]], batch_size=3)
            r["batch"] = [[t.dtype.name, shape(t)] for t in (images, labels, xs)]
            with tf.Session() as sess:
                sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
                coord = tf.train.Coordinator()
                threads = tf.train.start_queue_runners(sess=sess, coord=coord)
                r["batches"] = []
                try:
                    while not coord.should_stop():
                        r["batches"].append(sess.run([images, labels, xs]))
                except tf.errors.OutOfRangeError as e:
                    r["end"] = [type(e).__name__, isinstance(e, tf.errors.OpError),
                                e.error_code == tf.errors.OUT_OF_RANGE]
                finally:
                    coord.request_stop()
                coord.join(threads)
                r["stopped"] = coord.should_stop()
            emit(r)
        ''')

    def test_queue_smaller_final_batch_keys_and_shuffle_batch(self):
        self.compare('''
            r = {}
            files = tf.train.string_input_producer([PARAMS["records"]], num_epochs=2, shuffle=False)
            key, serialized = tf.TFRecordReader().read(files)
            feats = tf.parse_single_example(serialized, {"label": tf.FixedLenFeature([], tf.int64)})
            d = tf.train.batch({"key": key, "label": feats["label"]}, batch_size=4, allow_smaller_final_batch=True)
            r["dict_batch"] = {k: [v.dtype.name, shape(v)] for k, v in d.items()}
            with tf.Session() as sess:
                sess.run(tf.local_variables_initializer())
                coord = tf.train.Coordinator()
                threads = tf.train.start_queue_runners(sess=sess, coord=coord)
                sizes, keys, labels = [], [], []
                try:
                    for _ in range(100):
                        v = sess.run(d)
                        sizes.append(len(v["label"]))
                        keys += [k.decode().replace(PARAMS["records"], "FILE") for k in v["key"]]
                        labels += v["label"].tolist()
                except tf.errors.OutOfRangeError:
                    r["end"] = "OutOfRangeError"
                coord.request_stop()
                coord.join(threads)
                r.update(sizes=sizes, keys=keys, labels=labels)

            tf.reset_default_graph()
            files = tf.train.string_input_producer([PARAMS["records"]], num_epochs=3, shuffle=True, seed=3)
            key, serialized = tf.TFRecordReader().read(files)
            feats = tf.parse_single_example(serialized, {"label": tf.FixedLenFeature([], tf.int64),
                                                         "x": tf.FixedLenFeature([2], tf.float32)})
            sb = tf.train.shuffle_batch([feats["x"], feats["label"]], batch_size=5, capacity=20, min_after_dequeue=2,
                                        seed=1)
            r["shuffle_batch"] = [[t.dtype.name, shape(t)] for t in sb]
            with tf.Session() as sess:
                sess.run(tf.local_variables_initializer())
                coord = tf.train.Coordinator()
                threads = tf.train.start_queue_runners(sess=sess, coord=coord)
                labels = []
                try:
                    for _ in range(100):
                        labels += sess.run(sb[1]).tolist()
                except tf.errors.OutOfRangeError:
                    r["shuffle_end"] = "OutOfRangeError"
                coord.request_stop()
                coord.join(threads)
                # 21 records in 4 full batches of 5; each record at most 3 times.
                r["shuffled"] = [len(labels), all(labels.count(i) <= 3 for i in range(7)), set(labels) <= set(range(7))]
            emit(r)
        ''')

    # ---- saver and summaries ----------------------------------------------------------------

    def test_saver_round_trip(self):
        # Checkpoint files are each engine's own: a round trip within one.
        self.compare('''
            r = {}
            d = PARAMS["tmp"]
            w = tf.get_variable("w", initializer=np.array([1.0, 2.0], np.float32))
            with tf.variable_scope("s"):
                b = tf.get_variable("b", [2, 2], initializer=tf.constant_initializer(0.5))
            gs = tf.train.get_or_create_global_step()
            inc = tf.assign_add(gs, 1)
            saver = tf.train.Saver()
            only_w = tf.train.Saver([w])
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run([w.assign([3.0, 4.0]), b.assign([[1.0, 2.0], [3.0, 4.0]])])
                sess.run(inc)
                sess.run(inc)
                path = saver.save(sess, os.path.join(d, "model.ckpt"), global_step=gs)
                r["saved"] = [os.path.basename(path), os.path.basename(tf.train.latest_checkpoint(d)),
                              os.path.exists(os.path.join(d, "checkpoint"))]
                path_w = only_w.save(sess, os.path.join(d, "only_w"), write_state=False)
                r["saved_w"] = [os.path.basename(path_w), os.path.basename(tf.train.latest_checkpoint(d))]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["before"] = sess.run([w, b, gs])
                saver.restore(sess, path)
                r["after"] = sess.run([w, b, gs])
                r["restore_missing"] = raised(lambda: saver.restore(sess, os.path.join(d, "nope")))
                r["restore_none"] = raised(lambda: saver.restore(sess, None))
                r["restore_partial_checkpoint"] = raised(lambda: saver.restore(sess, path_w))
            with tf.Session() as sess:
                only_w.restore(sess, path_w)
                r["partial"] = [sess.run(w), raised(lambda: sess.run(b))]
            r["no_checkpoint_dir"] = tf.train.latest_checkpoint(os.path.join(d, "empty"))
            emit(r)
        ''')

    def test_summaries(self):
        self.compare('''
            r = {}
            x = tf.placeholder(tf.float32, [])
            with tf.name_scope("loss"):
                s1 = tf.summary.scalar("x", x)
            s2 = tf.summary.scalar("y", x * 2)
            merged = tf.summary.merge_all()
            both = tf.summary.merge([s1, s2])
            logdir = os.path.join(PARAMS["tmp"], "logs")
            writer = tf.summary.FileWriter(logdir, tf.get_default_graph())
            with tf.Session() as sess:
                out, one, two = sess.run([merged, s1, both], {x: 1.5})
                r["types"] = [type(out).__name__, type(one).__name__, type(two).__name__]
                r["merge_all_is_merge"] = out == two
                writer.add_summary(out, 1)
                writer.add_summary(one, global_step=2)
                writer.flush()
                writer.close()
            files = os.listdir(logdir)
            r["event_file"] = [len(files) == 1, files[0].startswith("events.out.tfevents.")]
            with tf.Graph().as_default():
                r["merge_all_empty_graph"] = tf.summary.merge_all()
            emit(r)
        ''')

    def test_tensorflow_reads_the_event_file(self):
        # What towerflow's FileWriter writes, TensorFlow's summary_iterator reads
        # back: the file version, the graph and each scalar at its step.
        params = self._params()
        code = '''
            x = tf.placeholder(tf.float32, [])
            loss = tf.summary.scalar("loss", x)
            acc = tf.summary.scalar("accuracy", x / 4.0)
            merged = tf.summary.merge_all()
            writer = tf.summary.FileWriter(os.path.join(PARAMS["tmp"], "logs"), tf.get_default_graph())
            with tf.Session() as sess:
                for step in range(3):
                    writer.add_summary(sess.run(merged, {x: 1.0 + step}), step)
            writer.close()
            emit(sorted(os.listdir(os.path.join(PARAMS["tmp"], "logs"))))
        '''
        files = _result("towerflow", _run("towerflow", code, params))
        self.assertEqual(len(files), 1)
        reader = '''
            import glob, json, os
            import tensorflow as tf
            events = []
            for e in tf.compat.v1.train.summary_iterator(glob.glob(os.path.join(PARAMS["tmp"], "logs", "*"))[0]):
                if e.file_version:
                    events.append(["version", e.file_version])
                elif e.graph_def:
                    events.append(["graph", len(e.graph_def) > 0])
                for v in e.summary.value:
                    events.append([e.step, v.tag, round(v.simple_value, 4)])
            print(json.dumps(events))
        '''
        p = subprocess.run([PYTHON, "-c", "PARAMS = %r\n" % (params,) + textwrap.dedent(reader)],
                           capture_output=True, text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        events = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertEqual(events[0], ["version", "brain.Event:2"])
        self.assertIn(["graph", True], events)
        scalars = [e for e in events if len(e) == 3]
        self.assertEqual(sorted(scalars), sorted([[s, "loss", 1.0 + s] for s in range(3)] +
                                                 [[s, "accuracy", (1.0 + s) / 4] for s in range(3)]))

    # ---- what towerflow lacks ------------------------------------------------------------------

    def test_missing_symbols_raise_attribute_error_naming_them(self):
        code = PRELUDES["towerflow"] + COMMON + textwrap.dedent('''
            r = {}
            for where, get in (("tf", lambda: tf.some_missing_symbol), ("nn", lambda: tf.nn.some_missing_symbol),
                               ("train", lambda: tf.train.some_missing_symbol)):
                try:
                    get()
                    r[where] = "no error"
                except AttributeError as e:
                    r[where] = "some_missing_symbol" in str(e)
            r["hasattr"] = hasattr(tf, "some_missing_symbol")
            emit(r)
        ''')
        out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout.splitlines()[-1]),
                         {"tf": True, "nn": True, "train": True, "hasattr": False})


class BothEngines:
    """For other test files of snippets (tf1_idioms_test.py, ...): the same
    fixtures, run_both and compare, mixed into their unittest.TestCase."""

    maxDiff = None
    setUpClass = classmethod(TF1SurfaceTest.setUpClass.__func__)
    tearDownClass = classmethod(TF1SurfaceTest.tearDownClass.__func__)
    _params = TF1SurfaceTest._params
    run_both = TF1SurfaceTest.run_both
    compare = TF1SurfaceTest.compare


if __name__ == "__main__":
    unittest.main()
