"""tf.train's monitored sessions and hooks (MonitoredTrainingSession,
MonitoredSession, SingularMonitoredSession, Scaffold, SessionRunHook and
the stock hooks) under towerflow and under TensorFlow, snippet by snippet:
the order of a hook's calls and what each run hands it, where a training
loop stops, the checkpoints written (their steps, the newest), a second
session resuming from the checkpoint directory, NaN losses, and an input
pipeline running out (the `with` block ends without an error). Needs the
peers' Python (tf1_surface_test.py's fixtures)."""

import textwrap
import unittest

import tf1_surface_test as surface

# Every snippet starts with this: the peers' TensorFlow writes graph.pbtxt (in
# CheckpointSaverHook) with a protobuf call its installed protobuf refuses
# (MessageToString's float_format), so the TensorFlow side skips that file.
PATCH = '''
if tf.__name__.startswith("tensorflow"):
    from tensorflow.python.training import training_util
    training_util.write_graph = lambda *a, **k: None


class Recorder(tf.train.SessionRunHook):
    """Records each call and the global step and weights each run hands back."""

    def __init__(self, step, w, stop_after=None):
        self.log, self.step, self.w, self.stop_after, self.runs = [], step, w, stop_after, 0

    def begin(self):
        self.log.append("begin")

    def after_create_session(self, session, coord):
        self.log.append(["created", int(session.run(self.step))])

    def before_run(self, run_context):
        self.log.append(["before", sorted(run_context.original_args._fields)])
        return tf.train.SessionRunArgs({"step": self.step, "w": self.w})

    def after_run(self, run_context, run_values):
        self.runs += 1
        self.log.append(["after", int(run_values.results["step"]), np.round(run_values.results["w"], 5)])
        if self.stop_after is not None and self.runs >= self.stop_after:
            run_context.request_stop()

    def end(self, session):
        self.log.append(["end", int(session.run(self.step))])


def model():
    step = tf.train.get_or_create_global_step()
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    w = tf.get_variable("w", [2, 1], initializer=tf.ones_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    tf.summary.scalar("loss", loss)
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    return step, w, loss, train


def checkpoints(d):
    state = tf.train.get_checkpoint_state(d)
    return [sorted(os.path.basename(p) for p in state.all_model_checkpoint_paths),
            os.path.basename(tf.train.latest_checkpoint(d))]
'''


