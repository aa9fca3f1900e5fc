"""tf.train of TF1's Python API: optimizers, the global step, Saver,
Coordinator, queue runners, input producers and batching."""

import contextlib
import numbers
import os
import threading

import numpy as np

from .. import _core
from .. import errors
from . import dtypes as _dtypes
from . import framework as fw
from . import variables


# ---- optimizers -------------------------------------------------------------------

class Optimizer:
    """TF1's tf.train.Optimizer over the engine's optimizers: gradients by
    tw::Gradients, one update op per variable, slots in the variable store."""

    def __init__(self, use_locking, name):
        self._name = name
        self._core = None

    def _engine(self, graph):
        raise NotImplementedError

    def _opt(self):
        if self._core is None:
            self._core = self._make()
        return self._core

    # The slots TF names for get_slot_names (those of the update built).
    _slot_names = ()

    @staticmethod
    def _lr(value):
        """A hyper-parameter as (constant, tensor output or None). As TF's: a
        callable is called, and a Python number is a float32 tensor cast to the
        variable's dtype (so a float64 variable sees 0.1 rounded to float32)."""
        if callable(value) and not isinstance(value, (fw.Tensor, variables.Variable)):
            value = value()
        if isinstance(value, (fw.Tensor, variables.Variable)):
            t = fw.convert_to_tensor(value)
            return 0.0, t._output
        return float(np.float32(value)), None

    @classmethod
    def _constant(cls, value, what):
        """A hyper-parameter the engine takes as a constant only."""
        constant, tensor = cls._lr(value)
        if tensor is not None:
            raise NotImplementedError("towerflow's %s takes a Python number for %s, not a tensor" % (cls.__name__, what))
        return constant

    def get_slot_names(self):
        return sorted(self._slot_names) if self._core is not None else []

    def get_name(self):
        return self._name

    def compute_gradients(self, loss, var_list=None, gate_gradients=1, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        if grad_loss is not None:
            raise NotImplementedError("compute_gradients(grad_loss=...) is not supported by towerflow")
        loss = fw.convert_to_tensor(loss)
        g = loss.graph
        vars_ = [v._var for v in (var_list or [])]
        pairs = self._opt().compute_gradients(g._scope, loss._output, vars_)
        out = []
        for grad, core_var in pairs:
            t = None if grad is None else g._tensor(grad)
            out.append((t, variables._wrap_variable(g, core_var)))
        return out

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        g = None
        pairs = []
        for grad, var in grads_and_vars:
            if not isinstance(var, variables.Variable):
                raise TypeError("apply_gradients takes (gradient, Variable) pairs, got %r" % (var,))
            g = var.graph
            pairs.append((None if grad is None else fw.convert_to_tensor(grad)._output, var._var))
        step = None if global_step is None else global_step._var
        node = self._opt().apply_gradients(g._scope, pairs, step, name or "")
        return g._wrap_node(node)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None):
        gv = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        if all(g is None for g, _ in gv):
            raise ValueError("No gradients provided for any variable, check your graph for ops that do not "
                             "support gradients, between variables %s and loss %s."
                             % ([v.name for _, v in gv], loss))
        return self.apply_gradients(gv, global_step=global_step, name=name)

    def get_slot(self, var, name):
        slot = self._opt().get_slot(var.graph._graph, var._var, name)
        return None if slot is None else variables._wrap_variable(var.graph, slot, False)

    def variables(self):
        return [v for v in fw.get_default_graph().get_collection("variables")
                if v.name.split(":")[0].endswith("/" + self._name) or "/" + self._name + "_" in v.name]


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._lr_value = learning_rate

    def _make(self):
        lr, t = self._lr(self._lr_value)
        return _core.GradientDescent(lr, t, name=self._name)


class MomentumOptimizer(Optimizer):
    _slot_names = ("momentum",)

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum", use_nesterov=False):
        super().__init__(use_locking, name)
        self._args = (learning_rate, momentum, use_nesterov)

    def _make(self):
        lr, t = self._lr(self._args[0])
        return _core.Momentum(lr, self._constant(self._args[1], "momentum"), bool(self._args[2]), t, name=self._name)


