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
from .shapes import Dimension, TensorShape, _merge_shapes, _shape_list, as_shape  # noqa: F401


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


class Graph:
    """A TF1 graph (tf.Graph) over the engine's graph."""

    _captures_constants = False  # a dataset function's graph (_borrow) does

    def __init__(self):
        self._graph = _core.Graph()
        self._scopes = [_core.Scope(self._graph)]
        self._ops = {}
        self._collections = {}
        self._variables = {}  # full name -> Variable (variables.py)
        self._var_scopes = []  # VariableScope stack (variables.py fills the root lazily)
        self._name_scopes = {"": self._scopes[0]}
        # TF's names in use, lowercased (its unique names ignore case: "Add"
        # after "add" is "Add_1"): every node's name and the scopes above it,
        # read from the engine's nodes as they are added.
        self._lower_names = set()
        self._nodes_seen = 0
        self._reserved = {}  # lowercased full name -> op_name blocks holding it
        self._finalized = False
        self._lock = threading.RLock()

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
        g._lower_names = set()
        g._nodes_seen = 0
        g._reserved = {}
        g._finalized = False
        g._lock = threading.RLock()
        g._captures_constants = True
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
            full = self.unique_name(name, mark_as_used=False)
            prefix = self._scope.name_scope
            scope = self._scope.new_sub_scope(full[len(prefix) + 1:] if prefix else full)
            self._name_scopes[scope.name_scope] = scope
            self._use_lower(scope.name_scope)
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

    def _tensor(self, output):
        """The Tensor of an engine Output of this graph."""
        return self._wrap_node(output.node).outputs[output.index]

    def get_operation_by_name(self, name):
        node = self._graph.find_node(name)
        if node is None:
            raise KeyError("The name '%s' refers to an Operation not in the graph." % name)
        return self._wrap_node(node)

    def get_tensor_by_name(self, name):
        if ":" not in name:
            raise ValueError("The name '%s' looks like an (invalid) Operation name, not a Tensor." % name)
        op_name, index = name.rsplit(":", 1)
        node = self._graph.find_node(op_name)
        if node is None:
            raise KeyError("The name '%s' refers to a Tensor which does not exist. The operation, '%s', does not "
                           "exist in the graph." % (name, op_name))
        op = self._wrap_node(node)
        if not index.isdigit() or int(index) >= len(op.outputs):
            raise KeyError("The name '%s' refers to a Tensor which does not exist. The operation, '%s', exists but "
                           "only has %d outputs." % (name, op_name, len(op.outputs)))
        return op.outputs[int(index)]

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
            raise ValueError("The name '%s' refers to an Operation, not a Tensor. Tensor names must be of the form "
                             "\"<op_name>:<output_index>\"." % obj)
        if isinstance(obj, (Tensor, Operation)):
            return obj
        raise TypeError("Can not convert a %s into a graph element." % type(obj).__name__)

    def get_operations(self):
        return [self._wrap_node(self._graph.node(i)) for i in range(self._graph.num_nodes)]

    def _use_lower(self, name):
        name = name.lower()
        while name and name not in self._lower_names:
            self._lower_names.add(name)
            name = name.rpartition("/")[0]

    def _is_name_used(self, full):
        while self._nodes_seen < self._graph.num_nodes:
            self._use_lower(self._graph.node(self._nodes_seen).name)
            self._nodes_seen += 1
        return (self._graph.is_name_used(full) or full.lower() in self._lower_names
                or full.lower() in self._reserved)

    def unique_name(self, name, mark_as_used=True):
        """`name` in the current name scope, made unique as TF makes it:
        "name", then "name_1", "name_2", ..., ignoring case."""
        full = self._scope.name_scope + "/" + name if self._scope.name_scope else name
        candidate, i = full, 0
        while self._is_name_used(candidate):
            i += 1
            candidate = "%s_%d" % (full, i)
        if mark_as_used:
            self._graph.unique_name(candidate)
            self._use_lower(candidate)
        return candidate

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
        return [self._graph._tensor(o) for o in self._node.inputs]

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
        """Refines this tensor's static shape, as TF's set_shape. The engine
        infers shapes when a node is built, so a refinement reroutes this
        Tensor object through an EnsureShape node (no copy) of the merged
        shape, colocated with its op and checked at run time: a value of
        another shape fails the step, naming the node."""
        new = as_shape(shape)
        merged = _merge_shapes(self.shape, new)
        if merged is None:
            raise ValueError("Tensor's shape %s is not compatible with supplied shape %s" % (self.shape, new))
        if merged == self.shape:
            return
        g = self.graph
        scope = g._scopes[0].colocated_with(self._output)
        self._shape_sets = getattr(self, "_shape_sets", 0) + 1
        base = "%s/set_shape" % self._op.name
        if self._index != 0 or self._shape_sets > 1:
            base += "_%d_%d" % (self._index, self._shape_sets)
        with building():
            node = _core.add_op(scope, "EnsureShape", [self._output], {"shape": merged.as_list()}, base)
        # Consumers and fetches read the checked value; the tensor keeps its
        # op and name, and a feed of it still feeds its op (a placeholder).
        g._wrap_node(node)
        self._output = _core.Output(node, 0)

    def _feed_output(self):
        """The output a feed of this tensor replaces (its op's, whatever set_shape did)."""
        return _core.Output(self._op._node, self._index)

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
    """The graph of the first graph element among `values`, else the default;
    inside a dataset function, that function's graph (which captures the outer
    graph's constants whatever their place among the inputs)."""
    default = get_default_graph()
    if default._captures_constants:
        return default
    for v in values:
        g = getattr(v, "graph", None)
        if isinstance(g, Graph):
            return g
    return get_default_graph()


