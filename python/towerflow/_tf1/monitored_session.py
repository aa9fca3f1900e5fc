"""tf.train's monitored sessions and hooks, as TF1's: MonitoredTrainingSession,
MonitoredSession, SingularMonitoredSession, Scaffold, ChiefSessionCreator,
SessionRunHook and its arguments (SessionRunArgs, SessionRunContext,
SessionRunValues), and the hooks StopAtStepHook, NanTensorHook,
LoggingTensorHook, CheckpointSaverHook, SummarySaverHook, StepCounterHook.

A monitored session builds on the engine's Session: hooks' begin() may add
ops, then the Scaffold makes the missing defaults (init_op, local_init_op,
summary_op, saver) and the graph is finalized; the session is created, its
variables restored from the newest checkpoint of checkpoint_dir (else
initialized), the queue runners started under a Coordinator, and each hook
told (after_create_session). Every run() merges the hooks' requests into
one session run and lets them ask to stop. Leaving the `with` block (or
close()) ends the hooks (a final checkpoint), stops and joins the queue
runners, and closes the session; an OutOfRangeError (the input ran out)
ends the block without an error, as in TF1."""

import collections
import inspect
import os
import time

import numpy as np

from .. import errors
from . import framework as fw
from . import platform as _platform
from . import summary as _summary
from . import train as _train
from . import variables as _vars


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: fetches, feeds and options."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])):
    """What a hook gets back: the results of its fetches."""


class SessionRunContext:
    """The run a hook sees: the caller's arguments, the session, and a way to stop."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        self._stop_requested = True


class SessionRunHook:
    """The base of hooks: every method does nothing."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


def _global_step_or_raise(hook):
    step = _train.get_global_step()
    if step is None:
        raise RuntimeError("Global step should be created to use %s." % hook)
    return step


class _Timer:
    """TF's SecondOrStepTimer: triggers every `every_secs` seconds or every `every_steps` steps."""

    def __init__(self, every_secs=None, every_steps=None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._secs, self._steps = every_secs, every_steps
        self.reset()

    def reset(self):
        self._last_time = self._last_step = None

    def should_trigger_for_step(self, step):
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._secs is not None:
            return time.time() >= self._last_time + self._secs
        return step >= self._last_step + self._steps

    def update_last_triggered_step(self, step):
        now = time.time()
        elapsed = None if self._last_time is None else (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self):
        return self._last_step


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches last_step (or num_steps past where it started)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        self._step = _global_step_or_raise("StopAtStepHook")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._step)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        # The step read before this run's increment.
        if int(run_values.results) + 1 >= self._last_step:
            if int(run_context.session.run(self._step)) >= self._last_step:
                run_context.request_stop()


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Fails (or stops) when the loss is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss, self._fail = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail:
                _platform.error(message)
                raise NanLossDuringTrainingError
            _platform.warning(message)
            run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Logs the values of tensors every N runs or seconds (and at the end)."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False, formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError("invalid every_n_iter=%s." % every_n_iter)
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors.keys()) if not isinstance(tensors, collections.OrderedDict) \
                else list(tensors.keys())
            self._tensors = dict(tensors)
        else:
            # As TF: each item is its own tag (a name, or the tensor itself).
            self._tag_order = list(tensors)
            self._tensors = {t: t for t in tensors}
        self._timer = None if only_log_at_end else _Timer(every_n_secs, every_n_iter)
        self._log_at_end, self._formatter = at_end, formatter

    def begin(self):
        g = fw.get_default_graph()
        # A name without an output index is the op's first output (TF's rule).
        self._fetch = {tag: (g.as_graph_element(t if ":" in t else t + ":0") if isinstance(t, str) else t)
                       for tag, t in self._tensors.items()}
        self._iter = 0
        if self._timer is not None:
            self._timer.reset()

    def before_run(self, run_context):
        self._should_log = self._timer is not None and self._timer.should_trigger_for_step(self._iter)
        return SessionRunArgs(self._fetch) if self._should_log else None

    def _log(self, values):
        if self._formatter:
            _platform.info(self._formatter(values))
        else:
            _platform.info(", ".join("%s = %s" % (tag, values[tag]) for tag in self._tag_order))

    def after_run(self, run_context, run_values):
        if self._should_log:
            self._timer.update_last_triggered_step(self._iter)
            self._log(run_values.results)
        self._iter += 1

    def end(self, session):
        if self._log_at_end:
            self._log(session.run(self._fetch))


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint of the global step when the session starts, every N
    seconds or steps, and at the end."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._dir, self._saver, self._scaffold = checkpoint_dir, saver, scaffold
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._timer = _Timer(save_secs, save_steps)
        self._listeners = list(listeners or [])

    def begin(self):
        self._step = _global_step_or_raise("CheckpointSaverHook")
        self._writer = _summary_writer(self._dir)
        for listener in self._listeners:
            listener.begin()

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = fw.get_default_graph().get_collection("savers")
        if not savers:
            raise RuntimeError("No items in collection savers. Please add a saver to the collection.")
        return savers[0]

    def after_create_session(self, session, coord):
        step = int(session.run(self._step))
        self._writer.add_graph(fw.get_default_graph())
        # The checkpoint saved here is the state at step `step`.
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._step))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session):
        step = int(session.run(self._step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)
        self._writer.flush()

    def _save(self, session, step):
        _platform.info("Saving checkpoints for %d into %s." % (step, self._path))
        stop = False
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._path, global_step=step)
        for listener in self._listeners:
            stop = bool(listener.after_save(session, step)) or stop
        return stop