class AdamOptimizer(Optimizer):
    _slot_names = ("m", "v")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._args = (learning_rate, beta1, beta2, epsilon)

    def _make(self):
        lr, t = self._lr(self._args[0])
        beta1, beta2, epsilon = (self._constant(v, n) for v, n in zip(self._args[1:], ("beta1", "beta2", "epsilon")))
        return _core.Adam(lr, beta1, beta2, epsilon, t, name=self._name)


class RMSPropOptimizer(Optimizer):
    """TF1's RMSProp: slots "<var>/<name>" (rms, from ones), then "mg" when
    centered and "momentum", each "<var>/<name>_N" in that order."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False, centered=False,
                 name="RMSProp"):
        super().__init__(use_locking, name)
        self._args = (learning_rate, decay, momentum, epsilon, centered)

    @property
    def _slot_names(self):
        return ("rms", "mg", "momentum") if self._args[4] else ("rms", "momentum")

    def _make(self):
        lr, t = self._lr(self._args[0])
        (decay, decay_t), (momentum, momentum_t), (epsilon, epsilon_t) = (self._lr(v) for v in self._args[1:4])
        return _core.RMSProp(lr, decay, momentum, epsilon, bool(self._args[4]), t, name=self._name,
                             decay_tensor=decay_t, momentum_tensor=momentum_t, epsilon_tensor=epsilon_t)


class AdagradOptimizer(Optimizer):
    """TF1's Adagrad: one slot "<var>/<name>" (accumulator), from
    initial_accumulator_value."""

    _slot_names = ("accumulator",)

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False, name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: %s" % initial_accumulator_value)
        super().__init__(use_locking, name)
        self._args = (learning_rate, initial_accumulator_value)

    def _make(self):
        lr, t = self._lr(self._args[0])
        return _core.Adagrad(lr, float(self._args[1]), t, name=self._name)


def get_or_create_global_step(graph=None):
    g = graph or fw.get_default_graph()
    # As TF: a variable the script made itself, tf.Variable(0, name="global_step"), is the step.
    existing = get_global_step(g)
    if existing is not None:
        if not existing.dtype.base_dtype.is_integer:
            raise TypeError("Existing \"global_step\" does not have integer type: %s" % existing.dtype)
        return existing
    core_var = _core.get_or_create_global_step(g._scopes[0])
    return variables._wrap_variable(g, core_var, False)


def get_global_step(graph=None):
    g = graph or fw.get_default_graph()
    v = _core.find_variable(g._graph, "global_step")
    return None if v is None else variables._wrap_variable(g, v, False)


create_global_step = get_or_create_global_step


# ---- Saver -----------------------------------------------------------------------

class Saver:
    """tf.train.Saver writing safetensors checkpoints (CRC32C per tensor).

    save() writes ``<save_path>-<global_step>`` (or ``save_path``) and returns
    that path; restore() reads it back, every variable or none."""

    def __init__(self, var_list=None, max_to_keep=5, name=None, **kwargs):
        g = fw.get_default_graph()
        self._graph = g
        if isinstance(var_list, dict):
            # TF's {"name in the file": variable}: fine-tuning from a checkpoint
            # whose names differ from this graph's.
            if not var_list:
                raise ValueError("Saver: no variables to save")
            named = [(str(k), v._var) for k, v in var_list.items()]
            self._saver = _core.Saver(g._scopes[0], named=named)
        elif (var_list is not None and len(var_list) == 0) or (var_list is None and not variables.global_variables()):
            # Nothing to save: TF's allow_empty makes a saver whose save()
            # returns None and whose restore() does nothing; else an error.
            if not kwargs.get("allow_empty"):
                raise ValueError("No variables to save")
            self._saver = None
        else:
            vars_ = [v._var for v in (var_list or [])]
            self._saver = _core.Saver(g._scopes[0], vars_)
        self._max_to_keep = max_to_keep
        self._last = []

    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix="meta",
             write_meta_graph=True, write_state=True, strip_default_attrs=False, save_debug_info=False):
        if not hasattr(sess, "_session"):
            raise TypeError("'sess' must be a Session; %s" % (sess,))
        if self._saver is None:
            return None
        if global_step is not None:
            # A Python or NumPy integer (a step fetched by sess.run), else a tensor or variable.
            step = int(global_step) if isinstance(global_step, numbers.Integral) else int(sess.run(global_step))
            save_path = "%s-%d" % (save_path, step)
        directory = os.path.dirname(save_path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self._saver.save(sess._session, save_path)
        # As TF: a path saved again moves to the newest place, once; with no
        # max_to_keep nothing is kept track of (the file names the newest alone).
        if self._max_to_keep:
            if save_path in self._last:
                self._last.remove(save_path)
            self._last.append(save_path)
        if self._max_to_keep and len(self._last) > self._max_to_keep:
            old = self._last.pop(0)
            if old != save_path and os.path.exists(old):
                os.remove(old)
        if write_state and directory is not None:
            with open(os.path.join(directory or ".", latest_filename or "checkpoint"), "w") as f:
                # TF's CheckpointState as text: the newest, then every kept one, oldest first.
                f.write('model_checkpoint_path: "%s"\n' % os.path.basename(save_path))
                for kept in self._last or [save_path]:
                    f.write('all_model_checkpoint_paths: "%s"\n' % os.path.basename(kept))
        return save_path

    def restore(self, sess, save_path):
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if not os.path.exists(save_path):
            # TF checks the path before restoring: no checkpoint there is a ValueError.
            raise ValueError("The passed save_path is not a valid checkpoint: %s" % save_path)
        if self._saver is not None:
            self._saver.restore(sess._session, save_path)

    @property
    def last_checkpoints(self):
        return list(self._last)

    def recover_last_checkpoints(self, checkpoint_paths):
        """Takes over the checkpoints an earlier saver kept (those that exist),
        oldest first, so that max_to_keep and the "checkpoint" file go on
        from them (what a monitored session does when it restores)."""
        self._last = [p for p in checkpoint_paths if os.path.exists(p)]


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    path = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        for line in f:
            if line.startswith("model_checkpoint_path:"):
                name = line.split(":", 1)[1].strip().strip('"')
                return os.path.join(checkpoint_dir, name)
    return None


class CheckpointState:
    """What the "checkpoint" file of a directory says (TF's CheckpointState)."""

    def __init__(self, model_checkpoint_path, all_model_checkpoint_paths):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)

    def __repr__(self):
        return "CheckpointState(model_checkpoint_path=%r)" % self.model_checkpoint_path


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """tf.train.get_checkpoint_state: the newest checkpoint and every kept one
    (paths under checkpoint_dir), or None without a "checkpoint" file."""
    path = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    if not os.path.exists(path):
        return None
    newest, every = None, []
    with open(path) as f:
        for line in f:
            key, _, value = line.partition(":")
            value = value.strip().strip('"')
            if not value:
                continue
            full = value if os.path.isabs(value) else os.path.join(checkpoint_dir, value)
            if key.strip() == "model_checkpoint_path":
                newest = full
            elif key.strip() == "all_model_checkpoint_paths":
                every.append(full)
    if newest is None:
        return None
    return CheckpointState(newest, every or [newest])


