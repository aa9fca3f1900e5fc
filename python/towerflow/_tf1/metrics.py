"""tf.metrics of TF1's Python API: streaming metrics over local variables.
Each returns (value, update_op): update_op adds a batch to the metric's
`total` and `count` (local variables in LOCAL_VARIABLES and
METRIC_VARIABLES, reset by local_variables_initializer) and returns the
metric after it; value reads the metric without updating it."""

from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from . import graph_api
from . import math_ops
from . import variables as _vars
from .losses import _div_no_nan, check_broadcastable, remove_squeezable_dimensions

METRIC_VARIABLES = "metric_variables"


def _metric_variable(name):
    return _vars.VariableV1(lambda: array_ops.zeros([], _dtypes.float32), trainable=False,
                            collections=[graph_api.GraphKeys.LOCAL_VARIABLES, METRIC_VARIABLES], name=name)


def _fit_weights(weights, values):
    """TF's metrics rule (static ranks): weights of one more axis than the
    values lose their last; of one fewer, gain one (per-row weights); then
    they must broadcast to the values."""
    w = fw.convert_to_tensor(weights)
    if w.dtype != _dtypes.float32:
        w = array_ops.cast(w, _dtypes.float32)
    if w.shape.ndims not in (None, 0) and values.shape.ndims is not None:
        if w.shape.ndims - values.shape.ndims == 1:
            w = array_ops.squeeze(w, [-1])
        elif values.shape.ndims - w.shape.ndims == 1:
            w = array_ops.expand_dims(w, -1)
    check_broadcastable(w, values)
    return w


def _streaming_mean(values, weights, metrics_collections, updates_collections):
    values = array_ops.cast(values, _dtypes.float32)
    total = _metric_variable("total")
    count = _metric_variable("count")
    if weights is None:
        num_values = math_ops.reduce_sum(array_ops.ones_like(values))
    else:
        w = math_ops.multiply(_fit_weights(weights, values), array_ops.ones_like(values))
        values = math_ops.multiply(values, w)
        num_values = math_ops.reduce_sum(w)
    update_total = _vars.assign_add(total, math_ops.reduce_sum(values))
    with graph_api.control_dependencies([values]):
        update_count = _vars.assign_add(count, num_values)
    mean_t = _div_no_nan(total.value(), math_ops.maximum(count.value(), 0.0), "value")
    update_op = _div_no_nan(update_total, math_ops.maximum(update_count, 0.0), "update_op")
    g = fw.get_default_graph()
    for c in metrics_collections or []:
        g.add_to_collection(c, mean_t)
    for c in updates_collections or []:
        g.add_to_collection(c, update_op)
    return mean_t, update_op


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The mean of values (weighted) over every batch since the last reset."""
    g = fw._graph_of([values, weights])
    with g.as_default(), _vars.variable_scope(name, default_name="mean"):
        return _streaming_mean(values, weights, metrics_collections, updates_collections)


def accuracy(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """How often predictions equal labels (weighted), over every batch since the last reset."""
    g = fw._graph_of([labels, predictions, weights])
    with g.as_default(), _vars.variable_scope(name, default_name="accuracy"):
        p = fw.convert_to_tensor(predictions)
        y = fw.convert_to_tensor(labels)
        y, p = remove_squeezable_dimensions(y, p)
        if p.shape.ndims is not None and y.shape.ndims is not None and not p.shape.is_compatible_with(y.shape):
            raise ValueError("Shapes %s and %s are incompatible" % (p.shape, y.shape))
        if y.dtype != p.dtype:
            p = array_ops.cast(p, y.dtype)  # TF casts the predictions to the labels' dtype
        is_correct = array_ops.cast(math_ops.equal(p, y), _dtypes.float32)
        return _streaming_mean(is_correct, weights, metrics_collections, updates_collections)
