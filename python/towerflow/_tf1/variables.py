"""Variables and variable scopes (tf.get_variable, tf.variable_scope,
tf.Variable) over the engine's variable store: a variable is named by its
variable scope, shared through reuse, and registered in the graph's
"variables" / "trainable_variables" collections, which the optimizers and
the Saver read."""

import contextlib

import numpy as np

from .. import _core
from .. import errors
from . import dtypes as _dtypes
from . import framework as fw

AUTO_REUSE = object()


class Variable:
    """A variable (TF1's tf.Variable as get_variable returns it)."""

    def __init__(self, graph, core_var, trainable=True):
        self._graph = graph
        self._var = core_var
        self._trainable = trainable
        self._ref = graph._tensor(core_var.ref)
        self._value = graph._tensor(core_var.value)
        self._initializer = graph._wrap_node(core_var.initializer)
        self._initialized_value = None

    @property
    def name(self):
        return self._var.name + ":0"

    @property
    def op(self):
        return self._ref.op

    @property
    def graph(self):
        return self._graph

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def shape(self):
        return self._value.shape

    def get_shape(self):
        return self.shape

    @property
    def device(self):
        return self._ref.device

    @property
    def initializer(self):
        return self._initializer

    @property
    def trainable(self):
        return self._trainable

    def value(self):
        return self._value

    def read_value(self):
        return self._value

    def initialized_value(self):
        """The variable's value once it is initialized, else its initial value
        (TF's cond on is_variable_initialized): what another variable's initial
        value reads, whichever initializer runs first."""
        if self._initialized_value is None:
            initial = self._initializer.inputs[1]
            with self._graph.as_default(), self._graph.control_dependencies(None):
                self._initialized_value = fw.make_tensor("InitializedValue", [self._ref, initial],
                                                         name=self._var.name + "/initialized_value", graph=self._graph)
        return self._initialized_value

    def _ref_tensor(self):
        return self._ref

    def _tw_as_tensor(self, dtype=None):
        if dtype is not None and _dtypes.as_dtype(dtype) != self.dtype:
            raise ValueError("Incompatible type conversion requested to type '%s' for variable of type '%s'"
                             % (_dtypes.as_dtype(dtype).name, self.dtype.name))
        return self._value

    def _tw_operation(self):
        return self.op

    def assign(self, value, use_locking=True, name=None, read_value=True):
        return _assign("Assign", self, value, name, use_locking=use_locking)

    def assign_add(self, delta, use_locking=True, name=None, read_value=True):
        return _assign("AssignAdd", self, delta, name, use_locking=use_locking)

    def assign_sub(self, delta, use_locking=True, name=None, read_value=True):
        return _assign("AssignSub", self, delta, name, use_locking=use_locking)

    def load(self, value, session=None):
        session = fw._session_for(session, self._graph)
        session._load_variable(self, value)

    def eval(self, session=None):
        return self._value.eval(session=session)

    def __repr__(self):
        return "<tf.Variable '%s' shape=%s dtype=%s>" % (self.name, self.shape, self.dtype.name)


def _assign(op_type, var, value, name, use_locking=True, validate_shape=None):
    """An Assign/AssignAdd/AssignSub of `var`; a value to convert is the helper "<name>/value", as TF's."""
    attrs = {"use_locking": use_locking}
    if validate_shape is not None:
        attrs["validate_shape"] = validate_shape
    with var.graph.as_default(), fw.op_name(name or op_type, var.graph) as name:
        value = fw.convert_to_tensor(value, dtype=var.dtype, name=name + "/value")
        return fw.make_tensor(op_type, [var._ref, value], attrs, name=name, graph=var.graph)


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    if not isinstance(ref, Variable):
        raise TypeError("towerflow's tf.assign takes a Variable, not %s" % type(ref).__name__)
    return _assign("Assign", ref, value, name, use_locking=True if use_locking is None else use_locking,
                   validate_shape=validate_shape)


