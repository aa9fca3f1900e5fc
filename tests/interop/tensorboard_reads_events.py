"""TensorBoard and TensorFlow read the event files towerflow writes.

event_interop_tool (EventFileWriter) writes a logdir: scalars "loss" and
"accuracy" over steps 0..N-1 and the graph of a small two-device model, and
prints what it wrote. Then:
- TensorBoard's EventAccumulator loads the logdir: the scalar tags, every step,
  and every value equal to what was written (float32, bit for bit, and to the
  formula both sides share); the graph parses as a GraphDef whose nodes have the
  names, ops, inputs ("x", "x:1", "^x") and devices towerflow gave them.
- TensorFlow's tf.compat.v1.train.summary_iterator reads every event (checking
  every CRC): the file version first, then the same summaries and graph.
- The file is named as TF names event files.
"""
import json
import os
import re
import shutil
import socket
import tempfile
import unittest

import numpy as np
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

from interop_common import f32_bits, run

TOOL = os.environ.get("TOWERFLOW_EVENT_TOOL", "")
tf.get_logger().setLevel("ERROR")  # summary_iterator's deprecation notice
STEPS = 25


def loss(step):
    """What the tool writes for "loss" (event_interop_tool.cc), in double."""
    return 2.0 / (step + 1) - 0.01 * step


def accuracy(step):
    return 1.0 - 1.0 / (step + 2)


class TensorBoardReadsEvents(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        assert TOOL and os.path.exists(TOOL), "TOWERFLOW_EVENT_TOOL=%r: not built" % TOOL
        cls.dir = tempfile.mkdtemp(prefix="tw_events_")
        cls.logdir = os.path.join(cls.dir, "logs", "run1")
        cls.wrote = json.loads(run([TOOL, "--logdir", cls.logdir, "--steps", STEPS]).stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def expected_scalars(self):
        want = {tag: [(s, b) for s, b in pairs] for tag, pairs in self.wrote["scalars"].items()}
        # The tool's values are the shared formulas, rounded to float32.
        self.assertEqual(want["loss"], list(zip(range(STEPS), f32_bits([loss(s) for s in range(STEPS)]))))
        self.assertEqual(want["accuracy"],
                         list(zip(range(STEPS), f32_bits([accuracy(s) for s in range(STEPS)]))))
        return want

    def check_graph(self, graph_def, where):
        nodes = self.wrote["nodes"]
        self.assertGreater(len(nodes), 20, "the model's graph is too small to test anything")
        self.assertEqual(len(graph_def.node), len(nodes), where)
        self.assertEqual([n.name for n in graph_def.node], [n["name"] for n in nodes], where)
        for got, want in zip(graph_def.node, nodes):
            self.assertEqual(got.op, want["op"], "%s %s" % (where, want["name"]))
            self.assertEqual(list(got.input), want["inputs"], "%s %s" % (where, want["name"]))
            self.assertEqual(got.device, want["device"], "%s %s" % (where, want["name"]))
        inputs = [i for n in graph_def.node for i in n.input]
        self.assertTrue(any(i.startswith("^") for i in inputs), "%s: no control input" % where)
        self.assertTrue(any(re.fullmatch(r"[^:^]+:[1-9]\d*", i) for i in inputs), "%s: no output>0 edge" % where)
        devices = {n.device for n in graph_def.node}
        self.assertIn("/job:localhost/replica:0/task:0/device:CPU:0", devices, where)
        self.assertIn("/job:localhost/replica:0/task:0/device:CPU:1", devices, where)
        by_name = {n.name: n for n in graph_def.node}
        x = by_name["x"]
        self.assertEqual(x.attr["dtype"].type, tf.float32.as_datatype_enum, where)
        self.assertEqual([d.size for d in x.attr["shape"].shape.dim], [-1, 4], where)
        # Every towerflow attr became a TF AttrValue holding a value.
        for n in graph_def.node:
            for name, value in n.attr.items():
                self.assertIsNotNone(value.WhichOneof("value"), "%s %s attr %s is empty" % (where, n.name, name))

    def test_file_name_is_tfs(self):
        files = os.listdir(self.logdir)
        self.assertEqual(files, [os.path.basename(self.wrote["file"])])
        m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)", files[0])
        self.assertIsNotNone(m, files[0])
        self.assertEqual(m.group(2), socket.gethostname())

    def test_event_accumulator_loads_scalars_and_graph(self):
        acc = event_accumulator.EventAccumulator(self.logdir, size_guidance={event_accumulator.SCALARS: 0})
        acc.Reload()
        tags = acc.Tags()
        self.assertEqual(sorted(tags["scalars"]), ["accuracy", "loss"])
        self.assertTrue(tags["graph"])
        for tag, want in self.expected_scalars().items():
            got = acc.Scalars(tag)
            self.assertEqual([e.step for e in got], [s for s, _ in want], tag)
            self.assertEqual(f32_bits([e.value for e in got]), [b for _, b in want], tag)
            self.assertTrue(all(e.wall_time > 1.5e9 for e in got), tag)
        self.check_graph(acc.Graph(), "EventAccumulator")

    def test_summary_iterator_reads_every_event(self):
        events = list(tf.compat.v1.train.summary_iterator(self.wrote["file"]))
        self.assertEqual(len(events), self.wrote["events"])
        self.assertEqual(events[0].file_version, "brain.Event:2")
        got = {"loss": [], "accuracy": []}
        graphs = []
        for e in events[1:]:
            self.assertGreaterEqual(e.wall_time, events[0].wall_time)
            kind = e.WhichOneof("what")
            if kind == "summary":
                for v in e.summary.value:
                    self.assertEqual(v.WhichOneof("value"), "simple_value")
                    got[v.tag].append((e.step, f32_bits([v.simple_value])[0]))
            else:
                self.assertEqual(kind, "graph_def")
                graphs.append(tf.compat.v1.GraphDef.FromString(e.graph_def))
        self.assertEqual(got, self.expected_scalars())
        self.assertEqual(len(graphs), 1)
        self.check_graph(graphs[0], "summary_iterator")
        # Even steps hold both tags in one Event, odd steps one Event per tag.
        both = [e.step for e in events if e.WhichOneof("what") == "summary" and len(e.summary.value) == 2]
        self.assertEqual(both, list(range(0, STEPS, 2)))


if __name__ == "__main__":
    unittest.main()
