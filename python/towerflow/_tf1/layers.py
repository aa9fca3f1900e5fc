"""tf.layers of TF1's Python API, as functions: dense, conv2d,
max_pooling2d, average_pooling2d, flatten, dropout. Each opens the variable
scope TF1's layer would ("dense", "dense_1", ..., or `name`), makes its
variables there ("kernel", "bias": glorot_uniform and zeros by default,
regularizers into REGULARIZATION_LOSSES) and builds the layer from the
engine's ops under TF's node names ("dense/MatMul", "dense/BiasAdd",
"conv2d/Conv2D", "max_pooling2d/MaxPool", "flatten/Reshape", ...)."""

import numpy as np

from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from . import indexing
from . import math_ops
from . import nn
from . import variables as _vars
from .framework import convert_to_tensor


def _unsupported(**args):
    for what, value in args.items():
        if value is not None:
            raise NotImplementedError("tf.layers' %s is not supported by towerflow" % what)


def _pair(v, what):
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    v = tuple(int(a) for a in v)
    if len(v) != 2:
        raise ValueError("The `%s` argument must be a tuple of 2 integers. Received: %r" % (what, v))
    return v


def _padding(padding):
    p = str(padding).upper()
    if p not in ("SAME", "VALID"):
        raise ValueError("The `padding` argument must be one of 'valid', 'same'. Received: %s" % padding)
    return p


def _channels_last(data_format):
    if data_format not in (None, "channels_last"):
        raise NotImplementedError("tf.layers with data_format=%r is not supported by towerflow (channels_last is)"
                                  % data_format)


def _weights(name, shape, dtype, initializer, default, regularizer, trainable):
    """A layer's variable. A kernel (default None) without an initializer
    takes the variable scope's, else glorot_uniform, as TF1's add_weight."""
    return _vars.get_variable(name, shape, dtype=dtype, initializer=initializer or default,
                              regularizer=regularizer, trainable=trainable)