# ---- learning rate schedules -------------------------------------------------------

def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """learning_rate * decay_rate ** (global_step / decay_steps), the exponent
    truncated to an integer with staircase (the step is not negative)."""
    from . import array_ops, math_ops
    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    lr = fw.convert_to_tensor(learning_rate, name="learning_rate")
    with fw.op_name(name or "ExponentialDecay", lr.graph) as name:
        step = array_ops.cast(global_step, lr.dtype, name=name + "/Cast")
        p = math_ops.divide(step, fw.convert_to_tensor(decay_steps, dtype=lr.dtype, name=name + "/decay_steps"),
                            name=name + "/truediv")
        if staircase:
            p = array_ops.cast(array_ops.cast(p, _dtypes.int64, name=name + "/Floor"), lr.dtype, name=name + "/Cast_1")
        rate = math_ops.log(fw.convert_to_tensor(decay_rate, dtype=lr.dtype, name=name + "/decay_rate"),
                            name=name + "/Log")
        return math_ops.multiply(lr, math_ops.exp(math_ops.multiply(p, rate, name=name + "/mul"),
                                                  name=name + "/Pow"), name=name)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x
    <= boundaries[i], values[-1] after the last boundary (each value exactly:
    a sum of values times 0/1 masks)."""
    from . import array_ops, math_ops
    if len(values) != len(boundaries) + 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    x = fw.convert_to_tensor(x)
    with fw.op_name(name or "PiecewiseConstant", x.graph) as name:
        vals = [fw.convert_to_tensor(v, name=name + "/value_%d" % i) for i, v in enumerate(values)]
        dtype = vals[0].dtype
        terms = []
        for i, v in enumerate(vals):
            conditions = []
            if i > 0:
                conditions.append(math_ops.greater(x, boundaries[i - 1], name=name + "/Greater_%d" % i))
            if i < len(boundaries):
                conditions.append(math_ops.less_equal(x, boundaries[i], name=name + "/LessEqual_%d" % i))
            mask = None
            for j, c in enumerate(conditions):
                m = array_ops.cast(c, dtype, name=name + "/mask_%d_%d" % (i, j))
                mask = m if mask is None else math_ops.multiply(mask, m, name=name + "/both_%d" % i)
            terms.append(math_ops.multiply(v, mask, name=name + "/term_%d" % i))
        return math_ops.add_n(terms, name=name) if len(terms) > 1 else terms[0]


# ---- Coordinator and queue runners ------------------------------------------------

class Coordinator:
    """tf.train.Coordinator over the engine's: queue runner threads (C++) and
    Python threads stop together; OutOfRangeError is a clean stop."""

    def __init__(self, clean_stop_exception_types=None):
        self._coord = _core.Coordinator()
        self._clean = tuple(clean_stop_exception_types or (errors.OutOfRangeError,))
        self._py_exc = None
        self._py_threads = []
        self._lock = threading.Lock()

    def request_stop(self, ex=None):
        if ex is None:
            self._coord.request_stop()
            return
        if isinstance(ex, tuple):  # sys.exc_info()
            ex = ex[1]
        if isinstance(ex, self._clean):
            self._coord.request_stop()
        elif isinstance(ex, errors.OpError):
            self._coord.request_stop(ex.error_code, ex.message)
        else:
            with self._lock:
                if self._py_exc is None:
                    self._py_exc = ex
            self._coord.request_stop(errors.UNKNOWN, "%s: %s" % (type(ex).__name__, ex))

    def should_stop(self):
        return self._coord.should_stop()

    def clear_stop(self):
        self._coord.clear_stop()
        self._py_exc = None

    def wait_for_stop(self, timeout=None):
        return self._coord.wait_for_stop(timeout)

    @contextlib.contextmanager
    def stop_on_exception(self):
        try:
            yield
        except Exception as ex:  # noqa: BLE001 (TF's contract)
            self.request_stop(ex)

    def register_thread(self, thread):
        self._py_threads.append(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        threads = list(threads or []) + self._py_threads
        groups = [t for t in threads if isinstance(t, _core.ThreadGroup)]
        py = [t for t in threads if not isinstance(t, _core.ThreadGroup)]
        try:
            self._coord.join(groups, float(stop_grace_period_secs), bool(ignore_live_threads))
        except errors.OpError:
            if self._py_exc is not None:
                raise self._py_exc from None
            raise
        finally:
            for t in py:
                t.join(stop_grace_period_secs)
        if self._py_exc is not None:
            raise self._py_exc

    @property
    def joined(self):
        return False


def start_queue_runners(sess=None, coord=None, daemon=True, start=True, collection="queue_runners"):
    """Starts the threads of every queue runner of the session's graph; the
    returned list goes to coord.join()."""
    from . import framework
    sess = sess or framework.get_default_session()
    if sess is None:
        raise ValueError("Cannot start queue runners: No default session is registered.")
    if not start:
        raise NotImplementedError("start_queue_runners(start=False) is not supported by towerflow")
    if collection != "queue_runners":
        raise NotImplementedError("towerflow's queue runners live in collection 'queue_runners'")
    coord = coord or Coordinator()
    group = _core.start_queue_runners(sess._session, coord._coord)
    # TF's runner threads are daemons that run whether or not the caller
    # keeps the list (tf.train.start_queue_runners(sess=sess), its result
    # dropped, is the usual call): the session keeps them too, and stops
    # them when it closes.
    sess._runner_groups.append(group)
    return [group]


# ---- input producers and batching ---------------------------------------------------

class _Queue:
    """A queue the input functions built (tf.FIFOQueue's read-side face)."""

    def __init__(self, graph, core_queue):
        self._graph = graph
        self._queue = core_queue
        h = core_queue.handle
        self._ref = graph._tensor(h)

    @property
    def queue_ref(self):
        return self._ref

    @property
    def name(self):
        return self._queue.name

    @property
    def dtypes(self):
        return [_dtypes.as_dtype(d) for d in self._queue.dtypes]

    def size(self, name=None):
        out = self._queue.size(self._graph._scope)
        return self._graph._tensor(out)

    def close(self, cancel_pending_enqueues=False, name=None):
        return self._graph._wrap_node(self._queue.close(self._graph._scope, cancel_pending_enqueues))


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                          name=None, cancel_op=None):
    if isinstance(string_tensor, (fw.Tensor, variables.Variable)):
        raise NotImplementedError("towerflow's string_input_producer takes a Python list of file names")
    strings = [s.decode() if isinstance(s, bytes) else str(s) for s in string_tensor]
    if not strings:
        raise ValueError("string_input_producer needs at least one string (an empty list of files?)")
    g = fw.get_default_graph()
    scope = g._scope.with_op_name(name) if name else g._scope
    q = _core.string_input_producer(scope, strings, num_epochs, bool(shuffle), 0 if seed is None else int(seed),
                                    int(capacity), shared_name or "")
    return _Queue(g, q)


