"""tf.train.ExponentialMovingAverage and assign_moving_average of TF1's
Python API, built from the engine's variables, AssignSub and Assign.

Shadow variables are named as TF names them ("<var>/ExponentialMovingAverage",
"<loss>/avg"), so a checkpoint written by towerflow's Saver restores them by
name, and `variables_to_restore()` maps the averages onto the model's
variables for evaluation."""

from .. import _core
from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from . import math_ops
from . import variables

MOVING_AVERAGE_VARIABLES = "moving_average_variables"

_FLOAT_TYPES = (_dtypes.float32, _dtypes.float64)


def _op_name(t):
    return t.name[:-2] if t.name.endswith(":0") else t.name.split(":")[0]


def _shadow(g, full_name, like, initial):
    """A non-trainable variable named exactly `full_name` (outside any variable
    scope), of `like`'s dtype and shape, on its device, whose initializer
    computes `initial` (a tensor) or zeros (None)."""
    dtype = like.dtype.base_dtype
    shape = like.shape
    if not shape.is_fully_defined():
        raise ValueError("ExponentialMovingAverage: %s has shape %s; a moving average needs a fully defined one"
                         % (like.name, shape))
    root = g._name_scopes[""]
    if like.device:
        root = root.with_device(like.device)
    init = _core.initializers.zeros() if initial is None else _core.initializers.output(initial._output)
    with fw.building():
        core_var = _core.get_variable(root.without_reuse(), full_name, shape.as_list(), dtype.name, init, False, [])
    return variables._wrap_variable(g, core_var, False)


def _in_variable_scope(name):
    vs = variables.get_variable_scope().name
    return (vs + "/" + name) if vs else name


def _unique_variable_name(base):
    """`base`, or base_1, base_2, ... : the first no variable of the graph has."""
    names = {v.name[:-2] for v in variables.global_variables()}
    if base not in names:
        return base
    i = 1
    while "%s_%d" % (base, i) in names:
        i += 1
    return "%s_%d" % (base, i)


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """variable -= (variable - value) * (1 - decay): the moving average of
    `value` kept in `variable`, as one op named `name` ("AssignMovingAvg")
    with its helpers below it, as TF's. With zero_debias, a variable that
    starts at zero is divided by 1 - decay^t after t updates (biased and
    local_step variables kept beside it, as TF's)."""
    g = variable.graph
    with g.as_default(), fw.op_name(name or "AssignMovingAvg", g) as opname:
        if isinstance(decay, (fw.Tensor, variables.Variable)):
            one_minus_decay = math_ops.subtract(1.0, fw.convert_to_tensor(decay), name=opname + "/decay")
        else:
            one_minus_decay = fw.constant(1.0 - decay, dtype=_dtypes.float32, name=opname + "/decay")
        if one_minus_decay.dtype != variable.dtype.base_dtype:
            one_minus_decay = array_ops.cast(one_minus_decay, variable.dtype.base_dtype, name=opname + "/Cast")
        value = fw.convert_to_tensor(value)
        if not zero_debias:
            delta = math_ops.multiply(math_ops.subtract(variable.value(), value, name=opname + "/sub"),
                                      one_minus_decay, name=opname + "/mul")
            return variable.assign_sub(delta, name=opname)
        return _zero_debias(g, variable, value, one_minus_decay, opname)


def _zero_debias(g, unbiased, value, one_minus_decay, opname):
    # As TF's: a variable scope named after the average holds them.
    base = _in_variable_scope(_op_name(unbiased))

    with g.control_dependencies(None):
        biased = _shadow(g, _unique_variable_name(base + "/biased"), unbiased, None)
        local_step = _shadow(g, _unique_variable_name(base + "/local_step"),
                             fw.constant(0, dtype=unbiased.dtype.base_dtype), None)
    update_biased = biased.assign_sub((biased.value() - value) * one_minus_decay)
    update_local_step = local_step.assign_add(1)
    bias_factor = math_ops.subtract(1.0, math_ops.pow(math_ops.subtract(1.0, one_minus_decay), update_local_step))
    return unbiased.assign(update_biased / bias_factor, name=opname)


class ExponentialMovingAverage:
    """Shadow copies of variables (or tensors) that `apply()`'s op moves
    towards their current values: shadow -= (1 - decay) * (shadow - value),
    with decay min(decay, (1 + n) / (10 + n)) when `num_updates` n is given.
    A variable's shadow starts at the variable's initial value, a tensor's at
    zero (debiased when zero_debias)."""

    def __init__(self, decay, num_updates=None, zero_debias=False, name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}  # (graph id, tensor name) -> shadow Variable

    @property
    def name(self):
        return self._name

    @staticmethod
    def _key(var):
        return (id(var.graph), var.name)

    def apply(self, var_list=None):
        if var_list is None:
            var_list = variables.trainable_variables()
        var_list = list(var_list)
        g = var_list[0].graph if var_list else fw.get_default_graph()
        debiased = set()
        for var in var_list:
            if not isinstance(var, variables.Variable):
                var = fw.convert_to_tensor(var)
            if var.dtype.base_dtype not in _FLOAT_TYPES:
                raise TypeError("The variables must be half, float, or double: %s" % var.name)
            key = self._key(var)
            if key in self._averages:
                continue
            # As TF's slots: named after the variable or tensor, inside the
            # variable scope (a name scope alone changes nothing).
            full = _unique_variable_name(_in_variable_scope(_op_name(var) + "/" + self._name))
            with g.as_default(), g.control_dependencies(None):
                if isinstance(var, variables.Variable):
                    avg = _shadow(g, full, var, var.initialized_value())
                    g.add_to_collection(MOVING_AVERAGE_VARIABLES, var)
                else:
                    avg = _shadow(g, full, var, None)
                    if self._zero_debias:
                        debiased.add(key)
            self._averages[key] = avg
        with g.as_default(), g.name_scope(self._name) as scope:
            decay = fw.convert_to_tensor(self._decay, dtype=_dtypes.float32, name="decay")
            if self._num_updates is not None:
                n = array_ops.cast(self._num_updates, _dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + n) / (10.0 + n))
            updates = []
            for var in var_list:
                if not isinstance(var, variables.Variable):
                    var = fw.convert_to_tensor(var)
                key = self._key(var)
                updates.append(assign_moving_average(self._averages[key], var, decay,
                                                     zero_debias=key in debiased))
            # The op takes the name scope's own name, as TF's group(name=scope).
            nodes = [fw._as_operation(u)._node for u in updates]
            return g._wrap_node(_core.group(g._scope, nodes, scope))

    def average(self, var):
        return self._averages.get(self._key(var))

    def average_name(self, var):
        avg = self.average(var)
        if avg is not None:
            return avg.name[:-2]
        return var.graph.unique_name(_op_name(var) + "/" + self._name, mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None):
        """{name in the checkpoint: variable}: each moving-averaged variable
        restored from its average, every other global variable from itself."""
        if moving_avg_variables is None:
            moving_avg_variables = variables.trainable_variables()
            moving_avg_variables += moving_average_variables()
        name_map = {}
        averaged = set()
        for v in moving_avg_variables:
            name_map[self.average_name(v)] = v
            averaged.add(v.name)
        for v in variables.global_variables():
            if v.name not in averaged and _op_name(v) not in name_map:
                name_map[_op_name(v)] = v
        return name_map


def moving_average_variables(scope=None):
    return fw.get_default_graph().get_collection(MOVING_AVERAGE_VARIABLES, scope)
