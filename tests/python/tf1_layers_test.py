"""tf.layers' classes (Dense, Conv2D, the poolings, Flatten, Dropout,
BatchNormalization, and a user's Layer subclass) under towerflow and under
TensorFlow's own TF1 layers (tf_keras, the peers' legacy Keras: the peers'
TensorFlow runs with TF_USE_LEGACY_KERAS=1 here), snippet by snippet: layer
names, scope names, variable and node names of a first and a second call (one
set of variables), trainable and non-trainable lists, regularization losses,
batch normalization's updates, and the values. Needs the peers' Python
(tf1_surface_test.py's fixtures)."""

import os
import unittest

import tf1_surface_test as surface


class TF1LayerClassesTest(surface.BothEngines, unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        # The TensorFlow snippets inherit it: tf.compat.v1.layers is tf_keras's.
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        surface.BothEngines.setUpClass.__func__(cls)

    def test_dense_objects_share_their_variables(self):
        self.compare('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 4], name="x")
            d = tf.layers.Dense(3, activation=tf.nn.relu,
                                kernel_initializer=tf.constant_initializer(np.arange(12.0).reshape(4, 3) / 10 - 0.5),
                                bias_initializer=tf.constant_initializer(0.25))
            r["before"] = [d.name, d.built, d.dtype, tf.layers.Dense(2, dtype=tf.float64).dtype]
            y = d(x)
            y2 = d.apply(x + 1.0)
            r["after"] = [d.name, d.scope_name, d.built, y.name, y2.name, d.kernel.name, d.bias.name, d.dtype]
            r["variables"] = [[v.name for v in d.variables], [v.name for v in d.trainable_variables],
                              [v.name for v in d.weights], [v.name for v in d.non_trainable_variables]]
            with tf.control_dependencies([y2]):
                d(x)
            r["control"] = [op.name for op in
                            tf.get_default_graph().get_operation_by_name("dense/MatMul_2").control_inputs]
            head = tf.layers.Dense(2, name="head", use_bias=False)
            z = head(y)
            r["head"] = [head.name, head.scope_name, z.name, head.bias is None, [v.name for v in head.variables]]
            again = tf.layers.Dense(2, name="head")
            r["head_again"] = [again.name, again(y).name, [v.name for v in again.variables]]
            with tf.variable_scope("tower"):
                t = tf.layers.Dense(2)
                w = t(x)
            w2 = t(x)
            r["tower"] = [t.name, t.scope_name, w.name, w2.name, [v.name for v in t.variables]]
            frozen = tf.layers.Dense(2, trainable=False)
            frozen(x)
            r["frozen"] = [[v.name for v in frozen.trainable_variables],
                           [v.name for v in frozen.non_trainable_variables]]
            r["all"] = [sorted(v.name for v in tf.global_variables()),
                        sorted(v.name for v in tf.trainable_variables())]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                feed = {x: np.arange(8.0).reshape(2, 4) / 8 - 0.3}
                r["values"] = sess.run([y, y2], feed)  # (head: random weights)
            emit(r)
        ''')

    def test_conv_pooling_flatten_dropout_objects(self):
        self.compare('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
            conv = tf.layers.Conv2D(3, 3, padding="same", activation=tf.nn.relu,
                                    kernel_initializer=tf.constant_initializer(
                                        np.linspace(-1, 1, 54).reshape(3, 3, 2, 3)))
            pool = tf.layers.MaxPooling2D(2, 2)
            avg = tf.layers.AveragePooling2D(2, 1, padding="same")
            flat = tf.layers.Flatten()
            drop = tf.layers.Dropout(0.5)
            h = conv(x)
            p = pool(h)
            a = avg(p)
            f = flat(a)
            kept = drop(f, training=False)
            training = tf.placeholder(tf.bool, [])
            maybe = drop(f, training=training)
            h2 = conv(x * 2.0)
            r["names"] = [conv.name, pool.name, avg.name, flat.name, drop.name, conv.scope_name, pool.scope_name,
                          h.name, p.name, a.name, f.name, kept.name, h2.name]
            r["variables"] = [v.name for v in conv.variables]
            r["shapes"] = [p.shape.as_list(), a.shape.as_list(), f.shape.as_list()]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                image = np.sin(np.arange(144.0)).reshape(2, 6, 6, 2)
                r["values"] = sess.run([f, kept, h2], {x: image})
                r["dropout_off"] = sess.run(maybe, {x: image, training: False}).tolist() == \\
                    sess.run(f, {x: image}).tolist()
            emit(r)
        ''')

    def test_batch_normalization_object(self):
        self.compare('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            bn = tf.layers.BatchNormalization(momentum=0.5)
            y = bn(x, training=True)
            r["names"] = [bn.name, bn.scope_name, [v.name for v in bn.variables],
                          [v.name for v in bn.trainable_variables], [v.name for v in bn.non_trainable_variables]]
            r["updates"] = [len(bn.updates), len(tf.get_collection(tf.GraphKeys.UPDATE_OPS))]
            inference = bn(x, training=False)
            r["updates_after_inference"] = len(bn.updates)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                batch = np.arange(12.0).reshape(4, 3) ** 1.5
                r["train"] = sess.run(y, {x: batch})
                sess.run(bn.updates, {x: batch})
                r["moving"] = sess.run([bn.moving_mean, bn.moving_variance])
                r["inference"] = sess.run(inference, {x: batch})
            emit(r)
        ''')

    def test_regularizers_and_a_layer_subclass(self):
        self.compare('''
            r = {}
            x = tf.placeholder(tf.float32, [None, 4], name="x")
            d = tf.layers.Dense(2, kernel_initializer=tf.ones_initializer(),
                                kernel_regularizer=lambda w: 0.5 * tf.reduce_sum(tf.square(w)))
            y = d(x)
            r["losses"] = [len(d.losses), len(tf.losses.get_regularization_losses())]

            class Scale(tf.layers.Layer):
                def build(self, input_shape):
                    self.w = self.add_weight("w", [int(input_shape[-1])], initializer=tf.constant_initializer(2.0))
                    super(Scale, self).build(input_shape)

                def call(self, inputs):
                    return inputs * self.w

            s = Scale()
            o = s(x)
            o2 = s(x + 1.0)
            r["subclass"] = [s.name, s.scope_name, s.built, o.name, o2.name, [v.name for v in s.variables],
                             [v.name for v in s.trainable_variables]]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                r["values"] = sess.run([tf.losses.get_regularization_losses()[0], o, o2],
                                       {x: np.arange(8.0).reshape(2, 4)})
            emit(r)
        ''')

    def test_batch_normalization_variance_and_names(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(3)
            cases = [([4, 3, 3, 2], -1), ([4, 3, 3, 2], 2), ([4, 3, 3, 2], 1), ([2, 3, 2, 2, 2], -1),
                     ([6, 3], -1)]
            updates, variances = [], []
            for shape, axis in cases:
                x = tf.constant(rng.randn(*shape).astype(np.float32))
                bn = tf.layers.BatchNormalization(axis=axis, momentum=0.0)
                bn(x, training=True)
                updates.append(bn.updates)
                variances.append(bn.moving_variance)
            # Names with a scope in them, and a scope given at the call.
            x = tf.placeholder(tf.float32, [None, 4])
            a, b = tf.layers.Dense(2, name="c/d"), tf.layers.Dense(2, name="c/d")
            r["slash"] = [a(x).name, b(x).name, [v.name for v in a.variables + b.variables],
                          tf.layers.max_pooling2d(tf.zeros([1, 4, 4, 1]), 2, 2, name="blk/pool").name,
                          tf.layers.Dense(2)(x, scope="myscope").name]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(updates)
                r["variances"] = [np.round(v, 4) for v in sess.run(variances)]
            emit(r)
        ''')

    def test_errors(self):
        self.compare('''
            r = {}
            ints = tf.placeholder(tf.int32, [None, 4])
            open_width = tf.placeholder(tf.float32, [None, None])
            flat = tf.placeholder(tf.float32, [None, 4])
            r["int input"] = raised(lambda: tf.layers.Dense(2)(ints), "floating-point dtype", "int32")
            r["unknown width"] = raised(lambda: tf.layers.Dense(2)(open_width), "should be defined")
            r["unknown keyword"] = raised(lambda: tf.layers.Dense(2, colour="red"), "not understood")
            r["conv of a matrix"] = raised(lambda: tf.layers.Conv2D(2, 3)(flat))
            r["unused scope name"] = raised(lambda: tf.layers.Dense(2).scope_name, "has not been used yet")
            r["count before build"] = raised(lambda: tf.layers.Dense(2).count_params(), "isn't built")
            r["bad rate"] = raised(lambda: tf.layers.Dropout(1.5), "between 0 and 1")

            class Mixed(tf.layers.Layer):
                def build(self, input_shape):
                    self.count = self.add_weight("count", [], initializer=tf.zeros_initializer(), trainable=False)
                    self.scale = self.add_weight("scale", [4], initializer=tf.ones_initializer())
                    self.add_loss(tf.reduce_sum(self.scale))

                def call(self, inputs):
                    return inputs * self.scale

            m = Mixed()
            m(flat)
            d = tf.layers.Dense(3)
            d(flat)
            r["weights"] = [[v.name for v in m.weights], m.count_params(), d.count_params(), len(m.losses),
                            len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES))]
            r["empty savers"] = [raised(lambda: tf.train.Saver(var_list=[]), "No variables to save"),
                                 tf.train.Saver(var_list=[], allow_empty=True).save(tf.Session(), PARAMS["tmp"] + "/x"),
                                 raised(lambda: tf.train.Saver(allow_empty=True).save(None, "x"), "must be a Session")]
            emit(r)
        ''')


if __name__ == "__main__":
    unittest.main()
