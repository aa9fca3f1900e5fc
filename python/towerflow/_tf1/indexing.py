"""Ops of TF1's Python API that pick, place and rearrange elements: gather,
embedding_lookup, unsorted_segment_sum, one_hot, where, in_top_k,
transpose, tile, pad, range and invert_permutation. Each builds the engine's
op of TF's name and type (GatherV2, OneHot, Select, SelectV2, InTopKV2,
Transpose, ...), with TF's node names and helper constants."""

import builtins as _builtins

import numpy as np

from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from .framework import convert_to_tensor, make_tensor


def _has_tensor(value):
    """Whether a (nested) list or tuple holds a tensor anywhere."""
    if isinstance(value, (list, tuple)):
        return any(array_ops._is_tensor(v) or _has_tensor(v) for v in value)
    return False


def _index_tensor(value, name, allowed=(_dtypes.int32, _dtypes.int64)):
    """Indices, sizes and paddings: a tensor as it is (of an allowed dtype);
    a (nested) list holding tensors packed into one int32 tensor, as TF
    packs it; else a constant of the value's own dtype (a NumPy array keeps
    its int64; Python ints are int32, int64 when one needs it)."""
    if array_ops._is_tensor(value):
        t = convert_to_tensor(value)
        if t.dtype not in allowed:
            raise TypeError("Value passed to parameter '%s' has DataType %s not in list of allowed values: %s"
                            % (name.rsplit("/", 1)[-1], t.dtype.name, ", ".join(a.name for a in allowed)))
        return t
    if _has_tensor(value):
        g = fw._graph_of([v for v in _flatten(value) if array_ops._is_tensor(v)])
        with g.as_default():
            return _pack(value, name)
    dtype = fw._inferred_dtype(value)
    if dtype not in allowed:
        dtype = _dtypes.int32 if _dtypes.int32 in allowed else allowed[0]
    return fw.constant(value, dtype, name=name)


def _flatten(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flatten(v)
    else:
        yield value


def _pack(value, name):
    """A nested list of ints and int tensors as one int32 tensor (TF's auto-packing)."""
    if isinstance(value, (list, tuple)):
        parts = [_pack(v, name + "/packed") for v in value]
        return array_ops.stack(parts, name=name)
    if array_ops._is_tensor(value):
        t = convert_to_tensor(value)
        return t if t.dtype == _dtypes.int32 else array_ops.cast(t, _dtypes.int32)
    return fw.constant(np.int32(value), _dtypes.int32, name=name + "/Const")


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """tf.gather: params's slices at indices along axis (GatherV2)."""
    if batch_dims != 0:
        raise NotImplementedError("tf.gather's batch_dims is not supported by towerflow")
    p = convert_to_tensor(params)
    with fw.op_name(name or "GatherV2", p.graph) as name:
        idx = _index_tensor(indices, name + "/indices")
        ax = _index_tensor(0 if axis is None else axis, name + "/axis")
        return make_tensor("GatherV2", [p, idx, ax], name=name)


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True, max_norm=None):
    """tf.nn.embedding_lookup of one table (a tensor, a variable or a list of one)."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("tf.nn.embedding_lookup of a table sharded in %d parts is not supported "
                                      "by towerflow" % len(params))
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("tf.nn.embedding_lookup's max_norm is not supported by towerflow")
    p = convert_to_tensor(params)
    # TF's names: the gather is "embedding_lookup", its result an Identity below it.
    with fw.op_name(name or "embedding_lookup", p.graph) as name:
        idx = _index_tensor(ids, name + "/ids")
        return array_ops.identity(gather(p, idx, name=name), name=name + "/Identity")


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    d = convert_to_tensor(data)
    with fw.op_name(name or "UnsortedSegmentSum", d.graph) as name:
        ids = _index_tensor(segment_ids, name + "/segment_ids")
        n = num_segments if array_ops._is_tensor(num_segments) else fw.constant(
            np.int32(num_segments), _dtypes.int32, name=name + "/num_segments")
        return make_tensor("UnsortedSegmentSum", [d, ids, convert_to_tensor(n)], name=name)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """tf.one_hot: dtype from on_value/off_value when given, else dtype, else float32."""
    g = fw._graph_of([indices, depth, on_value, off_value])
    with g.as_default(), fw.op_name(name or "one_hot", g) as name:
        idx = _index_tensor(indices, name + "/indices", (_dtypes.uint8, _dtypes.int32, _dtypes.int64))
        given = [v for v in (on_value, off_value) if v is not None]
        if dtype is not None:
            dt = _dtypes.as_dtype(dtype)
        elif given:
            v = given[0]
            dt = convert_to_tensor(v).dtype if array_ops._is_tensor(v) else fw._inferred_dtype(v)
        else:
            dt = _dtypes.float32
        for v in (on_value, off_value):
            if v is not None and array_ops._is_tensor(v) and convert_to_tensor(v).dtype != dt:
                raise TypeError("dtype %s of on_value or off_value does not match the dtype %s"
                                % (convert_to_tensor(v).dtype.name, dt.name))
        on = convert_to_tensor(1 if on_value is None else on_value, dtype=dt, name=name + "/on_value")
        off = convert_to_tensor(0 if off_value is None else off_value, dtype=dt, name=name + "/off_value")
        d = array_ops._int32(depth, name + "/depth")
        return make_tensor("OneHot", [idx, d, on, off], {"axis": -1 if axis is None else int(axis)}, name=name)


def _select(condition, x, y, name, v1):
    op = "Select" if v1 else "SelectV2"
    g = fw._graph_of([condition, x, y])
    with g.as_default(), fw.op_name(name or op, g) as name:
        c = convert_to_tensor(condition, dtype=_dtypes.bool)
        a, b = _binary(x, y, name)
        # TF1's Select (the engine's op of that name): x and y of one shape,
        # condition a scalar, a vector along the first axis, or of x's shape.
        return make_tensor(op, [c, a, b], name=name)


def _binary(x, y, name):
    from . import math_ops  # a cycle at import time otherwise
    return math_ops._binary_inputs(x, y, name, arg_names=("t", "e"))


def _where(what, v1):
    def fn(condition, x=None, y=None, name=None):
        if x is None and y is None:
            fw._raise_unsupported("%s with one argument (the coordinates of true elements)" % what)
        if x is None or y is None:
            raise ValueError("x and y must both be non-None or both be None.")
        return _select(condition, x, y, name, v1=v1)
    fn.__name__ = what.split(".")[-1]
    return fn


# tf.where (TF1): condition ? x : y, condition a scalar, of x's shape, or a
# vector along x's first axis; tf.where_v2: the three broadcast together.
where = _where("tf.where", True)
where_v2 = _where("tf.where_v2", False)


def in_top_k(predictions, targets, k, name=None):
    """tf.nn.in_top_k: whether each target is among its row's k largest
    predictions. As TF1's, an InTopKV2 op in a name scope "in_top_k"."""
    p = convert_to_tensor(predictions)
    g = p.graph
    with g.as_default(), g.name_scope(name or "in_top_k"), fw.op_name(name or "InTopKV2", g) as op:
        t = _index_tensor(targets, op + "/targets")
        kk = k if array_ops._is_tensor(k) else fw.constant(np.asarray(k, dtype=t.dtype.as_numpy_dtype),
                                                           t.dtype, name=op + "/k")
        return make_tensor("InTopKV2", [p, t, convert_to_tensor(kk)], name=op)


