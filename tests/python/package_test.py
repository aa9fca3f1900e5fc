"""The towerflow Python package itself: the wheel installs into a fresh venv
and imports; sessions release the GIL and closing one cancels a blocked run;
fetched arrays are views of the engine's tensors; strings are bytes; errors
are tf.errors classes naming the node."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

import pyenv
import towerflow
import towerflow.compat.v1 as tf


class FreshVenvTest(unittest.TestCase):
    def test_wheel_installs_into_a_fresh_venv(self):
        wheels = glob.glob(os.path.join(pyenv.BINARY_DIR, "wheel", "towerflow-*.whl"))
        if not wheels:
            self.fail("no wheel in %s/wheel: run scripts/python (scripts/test does)" % pyenv.BINARY_DIR)
        tmp = tempfile.mkdtemp(prefix="tw_venv_")
        try:
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
            py = os.path.join(venv, "bin", "python")
            # numpy, the package's one dependency, comes from the index (or pip's cache).
            p = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheels[0]],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            code = ("import towerflow.compat.v1 as tf\n"
                    "x = tf.placeholder(tf.float32, [2])\n"
                    "with tf.Session() as s:\n"
                    "    print(s.run(x * 2.0, {x: [1.5, 2.0]}).tolist())\n")
            p = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.strip(), "[3.0, 4.0]")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class SessionTest(unittest.TestCase):
    def setUp(self):
        tf.reset_default_graph()

    def test_run_releases_the_gil_and_close_cancels_it(self):
        images = tf.constant(np.zeros([4, 3], np.float32))
        # An empty queue nothing feeds: the dequeue blocks inside the engine.
        batch = tf.train.batch([images], batch_size=2, enqueue_many=True)
        sess = tf.Session()
        outcome = {}

        def blocked():
            try:
                sess.run(batch)
                outcome["result"] = "returned"
            except tf.errors.CancelledError as e:
                outcome["result"] = "cancelled"
                outcome["message"] = str(e)
            except Exception as e:  # noqa: BLE001 (reported by the assertion)
                outcome["result"] = repr(e)

        t = threading.Thread(target=blocked)
        t.start()
        # Python keeps running while the engine waits: the GIL was released.
        counted, deadline = 0, time.time() + 0.5
        while time.time() < deadline:
            counted += 1
        self.assertGreater(counted, 1000)
        self.assertTrue(t.is_alive())
        start = time.time()
        sess.close()
        t.join(30)
        self.assertFalse(t.is_alive(), "a closed session left its run blocked")
        self.assertLess(time.time() - start, 10)
        self.assertEqual(outcome.get("result"), "cancelled", outcome)

    def test_fetches_are_views_and_strings_are_bytes(self):
        x = tf.placeholder(tf.float32, [3, 4])
        y = x * 2.0
        s = tf.constant(["ab", "c\x00d"])
        with tf.Session() as sess:
            out, strings, scalar = sess.run([y, s, tf.constant(b"xyz")], {x: np.ones([3, 4], np.float32)})
        self.assertIsInstance(out, np.ndarray)
        self.assertEqual(out.dtype, np.float32)
        self.assertFalse(out.flags.owndata, "a fetch was copied out of the engine's tensor")
        self.assertEqual(out.sum(), 24.0)
        self.assertEqual(strings.tolist(), [b"ab", b"c\x00d"])
        self.assertEqual(scalar, b"xyz")

    def test_fetched_arrays_outlive_the_session(self):
        x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
        with tf.Session() as sess:
            out = sess.run(x + 1.0)
        del sess
        import gc
        gc.collect()
        self.assertEqual(out.tolist(), [[1, 2, 3], [4, 5, 6]])

    def test_errors_name_the_node(self):
        x = tf.placeholder(tf.float32, [None, 2], name="features")
        y = tf.identity(x, name="out")
        with tf.Session() as sess:
            with self.assertRaises(tf.errors.InvalidArgumentError) as cm:
                sess.run(y)
        self.assertIn("features", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            tf.matmul(tf.constant([[1.0, 2.0]]), tf.constant([[1.0, 2.0]]))
        self.assertIn("MatMul", str(cm.exception))

    def test_unsupported_symbols_name_themselves(self):
        with self.assertRaises(AttributeError) as cm:
            tf.while_loop  # noqa: B018
        self.assertIn("while_loop", str(cm.exception))
        with self.assertRaises(AttributeError) as cm:
            tf.nn.ctc_loss  # noqa: B018
        self.assertIn("ctc_loss", str(cm.exception))

    def test_version(self):
        self.assertRegex(towerflow.__version__, r"^\d+\.\d+\.\d+$")


class PythonicLayerTest(unittest.TestCase):
    """towerflow's own layer: towerflow.data, towerflow.train.Replicate,
    devices and placement, towerflow.cli."""

    def setUp(self):
        tf.reset_default_graph()

    def test_dataset_iterates_from_python_and_checkpoints(self):
        ds = towerflow.data.Dataset.range(10).map(lambda x: x * 3).batch(4)
        self.assertEqual([b.tolist() for b in ds], [[0, 3, 6, 9], [12, 15, 18, 21], [24, 27]])
        pairs = towerflow.data.Dataset.from_tensor_slices((np.arange(8, dtype=np.float32), np.arange(8)))
        it = iter(pairs.shuffle(8, seed=3))
        first = [next(it) for _ in range(3)]
        state = it.save()
        rest = [a for a, _ in it]
        again = iter(pairs.shuffle(8, seed=3))
        again.restore(state)
        self.assertEqual([a for a, _ in again], rest)
        self.assertEqual(sorted([float(a) for a, _ in first] + [float(a) for a in rest]), list(range(8)))

    def test_dataset_errors_raise_where_they_are_made(self):
        with self.assertRaises(tf.errors.InvalidArgumentError) as cm:
            list(towerflow.data.Dataset.list_files("/nonexistent/dir/*.tfrecord"))
        self.assertIn("No files matched pattern: /nonexistent/dir/*.tfrecord", str(cm.exception))
        with self.assertRaises(tf.errors.InvalidArgumentError) as cm:
            towerflow.data.Dataset.range(4).batch(0)
        self.assertIn("Batch", str(cm.exception))

    def test_replicate_gives_each_tower_its_own_batch(self):
        rng = np.random.RandomState(0)
        xs = rng.randn(512, 4).astype(np.float32)
        ys = (xs.sum(1) > 0).astype(np.int64)
        data = towerflow.data.Dataset.from_tensor_slices((xs, ys)).repeat().shuffle(512, seed=1).batch(32)

        def tower(x, y):
            w = tf.get_variable("w", [4, 2], initializer=tf.zeros_initializer())
            logits = tf.matmul(x, w)
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))

        step = towerflow.train.Replicate("cpu:0,cpu:1", data, tf.train.GradientDescentOptimizer(0.5), tower,
                                         global_step=True)
        self.assertEqual(step.devices, ["/device:CPU:0", "/device:CPU:1"])
        self.assertEqual([v.name for v in tf.trainable_variables()], ["w:0"])
        with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(step.loss)
            for _ in range(60):
                _, loss, b0, b1 = sess.run([step.train_op, step.loss, step.tower_batches[0][0],
                                            step.tower_batches[1][0]])
                self.assertFalse(np.array_equal(b0, b1), "two towers got the same batch")
            self.assertLess(loss, first / 2)
            self.assertEqual(sess.run(step.global_step), 60)
            placed = towerflow.placement(sess)
        self.assertTrue(placed["tower_1/MatMul"][0].endswith("CPU:1"), placed["tower_1/MatMul"])

    def test_list_devices(self):
        devices = towerflow.list_devices(tf.ConfigProto(device_count={"CPU": 3}))
        self.assertEqual([d["short_name"] for d in devices if d["device_type"] == "CPU"],
                         ["/device:CPU:0", "/device:CPU:1", "/device:CPU:2"])

    def test_visible_device_list(self):
        gpu = tf.GPUOptions(visible_device_list="1, 0")
        self.assertEqual(tf.ConfigProto(gpu_options=gpu)._session_options().visible_gpus, [1, 0])
        self.assertEqual(tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list=1))._session_options()
                         .visible_gpus, [1])
        for bad in ("0,x", "0,,1", "-1", "0,0", "\u0661", "99999999999"):
            with self.assertRaises(ValueError, msg=bad):
                tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list=bad))._session_options()
        # Horovod's recipe on a machine without GPUs: the list is ignored.
        if not any(d["device_type"] == "GPU" for d in towerflow.list_devices()):
            config = tf.ConfigProto(device_count={"CPU": 2}, gpu_options=tf.GPUOptions(visible_device_list="0"))
            devices = towerflow.list_devices(config)
            self.assertEqual([d["short_name"] for d in devices], ["/device:CPU:0", "/device:CPU:1"])

    def test_cli_trains_from_python(self):
        tmp = tempfile.mkdtemp(prefix="tw_cli_")
        try:
            data = os.path.join(tmp, "data")
            pyenv.towerflow_convert("seed-synthetic", "--out", data, "--n-features", "8", "--examples", "2000",
                                    "--shards", "2", "--seed", "1")
            result = towerflow.cli.train(data=data + "/train-*.tfrecord", model="seed", steps=30, batch_size=32,
                                         devices="cpu:0,cpu:1", logdir=os.path.join(tmp, "logs"), echo=False)
            self.assertEqual(result.get("global_step", result.get("steps")), 30, result)
            self.assertTrue(glob.glob(os.path.join(tmp, "logs", "ckpt-*.safetensors")))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
