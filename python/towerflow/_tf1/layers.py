"""tf.layers of TF1's Python API: the layer classes (Layer, Dense, Conv2D,
MaxPooling2D, AveragePooling2D, Flatten, Dropout, BatchNormalization) and
the functions made from them (dense, conv2d, max_pooling2d,
average_pooling2d, flatten, dropout, batch_normalization), as TF1 makes
each function from its class.

A layer object captures a variable scope at its first call ("dense",
"dense_1", ..., below the current variable scope; a function's `name` is
that scope exactly, a class's `name` a default made unique), makes its
variables there in build() ("kernel", "bias": glorot_uniform and zeros by
default, regularizers into REGULARIZATION_LOSSES) and builds its ops in
call() under TF's node names ("dense/MatMul", "dense/BiasAdd",
"conv2d/Conv2D", "max_pooling2d/MaxPool", "flatten/Reshape", ...). Every
later call re-enters that scope with reuse: one set of variables, the ops
of each call in the scope's first name scope ("dense/MatMul_1"). A layer's
`name` is TF1's: its class's snake-case name numbered per graph from 1
("dense_1") unless given."""

import re

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


def _layer_names(graph):
    """The graph's count of layer objects made, by base name (TF1 numbers a
    layer's name from 1: "dense_1", "dense_2")."""
    if not hasattr(graph, "_layer_name_counts"):
        graph._layer_name_counts = {}
    return graph._layer_name_counts


def _snake_case(name):
    """A class name as TF's layers name their objects: "MaxPooling2D" ->
    "max_pooling2d", "BatchNormalization" -> "batch_normalization"."""
    s = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    s = re.sub("([a-z])([A-Z])", r"\1_\2", s).lower()
    return s if s[0] != "_" else "private" + s


class Layer:
    """tf.layers.Layer: the base of TF1's layer objects. Subclasses make
    their variables in build(input_shape) with add_weight and their ops in
    call(inputs, ...); __call__ (and apply) runs build once, then call, in
    the layer's variable scope (the module comment)."""

    _KNOWN_KWARGS = ("input_shape", "batch_input_shape", "_scope", "_reuse")

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        for key in kwargs:
            if key not in self._KNOWN_KWARGS:
                raise TypeError("Keyword argument not understood:", key)
        self.trainable = bool(trainable)
        self._dtype = None if dtype is None else _dtypes.as_dtype(dtype)
        self.built = False
        self._scope_name = kwargs.get("_scope")
        self._reuse = kwargs.get("_reuse")
        self._scope = None
        self._variables = []
        self._updates = []
        self._losses = []
        if name is not None:
            self._name = self._base = str(name)
        else:
            base = _snake_case(type(self).__name__)
            counts = _layer_names(fw.get_default_graph())
            counts[base] = counts.get(base, 0) + 1
            self._name = "%s_%d" % (base, counts[base])
            self._base = base

    # -- what TF1's layers answer
    @property
    def name(self):
        return self._name

    @property
    def dtype(self):
        """The layer's dtype as TF's layers give it: its name ("float32"), or
        None until given or set by the first call's inputs."""
        return None if self._dtype is None else self._dtype.name

    @property
    def scope_name(self):
        if self._scope is None:
            raise ValueError("No name available for layer scope because the layer \"%s\" has not been used yet. "
                             "The scope name is determined the first time the layer instance is called." % self._name)
        return self._scope.name

    @property
    def trainable_variables(self):
        return [v for v in self._variables if v.trainable] if self.trainable else []

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self):
        return [v for v in self._variables if not (self.trainable and v.trainable)]

    non_trainable_weights = non_trainable_variables

    @property
    def variables(self):
        """The trainable variables, then the others (TF's order)."""
        return self.trainable_variables + self.non_trainable_variables

    weights = variables

    def count_params(self):
        if not self.built:
            raise ValueError("You tried to call `count_params` on layer %s, but the layer isn't built. You can build "
                             "it manually via: `%s.build(batch_input_shape)`." % (self._name, self._name))
        return int(sum(np.prod(v.shape.as_list(), dtype=np.int64) for v in self.weights))

    def add_loss(self, losses, inputs=None):
        """Adds losses to the layer's, and (TF1's layers) to REGULARIZATION_LOSSES."""
        losses = list(losses) if isinstance(losses, (list, tuple)) else [losses]
        g = fw.get_default_graph()
        for loss in losses:
            t = convert_to_tensor(loss)
            self._losses.append(t)
            g.add_to_collection("regularization_losses", t)

    @property
    def updates(self):
        return list(self._updates)

    @property
    def losses(self):
        return list(self._losses)

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None, trainable=None,
                   constraint=None, **kwargs):
        """A variable of the layer's scope (made, or found under reuse)."""
        _unsupported(constraint=constraint)
        g = fw.get_default_graph()
        trainable = self.trainable if trainable is None else (bool(trainable) and self.trainable)
        before = len(g.get_collection("regularization_losses"))
        v = _vars.get_variable(name, shape, dtype=_dtypes.as_dtype(dtype or self._dtype or _dtypes.float32),
                               initializer=initializer, regularizer=regularizer, trainable=trainable)
        self._losses.extend(g.get_collection("regularization_losses")[before:])
        if all(v is not known for known in self._variables):
            self._variables.append(v)
        return v

    def add_update(self, updates):
        self._updates.extend(updates if isinstance(updates, (list, tuple)) else [updates])

    def build(self, input_shape):
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def __call__(self, inputs, *args, **kwargs):
        scope = kwargs.pop("scope", None)  # TF1's: the scope a first call captures
        if scope is not None and self._scope is None:
            self._scope_name = scope
        x = inputs if isinstance(inputs, (list, tuple)) else convert_to_tensor(inputs)
        g = fw._graph_of(x if isinstance(x, (list, tuple)) else [x])
        with g.as_default():
            if self._scope is None:
                if self._scope_name is not None or self._reuse:
                    opened = _vars.variable_scope(self._scope_name or self._base, values=[])
                else:
                    opened = _vars.variable_scope(None, default_name=self._base, values=[])
                with opened as vs:
                    self._scope = vs
            first = not self.built
            updates_before = len(self._updates)
            with _vars._layer_scope(self._scope, self._reuse if first else True):
                if first:
                    if self._dtype is None and not isinstance(x, (list, tuple)):
                        self._dtype = x.dtype.base_dtype
                    self.build([t.shape for t in x] if isinstance(x, (list, tuple)) else x.shape)
                    self.built = True
                out = self.call(x, *args, **kwargs)
            for u in self._updates[updates_before:]:
                g.add_to_collection("update_ops", u)
            return out

    def apply(self, inputs, *args, **kwargs):
        return self.__call__(inputs, *args, **kwargs)


