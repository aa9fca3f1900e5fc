"""TFRecord reading and tf.train.Example parsing of TF1's Python API."""

import collections
import os

from .. import _core
from . import dtypes as _dtypes
from . import framework as fw


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of fixed shape (tf.FixedLenFeature)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any length, parsed as a SparseTensor (tf.VarLenFeature)."""


class SparseTensor:
    """tf.SparseTensor: indices [n, rank] int64, values [n], dense_shape [rank] int64."""

    def __init__(self, indices, values, dense_shape):
        self.indices = indices
        self.values = values
        self.dense_shape = dense_shape

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def graph(self):
        return self.values.graph

    def _tw_fetch(self, fetch):
        parts = [fetch.tensor(t) for t in (self.indices, self.values, self.dense_shape)]
        return lambda values: SparseTensorValue(*[p(values) for p in parts])


SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])


def _features(features):
    out = []
    for key, f in sorted(features.items()):
        if isinstance(f, FixedLenFeature):
            shape = fw.as_shape(f.shape).as_list()
            out.append((key, "fixed", _dtypes.as_dtype(f.dtype).name, shape, f.default_value))
        elif isinstance(f, VarLenFeature):
            out.append((key, "var", _dtypes.as_dtype(f.dtype).name, [], None))
        else:
            raise NotImplementedError("towerflow parses FixedLenFeature and VarLenFeature, not %s"
                                      % type(f).__name__)
    return out


def _parsed(g, parsed):
    out = {}
    for key, value in parsed.items():
        if isinstance(value, tuple):
            i, v, s = (g._tensor(o) for o in value)
            out[key] = SparseTensor(i, v, s)
        else:
            out[key] = g._tensor(value)
    return out


def _parse(engine_fn, serialized, features, name, example_names):
    s = fw.convert_to_tensor(serialized)
    g = s.graph
    scope = g._scope.with_op_name(name) if name else g._scope
    names = None if example_names is None else fw.convert_to_tensor(example_names)._output
    return _parsed(g, engine_fn(scope, s._output, _features(features), names))


def parse_single_example(serialized, features, name=None, example_names=None):
    return _parse(_core.parse_single_example, serialized, features, name, example_names)


def parse_example(serialized, features, name=None, example_names=None):
    return _parse(_core.parse_example, serialized, features, name, example_names)


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    input_bytes = bytes if input_bytes is None else input_bytes
    x = fw.convert_to_tensor(input_bytes)
    g = x.graph
    scope = g._scope.with_op_name(name) if name else g._scope
    out = _core.decode_raw(scope, x._output, _dtypes.as_dtype(out_type).name, bool(little_endian))
    return g._tensor(out)


class TFRecordCompressionType:
    NONE = 0
    ZLIB = 1
    GZIP = 2


def _compression_name(compression_type):
    if isinstance(compression_type, int):
        return {0: "", 1: "ZLIB", 2: "GZIP"}[compression_type]
    return compression_type or ""


class TFRecordOptions:
    compression_type_map = {0: "", 1: "ZLIB", 2: "GZIP"}

    def __init__(self, compression_type=None):
        self.compression_type = _compression_name(compression_type)

    @classmethod
    def get_compression_type_string(cls, options):
        return "" if options is None else _compression_name(options.compression_type)


def _options_name(options):
    if options is None:
        return ""
    if isinstance(options, (str, int)):
        return _compression_name(options)
    return _compression_name(options.compression_type)


class TFRecordWriter:
    """tf.python_io.TFRecordWriter: writes records (bytes) to a TFRecord file,
    byte for byte as TensorFlow does; a context manager."""

    def __init__(self, path, options=None):
        self._writer = _core.RecordWriter(os.fsdecode(path), _options_name(options))

    def write(self, record):
        if isinstance(record, str):
            record = record.encode()
        self._writer.write(bytes(record))

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def tf_record_iterator(path, options=None):
    """tf.python_io.tf_record_iterator: the records (bytes) of a TFRecord
    file; its compression detected when `options` is None."""
    return _core.RecordIterator(os.fsdecode(path), "AUTO" if options is None else _options_name(options))


class TFRecordReader:
    """tf.TFRecordReader: read(queue) -> (key, value); the key is "<file>:<offset>"."""

    def __init__(self, name=None, options=None):
        g = fw.get_default_graph()
        scope = g._scope.with_op_name(name) if name else g._scope
        compression = "AUTO" if options is None else (options.compression_type or "")
        self._graph = g
        self._reader = _core.TFRecordReader(scope, compression)

    def _wrap(self, pair):
        return tuple(self._graph._tensor(o) for o in pair)

    def read(self, queue, name=None):
        ref = queue.queue_ref if hasattr(queue, "queue_ref") else fw.convert_to_tensor(queue)
        return self._wrap(self._reader.read(ref._output))

    def read_up_to(self, queue, num_records, name=None):
        ref = queue.queue_ref if hasattr(queue, "queue_ref") else fw.convert_to_tensor(queue)
        return self._wrap(self._reader.read_up_to(ref._output, int(num_records)))
