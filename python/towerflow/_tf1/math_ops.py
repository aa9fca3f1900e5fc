"""Math ops of TF1's Python API, and the operators of Tensor and Variable."""

import numpy as np

from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from . import variables
from .framework import convert_to_tensor, make_tensor


def _is_tensor(v):
    return isinstance(v, fw.Tensor) or hasattr(v, "_tw_as_tensor")


def _binary_inputs(x, y, name=None, arg_names=("x", "y")):
    """Tensors for a binary op named `name`: a Python or NumPy operand is
    converted with the other's dtype preferred (TF's dtype_hint; a Python float
    with an integer tensor stays float32 and the op raises TypeError), as the
    helper constant "<name>/x" or "<name>/y"."""
    xn, yn = (None, None) if name is None else (name + "/" + arg_names[0], name + "/" + arg_names[1])
    if _is_tensor(x) and not _is_tensor(y):
        x = convert_to_tensor(x)
        return x, convert_to_tensor(y, name=yn, preferred_dtype=x.dtype)
    if _is_tensor(y) and not _is_tensor(x):
        y = convert_to_tensor(y)
        return convert_to_tensor(x, name=xn, preferred_dtype=y.dtype), y
    # Neither a tensor: y takes x's dtype where it can (tf.pow(2., 3) is float32), as TF's op
    # converts its inputs in order.
    x = convert_to_tensor(x, name=xn)
    return x, convert_to_tensor(y, name=yn, preferred_dtype=x.dtype)


def _binary(op_type, default_name):
    def fn(x, y, name=None):
        with fw.op_name(name or default_name, fw._graph_of([x, y])) as name:
            a, b = _binary_inputs(x, y, name)
            return make_tensor(op_type, [a, b], name=name)
    fn.__name__ = default_name
    return fn


# tf.add and friends are named as TF's ops ("Add"); the operators as TF's
# operator wrappers ("add"): x + y is "add", tf.add(x, y) is "Add".
add = _binary("Add", "Add")
subtract = _binary("Sub", "Sub")
sub = subtract
multiply = _binary("Mul", "Mul")
mul = multiply
maximum = _binary("Maximum", "Maximum")
equal = _binary("Equal", "Equal")
greater_equal = _binary("GreaterEqual", "GreaterEqual")


# Comparisons, minimum, abs and reduce_min from the engine's GreaterEqual,
# Equal, Maximum and Neg (exact: each is a selection or a negation); the op
# TF would build is the last one, under TF's name.
def logical_not(x, name=None):
    x = convert_to_tensor(x)
    with fw.op_name(name or "LogicalNot", x.graph) as name:
        return make_tensor("Equal", [x, fw.constant(False, name=name + "/false")], name=name)


def _compare(default_name, build):
    def fn(x, y, name=None):
        with fw.op_name(name or default_name, fw._graph_of([x, y])) as name:
            a, b = _binary_inputs(x, y, name)
            return build(a, b, name)
    fn.__name__ = default_name
    return fn


def _strictly_greater(a, b, name):
    """a > b as (a >= b) != (a == b): false where either is NaN (both parts
    are), where not(b >= a) would be true."""
    ge = make_tensor("GreaterEqual", [a, b], name=name + "/GreaterEqual")
    eq = make_tensor("Equal", [a, b], name=name + "/Equal")
    return logical_not(make_tensor("Equal", [ge, eq], name=name + "/same"), name=name)


less_equal = _compare("LessEqual", lambda a, b, name: make_tensor("GreaterEqual", [b, a], name=name))
greater = _compare("Greater", _strictly_greater)
less = _compare("Less", lambda a, b, name: _strictly_greater(b, a, name))
not_equal = _compare("NotEqual", lambda a, b, name: logical_not(
    make_tensor("Equal", [a, b], name=name + "/Equal"), name=name))
minimum = _compare("Minimum", lambda a, b, name: make_tensor("Neg", [make_tensor(
    "Maximum", [make_tensor("Neg", [a], name=name + "/Neg"), make_tensor("Neg", [b], name=name + "/Neg_1")],
    name=name + "/Maximum")], name=name))


