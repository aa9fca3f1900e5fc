"""Graphs, operations and tensors of TF1's Python API over towerflow's graph.

A :class:`Graph` wraps the engine's graph and keeps the Python side of TF1's
building context: the stack of scopes (name scope, device, control
dependencies, colocation, variable scope; each an engine ``Scope``), the
variable scopes, and collections. Every op is built by the engine in the
current scope (its schema checks inputs and attrs, infers shapes); an error
raises at once, as TF1 raises at graph construction.
"""

import contextlib
import threading

import numpy as np

from .. import _core
from .. import errors
from . import dtypes as _dtypes


class Dimension:
    """One dimension of a TensorShape (TF1's Dimension): ``value`` is an int or None."""

    def __init__(self, value):
        self._value = None if value is None else int(value)

    @property
    def value(self):
        return self._value

    def __int__(self):
        if self._value is None:
            raise ValueError("unknown dimension")
        return self._value

    __index__ = __int__

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return None
        return self._value == other

    def __hash__(self):
        return hash(self._value)

    def __repr__(self):
        return "Dimension(%s)" % self._value

    def __str__(self):
        return "?" if self._value is None else str(self._value)


class TensorShape:
    """A possibly partial shape (TF1's TensorShape)."""

    def __init__(self, dims):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = None if dims._dims is None else list(dims._dims)
        else:
            if isinstance(dims, (int, np.integer)):
                dims = [dims]
            self._dims = [d.value if isinstance(d, Dimension) else (None if d is None else int(d)) for d in dims]

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        return int(np.prod(self._dims, dtype=np.int64))

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return Dimension(None) if isinstance(key, int) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __iter__(self):
        return iter(self.dims or [])

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __repr__(self):
        return "TensorShape(%r)" % (self.dims,)

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        return "(" + ", ".join("?" if d is None else str(d) for d in self._dims) + ("," if len(self._dims) == 1 else "") + ")"


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def _shape_list(shape):
    """A shape argument as the engine takes it: a list with None for unknown dims, or None."""
    if shape is None:
        return None
    return as_shape(shape)._dims


# ---- the default graph stack -------------------------------------------------

class _DefaultStack(threading.local):
    def __init__(self):
        self.graphs = []
        self.sessions = []


_stack = _DefaultStack()
_global_default_graph = None


def get_default_graph():
    global _global_default_graph
    if _stack.graphs:
        return _stack.graphs[-1]
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph():
    global _global_default_graph
    if _stack.graphs:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs.")
    _global_default_graph = Graph()


def get_default_session():
    return _stack.sessions[-1] if _stack.sessions else None


class _VarScopeState:
    """The variable scope in effect: the VariableScope object (variables.py)."""

    def __init__(self, var_scope):
        self.var_scope = var_scope