class Dense(Layer):
    """outputs = activation(inputs . kernel + bias), over the last axis of inputs."""


    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        _unsupported(activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                     bias_constraint=bias_constraint)
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel = self.bias = None

    def build(self, input_shape):
        shape = fw.as_shape(input_shape)
        if not self._dtype.is_floating:
            raise TypeError("A Dense layer can only be built with a floating-point dtype. Received: dtype=%r"
                            % (self._dtype,))
        if shape.ndims is None or shape[-1].value is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found `None`.")
        # A kernel without an initializer takes the variable scope's, else
        # glorot_uniform (get_variable's default), as TF1's add_weight.
        self.kernel = self.add_weight("kernel", [shape[-1].value, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.units], initializer=self.bias_initializer or
                                        _vars.zeros_initializer(), regularizer=self.bias_regularizer)

    def call(self, inputs):
        x = inputs
        in_dim = self.kernel.shape[0].value
        if x.shape.ndims == 2:
            out = math_ops.matmul(x, self.kernel, name="MatMul")
        else:
            # TF's tensordot: the leading axes flattened, multiplied, restored.
            lead = x.shape.as_list()[:-1] if x.shape.ndims is not None else None
            g = fw.get_default_graph()
            with fw.op_name("Tensordot", g) as td:
                flat = array_ops.reshape(x, [-1, in_dim], name=td + "/Reshape")
                prod = math_ops.matmul(flat, self.kernel, name=td + "/MatMul")
                if lead is not None and all(d is not None for d in lead):
                    shape = lead + [self.units]
                else:
                    shape = array_ops.concat([array_ops.shape(x)[:-1], [self.units]], 0, name=td + "/concat")
                out = array_ops.reshape(prod, shape, name=td)
        if self.use_bias:
            out = nn.bias_add(out, self.bias, name="BiasAdd")
        return self.activation(out) if self.activation is not None else out


class Conv2D(Layer):
    """outputs = activation(conv2d(inputs, kernel) + bias), NHWC, kernel [kh, kw, in, filters]."""


    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                 dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None, **kwargs):
        _unsupported(activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                     bias_constraint=bias_constraint)
        _channels_last(data_format)
        if _pair(dilation_rate, "dilation_rate") != (1, 1):
            raise NotImplementedError("tf.layers.conv2d's dilation_rate is not supported by towerflow")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding).lower()
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel = self.bias = None

    def build(self, input_shape):
        shape = fw.as_shape(input_shape)
        if not self._dtype.is_floating:
            raise TypeError("A Conv2D layer can only be built with a floating-point dtype. Received: dtype=%r"
                            % (self._dtype,))
        if shape.ndims != 4:
            raise ValueError("Input 0 of layer conv2d should have rank 4, found %s" % shape)
        if shape[-1].value is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        kh, kw = self.kernel_size
        self.kernel = self.add_weight("kernel", [kh, kw, shape[-1].value, self.filters],
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.filters], initializer=self.bias_initializer or
                                        _vars.zeros_initializer(), regularizer=self.bias_regularizer)

    def call(self, inputs):
        sh, sw = self.strides
        out = nn.conv2d(inputs, self.kernel, [1, sh, sw, 1], self.padding.upper(), name="Conv2D")
        if self.use_bias:
            out = nn.bias_add(out, self.bias, name="BiasAdd")
        return self.activation(out) if self.activation is not None else out


