"""The seed's program (examples/python/seed.py) runs under towerflow.compat.v1
and, with only its import line changed, under TensorFlow's tensorflow.compat.v1:
both runs train two towers on /cpu:0 and /cpu:1 under soft placement, the towers
see distinct batches, and both loss curves fall alike."""

import os
import shutil
import tempfile
import unittest

import pyenv

SEED = os.path.join(pyenv.SOURCE_DIR, "examples", "python", "seed.py")
STEPS = 400


class SeedProgramTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tw_seed_")
        cls.data = os.path.join(cls.tmp, "data")
        pyenv.towerflow_convert("seed-synthetic", "--out", cls.data, "--n-features", "64", "--examples", "20000",
                                "--shards", "4", "--seed", "1")
        with open(SEED) as f:
            source = f.read()
        # The TensorFlow run differs by its import line alone.
        assert source.count("\n" + pyenv.TW_IMPORT + "\n") == 1, "seed.py must import towerflow.compat.v1 once"
        cls.tf_seed = os.path.join(cls.tmp, "seed_tf.py")
        with open(cls.tf_seed, "w") as f:
            f.write(source.replace("\n" + pyenv.TW_IMPORT + "\n", "\n" + pyenv.TF_IMPORT + "\n"))
        args = ["--data", cls.data, "--steps", str(STEPS), "--log-every", "20", "--towers", "2"]
        cls.runs = {}
        for engine, path in (("towerflow", SEED), ("tensorflow", cls.tf_seed)):
            code, out, err = pyenv.run_python([path] + args, timeout=900)
            cls.runs[engine] = (code, out, err)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def result(self, engine):
        code, out, err = self.runs[engine]
        self.assertEqual(code, 0, "%s run failed:\n%s\n%s" % (engine, out[-2000:], err[-4000:]))
        return pyenv.last_json(out)

    def check_falls(self, engine):
        r = self.result(engine)
        losses = r["losses"]
        self.assertGreater(losses[0], 0.6, losses)  # about ln 2 at the start
        tail = losses[-5:]
        self.assertLess(sum(tail) / len(tail), 0.45, "%s: the loss did not fall: %s" % (engine, losses))
        self.assertTrue(r["distinct_batches"], "%s: two towers trained on the same batch" % engine)
        return r

    def test_runs_under_towerflow(self):
        self.check_falls("towerflow")

    def test_runs_under_tensorflow(self):
        self.check_falls("tensorflow")

    def test_curves_fall_alike(self):
        tw = self.check_falls("towerflow")["losses"]
        tf = self.check_falls("tensorflow")["losses"]
        self.assertEqual(len(tw), len(tf))
        # Different initial draws and shuffles: the curves match in level, not value.
        tail_tw = sum(tw[-5:]) / 5
        tail_tf = sum(tf[-5:]) / 5
        self.assertLess(abs(tail_tw - tail_tf), 0.25, (tw, tf))
        speed_tw = self.result("towerflow")["examples_per_sec"]
        speed_tf = self.result("tensorflow")["examples_per_sec"]
        print("seed.py: towerflow %.0f examples/s, TensorFlow %.0f examples/s (%.1fx); final losses %.3f / %.3f"
              % (speed_tw, speed_tf, speed_tw / speed_tf, tail_tw, tail_tf))

    def test_placement_log_shows_soft_placement(self):
        code, out, err = pyenv.run_python([SEED, "--data", self.data, "--steps", "2", "--warmup", "0",
                                           "--log-every", "1", "--log-device-placement"])
        self.assertEqual(code, 0, err[-4000:])
        text = out + err
        self.assertIn("Device mapping", text)
        # The towers' compute is on their devices; the queues stay where they can run.
        self.assertRegex(text, r"GPU_1/.*MatMul.*CPU:1")


if __name__ == "__main__":
    unittest.main()
