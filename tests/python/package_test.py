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


if __name__ == "__main__":
    unittest.main()
