"""tf.Session and tf.ConfigProto over the engine's Session.

``run`` takes TF1's nested fetch structures (lists, tuples, namedtuples,
dicts of Tensors, Operations, Variables and names) and feed_dict, and returns
the same structure with NumPy values (an Operation fetches None). The GIL is
released while the engine runs the step.
"""

import collections
import re

import numpy as np

from .. import _core
from . import framework as fw


class GPUOptions:
    """TF1's GPUOptions: allow_growth (towerflow's GPU memory always grows as
    needed, so both values behave the same), visible_device_list ("1,0": the
    GPUs a session opens, renumbered from /device:GPU:0; Horovod's scripts set
    str(hvd.local_rank()); ignored where no GPU is visible),
    per_process_gpu_memory_fraction (not supported: raises when set)."""

    def __init__(self, allow_growth=False, per_process_gpu_memory_fraction=0.0, visible_device_list="",
                 allocator_type="", force_gpu_compatible=False):
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction
        self.visible_device_list = visible_device_list
        self.allocator_type = allocator_type
        self.force_gpu_compatible = force_gpu_compatible


class ConfigProto:
    """TF1's ConfigProto, the fields towerflow's sessions honour."""

    def __init__(self, device_count=None, intra_op_parallelism_threads=0, inter_op_parallelism_threads=0,
                 allow_soft_placement=False, log_device_placement=False, gpu_options=None,
                 use_per_session_threads=False, operation_timeout_in_ms=0, graph_options=None):
        self.device_count = dict(device_count or {})
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.allow_soft_placement = allow_soft_placement
        self.log_device_placement = log_device_placement
        self.gpu_options = gpu_options or GPUOptions()
        self.use_per_session_threads = use_per_session_threads
        self.operation_timeout_in_ms = operation_timeout_in_ms
        if graph_options is not None:
            raise NotImplementedError("ConfigProto(graph_options=...) is not supported by towerflow")

    def _session_options(self):
        o = _core.SessionOptions()
        o.allow_soft_placement = bool(self.allow_soft_placement)
        o.log_device_placement = bool(self.log_device_placement)
        o.inter_op_threads = int(self.inter_op_parallelism_threads)
        o.intra_op_threads = int(self.intra_op_parallelism_threads)
        for kind, n in self.device_count.items():
            if kind.upper() == "CPU":
                o.num_cpu_devices = max(1, int(n))
            elif kind.upper() == "GPU":
                o.max_gpus = int(n)
            else:
                raise ValueError("device_count has an unknown device type '%s' (CPU, GPU)" % kind)
        gpu = self.gpu_options
        if gpu.per_process_gpu_memory_fraction:
            raise NotImplementedError("GPUOptions.per_process_gpu_memory_fraction is not supported by towerflow "
                                      "(set CUDA_VISIBLE_DEVICES, or towerflow.SessionOptions.gpu_memory_limit_mb)")
        if gpu.visible_device_list not in ("", None):
            o.visible_gpus = _parse_visible_device_list(gpu.visible_device_list)
        if self.operation_timeout_in_ms:
            raise NotImplementedError("ConfigProto.operation_timeout_in_ms is not supported by towerflow")
        return o


def _parse_visible_device_list(text):
    """TF's "1,0": the visible GPUs (after CUDA_VISIBLE_DEVICES) a session
    opens, in order, as its /device:GPU:0, 1, ... (SessionOptions.visible_gpus)."""
    ids = []
    for entry in str(text).split(","):
        entry = entry.strip()
        if not re.fullmatch(r"[0-9]{1,9}", entry):
            raise ValueError("Could not parse entry in 'visible_device_list': '%s'. visible_device_list = %s"
                             % (entry, text))
        if int(entry) in ids:
            raise ValueError("visible_device_list contained a duplicate entry: %s" % text)
        ids.append(int(entry))
    return ids


