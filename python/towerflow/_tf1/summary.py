"""tf.summary of TF1's Python API: scalar summaries and FileWriter.

A summary is fetched like a tensor: ``sess.run(tf.summary.scalar(...))`` (or
of merge/merge_all) returns the serialized tensorflow.Summary bytes (field
numbers as TF's summary.proto: value=1; tag=1, simple_value=2), which
FileWriter.add_summary writes as an Event of the event file."""

import struct

import numpy as np

from .. import _core
from . import framework as fw


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _encode(pairs):
    body = bytearray()
    for tag, value in pairs:
        t = tag.encode()
        value_msg = b"\x0a" + _varint(len(t)) + t + b"\x15" + struct.pack("<f", float(value))
        body += b"\x0a" + _varint(len(value_msg)) + value_msg
    return bytes(body)


def _read_varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def _decode(buf):
    """(tag, simple_value) pairs of a serialized Summary; ValueError for other content."""
    pairs, i = [], 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        n, i = _read_varint(buf, i)
        if key != 0x0A:
            raise ValueError("a Summary holds values (field 1) only")
        value, i = buf[i:i + n], i + n
        tag, simple, j = None, None, 0
        while j < len(value):
            k, j = _read_varint(value, j)
            if k == 0x0A:
                m, j = _read_varint(value, j)
                tag, j = value[j:j + m].decode(), j + m
            elif k == 0x15:
                simple, j = struct.unpack("<f", value[j:j + 4])[0], j + 4
            else:
                raise ValueError("towerflow writes scalar summaries (tag, simple_value) only")
        pairs.append((tag, simple))
    return pairs


class _Summary:
    """One or several scalar summaries, fetchable as serialized Summary bytes."""

    def __init__(self, graph, items):
        self._graph = graph
        self._items = items  # [(tag, Tensor)]

    @property
    def graph(self):
        return self._graph

    @property
    def name(self):
        return ",".join(tag for tag, _ in self._items)

    def _tw_fetch(self, fetch):
        parts = [(tag, fetch.tensor(t)) for tag, t in self._items]
        return lambda values: _encode([(tag, np.asarray(p(values)).reshape(())) for tag, p in parts])


def scalar(name, tensor, collections=None, family=None):
    t = fw.convert_to_tensor(tensor)
    if t.shape.ndims not in (None, 0):
        raise ValueError("tf.summary.scalar takes a scalar; '%s' has shape %s" % (name, t.shape))
    g = t.graph
    tag = g._scope.name_scope + "/" + name if g._scope.name_scope else name
    s = _Summary(g, [(tag, t)])
    for c in (collections if collections is not None else ["summaries"]):
        g.add_to_collection(c, s)
    return s


def merge(inputs, collections=None, name=None):
    inputs = [i for i in inputs if i is not None]
    if not inputs:
        return None
    items = [item for s in inputs for item in s._items]
    s = _Summary(inputs[0].graph, items)
    for c in collections or []:
        inputs[0].graph.add_to_collection(c, s)
    return s


def merge_all(key="summaries", scope=None, name=None):
    items = fw.get_default_graph().get_collection(key, scope)
    return merge(items) if items else None


class FileWriter:
    """tf.summary.FileWriter: an event file in `logdir` that TensorBoard reads."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, filename_suffix=None, session=None):
        self._writer = _core.EventFileWriter.create(str(logdir), filename_suffix or "")
        if graph is not None:
            self.add_graph(graph)

    def get_logdir(self):
        import os
        return os.path.dirname(self._writer.path)

    def add_summary(self, summary, global_step=None):
        if isinstance(summary, (bytes, bytearray)):
            pairs = _decode(bytes(summary))
        else:
            raise TypeError("add_summary takes the bytes a session run of a summary returned")
        self._writer.add_scalars(int(global_step or 0), [(t, float(v)) for t, v in pairs])

    def add_graph(self, graph, global_step=None):
        g = graph if isinstance(graph, fw.Graph) else graph.graph
        self._writer.add_graph(g._graph)

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