class Graph:
    """A TF1 graph (tf.Graph) over the engine's graph."""

    def __init__(self):
        self._graph = _core.Graph()
        self._scopes = [_core.Scope(self._graph)]
        self._ops = {}
        self._collections = {}
        self._variables = {}  # full name -> Variable (variables.py)
        self._var_scopes = []  # VariableScope stack (variables.py fills the root lazily)
        self._name_scopes = {"": self._scopes[0]}
        self._finalized = False
        self._lock = threading.RLock()
        self._one_shot_inits = []  # initializers of one-shot dataset iterators (data.py)

    @classmethod
    def _borrow(cls, scope):
        """A Graph over the engine graph of `scope`, owned elsewhere (a dataset
        function's graph while its builder runs); valid only meanwhile."""
        g = cls.__new__(cls)
        g._graph = scope.graph
        g._scopes = [scope]
        g._ops = {}
        g._collections = {}
        g._variables = {}
        g._var_scopes = []
        g._name_scopes = {"": scope}
        g._finalized = False
        g._lock = threading.RLock()
        g._one_shot_inits = []
        return g

    # -- context
    @contextlib.contextmanager
    def as_default(self):
        _stack.graphs.append(self)
        try:
            yield self
        finally:
            _stack.graphs.pop()

    @property
    def _scope(self):
        return self._scopes[-1]

    @contextlib.contextmanager
    def _push(self, scope):
        self._scopes.append(scope)
        try:
            yield scope
        finally:
            self._scopes.pop()

    @contextlib.contextmanager
    def name_scope(self, name):
        """A new name scope (made unique) below the current one; yields "name/"."""
        if name is None or name == "":
            root = self._name_scopes[""]
            scope = root.with_device(self._scope.device) if self._scope.device else root
        elif name.endswith("/"):
            # Re-entering a scope by its full name, as TF does for "a/b/".
            scope = self._name_scopes.get(name[:-1])
            if scope is None:
                raise ValueError("'%s' is not a name scope of this graph" % name)
            if self._scope.device != scope.device:
                scope = scope.with_device(self._scope.device)
        else:
            scope = self._scope.new_sub_scope(name)
            self._name_scopes[scope.name_scope] = scope
        with self._push(scope):
            yield (scope.name_scope + "/") if scope.name_scope else ""

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        if callable(device_name_or_function):
            raise NotImplementedError("towerflow's tf.device takes a device string; device functions are not supported")
        spec = "" if device_name_or_function is None else str(device_name_or_function)
        with self._push(self._scope.with_device(spec)):
            yield

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            scope = self._scope.with_no_control_dependencies()
        else:
            nodes = [_as_operation(c)._node for c in control_inputs]
            scope = self._scope.with_control_dependencies(nodes)
        with self._push(scope):
            yield

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        if op is None:
            yield
            return
        target = op.outputs[0] if isinstance(op, Operation) else convert_to_tensor(op)
        with self._push(self._scope.colocated_with(target._output)):
            yield

    # -- lookup
    def _wrap_node(self, node):
        op = self._ops.get(node.id)
        if op is None:
            op = Operation(self, node)
            self._ops[node.id] = op
        return op

    def get_operation_by_name(self, name):
        node = self._graph.find_node(name)
        if node is None:
            raise KeyError("The name '%s' refers to an Operation not in the graph." % name)
        return self._wrap_node(node)

    def get_tensor_by_name(self, name):
        if ":" not in name:
            raise ValueError("The name '%s' looks like an (invalid) Operation name, not a Tensor." % name)
        op_name, index = name.rsplit(":", 1)
        op = self.get_operation_by_name(op_name)
        return op.outputs[int(index)]

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
        if isinstance(obj, (Tensor, Operation)):
            return obj
        raise TypeError("Can not convert a %s into a graph element." % type(obj).__name__)

    def get_operations(self):
        return [self._wrap_node(self._graph.node(i)) for i in range(self._graph.num_nodes)]

    def unique_name(self, name, mark_as_used=True):
        full = self._scope.name_scope + "/" + name if self._scope.name_scope else name
        if mark_as_used:
            return self._graph.unique_name(full)
        if not self._graph.is_name_used(full):
            return full
        i = 1
        while self._graph.is_name_used("%s_%d" % (full, i)):
            i += 1
        return "%s_%d" % (full, i)

    # -- collections
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        for n in ([names] if isinstance(names, str) else names):
            self.add_to_collection(n, value)

    def get_collection(self, name, scope=None):
        from . import variables  # noqa: cyclic at import time only
        items = variables._engine_collection(self, name)
        if items is None:
            items = list(self._collections.get(name, []))
        if scope is None:
            return items
        import re
        pattern = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and pattern.match(i.name)]

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_all_collection_keys(self):
        return list(self._collections)

    # -- misc
    @property
    def seed(self):
        return self._graph.seed if self._graph.has_seed else None

    @seed.setter
    def seed(self, value):
        self._graph.set_seed(int(value))

    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    @property
    def version(self):
        return self._graph.num_nodes


class Operation:
    """One node of a graph (tf.Operation)."""

    def __init__(self, graph, node):
        self._graph = graph
        self._node = node
        self._outputs = [Tensor(self, i) for i in range(node.num_outputs)]

    @property
    def name(self):
        return self._node.name

    @property
    def type(self):
        return self._node.op

    @property
    def graph(self):
        return self._graph

    @property
    def device(self):
        return self._node.requested_device

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def inputs(self):
        return [self._graph._wrap_node(o.node).outputs[o.index] for o in self._node.inputs]

    @property
    def control_inputs(self):
        return [self._graph._wrap_node(n) for n in self._node.control_inputs]

    def get_attr(self, name):
        attrs = self._node.attrs()
        if name not in attrs:
            raise ValueError("Operation '%s' has no attr named '%s'." % (self.name, name))
        v = attrs[name]
        if name in ("T", "dtype", "DstT", "SrcT", "out_type", "output_type"):
            return _dtypes.as_dtype(v)
        return v

    def run(self, feed_dict=None, session=None):
        _session_for(session, self._graph).run(self, feed_dict=feed_dict)

    def __repr__(self):
        return "<tf.Operation '%s' type=%s>" % (self.name, self.type)


