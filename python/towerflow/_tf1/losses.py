"""tf.losses of TF1's Python API (losses_impl): each loss weighted, reduced
as its `reduction` says (the mean over the elements of nonzero weight by
default), added to the LOSSES collection, and returned; plus the collection
helpers (add_loss, get_losses, get_total_loss, the regularization losses).
Every loss is a composition of the engine's ops, with TF's gradients."""

from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from . import indexing
from . import math_ops
from . import nn
from .framework import convert_to_tensor

LOSSES = "losses"
REGULARIZATION_LOSSES = "regularization_losses"


class Reduction:
    """How a weighted loss is reduced (TF1's tf.losses.Reduction)."""
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError("Invalid Reduction Key %s." % key)


def _div_no_nan(num, den, name):
    """num / den, 0 where den is 0 (TF's div_no_nan)."""
    safe = indexing.where_v2(math_ops.equal(den, 0.0), array_ops.ones_like(den), den)
    return indexing.where_v2(math_ops.equal(den, 0.0), array_ops.zeros_like(num), math_ops.divide(num, safe),
                             name=name)


def _num_elements(losses):
    """The element count of losses as a float32 scalar."""
    if losses.shape.is_fully_defined():
        return fw.constant(float(losses.shape.num_elements()), _dtypes.float32, name="num_elements")
    return math_ops.reduce_sum(array_ops.ones_like(losses), name="num_elements")


def _num_present(losses, weights):
    """How many elements of losses have a nonzero weight (weights broadcast)."""
    if isinstance(weights, float) and weights != 0.0:
        return _num_elements(losses)
    w = array_ops.cast(weights, _dtypes.float32)
    present = indexing.where_v2(math_ops.equal(w, 0.0), array_ops.zeros_like(w), array_ops.ones_like(w))
    present = math_ops.multiply(present, array_ops.ones_like(losses))
    return math_ops.reduce_sum(present, name="num_present")


def _squeeze_last(t):
    return array_ops.squeeze(t, [-1])


def remove_squeezable_dimensions(labels, predictions, expected_rank_diff=0):
    """TF's confusion_matrix rule (static ranks): a trailing size-1 axis of
    predictions or labels is squeezed when it makes their rank difference
    the expected one."""
    ls, ps = labels.shape, predictions.shape
    if ls.ndims is None or ps.ndims is None:
        return labels, predictions
    diff = ps.ndims - ls.ndims
    if diff == expected_rank_diff + 1 and ps[-1].value in (None, 1):
        predictions = _squeeze_last(predictions)
    elif diff == expected_rank_diff - 1 and ls[-1].value in (None, 1):
        labels = _squeeze_last(labels)
    return labels, predictions


def _as_weights(weights):
    """A Python scalar as it is; anything else (a list, an array, a tensor)
    as a float32 tensor."""
    if isinstance(weights, (int, float)) and not isinstance(weights, bool):
        return float(weights)
    w = convert_to_tensor(weights)
    return w if w.dtype == _dtypes.float32 else array_ops.cast(w, _dtypes.float32)


def check_broadcastable(weights, values):
    """TF's assert_broadcastable, on the static shapes: weights a scalar, or of
    values' rank with each dimension 1 or values'. ValueError otherwise."""
    if not array_ops._is_tensor(weights):
        return
    ws, vs = weights.shape, values.shape
    if ws.ndims is None or vs.ndims is None or ws.ndims == 0:
        return
    ok = ws.ndims == vs.ndims and all(w is None or v is None or w in (1, v)
                                      for w, v in zip(ws.as_list(), vs.as_list()))
    if not ok:
        raise ValueError("weights can not be broadcast to values. values.rank=%d. weights.rank=%d. "
                         "values.shape=%s. weights.shape=%s." % (vs.ndims, ws.ndims, vs, ws))