def _floating(x, layer):
    if not x.dtype.is_floating:
        raise TypeError("Unable to build `%s` layer with non-floating point dtype %s" % (layer, x.dtype.name))


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True,
          name=None, reuse=None):
    """outputs = activation(inputs . kernel + bias), over the last axis of inputs."""
    _unsupported(activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                 bias_constraint=bias_constraint)
    x = convert_to_tensor(inputs)
    _floating(x, "Dense")
    if x.shape.ndims is None or x.shape[-1].value is None:
        raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found `None`.")
    dtype = x.dtype
    in_dim = x.shape[-1].value
    with _vars.variable_scope(name, default_name="dense", reuse=reuse, values=[x]):
        kernel = _weights("kernel", [in_dim, int(units)], dtype, kernel_initializer, None, kernel_regularizer,
                          trainable)
        if x.shape.ndims == 2:
            out = math_ops.matmul(x, kernel, name="MatMul")
        else:
            # TF's tensordot: the leading axes flattened, multiplied, restored.
            lead = x.shape.as_list()[:-1]
            g = fw.get_default_graph()
            with fw.op_name("Tensordot", g) as td:
                flat = array_ops.reshape(x, [-1, in_dim], name=td + "/Reshape")
                prod = math_ops.matmul(flat, kernel, name=td + "/MatMul")
                if all(d is not None for d in lead):
                    shape = lead + [int(units)]
                else:
                    shape = array_ops.concat([array_ops.shape(x)[:-1], [int(units)]], 0, name=td + "/concat")
                out = array_ops.reshape(prod, shape, name=td)
        if use_bias:
            bias = _weights("bias", [int(units)], dtype, bias_initializer, _vars.zeros_initializer(),
                            bias_regularizer, trainable)
            out = nn.bias_add(out, bias, name="BiasAdd")
        return activation(out) if activation is not None else out


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """outputs = activation(conv2d(inputs, kernel) + bias), NHWC, kernel [kh, kw, in, filters]."""
    _unsupported(activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                 bias_constraint=bias_constraint)
    _channels_last(data_format)
    if _pair(dilation_rate, "dilation_rate") != (1, 1):
        raise NotImplementedError("tf.layers.conv2d's dilation_rate is not supported by towerflow")
    x = convert_to_tensor(inputs)
    _floating(x, "Conv2D")
    if x.shape.ndims != 4 or x.shape[-1].value is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`."
                         if x.shape.ndims == 4 else "Input 0 of layer conv2d should have rank 4, found %s" % x.shape)
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(strides, "strides")
    pad = _padding(padding)
    with _vars.variable_scope(name, default_name="conv2d", reuse=reuse, values=[x]):
        kernel = _weights("kernel", [kh, kw, x.shape[-1].value, int(filters)], x.dtype, kernel_initializer, None,
                          kernel_regularizer, trainable)
        out = nn.conv2d(x, kernel, [1, sh, sw, 1], pad, name="Conv2D")
        if use_bias:
            bias = _weights("bias", [int(filters)], x.dtype, bias_initializer, _vars.zeros_initializer(),
                            bias_regularizer, trainable)
            out = nn.bias_add(out, bias, name="BiasAdd")
        return activation(out) if activation is not None else out


def _pooling(op, default_name):
    def fn(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        _channels_last(data_format)
        x = convert_to_tensor(inputs)
        ph, pw = _pair(pool_size, "pool_size")
        sh, sw = _pair(strides, "strides")
        g = x.graph
        with g.as_default(), g.name_scope(name or default_name):
            return op(x, [1, ph, pw, 1], [1, sh, sw, 1], _padding(padding))
    fn.__name__ = default_name
    return fn


max_pooling2d = _pooling(nn.max_pool, "max_pooling2d")
average_pooling2d = _pooling(nn.avg_pool, "average_pooling2d")


def flatten(inputs, name=None, data_format="channels_last"):
    """[batch, ...] -> [batch, product of the rest]."""
    _channels_last(data_format)
    x = convert_to_tensor(inputs)
    g = x.graph
    with g.as_default(), g.name_scope(name or "flatten"):
        rest = x.shape.as_list()[1:] if x.shape.ndims is not None else None
        if rest is not None and all(d is not None for d in rest):
            return array_ops.reshape(x, [-1, int(np.prod(rest, dtype=np.int64))], name="Reshape")
        return array_ops.reshape(x, [array_ops.shape(x)[0], -1], name="Reshape")


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Drops with probability `rate` when training (a Python bool or a bool
    tensor), scaling the kept by 1 / (1 - rate); else the inputs."""
    if noise_shape is not None:
        raise NotImplementedError("tf.layers.dropout's noise_shape is not supported by towerflow")
    x = convert_to_tensor(inputs)
    g = x.graph
    with g.as_default(), g.name_scope(name or "dropout"):
        if array_ops._is_tensor(training):
            dropped = nn.dropout(x, rate=rate, seed=seed)
            return indexing.where_v2(convert_to_tensor(training, dtype=_dtypes.bool), dropped, x, name="cond")
        if training:
            return nn.dropout(x, rate=rate, seed=seed)
        return array_ops.identity(x, name="Identity")


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None, moving_mean_initializer=None,
                        moving_variance_initializer=None, beta_regularizer=None, gamma_regularizer=None,
                        beta_constraint=None, gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None,
                        virtual_batch_size=None, adjustment=None):
    """TF1's batch normalization over every axis but `axis`: in training, the
    batch's mean and variance normalise, and the ops that move moving_mean and
    moving_variance toward them (by 1 - momentum) join UPDATE_OPS (run them
    with the train op, as TF1 requires); in inference, the moving statistics
    normalise. `training` is a Python bool or a bool tensor. As TF's fused
    kernel (its default for 4-D inputs), the moving variance of a 4-D input
    takes the batch variance with Bessel's correction."""
    _unsupported(beta_constraint=beta_constraint, gamma_constraint=gamma_constraint,
                 renorm_clipping=renorm_clipping, virtual_batch_size=virtual_batch_size, adjustment=adjustment)
    if renorm:
        raise NotImplementedError("tf.layers.batch_normalization's renorm is not supported by towerflow")
    x = convert_to_tensor(inputs)
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("Input has undefined rank.")
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise NotImplementedError("tf.layers.batch_normalization over several axes is not supported by towerflow")
        axis = axis[0]
    axis = int(axis) % rank
    channels = x.shape[axis].value
    if channels is None:
        raise ValueError("Input has undefined `axis` dimension. Input shape: %s" % x.shape)
    reduce_axes = [i for i in range(rank) if i != axis]
    bshape = [1] * rank
    bshape[axis] = channels
    dtype = x.dtype
    with _vars.variable_scope(name, default_name="batch_normalization", reuse=reuse, values=[x]):
        gamma = _weights("gamma", [channels], dtype, gamma_initializer, _vars.ones_initializer(), gamma_regularizer,
                         trainable) if scale else None
        beta = _weights("beta", [channels], dtype, beta_initializer, _vars.zeros_initializer(), beta_regularizer,
                        trainable) if center else None
        moving_mean = _vars.get_variable("moving_mean", [channels], dtype=dtype,
                                         initializer=moving_mean_initializer or _vars.zeros_initializer(),
                                         trainable=False)
        moving_var = _vars.get_variable("moving_variance", [channels], dtype=dtype,
                                        initializer=moving_variance_initializer or _vars.ones_initializer(),
                                        trainable=False)

        def shaped(v):
            return v if v is None or axis == rank - 1 else array_ops.reshape(v, bshape)

        def normalize(mean, var):
            return nn.batch_normalization(x, shaped(mean), shaped(var), shaped(beta), shaped(gamma), epsilon)

        if not array_ops._is_tensor(training) and not training:
            return normalize(moving_mean.value(), moving_var.value())
        mean, var = nn.moments(x, reduce_axes)
        out = normalize(mean, var)
        if rank == 4 and fused is not False:
            # The fused kernel's moving variance: the unbiased batch variance.
            n = math_ops.divide(math_ops.reduce_sum(array_ops.ones_like(x)), float(channels))
            var_update = math_ops.multiply(var, math_ops.divide(n, math_ops.maximum(n - 1.0, 1.0)))
        else:
            var_update = var
        decay = 1.0 - momentum
        new_mean = math_ops.subtract(moving_mean.value(), (moving_mean.value() - mean) * decay)
        new_var = math_ops.subtract(moving_var.value(), (moving_var.value() - var_update) * decay)
        if array_ops._is_tensor(training):
            t = convert_to_tensor(training, dtype=_dtypes.bool)
            out = indexing.where_v2(t, out, normalize(moving_mean.value(), moving_var.value()))
            new_mean = indexing.where_v2(t, new_mean, moving_mean.value())
            new_var = indexing.where_v2(t, new_var, moving_var.value())
        g = fw.get_default_graph()
        g.add_to_collection("update_ops", _vars.assign(moving_mean, new_mean, name="AssignMovingAvg"))
        g.add_to_collection("update_ops", _vars.assign(moving_var, new_var, name="AssignMovingAvg_1"))
        return out