def assign_add(ref, value, use_locking=None, name=None):
    return ref.assign_add(value, use_locking=True if use_locking is None else use_locking, name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    return ref.assign_sub(value, use_locking=True if use_locking is None else use_locking, name=name)


def _wrap_variable(graph, core_var, trainable=True):
    v = graph._variables.get(core_var.name)
    if v is None:
        v = Variable(graph, core_var, trainable)
        graph._variables[core_var.name] = v
    return v


# ---- variable scopes ------------------------------------------------------------

class VariableScope:
    """A variable scope (tf.VariableScope): its name, reuse flag and default initializer."""

    def __init__(self, graph, scope, name, reuse=False, initializer=None, regularizer=None, dtype=None):
        self._graph = graph
        self._scope = scope  # the engine scope it was entered with
        self._original = scope  # the engine scope it was first opened with
        self._name = name
        self._reuse = reuse
        self.initializer = initializer
        self.regularizer = regularizer
        self.dtype = dtype

    @property
    def name(self):
        return self._name

    @property
    def original_name_scope(self):
        return (self._original.name_scope + "/") if self._original.name_scope else ""

    @property
    def reuse(self):
        return self._reuse

    def reuse_variables(self):
        self._reuse = True

    def set_initializer(self, initializer):
        self.initializer = initializer

    def set_regularizer(self, regularizer):
        self.regularizer = regularizer

    def get_variable(self, name, *args, **kwargs):
        return get_variable(name, *args, **kwargs)


def _root_var_scope(graph):
    if not graph._var_scopes:
        graph._var_scopes.append(VariableScope(graph, graph._scopes[0], ""))
    return graph._var_scopes[0]


def get_variable_scope():
    g = fw.get_default_graph()
    _root_var_scope(g)
    return g._var_scopes[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None, regularizer=None,
                   caching_device=None, partitioner=None, custom_getter=None, reuse=None, dtype=None,
                   use_resource=None, constraint=None, auxiliary_name_scope=True):
    """tf.variable_scope: a variable scope and a name scope of the same name."""
    for arg, what in ((caching_device, "caching_device"), (partitioner, "partitioner"),
                      (custom_getter, "custom_getter"), (constraint, "constraint")):
        if arg is not None:
            raise NotImplementedError("tf.variable_scope(%s=...) is not supported by towerflow" % what)
    g = fw._graph_of(values or [])
    parent = _root_var_scope(g) if not g._var_scopes else g._var_scopes[-1]
    if isinstance(name_or_scope, VariableScope):
        # Re-entering a scope object: its variable scope, and (as TF) a new name
        # scope below the current one named after its last component ("scope_1";
        # none for the root scope, so a tower's name scope stays in effect).
        vs = name_or_scope
        new_reuse = vs.reuse if reuse is None else (reuse or parent.reuse)
        mode = _core.Reuse.REUSE if new_reuse is True else _core.Reuse.INHERIT
        outer, _, last = vs.name.rpartition("/")
        if not vs.name and not g._scope.variable_scope:
            scope = g._scope
        elif vs.name and outer == g._scope.variable_scope:
            scope = g._scope.with_variable_scope(last, mode)
        else:
            # Not a child of the current variable scope: an engine Scope cannot
            # have this variable scope below the current name scope, so the ops
            # go to the scope's first name scope (under the current device).
            scope = vs._original
            if g._scope.device != scope.device:
                scope = scope.with_device(g._scope.device)
        entered = VariableScope(g, scope, vs.name, new_reuse, initializer or vs.initializer,
                                regularizer or vs.regularizer, dtype or vs.dtype)
        entered._original = vs._original
    else:
        name = name_or_scope if name_or_scope is not None else default_name
        if name is None:
            raise TypeError("If default_name is None then scope (name_or_scope) is required")
        if name_or_scope is None:
            # default_name made unique as TF does: by the openings of
            # <parent>/<default_name>(_i) counted since the parent was
            # entered, so that re-entering a scope (reuse=True) finds the same
            # default names ("dense", "dense_1") again.
            base = parent.name + "/" + default_name if parent.name else default_name
            counts = _scope_counts(g)
            i, candidate = 0, base
            while counts.get(candidate, 0) > 0:
                i += 1
                candidate = "%s_%d" % (base, i)
            name = candidate[len(parent.name) + 1:] if parent.name else candidate
        if reuse is AUTO_REUSE or parent.reuse is AUTO_REUSE:
            new_reuse = AUTO_REUSE
        else:
            new_reuse = True if (reuse or parent.reuse) else False
        mode = _core.Reuse.REUSE if new_reuse is True else _core.Reuse.INHERIT
        scope = g._scope.with_variable_scope(name, mode)
        full = parent.name + "/" + name if parent.name else name
        entered = VariableScope(g, scope, full, new_reuse, initializer or parent.initializer,
                                regularizer or parent.regularizer, dtype or parent.dtype)
    # TF's store of scope openings: entering counts the scope; leaving a scope
    # opened by name forgets the openings of its subscopes, leaving a scope
    # object restores the counts it found.
    counts = _scope_counts(g)
    counts[entered.name] = counts.get(entered.name, 0) + 1
    saved = dict(counts) if isinstance(name_or_scope, VariableScope) else None
    g._var_scopes.append(entered)
    g._scopes.append(entered._scope)
    try:
        yield entered
    finally:
        g._scopes.pop()
        g._var_scopes.pop()
        if saved is not None:
            g._vs_counts = saved
        else:
            prefix = entered.name + "/"
            for k in [k for k in counts if k.startswith(prefix)]:
                counts[k] = 0


@contextlib.contextmanager
def _layer_scope(vs, reuse=None):
    """What a tf.layers object enters at each call: the variable scope `vs`
    it captured at its first call (reuse as given, else the scope's), with
    its ops in the name scope that scope was first opened with, under the
    current device: TF's variable_scope(vs, auxiliary_name_scope=False)
    inside that name scope. A layer called twice puts both calls' ops under
    "dense/" (MatMul, MatMul_1) and reads one set of variables."""
    g = vs._graph
    scope = vs._original.with_no_control_dependencies()
    if g._scope.device != scope.device:
        scope = scope.with_device(g._scope.device)
    # The control dependencies in effect where the layer is called, as TF's
    # (its dependencies are a context of their own, not the name scope's).
    deps = list(g._scope.control_dependencies)
    if deps:
        scope = scope.with_control_dependencies(deps)
    # reuse=False cannot turn off a reuse the scope inherited (TF's rule).
    new_reuse = reuse if (reuse is True or reuse is AUTO_REUSE) else vs.reuse
    entered = VariableScope(g, scope, vs.name, new_reuse, vs.initializer, vs.regularizer, vs.dtype)
    entered._original = vs._original
    g._var_scopes.append(entered)
    g._scopes.append(scope)
    try:
        yield entered
    finally:
        g._scopes.pop()
        g._var_scopes.pop()


def _scope_counts(g):
    """The graph's count of variable-scope openings, by full scope name."""
    if not hasattr(g, "_vs_counts"):
        g._vs_counts = {}
    return g._vs_counts


# ---- initializers -----------------------------------------------------------------

class Initializer:
    """A variable initializer (tf.initializers.*): builds the initial value."""

    def _tw_initializer(self, dtype):
        raise NotImplementedError

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError("towerflow's initializers are passed to get_variable(initializer=...)")


class _Init(Initializer):
    def __init__(self, factory, *args):
        self._factory = factory
        self._args = args

    def _tw_initializer(self, dtype):
        return self._factory(*self._args)


def _seed(seed):
    return 0 if seed is None else int(seed)


def zeros_initializer(dtype=None):
    return _Init(_core.initializers.zeros)


def ones_initializer(dtype=None):
    return _Init(_core.initializers.constant, 1.0)


def constant_initializer(value=0, dtype=None, verify_shape=False):
    if np.ndim(value) == 0:
        return _Init(_core.initializers.constant, float(value))
    return _TensorInit(value)


class _TensorInit(Initializer):
    def __init__(self, value):
        self._value = value

    def _tw_initializer(self, dtype):
        return _core.initializers.tensor(self._value, dtype)


def random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    return _Init(_core.initializers.random_normal, float(mean), float(stddev), _seed(seed))


def truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    return _Init(_core.initializers.truncated_normal, float(mean), float(stddev), _seed(seed))


def random_uniform_initializer(minval=0.0, maxval=None, seed=None, dtype=None):
    return _Init(_core.initializers.random_uniform, float(minval), float(1.0 if maxval is None else maxval),
                 _seed(seed))


def glorot_uniform_initializer(seed=None, dtype=None):
    return _Init(_core.initializers.glorot_uniform, _seed(seed))


def _output_initializer(value, dtype):
    """An initializer whose value is the tensor `value` (tf.Variable(<tensor>),
    get_variable(initializer=<tensor>)): of the variable's dtype, a fully
    defined shape, in the default graph."""
    t = fw.convert_to_tensor(value)
    if t.dtype.base_dtype != dtype.base_dtype:
        raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                         % (dtype.name, t.dtype.base_dtype.name, t))
    if not t.shape.is_fully_defined():
        raise ValueError("initial_value must have a shape specified: %r" % (t,))
    if t.graph is not fw.get_default_graph():
        raise ValueError("%r must be from the same graph as the variable." % (t,))
    return _core.initializers.output(t._output)


