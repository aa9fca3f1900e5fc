"""tf.nn of TF1's Python API: activations, bias, convolution, pooling,
dropout, losses."""

import numpy as np

from .. import _core
from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from . import indexing
from . import math_ops
from .framework import convert_to_tensor, make_op, make_tensor

sigmoid = math_ops.sigmoid
tanh = math_ops.tanh


def relu(features, name=None):
    return make_tensor("Relu", [convert_to_tensor(features)], name=name or "Relu")


# The activations below are compositions of the engine's ops (each with a GPU
# kernel), named as TF's one op; values and gradients are TF's away from the
# kinks (at x = 0, and 6 for relu6, the subgradient may be the other side's).
def relu6(features, name=None):
    """min(max(x, 0), 6)."""
    x = convert_to_tensor(features)
    with fw.op_name(name or "Relu6", x.graph) as name:
        return math_ops.minimum(relu(x, name=name + "/Relu"), fw.constant(6, dtype=x.dtype, name=name + "/six"),
                                name=name)


def leaky_relu(features, alpha=0.2, name=None):
    """x where x > 0, alpha * x elsewhere: max(alpha x, x) for alpha <= 1, min
    for alpha > 1."""
    x = convert_to_tensor(features)
    if x.dtype.is_integer:
        x = array_ops.cast(x, _dtypes.float32)
    with fw.op_name(name or "LeakyRelu", x.graph) as name:
        scaled = math_ops.multiply(fw.constant(alpha, dtype=x.dtype, name=name + "/alpha"), x, name=name + "/mul")
        pick = math_ops.maximum if alpha <= 1 else math_ops.minimum
        return pick(scaled, x, name=name)


def softplus(features, name=None):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): no overflow for large x."""
    x = convert_to_tensor(features)
    with fw.op_name(name or "Softplus", x.graph) as name:
        tail = make_tensor("Log1p", [math_ops.exp(math_ops.negative(math_ops.abs(x, name=name + "/Abs"),
                                                                    name=name + "/Neg"), name=name + "/Exp")],
                           name=name + "/Log1p")
        return math_ops.add(relu(x, name=name + "/Relu"), tail, name=name)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x^2, axis), epsilon)), as TF's."""
    axis = dim if axis is None else axis
    x = convert_to_tensor(x)
    with fw.op_name(name or "l2_normalize", x.graph) as name:
        square_sum = math_ops.reduce_sum(math_ops.square(x, name=name + "/Square"), axis, keepdims=True,
                                         name=name + "/Sum")
        inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, fw.constant(epsilon, dtype=x.dtype,
                                                                            name=name + "/epsilon"),
                                                   name=name + "/Maximum"), name=name + "/Rsqrt")
        return math_ops.multiply(x, inv_norm, name=name)


def softmax(logits, axis=None, name=None, dim=None):
    axis = dim if axis is None else axis
    x = convert_to_tensor(logits)
    if axis not in (None, -1) and not (x.shape.ndims is not None and axis == x.shape.ndims - 1):
        raise NotImplementedError("towerflow's softmax is over the last axis")
    return make_tensor("Softmax", [x], name=name or "Softmax")


def bias_add(value, bias, data_format=None, name=None):
    if data_format not in (None, "NHWC", "N...C"):
        raise NotImplementedError("towerflow's bias_add takes data_format NHWC only")
    v = convert_to_tensor(value)
    with fw.op_name(name or "BiasAdd", v.graph) as name:
        b = convert_to_tensor(bias, dtype=v.dtype, name=name + "/bias")
        return make_tensor("BiasAdd", [v, b], name=name)


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True, data_format="NHWC",  # noqa: A002
           dilations=None, name=None, filters=None):
    filter = filters if filter is None else filter  # noqa: A001
    if data_format != "NHWC":
        raise NotImplementedError("towerflow's conv2d takes data_format NHWC only")
    if dilations not in (None, [1, 1, 1, 1], (1, 1, 1, 1)):
        raise NotImplementedError("towerflow's conv2d has no dilations")
    x = convert_to_tensor(input)
    f = convert_to_tensor(filter, dtype=x.dtype)
    return make_tensor("Conv2D", [x, f], {"strides": [int(s) for s in strides], "padding": padding},
                       name=name or "Conv2D")