class _Pooling2D(Layer):
    _op = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        _channels_last(data_format)
        super().__init__(name=name, **kwargs)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding).lower()

    def call(self, inputs):
        (ph, pw), (sh, sw) = self.pool_size, self.strides
        return type(self)._op(inputs, [1, ph, pw, 1], [1, sh, sw, 1], self.padding.upper())


class MaxPooling2D(_Pooling2D):
    """Max pooling over [pool_size] windows, NHWC."""
    _op = staticmethod(nn.max_pool)


class AveragePooling2D(_Pooling2D):
    """Average pooling over [pool_size] windows (the positions inside the input), NHWC."""
    _op = staticmethod(nn.avg_pool)


class Flatten(Layer):
    """[batch, ...] -> [batch, product of the rest]."""


    def __init__(self, data_format="channels_last", name=None, **kwargs):
        _channels_last(data_format)
        super().__init__(name=name, **kwargs)

    def call(self, inputs):
        x = inputs
        rest = x.shape.as_list()[1:] if x.shape.ndims is not None else None
        if rest is not None and all(d is not None for d in rest):
            return array_ops.reshape(x, [-1, int(np.prod(rest, dtype=np.int64))], name="Reshape")
        return array_ops.reshape(x, [array_ops.shape(x)[0], -1], name="Reshape")


class Dropout(Layer):
    """Drops with probability `rate` when called with training (a Python bool
    or a bool tensor), scaling the kept by 1 / (1 - rate); else the inputs."""


    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        if noise_shape is not None:
            raise NotImplementedError("tf.layers.dropout's noise_shape is not supported by towerflow")
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError("Invalid value %s received for `rate`, expected a value between 0 and 1." % rate)
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.seed = seed

    def call(self, inputs, training=False):
        x = inputs
        if array_ops._is_tensor(training):
            dropped = nn.dropout(x, rate=self.rate, seed=self.seed)
            return indexing.where_v2(convert_to_tensor(training, dtype=_dtypes.bool), dropped, x, name="cond")
        if training:
            return nn.dropout(x, rate=self.rate, seed=self.seed)
        return array_ops.identity(x, name="Identity")