def abs(x, name=None):  # noqa: A001: TF's name
    """x * sign(x), the sign held out of the gradient: |x| exactly, and TF's
    gradient sign(x) (0 at 0, where max(x, -x) would give 1)."""
    x = convert_to_tensor(x)
    with fw.op_name(name or "Abs", x.graph) as name:
        zero = fw.constant(0, dtype=x.dtype, name=name + "/zero")
        positive = array_ops.cast(_strictly_greater(x, zero, name + "/positive"), x.dtype, name=name + "/Cast")
        negative_ = array_ops.cast(_strictly_greater(zero, x, name + "/negative"), x.dtype, name=name + "/Cast_1")
        sign = array_ops.stop_gradient(make_tensor("Sub", [positive, negative_], name=name + "/sign"),
                                       name=name + "/sign_stop_gradient")
        return make_tensor("Mul", [x, sign], name=name)


def pow(x, y, name=None):  # noqa: A001: TF's name
    """x^y, the engine's Pow (std::pow; integers by squaring, a negative
    integer exponent an InvalidArgumentError at run time, as TF's)."""
    with fw.op_name(name or "Pow", fw._graph_of([x, y])) as name:
        a, b = _binary_inputs(x, y, name)
        return make_tensor("Pow", [a, b], name=name)


def rsqrt(x, name=None):
    """1 / sqrt(x) (TF's Rsqrt, within an ulp)."""
    x = convert_to_tensor(x)
    with fw.op_name(name or "Rsqrt", x.graph) as name:
        return make_tensor("Div", [fw.constant(1, dtype=x.dtype, name=name + "/one"),
                                   make_tensor("Sqrt", [x], name=name + "/Sqrt")], name=name)


def reciprocal(x, name=None):
    """1 / x (TF's Reciprocal: the same IEEE division)."""
    x = convert_to_tensor(x)
    with fw.op_name(name or "Reciprocal", x.graph) as name:
        return make_tensor("Div", [fw.constant(1, dtype=x.dtype, name=name + "/one"), x], name=name)


def squared_difference(x, y, name=None):
    """(x - y)^2, broadcasting (TF's SquaredDifference: the same product)."""
    with fw.op_name(name or "SquaredDifference", fw._graph_of([x, y])) as name:
        a, b = _binary_inputs(x, y, name)
        return make_tensor("Square", [make_tensor("Sub", [a, b], name=name + "/sub")], name=name)


floordiv = _binary("FloorDiv", "floordiv")
floor_div = _binary("FloorDiv", "FloorDiv")
floormod = _binary("FloorMod", "FloorMod")
mod = floormod


_add_operator = _binary("Add", "add")
_sub_operator = _binary("Sub", "sub")
_mul_operator = _binary("Mul", "mul")

# TF's true division of integers: in a floating type wide enough for them.
_INT_TO_FLOAT = {"uint8": _dtypes.float32, "int32": _dtypes.float64, "int64": _dtypes.float64}


def _div(default_name, integers):
    def fn(x, y, name=None):
        with fw.op_name(name or default_name, fw._graph_of([x, y])) as name:
            a, b = _binary_inputs(x, y, name)
            if a.dtype.is_integer and b.dtype.is_integer:
                if not integers:
                    # TF1's tf.div of integers: Python 2's floor division; y
                    # converted to x's dtype, as TF1's.
                    if a.dtype != b.dtype:
                        raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                                         % (a.dtype.name, b.dtype.name, b))
                    return make_tensor("FloorDiv", [a, b], name=name)
                if a.dtype != b.dtype:
                    raise TypeError("x and y must have the same dtype, got %s != %s" % (a.dtype.name, b.dtype.name))
                to = _INT_TO_FLOAT[a.dtype.name]
                a = array_ops.cast(a, to, name=name + "/Cast")
                b = array_ops.cast(b, to, name=name + "/Cast_1")
            return make_tensor("Div", [a, b], name=name)
    fn.__name__ = default_name
    return fn


