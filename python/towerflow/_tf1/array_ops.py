"""Array ops of TF1's Python API: placeholders, shapes, reshape, cast,
concat/stack, slicing, fills."""

import numpy as np

from . import dtypes as _dtypes
from . import framework as fw
from .framework import convert_to_tensor, make_tensor


def placeholder(dtype, shape=None, name=None):
    dtype = _dtypes.as_dtype(dtype)
    attrs = {"dtype": dtype.name}
    if shape is not None:
        attrs["shape"] = fw._shape_list(shape)
    return make_tensor("Placeholder", [], attrs, name=name or "Placeholder")


def placeholder_with_default(input, shape, name=None):  # noqa: A002
    fw._raise_unsupported("tf.placeholder_with_default")


def identity(input, name=None):  # noqa: A002
    return make_tensor("Identity", [convert_to_tensor(input)], name=name)


def stop_gradient(input, name=None):  # noqa: A002
    return make_tensor("StopGradient", [convert_to_tensor(input)], name=name)


def shape(input, name=None, out_type=None):  # noqa: A002
    if out_type is not None and _dtypes.as_dtype(out_type) != _dtypes.int32:
        raise NotImplementedError("towerflow's tf.shape returns int32 only")
    return make_tensor("Shape", [convert_to_tensor(input)], name=name)


def rank(input, name=None):  # noqa: A002
    """The rank: a constant when known when the graph is built, else the
    length of the shape at run time."""
    x = convert_to_tensor(input)
    if x.shape.ndims is not None:
        return fw.constant(x.shape.ndims, _dtypes.int32, name=name or "Rank")
    with fw.op_name(name or "Rank", x.graph) as name:
        dims = make_tensor("Shape", [make_tensor("Shape", [x], name=name + "/Shape")], name=name + "/Shape_1")
        return reshape(dims, [], name=name)


def _is_tensor(value):
    return isinstance(value, fw.Tensor) or hasattr(value, "_tw_as_tensor")


def _has_tensor(value):
    """A list or tuple of which some item is a tensor ([tf.shape(x)[0], -1])."""
    return isinstance(value, (list, tuple)) and any(_is_tensor(v) for v in value)


def _int32(value, name):
    if _is_tensor(value):
        return convert_to_tensor(value, dtype=_dtypes.int32)
    if _has_tensor(value):
        # TF packs such a list into one vector (int32 here: the engine's shapes are int32).
        g = fw._graph_of([v for v in value if _is_tensor(v)])
        with g.as_default():
            parts = [cast(v, _dtypes.int32) if _is_tensor(v) else fw.constant(np.int32(v), _dtypes.int32)
                     for v in value]
            return stack(parts, name=name)
    return fw.constant(np.asarray(value, dtype=np.int32), _dtypes.int32, name=name)


def reshape(tensor, shape, name=None):
    x = convert_to_tensor(tensor)
    with fw.op_name(name or "Reshape", x.graph) as name:
        return make_tensor("Reshape", [x, _int32(shape, name + "/shape")], name=name)


def cast(x, dtype, name=None):
    x = convert_to_tensor(x)
    dtype = _dtypes.as_dtype(dtype)
    if x.dtype == dtype:
        return x
    return make_tensor("Cast", [x], {"DstT": dtype.name}, name=name or "Cast")


def to_float(x, name="ToFloat"):
    return cast(x, _dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, _dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, _dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, _dtypes.int64, name=name)


def concat(values, axis, name="concat"):
    values = [convert_to_tensor(v) for v in values]
    if len(values) == 1:
        return identity(values[0], name=name)
    with fw.op_name(name, fw._graph_of(values)) as name:
        axis_t = _int32(axis, name + "/axis")
        return make_tensor("ConcatV2", values + [axis_t], {"N": len(values)}, name=name)


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("tf.expand_dims needs an axis")
    x = convert_to_tensor(input)
    with fw.op_name(name or "ExpandDims", x.graph) as name:
        return make_tensor("ExpandDims", [x, _int32(axis, name + "/dim")], name=name)


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    axis = squeeze_dims if axis is None else axis
    if axis is None:
        axis = []
    elif isinstance(axis, int):
        axis = [axis]
    return make_tensor("Squeeze", [convert_to_tensor(input)], {"squeeze_dims": [int(a) for a in axis]},
                       name=name or "Squeeze")


def stack(values, axis=0, name="stack"):
    """tf.stack as concat of expanded values (towerflow has no Pack op); the
    result is named as TF's Pack, the expanded values below it."""
    values = [convert_to_tensor(v) for v in values]
    if not values:
        raise ValueError("tf.stack needs at least one value")
    with fw.op_name(name, fw._graph_of(values)) as name:
        if len(values) == 1:
            return expand_dims(values[0], axis, name=name)
        expanded = [expand_dims(v, axis, name=name + "/ExpandDims") for v in values]
        return concat(expanded, axis, name=name)


def unstack(value, num=None, axis=0, name="unstack"):
    x = convert_to_tensor(value)
    shp = x.shape
    if shp.ndims is None:
        raise NotImplementedError("tf.unstack of a tensor of unknown rank is not supported by towerflow")
    if num is None and shp[axis].value is None:
        raise ValueError("Cannot infer num from shape %s" % shp)
    n = shp[axis].value if num is None else int(num)
    axis = axis % shp.ndims
    out = []
    g = x.graph
    with g.name_scope(name):
        for i in range(n):
            begin = [0] * shp.ndims
            size = [-1] * shp.ndims
            begin[axis] = i
            size[axis] = 1
            out.append(squeeze(slice(x, begin, size), [axis]))
    return out


def slice(input_, begin, size, name=None):  # noqa: A001
    x = convert_to_tensor(input_)
    with fw.op_name(name or "Slice", x.graph) as name:
        return make_tensor("Slice", [x, _int32(begin, name + "/begin"), _int32(size, name + "/size")], name=name)


def fill(dims, value, name=None):
    with fw.op_name(name or "Fill", fw._graph_of([dims, value])) as name:
        dims = _int32(dims, name + "/dims")
        return make_tensor("Fill", [dims, convert_to_tensor(value, name=name + "/value")], name=name)


def zeros(shape, dtype=_dtypes.float32, name=None):
    dtype = _dtypes.as_dtype(dtype)
    if _is_tensor(shape) or _has_tensor(shape):
        return fill(shape, np.array(0, dtype.as_numpy_dtype), name=name or "zeros")
    return fw.constant(np.zeros(fw.as_shape(shape).as_list(), dtype.as_numpy_dtype), dtype, name=name or "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    dtype = _dtypes.as_dtype(dtype)
    if _is_tensor(shape) or _has_tensor(shape):
        return fill(shape, np.array(1, dtype.as_numpy_dtype), name=name or "ones")
    return fw.constant(np.ones(fw.as_shape(shape).as_list(), dtype.as_numpy_dtype), dtype, name=name or "ones")


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    x = convert_to_tensor(tensor)
    out = make_tensor("ZerosLike", [x], name=name or "zeros_like")
    return out if dtype is None else cast(out, dtype)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    x = convert_to_tensor(tensor)
    out = make_tensor("OnesLike", [x], name=name or "ones_like")
    return out if dtype is None else cast(out, dtype)


def broadcast_to(input, shape, name=None):  # noqa: A002
    x = convert_to_tensor(input)
    with fw.op_name(name or "BroadcastTo", x.graph) as name:
        return make_tensor("BroadcastTo", [x, _int32(shape, name + "/shape")], name=name)

