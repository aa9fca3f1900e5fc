"""The module-level graph functions of TF1's Python API (tf.name_scope,
tf.device, collections, ...), acting on the default graph."""

from .framework import _graph_of, get_default_graph


def set_random_seed(seed):
    get_default_graph().seed = seed


def name_scope(name, default_name=None, values=None):
    """tf.name_scope (TF1 signature): a new name scope of the values' graph."""
    g = _graph_of(values or [])
    return g.name_scope(name if name is not None else default_name)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    QUEUE_RUNNERS = "queue_runners"
    SUMMARIES = "summaries"
    UPDATE_OPS = "update_ops"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    SAVERS = "savers"
