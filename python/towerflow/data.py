"""towerflow.data: tf.data's Dataset API over the engine's pipelines
(tw::data::Dataset, data/dataset.h).

A Dataset is iterated from Python (``for x in ds``: NumPy values, the GIL
released while the pipeline works) or fed to a graph through an iterator
(``make_one_shot_iterator()`` / ``make_initializable_iterator()``, whose
``get_next()`` builds one IteratorGetNext per call: one per tower). Elements
are a single tensor or a tuple of tensors. ``map`` and ``filter`` functions
build a towerflow subgraph once (with towerflow.compat.v1 ops); ``flat_map``
and ``interleave`` functions run per element and return a Dataset.
"""

import atexit as _atexit
import os as _os

import numpy as _np

from . import _core
from ._tf1 import dtypes as _dtypes
from ._tf1 import framework as _fw

AUTOTUNE = _core.AUTOTUNE

# Pipelines iterated from Python stop before the interpreter finalizes (their
# threads may be waiting to run a Python function).
_atexit.register(_core._close_dataset_iterators)


def ignore_errors(log_warning=False):
    """tf.data.experimental.ignore_errors: for Dataset.apply."""
    return lambda dataset: dataset.ignore_errors(log_warning)


def _flat(value):
    return list(value) if isinstance(value, tuple) else [value]


def _component(value, where):
    """A NumPy value of one component of from_tensors/from_tensor_slices,
    with TF's dtypes for Python values (floats float32, ints int32)."""
    if isinstance(value, dict) or (isinstance(value, tuple) and not isinstance(value, _np.ndarray)):
        raise NotImplementedError(
            "%s: nested structures (a dict, a tuple inside the tuple) are not supported; "
            "give a tuple of arrays" % where)
    if isinstance(value, _fw.Tensor) or hasattr(value, "_as_graph_element") or hasattr(value, "graph"):
        raise NotImplementedError(
            "%s: a graph tensor (a constant, a placeholder fed at the initializer) is not supported; "
            "give NumPy arrays or Python lists" % where)
    if isinstance(value, (_np.ndarray, _np.generic)):
        return value
    arr = _np.asarray(value)
    if arr.dtype.kind in ("f", "i", "u"):
        return arr.astype(_fw._inferred_dtype(value).as_numpy_dtype)
    return value


def _seed(op_seed):
    """The seed of a shuffle or list_files: TF's rule with tf.set_random_seed
    (a graph seed and no op seed: an op seed drawn from a per-graph count, so
    the same program shuffles alike in every run)."""
    g = _fw.get_default_graph()
    graph_seed = g.seed
    if graph_seed is None:
        return None if op_seed is None else int(op_seed)
    if op_seed is None:
        op_seed = getattr(g, "_dataset_seeds", 0)
        g._dataset_seeds = op_seed + 1
    return (int(graph_seed) * 1000003 + int(op_seed)) % (1 << 63)


def _components(value, where):
    return [_component(v, where) for v in _flat(value)]


class Dataset:
    """An input pipeline: sources and transformations, as tf.data.Dataset."""

    def __init__(self, core, single):
        self._ds = core
        self._single = single  # elements are one component, not a tuple

    # ---- sources
    @staticmethod
    def from_tensors(tensors):
        return Dataset(_core.Dataset.from_tensors(_components(tensors, "from_tensors")),
                       not isinstance(tensors, tuple))

    @staticmethod
    def from_tensor_slices(tensors):
        return Dataset(_core.Dataset.from_tensor_slices(_components(tensors, "from_tensor_slices")),
                       not isinstance(tensors, tuple))

    @staticmethod
    def range(*args):
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
        return Dataset(_core.Dataset.range(int(start), int(stop), int(step)), True)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        return Dataset(_core.Dataset.list_files(str(file_pattern), True if shuffle is None else bool(shuffle),
                                                _seed(seed)), True)

    # ---- transformations
    def _wrap(self, core, single=None):
        return Dataset(core, self._single if single is None else single)

    def _graph_fn(self, fn, result_single=None):
        """The engine's subgraph builder for a Python function of the components."""
        outcome = {}

        def build(scope, outputs):
            g = _fw.Graph._borrow(scope)
            with g.as_default():
                args = [g._tensor(o) for o in outputs]
                result = fn(*args)
                outcome["single"] = not isinstance(result, (tuple, list))
                flat = result if isinstance(result, (tuple, list)) else [result]
                return [_fw.convert_to_tensor(t)._output for t in flat]

        return build, outcome

    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        build, outcome = self._graph_fn(map_func)
        calls = 0 if num_parallel_calls is None else int(num_parallel_calls)
        core = self._ds.map(build, calls, True if deterministic is None else bool(deterministic))
        return self._wrap(core, outcome.get("single", self._single))

    def filter(self, predicate):
        build, _ = self._graph_fn(predicate)
        return self._wrap(self._ds.filter(lambda scope, outputs: build(scope, outputs)[0]))

    def _per_element(self, fn):
        single = self._single

        def call(arrays):
            ds = fn(arrays[0]) if single else fn(*arrays)
            if not isinstance(ds, Dataset):
                raise TypeError("the function must return a towerflow.data.Dataset, not %s" % type(ds).__name__)
            call.single = ds._single
            return ds._ds

        call.single = True
        return call

    def flat_map(self, map_func):
        call = self._per_element(map_func)
        core = self._ds.flat_map(call)
        return self._wrap(core, call.single)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None):
        call = self._per_element(map_func)
        core = self._ds.interleave(call, AUTOTUNE if cycle_length is None else int(cycle_length),
                                   1 if block_length is None else int(block_length),
                                   0 if num_parallel_calls is None else int(num_parallel_calls),
                                   True if deterministic is None else bool(deterministic))
        return self._wrap(core, call.single)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        return self._wrap(self._ds.shuffle(int(buffer_size), _seed(seed),
                                           True if reshuffle_each_iteration is None else reshuffle_each_iteration))

    def repeat(self, count=None):
        return self._wrap(self._ds.repeat(-1 if count is None else int(count)))

    def batch(self, batch_size, drop_remainder=False):
        return self._wrap(self._ds.batch(int(batch_size), bool(drop_remainder)))

    def unbatch(self):
        return self._wrap(self._ds.unbatch())

    def take(self, count):
        return self._wrap(self._ds.take(int(count)))

    def skip(self, count):
        return self._wrap(self._ds.skip(int(count)))

    def ignore_errors(self, log_warning=False):
        """The elements whose computation did not fail (a map function that
        raised, a corrupt or missing TFRecord file, a batch holding such an
        element); `log_warning` is accepted and has no effect."""
        return self._wrap(self._ds.ignore_errors())

    def shard(self, num_shards, index):
        return self._wrap(self._ds.shard(int(num_shards), int(index)))

    def cache(self, filename=""):
        return self._wrap(self._ds.cache(str(filename)))

    def prefetch(self, buffer_size=AUTOTUNE):
        return self._wrap(self._ds.prefetch(int(buffer_size)))

    def apply(self, transformation_func):
        return transformation_func(self)

    # ---- what it yields
    @property
    def element_spec(self):
        spec = [(_dtypes.as_dtype(d), _fw.TensorShape(s)) for d, s in self._ds.element_spec]
        return spec[0] if self._single else tuple(spec)

    @property
    def output_types(self):
        spec = self.element_spec
        return spec[0] if self._single else tuple(t for t, _ in spec)

    @property
    def output_shapes(self):
        spec = self.element_spec
        return spec[1] if self._single else tuple(s for _, s in spec)

    def cardinality(self):
        return self._ds.cardinality()

    def __repr__(self):
        return "<towerflow.data.Dataset %s>" % self._ds.debug_string()

    # ---- iteration from Python
    def __iter__(self):
        return PythonIterator(self)

    # ---- iteration in a graph
    def make_one_shot_iterator(self):
        return Iterator(self, initialized=True)

    def make_initializable_iterator(self, shared_name=None):
        return Iterator(self, initialized=False, shared_name=shared_name or "")


