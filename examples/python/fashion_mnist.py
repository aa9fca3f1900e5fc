"""Fashion-MNIST in TF1's style on towerflow: TFRecord shards read through a
filename queue, parsed and batched by queue runners, an MLP trained over
towers (one per virtual CPU device, or GPU), then evaluated on the test set
until the queue reports the end of its one epoch (OutOfRangeError).

  towerflow convert fashion-mnist --out DATA
  python examples/python/fashion_mnist.py --data DATA --towers 2 --epochs 1

The last line printed is a JSON object: the loss curve, test accuracy,
examples evaluated and training speed.
"""

import argparse
import glob
import json
import time

import towerflow.compat.v1 as tf


def read_examples(files, num_epochs, shuffle):
    queue = tf.train.string_input_producer(files, num_epochs=num_epochs, shuffle=shuffle)
    _, serialized = tf.TFRecordReader().read(queue)
    features = tf.parse_single_example(serialized, features={
        'image': tf.FixedLenFeature([], tf.string),
        'label': tf.FixedLenFeature([], tf.int64)})
    image = tf.cast(tf.decode_raw(features['image'], tf.uint8), tf.float32) / 255.0
    image = tf.reshape(image, [784])
    return image, features['label']


def mlp(images, hidden):
    h, width = images, 784
    for i, units in enumerate(hidden + [10]):
        with tf.variable_scope('layer%d' % i):
            w = tf.get_variable('kernel', [width, units], initializer=tf.glorot_uniform_initializer())
            b = tf.get_variable('bias', [units], initializer=tf.zeros_initializer())
            h = tf.nn.bias_add(tf.matmul(h, w), b)
            if units != 10:
                h = tf.nn.relu(h)
        width = units
    return h


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--data', required=True, help='directory of train-*.tfrecord and test-*.tfrecord')
    p.add_argument('--towers', type=int, default=2)
    p.add_argument('--device', choices=['cpu', 'gpu'], default='cpu')
    p.add_argument('--hidden', default='256,256')
    p.add_argument('--batch-size', type=int, default=64)
    p.add_argument('--learning-rate', type=float, default=0.05)
    p.add_argument('--epochs', type=float, default=1.0)
    p.add_argument('--train-examples', type=int, default=60000)
    p.add_argument('--log-every', type=int, default=100)
    args = p.parse_args()
    hidden = [int(u) for u in args.hidden.split(',')]
    train_files = sorted(glob.glob(args.data + '/train-*.tfrecord'))
    test_files = sorted(glob.glob(args.data + '/test-*.tfrecord'))
    if not train_files or not test_files:
        raise SystemExit('no train-*/test-*.tfrecord files in %s (towerflow convert fashion-mnist)' % args.data)

    tf.set_random_seed(1)
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.MomentumOptimizer(args.learning_rate, 0.9)
    image, label = read_examples(train_files, None, True)
    tower_grads, tower_losses = [], []
    with tf.variable_scope(tf.get_variable_scope()):
        for i in range(args.towers):
            with tf.device('/%s:%d' % (args.device, i)), tf.name_scope('tower_%d' % i):
                images, labels = tf.train.shuffle_batch([image, label], batch_size=args.batch_size,
                                                        capacity=4000 + 4 * args.batch_size,
                                                        min_after_dequeue=4000, num_threads=2)
                logits = mlp(images, hidden)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
                tf.get_variable_scope().reuse_variables()
                tower_grads.append(opt.compute_gradients(loss))
                tower_losses.append(loss)
    grads = []
    for grad_and_vars in zip(*tower_grads):
        grads.append((tf.add_n([g for g, _ in grad_and_vars]) / float(args.towers), grad_and_vars[0][1]))
    train_op = opt.apply_gradients(grads, global_step=global_step)
    mean_loss = tf.add_n(tower_losses) / float(args.towers)

    # Evaluation: one pass over the test files, in order, ending in OutOfRangeError.
    with tf.name_scope('eval'):
        test_image, test_label = read_examples(test_files, 1, False)
        test_images, test_labels = tf.train.batch([test_image, test_label], batch_size=500,
                                                  allow_smaller_final_batch=True)
        with tf.variable_scope(tf.get_variable_scope(), reuse=True):
            test_logits = mlp(test_images, hidden)
        correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(test_logits, 1), test_labels), tf.float32))
        count = tf.shape(test_labels)[0]

    config = tf.ConfigProto(allow_soft_placement=True,
                            device_count={'CPU': args.towers if args.device == 'cpu' else 1})
    steps = int(args.epochs * args.train_examples / (args.batch_size * args.towers))
    with tf.Session(config=config) as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        losses = []
        start = time.time()
        for step in range(steps):
            if step % args.log_every == 0 or step == steps - 1:
                _, l = sess.run([train_op, mean_loss])
                losses.append(float(l))
                print('step %d loss %.4f' % (step, l), flush=True)
            else:
                sess.run(train_op)
        elapsed = time.time() - start
        right, seen = 0.0, 0
        try:
            while True:
                c, n = sess.run([correct, count])
                right += c
                seen += int(n)
        except tf.errors.OutOfRangeError:
            pass  # the test files' one epoch is over
        coord.request_stop()
        coord.join(threads)
    print(json.dumps({'steps': steps, 'towers': args.towers, 'losses': losses, 'test_examples': seen,
                      'test_accuracy': float(right) / max(seen, 1),
                      'examples_per_sec': steps * args.batch_size * args.towers / elapsed}), flush=True)


if __name__ == '__main__':
    main()