divide = _div("truediv", True)
truediv = divide
div = _div("div", False)


def _unary(op_type, default_name):
    def fn(x, name=None):
        return make_tensor(op_type, [convert_to_tensor(x)], name=name or default_name)
    fn.__name__ = default_name
    return fn


negative = _unary("Neg", "Neg")
neg = negative
square = _unary("Square", "Square")
sqrt = _unary("Sqrt", "Sqrt")
exp = _unary("Exp", "Exp")
log = _unary("Log", "Log")
log1p = _unary("Log1p", "Log1p")
sigmoid = _unary("Sigmoid", "Sigmoid")
tanh = _unary("Tanh", "Tanh")


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, name=None):
    with fw.op_name(name or "MatMul", fw._graph_of([a, b])) as name:
        x, y = _binary_inputs(a, b, name, ("a", "b"))
        ta, tb = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
        if x.shape.ndims != 2 or y.shape.ndims != 2:
            # As TF's: an operand of rank above 2, or of unknown rank, makes a
            # batch of products (batch dimensions broadcast).
            return make_tensor("BatchMatMulV2", [x, y], {"adj_x": ta, "adj_y": tb}, name=name)
        return make_tensor("MatMul", [x, y], {"transpose_a": ta, "transpose_b": tb}, name=name)


def add_n(inputs, name=None):
    inputs = [convert_to_tensor(i) for i in inputs]
    if not inputs:
        raise ValueError("inputs must be an iterable of at least one Tensor/IndexedSlices with the same dtype "
                         "and shape")
    if len(inputs) == 1:
        return inputs[0] if name is None else array_ops.identity(inputs[0], name=name)
    return make_tensor("AddN", inputs, {"N": len(inputs)}, name=name or "AddN")