def transpose(a, perm=None, name="transpose", conjugate=False):
    x = convert_to_tensor(a)
    with fw.op_name(name or "transpose", x.graph) as name:
        if perm is None:
            if x.shape.ndims is None:
                # The axes reversed, at run time: range(rank - 1, -1, -1).
                r = array_ops.rank(x, name=name + "/Rank")
                p = range(r - 1, -1, -1, name=name + "/range")
            else:
                p = _index_tensor(list(_builtins.range(x.shape.ndims - 1, -1, -1)), name + "/perm")
        else:
            p = _index_tensor(perm, name + "/perm")
        return make_tensor("Transpose", [x, p], name=name)


def invert_permutation(x, name=None):
    g = fw._graph_of([x])
    with g.as_default(), fw.op_name(name or "InvertPermutation", g) as name:
        return make_tensor("InvertPermutation", [_index_tensor(x, name + "/x")], name=name)


def tile(input, multiples, name=None):  # noqa: A002
    x = convert_to_tensor(input)
    with fw.op_name(name or "Tile", x.graph) as name:
        return make_tensor("Tile", [x, _index_tensor(multiples, name + "/multiples")], name=name)


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    if str(mode).upper() != "CONSTANT":
        raise NotImplementedError("tf.pad's mode %r is not supported by towerflow (CONSTANT is)" % mode)
    x = convert_to_tensor(tensor)
    zero = not array_ops._is_tensor(constant_values) and constant_values == 0
    with fw.op_name(name or ("Pad" if zero else "PadV2"), x.graph) as name:
        p = _index_tensor(paddings, name + "/paddings")
        if zero:
            return make_tensor("Pad", [x, p], name=name)
        c = convert_to_tensor(constant_values, dtype=x.dtype, name=name + "/constant_values")
        return make_tensor("PadV2", [x, p, c], name=name)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """tf.range: [start, limit) by delta; range(n) is [0, n). The dtype is
    dtype, else the widest of the arguments' (float32 for a Python float,
    int32 for Python ints)."""
    if limit is None:
        start, limit = 0, start
    args = (start, limit, delta)
    g = fw._graph_of(list(args))
    with g.as_default(), fw.op_name(name or "Range", g) as name:
        if dtype is not None:
            dt = _dtypes.as_dtype(dtype)
        else:
            order = [_dtypes.int32, _dtypes.int64, _dtypes.float32, _dtypes.float64]
            kinds = [convert_to_tensor(v).dtype if array_ops._is_tensor(v) else fw._inferred_dtype(v) for v in args]
            dt = max(kinds, key=order.index)
        ts = []
        for v, n in zip(args, ("start", "limit", "delta")):
            if array_ops._is_tensor(v):
                t = convert_to_tensor(v)
                if t.dtype != dt:
                    t = array_ops.cast(t, dt, name=name + "/Cast")
                ts.append(t)
            else:
                ts.append(fw.constant(v, dt, name=name + "/" + n))
        return make_tensor("Range", ts, name=name)