class CheckpointSaverListener:
    """Called around a CheckpointSaverHook's saves; after_save returning True stops training."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class SummarySaverHook(SessionRunHook):
    """Writes the summary op's result every N steps or seconds."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None, scaffold=None,
                 summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._op, self._scaffold = summary_op, scaffold
        self._dir, self._writer = output_dir, summary_writer
        self._timer = _Timer(save_secs, save_steps)

    def begin(self):
        if self._writer is None and self._dir:
            self._writer = _summary_writer(self._dir)
        self._step = _global_step_or_raise("SummarySaverHook")
        self._next_step = None

    def _summary_op(self):
        op = self._scaffold.summary_op if self._op is None else self._op
        if op is None:
            return None
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context):
        self._request = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        fetches = {"global_step": self._step}
        ops = self._summary_op()
        if self._request and ops is not None:
            fetches["summary"] = ops
        return SessionRunArgs(fetches)

    def after_run(self, run_context, run_values):
        if not self._writer:
            return
        # The step fetched with the run is the step after it (the engine reads
        # a fetched variable once the run's updates are done).
        step = int(run_values.results["global_step"])
        if self._next_step is None or self._request:
            step = int(run_context.session.run(self._step))
        if self._request:
            self._timer.update_last_triggered_step(step)
            for s in run_values.results.get("summary", []):
                self._writer.add_summary(s, step)
        self._next_step = step + 1

    def end(self, session=None):
        if self._writer:
            self._writer.flush()