def _reduction(op_type, default_name):
    def fn(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
        x = convert_to_tensor(input_tensor)
        axis = reduction_indices if axis is None else axis
        keep = bool(keepdims if keepdims is not None else (keep_dims or False))
        if axis is None:
            # Every axis: TF builds this constant before the op, as "Const"
            # (of an unknown rank, range(rank(x)) at run time).
            if x.shape.ndims is None:
                from . import indexing  # a cycle at import time otherwise
                with x.graph.as_default():
                    axes = indexing.range(0, array_ops.rank(x))
                out = make_tensor(op_type, [x, axes], {"keep_dims": keep}, name=name or default_name)
                if not keep:
                    out.set_shape([])  # every axis reduced: a scalar, as TF knows
                return out
            axes = fw.constant(np.arange(x.shape.ndims, dtype=np.int32), _dtypes.int32)
            return make_tensor(op_type, [x, axes], {"keep_dims": keep}, name=name or default_name)
        with fw.op_name(name or default_name, x.graph) as name:
            axes = array_ops._int32(axis, name + "/reduction_indices")
            return make_tensor(op_type, [x, axes], {"keep_dims": keep}, name=name)
    fn.__name__ = default_name
    return fn


reduce_sum = _reduction("Sum", "Sum")
reduce_mean = _reduction("Mean", "Mean")
reduce_max = _reduction("Max", "Max")


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """-max(-x): exact."""
    x = convert_to_tensor(input_tensor)
    with fw.op_name(name or "Min", x.graph) as name:
        m = reduce_max(negative(x, name=name + "/Neg"), axis, keepdims, name + "/Max", reduction_indices, keep_dims)
        return negative(m, name=name)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    t = convert_to_tensor(t)
    with fw.op_name(name or "clip_by_value", t.graph) as name:
        return maximum(minimum(t, clip_value_max, name=name + "/Minimum"), clip_value_min, name=name)


def global_norm(t_list, name=None):
    """sqrt(sum of every element's square), over the tensors of t_list (None skipped)."""
    ts = [convert_to_tensor(t) for t in t_list if t is not None]
    with fw.op_name(name or "global_norm", ts[0].graph if ts else None) as name:
        sums = [reduce_sum(square(t, name=name + "/Square_%d" % i), name=name + "/Sum_%d" % i)
                for i, t in enumerate(ts)]
        return sqrt(add_n(sums, name=name + "/AddN") if len(sums) > 1 else sums[0], name=name)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """TF's: every tensor times clip_norm / max(global_norm, clip_norm); None stays None."""
    t_list = list(t_list)
    with fw.op_name(name or "clip_by_global_norm", fw._graph_of(t_list)) as name:
        norm = use_norm if use_norm is not None else global_norm(t_list, name=name + "/global_norm")
        norm = convert_to_tensor(norm)
        clip = convert_to_tensor(clip_norm, preferred_dtype=norm.dtype)
        # TF's: an infinite or NaN norm makes every output NaN (norm - norm),
        # rather than scaling finite gradients to 0.
        scale = add(divide(clip, maximum(norm, clip, name=name + "/Maximum"), name=name + "/truediv"),
                    subtract(norm, norm, name=name + "/sub"), name=name + "/scale")
        out = [None if t is None else multiply(t, scale, name=name + "/_%d" % i) for i, t in enumerate(t_list)]
        return out, norm


def clip_by_norm(t, clip_norm, axes=None, name=None):
    t = convert_to_tensor(t)
    with fw.op_name(name or "clip_by_norm", t.graph) as name:
        norm = sqrt(reduce_sum(square(t, name=name + "/Square"), axes, keepdims=True, name=name + "/Sum"),
                    name=name + "/Sqrt")
        clip = convert_to_tensor(clip_norm, preferred_dtype=t.dtype)
        return multiply(t, divide(clip, maximum(norm, clip, name=name + "/Maximum"), name=name + "/truediv"),
                        name=name)


def argmax(input, axis=None, name=None, dimension=None, output_type=_dtypes.int64):  # noqa: A002
    axis = dimension if axis is None else axis
    axis = 0 if axis is None else axis
    x = convert_to_tensor(input)
    with fw.op_name(name or "ArgMax", x.graph) as name:
        dim = array_ops._int32(axis, name + "/dimension")
        return make_tensor("ArgMax", [x, dim], {"output_type": _dtypes.as_dtype(output_type).name}, name=name)


def _install_operators(cls):
    # NumPy defers to the tensor's reflected operators (np.ones(3) ** t), as TF's.
    cls.__array_priority__ = 100

    def binop(fn, reverse=False):
        if reverse:
            return lambda self, other: fn(other, self)
        return lambda self, other: fn(self, other)

    cls.__add__ = binop(_add_operator)
    cls.__radd__ = binop(_add_operator, True)
    cls.__sub__ = binop(_sub_operator)
    cls.__rsub__ = binop(_sub_operator, True)
    cls.__mul__ = binop(_mul_operator)
    cls.__rmul__ = binop(_mul_operator, True)
    cls.__truediv__ = binop(divide)
    cls.__rtruediv__ = binop(divide, True)
    cls.__matmul__ = binop(lambda a, b: matmul(a, b, name="matmul"))
    cls.__rmatmul__ = binop(lambda a, b: matmul(a, b, name="matmul"), True)
    cls.__neg__ = lambda self: negative(self)
    cls.__pow__ = binop(lambda a, b: pow(a, b, name="pow"))
    cls.__rpow__ = binop(lambda a, b: pow(a, b, name="pow"), True)
    cls.__floordiv__ = binop(floordiv)
    cls.__rfloordiv__ = binop(floordiv, True)
    cls.__mod__ = binop(lambda a, b: floormod(a, b, name="mod"))
    cls.__rmod__ = binop(lambda a, b: floormod(a, b, name="mod"), True)
    cls.__abs__ = lambda self: abs(self)
    cls.__gt__ = binop(greater)
    cls.__ge__ = binop(greater_equal)
    cls.__lt__ = binop(less)
    cls.__le__ = binop(less_equal)
    cls.__invert__ = lambda self: logical_not(self)


_install_operators(fw.Tensor)
_install_operators(variables.Variable)


def _getitem(self, key):
    """Basic indexing with ints, slices of step 1, None (np.newaxis) and
    Ellipsis: Slice, then Squeeze of the int axes, then ExpandDims of the new
    ones, the last named "strided_slice" as TF's one op."""
    x = convert_to_tensor(self)
    shape = x.shape
    if shape.ndims is None:
        raise NotImplementedError("indexing a tensor of unknown rank is not supported by towerflow")
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise ValueError("Multiple ellipses in slice spec not allowed")
    if any(k is Ellipsis for k in key):
        at = [j for j, k in enumerate(key) if k is Ellipsis][0]
        real = sum(k is not None and k is not Ellipsis for k in key)
        key = key[:at] + (slice(None),) * max(shape.ndims - real, 0) + key[at + 1:]
    begin, size, squeeze_axes, new_axes = [], [], [], []
    dims = {}  # axis -> its length at run time (an int32 scalar), for negative bounds into unknown dims

    def run_time_dim(i):
        if i not in dims:
            dims[i] = _getitem(array_ops.shape(x, out_type=_dtypes.int32), i)
        return dims[i]

    i = 0  # the input axis the next key takes
    out_pos = 0  # the output axis the next kept or new axis lands on
    for k in key:
        if isinstance(k, (bool, np.bool_)):
            raise ValueError("mask cannot be scalar.")
        if k is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        if i >= shape.ndims:
            raise ValueError("Index out of range using input dim %d; input has only %d dims" % (i, shape.ndims))
        dim = shape[i].value
        if isinstance(k, (int, np.integer)):
            if k < 0:
                # x[:, -1] of an unknown dimension (an RNN's last output): its length at run time
                # (an index past the start fails the step, as TF's out-of-range index does).
                k = run_time_dim(i) + int(k) if dim is None else k + dim
            begin.append(k if _is_tensor(k) else int(k))
            size.append(1)
            squeeze_axes.append(i)
        elif isinstance(k, slice) and (k.step in (None, 1)):
            start = k.start or 0
            stop = k.stop
            if start < 0 or (stop is not None and stop < 0):
                length = run_time_dim(i) if dim is None else dim
                start = length + start if start < 0 else start
                stop = length + stop if stop is not None and stop < 0 else stop
            if dim is not None:
                # Python's (and strided_slice's) clamping: x[:100] of 10 is x, x[3:2] is empty.
                start = min(max(start, 0), dim)
                stop = None if stop is None else min(max(stop, 0), dim)
            if _is_tensor(start) or _is_tensor(stop):
                # Clamped at run time as Python clamps: x[-5:] of 3 is x, x[2:-2] of 3 is empty.
                length = run_time_dim(i)
                start = minimum(maximum(start, 0), length)
                begin.append(start)
                if stop is None:
                    size.append(-1)
                else:
                    stop = minimum(maximum(stop, 0), length)
                    size.append(maximum(stop - start, 0))
            else:
                begin.append(int(start))
                size.append(-1 if stop is None else max(0, int(stop) - int(start)))
            out_pos += 1
        else:
            raise NotImplementedError("towerflow's tensor indexing takes ints, slices of step 1, None and "
                                      "Ellipsis, not %r" % (k,))
        i += 1
    for _ in range(i, shape.ndims):
        begin.append(0)
        size.append(-1)
    # One op named "strided_slice" as TF's: the last of Slice, Squeeze and ExpandDims.
    with fw.op_name("strided_slice", x.graph) as name:
        steps = (["Squeeze"] if squeeze_axes else []) + ["ExpandDims"] * len(new_axes)
        out = array_ops.slice(x, begin, size, name=name if not steps else name + "/Slice")
        if squeeze_axes:
            out = array_ops.squeeze(out, squeeze_axes, name=name if len(steps) == 1 else name + "/Squeeze")
        for n, pos in enumerate(new_axes):
            last = n == len(new_axes) - 1
            out = array_ops.expand_dims(out, pos, name=name if last else name + "/ExpandDims")
        return out


fw.Tensor.__getitem__ = _getitem
variables.Variable.__getitem__ = _getitem
