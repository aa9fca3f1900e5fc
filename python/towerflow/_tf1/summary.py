"""tf.summary of TF1's Python API: scalar summaries and FileWriter.

A summary is fetched like a tensor: ``sess.run(tf.summary.scalar(...))`` (or
of merge/merge_all) returns the serialized tensorflow.Summary bytes (field
numbers as TF's summary.proto: value=1; tag=1, simple_value=2), which
FileWriter.add_summary writes as an Event of the event file."""

import atexit
import itertools
import os
import re
import struct
import threading
import weakref

import numpy as np

from .. import _core
from .. import errors
from . import framework as fw

_writer_ids = itertools.count(1)
_live_writers = weakref.WeakSet()


@atexit.register
def _flush_live_writers():
    """A writer left open at exit loses none of its events."""
    for w in list(_live_writers):
        try:
            w.flush()
        except Exception:  # noqa: BLE001: exit goes on
            pass


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
    # TF's tag: the name with characters TensorBoard does not take replaced
    # by '_', under the name scope, made unique ("loss", "loss_1").
    clean = re.sub(r"[^-/\w\.]", "_", str(name)).lstrip("/") or "summary"
    tag = g.unique_name(clean)
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
        suffix = filename_suffix or ""
        try:
            self._writer = _core.EventFileWriter.create(str(logdir), suffix)
        except errors.AlreadyExistsError:
            # Another writer of this host opened one in the same second: TF
            # writes both; so does this one, under a name of its own.
            suffix = ".%d.%d%s" % (os.getpid(), next(_writer_ids), suffix)
            self._writer = _core.EventFileWriter.create(str(logdir), suffix)
        # TF's queue: events reach the file after max_queue of them, or
        # flush_secs after the last flush (a thread of the writer's own).
        self._lock = threading.Lock()
        self._max_queue = max(1, int(max_queue))
        self._flush_secs = float(flush_secs)
        self._pending = 0
        self._closed = threading.Event()
        # The thread holds the writer weakly: an unclosed writer that nothing
        # else holds is collected, and its thread ends.
        self._flusher = threading.Thread(target=FileWriter._flush_every,
                                         args=(weakref.ref(self), self._closed, max(0.1, self._flush_secs)),
                                         name="FileWriter flush", daemon=True)
        self._flusher.start()
        _live_writers.add(self)
        if graph is not None:
            self.add_graph(graph)

    @staticmethod
    def _flush_every(writer_ref, closed, seconds):
        while not closed.wait(seconds):
            writer = writer_ref()
            if writer is None:
                return
            writer.flush()
            del writer

    def __del__(self):
        closed = getattr(self, "_closed", None)
        if closed is not None and not closed.is_set():
            try:
                self.close()
            except Exception:  # noqa: BLE001: a collected writer closes as it can
                pass

    def _added(self):
        self._pending += 1
        if self._pending >= self._max_queue:
            self._writer.flush()
            self._pending = 0

    def get_logdir(self):
        import os
        return os.path.dirname(self._writer.path)

    def add_summary(self, summary, global_step=None):
        if isinstance(summary, (bytes, bytearray)):
            pairs = _decode(bytes(summary))
        else:
            raise TypeError("add_summary takes the bytes a session run of a summary returned")
        with self._lock:
            self._writer.add_scalars(int(global_step or 0), [(t, float(v)) for t, v in pairs])
            self._added()

    def add_graph(self, graph, global_step=None):
        g = graph if isinstance(graph, fw.Graph) else graph.graph
        with self._lock:
            self._writer.add_graph(g._graph)
            self._added()

    def flush(self):
        with self._lock:
            if not self._closed.is_set() or self._pending:
                self._writer.flush()
            self._pending = 0

    def close(self):
        self._closed.set()
        with self._lock:
            self._writer.close()
            self._pending = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
