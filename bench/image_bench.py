#!/usr/bin/env python3
"""Benchmark of an image input pipeline's preprocessing (a figure, not a test):
the same TF1 graph built under towerflow.compat.v1 and under TensorFlow's
tensorflow.compat.v1 (tf.disable_v2_behavior()), each run in a child process,
the engines interleaved; images/s, median of --runs.

Workloads, per image, as Inception/ResNet preprocessing scripts write them:
- decode+resize: decode_jpeg(channels=3) -> convert_image_dtype(float32) ->
  resize_images([224, 224]) (bilinear) -> random_flip_left_right.
- inception: decode_jpeg -> sample_distorted_bounding_box (the whole image as
  the box, min_object_covered 0.1, aspect ratios 0.75-1.33, areas 0.05-1.0,
  100 attempts) -> slice -> convert_image_dtype(float32) -> resize_images
  ([224, 224]) -> random_flip_left_right -> random_brightness(32/255) ->
  random_saturation(0.5, 1.5) -> random_hue(0.2) -> random_contrast(0.5, 1.5)
  -> clip_by_value(0, 1), with the scripts' set_shape([None, None, 3]) after
  the slice. The crops are random draws from each engine's own generators, so
  the two engines do the same work in expectation, not image by image.

What is timed is the engines' kernels and executors, not Python: one graph
holds --batch independent per-image subgraphs, each fed its JPEG string
through its own scalar string placeholder (placeholders, not constants, so
that TensorFlow cannot fold the decode away), and one Session.run fetching the
sum of the images' sums (a reduction of each 224 x 224 x 3 result: without a
fetch, TensorFlow prunes the stateless work) preprocesses the whole batch.
Feeds are built before the clock starts; the batch's subgraphs are
independent, so each engine may run them in parallel on its inter-op threads
as well as inside each kernel on its intra-op threads, both set to --threads.

Both engines decode the same bytes: deterministic JPEGs (smooth gradients
plus noise, quality 90, mostly 375x500 with a few other sizes) written once
to a temporary folder whose path both children get.

Run with the peers' venv python after scripts/python:
  .venv/bin/python bench/image_bench.py [--runs 3] [--images 64] [--batch 32] [--steps 20]
Prints a markdown table (docs/benchmarks.md).
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

WORKLOADS = ("decode+resize", "inception")
ENGINES = ("towerflow", "tensorflow")
SIZES = [(375, 500)] * 5 + [(500, 375), (333, 500), (480, 640)]  # (height, width), cycled
WARMUP_STEPS = 2


# ---- the pipelines (tf is either engine's compat.v1 module)

def decode_resize(tf, contents):
    image = tf.image.decode_jpeg(contents, channels=3)
    image = tf.image.convert_image_dtype(image, tf.float32)
    image = tf.image.resize_images(image, [224, 224])
    return tf.image.random_flip_left_right(image)


def inception(tf, contents):
    image = tf.image.decode_jpeg(contents, channels=3)
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        tf.shape(image), bounding_boxes=tf.constant([[[0.0, 0.0, 1.0, 1.0]]], dtype=tf.float32),
        min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0), max_attempts=100,
        use_image_if_no_bounding_boxes=True)
    image = tf.slice(image, begin, size)
    image.set_shape([None, None, 3])
    image = tf.image.convert_image_dtype(image, tf.float32)
    image = tf.image.resize_images(image, [224, 224])
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_brightness(image, max_delta=32.0 / 255.0)
    image = tf.image.random_saturation(image, lower=0.5, upper=1.5)
    image = tf.image.random_hue(image, max_delta=0.2)
    image = tf.image.random_contrast(image, lower=0.5, upper=1.5)
    return tf.clip_by_value(image, 0.0, 1.0)


PIPELINES = {"decode+resize": decode_resize, "inception": inception}


# ---- the child: one engine, one workload, one trial

def child(args):
    if args.child == "towerflow":
        import towerflow
        import towerflow.compat.v1 as tf
        version = os.path.dirname(towerflow.__file__)
    else:
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
        version = tf.__version__
    jpegs = []
    for path in sorted(glob.glob(os.path.join(args.jpegs, "*.jpg"))):
        with open(path, "rb") as f:
            jpegs.append(f.read())
    batch = min(args.batch, len(jpegs))
    tf.set_random_seed(1)
    inputs = [tf.placeholder(tf.string, [], name="jpeg%d" % i) for i in range(batch)]
    # Each image's sum is fetched: an output nothing reads may be pruned (TF's
    # graph optimizer drops stateless work that only a control edge waits on).
    step = tf.add_n([tf.reduce_sum(PIPELINES[args.workload](tf, x)) for x in inputs])
    feeds = [{inputs[k]: jpegs[(s * batch + k) % len(jpegs)] for k in range(batch)}
             for s in range(WARMUP_STEPS + args.steps)]
    config = tf.ConfigProto(intra_op_parallelism_threads=args.threads, inter_op_parallelism_threads=args.threads)
    with tf.Session(config=config) as sess:
        for feed in feeds[:WARMUP_STEPS]:
            sess.run(step, feed_dict=feed)
        start = time.perf_counter()
        for feed in feeds[WARMUP_STEPS:]:
            sess.run(step, feed_dict=feed)
        elapsed = time.perf_counter() - start
    print(json.dumps({"images_per_sec": batch * args.steps / elapsed, "engine": version}))


# ---- the parent: images, interleaved trials, the table

def write_jpegs(n, folder):
    """n deterministic RGB JPEGs (quality 90, 4:2:0) in folder: per channel a
    linear ramp and a low-frequency wave, plus Gaussian noise, so that the
    entropy coder has a photograph's kind of work."""
    rng = np.random.RandomState(0)
    images = []
    for i in range(n):
        h, w = SIZES[i % len(SIZES)]
        y, x = np.mgrid[0:h, 0:w].astype(np.float32)
        y, x = y / h, x / w
        channels = []
        for _ in range(3):
            a, b, c = rng.uniform(-1, 1, 3)
            fy, fx, phase = rng.uniform(0.5, 3.0), rng.uniform(0.5, 3.0), rng.uniform(0, 2 * np.pi)
            channels.append(128 + 60 * (a * x + b * y) + 40 * c * np.sin(2 * np.pi * (fy * y + fx * x) + phase))
        image = np.stack(channels, axis=-1) + rng.normal(0, 8, (h, w, 3))
        images.append(np.clip(np.round(image), 0, 255).astype(np.uint8))
    try:
        from PIL import Image

        encode = lambda image, path: Image.fromarray(image).save(path, quality=90, subsampling=2)  # noqa: E731
    except ImportError:
        import tensorflow as tf

        def encode(image, path):
            with open(path, "wb") as f:
                f.write(tf.io.encode_jpeg(image, quality=90).numpy())
    for i, image in enumerate(images):
        encode(image, os.path.join(folder, "img_%03d.jpg" % i))


