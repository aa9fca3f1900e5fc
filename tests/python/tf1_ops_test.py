"""TF1's gather, embedding_lookup, unsorted_segment_sum, one_hot, where,
in_top_k, transpose, tile, pad and range: towerflow.compat.v1 against
TensorFlow's own, in the harness of tf1_surface_test.py (each snippet runs
under both engines and the JSON objects they print must be equal): values,
static shapes, node names, gradients, and the errors of bad indices.

Run: python -m unittest -v tests/python/tf1_ops_test.py (or directly).
"""

import json
import os
import subprocess
import textwrap
import unittest

import tf1_surface_test as surface


class TF1OpsTest(surface.BothEngines, unittest.TestCase):
    """Each test: one snippet, run under towerflow and under TensorFlow."""

    def test_gather_and_embedding_lookup(self):
        self.compare('''
            r = {}
            x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
            rows = tf.gather(x, [2, 0, 2])
            cols = tf.gather(x, [[3, 1], [0, 0]], axis=1)
            last = tf.gather(x, tf.constant(2, tf.int64), axis=-1)
            ids = tf.placeholder(tf.int32, [None])
            table = tf.get_variable("table", initializer=tf.constant(np.arange(10, dtype=np.float32).reshape(5, 2)))
            emb = tf.nn.embedding_lookup(table, ids)
            emb2 = tf.nn.embedding_lookup([table], ids, name="lookup")
            r["sigs"] = [sig(t) for t in (rows, cols, last, emb, emb2)]
            loss = tf.reduce_sum(emb * tf.constant([[1.0, 2.0]]))
            g = tf.convert_to_tensor(tf.gradients(loss, table)[0])
            gx = tf.gradients(tf.reduce_sum(cols * 3.0), x)[0]
            step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["values"] = [v.tolist() for v in sess.run([rows, cols, last])]
                r["emb"] = sess.run(emb, {ids: [4, 0, 4]}).tolist()
                r["grad"] = sess.run(g, {ids: [4, 0, 4]}).tolist()
                r["grad_axis1"] = sess.run(tf.convert_to_tensor(gx)).tolist()
                sess.run(step, {ids: [1, 1, 3]})
                r["trained"] = sess.run(table).tolist()
                r["bad"] = raised(lambda: sess.run(emb, {ids: [0, 7]}), "indices[1] = 7 is not in [0, 5)")
                r["negative"] = raised(lambda: sess.run(emb, {ids: [-1]}), "indices[0] = -1 is not in [0, 5)")
            emit(r)
        ''')

    def test_unsorted_segment_sum(self):
        self.compare('''
            r = {}
            data = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2))
            s = tf.unsorted_segment_sum(data, [2, -1, 0, 2], 3)
            s2 = tf.math.unsorted_segment_sum(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([[0, 1], [1, 0]]), 2)
            r["sigs"] = [sig(s), shape(s2)]
            g = tf.gradients(tf.reduce_sum(s * tf.constant([[1.0], [2.0], [3.0]])), data)[0]
            ids = tf.placeholder(tf.int32, [4])
            bad = tf.unsorted_segment_sum(data, ids, 3)
            with tf.Session() as sess:
                r["values"] = [v.tolist() for v in sess.run([s, s2, g])]
                r["bad"] = raised(lambda: sess.run(bad, {ids: [0, 3, 0, 0]}), "out of range")
            emit(r)
        ''')

    def test_one_hot(self):
        self.compare('''
            r = {}
            labels = tf.placeholder(tf.int64, [None])
            a = tf.one_hot(labels, 4)
            b = tf.one_hot([1, 0, 2], 3, on_value=5, off_value=-1, axis=0)
            c = tf.one_hot(tf.constant([[0, 3], [-1, 1]]), 2, axis=1, dtype=tf.float64)
            d = tf.one_hot(tf.constant([1, 2], tf.uint8), 3, on_value=True, off_value=False)
            r["sigs"] = [sig(t) for t in (a, b, c, d)]
            with tf.Session() as sess:
                r["a"] = sess.run(a, {labels: [3, 0, 7, -2]}).tolist()
                r["rest"] = [v.tolist() for v in sess.run([b, c, d])]
            r["mismatch"] = raised(lambda: tf.one_hot([1], 2, on_value=tf.constant(1.0), off_value=tf.constant(0, tf.int32)))
            emit(r)
        ''')

    def test_where_and_where_v2(self):
        self.compare('''
            r = {}
            x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
            y = tf.constant([[-1.0, -2.0], [-3.0, -4.0], [-5.0, -6.0]])
            rows = tf.where(tf.constant([True, False, True]), x, y)
            elems = tf.where(x > 2.5, x, y)
            bcast = tf.where_v2(tf.constant([True, False]), x, 0.0)
            r["sigs"] = [shape(t) for t in (rows, elems, bcast)]
            gx, gy = tf.gradients(tf.reduce_sum(rows * 2.0) + tf.reduce_sum(bcast), [x, y])
            with tf.Session() as sess:
                r["values"] = [v.tolist() for v in sess.run([rows, elems, bcast, gx, gy])]
            r["mismatch"] = raised(lambda: tf.where(tf.constant([True, False]), tf.zeros([2, 3]), tf.zeros([3, 2])))
            emit(r)
        ''')

    def test_in_top_k(self):
        self.compare('''
            r = {}
            logits = tf.constant([[0.1, 0.5, 0.5, 0.2], [0.4, 0.3, 0.2, 0.1], [0.1, np.inf, 0.3, 0.2],
                                  [0.3, 0.3, 0.3, 0.3]])
            labels = tf.constant([2, 3, 0, 1])
            outs = [tf.nn.in_top_k(logits, labels, k) for k in (1, 2, 4)]
            k = tf.placeholder(tf.int32, [])
            dyn = tf.nn.in_top_k(logits, labels, k)
            r["mixed"] = raised(lambda: tf.nn.in_top_k(logits, tf.constant([2, 3, 0, 1], tf.int64), k))
            acc = tf.reduce_mean(tf.cast(tf.nn.in_top_k(logits, labels, 1), tf.float32))
            r["shapes"] = [shape(t) for t in outs] + [dyn.dtype.name]
            with tf.Session() as sess:
                r["values"] = [v.tolist() for v in sess.run(outs)]
                r["dyn"] = sess.run(dyn, {k: 3}).tolist()
                r["acc"] = float(sess.run(acc))
            emit(r)
        ''')

    def test_transpose_tile_pad_range(self):
        self.compare('''
            r = {}
            x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
            t1 = tf.transpose(x)
            t2 = tf.transpose(x, [1, 0, 2])
            m = tf.placeholder(tf.float32, [None, 3])
            t3 = tf.transpose(m)
            inv = tf.invert_permutation([2, 0, 1])
            tiled = tf.tile(tf.constant([[1, 2], [3, 4]]), [2, 3])
            tiled_m = tf.tile(m, [1, 2])
            padded = tf.pad(tf.constant([[1.0, 2.0], [3.0, 4.0]]), [[1, 0], [0, 2]])
            padded9 = tf.pad(tf.constant([1, 2]), [[2, 1]], constant_values=9)
            ranges = [tf.range(5), tf.range(1, 10, 3), tf.range(0.0, 1.0, 0.25), tf.range(5, 0, -2),
                      tf.range(3, dtype=tf.float32), tf.range(tf.constant(4, tf.int64))]
            r["sigs"] = [sig(t) for t in [t1, t2, t3, inv, tiled, tiled_m, padded, padded9] + ranges]
            loss = (tf.reduce_sum(tf.transpose(x, [2, 0, 1]) * tf.range(4.0)[:, None, None])
                    + tf.reduce_sum(tf.tile(x, [1, 2, 1]) * 2.0)
                    + tf.reduce_sum(tf.pad(x, [[0, 1], [1, 1], [0, 0]]) * 3.0))
            gx = tf.gradients(loss, x)[0]
            with tf.Session() as sess:
                r["values"] = [v.tolist() for v in sess.run([t1, t2, inv, tiled, padded, padded9] + ranges + [gx])]
                r["fed"] = [v.tolist() for v in sess.run([t3, tiled_m], {m: [[1, 2, 3], [4, 5, 6]]})]
            r["bad_range"] = raised(lambda: tf.range(0, 5, -1))
            emit(r)
        ''')

    def test_indexing_with_newaxis_and_ellipsis(self):
        self.compare('''
            r = {}
            x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
            m = tf.placeholder(tf.float32, [None, 3])
            views = [x[:, None], x[None], x[..., 0], x[0, ..., None], x[..., None, 1:3], x[1, None, :, -1],
                     x[None, ..., None], m[:, None, 1], m[..., -1]]
            r["sigs"] = [sig(t) for t in views]
            r["compatible"] = [x.shape.is_compatible_with([2, None, 4]), m.shape.is_compatible_with([5, 3]),
                               m.shape.is_compatible_with([5, 4]), m.shape.is_compatible_with(tf.TensorShape(None))]
            r["too_many"] = raised(lambda: x[0, 0, 0, 0])
            g = tf.gradients(tf.reduce_sum(x[..., None, 1:3] * 2.0) + tf.reduce_sum(x[1, None, :, -1]), x)[0]
            with tf.Session() as sess:
                r["values"] = [v.tolist() for v in sess.run(views[:7] + [g])]
                r["fed"] = [v.tolist() for v in sess.run(views[7:], {m: [[1, 2, 3], [4, 5, 6]]})]
            emit(r)
        ''')

    def test_edges(self):
        self.compare('''
            r = {}
            x = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
            big = np.array([2**32 + 1], dtype=np.int64)
            r["int64_numpy"] = [sig(tf.gather(x, big)), sig(tf.pad(x, np.array([[2**32, 0], [0, 0]])))]
            c = tf.placeholder(tf.bool)
            rows = tf.where(c, x, -x)
            whole = tf.where(tf.constant(True), x, -x)
            u = tf.placeholder(tf.float32)
            m = tf.placeholder(tf.float32, [None, 3])
            padded = tf.pad(m, [[0, tf.shape(m)[0]], [0, 0]])
            sums = [tf.reduce_sum(u), tf.reduce_mean(u), tf.reduce_max(u)]
            t_any = tf.transpose(u)
            d = tf.constant([[1.0], [2.0], [3.0], [4.0]])
            seg = tf.unsorted_segment_sum(d, [0, -1, 1, 1], 2)
            g_seg = tf.gradients(seg, d, grad_ys=tf.constant([[np.inf], [1.0]]))[0]
            strs = [tf.pad(tf.constant(["a", "b"]), [[1, 0]]), tf.pad(tf.constant([True]), [[0, 2]]),
                    tf.one_hot([1, 0], 2, on_value="y", off_value="n"),
                    tf.transpose(x, [-1, 0])]
            r["sigs"] = [sig(t) for t in [rows, whole, t_any] + sums + strs]
            r["scalar_mask"] = raised(lambda: x[True])
            with tf.Session() as sess:
                r["rows"] = sess.run(rows, {c: [True, False, True]}).tolist()
                r["elems"] = sess.run(rows, {c: [[True, False], [False, True], [True, True]]}).tolist()
                r["whole"] = sess.run(whole).tolist()
                r["padded"] = sess.run(padded, {m: [[1, 2, 3]]}).tolist()
                r["sums"] = [float(v) for v in sess.run(sums, {u: [[1, 2], [3, 4]]})]
                r["t_any"] = sess.run(t_any, {u: np.arange(6).reshape(1, 2, 3)}).tolist()
                r["g_seg"] = sess.run(g_seg).tolist()
                r["strs"] = [np.asarray(v).tolist() for v in sess.run(strs)]
                r["bad_rows"] = raised(lambda: sess.run(rows, {c: [True, False]}))
            emit(r)
        ''')

    def test_avg_pool(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(0)
            x = tf.constant(rng.randn(2, 7, 6, 3).astype(np.float32))
            outs = []
            for k, s, p in [((1, 3, 3, 1), (1, 2, 2, 1), "SAME"), ((1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
                            ((1, 3, 2, 1), (1, 1, 2, 1), "SAME")]:
                y = tf.nn.avg_pool(x, k, s, p)
                outs += [y, tf.gradients(tf.reduce_sum(y * y), x)[0]]
            r["sigs"] = [sig(t) for t in outs[::2]]
            with tf.Session() as sess:
                r["values"] = [v.tolist() for v in sess.run(outs)]
            emit(r)
        ''')

    def test_losses(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(0)
            logits = tf.constant(rng.randn(6, 4).astype(np.float32))
            labels = tf.constant([0, 3, 1, 1, 2, 0])
            w = tf.constant([1.0, 0.0, 2.0, 1.0, 0.0, 0.5])
            onehot = tf.one_hot(labels, 4)
            y = tf.constant(rng.rand(6, 4).astype(np.float32))
            p = tf.constant(rng.rand(6, 4).astype(np.float32))
            R = tf.losses.Reduction
            ls = [tf.losses.sparse_softmax_cross_entropy(labels, logits),
                  tf.losses.sparse_softmax_cross_entropy(labels, logits, weights=w),
                  tf.losses.sparse_softmax_cross_entropy(labels, logits, weights=w, reduction=R.MEAN),
                  tf.losses.sparse_softmax_cross_entropy(labels, logits, weights=w, reduction=R.SUM),
                  tf.losses.sparse_softmax_cross_entropy(labels, logits, weights=w, reduction=R.SUM_OVER_BATCH_SIZE),
                  tf.losses.softmax_cross_entropy(onehot, logits),
                  tf.losses.softmax_cross_entropy(onehot, logits, label_smoothing=0.1),
                  tf.losses.sigmoid_cross_entropy(y > 0.5, logits),
                  tf.losses.sigmoid_cross_entropy(y, logits, label_smoothing=0.2, weights=2.0),
                  tf.losses.mean_squared_error(y, p),
                  tf.losses.absolute_difference(y, p, weights=tf.constant([[1.0], [0.0], [1.0], [1.0], [0.0], [3.0]])),
                  tf.losses.huber_loss(y, p * 3.0, delta=0.5),
                  tf.losses.log_loss(y, p)]
            none = tf.losses.sparse_softmax_cross_entropy(labels, logits, weights=w, reduction=R.NONE, loss_collection=None)
            sig = tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits * 20.0)
            lsm = tf.nn.log_softmax(logits)
            r["shapes"] = [shape(t) for t in ls + [none, sig, lsm]]
            r["collected"] = len(tf.losses.get_losses())
            reg = tf.get_variable("reg", initializer=tf.constant([1.0, -2.0]),
                                  regularizer=lambda v: 0.5 * tf.reduce_sum(v * v))
            total = tf.losses.get_total_loss()
            grads = tf.gradients(ls[1] + ls[6] + ls[8] + ls[11] + tf.reduce_sum(lsm[:, 0]), logits)[0]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["values"] = [float(v) for v in sess.run(ls)]
                r["none"] = sess.run(none).tolist()
                r["sig"] = sess.run(sig).tolist()
                r["lsm"] = sess.run(lsm).tolist()
                r["total"] = float(sess.run(total))
                r["reg"] = float(sess.run(tf.losses.get_regularization_loss()))
                r["grads"] = sess.run(grads).tolist()
            emit(r)
        ''')

    def test_loss_and_metric_weights_of_other_ranks(self):
        self.compare('''
            r = {}
            logits = tf.constant([[1.0, 2.0, 3.0], [1.0, 5.0, -1.0]])
            r["sparse_w_col"] = tf.losses.sparse_softmax_cross_entropy([2, 0], logits, weights=tf.constant([[1.0], [3.0]]))
            r["sparse_labels_col"] = tf.losses.sparse_softmax_cross_entropy(tf.constant([[2], [0]]), logits)
            y = tf.constant([[1.0], [2.0], [3.0], [4.0]])
            p = tf.constant([[2.0], [2.0], [1.0], [0.0]])
            r["mse_list_w"] = tf.losses.mean_squared_error(y, p, weights=[[1.0], [0.0], [2.0], [1.0]])
            r["huber_positional"] = tf.losses.huber_loss(y, p, 1.0, 0.7)
            r["log_loss_positional"] = tf.losses.log_loss(tf.constant([1.0, 0.0]), tf.constant([0.9, 0.2]), 2.0, 1e-3)
            r["bad_w"] = raised(lambda: tf.losses.mean_squared_error(y, p, weights=tf.constant([1.0, 0.0, 0.0, 0.0])))
            m_rows, m_rows_up = tf.metrics.mean(tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
                                                weights=[1.0, 0.0, 0.0])
            a1, a1_up = tf.metrics.accuracy(tf.constant([[1], [0], [1], [1]]), tf.constant([[1], [1], [1], [0]]),
                                            weights=tf.constant([1.0, 1.0, 0.0, 1.0]))
            a2, a2_up = tf.metrics.accuracy(tf.constant([1, 0]), tf.constant([0.9, 0.1]))
            a3, a3_up = tf.metrics.accuracy(tf.constant([[1], [0]]), tf.constant([1, 1]))
            ph = tf.placeholder(tf.float32, [None])
            m_ph, m_ph_up = tf.metrics.mean(ph)
            sig = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant([0.0, 1.0, 0.0]),
                                                          logits=tf.constant([-20.0, 20.0, -30.0]))
            r["log1p"] = tf.log1p(tf.constant([1e-10, 0.5]))
            pooled = tf.nn.avg_pool(tf.ones([1, 4, 4, 1]), 2, 2, "VALID")
            with tf.Session() as sess:
                sess.run(tf.local_variables_initializer())
                for k in list(r):
                    if not isinstance(r[k], list):
                        v = sess.run(r[k])
                        r[k] = v.tolist() if hasattr(v, "tolist") else float(v)
                r["metrics"] = [float(v) for v in sess.run([m_rows_up, a1_up, a2_up, a3_up])]
                r["fed_mean"] = float(sess.run(m_ph_up, {ph: [1.0, 2.0, 6.0]}))
                r["sig"] = sess.run(sig).tolist()
                r["pooled"] = sess.run(pooled).tolist()
            emit(r)
        ''')

    def test_variables_and_metrics_in_a_reuse_scope(self):
        self.compare('''
            r = {}
            labels = tf.constant([1, 0, 1])
            with tf.variable_scope("eval", reuse=True):
                v = tf.Variable(2.0, name="v")
                acc, up = tf.metrics.accuracy(labels, tf.constant([1, 1, 1]))
            r["names"] = [v.name] + sorted(x.name for x in tf.local_variables())
            with tf.Session() as sess:
                sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
                r["values"] = [float(sess.run(v)), float(sess.run(up))]
            emit(r)
        ''')

    def test_metrics(self):
        self.compare('''
            r = {}
            labels = tf.placeholder(tf.int64, [None])
            logits = tf.placeholder(tf.float32, [None, 3])
            pred = tf.argmax(logits, 1)
            acc, acc_update = tf.metrics.accuracy(labels, pred)
            wacc, wacc_update = tf.metrics.accuracy(labels=labels, predictions=pred, weights=tf.cast(labels, tf.float32),
                                                    name="weighted")
            m, m_update = tf.metrics.mean(tf.reduce_max(logits, 1))
            r["locals"] = sorted(v.name for v in tf.local_variables())
            r["trainable"] = len(tf.trainable_variables())
            batches = [([0, 1, 2], [[1, 0, 0], [0, 1, 0], [1, 0, 0]]), ([2, 2], [[0, 0, 1], [0, 1, 0]])]
            with tf.Session() as sess:
                sess.run(tf.local_variables_initializer())
                r["empty"] = [float(v) for v in sess.run([acc, wacc, m])]
                ups = []
                for y, x in batches:
                    ups.append([float(v) for v in sess.run([acc_update, wacc_update, m_update], {labels: y, logits: x})])
                r["updates"] = ups
                r["values"] = [float(v) for v in sess.run([acc, wacc, m])]
                sess.run(tf.local_variables_initializer())
                r["reset"] = [float(v) for v in sess.run([acc, wacc, m])]
            emit(r)
        ''')

    def test_nn_batch_normalization(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(1)
            x = tf.constant(rng.randn(4, 3, 2, 5).astype(np.float32))
            mean, var = tf.nn.moments(x, [0, 1, 2])
            gamma = tf.constant(rng.rand(5).astype(np.float32))
            beta = tf.constant(rng.randn(5).astype(np.float32))
            ys = [tf.nn.batch_normalization(x, mean, var, beta, gamma, 1e-3),
                  tf.nn.batch_normalization(x, mean, var, None, None, 1e-5)]
            g = tf.gradients(tf.reduce_sum(ys[0] * x), [x, gamma, beta])
            with tf.Session() as sess:
                r["values"] = [v.tolist() for v in sess.run(ys + g)]
            emit(r)
        ''')

    def test_histogram_summaries_read_by_tensorflow(self):
        # towerflow writes a histogram and a scalar in one event; TensorFlow
        # reads the file and compares them with its own summaries of the same
        # values: the same buckets, counts, sums and extremes.
        params = self._params()
        code = '''
            rng = np.random.RandomState(0)
            values = np.concatenate([rng.randn(50) * 3, [0, 0, 1e-13, -5e-13, 7]]).astype(np.float32)
            np.save(os.path.join(PARAMS["tmp"], "values.npy"), values)
            x = tf.placeholder(tf.float32, [None])
            h = tf.summary.histogram("weights", x)
            tf.summary.scalar("average", tf.reduce_mean(x))
            merged = tf.summary.merge_all()
            writer = tf.summary.FileWriter(os.path.join(PARAMS["tmp"], "logs"))
            r = {}
            with tf.Session() as sess:
                writer.add_summary(sess.run(merged, {x: values}), 3)
                r["nan"] = raised(lambda: sess.run(h, {x: [1.0, np.nan]}), "Nan in summary histogram for: weights")
            writer.close()
            r["garbage"] = raised(lambda: tf.summary.FileWriter(os.path.join(PARAMS["tmp"], "other")).add_summary(
                b"\\xff\\xff\\xff", 1))
            emit(r)
        '''
        r = surface._result("towerflow", surface._run("towerflow", code, params))
        self.assertEqual(r["nan"], ["InvalidArgumentError", True])
        self.assertEqual(r["garbage"], ["InvalidArgumentError"])
        reader = '''
            import glob, json, os
            import numpy as np
            import tensorflow.compat.v1 as tf
            tf.disable_eager_execution()
            values = np.load(os.path.join(PARAMS["tmp"], "values.npy"))
            with tf.Session() as sess:
                want = tf.Summary.FromString(sess.run(tf.summary.histogram("weights", tf.constant(values))))
            got = []
            for e in tf.train.summary_iterator(glob.glob(os.path.join(PARAMS["tmp"], "logs", "*"))[0]):
                for v in e.summary.value:
                    got.append([e.step, v.tag, v.WhichOneof("value")])
                    if v.HasField("histo"):
                        got.append(v.histo == want.value[0].histo)
            print(json.dumps(got))
        '''
        p = subprocess.run([surface.PYTHON, "-c", "PARAMS = %r\n" % (params,) + textwrap.dedent(reader)],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.assertEqual(json.loads(p.stdout.strip().splitlines()[-1]),
                         [[3, "weights", "histo"], True, [3, "average", "simple_value"]])


class TF1LayersTest(surface.BothEngines, unittest.TestCase):
    """tf.layers under towerflow alone (the peers' TensorFlow, on Keras 3, has
    no tf.compat.v1.layers): TF1's variable and node names, and the values
    against NumPy's computation from the layers' own weights."""

    def run_towerflow(self, code):
        return surface._result("towerflow", surface._run("towerflow", code, self._params()))

    def test_layers_names_and_values(self):
        r = self.run_towerflow('''
            r = {}
            rng = np.random.RandomState(0)
            x = tf.placeholder(tf.float32, [None, 6, 6, 2])
            h = tf.layers.conv2d(x, 3, 3, padding="same", activation=tf.nn.relu)
            p = tf.layers.max_pooling2d(h, 2, 2)
            a = tf.layers.average_pooling2d(p, 2, 1, padding="same")
            f = tf.layers.flatten(a)
            training = tf.placeholder(tf.bool, [])
            d = tf.layers.dropout(f, 0.5, training=training)
            y = tf.layers.dense(d, 4, activation=tf.nn.relu, kernel_regularizer=lambda w: 0.5 * tf.reduce_sum(w * w))
            z = tf.layers.dense(tf.reshape(y, [-1, 2, 2]), 3, name="head")
            z2 = tf.layers.dense(tf.reshape(y, [-1, 2, 2]), 3, name="head", reuse=True)
            r["names"] = [[t.name, shape(t)] for t in (h, p, a, f, y, z)]
            r["variables"] = [v.name for v in tf.trainable_variables()]
            r["regularization"] = len(tf.losses.get_regularization_losses())
            r["no_last_dim"] = raised(lambda: tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2))
            xv = rng.rand(3, 6, 6, 2).astype(np.float32)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                zv, z2v, dv, ck, cb, dk, db, hk, hb = sess.run(
                    [z, z2, d, "conv2d/kernel:0", "conv2d/bias:0", "dense/kernel:0", "dense/bias:0",
                     "head/kernel:0", "head/bias:0"], {x: xv, training: False})
                dropped = sess.run(d, {x: xv, training: True})
            # NumPy: SAME 3x3 convolution, ReLU, 2x2 max pool, 2x2 stride-1 SAME mean (over the
            # positions inside), flatten, dense + ReLU, dense over the last axis.
            xp = np.pad(xv, ((0, 0), (1, 1), (1, 1), (0, 0)))
            conv = np.zeros((3, 6, 6, 3), np.float32)
            for i in range(6):
                for j in range(6):
                    conv[:, i, j, :] = np.tensordot(xp[:, i:i + 3, j:j + 3, :], ck, axes=([1, 2, 3], [0, 1, 2]))
            hv = np.maximum(conv + cb, 0)
            pv = hv.reshape(3, 3, 2, 3, 2, 3).max(axis=(2, 4))
            av = np.zeros_like(pv)
            for i in range(3):
                for j in range(3):
                    av[:, i, j, :] = pv[:, i:i + 2, j:j + 2, :].mean(axis=(1, 2))
            yv = np.maximum(av.reshape(3, -1) @ dk + db, 0)
            want = yv.reshape(-1, 2, 2) @ hk + hb
            r["max_error"] = float(np.abs(zv - want).max())
            r["reused"] = bool(np.array_equal(zv, z2v))
            r["eval_is_identity"] = bool(np.allclose(dv, av.reshape(3, -1), atol=1e-6))
            kept = dropped != 0
            r["dropout_scaled"] = bool(np.allclose(dropped[kept], 2 * av.reshape(3, -1)[kept], atol=1e-5))
            r["dropout_some"] = bool(0 < kept.mean() < 1)
            rate = tf.placeholder(tf.float32, [])
            fed = tf.layers.dropout(tf.ones([8, 50]), rate, training=True)
            with tf.Session() as sess:
                fv = sess.run(fed, {rate: 0.75})
            r["fed_rate"] = bool(set(np.unique(fv).tolist()) <= {0.0, 4.0} and 0.5 < (fv == 0).mean() < 0.95)
            emit(r)
        ''')
        self.assertEqual(r["names"], [["conv2d/Relu:0", [None, 6, 6, 3]], ["max_pooling2d/MaxPool:0", [None, 3, 3, 3]],
                                      ["average_pooling2d/AvgPool:0", [None, 3, 3, 3]],
                                      ["flatten/Reshape:0", [None, 27]], ["dense/Relu:0", [None, 4]],
                                      ["head/BiasAdd:0", [None, 2, 3]]])
        self.assertEqual(r["variables"], ["conv2d/kernel:0", "conv2d/bias:0", "dense/kernel:0", "dense/bias:0",
                                          "head/kernel:0", "head/bias:0"])
        self.assertEqual(r["regularization"], 1)
        self.assertEqual(r["no_last_dim"], ["ValueError"])
        self.assertLess(r["max_error"], 1e-5)
        for key in ("reused", "eval_is_identity", "dropout_scaled", "dropout_some", "fed_rate"):
            self.assertTrue(r[key], key)

    def test_layers_take_the_scope_initializer_and_refuse_integers(self):
        r = self.run_towerflow('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 2, 3])
            with tf.variable_scope("net", initializer=tf.constant_initializer(0.5)):
                y = tf.layers.dense(x, 4)
            r["name"] = y.name
            r["int_input"] = raised(lambda: tf.layers.dense(tf.placeholder(tf.int32, [None, 3]), 2),
                                    "floating-point dtype")
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                k, b = sess.run(["net/dense/kernel:0", "net/dense/bias:0"])
            r["kernel"] = sorted(set(k.ravel().tolist()))
            r["bias"] = sorted(set(b.ravel().tolist()))
            emit(r)
        ''')
        self.assertEqual(r, {"name": "net/dense/BiasAdd:0", "int_input": ["TypeError", True], "kernel": [0.5],
                             "bias": [0.0]})

    def test_unnamed_layers_are_reused_in_a_reentered_scope(self):
        # The discriminator pattern: the same unnamed layers built twice, the
        # second time in the scope re-entered with reuse=True.
        r = self.run_towerflow('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 3])

            def net(v):
                return tf.layers.dense(tf.layers.dense(v, 4), 1)

            with tf.variable_scope("d"):
                real = net(x)
            with tf.variable_scope("d", reuse=True):
                fake = net(x * 2.0)
            with tf.variable_scope("d") as vs:
                pass
            with tf.variable_scope(vs, reuse=True):
                again = net(x)
            r["variables"] = [v.name for v in tf.trainable_variables()]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                a, b = sess.run([real, again], {x: [[1.0, 2.0, 3.0]]})
                r["same"] = bool((a == b).all())
            emit(r)
        ''')
        self.assertEqual(r["variables"], ["d/dense/kernel:0", "d/dense/bias:0", "d/dense_1/kernel:0", "d/dense_1/bias:0"])
        self.assertTrue(r["same"])

    def test_batch_normalization(self):
        r = self.run_towerflow('''
            r = {}
            rng = np.random.RandomState(0)
            xv = rng.randn(4, 2, 2, 3).astype(np.float32) * 2 + 1
            x = tf.placeholder(tf.float32, [None, 2, 2, 3])
            training = tf.placeholder(tf.bool, [])
            y = tf.layers.batch_normalization(x, training=training, momentum=0.9)
            y_eval = tf.layers.batch_normalization(x, training=False, name="batch_normalization", reuse=True)
            updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
            r["variables"] = sorted(v.name for v in tf.global_variables())
            r["trainable"] = sorted(v.name for v in tf.trainable_variables())
            r["updates"] = len(updates)
            loss = tf.reduce_sum(y * y * np.arange(3, dtype=np.float32))
            with tf.control_dependencies(updates):
                step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                yt = sess.run(y, {x: xv, training: True})
                sess.run(updates, {x: xv, training: True})
                mm, mv = sess.run(["batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"])
                ye, ye2 = sess.run([y, y_eval], {x: xv, training: False})
                sess.run(step, {x: xv, training: True})
                gamma = sess.run("batch_normalization/gamma:0")
            mean = xv.mean(axis=(0, 1, 2))
            var = xv.var(axis=(0, 1, 2))
            r["train_error"] = float(np.abs(yt - (xv - mean) / np.sqrt(var + 1e-3)).max())
            r["moving_mean_error"] = float(np.abs(mm - 0.1 * mean).max())
            r["moving_var_error"] = float(np.abs(mv - (0.9 + 0.1 * var * 16 / 15)).max())
            r["eval_error"] = float(np.abs(ye - (xv - mm) / np.sqrt(mv + 1e-3)).max())
            r["eval_same"] = bool(np.allclose(ye, ye2))
            r["gamma_moved"] = bool(np.abs(gamma - 1).max() > 1e-4)
            emit(r)
        ''')
        self.assertEqual(r["variables"], ["batch_normalization/beta:0", "batch_normalization/gamma:0",
                                          "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"])
        self.assertEqual(r["trainable"], ["batch_normalization/beta:0", "batch_normalization/gamma:0"])
        self.assertEqual(r["updates"], 2)
        for key in ("train_error", "moving_mean_error", "moving_var_error", "eval_error"):
            self.assertLess(r[key], 1e-4, key)
        self.assertTrue(r["eval_same"])
        self.assertTrue(r["gamma_moved"])


if __name__ == "__main__":
    unittest.main()
