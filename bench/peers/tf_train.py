"""TensorFlow's side of bench/run's training cases: examples/s of one model at
batch 100 per tower, momentum SGD (lr 0.01, 0.9), over --steps steps after
--warmup untimed ones, on the TFRecord files `towerflow train` reads.

Models (towerflow's, src/towerflow/cli/models.cc):
  mlp   784-256-256-10, ReLU, on the Fashion-MNIST schema (pixels / 255)
  cnn   conv 5x5x32 SAME + ReLU, max-pool 2x2, conv 5x5x64 + ReLU, max-pool,
        dense 1024 ReLU, dropout 0.4, dense 10
  seed  the seed's MLP 2F-64-64-2 on int32 [2, F] rows / 15, softmax
        cross-entropy on the one-hot [1, 2] labels (SEED.md)
--api queue   the seed's tf.compat.v1 program (eager disabled): string_input_producer
              -> TFRecordReader -> parse_single_example -> decode_raw -> shuffle_batch
              (capacity min_after_dequeue + 3 x batch), inside the tower loop as the
              seed builds it (each tower its own queue); towers on /cpu:0../cpu:N-1
              (device_count), variables on /cpu:0, gradients averaged;
              tf.compat.v1 variables and tf.nn ops; MomentumOptimizer. A session
              with T inter-op and T intra-op threads.
--api keras   Keras fit on tf.data: TFRecordDataset -> map(parse, AUTOTUNE) ->
              shuffle(min_after_dequeue) -> batch -> prefetch(AUTOTUNE), a
              keras.Sequential of the same layers, SGD(momentum=0.9), compile()'s
              defaults; tf.config.threading inter/intra-op T, tf.data private pool T.
              The timing starts at the first batch after the warm-up (a callback).
Prints one JSON line: examples_per_sec, seconds, steps, ...

Usage: tf_train.py --data GLOB --model mlp|cnn|seed --api queue|keras --threads T
                   [--towers N] [--steps S] [--warmup W] [--input-threads I]
                   [--min-after-dequeue M]
"""
import argparse
import glob
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1


def parse(model, serialized, n_features):
    """One serialized Example -> (input, label), as the seed parses it."""
    if model == "seed":
        p = tf.io.parse_single_example(serialized, {"x": tf.io.FixedLenFeature([], tf.string),
                                                    "labels": tf.io.FixedLenFeature([], tf.string)})
        return (tf.reshape(tf.io.decode_raw(p["x"], tf.int32), [2, n_features]),
                tf.reshape(tf.io.decode_raw(p["labels"], tf.int32), [1, 2]))
    p = tf.io.parse_single_example(serialized, {"image": tf.io.FixedLenFeature([], tf.string),
                                                "label": tf.io.FixedLenFeature([], tf.int64)})
    image = tf.cast(tf.io.decode_raw(p["image"], tf.uint8), tf.float32) * (1.0 / 255.0)
    shape = [28, 28, 1] if model == "cnn" else [784]
    return tf.reshape(image, shape), tf.cast(p["label"], tf.int32)


def seed_features(files):
    """F of the seed schema: x holds int32 [2, F]."""
    record = next(iter(tf1.io.tf_record_iterator(files[0])))
    x = tf.train.Example.FromString(record).features.feature["x"].bytes_list.value[0]
    return len(x) // 8


def dense(x, name, fan_in, units, relu):
    with tf1.variable_scope(name):
        w = tf1.get_variable("kernel", [fan_in, units], initializer=tf1.glorot_uniform_initializer())
        b = tf1.get_variable("bias", [units], initializer=tf1.zeros_initializer())
    y = tf.nn.bias_add(tf.matmul(x, w), b)
    return tf.nn.relu(y) if relu else y


def conv(x, name, channels, filters):
    with tf1.variable_scope(name):
        w = tf1.get_variable("kernel", [5, 5, channels, filters], initializer=tf1.glorot_uniform_initializer())
        b = tf1.get_variable("bias", [filters], initializer=tf1.zeros_initializer())
    return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b))


def loss_of(model, x, y, n_features):
    """The mean cross-entropy of one tower's batch (the seed's interface + loss)."""
    if model == "cnn":
        h = tf.nn.max_pool2d(conv(x, "conv1", 1, 32), 2, 2, "SAME")
        h = tf.nn.max_pool2d(conv(h, "conv2", 32, 64), 2, 2, "SAME")
        h = dense(tf.reshape(h, [-1, 7 * 7 * 64]), "dense", 7 * 7 * 64, 1024, True)
        logits = dense(tf.nn.dropout(h, rate=0.4), "logits", 1024, 10, False)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    if model == "mlp":
        h, widths, classes = x, [784, 256, 256], 10
    else:
        h = tf.reshape(tf.cast(x, tf.float32), [-1, 2 * n_features]) / 15.0
        widths, classes = [2 * n_features, 64, 64], 2
    for i in range(1, len(widths)):
        h = dense(h, "hidden%d" % i, widths[i - 1], widths[i], True)
    logits = dense(h, "logits", widths[-1], classes, False)
    if model == "mlp":
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    onehot = tf.reshape(tf.cast(y, tf.float32), [-1, 2])
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=logits))