def make_op(op_type, inputs, attrs=None, name=None, graph=None):
    """Builds one node; returns its Operation. `inputs` are Tensors (lists flattened)."""
    g = graph or _graph_of(inputs)
    tensors = [convert_to_tensor(t) for t in inputs]
    tensors = [_in_graph(g, t, tensors) for t in tensors]
    _check_input_dtypes(op_type, tensors, attrs or {})
    outputs = [t._output for t in tensors]
    # The name op_name reserved for it, or one made unique as TF makes it (the
    # engine, which does not ignore case, keeps a name that is not in use).
    prefix = g._scope.name_scope + "/" if g._scope.name_scope else ""
    if name is not None and name.endswith("/"):
        pass  # a name scope's full name: the node takes it as it is (TF's rule; scope.cc)
    elif name is None or (prefix + name).lower() not in g._reserved:
        name = _relative(g, g.unique_name(name or op_type, mark_as_used=False))
    with building():
        node = _core.add_op(g._scope, op_type, outputs, attrs or {}, name)
    return g._wrap_node(node)


def _in_graph(g, t, tensors):
    """`t` as an input of an op of `g`: itself, or, in a dataset function's
    graph, a copy of a constant of the outer graph (TF captures it); any other
    tensor of another graph is TF's ValueError."""
    if t.graph is g:
        return t
    if g._captures_constants:
        if t.op.type == "Const":
            with g.as_default():
                return constant(t.op.get_attr("value"), dtype=t.dtype)
        raise ValueError("%r is a tensor of the outer graph: a dataset function captures its constants only "
                         "(give the function its values as NumPy arrays or Python numbers)" % (t,))
    first = next((x for x in tensors if x.graph is g), tensors[0])
    raise ValueError("%r must be from the same graph as %r." % (t, first))


_schemas = {}


def _check_input_dtypes(op_type, tensors, attrs):
    """TF's check, at graph construction, that the inputs of one type attr
    (x and y of Add; the values of ConcatV2) share a dtype: a TypeError, where
    the engine's schema check would be an InvalidArgumentError (ValueError)."""
    schema = _schemas.get(op_type)
    if schema is None:
        schema = _schemas[op_type] = _core.op_schema(op_type)
    first = {}  # type attr -> (argument name, dtype) of its first input
    i = 0
    for arg in schema["inputs"]:
        n = 1
        if arg["number_attr"]:
            if arg["number_attr"] not in attrs:
                return  # the engine infers the length: nothing to match the inputs to
            n = int(attrs[arg["number_attr"]])
        group = tensors[i:i + n]
        i += n
        if not arg["type_attr"] or not group:
            continue
        types = [t.dtype for t in group]
        if any(d != types[0] for d in types):
            raise TypeError("Tensors in list passed to '%s' of '%s' Op have types [%s] that don't all match."
                            % (arg["name"], op_type, ", ".join(d.name for d in types)))
        seen = first.setdefault(arg["type_attr"], (arg["name"], types[0]))
        if seen[1] != types[0]:
            raise TypeError("Input '%s' of '%s' Op has type %s that does not match type %s of argument '%s'."
                            % (arg["name"], op_type, types[0].name, seen[1].name, seen[0]))


