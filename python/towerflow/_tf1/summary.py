"""tf.summary of TF1's Python API: scalar and histogram summaries, FileWriter.

A summary is fetched like a tensor: ``sess.run(tf.summary.scalar(...))`` (or
of histogram, merge, merge_all) returns the serialized tensorflow.Summary
bytes (field numbers as TF's summary.proto: value=1; tag=1, simple_value=2,
histo=5 with HistogramProto's min=1 ... bucket=7), which
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
from . import dtypes as _dtypes
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


def _field(number, payload):
    """A length-delimited field."""
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def _doubles(number, values):
    """A packed repeated double field."""
    return _field(number, struct.pack("<%dd" % len(values), *values))


def _default_bucket_limits():
    """TF's default histogram buckets: +-1e-12 growing by 10% up to 1e20,
    DBL_MAX at both ends, and 0."""
    pos, v = [], 1.0e-12
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    dbl_max = np.finfo(np.float64).max
    pos.append(dbl_max)
    return np.array([-p for p in reversed(pos)] + [0.0] + pos)


_BUCKET_LIMITS = _default_bucket_limits()


def _histogram(tag, values):
    """A HistogramProto of `values` as TF's HistogramSummary makes it: each
    value in the first bucket whose limit exceeds it, runs of empty buckets
    collapsed into their last; a non-finite value is an error naming the tag."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(v)):
        raise errors.InvalidArgumentError(None, None, "Nan in summary histogram for: %s" % tag)
    counts = np.bincount(np.searchsorted(_BUCKET_LIMITS, v, side="right"), minlength=len(_BUCKET_LIMITS))
    limits, buckets = [], []
    i, n = 0, len(_BUCKET_LIMITS)
    while i < n:
        end, count = _BUCKET_LIMITS[i], counts[i]
        i += 1
        if count <= 0:
            while i < n and counts[i] <= 0:
                end, count = _BUCKET_LIMITS[i], counts[i]
                i += 1
        limits.append(float(end))
        buckets.append(float(count))
    dbl_max = float(np.finfo(np.float64).max)
    lo = float(v.min()) if v.size else dbl_max
    hi = float(v.max()) if v.size else -dbl_max
    return (b"\x09" + struct.pack("<d", lo) + b"\x11" + struct.pack("<d", hi) +
            b"\x19" + struct.pack("<d", float(v.size)) + b"\x21" + struct.pack("<d", float(v.sum())) +
            b"\x29" + struct.pack("<d", float(np.dot(v, v))) + _doubles(6, limits) + _doubles(7, buckets))


def _encode(items):
    """A serialized Summary of (tag, kind, value) items: kind "scalar" (a
    float, as simple_value) or "histogram" (any values, as histo)."""
    body = bytearray()
    for tag, kind, value in items:
        t = tag.encode()
        if kind == "scalar":
            payload = struct.pack("<f", float(value))
            value_msg = _field(1, t) + b"\x15" + payload
        else:
            value_msg = _field(1, t) + _field(5, _histogram(tag, value))
        body += _field(1, value_msg)
    return bytes(body)


class _Summary:
    """One or several summaries, fetchable as serialized Summary bytes."""

    def __init__(self, graph, items):
        self._graph = graph
        self._items = items  # [(tag, kind, Tensor)]

    @property
    def graph(self):
        return self._graph

    @property
    def name(self):
        return ",".join(tag for tag, _, _ in self._items)

    def _tw_fetch(self, fetch):
        parts = [(tag, kind, fetch.tensor(t)) for tag, kind, t in self._items]

        def encode(values):
            out = []
            for tag, kind, p in parts:
                v = np.asarray(p(values))
                out.append((tag, kind, v.reshape(()) if kind == "scalar" else v))
            return _encode(out)
        return encode


def _add(name, tensor, kind, collections):
    t = fw.convert_to_tensor(tensor)
    g = t.graph
    # TF's tag: the name with characters TensorBoard does not take replaced
    # by '_', under the name scope, made unique ("loss", "loss_1").
    clean = re.sub(r"[^-/\w\.]", "_", str(name)).lstrip("/") or "summary"
    tag = g.unique_name(clean)
    s = _Summary(g, [(tag, kind, t)])
    for c in (collections if collections is not None else ["summaries"]):
        g.add_to_collection(c, s)
    return s


def scalar(name, tensor, collections=None, family=None):
    t = fw.convert_to_tensor(tensor)
    if t.shape.ndims not in (None, 0):
        raise ValueError("tf.summary.scalar takes a scalar; '%s' has shape %s" % (name, t.shape))
    return _add(name, t, "scalar", collections)


def histogram(name, values, collections=None, family=None):
    """The distribution of `values` (any shape, a real dtype) in TF's buckets;
    a NaN or infinite value fails the run that fetches it, naming the tag."""
    t = fw.convert_to_tensor(values)
    if t.dtype.is_bool or t.dtype == _dtypes.string:
        raise TypeError("tf.summary.histogram takes real values; '%s' is %s" % (name, t.dtype.name))
    return _add(name, t, "histogram", collections)


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
        if not isinstance(summary, (bytes, bytearray)):
            raise TypeError("add_summary takes the bytes a session run of a summary returned")
        with self._lock:
            self._writer.add_summary(int(global_step or 0), bytes(summary))
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