def _flatten_tensors(tensors):
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return [fw.convert_to_tensor(tensors[k]) for k in keys], lambda out: dict(zip(keys, out))
    if not isinstance(tensors, (list, tuple)):
        raise TypeError("batch functions take a list or a dict of tensors")
    flat = [fw.convert_to_tensor(t) for t in tensors]
    return flat, lambda out: out[0] if len(out) == 1 else list(out)


def _shapes(shapes):
    return None if shapes is None else [fw.as_shape(s).as_list() for s in shapes]


def _check_dynamic_pad(dynamic_pad):
    if dynamic_pad:
        raise NotImplementedError("batch(dynamic_pad=True) is not supported by towerflow")


def _wrap_outputs(g, outputs):
    return [g._tensor(o) for o in outputs]


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
          allow_smaller_final_batch=False, shared_name=None, name=None):
    _check_dynamic_pad(dynamic_pad)
    flat, rebuild = _flatten_tensors(tensors)
    g = fw._graph_of(flat)
    scope = g._scope.with_op_name(name) if name else g._scope
    out = _core.batch(scope, [[t._output for t in flat]], int(batch_size), int(num_threads), int(capacity),
                      bool(enqueue_many), _shapes(shapes), bool(allow_smaller_final_batch), shared_name or "", False)
    return rebuild(_wrap_outputs(g, out))


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
               allow_smaller_final_batch=False, shared_name=None, name=None):
    _check_dynamic_pad(dynamic_pad)
    lists = [_flatten_tensors(t) for t in tensors_list]
    g = fw._graph_of(lists[0][0])
    scope = g._scope.with_op_name(name) if name else g._scope
    out = _core.batch(scope, [[t._output for t in flat] for flat, _ in lists], int(batch_size), 1, int(capacity),
                      bool(enqueue_many), _shapes(shapes), bool(allow_smaller_final_batch), shared_name or "", True)
    return lists[0][1](_wrap_outputs(g, out))


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None, enqueue_many=False,
                  shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    flat, rebuild = _flatten_tensors(tensors)
    g = fw._graph_of(flat)
    scope = g._scope.with_op_name(name) if name else g._scope
    out = _core.shuffle_batch(scope, [[t._output for t in flat]], int(batch_size), int(capacity),
                              int(min_after_dequeue), int(num_threads), 0 if seed is None else int(seed),
                              bool(enqueue_many), _shapes(shapes), bool(allow_smaller_final_batch),
                              shared_name or "", False)
    return rebuild(_wrap_outputs(g, out))


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None, enqueue_many=False,
                       shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    lists = [_flatten_tensors(t) for t in tensors_list]
    g = fw._graph_of(lists[0][0])
    scope = g._scope.with_op_name(name) if name else g._scope
    out = _core.shuffle_batch(scope, [[t._output for t in flat] for flat, _ in lists], int(batch_size),
                              int(capacity), int(min_after_dequeue), 1, 0 if seed is None else int(seed),
                              bool(enqueue_many), _shapes(shapes), bool(allow_smaller_final_batch),
                              shared_name or "", True)
    return lists[0][1](_wrap_outputs(g, out))