def _relative(g, full):
    prefix = g._scope.name_scope
    return full[len(prefix) + 1:] if prefix else full


@contextlib.contextmanager
def op_name(name, graph=None):
    """Reserves the name, relative to the current name scope, that an op named
    `name` takes (made unique, not in use) while the block builds it.

    TF builds an op's helper nodes in a name scope of the op's name ("add/y",
    "Sum/reduction_indices", "random_normal/shape") and gives the op that
    scope's name. A wrapper takes its op's name from here, names its helpers
    "<name>/...", then builds the op with the name: both get TF's names, and
    the helpers take no default names ("Const_3") from the user's nodes. A
    name reserved by an enclosing block comes back as it is: the op that a
    wrapper builds through another wrapper (stack's concat) takes it."""
    if name.endswith("/"):
        # A name scope's full name, which the op takes as it is (make_op).
        yield name
        return
    g = graph or get_default_graph()
    prefix = g._scope.name_scope
    full = (prefix + "/" if prefix else "") + name
    if full.lower() not in g._reserved:
        full = g.unique_name(name, mark_as_used=False)
    key = full.lower()
    g._reserved[key] = g._reserved.get(key, 0) + 1
    try:
        yield _relative(g, full)
    finally:
        g._reserved[key] -= 1
        if not g._reserved[key]:
            del g._reserved[key]


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


def _inferred_dtype(value):
    """The dtype TF gives a constant of `value`: a NumPy value keeps its own;
    Python floats are float32, Python ints int32 (int64 when they need it)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return _dtypes.as_dtype(value.dtype)
    arr = np.asarray(value)
    if arr.dtype.kind == "f":
        return _dtypes.float32
    if arr.dtype.kind in ("i", "u"):
        fits = arr.size == 0 or (np.all(arr >= -2**31) and np.all(arr < 2**31))
        return _dtypes.int32 if fits else _dtypes.int64
    return _dtypes.as_dtype(arr.dtype)


def _python_float(value):
    """The first Python float of a (nested) list value, or None."""
    if isinstance(value, float):
        return value
    if isinstance(value, (list, tuple)):
        for v in value:
            f = _python_float(v)
            if f is not None:
                return f
    return None


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    if dtype is None:
        dtype = _inferred_dtype(value)
    else:
        dtype = _dtypes.as_dtype(dtype)
        # TF refuses to truncate a Python float into an integer type.
        f = _python_float(value) if (dtype.is_integer or dtype.is_bool) else None
        if f is not None:
            raise TypeError("Expected %s, but got %r of type 'float'." % (dtype.name, f))
    if dtype == _dtypes.string:
        arr = np.asarray(value, dtype=object)
    else:
        arr = np.asarray(value, dtype=dtype.as_numpy_dtype)
    if shape is not None:
        shape = as_shape(shape).as_list()
        n = int(np.prod(shape, dtype=np.int64))
        if arr.size == n:
            arr = arr.reshape(shape)
        elif verify_shape:
            raise TypeError("Expected Tensor's shape: %s, got %s." % (tuple(shape), arr.shape))
        elif arr.size > n:
            raise ValueError("Too many elements provided. Takes at most %d, but got %d." % (n, arr.size))
        elif arr.size == 0:
            raise ValueError("Cannot fill a constant of shape %s from an empty value" % (tuple(shape),))
        else:
            # TF1 fills the rest of the shape with the last element given.
            flat = arr.reshape(-1)
            arr = np.concatenate([flat, np.full(n - flat.size, flat[-1], dtype=arr.dtype)]).reshape(shape)
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


def _raise_unsupported(name):
    raise errors.UnimplementedError(None, None, "%s is not supported by towerflow" % name)