class BatchNormalization(Layer):
    """TF1's batch normalization over every axis but `axis`: in training, the
    batch's mean and variance normalise, and the ops that move moving_mean and
    moving_variance toward them (by 1 - momentum) join the layer's updates and
    UPDATE_OPS (run them with the train op, as TF1 requires); in inference, the
    moving statistics normalise. `training` is a Python bool or a bool tensor.
    As TF's fused kernel (its default for 4-D inputs), the moving variance of a
    4-D input takes the batch variance with Bessel's correction."""


    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer=None,
                 gamma_initializer=None, moving_mean_initializer=None, moving_variance_initializer=None,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None, trainable=True,
                 virtual_batch_size=None, adjustment=None, name=None, **kwargs):
        _unsupported(beta_constraint=beta_constraint, gamma_constraint=gamma_constraint,
                     renorm_clipping=renorm_clipping, virtual_batch_size=virtual_batch_size, adjustment=adjustment)
        if renorm:
            raise NotImplementedError("tf.layers.batch_normalization's renorm is not supported by towerflow")
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise NotImplementedError("tf.layers.batch_normalization over several axes is not supported by "
                                          "towerflow")
            axis = axis[0]
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.axis = int(axis)
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.fused = fused
        self._initializers = (beta_initializer, gamma_initializer, moving_mean_initializer,
                              moving_variance_initializer)
        self._regularizers = (beta_regularizer, gamma_regularizer)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        shape = fw.as_shape(input_shape)
        if shape.ndims is None:
            raise ValueError("Input has undefined rank.")
        axis = self.axis % shape.ndims
        channels = shape[axis].value
        if channels is None:
            raise ValueError("Input has undefined `axis` dimension. Input shape: %s" % shape)
        beta_init, gamma_init, mean_init, var_init = self._initializers
        beta_reg, gamma_reg = self._regularizers
        if self.scale:
            self.gamma = self.add_weight("gamma", [channels], initializer=gamma_init or _vars.ones_initializer(),
                                         regularizer=gamma_reg)
        if self.center:
            self.beta = self.add_weight("beta", [channels], initializer=beta_init or _vars.zeros_initializer(),
                                        regularizer=beta_reg)
        self.moving_mean = self.add_weight("moving_mean", [channels],
                                           initializer=mean_init or _vars.zeros_initializer(), trainable=False)
        self.moving_variance = self.add_weight("moving_variance", [channels],
                                               initializer=var_init or _vars.ones_initializer(), trainable=False)

    def call(self, inputs, training=False):
        x = inputs
        rank = x.shape.ndims
        axis = self.axis % rank
        channels = x.shape[axis].value
        reduce_axes = [i for i in range(rank) if i != axis]
        bshape = [1] * rank
        bshape[axis] = channels
        moving_mean, moving_var = self.moving_mean, self.moving_variance

        def shaped(v):
            return v if v is None or axis == rank - 1 else array_ops.reshape(v, bshape)

        def normalize(mean, var):
            return nn.batch_normalization(x, shaped(mean), shaped(var), shaped(self.beta), shaped(self.gamma),
                                          self.epsilon)

        if not array_ops._is_tensor(training) and not training:
            return normalize(moving_mean.value(), moving_var.value())
        mean, var = nn.moments(x, reduce_axes)
        out = normalize(mean, var)
        # TF's fused kernel (v1: the default where it applies) moves the
        # variance toward the unbiased batch variance: a 4-D input normalized
        # over axis 1 or 3, or a 5-D one over axis 1 or 4, in float32.
        fused = (self.fused is not False and x.dtype == _dtypes.float32 and
                 ((rank == 4 and axis in (1, 3)) or (rank == 5 and axis in (1, 4))))
        if fused:
            # The fused kernel's moving variance: the unbiased batch variance.
            n = math_ops.divide(math_ops.reduce_sum(array_ops.ones_like(x)), float(channels))
            var_update = math_ops.multiply(var, math_ops.divide(n, math_ops.maximum(n - 1.0, 1.0)))
        else:
            var_update = var
        decay = 1.0 - self.momentum
        new_mean = math_ops.subtract(moving_mean.value(), (moving_mean.value() - mean) * decay)
        new_var = math_ops.subtract(moving_var.value(), (moving_var.value() - var_update) * decay)
        if array_ops._is_tensor(training):
            t = convert_to_tensor(training, dtype=_dtypes.bool)
            out = indexing.where_v2(t, out, normalize(moving_mean.value(), moving_var.value()))
            new_mean = indexing.where_v2(t, new_mean, moving_mean.value())
            new_var = indexing.where_v2(t, new_var, moving_var.value())
        self.add_update([_vars.assign(moving_mean, new_mean, name="AssignMovingAvg"),
                         _vars.assign(moving_var, new_var, name="AssignMovingAvg_1")])
        return out


# ---- the functions: one layer object each, its scope `name` exactly (TF1's)

def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True,
          name=None, reuse=None):
    """outputs = activation(inputs . kernel + bias), over the last axis of inputs."""
    layer = Dense(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                  bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                  bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable,
                  name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """outputs = activation(conv2d(inputs, kernel) + bias), NHWC, kernel [kh, kw, in, filters]."""
    layer = Conv2D(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                   dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                   kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                   kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                   activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                   bias_constraint=bias_constraint, trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    return MaxPooling2D(pool_size, strides, padding=padding, data_format=data_format, name=name).apply(inputs)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    return AveragePooling2D(pool_size, strides, padding=padding, data_format=data_format, name=name).apply(inputs)


def flatten(inputs, name=None, data_format="channels_last"):
    """[batch, ...] -> [batch, product of the rest]."""
    return Flatten(data_format=data_format, name=name).apply(inputs)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Drops with probability `rate` when training (a Python bool or a bool
    tensor), scaling the kept by 1 / (1 - rate); else the inputs."""
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name).apply(inputs, training=training)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None, moving_mean_initializer=None,
                        moving_variance_initializer=None, beta_regularizer=None, gamma_regularizer=None,
                        beta_constraint=None, gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None,
                        virtual_batch_size=None, adjustment=None):
    """BatchNormalization's function: the layer applied once (its class says how)."""
    layer = BatchNormalization(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                               beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                               moving_mean_initializer=moving_mean_initializer,
                               moving_variance_initializer=moving_variance_initializer,
                               beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                               beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
                               renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
                               trainable=trainable, virtual_batch_size=virtual_batch_size,
                               adjustment=adjustment, name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs, training=training)