def _window(v, what):
    """A pooling window or stride as TF's v1 wrappers take it: an int, or a
    list of 1, 2 or 4 ints; as [1, h, w, 1]."""
    if not isinstance(v, (list, tuple)) and hasattr(v, "__index__"):
        v = [v]
    v = [int(a) for a in v]
    if len(v) == 1:
        return [1, v[0], v[0], 1]
    if len(v) == 2:
        return [1, v[0], v[1], 1]
    if len(v) == 4:
        return v
    raise ValueError("%s should be of length 1, 2 or 4 but was %d" % (what, len(v)))


def _pooling(op, what):
    def fn(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
        value = input if value is None else value
        if data_format != "NHWC":
            raise NotImplementedError("towerflow's %s takes data_format NHWC only" % what)
        return make_tensor(op, [convert_to_tensor(value)],
                           {"ksize": _window(ksize, "ksize"), "strides": _window(strides, "strides"),
                            "padding": padding}, name=name or op)
    fn.__name__ = what
    return fn


max_pool = _pooling("MaxPool", "max_pool")
# The mean of each window, over its positions inside the input (TF's rule for SAME).
avg_pool = _pooling("AvgPool", "avg_pool")


def lrn(input, depth_radius=5, bias=1, alpha=1, beta=0.5, name=None):  # noqa: A002
    """tf.nn.lrn (local_response_normalization): each element of a 4-D input
    divided by (bias + alpha * the sum of squares of its depth window of
    radius depth_radius) ** beta (the engine's LRN op; LRNGrad its gradient)."""
    x = convert_to_tensor(input)
    return make_tensor("LRN", [x], {"depth_radius": int(depth_radius), "bias": float(bias), "alpha": float(alpha),
                                    "beta": float(beta)}, name=name or "LRN")


local_response_normalization = lrn


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    if noise_shape is not None:
        raise NotImplementedError("towerflow's dropout has no noise_shape")
    if rate is None:
        if keep_prob is None:
            raise ValueError("dropout needs keep_prob or rate")
        if isinstance(keep_prob, fw.Tensor) or hasattr(keep_prob, "_tw_as_tensor"):
            return _dropout_of_tensor(convert_to_tensor(x), keep_prob, seed, name)
        rate = 1.0 - float(keep_prob)
    elif isinstance(rate, fw.Tensor) or hasattr(rate, "_tw_as_tensor"):
        # A rate fed at run time: keep_prob = 1 - rate.
        x = convert_to_tensor(x)
        r = convert_to_tensor(rate, preferred_dtype=x.dtype)
        with x.graph.as_default():
            return _dropout_of_tensor(x, math_ops.subtract(fw.constant(1.0, dtype=r.dtype), r), seed, name)
    x = convert_to_tensor(x)
    g = x.graph
    scope = g._scope.with_op_name(name) if name else g._scope
    out = _core.dropout(scope, x._output, float(rate), 0 if seed is None else int(seed))
    return g._tensor(out)


def _dropout_of_tensor(x, keep_prob, seed, name):
    """Dropout with a keep probability fed at run time (deep MNIST's
    keep_prob placeholder): TF's x / keep_prob * floor(keep_prob + U[0, 1)),
    the mask drawn as U >= 1 - keep_prob; keep_prob 1 passes x unchanged."""
    from . import graph_ops
    with fw.op_name(name or "dropout", x.graph) as name:
        kp = array_ops.reshape(convert_to_tensor(keep_prob, preferred_dtype=x.dtype), [], name=name + "/keep_prob")
        u = graph_ops.random_uniform(array_ops.shape(x, name=name + "/Shape"), dtype=x.dtype, seed=seed,
                                     name=name + "/random_uniform")
        keep = math_ops.greater_equal(u, math_ops.subtract(fw.constant(1.0, dtype=x.dtype, name=name + "/one"), kp,
                                                           name=name + "/sub"), name=name + "/GreaterEqual")
        mask = array_ops.cast(keep, x.dtype, name=name + "/Cast")
        out = math_ops.multiply(math_ops.divide(x, kp, name=name + "/div"), mask, name=name)
        if out.shape.ndims is None and x.shape.ndims is not None:
            try:
                out.set_shape(x.shape)  # as TF's dropout: x's static shape
            except NotImplementedError:
                pass
        return out


def l2_loss(t, name=None):
    return make_tensor("L2Loss", [convert_to_tensor(t)], name=name or "L2Loss")


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None):
    if _sentinel is not None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits` with named arguments (labels=..., logits=...)")
    axis = dim if axis is None else axis
    x = convert_to_tensor(logits)
    if axis not in (-1, None) and not (x.shape.ndims is not None and axis == x.shape.ndims - 1):
        raise NotImplementedError("towerflow's softmax cross-entropy is over the last axis")
    y = convert_to_tensor(labels)
    if y.dtype != x.dtype:
        y = array_ops.cast(y, x.dtype)  # TF casts integer (one-hot) labels to the logits' type
    # The gradient flows into the logits; labels are data (v1's contract).
    return _over_last_axis(x, y, False, lambda a, b, n: make_op("SoftmaxCrossEntropyWithLogits", [a, b],
                                                                name=n).outputs[0],
                           name or "SoftmaxCrossEntropyWithLogits")


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, axis=None, name=None, dim=None):
    """v1's loss, whose gradient also flows into the labels (-log_softmax(logits)
    per label, as TF's v2): the engine's op computes the loss and the logits'
    gradient, and a term of value 0 (labels - stop_gradient(labels), times the
    stopped log-softmax) carries the labels' gradient."""
    if _sentinel is not None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits_v2` with named arguments")
    axis = dim if axis is None else axis
    x = convert_to_tensor(logits)
    y = convert_to_tensor(labels)
    if y.dtype != x.dtype:
        y = array_ops.cast(y, x.dtype)
    with fw.op_name(name or "softmax_cross_entropy_with_logits", x.graph) as name:
        stopped = array_ops.stop_gradient(y, name=name + "/labels_stop_gradient")
        loss = softmax_cross_entropy_with_logits(labels=stopped, logits=x, axis=axis, name=name + "/loss")
        shifted = math_ops.subtract(x, math_ops.reduce_max(x, -1, keepdims=True, name=name + "/Max"),
                                    name=name + "/shifted")
        log_sum = math_ops.log(math_ops.reduce_sum(math_ops.exp(shifted, name=name + "/Exp"), -1, keepdims=True,
                                                   name=name + "/Sum"), name=name + "/Log")
        log_softmax = array_ops.stop_gradient(math_ops.subtract(shifted, log_sum, name=name + "/log_softmax"),
                                              name=name + "/log_softmax_stop_gradient")
        zero = math_ops.subtract(y, stopped, name=name + "/zero")
        carried = math_ops.negative(math_ops.reduce_sum(math_ops.multiply(zero, log_softmax, name=name + "/mul"),
                                                        -1, name=name + "/labels_term"), name=name + "/Neg")
        return math_ops.add(loss, carried, name=name)


