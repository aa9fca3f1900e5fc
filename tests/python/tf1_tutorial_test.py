"""The lines of TF1's tutorials and classic training scripts (MNIST softmax,
deep MNIST, CIFAR-10's towers and schedules): towerflow.compat.v1 against
TensorFlow's own, in the harness of tf1_surface_test.py (each snippet runs
under both engines and the JSON objects they print must be equal).

Run: python -m unittest -v tests/python/tf1_tutorial_test.py (or directly).
"""

import unittest

import tf1_surface_test as surface


class TF1TutorialTest(surface.BothEngines, unittest.TestCase):
    """Each test: one snippet, run under towerflow and under TensorFlow."""

    def test_mnist_softmax_with_variables_of_tensors(self):
        # mnist_softmax.py: W = tf.Variable(tf.zeros([784, 10])), trained on
        # fixed data; deep MNIST's tf.Variable(tf.truncated_normal(...)).
        self.compare('''
            r = {}
            rng = np.random.RandomState(0)
            xs = rng.rand(20, 784).astype(np.float32)
            ys = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 20)]
            x = tf.placeholder(tf.float32, [None, 784])
            W = tf.Variable(tf.zeros([784, 10]))
            b = tf.Variable(tf.zeros([10]))
            y = tf.matmul(x, W) + b
            y_ = tf.placeholder(tf.float32, [None, 10])
            cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
            train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
            correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
            accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
            w_conv = tf.Variable(tf.truncated_normal([5, 5, 1, 32], stddev=0.1))
            b_conv = tf.Variable(tf.constant(0.1, shape=[32]))
            scaled = tf.Variable(lambda: tf.ones([3]) * 2.0)
            r["variables"] = [[v.name, v.shape.as_list(), v.dtype.base_dtype.name]
                              for v in (W, b, w_conv, b_conv, scaled)]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                losses = []
                for _ in range(5):
                    losses.append(float(sess.run([train_step, cross_entropy], {x: xs, y_: ys})[1]))
                r["losses"] = losses
                r["accuracy"] = float(sess.run(accuracy, {x: xs, y_: ys}))
                r["b_conv"] = sess.run(b_conv)[:3].tolist()
                r["scaled"] = sess.run(scaled).tolist()
                wc = sess.run(w_conv)
                r["truncated"] = bool(np.abs(wc).max() <= 0.2 and wc.std() > 0.05)
            emit(r)
        ''')

    def test_get_variable_takes_a_tensor_or_a_numpy_scalar(self):
        self.compare('''
            r = {}
            a = tf.get_variable("a", initializer=tf.constant([1.0, 2.0]))
            b = tf.get_variable("b", initializer=np.float32(3.0))
            c = tf.get_variable("c", initializer=tf.constant([1, 2], tf.int64))
            r["made"] = [[v.name, v.shape.as_list(), v.dtype.base_dtype.name] for v in (a, b, c)]
            r["shape_given"] = raised(lambda: tf.get_variable("d", shape=[2], initializer=tf.constant([1.0, 2.0])))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["values"] = [sess.run(v).tolist() for v in (a, b, c)]
            emit(r)
        ''')

    def test_dropout_with_a_keep_prob_placeholder(self):
        # Deep MNIST: keep_prob fed 0.5 for training, 1.0 for evaluation.
        self.compare('''
            r = {}
            x = tf.constant(np.arange(1, 2001, dtype=np.float32).reshape(40, 50))
            keep_prob = tf.placeholder(tf.float32)
            h = tf.nn.dropout(x, keep_prob)
            r["shape"] = h.shape.as_list()
            g = tf.gradients(tf.reduce_sum(h), x)[0]
            with tf.Session() as sess:
                r["eval_is_identity"] = bool((sess.run(h, {keep_prob: 1.0}) == sess.run(x)).all())
                out, grad = sess.run([h, g], {keep_prob: 0.5})
                kept = out != 0
                r["kept_about_half"] = bool(0.4 < kept.mean() < 0.6)
                r["scaled_by_two"] = bool(np.allclose(out[kept], 2 * sess.run(x)[kept]))
                r["gradient_follows_mask"] = bool(((grad != 0) == kept).all())
            emit(r)
        ''')

    def test_cross_entropy_v2_differentiates_the_labels_and_takes_sequences(self):
        self.compare('''
            r = {}
            logits = tf.constant([[1.0, 2.0, 0.5], [0.1, -1.0, 2.0]])
            labels = tf.constant([[0.2, 0.7, 0.1], [0.0, 0.0, 1.0]])
            loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
            v1 = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            g2 = tf.gradients(tf.reduce_sum(loss), [logits, labels])
            g1 = tf.gradients(tf.reduce_sum(v1), [logits, labels])
            seq = tf.constant(np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4))
            seq_labels = tf.constant([[0, 1, 2], [3, 2, 1]])
            sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=seq_labels, logits=seq)
            dense = tf.nn.softmax_cross_entropy_with_logits(labels=tf.one_hot(seq_labels, 4) if hasattr(tf, "one_hot")
                                                            else tf.constant(np.eye(4, dtype=np.float32)[[[0, 1, 2], [3, 2, 1]]]),
                                                            logits=seq)
            r["static"] = [sparse.shape.as_list(), dense.shape.as_list()]
            int_labels = tf.nn.softmax_cross_entropy_with_logits(labels=tf.constant([[0, 1, 0]]),
                                                                 logits=tf.constant([[1.0, 2.0, 0.5]]))
            with tf.Session() as sess:
                r["loss"] = sess.run(loss).tolist()
                r["v1_equals_v2"] = np.allclose(sess.run(v1), sess.run(loss))
                r["grads_v2"] = [t.tolist() for t in sess.run(g2)]
                r["grads_v1_labels"] = g1[1] is None
                r["sequence"] = [sess.run(sparse).tolist(), sess.run(dense).tolist()]
                r["int_labels"] = sess.run(int_labels).tolist()
            emit(r)
        ''')

    def test_comparisons_minimum_abs_powers_and_clipping(self):
        self.compare('''
            r = {}
            c = tf.constant([-2.0, -1.0, 0.5, 3.0])
            n = tf.constant([3, -1, 0, 2])
            ops = {"gt": c > 0, "lt": c < 0, "le": c <= 0.5, "ge": c >= -1.0, "abs": abs(c),
                   "minimum": tf.minimum(c, 0.0), "cube": c ** 3, "pow2": tf.pow(c, 2), "inv": tf.pow(c, -1),
                   "min": tf.reduce_min(c), "min_axis": tf.reduce_min(tf.reshape(c, [2, 2]), axis=1),
                   "clip": tf.clip_by_value(c, -1.0, 1.0), "less": tf.less(n, 1), "greater": tf.greater(n, 0),
                   "not_equal": tf.not_equal(n, 0), "logical_not": tf.logical_not(tf.greater(n, 0)),
                   "abs_int": tf.abs(n), "min_int": tf.minimum(n, 1)}
            clipped, norm = tf.clip_by_global_norm([c, None, c * 2], 1.0)
            by_norm = tf.clip_by_norm(c, 1.0)
            grads = tf.gradients(tf.reduce_sum(abs(c) + tf.minimum(c, 0.0) + c ** 3), c)[0]
            nan = tf.constant([float("nan"), 1.0, -1.0])
            ops.update({"nan_gt": nan > 0, "nan_lt": nan < 0, "nan_ge": nan >= 0, "nan_le": nan <= 0,
                        "nan_ne": tf.not_equal(nan, nan)})
            zero = tf.constant([0.0, 0.0])
            abs_grad_at_zero = tf.gradients(tf.reduce_sum(tf.abs(zero)), zero)[0]
            inf_clip, inf_norm = tf.clip_by_global_norm([tf.constant([1.0, 2.0]), tf.constant([float("inf"), 0.0])], 1.0)
            with tf.Session() as sess:
                r["ops"] = {k: sess.run(v).tolist() for k, v in ops.items()}
                r["clip_global"] = [None if t is None else sess.run(t).tolist() for t in clipped]
                r["global_norm"] = float(sess.run(norm))
                r["clip_norm"] = sess.run(by_norm).tolist()
                r["grads"] = sess.run(grads).tolist()
                r["abs_grad_at_zero"] = sess.run(abs_grad_at_zero).tolist()
                r["inf_clip"] = [str(v) for t in inf_clip for v in sess.run(t).tolist()]
            emit(r)
        ''')

    def test_shapes_set_and_multiplied(self):
        # The flatten idiom (dims multiplied), set_shape on a placeholder that
        # a tensor built before reads, a non-tensor feed key.
        self.compare('''
            r = {}
            pool = tf.zeros([2, 3, 4, 5])
            shp = pool.get_shape()
            dim = shp[1] * shp[2] * shp[3]
            flat = tf.reshape(pool, [-1, dim])
            r["dims"] = [str(dim), str(np.prod(shp[1:])), str(shp[0] + 1), str(shp[1] - 1), shp[1] < shp[2]]
            r["flat"] = flat.shape.as_list()
            x = tf.placeholder(tf.float32)
            early = x * 2
            x.set_shape([None, 3])
            later = x + 1
            r["names"] = [x.name, x.op.type, x.shape.as_list(), later.shape.as_list()]
            with tf.Session() as sess:
                r["fed"] = [sess.run(early, {x: np.ones([2, 3])}).tolist(), sess.run(later, {x: np.ones([1, 3])}).tolist()]
                r["bad_key"] = raised(lambda: sess.run(early, {5: 1.0}))
            emit(r)
        ''')

    def test_negative_indices_into_unknown_dimensions(self):
        # An RNN's last output: outputs[:, -1] of [batch, time, units].
        self.compare('''
            r = {}
            p = tf.placeholder(tf.float32, [None, None, 4])
            outs = {"last": p[:, -1], "last_two": p[:, -2:], "last_batch": p[-1], "inner": p[:, 1:-1],
                    "mixed": p[:, :-1, 2], "empty": p[:, 4:-2], "past_start": p[:, -9:], "none_left": p[:, :-9]}
            v = np.arange(40, dtype=np.float32).reshape(2, 5, 4)
            r["shapes"] = {k: t.shape.as_list() for k, t in outs.items()}
            # Shape lists holding tensors keep their known dims.
            n = tf.shape(p)[0]
            r["built"] = [tf.zeros([n, 4]).shape.as_list(), tf.reshape(p, [n, -1]).shape.as_list(),
                          tf.reshape(p, [tf.shape(p)[0], tf.shape(p)[1] * 4]).shape.as_list()]
            with tf.Session() as sess:
                r["values"] = {k: sess.run(t, {p: v}).tolist() for k, t in outs.items()}
            emit(r)
        ''')

    def test_schedules_and_checkpoint_state(self):
        self.compare('''
            r = {}
            step = tf.placeholder(tf.int64, [])
            lr = tf.train.exponential_decay(0.1, step, 100, 0.96)
            stair = tf.train.exponential_decay(0.1, step, 100, 0.96, staircase=True)
            pw = tf.train.piecewise_constant(step, [10, 20], [1.0, 0.5, 0.1])
            w = tf.get_variable("w", initializer=np.float32(1.0))
            saver = tf.train.Saver(max_to_keep=2)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["lr"] = [float(sess.run(lr, {step: s})) for s in (0, 50, 250)]
                r["stair"] = [float(sess.run(stair, {step: s})) for s in (0, 99, 100, 250)]
                r["piecewise"] = [float(sess.run(pw, {step: s})) for s in (0, 10, 11, 20, 21)]
                r["none"] = tf.train.get_checkpoint_state(PARAMS["tmp"]) is None
                for s in (1, 2, 3):
                    saver.save(sess, os.path.join(PARAMS["tmp"], "model.ckpt"), global_step=s)
            state = tf.train.get_checkpoint_state(PARAMS["tmp"])
            r["state"] = [os.path.basename(state.model_checkpoint_path),
                          [os.path.basename(p) for p in state.all_model_checkpoint_paths]]
            emit(r)
        ''')

    def test_fine_tuning_restores_a_checkpoint_under_other_names(self):
        self.compare('''
            r = {}
            path = os.path.join(PARAMS["tmp"], "pretrained.ckpt")
            with tf.Graph().as_default():
                w = tf.get_variable("w", initializer=np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
                b = tf.get_variable("b", initializer=np.array([0.5, -0.5], np.float32))
                with tf.Session() as sess:
                    sess.run(tf.global_variables_initializer())
                    tf.train.Saver().save(sess, path)
            with tf.Graph().as_default():
                with tf.variable_scope("finetune"):
                    kernel = tf.get_variable("kernel", shape=[2, 2], initializer=tf.zeros_initializer())
                    bias = tf.get_variable("bias", shape=[2], initializer=tf.zeros_initializer())
                saver = tf.train.Saver({"w": kernel, "b": bias})
                with tf.Session() as sess:
                    sess.run(tf.global_variables_initializer())
                    saver.restore(sess, path)
                    r["restored"] = [sess.run(kernel).tolist(), sess.run(bias).tolist()]
            emit(r)
        ''')

    def test_script_plumbing_flags_logging_gfile(self):
        self.compare('''
            r = {}
            tf.app.flags.DEFINE_integer("batch_size", 128, "Batch size.")
            tf.app.flags.DEFINE_string("train_dir", "/tmp/train", "Where to write.")
            tf.app.flags.DEFINE_boolean("log_device_placement", False, "Log placement.")
            tf.app.flags.DEFINE_float("lr", 0.1, "Learning rate.")
            FLAGS = tf.app.flags.FLAGS
            rest = FLAGS(["prog", "--batch_size=64", "--train_dir", "/data", "--log_device_placement", "extra"])
            r["flags"] = [FLAGS.batch_size, FLAGS.train_dir, FLAGS.log_device_placement, FLAGS.lr, rest]
            tf.logging.set_verbosity(tf.logging.INFO)
            tf.logging.info("step %d", 1)
            d = os.path.join(PARAMS["tmp"], "a", "b")
            tf.gfile.MakeDirs(d)
            with tf.gfile.GFile(os.path.join(d, "f.txt"), "w") as f:
                f.write("hello")
            r["gfile"] = [tf.gfile.Exists(d), tf.gfile.IsDirectory(d), tf.gfile.ListDirectory(d),
                          [os.path.basename(p) for p in tf.gfile.Glob(os.path.join(d, "*.txt"))],
                          tf.gfile.GFile(os.path.join(d, "f.txt")).read()]
            tf.gfile.DeleteRecursively(os.path.join(PARAMS["tmp"], "a"))
            r["deleted"] = tf.gfile.Exists(d)
            emit(r)
        ''')


if __name__ == "__main__":
    unittest.main()
