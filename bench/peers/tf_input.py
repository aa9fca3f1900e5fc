"""TensorFlow's side of bench/input_pipeline: records/s from TFRecord files to
parsed, decoded batches of 100 in memory, on the files bench/input_bench.cc reads.

--api data    tf.data, two pipelines:
                tf.data          TFRecordDataset -> map(parse_single_example +
                                 decode_raw, num_parallel_calls=T) -> batch(100)
                tf.data-batched  TFRecordDataset -> batch(100) -> map(parse_example
                                 + decode_raw, num_parallel_calls=T)
              both .prefetch(AUTOTUNE), private thread pool of T threads,
              tf.config.threading inter/intra-op T.
--api queue   TF1's queue pipeline exactly as the seed builds it (tf.compat.v1,
              eager disabled): string_input_producer -> TFRecordReader ->
              parse_single_example -> decode_raw -> reshape -> shuffle_batch
              (min_after_dequeue 1000, capacity 1000 + 4 * 100, num_threads T),
              a session with T inter-op and T intra-op threads.
Each case warms up on 30 batches, then dequeues batches for --secs seconds.
Prints one JSON object per case: pipeline, schema, compression, threads,
records_per_sec, bytes_per_sec (the uncompressed TFRecord stream, as
input_bench counts it).

Usage: tf_input.py --data DIR --api data|queue --threads T [--secs S]
"""
import argparse
import glob
import json
import os
import struct
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

BATCH = 100
MIN_AFTER_DEQUEUE = 1000
SEED_FEATURES = 64
SCHEMAS = ("fmnist", "seed")
COMPRESSIONS = ("none", "gzip")


def files_of(data, schema, compression):
    return sorted(glob.glob(os.path.join(data, schema, "*.tfrecord" + (".gz" if compression == "gzip" else ""))))


def record_bytes(data, schema):
    """Mean framed record size of the plain files (the gzip ones hold the same records)."""
    total = records = 0
    for path in files_of(data, schema, "none"):
        with open(path, "rb") as f:
            while True:
                header = f.read(12)
                if len(header) < 12:
                    break
                (length,) = struct.unpack("<Q", header[:8])
                f.seek(length + 4, os.SEEK_CUR)
                total += 12 + length + 4
                records += 1
    return total / records


def parse_one(schema, serialized, v1=False):
    io = tf.compat.v1 if v1 else tf.io
    if schema == "fmnist":
        p = io.parse_single_example(serialized, {"image": io.FixedLenFeature([], tf.string),
                                                 "label": io.FixedLenFeature([], tf.int64)})
        return tf.reshape(io.decode_raw(p["image"], tf.uint8), [784]), p["label"]
    p = io.parse_single_example(serialized, {"x": io.FixedLenFeature([], tf.string),
                                             "labels": io.FixedLenFeature([], tf.string)})
    return (tf.reshape(io.decode_raw(p["x"], tf.int32), [2, SEED_FEATURES]),
            tf.reshape(io.decode_raw(p["labels"], tf.int32), [1, 2]))


def parse_many(schema, serialized):
    if schema == "fmnist":
        p = tf.io.parse_example(serialized, {"image": tf.io.FixedLenFeature([], tf.string),
                                             "label": tf.io.FixedLenFeature([], tf.int64)})
        return tf.reshape(tf.io.decode_raw(p["image"], tf.uint8), [-1, 784]), p["label"]
    p = tf.io.parse_example(serialized, {"x": tf.io.FixedLenFeature([], tf.string),
                                         "labels": tf.io.FixedLenFeature([], tf.string)})
    return (tf.reshape(tf.io.decode_raw(p["x"], tf.int32), [-1, 2, SEED_FEATURES]),
            tf.reshape(tf.io.decode_raw(p["labels"], tf.int32), [-1, 1, 2]))


def timed(step, secs):
    """Runs step() (one batch) 30 times untimed, then for secs; records/s."""
    for _ in range(30):
        step()
    n = 0
    start = time.perf_counter()
    while True:
        step()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= secs:
            return n * BATCH / elapsed


def run_data(args, schema, compression):
    files = files_of(args.data, schema, compression)
    ctype = "GZIP" if compression == "gzip" else ""
    options = tf.data.Options()
    options.threading.private_threadpool_size = args.threads
    out = {}
    single = (tf.data.TFRecordDataset(files, compression_type=ctype).repeat()
              .map(lambda s: parse_one(schema, s), num_parallel_calls=args.threads)
              .batch(BATCH).prefetch(tf.data.AUTOTUNE).with_options(options))
    batched = (tf.data.TFRecordDataset(files, compression_type=ctype).repeat().batch(BATCH)
               .map(lambda s: parse_many(schema, s), num_parallel_calls=args.threads)
               .prefetch(tf.data.AUTOTUNE).with_options(options))
    for name, ds in (("tf.data", single), ("tf.data-batched", batched)):
        it = iter(ds)

        def step():
            x, _ = next(it)
            assert x.shape[0] == BATCH

        out[name] = timed(step, args.secs)
    return out


def run_queue(args, schema, compression):
    v1 = tf.compat.v1
    files = files_of(args.data, schema, compression)
    with tf.Graph().as_default():
        filename_queue = v1.train.string_input_producer(files)
        options = (v1.python_io.TFRecordOptions(v1.python_io.TFRecordCompressionType.GZIP)
                   if compression == "gzip" else None)
        reader = v1.TFRecordReader(options=options)
        _, serialized_example = reader.read(filename_queue)
        x, labels = parse_one(schema, serialized_example, v1=True)
        batch = v1.train.shuffle_batch([x, labels], batch_size=BATCH,
                                       capacity=MIN_AFTER_DEQUEUE + 4 * BATCH,
                                       min_after_dequeue=MIN_AFTER_DEQUEUE, num_threads=args.threads)
        config = v1.ConfigProto(intra_op_parallelism_threads=args.threads,
                                inter_op_parallelism_threads=args.threads)
        with v1.Session(config=config) as sess:
            sess.run(v1.local_variables_initializer())
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(sess, coord)

            def step():
                bx, _ = sess.run(batch)
                assert bx.shape[0] == BATCH

            rate = timed(step, args.secs)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    return {"tf1-queue": rate}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--api", choices=("data", "queue"), required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--secs", type=float, default=3.0)
    parser.add_argument("--schemas", default=",".join(SCHEMAS))
    parser.add_argument("--compressions", default=",".join(COMPRESSIONS))
    args = parser.parse_args()
    tf.get_logger().setLevel("ERROR")
    if args.api == "queue":
        tf.compat.v1.disable_eager_execution()
    else:
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    for schema in args.schemas.split(","):
        per_record = record_bytes(args.data, schema)
        for compression in args.compressions.split(","):
            if not files_of(args.data, schema, compression):
                print("tf_input: no %s %s files under %s" % (schema, compression, args.data), file=sys.stderr)
                continue
            run = run_queue if args.api == "queue" else run_data
            for pipeline, rate in run(args, schema, compression).items():
                print(json.dumps({"pipeline": pipeline, "schema": schema, "compression": compression,
                                  "threads": args.threads, "records_per_sec": rate,
                                  "bytes_per_sec": rate * per_record}), flush=True)


if __name__ == "__main__":
    main()