class RunOptions:
    """tf.RunOptions: accepted, with no effect on the run (a step's trace is
    towerflow's --trace / Session's trace file, not RunMetadata.step_stats);
    a timeout is refused, as the engine would not honour it."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    def __init__(self, trace_level=0, timeout_in_ms=0, inter_op_thread_pool=0, output_partition_graphs=False,
                 debug_options=None, report_tensor_allocations_upon_oom=False, experimental=None):
        if timeout_in_ms:
            raise NotImplementedError("RunOptions.timeout_in_ms is not supported by towerflow")
        self.trace_level = int(trace_level)
        self.timeout_in_ms = 0
        self.inter_op_thread_pool = int(inter_op_thread_pool)
        self.output_partition_graphs = bool(output_partition_graphs)
        self.debug_options = debug_options
        self.report_tensor_allocations_upon_oom = bool(report_tensor_allocations_upon_oom)
        self.experimental = experimental


class RunMetadata:
    """tf.RunMetadata: left empty by a run (see RunOptions)."""

    def __init__(self):
        self.step_stats = None
        self.partition_graphs = []
        self.cost_graph = None


class _Fetch:
    """The flattened fetches of one run and how to rebuild their structure."""

    def __init__(self, graph, fetches):
        self.graph = graph
        self.outputs = []   # engine Outputs to fetch (unique)
        self.targets = []   # engine Nodes to run
        self._index = {}    # id(Tensor) -> position in outputs
        self._build = self._flatten(fetches)

    def _leaf(self, f):
        if isinstance(f, str):
            try:
                f = self.graph.as_graph_element(f)
            except (KeyError, ValueError, TypeError) as e:
                raise ValueError("Argument `fetch` = %s cannot be interpreted as a Tensor. (%s)"
                                 % (f, _message(e))) from None
        if hasattr(f, "_tw_fetch"):
            return f._tw_fetch(self)
        if isinstance(f, fw.Operation):
            self._check_graph(f)
            self.targets.append(f._node)
            return lambda values: None
        if not (isinstance(f, fw.Tensor) or hasattr(f, "_tw_as_tensor")):
            # As TF: a fetch is a graph element or its name, never a value to make a constant of.
            raise TypeError('Argument `fetch` = %r has invalid type "%s" must be a string or Tensor. (Can not '
                            'convert a %s into a Tensor or Operation.)' % (f, type(f).__name__, type(f).__name__))
        t = fw.convert_to_tensor(f) if not isinstance(f, fw.Tensor) else f
        self._check_graph(t)
        return self.tensor(t)

    def tensor(self, t):
        key = (t.op.name, t.value_index)
        if key not in self._index:
            self._index[key] = len(self.outputs)
            self.outputs.append(t._output)
        i = self._index[key]
        return lambda values: values[i]

    def _check_graph(self, x):
        if x.graph is not self.graph:
            raise ValueError("Fetch argument %r is not an element of this graph." % (x,))

    def _flatten(self, f):
        if f is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        if isinstance(f, collections.defaultdict):
            # As TF: the same kind of dict with the same default factory.
            parts = {k: self._flatten(v) for k, v in f.items()}
            kind, factory = type(f), f.default_factory

            def rebuilt(values):
                out = kind(factory)
                out.update((k, p(values)) for k, p in parts.items())
                return out
            return rebuilt
        if isinstance(f, dict):
            parts = {k: self._flatten(v) for k, v in f.items()}
            kind = type(f)
            return lambda values: kind((k, p(values)) for k, p in parts.items())
        if isinstance(f, tuple) and hasattr(f, "_fields"):
            parts = [self._flatten(v) for v in f]
            kind = type(f)
            return lambda values: kind(*[p(values) for p in parts])
        if isinstance(f, (list, tuple)):
            parts = [self._flatten(v) for v in f]
            kind = type(f)
            return lambda values: kind(p(values) for p in parts)
        return self._leaf(f)

    def result(self, values):
        return self._build(values)


def _message(e):
    """An exception's message (a KeyError's without the quotes str() adds)."""
    return e.args[0] if isinstance(e, KeyError) and e.args else str(e)


def _check_feed_shape(t, value):
    """TF's check before a run: a fed value's shape fits the tensor's static
    shape, else ValueError (a ragged value is left to the engine)."""
    shape = t.shape
    if shape.ndims is None:
        return
    try:
        got = np.shape(value)
    except ValueError:
        return
    if len(got) != shape.ndims or any(d is not None and d != g for d, g in zip(shape.as_list(), got)):
        raise ValueError("Cannot feed value of shape %r for Tensor %s, which has shape %r"
                         % (tuple(got), t.name, str(shape)))


def _as_value(array):
    """0-d arrays become NumPy scalars (bytes for strings), as TF returns them."""
    if isinstance(array, np.ndarray) and array.ndim == 0:
        return array[()]
    return array


class BaseSession:
    def __init__(self, target="", graph=None, config=None):
        if target:
            raise NotImplementedError("towerflow sessions run in this process (target '%s')" % target)
        self._graph = graph or fw.get_default_graph()
        self._config = config or ConfigProto()
        self._session = _core.Session(self._graph._graph, self._config._session_options())
        self._closed = False
        self._runner_groups = []  # start_queue_runners' threads, stopped at close
        self._default_contexts = []

    @property
    def graph(self):
        return self._graph

    @property
    def graph_def(self):
        raise NotImplementedError("Session.graph_def is not supported by towerflow")

    @property
    def sess_str(self):
        return ""

    def list_devices(self):
        Dev = collections.namedtuple("_DeviceAttributes", ["name", "device_type", "memory_limit_bytes",
                                                            "incarnation"])
        return [Dev(d["name"], d["device_type"], 0, 0) for d in self._session.list_devices()]

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        fetch = _Fetch(self._graph, fetches)
        feeds = []
        for key, value in (feed_dict or {}).items():
            if isinstance(key, str):
                try:
                    key = self._graph.as_graph_element(key, allow_operation=False)
                except (KeyError, ValueError, TypeError) as e:
                    raise TypeError("Cannot interpret feed_dict key as Tensor: " + _message(e)) from None
            if not isinstance(key, fw.Tensor) and not hasattr(key, "_tw_as_tensor"):
                raise TypeError("Cannot interpret feed_dict key as Tensor: Can not convert a %s into a Tensor."
                                % type(key).__name__)
            t = fw.convert_to_tensor(key) if not isinstance(key, fw.Tensor) else key
            if t.graph is not self._graph:
                raise ValueError("Cannot feed %r: it is not an element of this graph." % (key,))
            if isinstance(value, (fw.Tensor, fw.Operation)):
                raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
                                "Python scalars, strings, lists, numpy ndarrays, or TensorHandles.")
            _check_feed_shape(t, value)
            feeds.append((t._feed_output(), value))
        values = self._session.run(feeds, fetch.outputs, fetch.targets)
        return fetch.result([_as_value(v) for v in values])

    def _load_variable(self, var, value):
        from . import array_ops
        with self._graph.as_default():
            ph = array_ops.placeholder(var.dtype, var.shape, name=var.op.name + "/load_value")
            op = var.assign(ph)
        self.run(op, {ph: value})

    def close(self):
        if not self._closed:
            self._closed = True
            # The runner threads first, while the session is open: the groups'
            # destructors stop them cleanly (their coordinators' cancel threads
            # close the queues) and join them; a session closed under them would
            # leave a CancelledError in the user's coordinator.
            self._runner_groups = []
            self._session.close()

    def as_default(self):
        return _DefaultSession(self)

    def placed_device(self, op):
        """Where the engine placed `op` (an Operation or its name), and why."""
        op = self._graph.as_graph_element(op) if isinstance(op, str) else fw._as_operation(op)
        return self._session.placed_device(op._node), self._session.placement_reason(op._node)

    def describe_devices(self):
        return self._session.describe_devices()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


class _DefaultSession:
    def __init__(self, session):
        self._session = session

    def __enter__(self):
        fw._stack.sessions.append(self._session)
        return self._session

    def __exit__(self, *exc):
        fw._stack.sessions.pop()
        return False


class Session(BaseSession):
    """tf.Session: `with tf.Session(config=...) as sess:` makes it (and its
    graph) the default and closes it at the end."""

    def __enter__(self):
        self._graph_ctx = self._graph.as_default()
        self._graph_ctx.__enter__()
        fw._stack.sessions.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        fw._stack.sessions.pop()
        self._graph_ctx.__exit__(exc_type, exc, tb)
        self.close()
        return False


class InteractiveSession(BaseSession):
    """tf.InteractiveSession: the default session from construction to close."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        fw._stack.sessions.append(self)

    def close(self):
        if not self._closed and self in fw._stack.sessions:
            fw._stack.sessions.remove(self)
        super().close()
