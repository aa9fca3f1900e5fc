#!/usr/bin/env python3
"""Benchmarks of towerflow's Python package (figures, not tests):

1. The seed's program (examples/python/seed.py) under towerflow.compat.v1 and,
   with only its import changed, under TensorFlow's tensorflow.compat.v1: the
   same two towers, batch, threads and data; examples/s, median of --runs.
2. Python's overhead: one graph (an MLP training step fed by a cached dataset)
   run N steps by a Python loop of Session.run and by a C++ loop of the same
   session (Session.run_steps), interleaved; the ratio is what Python costs.

Run with the peers' venv python after scripts/python:
  .venv/bin/python bench/python_bench.py --data build/data/seed-f64 [--runs 3]
Prints markdown tables (docs/benchmarks.md).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = os.path.join(HERE, "..", "examples", "python", "seed.py")
TW_IMPORT = "import towerflow.compat.v1 as tf"
TF_IMPORT = "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()"


def seed_rates(args):
    with open(SEED) as f:
        source = f.read()
    tmp = tempfile.mkdtemp(prefix="tw_bench_")
    tf_seed = os.path.join(tmp, "seed_tf.py")
    with open(tf_seed, "w") as f:
        f.write(source.replace("\n" + TW_IMPORT + "\n", "\n" + TF_IMPORT + "\n"))
    rates = {"towerflow": [], "tensorflow": []}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    for _ in range(args.runs):
        for engine, path in (("towerflow", SEED), ("tensorflow", tf_seed)):
            out = subprocess.run([sys.executable, path, "--data", args.data, "--steps", str(args.steps),
                                  "--log-every", str(args.steps), "--towers", str(args.towers)],
                                 capture_output=True, text=True, env=env, check=True).stdout
            rates[engine].append(json.loads(out.strip().splitlines()[-1])["examples_per_sec"])
    tw, tf = statistics.median(rates["towerflow"]), statistics.median(rates["tensorflow"])
    print("| program | towerflow (examples/s) | TensorFlow (examples/s) | towerflow/TF |")
    print("|---|---:|---:|---:|")
    print("| seed.py, %d towers x %d, %d steps | %.0f | %.0f | %.2fx |"
          % (args.towers, 64, args.steps, tw, tf, tw / tf))
    print("runs: towerflow %s; TensorFlow %s" % ([round(r) for r in rates["towerflow"]],
                                                [round(r) for r in rates["tensorflow"]]))


def python_overhead(args):
    import towerflow as tw
    import towerflow.compat.v1 as tf

    rng = np.random.RandomState(0)
    images = rng.rand(4096, 784).astype(np.float32)
    labels = rng.randint(0, 10, 4096).astype(np.int64)
    data = tw.data.Dataset.from_tensor_slices((images, labels)).cache().repeat().batch(args.batch)
    x, y = data.make_one_shot_iterator().get_next()
    h = x
    for i, units in enumerate([256, 256, 10]):
        with tf.variable_scope("layer%d" % i):
            w = tf.get_variable("w", [h.shape[1].value, units], initializer=tf.glorot_uniform_initializer())
            b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())
            h = tf.nn.bias_add(tf.matmul(h, w), b)
            if units != 10:
                h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
    train_op = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    n = args.overhead_steps
    py_rates, py_fetch_rates, cc_rates = [], [], []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(50):
            sess.run(train_op)
        for _ in range(args.runs):
            start = time.perf_counter()
            for _ in range(n):
                sess.run(train_op)
            py_rates.append(n / (time.perf_counter() - start))
            start = time.perf_counter()
            for _ in range(n):
                sess.run([train_op, loss])
            py_fetch_rates.append(n / (time.perf_counter() - start))
            start = time.perf_counter()
            sess._session.run_steps([], [train_op._node], n)
            cc_rates.append(n / (time.perf_counter() - start))
    py, pyf, cc = statistics.median(py_rates), statistics.median(py_fetch_rates), statistics.median(cc_rates)
    print()
    print("| loop (MLP 784-256-256-10, batch %d, %d steps) | steps/s | vs C++ loop |" % (args.batch, n))
    print("|---|---:|---:|")
    print("| C++: Session::Run(train_op) | %.0f | 1.00 |" % cc)
    print("| Python: sess.run(train_op) | %.0f | %.3f |" % (py, py / cc))
    print("| Python: sess.run([train_op, loss]) | %.0f | %.3f |" % (pyf, pyf / cc))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="the seed schema's files (towerflow convert seed-synthetic)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--towers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--overhead-steps", type=int, default=1000)
    p.add_argument("--skip-seed", action="store_true")
    args = p.parse_args()
    if not args.skip_seed:
        seed_rates(args)
    python_overhead(args)


if __name__ == "__main__":
    main()
