"""The seed's program, written out in full: a multi-tower TF1 training job
reading TFRecord files through queues.

Only the import line below differs from the TensorFlow 1.x program it was
written as: tests/python/seed_interop_test.py runs this same file with that
line replaced by TensorFlow's, and compares the two runs.

  towerflow convert seed-synthetic --out DATA --n-features 64
  python examples/python/seed.py --data DATA --towers 2 --steps 300

Each tower is placed on /cpu:<i> (or /gpu:<i> with --device gpu) under soft
placement and dequeues its own batch inside the tower loop, the seed's lesson.
The last line printed is a JSON object with the loss curve, the speed and
whether the towers saw distinct batches.
"""

import argparse
import json
import os
import time

import numpy as np

import towerflow.compat.v1 as tf


class SeedModel:
    def __init__(self, n_features, hidden):
        self.n_features = n_features
        self.hidden = hidden

    def get_input(self, data_path_list, batch_size):
        file_list = sorted(os.listdir(data_path_list))
        file_list = [data_path_list + '/' + i for i in file_list if i.endswith('.tfrecord')]
        with tf.variable_scope("tfrecords_input"):
            filename_queue = tf.train.string_input_producer(file_list)
            reader = tf.TFRecordReader()
            _, serialized_example = reader.read(filename_queue)
            # parse one example
            features = tf.parse_single_example(serialized_example, features={
                'x': tf.FixedLenFeature([], tf.string),
                'labels': tf.FixedLenFeature([], tf.string)})
            x = tf.reshape(tf.decode_raw(features['x'], tf.int32), [2, self.n_features])
            labels = tf.reshape(tf.decode_raw(features['labels'], tf.int32), [1, 2])
            return x, labels

    def interface(self, x):
        width = 2 * self.n_features
        h = tf.reshape(tf.cast(x, tf.float32), [-1, width]) / 15.0
        for i, units in enumerate(self.hidden + [2]):
            with tf.variable_scope('dense%d' % i):
                w = tf.get_variable('kernel', [width, units],
                                    initializer=tf.truncated_normal_initializer(stddev=1.0 / np.sqrt(width)))
                b = tf.get_variable('bias', [units], initializer=tf.zeros_initializer())
                h = tf.nn.bias_add(tf.matmul(h, w), b)
                if units != 2:
                    h = tf.nn.relu(h)
            width = units
        return h

    def compute_loss(self, logits, y_, reg=None):
        onehot = tf.reshape(tf.cast(y_, tf.float32), [-1, 2])
        xent = tf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=logits)
        loss = tf.reduce_mean(xent)
        if reg is not None:
            loss = loss + reg * tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()
                                          if 'kernel' in v.name])
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(onehot, 1)), tf.float32))
        return loss, accuracy


def average_gradients(tower_grads):
    """The mean of each variable's gradient over the towers."""
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grad_and_vars]
        grad = tf.reduce_mean(tf.concat(axis=0, values=grads), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


def train(args):
    model = SeedModel(args.n_features, [int(u) for u in args.hidden.split(',')])
    batch_size = args.batch_size
    num_gpus = args.towers
    min_after_dequeue = 1000
    capacity = min_after_dequeue + 4 * batch_size
    with tf.Graph().as_default():
        tf.set_random_seed(args.seed)
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.MomentumOptimizer(args.learning_rate, 0.9)
        x_, labels = model.get_input(args.data, batch_size)
        tower_grads, tower_losses, tower_acc, tower_x = [], [], [], []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(num_gpus):
                with tf.device('/%s:%d' % (args.device, i)):
                    with tf.name_scope('GPU_%d' % i) as scope:
                        train_data = tf.train.shuffle_batch([x_, labels],
                                                            batch_size=batch_size,
                                                            capacity=capacity,
                                                            min_after_dequeue=min_after_dequeue,
                                                            num_threads=3)
                        x = train_data[0]
                        y_ = train_data[-1]
                        interface_output = model.interface(x)
                        cur_loss, cur_acc = model.compute_loss(interface_output, y_, reg=None)
                        tf.get_variable_scope().reuse_variables()
                        grads = opt.compute_gradients(cur_loss)
                        tower_grads.append(grads)
                        tower_losses.append(cur_loss)
                        tower_acc.append(cur_acc)
                        tower_x.append(x)
        grads = average_gradients(tower_grads)
        train_op = opt.apply_gradients(grads, global_step=global_step)
        loss = tf.add_n(tower_losses) / float(num_gpus)
        accuracy = tf.add_n(tower_acc) / float(num_gpus)

        config = tf.ConfigProto(log_device_placement=args.log_device_placement,
                                allow_soft_placement=True,
                                device_count={'CPU': num_gpus if args.device == 'cpu' else 1})
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            losses = []
            distinct = True
            start = None
            try:
                for step in range(args.steps):
                    if step == args.warmup:
                        start = time.time()
                    if step % args.log_every == 0 or step == args.steps - 1:
                        # One run fetches every tower's batch with the step: the
                        # towers must have dequeued different examples.
                        _, l, a, xs = sess.run([train_op, loss, accuracy, tower_x])
                        distinct = distinct and all(not np.array_equal(xs[0], other) for other in xs[1:])
                        losses.append(float(l))
                        print('step %d loss %.4f accuracy %.3f' % (step, l, a), flush=True)
                    else:
                        sess.run(train_op)
                    if coord.should_stop():
                        break
                elapsed = time.time() - start if start is not None else float('nan')
            finally:
                coord.request_stop()
                coord.join(threads)
        measured = args.steps - args.warmup
        result = {
            'steps': args.steps,
            'towers': num_gpus,
            'batch_size': batch_size,
            'losses': losses,
            'first_loss': losses[0],
            'last_loss': losses[-1],
            'distinct_batches': bool(distinct),
            'examples_per_sec': measured * batch_size * num_gpus / elapsed if measured > 0 else None,
        }
        print(json.dumps(result), flush=True)
        return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--data', required=True, help='directory of the seed schema\'s .tfrecord files')
    p.add_argument('--n-features', type=int, default=64)
    p.add_argument('--hidden', default='256,256')
    p.add_argument('--towers', type=int, default=2)
    p.add_argument('--device', choices=['cpu', 'gpu'], default='cpu')
    p.add_argument('--batch-size', type=int, default=64)
    p.add_argument('--learning-rate', type=float, default=0.05)
    p.add_argument('--steps', type=int, default=300)
    p.add_argument('--warmup', type=int, default=20)
    p.add_argument('--log-every', type=int, default=50)
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--log-device-placement', action='store_true')
    train(p.parse_args())


if __name__ == '__main__':
    main()