def _over_last_axis(logits, labels, sparse, build, name):
    """The engine's cross-entropy ops take [batch, classes]: logits of higher
    rank (a sequence's [batch, time, classes]) are flattened to it, and the
    loss takes their leading dimensions back, as TF's wrappers do."""
    rank = logits.shape.ndims
    if rank is None or rank == 2:
        return build(logits, labels, name)
    if rank < 2:
        raise ValueError("logits must have rank 2 or more, got shape %s" % logits.shape)
    with fw.op_name(name, logits.graph) as scoped:
        shape = array_ops.shape(logits, name=scoped + "/Shape")
        classes = array_ops.slice(shape, [rank - 1], [1], name=scoped + "/classes")
        flat_shape = array_ops.concat([array_ops._int32([-1], scoped + "/minus_one"), classes],
                                      0, name=scoped + "/flat_shape")
        flat_logits = array_ops.reshape(logits, flat_shape, name=scoped + "/flat_logits")
        flat_labels = array_ops.reshape(labels, [-1] if sparse else flat_shape, name=scoped + "/flat_labels")
        loss = build(flat_logits, flat_labels, scoped + "/flat_loss")
        lead = array_ops.slice(shape, [0], [rank - 1], name=scoped + "/lead")
        out = array_ops.reshape(loss, lead, name=scoped)
        static = logits.shape.as_list()[:-1]
        if all(d is not None for d in static):
            out.set_shape(static)
        return out


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    if _sentinel is not None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named arguments")
    x = convert_to_tensor(logits)
    y = convert_to_tensor(labels)
    if not y.dtype.is_integer:
        raise TypeError("labels must be int32 or int64, got %s" % y.dtype.name)
    return _over_last_axis(x, y, True, lambda a, b, n: make_op("SparseSoftmaxCrossEntropyWithLogits", [a, b],
                                                               name=n).outputs[0],
                           name or "SparseSoftmaxCrossEntropyWithLogits")


