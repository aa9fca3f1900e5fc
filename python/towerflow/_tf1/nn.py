"""tf.nn of TF1's Python API: activations, bias, convolution, pooling,
dropout, losses."""

import numpy as np

from .. import _core
from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from . import math_ops
from .framework import convert_to_tensor, make_op, make_tensor

sigmoid = math_ops.sigmoid
tanh = math_ops.tanh


def relu(features, name=None):
    return make_tensor("Relu", [convert_to_tensor(features)], name=name or "Relu")


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


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    value = input if value is None else value
    if data_format != "NHWC":
        raise NotImplementedError("towerflow's max_pool takes data_format NHWC only")
    return make_tensor("MaxPool", [convert_to_tensor(value)],
                       {"ksize": [int(k) for k in ksize], "strides": [int(s) for s in strides], "padding": padding},
                       name=name or "MaxPool")


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    if noise_shape is not None:
        raise NotImplementedError("towerflow's dropout has no noise_shape")
    if rate is None:
        if keep_prob is None:
            raise ValueError("dropout needs keep_prob or rate")
        if isinstance(keep_prob, fw.Tensor):
            raise NotImplementedError("towerflow's dropout takes a Python keep_prob, not a Tensor")
        rate = 1.0 - float(keep_prob)
    x = convert_to_tensor(x)
    g = x.graph
    scope = g._scope.with_op_name(name) if name else g._scope
    out = _core.dropout(scope, x._output, float(rate), 0 if seed is None else int(seed))
    return g._tensor(out)


def l2_loss(t, name=None):
    return make_tensor("L2Loss", [convert_to_tensor(t)], name=name or "L2Loss")


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None):
    if _sentinel is not None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits` with named arguments (labels=..., logits=...)")
    axis = dim if axis is None else axis
    x = convert_to_tensor(logits)
    if axis not in (-1, None) and not (x.shape.ndims is not None and axis == x.shape.ndims - 1):
        raise NotImplementedError("towerflow's softmax cross-entropy is over the last axis")
    y = convert_to_tensor(labels, dtype=x.dtype)
    # The gradient flows into the logits; labels are data (v1's contract; v2
    # would also differentiate the labels, which towerflow's op does not).
    return make_op("SoftmaxCrossEntropyWithLogits", [x, y], name=name or "SoftmaxCrossEntropyWithLogits").outputs[0]


softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    if _sentinel is not None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named arguments")
    x = convert_to_tensor(logits)
    y = convert_to_tensor(labels)
    if not y.dtype.is_integer:
        raise TypeError("labels must be int32 or int64, got %s" % y.dtype.name)
    return make_op("SparseSoftmaxCrossEntropyWithLogits", [x, y],
                   name=name or "SparseSoftmaxCrossEntropyWithLogits").outputs[0]


def moments(x, axes, shift=None, name=None, keep_dims=False, keepdims=None):
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = convert_to_tensor(x)
    mean = math_ops.reduce_mean(x, axes, keepdims=True)
    var = math_ops.reduce_mean(math_ops.square(x - mean), axes, keepdims=keep)
    if not keep:
        mean = array_ops.squeeze(mean, list(axes) if not isinstance(axes, int) else [axes])
    return mean, var


def in_top_k(predictions, targets, k, name=None):
    fw._raise_unsupported("tf.nn.in_top_k")


del np, _dtypes