def run_queue(args, files, n_features):
    tf1.disable_eager_execution()
    with tf.Graph().as_default():
        with tf.device("/cpu:0"), tf1.variable_scope("tfrecords_input"):
            filename_queue = tf1.train.string_input_producer(files)
            _, serialized = tf1.TFRecordReader().read(filename_queue)
            x_, y_ = parse(args.model, serialized, n_features)
        opt = tf1.train.MomentumOptimizer(0.01, 0.9)
        tower_grads, losses = [], []
        for i in range(args.towers):
            with tf.device("/cpu:%d" % i), tf.name_scope("tower_%d" % i):
                x, y = tf1.train.shuffle_batch([x_, y_], batch_size=args.batch_size,
                                               capacity=args.min_after_dequeue + 3 * args.batch_size,
                                               min_after_dequeue=args.min_after_dequeue,
                                               num_threads=args.input_threads)
                with tf1.variable_scope("model", reuse=i > 0):
                    loss = loss_of(args.model, x, y, n_features)
                losses.append(loss)
                tower_grads.append(opt.compute_gradients(loss))
        with tf.device("/cpu:0"):
            if args.towers == 1:
                grads = tower_grads[0]
            else:
                grads = [(tf.add_n([g for g, _ in gv]) / args.towers, gv[0][1]) for gv in zip(*tower_grads)]
            train_op = opt.apply_gradients(grads)
            loss = tf.add_n(losses) / args.towers
        config = tf1.ConfigProto(intra_op_parallelism_threads=args.threads,
                                 inter_op_parallelism_threads=args.threads,
                                 device_count={"CPU": args.towers})
        with tf1.Session(config=config) as sess:
            sess.run([tf1.global_variables_initializer(), tf1.local_variables_initializer()])
            coord = tf1.train.Coordinator()
            threads = tf1.train.start_queue_runners(sess, coord)
            for _ in range(args.warmup):
                sess.run([train_op, loss])
            start = time.perf_counter()
            for _ in range(args.steps):
                _, value = sess.run([train_op, loss])
            seconds = time.perf_counter() - start
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    return seconds, value, {"input_threads": args.input_threads, "min_after_dequeue": args.min_after_dequeue}


class StartTimer(tf.keras.callbacks.Callback):
    def __init__(self, warmup):
        super().__init__()
        self.warmup, self.start = warmup, None

    def on_train_batch_begin(self, batch, logs=None):
        if batch == self.warmup:
            self.start = time.perf_counter()


def run_keras(args, files):
    keras, layers = tf.keras, tf.keras.layers
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    options = tf.data.Options()
    options.threading.private_threadpool_size = args.threads
    ds = (tf.data.TFRecordDataset(files).repeat()
          .map(lambda s: parse(args.model, s, 0), num_parallel_calls=tf.data.AUTOTUNE)
          .shuffle(args.min_after_dequeue).batch(args.batch_size).prefetch(tf.data.AUTOTUNE).with_options(options))
    if args.model == "mlp":
        model = keras.Sequential([keras.Input((784,)), layers.Dense(256, activation="relu"),
                                  layers.Dense(256, activation="relu"), layers.Dense(10)])
    else:
        model = keras.Sequential([
            keras.Input((28, 28, 1)), layers.Conv2D(32, 5, padding="same", activation="relu"),
            layers.MaxPooling2D(2), layers.Conv2D(64, 5, padding="same", activation="relu"),
            layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(1024, activation="relu"),
            layers.Dropout(0.4), layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    timer = StartTimer(args.warmup)
    history = model.fit(ds, epochs=1, steps_per_epoch=args.warmup + args.steps, verbose=0, shuffle=False,
                        callbacks=[timer])
    return time.perf_counter() - timer.start, history.history["loss"][-1], {"jit_compile": bool(model.jit_compile)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="glob of the training TFRecord files")
    parser.add_argument("--model", choices=("mlp", "cnn", "seed"), required=True)
    parser.add_argument("--api", choices=("queue", "keras"), required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--towers", type=int, default=1)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--input-threads", type=int, default=1)
    parser.add_argument("--min-after-dequeue", type=int, default=5000)
    args = parser.parse_args()
    tf.get_logger().setLevel("ERROR")
    files = sorted(glob.glob(args.data))
    if not files:
        parser.error("--data %s matches no files" % args.data)
    if args.api == "keras" and (args.model == "seed" or args.towers != 1):
        parser.error("--api keras runs mlp and cnn on one tower")
    n_features = seed_features(files) if args.model == "seed" else 0
    seconds, loss, extra = run_queue(args, files, n_features) if args.api == "queue" else run_keras(args, files)
    print(json.dumps(extra | {
        "framework": "tensorflow", "version": tf.__version__, "api": args.api, "model": args.model,
        "threads": args.threads, "towers": args.towers, "batch_size": args.batch_size, "warmup_steps": args.warmup,
        "steps": args.steps, "seconds": seconds, "final_loss": float(loss),
        "examples_per_sec": args.steps * args.batch_size * args.towers / seconds}), flush=True)


if __name__ == "__main__":
    main()
