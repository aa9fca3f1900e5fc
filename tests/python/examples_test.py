"""examples/python/fashion_mnist.py trains an MLP over two towers from
Fashion-MNIST TFRecords and evaluates every test example exactly once (its
eval loop ends on OutOfRangeError)."""

import glob
import os
import shutil
import tempfile
import unittest

import pyenv

EXAMPLE = os.path.join(pyenv.SOURCE_DIR, "examples", "python", "fashion_mnist.py")


class FashionMnistExampleTest(unittest.TestCase):
    def test_trains_and_evaluates(self):
        tmp = tempfile.mkdtemp(prefix="tw_fmnist_")
        try:
            data = os.path.join(BINARY, "data", "fashion-mnist")
            if not glob.glob(os.path.join(data, "test-*.tfrecord")):
                data = os.path.join(tmp, "data")
                pyenv.towerflow_convert("fashion-mnist", "--out", data, "--shards", "4")
            code, out, err = pyenv.run_python([EXAMPLE, "--data", data, "--epochs", "0.5", "--log-every", "50"])
            self.assertEqual(code, 0, out[-2000:] + err[-4000:])
            r = pyenv.last_json(out)
            self.assertEqual(r["test_examples"], 10000)
            self.assertGreater(r["test_accuracy"], 0.7, r)
            self.assertLess(r["losses"][-1], r["losses"][0] / 2, r["losses"])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


BINARY = pyenv.BINARY_DIR

if __name__ == "__main__":
    unittest.main()