class StepCounterHook(SessionRunHook):
    """Logs, and writes as the summary "global_step/sec", the steps per second."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = _Timer(every_n_secs, every_n_steps)
        self._dir, self._writer = output_dir, summary_writer

    def begin(self):
        if self._writer is None and self._dir:
            self._writer = _summary_writer(self._dir)
        self._step = _global_step_or_raise("StepCounterHook")
        self._tag = self._step.op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            step = int(run_context.session.run(self._step))
            if self._timer.should_trigger_for_step(step):
                elapsed = self._timer.update_last_triggered_step(step)
                if elapsed is not None and elapsed[0] > 0:
                    rate = elapsed[1] / elapsed[0]
                    if self._writer is not None:
                        self._writer.add_summary(_summary._encode([(self._tag, "scalar", rate)]), step)
                    _platform.info("%s: %g" % (self._tag, rate))


def _summary_writer(logdir):
    """One FileWriter per directory, shared by the hooks (TF's FileWriterCache)."""
    key = os.path.abspath(logdir)
    writer = _WRITERS.get(key)
    if writer is None:
        writer = _WRITERS[key] = _summary.FileWriter(logdir)
    return writer


_WRITERS = {}


class Scaffold:
    """What a monitored session needs to make a session: the ops that initialize
    and restore, the summary op and the saver; finalize() makes the missing ones."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None, saver=None, copy_from_scaffold=None):
        self._init_op, self._init_feed_dict, self._init_fn = init_op, init_feed_dict, init_fn
        self._local_init_op, self._summary_op, self._saver = local_init_op, summary_op, saver

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The one item of a graph collection, else default_constructor()'s
        (then added to the collection), as TF's Scaffold.get_or_default."""
        g = fw.get_default_graph()
        items = g.get_collection(collection_key)
        if len(items) > 1:
            raise RuntimeError("More than one item in collection {}. Please indicate which one to use by passing it "
                               "to the tf.Scaffold constructor as:  tf.Scaffold({}=item to use)".format(
                                   collection_key, arg_name))
        if items:
            return items[0]
        op = default_constructor()
        if op is not None:
            g.add_to_collection(collection_key, op)
        return op

    def finalize(self):
        g = fw.get_default_graph()
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", "init_op", _vars.global_variables_initializer)
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default("local_init_op", "local_init_op",
                                                          _vars.local_variables_initializer)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", "summary_op", _summary.merge_all)
        if self._saver is None:
            savers = g.get_collection("savers")
            if len(savers) > 1:
                raise RuntimeError("More than one item in collection savers. Please indicate which one to use by "
                                   "passing it to the constructor.")
            if savers:
                self._saver = savers[0]
            else:
                self._saver = _train.Saver(allow_empty=True)
                g.add_to_collection("savers", self._saver)
        g.finalize()
        return self

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)


class SessionCreator:
    """Makes the session of a monitored session (tf.train.SessionCreator)."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for %s." % type(self).__name__)


class ChiefSessionCreator(SessionCreator):
    """Makes the session: restores the newest checkpoint of checkpoint_dir (or
    checkpoint_filename_with_path), else runs the init op; then the local init op."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._config, self._dir, self._path = config, checkpoint_dir, checkpoint_filename_with_path

    def create_session(self):
        from . import session as _session
        s = self._scaffold.finalize()
        sess = _session.Session(config=self._config)
        path = self._path
        if path is None and self._dir:
            state = _train.get_checkpoint_state(self._dir)
            if state is not None and state.model_checkpoint_path:
                path = state.model_checkpoint_path
                s.saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
        if path is not None:
            s.saver.restore(sess, path)
        else:
            sess.run(s.init_op, feed_dict=s.init_feed_dict)
            if s.init_fn is not None:
                s.init_fn(s, sess)
        if s.local_init_op is not None:
            sess.run(s.local_init_op)
        return sess


class _StepContext:
    """What run_step_fn's step function gets (TF's StepContext)."""

    def __init__(self, monitored):
        self._monitored = monitored

    @property
    def session(self):
        return self._monitored._sess

    def run_with_hooks(self, *args, **kwargs):
        return self._monitored.run(*args, **kwargs)

    def request_stop(self):
        raise StopIteration("step_fn has requested the iterations to stop.")


