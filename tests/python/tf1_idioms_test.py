"""Idioms of ported TF1 scripts, towerflow.compat.v1 against TensorFlow's own
(the harness of tf1_surface_test.py: each snippet runs under both engines and
the JSON objects they print must be equal).

Each case is a line that TF1 training scripts write as a matter of course: a
runner list dropped, a step fetched by sess.run handed to Saver.save, a shape
list holding a tensor, a slice past a dimension's end.

Run: python -m unittest -v tests/python/tf1_idioms_test.py (or directly).
"""

import unittest

import tf1_surface_test as surface


class TF1IdiomsTest(surface.BothEngines, unittest.TestCase):
    """Each test: one snippet, run under towerflow and under TensorFlow."""

    def test_queue_runners_run_when_their_list_is_dropped(self):
        # TF's runner threads are daemons: the list tf.train.start_queue_runners
        # returns is usually dropped.
        self.compare('''
            r = {}
            files = tf.train.string_input_producer([PARAMS["records"]], shuffle=False)
            _, serialized = tf.TFRecordReader().read(files)
            feats = tf.parse_single_example(serialized, {"label": tf.FixedLenFeature([], tf.int64)})
            labels = tf.train.batch([feats["label"]], batch_size=3)
            with tf.Session() as sess:
                sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
                tf.train.start_queue_runners(sess=sess)
                r["labels"] = [sess.run(labels) for _ in range(4)]
            emit(r)
        ''')

    def test_a_caught_construction_error_leaves_the_graph_usable(self):
        # A script probing for a variable (get_variable in a try) goes on to
        # build and train the graph.
        self.compare('''
            r = {}
            w = tf.get_variable("w", initializer=np.array([1.0, 2.0], np.float32))
            try:
                tf.get_variable("w", shape=[2])
                r["raised"] = None
            except ValueError as e:
                r["raised"] = "already exists" in str(e)
            r["reshape"] = raised(lambda: tf.reshape(tf.constant([1.0, 2.0, 3.0]), [2]))
            loss = tf.reduce_sum(w * w)
            train = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
            grad = tf.gradients(loss, [w])[0]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["grad"] = sess.run(grad).tolist()
                sess.run(train)
                r["w"] = sess.run(w).tolist()
            emit(r)
        ''')

    def test_saver_takes_a_step_fetched_by_run(self):
        self.compare('''
            r = {}
            w = tf.get_variable("w", initializer=np.array([1.0, 2.0], np.float32))
            gs = tf.train.get_or_create_global_step()
            inc = tf.assign_add(gs, 1)
            saver = tf.train.Saver()
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(inc)
                step = sess.run(inc)
                r["step_type"] = type(step).__name__
                path = saver.save(sess, os.path.join(PARAMS["tmp"], "model.ckpt"), global_step=step)
                r["saved"] = os.path.basename(path)
                r["latest"] = os.path.basename(tf.train.latest_checkpoint(PARAMS["tmp"]))
            emit(r)
        ''')

    def test_a_global_step_made_by_hand_is_the_global_step(self):
        self.compare('''
            r = {}
            gs = tf.Variable(0, name="global_step", trainable=False, dtype=tf.int64)
            w = tf.get_variable("w", initializer=np.array([1.0, 2.0], np.float32))
            found = tf.train.get_or_create_global_step()
            r["found"] = [found.name, found.dtype.base_dtype.name, tf.train.get_global_step().name]
            train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w * w), global_step=found)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(train)
                sess.run(train)
                r["steps"] = [sess.run(gs), sess.run(found)]
            emit(r)
        ''')

    def test_fetch_structures_of_every_kind(self):
        self.compare('''
            import collections
            r = {}
            a, b = tf.constant(1.0), tf.constant([2, 3])
            d = collections.defaultdict(list, {"a": a, "b": [b, a]})
            o = collections.OrderedDict([("b", b), ("a", a)])
            with tf.Session() as sess:
                got_d, got_o = sess.run([d, o])
            r["defaultdict"] = [type(got_d).__name__, got_d.default_factory.__name__, sorted(got_d.items())]
            r["ordered"] = [type(got_o).__name__, list(got_o.items())]
            emit(r)
        ''')

    def test_shape_lists_holding_tensors(self):
        self.compare('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 2, 3])
            n = tf.shape(x)[0]
            flat = tf.reshape(x, [n, -1])
            zeros = tf.zeros([n, 4])
            ones = tf.ones([2, tf.shape(x)[1]], tf.int32)
            filled = tf.fill([n, 2], 7.0)
            r["dtypes"] = [t.dtype.name for t in (flat, zeros, ones, filled)]
            with tf.Session() as sess:
                feed = {x: np.arange(24, dtype=np.float32).reshape(4, 2, 3)}
                r["values"] = sess.run([flat, zeros, ones, filled], feed)
            emit(r)
        ''')

    def test_unstack_of_an_unknown_dimension_takes_num(self):
        self.compare('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 2])
            rows = tf.unstack(x, num=3)
            r["count"] = len(rows)
            r["no_num"] = raised(lambda: tf.unstack(x))
            with tf.Session() as sess:
                r["rows"] = sess.run(rows, {x: np.arange(6, dtype=np.float32).reshape(3, 2)})
            emit(r)
        ''')

    def test_slices_clamp_as_python_does(self):
        self.compare('''
            r = {}
            v = tf.constant(np.arange(10, dtype=np.float32))
            m = tf.constant(np.arange(12, dtype=np.int32).reshape(3, 4))
            cases = {"past_end": v[:100], "empty": v[3:2], "from_past_end": v[20:], "negative_past": v[-100:2],
                     "rows": m[1:10], "cols": m[:, 2:9], "none": m[2:1, :]}
            r["shapes"] = {k: shape(t) for k, t in cases.items()}
            with tf.Session() as sess:
                r["values"] = sess.run(cases)
            emit(r)
        ''')


if __name__ == "__main__":
    unittest.main()