class Tensor:
    """One output of an Operation (tf.Tensor)."""

    def __init__(self, op, index):
        self._op = op
        self._index = index
        self._output = _core.Output(op._node, index)

    @property
    def op(self):
        return self._op

    @property
    def graph(self):
        return self._op._graph

    @property
    def value_index(self):
        return self._index

    @property
    def name(self):
        return "%s:%d" % (self._op.name, self._index)

    @property
    def dtype(self):
        return _dtypes.as_dtype(self._output.dtype)

    @property
    def shape(self):
        return TensorShape(self._output.shape)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        if not self.shape.is_fully_defined() or self.shape != as_shape(shape):
            merged = _merge_shapes(self.shape, as_shape(shape))
            if merged is None:
                raise ValueError("Shapes %s and %s are incompatible" % (self.shape, as_shape(shape)))
            if merged != self.shape:
                raise NotImplementedError("towerflow infers static shapes when a node is built; set_shape cannot "
                                          "refine %s of '%s' to %s: reshape it instead" % (self.shape, self.name, shape))

    @property
    def device(self):
        return self._op.device

    @property
    def consumers(self):
        raise NotImplementedError("Tensor.consumers is not supported by towerflow")

    def eval(self, feed_dict=None, session=None):
        return _session_for(session, self.graph).run(self, feed_dict=feed_dict)

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (self.name, self.shape, self.dtype.name)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. The graph is only built here; "
                        "nothing has a value until a session runs it.")

    def __iter__(self):
        raise TypeError("Tensor objects are only iterable when eager execution is enabled.")

    # Operators: math.py installs them (__add__, __mul__, __matmul__, ...).


def _merge_shapes(a, b):
    if a.ndims is None:
        return b
    if b.ndims is None:
        return a
    if a.ndims != b.ndims:
        return None
    out = []
    for x, y in zip(a.as_list(), b.as_list()):
        if x is not None and y is not None and x != y:
            return None
        out.append(x if x is not None else y)
    return TensorShape(out)


def _session_for(session, graph):
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph is different "
                         "from the session's graph.")
    return session


def _as_operation(x):
    if isinstance(x, Operation):
        return x
    if isinstance(x, Tensor):
        return x.op
    if hasattr(x, "_tw_operation"):
        return x._tw_operation()
    raise TypeError("Can not convert a %s into an Operation." % type(x).__name__)


# ---- building ops -------------------------------------------------------------

def _graph_of(values):
    """The graph of the first graph element among `values`, else the default."""
    for v in values:
        g = getattr(v, "graph", None)
        if isinstance(g, Graph):
            return g
    return get_default_graph()


def make_op(op_type, inputs, attrs=None, name=None, graph=None):
    """Builds one node; returns its Operation. `inputs` are Tensors (lists flattened)."""
    g = graph or _graph_of(inputs)
    outputs = [convert_to_tensor(t)._output for t in inputs]
    with building():
        node = _core.add_op(g._scope, op_type, outputs, attrs or {}, name or "")
    return g._wrap_node(node)


@contextlib.contextmanager
def building():
    """Graph-construction errors as TF1's Python raises them: a bad argument
    (shapes, dtypes, a variable that exists or is missing) is a ValueError."""
    try:
        yield
    except (errors.InvalidArgumentError, errors.AlreadyExistsError, errors.NotFoundError) as e:
        raise ValueError(e.message) from None


def make_tensor(op_type, inputs, attrs=None, name=None, graph=None):
    """make_op's first output."""
    return make_op(op_type, inputs, attrs, name, graph).outputs[0]


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    if dtype is None:
        arr = np.asarray(value)
        if arr.dtype.kind == "f":
            dtype = _dtypes.float32  # TF converts Python floats to float32
        elif arr.dtype.kind in ("i", "u") and arr.dtype != np.uint8:
            dtype = _dtypes.int32 if arr.size == 0 or (np.all(arr >= -2**31) and np.all(arr < 2**31)) else _dtypes.int64
        else:
            dtype = _dtypes.as_dtype(arr.dtype)
    if dtype == _dtypes.string:
        arr = np.asarray(value, dtype=object)
    else:
        arr = np.asarray(value, dtype=dtype.as_numpy_dtype)
    if shape is not None:
        shape = as_shape(shape).as_list()
        if arr.size == int(np.prod(shape, dtype=np.int64)):
            arr = arr.reshape(shape)
        elif arr.size == 1 and not verify_shape:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        else:
            raise TypeError("Expected Tensor's shape: %s, got %s." % (tuple(shape), arr.shape))
    return make_tensor("Const", [], {"value": arr, "dtype": dtype.name}, name=name)


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    """A Tensor for `value`: itself, a variable's value, or a constant."""
    if isinstance(value, Tensor):
        if dtype is not None and _dtypes.as_dtype(dtype) != value.dtype:
            raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                             % (_dtypes.as_dtype(dtype).name, value.dtype.name, value))
        return value
    if hasattr(value, "_tw_as_tensor"):
        return value._tw_as_tensor(dtype)
    if isinstance(value, Operation):
        raise TypeError("Can't convert Operation '%s' to Tensor (target dtype=%s)" % (value.name, dtype))
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) or hasattr(v, "_tw_as_tensor") for v in value):
        from . import array_ops
        return array_ops.stack(list(value), name=name or "packed")
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


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
    MODEL_VARIABLES = "model_variables"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    QUEUE_RUNNERS = "queue_runners"
    SUMMARIES = "summaries"
    UPDATE_OPS = "update_ops"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"


def _raise_unsupported(name):
    raise errors.UnimplementedError(None, None, "%s is not supported by towerflow" % name)
