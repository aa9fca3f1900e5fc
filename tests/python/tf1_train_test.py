"""TF1's RMSPropOptimizer, AdagradOptimizer and ExponentialMovingAverage:
towerflow.compat.v1 against TensorFlow's own, in the harness of
tf1_surface_test.py (each snippet runs under both engines and the JSON
objects they print must be equal): trained values, slot and shadow names,
TF's initial slot values, the moving averages of variables and of tensors
(debiased or not, with num_updates), and restoring averages by name.

Run: python -m unittest -v tests/python/tf1_train_test.py (or directly).
"""

import textwrap
import unittest

import tf1_surface_test as surface

# A linear regression of 3 features with a bias, fed the same batches under
# both engines; `opt` is built by the snippet.
MODEL = '''
rng = np.random.RandomState(3)
xs = rng.randn(6, 8, 3).astype(np.float32)
ys = (xs @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25).astype(np.float32)
x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", initializer=tf.constant(np.full((3, 1), 0.1, np.float32)))
b = tf.get_variable("b", initializer=tf.constant([0.0]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
'''


class TF1TrainTest(surface.BothEngines, unittest.TestCase):
    """Each test: one snippet, run under towerflow and under TensorFlow."""

    def test_rmsprop_and_adagrad(self):
        self.compare(MODEL + textwrap.dedent('''
            r = {}
            step = tf.train.get_or_create_global_step()
            lr = tf.train.exponential_decay(0.05, step, 2, 0.9)
            opts = {
                "rms": tf.train.RMSPropOptimizer(0.01),
                "rms_centered": tf.train.RMSPropOptimizer(lr, decay=0.8, momentum=0.5, epsilon=1e-6,
                                                          centered=True, name="Centered"),
                "adagrad": tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.5),
            }
            train = {k: o.minimize(loss, var_list=[w, b], global_step=step if k == "rms_centered" else None)
                     for k, o in opts.items()}
            r["slots"] = {k: sorted([o.get_slot(w, n).name for n in names])
                          for (k, o), names in zip(sorted(opts.items()),
                                                   [["accumulator"], ["rms", "momentum"], ["rms", "mg", "momentum"]])}
            r["slot_dtypes"] = sorted(set(v.dtype.base_dtype.name for v in tf.global_variables()))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                start = sess.run([w, b])
                r["initial"] = {
                    "rms": sess.run(opts["rms"].get_slot(w, "rms")).tolist(),
                    "adagrad": sess.run(opts["adagrad"].get_slot(b, "accumulator")).tolist(),
                }
                for k in sorted(opts):
                    w.load(start[0], sess)
                    b.load(start[1], sess)
                    for i in range(6):
                        sess.run(train[k], {x: xs[i], y: ys[i]})
                    r[k] = [v.tolist() for v in sess.run([w, b, loss], {x: xs[0], y: ys[0]})]
                    o = opts[k]
                    r[k + "_slots"] = [sess.run(o.get_slot(w, n)).tolist() for n in
                                       (["accumulator"] if k == "adagrad" else ["rms", "momentum"])]
                r["step"] = int(sess.run(step))
            r["bad_accumulator"] = raised(lambda: tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0),
                                          "initial_accumulator_value")
            emit(r)
        '''))

    def test_float64_tensor_hyperparameters_and_scopes(self):
        self.compare(textwrap.dedent('''
            r = {}
            rng = np.random.RandomState(5)
            w = tf.get_variable("w", initializer=tf.constant(rng.randn(4).astype(np.float64)))
            loss = tf.reduce_sum(tf.square(w - tf.constant(np.arange(4.0))))
            # Python hyper-parameters are float32 tensors cast to float64, as TF's.
            with tf.variable_scope("vs"):
                rms = tf.train.RMSPropOptimizer(0.1, decay=tf.constant(0.8), momentum=lambda: 0.5, epsilon=1e-3)
                train_rms = rms.minimize(loss)
            with tf.name_scope("ns"):
                ada = tf.train.AdagradOptimizer(tf.constant(0.3, tf.float64))
                train_ada = ada.minimize(loss)
            adam = tf.train.AdamOptimizer(0.05)
            train_adam = adam.minimize(loss)
            r["names"] = sorted(v.name for v in tf.global_variables())
            r["slot_names"] = [o.get_slot_names() for o in (rms, ada, adam)]
            r["unbuilt"] = tf.train.MomentumOptimizer(0.1, 0.9).get_slot_names()
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for op in (train_rms, train_ada, train_adam):
                    for _ in range(3):
                        sess.run(op)
                    r[op.name] = sess.run(w).tolist()
            emit(r)
        '''))

    def test_initialized_value_and_separately_initialized_shadows(self):
        self.compare(textwrap.dedent('''
            r = {}
            a = tf.Variable(tf.random_uniform([3], seed=1), name="a")
            b = tf.Variable(a.initialized_value() * 2.0, name="b")
            ema = tf.train.ExponentialMovingAverage(0.5)
            average = ema.apply([a])
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                va, vb, vs = sess.run([a, b, ema.average(a)])
                r["b_is_2a"] = np.allclose(vb, 2 * va)
                r["shadow_is_a"] = np.allclose(vs, va)
                sess.run(tf.assign(a, [7.0, 8.0, 9.0]))
                sess.run(ema.average(a).initializer)
                r["shadow_after"] = sess.run(ema.average(a)).tolist()
                sess.run(b.initializer)
                r["b_after"] = sess.run(b).tolist()
                sess.run(average)
                r["averaged"] = sess.run(ema.average(a)).tolist()
            emit(r)
        '''))

    def test_moving_averages_under_scopes_restore_by_name(self):
        self.compare(textwrap.dedent('''
            r = {}
            import tempfile, os
            d = tempfile.mkdtemp()
            w = tf.get_variable("w", initializer=tf.constant([1.0, 2.0]))
            with tf.name_scope("train"):
                l2 = tf.reduce_sum(w * w, name="l2")
                ema = tf.train.ExponentialMovingAverage(0.5)
                op = ema.apply([w, l2])
            with tf.variable_scope("vs"):
                debiased = tf.train.ExponentialMovingAverage(0.9, zero_debias=True, name="db")
                op2 = debiased.apply([l2])
            r["names"] = sorted(v.name for v in tf.global_variables())
            r["ops"] = [op.name, op2.name]
            r["averages"] = [ema.average(w).name, ema.average(l2).name, debiased.average(l2).name]
            saver = tf.train.Saver()
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(tf.assign(w, [3.0, 4.0]))
                sess.run([op, op2])
                r["values"] = sess.run([ema.average(w), ema.average(l2), debiased.average(l2)])
                r["values"] = [np.asarray(v).tolist() for v in r["values"]]
                path = saver.save(sess, os.path.join(d, "m"))
            tf.reset_default_graph()
            w2 = tf.get_variable("w", [2])
            restore = tf.train.ExponentialMovingAverage(0.5).variables_to_restore([w2])
            r["map"] = sorted((k, v.name) for k, v in restore.items())
            with tf.Session() as sess:
                tf.train.Saver(restore).restore(sess, path)
                r["restored"] = sess.run(w2).tolist()
            emit(r)
        '''))

    def test_moving_averages_of_variables(self):
        self.compare(MODEL + textwrap.dedent('''
            r = {}
            step = tf.train.get_or_create_global_step()
            opt = tf.train.GradientDescentOptimizer(0.1)
            train = opt.minimize(loss, global_step=step)
            ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
            with tf.control_dependencies([train]):
                train_and_average = ema.apply([w, b])
            ema2 = tf.train.ExponentialMovingAverage(0.5, name="slow")
            average2 = ema2.apply([w])
            r["names"] = [ema.average(w).name, ema.average(b).name, ema.average_name(w), ema2.average(w).name,
                          ema2.average_name(b), ema.name]
            r["op"] = [train_and_average.name, train_and_average.type]
            r["unknown"] = ema.average(step) is None
            r["collection"] = [v.name for v in tf.moving_average_variables()]
            r["collection_key"] = [v.name for v in tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES)]
            r["trainable"] = sorted(v.name for v in tf.trainable_variables())
            r["restore"] = sorted(ema.variables_to_restore().keys())
            r["restore_names"] = sorted((k, v.name) for k, v in ema.variables_to_restore([w]).items())
            r["int_refused"] = raised(lambda: ema.apply([step]), "must be half, float, or double")
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["start"] = sess.run(ema.average(w)).tolist()
                for i in range(6):
                    sess.run(train_and_average, {x: xs[i], y: ys[i]})
                    if i % 2:
                        sess.run(average2)
                r["w"] = sess.run(w).tolist()
                r["averages"] = [sess.run(ema.average(v)).tolist() for v in (w, b)] + [sess.run(ema2.average(w)).tolist()]
            emit(r)
        '''))

    def test_moving_averages_of_tensors(self):
        self.compare('''
            r = {}
            v = tf.placeholder(tf.float32, [2])
            loss = tf.reduce_sum(v, name="total_loss")
            scaled = tf.multiply(v, 2.0, name="scaled")
            plain = tf.train.ExponentialMovingAverage(0.9, name="avg")
            plain_op = plain.apply([loss, scaled])
            debiased = tf.train.ExponentialMovingAverage(0.8, zero_debias=True, name="debiased")
            debiased_op = debiased.apply([loss])
            r["names"] = [plain.average(loss).name, plain.average(scaled).name, debiased.average(loss).name]
            r["variables"] = sorted(x.name for x in tf.global_variables())
            r["trainable"] = [x.name for x in tf.trainable_variables()]
            r["collection"] = [x.name for x in tf.moving_average_variables()]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["start"] = sess.run(plain.average(loss)).tolist()
                seen = []
                for i, feed in enumerate([[1.0, 2.0], [3.0, 1.0], [-1.0, 0.5], [2.0, 2.0]]):
                    sess.run([plain_op, debiased_op], {v: feed})
                    seen.append([sess.run(plain.average(loss)).tolist(), sess.run(plain.average(scaled)).tolist(),
                                 sess.run(debiased.average(loss)).tolist()])
                r["seen"] = seen
            emit(r)
        ''')

    def test_evaluation_restores_the_averages(self):
        self.compare(MODEL + textwrap.dedent('''
            r = {}
            import tempfile, os
            d = tempfile.mkdtemp()
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
            ema = tf.train.ExponentialMovingAverage(0.7)
            with tf.control_dependencies([train]):
                step = ema.apply()
            saver = tf.train.Saver()
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for i in range(4):
                    sess.run(step, {x: xs[i], y: ys[i]})
                r["averages"] = [sess.run(ema.average(v)).tolist() for v in (w, b)]
                path = saver.save(sess, os.path.join(d, "model"))
            # An evaluation graph: the model alone, its variables read from the averages.
            tf.reset_default_graph()
            w2 = tf.get_variable("w", [3, 1])
            b2 = tf.get_variable("b", [1])
            restore = tf.train.ExponentialMovingAverage(0.7).variables_to_restore()
            r["map"] = sorted((k, v.name) for k, v in restore.items())
            with tf.Session() as sess:
                tf.train.Saver(restore).restore(sess, path)
                r["restored"] = [sess.run(v).tolist() for v in (w2, b2)]
            emit(r)
        '''))


if __name__ == "__main__":
    unittest.main()
