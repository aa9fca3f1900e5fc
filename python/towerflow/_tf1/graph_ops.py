"""Gradients, grouping and random tensors of TF1's Python API."""

from .. import _core
from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from .framework import convert_to_tensor


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False, gate_gradients=False,
              aggregation_method=None, stop_gradients=None, unconnected_gradients=None):
    """d(sum of ys)/d(x) for each x; None where no path leads from x to ys."""
    if stop_gradients is not None:
        raise NotImplementedError("tf.gradients(stop_gradients=...) is not supported by towerflow; "
                                  "use tf.stop_gradient")
    ys = [convert_to_tensor(y) for y in (ys if isinstance(ys, (list, tuple)) else [ys])]
    xs_list = xs if isinstance(xs, (list, tuple)) else [xs]
    xs_t = [convert_to_tensor(x) for x in xs_list]
    gys = [] if grad_ys is None else [convert_to_tensor(g) for g in
                                       (grad_ys if isinstance(grad_ys, (list, tuple)) else [grad_ys])]
    g = fw._graph_of(ys)
    grads = _core.gradients(g._scope, [y._output for y in ys], [x._output for x in xs_t], [t._output for t in gys])
    return [None if o is None else g._tensor(o) for o in grads]


def group(*inputs, **kwargs):
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("Unknown keyword arguments: " + ", ".join(kwargs))
    flat = []
    for i in inputs:
        flat.extend(i if isinstance(i, (list, tuple)) else [i])
    g = fw._graph_of(flat)
    nodes = [fw._as_operation(i)._node for i in flat]
    if name and name.endswith("/"):
        # TF's group(name=scope): the op takes the scope's own name, which must be free.
        try:
            g.get_operation_by_name(name[:-1])
        except KeyError:
            pass
        else:
            raise ValueError("Duplicate node name in graph: '%s'" % name[:-1])
    return g._wrap_node(_core.group(g._scope, nodes, name or ""))


def no_op(name=None):
    g = fw.get_default_graph()
    return fw.make_op("NoOp", [], name=name or "NoOp", graph=g)


def tuple_(tensors, name=None, control_inputs=None):
    tensors = [convert_to_tensor(t) if t is not None else None for t in tensors]
    deps = [t for t in tensors if t is not None] + list(control_inputs or [])
    gate = group(*deps, name=name or "tuple")
    with fw.get_default_graph().control_dependencies([gate]):
        return [None if t is None else array_ops.identity(t) for t in tensors]


# The random ops as TF names them: the op that draws is "<name>/<Op>", its
# shape "<name>/shape", and the last op of the scale and shift takes the
# name itself ("random_normal"), so the result is named as TF's. (TF's
# random_uniform in [0, 1) returns the draw "<name>/RandomUniform" itself.)
_RANDOM_OPS = {"normal": "RandomStandardNormal", "truncated_normal": "TruncatedNormal", "uniform": "RandomUniform"}


def _random(kind, shape, dtype, seed, name, scale, shift):
    """`scale` * (a draw of `kind`) + `shift`, named `name`."""
    dtype = _dtypes.as_dtype(dtype)
    g = fw.get_default_graph()
    with fw.op_name(name, g) as name:
        shape_t = array_ops._int32(shape, name + "/shape")
        scaled = not (isinstance(scale, (int, float)) and scale == 1)
        shifted = not (isinstance(shift, (int, float)) and shift == 0)
        draw_name = name + "/" + _RANDOM_OPS[kind] if scaled or shifted or kind == "uniform" else name
        out = _core.random_tensor(g._scope.with_op_name(draw_name), kind, shape_t._output, dtype.name,
                                  0 if seed is None else int(seed))
        x = g._tensor(out)
        from . import math_ops
        if scaled:
            x = math_ops.multiply(x, scale, name=name + "/mul" if shifted else name)
        if shifted:
            x = math_ops.add(x, shift, name=name)
        return x


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    return _random("normal", shape, dtype, seed, name or "random_normal", stddev, mean)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    return _random("truncated_normal", shape, dtype, seed, name or "truncated_normal", stddev, mean)


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise NotImplementedError("towerflow's random_uniform draws floats")
    scale = 1.0 if maxval is None else maxval - minval
    return _random("uniform", shape, dtype, seed, name or "random_uniform", scale, minval)