class _MonitoredSession:
    def __init__(self, session_creator, hooks, stop_grace_period_secs=120):
        self._hooks = list(hooks or [])
        self._was_finalized = fw.get_default_graph().finalized
        for h in self._hooks:
            h.begin()
        self._creator = session_creator or ChiefSessionCreator()
        self._grace = stop_grace_period_secs
        self._sess = self._creator.create_session()
        self._coord = _train.Coordinator()
        self._threads = _train.start_queue_runners(sess=self._sess, coord=self._coord)
        for h in self._hooks:
            h.after_create_session(self._sess, self._coord)
        self._stop = False
        self._closed = False

    @property
    def graph(self):
        return self._sess.graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Session is already closed.")
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        args = SessionRunArgs(fetches, feed_dict, options)
        context = SessionRunContext(args, self._sess)
        merged = {"caller": fetches}
        feeds = dict(feed_dict or {})
        requests = {}
        for i, h in enumerate(self._hooks):
            request = h.before_run(context)
            if request is None:
                continue
            requests[i] = request
            if request.fetches is not None:
                merged[i] = request.fetches
            for key, value in (request.feed_dict or {}).items():
                if feed_dict is not None and key in feed_dict:
                    raise RuntimeError("Same tensor is fed by a SessionRunHook and user. Conflict(s): %s" % [key])
                if key in feeds:
                    raise RuntimeError("Same tensor is fed by two hooks. Conflict(s): %s" % [key])
                feeds[key] = value
        try:
            results = self._sess.run(merged, feed_dict=feeds or None, options=options, run_metadata=run_metadata)
        except errors.OutOfRangeError:
            self._stop = True
            raise
        for i, h in enumerate(self._hooks):
            h.after_run(context, SessionRunValues(results.get(i), options, run_metadata))
        self._stop = self._stop or context.stop_requested
        return results["caller"]

    def run_step_fn(self, step_fn):
        """Runs step_fn(step_context): its session is the raw session, its
        run_with_hooks() this session's run(); request_stop() ends the step
        function with StopIteration (which ends a `with` block without an error)."""
        args = tuple(inspect.signature(step_fn).parameters)
        if inspect.ismethod(step_fn):
            args = ("self",) + args
        if args != ("step_context",) and args != ("self", "step_context"):
            raise ValueError("`step_fn` may either have one `step_context` argument, or `self` and `step_context` "
                             "arguments if it's an instance method. Got {} instead.".format(args))
        return step_fn(_StepContext(self))

    def should_stop(self):
        return self._stop or self._closed or self._coord.should_stop()

    def close(self):
        self._close(None)

    def _close(self, exception_type):
        if self._closed:
            raise RuntimeError("Session is already closed.")
        try:
            if exception_type is None:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            try:
                self._coord.request_stop()
                self._coord.join(self._threads, stop_grace_period_secs=self._grace)
            finally:
                self._closed = True
                # As TF: the graph can take new ops again once its session is
                # closed (unless it was finalized before the session).
                if not self._was_finalized:
                    self._sess.graph._finalized = False
                self._sess.close()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close(exception_type)
        return exception_type is None


class MonitoredSession(_MonitoredSession):
    """A session that runs hooks around each run (tf.train.MonitoredSession)."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """MonitoredSession for one process, made from a scaffold and a checkpoint directory."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self):
        return self._sess


_USE_DEFAULT = object()


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None, hooks=None,  # noqa: N802
                             chief_only_hooks=None, save_checkpoint_secs=_USE_DEFAULT,
                             save_summaries_steps=_USE_DEFAULT, save_summaries_secs=_USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100, max_wait_secs=7200,
                             save_checkpoint_steps=_USE_DEFAULT, summary_dir=None):
    """TF1's MonitoredTrainingSession for one process (the chief): the caller's
    hooks, and as TF's defaults a StepCounterHook (every log_step_count_steps),
    a SummarySaverHook (every 100 steps) and a CheckpointSaverHook (every 600
    seconds) writing into summary_dir (else checkpoint_dir)."""
    if not is_chief:
        raise NotImplementedError("towerflow's MonitoredTrainingSession runs as the chief only (is_chief=True)")
    if master:
        raise NotImplementedError("towerflow's MonitoredTrainingSession has no master: it runs in this process")
    if save_summaries_steps is _USE_DEFAULT and save_summaries_secs is _USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is _USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is _USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is _USE_DEFAULT and save_checkpoint_secs is _USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is _USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is _USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    summary_dir = summary_dir or checkpoint_dir
    all_hooks = list(chief_only_hooks or [])
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir:
        if (save_checkpoint_secs and save_checkpoint_secs > 0) or (save_checkpoint_steps and save_checkpoint_steps > 0):
            all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                                 save_secs=save_checkpoint_secs, scaffold=scaffold))
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config)
    # TF's order: the chief's hooks, the defaults, then the caller's.
    return MonitoredSession(session_creator=creator, hooks=all_hooks + list(hooks or []),
                            stop_grace_period_secs=stop_grace_period_secs)