def add_loss(loss, loss_collection=LOSSES):
    if loss_collection:
        fw.get_default_graph().add_to_collection(loss_collection, loss)


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    Reduction.validate(reduction)
    losses = convert_to_tensor(losses)
    g = losses.graph
    with g.as_default(), g.name_scope(scope or "weighted_loss"):
        input_dtype = losses.dtype
        losses = array_ops.cast(losses, _dtypes.float32) if input_dtype != _dtypes.float32 else losses
        w = _as_weights(weights)
        check_broadcastable(w, losses)
        weights = w
        weighted = math_ops.multiply(losses, w)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = math_ops.reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _div_no_nan(loss, math_ops.reduce_sum(math_ops.multiply(array_ops.ones_like(losses), w)),
                                   "value")
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _div_no_nan(loss, _num_present(losses, weights), "value")
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _div_no_nan(loss, _num_elements(losses), "value")
        if input_dtype != _dtypes.float32:
            loss = array_ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _check_args(labels, predictions, what):
    if labels is None:
        raise ValueError("%s must not be None." % what[0])
    if predictions is None:
        raise ValueError("%s must not be None." % what[1])


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None, loss_collection=LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check_args(labels, logits, ("labels", "logits"))
    g = fw._graph_of([labels, logits])
    with g.as_default(), g.name_scope(scope or "sparse_softmax_cross_entropy_loss") as s:
        labels, logits = remove_squeezable_dimensions(convert_to_tensor(labels), convert_to_tensor(logits), 1)
        w = _as_weights(weights)
        if array_ops._is_tensor(w) and w.shape.ndims is not None and labels.shape.ndims is not None \
                and w.shape.ndims - labels.shape.ndims == 1:
            w = _squeeze_last(w)  # weights [batch, 1] for labels [batch]
        weights = w
        losses = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check_args(onehot_labels, logits, ("onehot_labels", "logits"))
    g = fw._graph_of([onehot_labels, logits])
    with g.as_default(), g.name_scope(scope or "softmax_cross_entropy_loss") as s:
        logits = convert_to_tensor(logits)
        labels = array_ops.cast(onehot_labels, logits.dtype)
        if label_smoothing > 0:
            n = array_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + math_ops.divide(
                fw.constant(label_smoothing, logits.dtype), n)
        losses = nn.softmax_cross_entropy_with_logits_v2(labels=array_ops.stop_gradient(labels), logits=logits,
                                                         name="xentropy")
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check_args(multi_class_labels, logits, ("multi_class_labels", "logits"))
    g = fw._graph_of([multi_class_labels, logits])
    with g.as_default(), g.name_scope(scope or "sigmoid_cross_entropy_loss") as s:
        logits = convert_to_tensor(logits)
        labels = array_ops.cast(multi_class_labels, logits.dtype)
        if label_smoothing > 0:
            labels = labels * (1.0 - label_smoothing) + 0.5 * label_smoothing
        losses = nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def _regression_losses(labels, predictions, scope, default_scope, body):
    _check_args(labels, predictions, ("labels", "predictions"))
    g = fw._graph_of([labels, predictions])
    with g.as_default(), g.name_scope(scope or default_scope) as s:
        p = array_ops.cast(predictions, _dtypes.float32)
        y = array_ops.cast(labels, _dtypes.float32)
        if p.shape.ndims is not None and y.shape.ndims is not None and not p.shape.is_compatible_with(y.shape):
            raise ValueError("Shapes %s and %s are incompatible" % (p.shape, y.shape))
        return s, body(y, p)


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    def body(y, p):
        d = p - y
        return d * d
    s, losses = _regression_losses(labels, predictions, scope, "mean_squared_error", body)
    return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    s, losses = _regression_losses(labels, predictions, scope, "absolute_difference",
                                   lambda y, p: math_ops.abs(p - y))
    return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None, loss_collection=LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    def body(y, p):
        err = math_ops.abs(p - y)
        quadratic = math_ops.minimum(err, delta)
        return 0.5 * quadratic * quadratic + delta * (err - quadratic)
    s, losses = _regression_losses(labels, predictions, scope, "huber_loss", body)
    return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None, loss_collection=LOSSES,
             reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    def body(y, p):
        return -y * math_ops.log(p + epsilon) - (1.0 - y) * math_ops.log(1.0 - p + epsilon)
    s, losses = _regression_losses(labels, predictions, scope, "log_loss", body)
    return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def get_losses(scope=None, loss_collection=LOSSES):
    return fw.get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return fw.get_default_graph().get_collection(REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return fw.constant(0.0, _dtypes.float32, name=name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses found in collection %s" % LOSSES)
    return math_ops.add_n(losses, name=name)
