"""Math ops of TF1's Python API, and the operators of Tensor and Variable."""

import numpy as np

from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from . import variables
from .framework import convert_to_tensor, make_tensor


def _binary_inputs(x, y):
    """Tensors for a binary op: a Python or NumPy operand takes the other's dtype."""
    x_is = isinstance(x, fw.Tensor) or hasattr(x, "_tw_as_tensor")
    y_is = isinstance(y, fw.Tensor) or hasattr(y, "_tw_as_tensor")
    if x_is and not y_is:
        x = convert_to_tensor(x)
        return x, convert_to_tensor(y, dtype=x.dtype)
    if y_is and not x_is:
        y = convert_to_tensor(y)
        return convert_to_tensor(x, dtype=y.dtype), y
    return convert_to_tensor(x), convert_to_tensor(y)


def _binary(op_type, default_name):
    def fn(x, y, name=None):
        a, b = _binary_inputs(x, y)
        return make_tensor(op_type, [a, b], name=name or default_name)
    fn.__name__ = default_name
    return fn


add = _binary("Add", "add")
subtract = _binary("Sub", "sub")
sub = subtract
multiply = _binary("Mul", "mul")
mul = multiply
maximum = _binary("Maximum", "Maximum")
equal = _binary("Equal", "Equal")
greater_equal = _binary("GreaterEqual", "GreaterEqual")


def divide(x, y, name=None):
    a, b = _binary_inputs(x, y)
    if not a.dtype.is_floating:
        raise NotImplementedError("towerflow's tf.divide is for floating types (%s given)" % a.dtype.name)
    return make_tensor("Div", [a, b], name=name or "truediv")


truediv = divide
div = divide


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
sigmoid = _unary("Sigmoid", "Sigmoid")
tanh = _unary("Tanh", "Tanh")


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, name=None):
    x, y = _binary_inputs(a, b)
    if x.shape.ndims not in (None, 2) or y.shape.ndims not in (None, 2):
        raise NotImplementedError("towerflow's tf.matmul multiplies matrices (rank 2); got %s and %s"
                                  % (x.shape, y.shape))
    return make_tensor("MatMul", [x, y], {"transpose_a": bool(transpose_a or adjoint_a),
                                          "transpose_b": bool(transpose_b or adjoint_b)}, name=name or "MatMul")


def add_n(inputs, name=None):
    inputs = [convert_to_tensor(i) for i in inputs]
    if len(inputs) == 1:
        return inputs[0]
    return make_tensor("AddN", inputs, {"N": len(inputs)}, name=name or "AddN")


def _axes(x, axis):
    if axis is None:
        if x.shape.ndims is None:
            raise NotImplementedError("reducing every axis of a tensor of unknown rank is not supported by towerflow")
        axis = list(range(x.shape.ndims))
    elif isinstance(axis, (int, np.integer)):
        axis = [int(axis)]
    return fw.constant(np.asarray(axis, dtype=np.int32), _dtypes.int32, name="reduction_indices")


def _reduction(op_type, default_name):
    def fn(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
        x = convert_to_tensor(input_tensor)
        axis = reduction_indices if axis is None else axis
        keep = bool(keepdims if keepdims is not None else (keep_dims or False))
        return make_tensor(op_type, [x, _axes(x, axis)], {"keep_dims": keep}, name=name or default_name)
    fn.__name__ = default_name
    return fn


reduce_sum = _reduction("Sum", "Sum")
reduce_mean = _reduction("Mean", "Mean")
reduce_max = _reduction("Max", "Max")


def argmax(input, axis=None, name=None, dimension=None, output_type=_dtypes.int64):  # noqa: A002
    axis = dimension if axis is None else axis
    axis = 0 if axis is None else axis
    x = convert_to_tensor(input)
    dim = fw.constant(int(axis), _dtypes.int32, name="dimension")
    return make_tensor("ArgMax", [x, dim], {"output_type": _dtypes.as_dtype(output_type).name},
                       name=name or "ArgMax")


def _install_operators(cls):
    def binop(fn, reverse=False):
        if reverse:
            return lambda self, other: fn(other, self)
        return lambda self, other: fn(self, other)

    cls.__add__ = binop(add)
    cls.__radd__ = binop(add, True)
    cls.__sub__ = binop(subtract)
    cls.__rsub__ = binop(subtract, True)
    cls.__mul__ = binop(multiply)
    cls.__rmul__ = binop(multiply, True)
    cls.__truediv__ = binop(divide)
    cls.__rtruediv__ = binop(divide, True)
    cls.__matmul__ = binop(matmul)
    cls.__rmatmul__ = binop(matmul, True)
    cls.__neg__ = lambda self: negative(self)
    cls.__pow__ = lambda self, p: _pow(self, p)


def _pow(x, p):
    if p == 2:
        return square(x)
    if p == 0.5:
        return sqrt(x)
    raise NotImplementedError("towerflow has no Pow op: x**%r (only x**2 and x**0.5)" % (p,))


_install_operators(fw.Tensor)
_install_operators(variables.Variable)


def _getitem(self, key):
    """Basic indexing with ints and slices of step 1 (Slice, then Squeeze)."""
    x = convert_to_tensor(self)
    shape = x.shape
    if shape.ndims is None:
        raise NotImplementedError("indexing a tensor of unknown rank is not supported by towerflow")
    if not isinstance(key, tuple):
        key = (key,)
    begin, size, squeeze_axes = [], [], []
    for i, k in enumerate(key):
        dim = shape[i].value
        if isinstance(k, (int, np.integer)):
            if k < 0:
                if dim is None:
                    raise NotImplementedError("negative index into an unknown dimension")
                k += dim
            begin.append(int(k))
            size.append(1)
            squeeze_axes.append(i)
        elif isinstance(k, slice) and (k.step in (None, 1)):
            start = k.start or 0
            stop = k.stop
            if start < 0 or (stop is not None and stop < 0):
                if dim is None:
                    raise NotImplementedError("negative slice bounds into an unknown dimension")
                start = start + dim if start < 0 else start
                stop = stop + dim if stop is not None and stop < 0 else stop
            begin.append(int(start))
            size.append(-1 if stop is None else int(stop) - int(start))
        else:
            raise NotImplementedError("towerflow's tensor indexing takes ints and slices of step 1, not %r" % (k,))
    for _ in range(len(key), shape.ndims):
        begin.append(0)
        size.append(-1)
    out = array_ops.slice(x, begin, size, name="strided_slice")
    return array_ops.squeeze(out, squeeze_axes) if squeeze_axes else out


fw.Tensor.__getitem__ = _getitem
variables.Variable.__getitem__ = _getitem