def moments(x, axes, shift=None, name=None, keep_dims=False, keepdims=None):
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = convert_to_tensor(x)
    mean = math_ops.reduce_mean(x, axes, keepdims=True)
    var = math_ops.reduce_mean(math_ops.square(x - mean), axes, keepdims=keep)
    if not keep:
        mean = array_ops.squeeze(mean, list(axes) if not isinstance(axes, int) else [axes])
    return mean, var


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) / sqrt(variance + epsilon) * scale + offset, as TF's
    x * inv + (offset - mean * inv) with inv = scale / sqrt(variance + epsilon)."""
    x = convert_to_tensor(x)
    g = x.graph
    with g.as_default(), g.name_scope(name or "batchnorm"):
        inv = math_ops.divide(1.0, math_ops.sqrt(math_ops.add(variance, variance_epsilon, name="add"), name="Rsqrt"),
                              name="Rsqrt_inv")
        if scale is not None:
            inv = math_ops.multiply(inv, scale, name="mul")
        shift = math_ops.negative(math_ops.multiply(mean, inv, name="mul_2"), name="neg") if offset is None else \
            math_ops.subtract(offset, math_ops.multiply(mean, inv, name="mul_2"), name="sub")
        return math_ops.add(math_ops.multiply(x, inv, name="mul_1"), shift, name="add_1")


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """TF's stable form: max(x, 0) - x * z + log(1 + exp(-|x|)), element-wise."""
    if _sentinel is not None:
        raise ValueError("Only call `sigmoid_cross_entropy_with_logits` with named arguments (labels=..., logits=...)")
    x = convert_to_tensor(logits)
    z = convert_to_tensor(labels, dtype=x.dtype) if not array_ops._is_tensor(labels) else convert_to_tensor(labels)
    if z.dtype != x.dtype:
        raise ValueError("logits and labels must have the same dtype (%s vs %s)" % (x.dtype.name, z.dtype.name))
    if x.shape.ndims is not None and z.shape.ndims is not None and not x.shape.is_compatible_with(z.shape):
        raise ValueError("logits and labels must have the same shape (%s vs %s)" % (x.shape, z.shape))
    g = x.graph
    with g.as_default(), fw.op_name(name or "logistic_loss", g) as name:
        zeros = array_ops.zeros_like(x, name=name + "/zeros_like")
        cond = math_ops.greater_equal(x, zeros, name=name + "/GreaterEqual")
        relu_logits = indexing.where_v2(cond, x, zeros, name=name + "/Select")
        neg_abs = indexing.where_v2(cond, math_ops.negative(x, name=name + "/Neg"), x, name=name + "/Select_1")
        softplus = make_tensor("Log1p", [math_ops.exp(neg_abs, name=name + "/Exp")], name=name + "/Log1p")
        return math_ops.add(math_ops.subtract(relu_logits, math_ops.multiply(x, z, name=name + "/mul"),
                                              name=name + "/sub"), softplus, name=name)


def log_softmax(logits, axis=None, name=None, dim=None):
    """logits - max - log(sum(exp(logits - max))) over the last axis."""
    axis = dim if axis is None else axis
    x = convert_to_tensor(logits)
    if axis not in (None, -1) and not (x.shape.ndims is not None and axis == x.shape.ndims - 1):
        raise NotImplementedError("towerflow's log_softmax is over the last axis")
    with fw.op_name(name or "LogSoftmax", x.graph) as name:
        shifted = math_ops.subtract(x, array_ops.stop_gradient(
            math_ops.reduce_max(x, -1, keepdims=True, name=name + "/Max"), name=name + "/StopGradient"),
            name=name + "/shifted")
        log_sum = math_ops.log(math_ops.reduce_sum(math_ops.exp(shifted, name=name + "/Exp"), -1, keepdims=True,
                                                   name=name + "/Sum"), name=name + "/Log")
        return math_ops.subtract(shifted, log_sum, name=name)


del np, _dtypes