def _engine_initializer(initializer, dtype, shape):
    if initializer is None:
        return None
    if isinstance(initializer, Initializer):
        return initializer._tw_initializer(dtype.name)
    if isinstance(initializer, type) and issubclass(initializer, Initializer):
        return initializer()._tw_initializer(dtype.name)
    if isinstance(initializer, (fw.Tensor, Variable)):
        return _output_initializer(initializer, dtype)
    if callable(initializer):
        raise NotImplementedError("towerflow's get_variable takes towerflow initializers "
                                  "(tf.truncated_normal_initializer(), ...), not arbitrary callables")
    return _core.initializers.tensor(np.asarray(initializer), dtype.name)


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None,
                 collections=None, caching_device=None, partitioner=None, validate_shape=True,
                 use_resource=None, custom_getter=None, constraint=None, synchronization=None,
                 aggregation=None):
    """tf.get_variable: the variable `name` of the current variable scope, made
    or (under reuse) found."""
    for arg, what in ((caching_device, "caching_device"), (partitioner, "partitioner"),
                      (custom_getter, "custom_getter"), (constraint, "constraint")):
        if arg is not None:
            raise NotImplementedError("tf.get_variable(%s=...) is not supported by towerflow" % what)
    g = fw.get_default_graph()
    vs = get_variable_scope()
    dtype_arg = dtype
    dtype = _dtypes.as_dtype(dtype or vs.dtype or _dtypes.float32)
    full = vs.name + "/" + name if vs.name else name
    if vs.reuse is AUTO_REUSE and full in g._variables:
        return g._variables[full]
    if isinstance(initializer, (fw.Tensor, Variable)):
        # TF: the variable takes the tensor's shape (and dtype, unless given).
        if shape is not None:
            raise ValueError("If initializer is a constant, do not specify shape.")
        t = fw.convert_to_tensor(initializer)
        if dtype_arg is None:
            dtype = t.dtype.base_dtype
        if not t.shape.is_fully_defined():
            raise ValueError("initial_value must have a shape specified: %r" % (t,))
        shape = t.shape.as_list()
    if shape is None:
        if isinstance(initializer, (np.ndarray, np.generic, list, tuple, int, float)):
            shape = np.shape(initializer)
        elif not (vs.reuse is True):
            raise ValueError("Shape of a new variable (%s) must be fully defined, but instead was None." % full)
    trainable = True if trainable is None else trainable
    if vs.reuse is True and shape is None:
        existing = _core.find_variable(g._graph, full)
        if existing is None:
            raise ValueError("Variable %s does not exist, or was not created with tf.get_variable(). "
                             "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?" % full)
        return _wrap_variable(g, existing, trainable)
    scope = g._scope.with_reuse_variables() if vs.reuse is True else g._scope
    init = _engine_initializer(initializer if initializer is not None else vs.initializer, dtype, shape)
    # As TF: `collections` replaces the default ["variables"]; the engine adds
    # "trainable_variables" for a trainable one and keeps every key, and the
    # Python side lists the variable under the keys it answers for itself.
    engine_collections = list(collections or [])
    # The engine's sharing errors are ValueErrors in the words of TF's Python
    # (the engine's messages name its C++ API); a shape mismatch keeps the engine's.
    try:
        core_var = _core.get_variable(scope, name, list(fw.as_shape(shape).as_list()), dtype.name, init,
                                      trainable, engine_collections)
    except errors.AlreadyExistsError:
        raise ValueError("Variable %s already exists, disallowed. Did you mean to set reuse=True or "
                         "reuse=tf.AUTO_REUSE in VarScope?" % full) from None
    except errors.NotFoundError:
        raise ValueError("Variable %s does not exist, or was not created with tf.get_variable(). Did you mean "
                         "to set reuse=tf.AUTO_REUSE in VarScope?" % full) from None
    except errors.InvalidArgumentError as e:
        raise ValueError(e.message) from None
    new = core_var.name not in g._variables
    v = _wrap_variable(g, core_var, trainable)
    if new:
        for c in _python_keys(engine_collections):
            g.add_to_collection(c, v)
        reg = regularizer or vs.regularizer
        if reg is not None:
            loss = reg(v)
            if loss is not None:
                g.add_to_collection("regularization_losses", loss)
    return v


