"""What `towerflow train` leaves in its logdir is read by the peers' tools.

- TensorBoard's EventAccumulator loads the event file: the scalars loss,
  accuracy, learning_rate, examples_per_sec and the shuffle queue's fill, at the
  steps --summary-every-steps asks for, and the graph (with the towers' nodes).
- TensorFlow's summary_iterator reads every event of the file.
- safetensors.numpy.load_file reads every checkpoint the index lists: the
  variables, the momentum slots and the global step, with the shapes the
  model has; the metadata names the model.

Run by tests/interop/run.sh, which CTest calls with TOWERFLOW_BIN in the
environment.
"""
import glob
import json
import os
import shutil
import tempfile
import unittest

import numpy as np
from safetensors.numpy import load_file

from interop_common import TOWERFLOW, run


class TrainOutputsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tw_train_outputs_")
        data = os.path.join(cls.dir, "data")
        run([TOWERFLOW, "convert", "seed-synthetic", "--out", data, "--n-features", "8", "--examples", "2000",
             "--shards", "2", "--seed", "5"])
        cls.logdir = os.path.join(cls.dir, "run")
        proc = run([TOWERFLOW, "train", "--data", os.path.join(data, "train-*.tfrecord"), "--model", "seed",
                    "--hidden", "16,16", "--devices", "cpu:0,cpu:1", "--batch-size", "20", "--steps", "120",
                    "--summary-every-steps", "20", "--checkpoint-every-steps", "40", "--logdir", cls.logdir,
                    "--seed", "1", "--min-after-dequeue", "100", "--intra-op-threads", "1"])
        cls.result = json.loads(proc.stdout.strip().splitlines()[-1])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_tensorboard_reads_scalars_and_graph(self):
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        acc = EventAccumulator(self.logdir, size_guidance={"scalars": 0})
        acc.Reload()
        tags = acc.Tags()["scalars"]
        for tag in ("loss", "accuracy", "learning_rate", "examples_per_sec"):
            self.assertIn(tag, tags)
        # The shuffle buffer's fill: the dataset input's (the default), or the
        # queue's under TF's name for it.
        self.assertTrue("input/shuffle_buffer_fill" in tags or
                        any(t.startswith("input/shuffle_batch_join/fraction_over_") for t in tags), tags)
        steps = [e.step for e in acc.Scalars("loss")]
        # Every 20 steps, then the final step again at the end.
        self.assertEqual(sorted(set(steps)), [20, 40, 60, 80, 100, 120])
        self.assertAlmostEqual(acc.Scalars("learning_rate")[0].value, 0.01, places=6)
        losses = [e.value for e in acc.Scalars("loss")]
        self.assertTrue(all(np.isfinite(losses)), losses)
        graph = acc.Graph()
        names = {n.name for n in graph.node}
        self.assertIn("tower_0/hidden1/MatMul", names)
        self.assertIn("tower_1/hidden1/MatMul", names)
        self.assertIn("hidden1/kernel", names)

    def test_tensorflow_iterates_every_event(self):
        import tensorflow as tf
        files = glob.glob(os.path.join(self.logdir, "events.out.tfevents.*"))
        self.assertEqual(len(files), 1)
        events = list(tf.compat.v1.train.summary_iterator(files[0]))
        self.assertEqual(events[0].file_version, "brain.Event:2")
        self.assertTrue(any(e.graph_def for e in events))
        tags = {v.tag for e in events for v in e.summary.value}
        self.assertIn("loss", tags)

    def test_safetensors_reads_every_checkpoint(self):
        with open(os.path.join(self.logdir, "checkpoint")) as f:
            listed = [line.strip() for line in f.read().splitlines()[1:] if line.strip()]
        self.assertEqual(listed[-1], "ckpt-120.safetensors")
        self.assertEqual(self.result["checkpoint"], os.path.join(self.logdir, "ckpt-120.safetensors"))
        for name in listed:
            step = int(name[len("ckpt-"):-len(".safetensors")])
            tensors = load_file(os.path.join(self.logdir, name))
            self.assertEqual(int(tensors["global_step"]), step)
            self.assertEqual(tensors["hidden1/kernel"].shape, (16, 16))
            self.assertEqual(tensors["hidden1/kernel"].dtype, np.float32)
            self.assertEqual(tensors["hidden1/kernel/Momentum"].shape, (16, 16))
            self.assertEqual(tensors["logits/bias"].shape, (2,))
            self.assertTrue(np.all(np.isfinite(tensors["hidden2/kernel"])))
        from safetensors import safe_open
        with safe_open(os.path.join(self.logdir, listed[-1]), framework="numpy") as f:
            self.assertEqual(f.metadata()["model"], "seed")
            self.assertEqual(f.metadata()["global_step"], "120")


if __name__ == "__main__":
    unittest.main()