def trial(args, engine, workload, folder):
    """(images/s, None, the engine's version or location), or (None, the
    child's last line of error, None)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", engine, "--workload", workload, "--jpegs", folder,
           "--batch", str(args.batch), "--steps", str(args.steps), "--threads", str(args.threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    if p.returncode != 0:
        lines = [line for line in p.stderr.strip().splitlines() if line.strip()]
        return None, (lines[-1] if lines else "exit status %d" % p.returncode)[:300], None
    result = json.loads(p.stdout.strip().splitlines()[-1])
    return result["images_per_sec"], None, result["engine"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--images", type=int, default=64, help="distinct JPEGs generated")
    p.add_argument("--batch", type=int, default=32, help="images per Session.run (at most --images)")
    p.add_argument("--steps", type=int, default=20, help="timed Session.runs per trial, after %d" % WARMUP_STEPS)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="intra- and inter-op threads of both engines")
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help="a comma-separated subset of " + ", ".join(WORKLOADS))
    p.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    p.add_argument("--workload", choices=WORKLOADS, help=argparse.SUPPRESS)
    p.add_argument("--jpegs", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in WORKLOADS:
            p.error("unknown workload '%s' (%s)" % (w, ", ".join(WORKLOADS)))
    folder = tempfile.mkdtemp(prefix="tw_image_bench_")
    try:
        write_jpegs(args.images, folder)
        rates = {(e, w): [] for e in ENGINES for w in workloads}
        errors, engines = {}, {}
        for _ in range(args.runs):
            for w in workloads:
                for e in ENGINES:
                    if (e, w) in errors:
                        continue
                    rate, error, engine = trial(args, e, w, folder)
                    if error:
                        errors[(e, w)] = error
                    else:
                        rates[(e, w)].append(rate)
                        engines[e] = engine
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    batch = min(args.batch, args.images)
    print("| workload (%d JPEGs, %d per Session.run, %d threads) | towerflow (images/s) | TensorFlow (images/s) "
          "| towerflow/TF |" % (args.images, batch, args.threads))
    print("|---|---:|---:|---:|")
    for w in workloads:
        tw = statistics.median(rates[("towerflow", w)]) if rates[("towerflow", w)] else None
        tf = statistics.median(rates[("tensorflow", w)]) if rates[("tensorflow", w)] else None
        print("| %s | %s | %s | %s |" % (w, "%.0f" % tw if tw else "n/a", "%.0f" % tf if tf else "n/a",
                                         "%.2fx" % (tw / tf) if tw and tf else "n/a"))
    for w in workloads:
        print("runs, %s: towerflow %s; TensorFlow %s" % (w, [round(r) for r in rates[("towerflow", w)]],
                                                         [round(r) for r in rates[("tensorflow", w)]]))
    print("engines: towerflow %s; TensorFlow %s" % (engines.get("towerflow", "?"), engines.get("tensorflow", "?")))
    for (e, w), error in sorted(errors.items()):
        print("error, %s under %s: %s" % (w, e, error))


if __name__ == "__main__":
    main()