def VariableV1(initial_value=None, trainable=None, collections=None, validate_shape=True, caching_device=None,
               name=None, variable_def=None, dtype=None, expected_shape=None, import_scope=None,
               constraint=None, use_resource=None, synchronization=None, aggregation=None, shape=None):
    """tf.Variable(initial_value): a variable named `name` (made unique) whose
    first value is a NumPy or Python value, or a tensor of the graph (computed
    when the initializer runs), or what a callable returns."""
    if initial_value is None:
        raise ValueError("initial_value must be specified.")
    for arg, what in ((caching_device, "caching_device"), (variable_def, "variable_def"),
                      (constraint, "constraint"), (None if validate_shape else False, "validate_shape=False")):
        if arg is not None:
            raise NotImplementedError("tf.Variable(%s) is not supported by towerflow" % what)
    g = fw.get_default_graph()
    if callable(initial_value) and not isinstance(initial_value, (fw.Tensor, Variable)):
        initial_value = initial_value()
    tensor = None
    if isinstance(initial_value, (fw.Tensor, Variable)):
        # tf.Variable(tf.truncated_normal(...)): the tensor is the first value.
        tensor = fw.convert_to_tensor(initial_value)
        dtype = tensor.dtype.base_dtype if dtype is None else _dtypes.as_dtype(dtype)
        init = _output_initializer(tensor, dtype)
        value_shape = tensor.shape.as_list()
    else:
        value = np.asarray(initial_value)
        # The dtype tf.constant(initial_value) would have (a NumPy value keeps its own).
        dtype = fw._inferred_dtype(initial_value) if dtype is None else _dtypes.as_dtype(dtype)
        value_shape = list(value.shape)
    base = name or "Variable"
    full = g.unique_name(base, mark_as_used=False)
    vs = get_variable_scope()
    # The engine names it vs.name/<name>: open no variable scope, give the
    # unique full name relative to it.
    rel = full[len(vs.name) + 1:] if vs.name and full.startswith(vs.name + "/") else full
    if vs.name and not full.startswith(vs.name + "/"):
        raise NotImplementedError("towerflow's tf.Variable inside a name scope that differs from the variable "
                                  "scope ('%s' in '%s'); use tf.get_variable" % (full, vs.name))
    if tensor is None:
        init = _core.initializers.tensor(value.astype(dtype.as_numpy_dtype) if dtype != _dtypes.string else value,
                                         dtype.name)
    trainable = True if trainable is None else trainable
    # As TF: `collections` replaces the default ["variables"]; the engine adds
    # "trainable_variables" for a trainable one and keeps every key, and the
    # Python side lists the variable under the keys it answers for itself.
    engine_collections = list(collections or [])
    with fw.building():
        # A new variable whatever the scope's reuse (TF's tf.Variable).
        core_var = _core.get_variable(g._scope.without_reuse(), rel, value_shape, dtype.name, init, trainable,
                                      engine_collections)
    v = _wrap_variable(g, core_var, trainable)
    for c in _python_keys(engine_collections):
        g.add_to_collection(c, v)
    return v


def global_variables(scope=None):
    return fw.get_default_graph().get_collection("variables", scope)


def trainable_variables(scope=None):
    return fw.get_default_graph().get_collection("trainable_variables", scope)


def local_variables(scope=None):
    return fw.get_default_graph().get_collection("local_variables", scope)


def _python_keys(keys):
    """The collection keys the engine does not answer for (_engine_collection)."""
    return [k for k in keys if k not in ("variables", "trainable_variables")]


def _engine_collection(graph, name):
    """The engine's view of the variable collections; None for other keys."""
    if name == "variables":
        return [_wrap_variable(graph, v) for v in _core.global_variables(graph._graph)]
    if name == "trainable_variables":
        return [_wrap_variable(graph, v) for v in _core.trainable_variables(graph._graph)]
    return None


def global_variables_initializer():
    g = fw.get_default_graph()
    return g._wrap_node(_core.global_variables_initializer(g._graph))


def local_variables_initializer():
    g = fw.get_default_graph()
    return g._wrap_node(_core.local_variables_initializer(g._graph))


def variables_initializer(var_list, name="init"):
    g = fw.get_default_graph()
    node = _core.variables_initializer(g._scope.with_op_name(name), [v._var for v in var_list])
    return g._wrap_node(node)