def _filenames(filenames):
    """File names as str: one name or a list of them, each str, bytes or a
    path; a NumPy array of them (what interleave gives its function)."""
    if isinstance(filenames, _np.ndarray):
        filenames = filenames.ravel().tolist()
    elif isinstance(filenames, (str, bytes, _os.PathLike)):
        filenames = [filenames]
    if isinstance(filenames, _fw.Tensor):
        raise NotImplementedError("TFRecordDataset of a graph tensor: give the names, or a Dataset of them")
    return [_os.fsdecode(f) if isinstance(f, (bytes, _os.PathLike)) else str(f) for f in filenames]


class TFRecordDataset(Dataset):
    """tf.data.TFRecordDataset: the records of `filenames` (a list of names
    or a Dataset of them), compression detected unless given."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        files = filenames._ds if isinstance(filenames, Dataset) else _filenames(filenames)
        compression = "auto" if compression_type is None else compression_type
        core = _core.Dataset.tfrecord(files, compression, int(buffer_size or 256 << 10),
                                      int(num_parallel_reads or 1))
        super().__init__(core, True)


class PythonIterator:
    """Iterates a dataset in this process; save()/restore() checkpoint its position."""

    def __init__(self, dataset):
        self._ds = dataset._ds
        self._it = self._ds.make_iterator()
        self._single = dataset._single

    def __iter__(self):
        return self

    def __next__(self):
        from . import errors
        try:
            values = self._it.get_next()
        except errors.OutOfRangeError:
            raise StopIteration from None
        return values[0] if self._single else tuple(values)

    def get_next(self):
        values = self._it.get_next()
        return values[0] if self._single else tuple(values)

    def save(self):
        return self._it.save()

    def restore(self, state):
        """Continues from `state` (save()), whatever this iterator has read."""
        it = self._ds.make_iterator()
        it.restore(state)
        self._it.close()
        self._it = it

    def autotune_summary(self):
        return self._it.autotune_summary()


class Iterator:
    """A dataset's iterator in the default graph (tf.data.Iterator). get_next()
    builds one IteratorGetNext in the current scope each call."""

    def __init__(self, dataset, initialized, shared_name=""):
        g = _fw.get_default_graph()
        self._graph = g
        self._single = dataset._single
        # One-shot: the first get_next of each session starts the pass (a
        # session that never reads it never starts it); initializable: a
        # get_next before the initializer ran is FailedPreconditionError.
        self._it = _core.make_graph_iterator(g._scope, dataset._ds, shared_name, not initialized)
        self._initializer = g._wrap_node(self._it.initializer)

    @property
    def initializer(self):
        return self._initializer

    def get_next(self, name=None):
        g = _fw.get_default_graph()
        outs = self._it.get_next(g._scope)
        tensors = [g._tensor(o) for o in outs]
        return tensors[0] if self._single else tuple(tensors)

    def save(self, session):
        return self._it.save(session._session)

    def restore(self, session, state):
        self._it.restore(session._session, state)
