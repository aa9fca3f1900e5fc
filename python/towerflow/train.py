"""towerflow.train: data-parallel towers (tw::train::Replicate) from Python.

    import towerflow as tw
    import towerflow.compat.v1 as tf

    ds = tw.data.TFRecordDataset(files).map(parse).shuffle(10000).batch(64).repeat()
    step = tw.train.Replicate(["/cpu:0", "/cpu:1"], ds, tf.train.MomentumOptimizer(0.05, 0.9),
                              lambda images, labels: loss_of(images, labels), global_step=True)
    sess.run(step.train_op)

Each tower takes its own batch from the source (a towerflow.data.Dataset:
one IteratorGetNext per tower; or a function building the tower's dequeue,
such as ``lambda: tf.train.shuffle_batch(...)``), builds its loss in its own
name and device scope with variables shared through variable-scope reuse; the
gradients are averaged and applied by one op. The tower function receives the
batch's components and returns a scalar loss, built with towerflow.compat.v1.
"""

import collections
import contextlib

from . import _core
from . import data as _data
from ._tf1 import framework as _fw
from ._tf1 import train as _train
from ._tf1 import variables as _vars

ReplicaStep = collections.namedtuple(
    "ReplicaStep", ["loss", "tower_losses", "train_op", "tower_batches", "devices", "tower_scopes", "global_step"])


@contextlib.contextmanager
def _in_scope(graph, scope):
    """Builds in the engine scope `scope` (a tower's) as the current one."""
    graph._scopes.append(scope)
    try:
        yield
    finally:
        graph._scopes.pop()


def Replicate(devices, source, optimizer, tower_fn, name_scope_prefix="tower", mirrored=False,
              variable_device="/cpu:0", global_step=False, ordered_batches=False):
    """Builds the towers, gradient averaging and update op in the default graph.

    devices: a list of device strings or a comma-separated string ("cpu:0,cpu:1").
    source: a towerflow.data.Dataset, or a function of no arguments returning
      the tower's batch (a list of Tensors) built where it is called.
    optimizer: a towerflow.compat.v1 tf.train optimizer.
    tower_fn: called once per tower (and possibly once more to create the
      variables on `variable_device`) with the batch's components; returns the
      tower's scalar loss. It must only build graph nodes.
    Returns a ReplicaStep of Tensors and Operations.
    """
    g = _fw.get_default_graph()
    if isinstance(devices, str):
        devices = _core.parse_devices(devices)
    if isinstance(source, _data.Dataset):
        iterator = source.make_one_shot_iterator()
        single = source._single

        def next_batch():
            batch = iterator.get_next()
            return [batch] if single else list(batch)
    elif callable(source):
        def next_batch():
            batch = source()
            return list(batch) if isinstance(batch, (list, tuple)) else [batch]
    else:
        raise TypeError("source must be a towerflow.data.Dataset or a function returning a batch")

    def build_source(scope):
        with _in_scope(g, scope):
            return [_fw.convert_to_tensor(t)._output for t in next_batch()]

    def build_tower(scope, batch):
        with _in_scope(g, scope):
            # Variables are shared through the engine scope's variable scope
            # and reuse flag, which the Python variable-scope stack mirrors.
            vs = _vars.VariableScope(g, scope, scope.variable_scope, True if scope.reuse else False)
            _vars._root_var_scope(g)
            g._var_scopes.append(vs)
            try:
                tensors = [g._tensor(o) for o in batch]
                loss = tower_fn(*tensors)
            finally:
                g._var_scopes.pop()
            return _fw.convert_to_tensor(loss)._output

    r = _core.replicate(g._scope, list(devices), build_source, optimizer._opt(), build_tower, name_scope_prefix,
                        bool(mirrored), variable_device, bool(global_step), bool(ordered_batches))

    def tensor(o):
        return g._tensor(o)

    step = r["global_step"]
    return ReplicaStep(
        loss=tensor(r["loss"]),
        tower_losses=[tensor(o) for o in r["tower_losses"]],
        train_op=g._wrap_node(r["train_op"]),
        tower_batches=[[tensor(o) for o in b] for b in r["tower_batches"]],
        devices=list(r["devices"]),
        tower_scopes=list(r["tower_scopes"]),
        global_step=None if step is None else _vars._wrap_variable(g, step, False),
    )


GradientDescentOptimizer = _train.GradientDescentOptimizer
MomentumOptimizer = _train.MomentumOptimizer
AdamOptimizer = _train.AdamOptimizer
RMSPropOptimizer = _train.RMSPropOptimizer
AdagradOptimizer = _train.AdagradOptimizer