class TF1MonitoredSessionTest(surface.BothEngines, unittest.TestCase):

    def compare_monitored(self, code):
        return self.compare(PATCH + textwrap.dedent(code))

    def test_hooks_checkpoints_summaries_and_stop(self):
        self.compare_monitored('''
            r = {}
            d = PARAMS["tmp"] + "/run"
            step, w, loss, train = model()
            rec = Recorder(step, w)
            hooks = [rec, tf.train.StopAtStepHook(last_step=7),
                     tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=2)]
            runs = 0
            with tf.train.MonitoredTrainingSession(checkpoint_dir=d, save_checkpoint_steps=3, save_summaries_steps=2,
                                                   hooks=hooks) as sess:
                while not sess.should_stop():
                    sess.run(train)
                    runs += 1
            r["runs"] = runs
            r["log"] = rec.log
            r["checkpoints"] = checkpoints(d)
            r["event_files"] = len([f for f in os.listdir(d) if f.startswith("events.out.tfevents")])
            emit(r)
        ''')

    def test_a_second_session_resumes_from_the_checkpoint_directory(self):
        # Each session in a graph of its own: a monitored session finalizes its graph.
        self.compare_monitored('''
            r = {}
            d = PARAMS["tmp"] + "/run"
            with tf.Graph().as_default():
                step, w, loss, train = model()
                with tf.train.MonitoredTrainingSession(checkpoint_dir=d, hooks=[tf.train.StopAtStepHook(last_step=4)],
                                                       save_summaries_steps=None, log_step_count_steps=None) as sess:
                    while not sess.should_stop():
                        sess.run(train)
            with tf.Graph().as_default():
                step, w, loss, train = model()
                rec = Recorder(step, w)
                with tf.train.MonitoredTrainingSession(checkpoint_dir=d,
                                                       hooks=[rec, tf.train.StopAtStepHook(num_steps=3)],
                                                       save_summaries_steps=None, log_step_count_steps=None) as sess:
                    while not sess.should_stop():
                        r.setdefault("losses", []).append(round(float(sess.run([train, loss])[1]), 5))
                r["log"] = rec.log
                r["finalized"] = tf.get_default_graph().finalized
            r["checkpoints"] = checkpoints(d)
            # A hook may stop the loop itself.
            with tf.Graph().as_default():
                step, w, loss, train = model()
                rec = Recorder(step, w, stop_after=2)
                with tf.train.SingularMonitoredSession(hooks=[rec], checkpoint_dir=d) as sess:
                    while not sess.should_stop():
                        sess.run(train)
                    r["raw"] = int(sess.raw_session().run(step))
                r["stopped_by_hook"] = rec.log
            emit(r)
        ''')

    def test_hook_order_periods_step_functions_and_misuse(self):
        self.compare_monitored('''
            r = {}
            d = PARAMS["tmp"] + "/run"

            class Writer:
                """A summary writer that records the steps it is given."""

                def __init__(self):
                    self.steps = []

                def add_summary(self, summary, global_step=None):
                    self.steps.append(int(global_step))

                def add_session_log(self, *args, **kwargs):
                    pass

                def add_graph(self, *args, **kwargs):
                    pass

                def flush(self):
                    pass

            class SeesTheEnd(tf.train.SessionRunHook):
                def end(self, session):
                    r["checkpoints_at_end"] = checkpoints(d)

            with tf.Graph().as_default():
                step, w, loss, train = model()
                summaries, rates = Writer(), Writer()
                logged = []
                hooks = [SeesTheEnd(),
                         tf.train.SummarySaverHook(save_steps=3, summary_writer=summaries,
                                                   summary_op=tf.summary.merge_all()),
                         tf.train.StepCounterHook(every_n_steps=3, summary_writer=rates),
                         tf.train.LoggingTensorHook([loss], every_n_iter=3,
                                                    formatter=lambda v: logged.append(round(float(v[loss]), 4))),
                         tf.train.StopAtStepHook(last_step=7)]
                with tf.train.MonitoredTrainingSession(checkpoint_dir=d, save_checkpoint_steps=3, hooks=hooks,
                                                       save_summaries_steps=None, log_step_count_steps=None) as sess:
                    while not sess.should_stop():
                        sess.run(train)
                    r["run_after_stop"] = raised(lambda: sess.run(train), "should_stop")
                # The hooks fetch global_step in the run that increments it: TF reads it
                # before or after the increment as its threads go (one run may see 1, the
                # next 3 where towerflow sees 1, 4), so the steps are compared by the
                # period of 3 they fall in.
                r["summary_steps"] = [(s + 1) // 3 for s in summaries.steps]
                r["rate_steps"] = [(s + 1) // 3 for s in rates.steps]
                r["logged"] = logged
            with tf.Graph().as_default():
                step, w, loss, train = model()
                sess = tf.train.MonitoredSession()

                def step_fn(step_context):
                    step_context.run_with_hooks(train)
                    if step_context.session.run(step) >= 2:
                        step_context.request_stop()
                    return "ran"

                r["step_fn"] = [sess.run_step_fn(step_fn), raised(lambda: sess.run_step_fn(step_fn)),
                                sess.should_stop(), raised(lambda: sess.run_step_fn(lambda x: None), "step_context")]
                sess.close()
                r["closed_twice"] = raised(sess.close, "already closed")
            emit(r)
        ''')

    def test_nan_losses(self):
        self.compare_monitored('''
            r = {}

            def run(fail):
                with tf.Graph().as_default():
                    step = tf.train.get_or_create_global_step()
                    w = tf.get_variable("w", [], initializer=tf.ones_initializer())
                    loss = tf.log(w - 2.0)
                    train = tf.assign_add(step, 1)
                    runs = 0
                    hook = tf.train.NanTensorHook(loss, fail_on_nan_loss=fail)
                    with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
                        while not sess.should_stop() and runs < 5:
                            sess.run(train)
                            runs += 1
                    return runs

            r["fails"] = raised(lambda: run(True), "NaN loss during training")
            r["stops"] = run(False)
            emit(r)
        ''')

    def test_an_input_that_runs_out_ends_the_block(self):
        self.compare_monitored('''
            r = {}
            files = tf.train.string_input_producer([PARAMS["records"]], num_epochs=2, shuffle=False)
            _, record = tf.TFRecordReader().read(files)
            label = tf.parse_single_example(record, {"label": tf.FixedLenFeature([], tf.int64)})["label"]
            got = []
            with tf.train.MonitoredSession() as sess:
                while not sess.should_stop():
                    got.append(int(sess.run(label)))
            r["items"] = got
            # The Scaffold takes its ops from the graph's collections when they are there.
            with tf.Graph().as_default():
                v = tf.get_variable("v", [], initializer=tf.zeros_initializer())
                tf.add_to_collection(tf.GraphKeys.LOCAL_INIT_OP, tf.assign(v, 11.0).op)
                with tf.train.MonitoredSession() as sess:
                    r["local_init_op"] = float(sess.run(v))
                r["collections"] = [len(tf.get_collection(k)) for k in (tf.GraphKeys.INIT_OP,
                                                                        tf.GraphKeys.LOCAL_INIT_OP,
                                                                        tf.GraphKeys.SUMMARY_OP, tf.GraphKeys.SAVERS)]
            emit(r)
        ''')


if __name__ == "__main__":
    unittest.main()
