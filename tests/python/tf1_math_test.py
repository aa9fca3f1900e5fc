"""TF1's pow, //, %, batch matrix products and the activations built from the
engine's ops (relu6, leaky_relu, softplus, l2_normalize, rsqrt, reciprocal,
squared_difference): towerflow.compat.v1 against TensorFlow's own, in the
harness of tf1_surface_test.py (each snippet runs under both engines and the
JSON objects they print must be equal): values, static shapes, op types,
gradients and errors.

Run: python -m unittest -v tests/python/tf1_math_test.py (or directly).
"""

import unittest

import tf1_surface_test as surface


class TF1MathTest(surface.BothEngines, unittest.TestCase):
    """Each test: one snippet, run under towerflow and under TensorFlow."""

    def test_pow_floordiv_and_mod(self):
        self.compare('''
            r = {}
            x = tf.constant([7.5, -7.5, 2.0, 0.5, 3.0])
            y = tf.constant([2.0, 2.0, -2.0, 0.25, 2.5])
            i = tf.constant([7, -7, 7, -7, 9])
            j = tf.constant([2, 2, -2, -2, 3])
            ts = [x ** y, x ** 2, 2.0 ** y, tf.pow(x, 3), tf.pow(i, 2), x // y, i // j, 7 // j, x % y, i % j,
                  tf.floordiv(x, 1.5), tf.floormod(i, 4), tf.mod(x, -1.5), tf.div(i, j), tf.math.floordiv(i, 2)]
            r["sigs"] = [sig(t) for t in ts]
            p = tf.placeholder(tf.float32, [3])
            q = tf.placeholder(tf.float32, [3])
            grads = tf.gradients(tf.reduce_sum(p ** q) + tf.reduce_sum(p % q), [p, q])
            with tf.Session() as sess:
                r["values"] = [v.tolist() for v in sess.run(ts)]
                r["grads"] = [g.tolist() for g in sess.run(grads, {p: [1.5, 0.0, 2.0], q: [2.5, 3.0, 0.75]})]
                r["negative_power"] = raised(lambda: sess.run(tf.pow(i, tf.constant([1, 2, -1, 0, 1]))),
                                             "negative integer powers")
                r["zero_divisor"] = raised(lambda: sess.run(i // tf.constant([1, 0, 1, 1, 1])), "division by zero")
            r["no_gradient"] = tf.gradients(tf.reduce_sum(p // q), p) == [None]
            emit(r)
        ''')

    def test_batch_matmul(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(2)
            x = tf.constant(rng.randn(2, 1, 3, 4).astype(np.float32))
            y = tf.constant(rng.randn(5, 4, 2).astype(np.float32))
            m = tf.constant(rng.randn(4, 2).astype(np.float32))
            p = tf.placeholder(tf.float32, [None, 3, 4])
            u = tf.placeholder(tf.float32)
            ts = [tf.matmul(x, y), tf.matmul(x, m), tf.matmul(y, x, transpose_a=True, transpose_b=True),
                  x @ y, tf.matmul(p, m), tf.matmul(u, m), tf.linalg.matmul(x, y, adjoint_b=False)]
            r["sigs"] = [sig(t) for t in ts]
            r["types"] = [t.op.type for t in ts]
            loss = tf.reduce_sum(tf.matmul(x, y) * tf.constant(rng.randn(2, 5, 3, 2).astype(np.float32)))
            grads = tf.gradients(loss, [x, y])
            with tf.Session() as sess:
                feed = {p: rng.randn(6, 3, 4).astype(np.float32), u: rng.randn(3, 4).astype(np.float32)}
                r["values"] = [np.round(v, 4).tolist() for v in sess.run(ts, feed)]
                r["grads"] = [np.round(g, 4).tolist() for g in sess.run(grads)]
                r["bad"] = raised(lambda: sess.run(tf.matmul(p, m), {p: np.zeros((2, 3, 5), np.float32)}))
            r["bad_static"] = raised(lambda: tf.matmul(x, tf.zeros([5, 3, 2])))
            emit(r)
        ''')

    def test_activations_and_normalization(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(4)
            x = tf.constant((rng.randn(3, 5) * 4).astype(np.float32))
            y = tf.constant(rng.rand(3, 5).astype(np.float32) + 0.5)
            ts = [tf.nn.relu6(x), tf.nn.leaky_relu(x), tf.nn.leaky_relu(x, alpha=1.5), tf.nn.softplus(x),
                  tf.nn.softplus(tf.constant([-100.0, 100.0, 0.0])), tf.nn.l2_normalize(x, axis=1),
                  tf.nn.l2_normalize(x, 0, epsilon=1e-3), tf.nn.l2_normalize(x, dim=[0, 1]),
                  tf.rsqrt(y), tf.reciprocal(y), tf.squared_difference(x, y), tf.math.squared_difference(x, 2.0)]
            r["shapes"] = [shape(t) for t in ts]
            r["dtypes"] = [t.dtype.name for t in ts]
            loss = sum(tf.reduce_sum(t * tf.constant(rng.randn(3, 5).astype(np.float32))) for t in
                       (ts[0], ts[1], ts[2], ts[3], ts[5], ts[10]))
            grads = tf.gradients(loss, [x, y])
            with tf.Session() as sess:
                r["values"] = [np.round(v, 4).tolist() for v in sess.run(ts)]
                r["grads"] = [np.round(g, 4).tolist() for g in sess.run(grads)]
            emit(r)
        ''')

    def test_local_response_normalization(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(5)
            x = tf.constant(rng.randn(2, 3, 3, 9).astype(np.float32))
            ts = [tf.nn.lrn(x), tf.nn.local_response_normalization(x, 2, bias=2.0, alpha=0.3, beta=0.75),
                  tf.nn.lrn(x, depth_radius=1, bias=1.5, alpha=0.5, beta=1.0, name="norm1"),
                  tf.nn.lrn(x, 0, 1.0, 1e-4, 0.75)]
            r["names"] = [t.name for t in ts]
            r["shapes"] = [shape(t) for t in ts]
            weights = [tf.constant(rng.randn(2, 3, 3, 9).astype(np.float32)) for _ in ts]
            loss = sum(tf.reduce_sum(t * w) for t, w in zip(ts, weights))
            grads = tf.gradients(loss, x)
            with tf.Session() as sess:
                r["values"] = [np.round(v, 4).tolist() for v in sess.run(ts)]
                r["grads"] = np.round(sess.run(grads)[0], 4).tolist()
            r["rank3"] = raised(lambda: tf.nn.lrn(tf.zeros([2, 3, 4])))
            emit(r)
        ''')


if __name__ == "__main__":
    unittest.main()
