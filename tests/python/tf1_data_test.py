"""Input pipelines, record files and summaries of ported TF1 scripts:
towerflow.compat.v1 against TensorFlow's own (the harness of
tf1_surface_test.py: each snippet runs under both engines and the JSON objects
they print must be equal), and, for what TensorFlow's graph mode cannot do
(iterating a dataset from Python), towerflow alone.

Run: python -m unittest -v tests/python/tf1_data_test.py (or directly).
"""

import json
import subprocess
import textwrap
import unittest

import tf1_surface_test as surface

# A snippet's helper: the tags of a serialized tensorflow.Summary (value = 1,
# tag = 1), read without either engine's protobuf classes.
TAGS = '''
def summary_tags(b):
    def varint(b, i):
        n = shift = 0
        while True:
            n |= (b[i] & 0x7F) << shift
            i += 1
            if b[i - 1] < 0x80:
                return n, i
            shift += 7
    tags, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        n, i = varint(b, i)
        value, i = b[i:i + n], i + n
        j = 0
        while j < len(value):
            k, j = varint(value, j)
            if k & 7 == 2:
                m, j = varint(value, j)
                if k >> 3 == 1:
                    tags.append(value[j:j + m].decode())
                j += m
            elif k & 7 == 5:
                j += 4
            else:
                _, j = varint(value, j)
    return tags
'''


class TF1DataTest(surface.BothEngines, unittest.TestCase):
    """Each test: one snippet, run under towerflow and under TensorFlow."""

    def test_an_element_error_is_its_elements_and_iteration_goes_on(self):
        # decode_raw of 3 bytes as int32 fails for that element only.
        self.compare('''
            r = {}
            strings = [b"abcd", b"abc", b"efgh", b"ijkl"]
            def run(ds, n=8):
                nx = ds.make_one_shot_iterator().get_next()
                out = []
                with tf.Session() as sess:
                    for _ in range(n):
                        try:
                            out.append(sess.run(nx).tolist())
                        except tf.errors.OutOfRangeError:
                            out.append("end")
                            break
                        except tf.errors.InvalidArgumentError:
                            out.append("error")
                return out
            decode = lambda s: tf.decode_raw(s, tf.int32)
            r["map"] = run(tf.data.Dataset.from_tensor_slices(strings).map(decode))
            r["parallel"] = run(tf.data.Dataset.from_tensor_slices(strings).map(decode, num_parallel_calls=2))
            r["batch"] = run(tf.data.Dataset.from_tensor_slices(strings).map(decode).batch(2))
            r["repeat"] = run(tf.data.Dataset.from_tensor_slices(strings[:2]).map(decode).repeat(2))
            r["ignored"] = run(tf.data.Dataset.from_tensor_slices(strings).map(decode)
                               .apply(tf.data.experimental.ignore_errors()))
            emit(r)
        ''')

    def test_a_map_function_captures_constants_and_graphs_do_not_mix(self):
        self.compare('''
            r = {}
            big = tf.constant(np.arange(4, dtype=np.float32))
            ds = tf.data.Dataset.range(3).map(lambda x: tf.cast(x, tf.float32) + big)
            nx = ds.make_one_shot_iterator().get_next()
            first = tf.data.Dataset.range(3).map(lambda x: big + tf.cast(x, tf.float32))
            nx_first = first.make_one_shot_iterator().get_next()
            with tf.Session() as sess:
                r["captured"] = [sess.run(nx).tolist() for _ in range(2)]
                r["captured_first"] = [sess.run(nx_first).tolist() for _ in range(2)]
            g1, g2 = tf.Graph(), tf.Graph()
            with g1.as_default():
                a = tf.constant(1.0)
            with g2.as_default():
                b = tf.constant(2.0)
            with g1.as_default():
                r["mixed"] = raised(lambda: a + b, "must be from the same graph")
            emit(r)
        ''')

    def test_one_shot_iterators_start_where_they_are_read(self):
        # A one-shot iterator over files that do not exist fails only the runs
        # that read it; an initializable one fails until its initializer runs.
        self.compare('''
            r = {}
            bad = tf.data.TFRecordDataset([os.path.join(PARAMS["tmp"], "missing.tfrecord")])
            bad_next = bad.make_one_shot_iterator().get_next()
            x = tf.constant(1.0) * 2
            init_it = tf.data.Dataset.range(3).make_initializable_iterator()
            init_next = init_it.get_next()
            with tf.Session() as sess:
                r["unrelated"] = float(sess.run(x))
                r["bad"] = raised(lambda: sess.run(bad_next))
                r["before_init"] = raised(lambda: sess.run(init_next), "not been initialized")
                sess.run(init_it.initializer)
                r["after_init"] = [int(sess.run(init_next)) for _ in range(2)]
            emit(r)
        ''')

    def test_record_files_from_python_and_the_sharded_read_idiom(self):
        self.compare('''
            r = {}
            paths = []
            for i, options in enumerate([None, tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)]):
                path = os.path.join(PARAMS["tmp"], "part-%d.tfrecord" % i)
                with tf.python_io.TFRecordWriter(path, options) as w:
                    for j in range(3):
                        w.write(("file%d-record%d" % (i, j)).encode())
                paths.append(path)
            r["plain"] = [x.decode() for x in tf.python_io.tf_record_iterator(paths[0])]
            gzip = tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)
            r["gzip"] = [x.decode() for x in tf.python_io.tf_record_iterator(paths[1], gzip)]
            # bytes names, and TFRecordDataset as interleave's function.
            ds = tf.data.TFRecordDataset([paths[0].encode()])
            nx = ds.make_one_shot_iterator().get_next()
            files = tf.data.Dataset.list_files(os.path.join(PARAMS["tmp"], "part-0.tfrecord"), shuffle=False)
            nested = files.interleave(tf.data.TFRecordDataset, cycle_length=1).make_one_shot_iterator().get_next()
            with tf.Session() as sess:
                r["bytes_names"] = [sess.run(nx).decode() for _ in range(3)]
                r["interleaved"] = [sess.run(nested).decode() for _ in range(3)]
            emit(r)
        ''')

    def test_slices_of_python_values_take_tfs_dtypes(self):
        self.compare('''
            r = {}
            ds = tf.data.Dataset.from_tensor_slices(([[1.0, 2.0], [3.0, 4.0]], [0, 1]))
            r["types"] = [t.name for t in ds.output_types]
            x, y = ds.batch(2).make_one_shot_iterator().get_next()
            product = tf.matmul(x, tf.constant(np.ones([2, 1], np.float32)))
            with tf.Session() as sess:
                p, labels = sess.run([product, y])
            r["product"] = p.tolist()
            r["labels"] = [labels.dtype.name, labels.tolist()]
            emit(r)
        ''')

    def test_the_graph_seed_fixes_a_shuffle_without_its_own(self):
        self.compare('''
            r = {}
            def order():
                g = tf.Graph()
                with g.as_default():
                    tf.set_random_seed(1234)
                    nx = tf.data.Dataset.range(20).shuffle(20).make_one_shot_iterator().get_next()
                    with tf.Session() as sess:
                        return [int(sess.run(nx)) for _ in range(20)]
            first, second = order(), order()
            r["same"] = first == second
            r["all"] = sorted(first) == list(range(20))
            emit(r)
        ''')

    def test_summary_tags_are_cleaned_and_made_unique(self):
        self.compare(TAGS + textwrap.dedent('''
            r = {}
            a = tf.summary.scalar("loss", tf.constant(1.0))
            b = tf.summary.scalar("loss", tf.constant(2.0))
            c = tf.summary.scalar("my loss", tf.constant(3.0))
            with tf.name_scope("eval"):
                d = tf.summary.scalar("loss", tf.constant(4.0))
            merged = tf.summary.merge_all()
            with tf.Session() as sess:
                r["tags"] = summary_tags(sess.run(merged))
            emit(r)
        '''))

    def test_run_options_for_a_trace_are_accepted(self):
        self.compare('''
            r = {}
            x = tf.constant(3.0) * 2
            options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, report_tensor_allocations_upon_oom=True)
            with tf.Session() as sess:
                r["value"] = float(sess.run(x, options=options, run_metadata=tf.RunMetadata()))
            emit(r)
        ''')

    def test_two_writers_of_one_logdir_both_write(self):
        self.compare('''
            r = {}
            logdir = os.path.join(PARAMS["tmp"], "logs")
            w1 = tf.summary.FileWriter(logdir)
            w2 = tf.summary.FileWriter(logdir)
            w1.close()
            w2.close()
            r["closed"] = True
            emit(r)
        ''')


def _towerflow(code, timeout=120):
    """Runs `code` under towerflow alone; returns its last stdout line as JSON."""
    source = surface.PRELUDES["towerflow"] + surface.COMMON + textwrap.dedent(code)
    p = subprocess.run([surface.PYTHON, "-c", source], capture_output=True, text=True, timeout=timeout)
    return p, (json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 and p.stdout.strip() else None)


class PythonIterationTest(unittest.TestCase):
    """Datasets iterated from Python (TF2's eager idiom, which TensorFlow's
    graph mode does not run): towerflow alone, each in a process of its own
    with a timeout, since the defects these guard against were hangs."""

    def test_leaving_a_loop_early_saving_and_exiting_do_not_hang(self):
        # The pipeline runs a Python flat_map function on its threads: the
        # iterator is destroyed, saved and closed at exit without the GIL.
        p, r = _towerflow('''
            ds = tf.data.Dataset.range(100000).flat_map(lambda x: tf.data.Dataset.from_tensors(x)).prefetch(16)
            def first():
                for x in ds:
                    return int(x)
            firsts = [first() for _ in range(20)]
            it = iter(ds)
            a, b = int(next(it)), int(next(it))
            state = it.save()
            c = int(next(it))
            it.restore(state)
            again = int(next(it))
            # A flat_map over a pipeline that already runs Python on its threads.
            nested = ds.flat_map(lambda x: tf.data.Dataset.from_tensors(x * 2))
            left_open = iter(nested)
            emit({"firsts": sorted(set(firsts)), "read": [a, b, c], "again": again, "nested": int(next(left_open))})
        ''')
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.assertEqual(r, {"firsts": [0], "read": [0, 1, 2], "again": 2, "nested": 0})
        self.assertNotIn("leaked", p.stderr)

    def test_ignore_errors_and_an_error_that_the_loop_steps_over(self):
        p, r = _towerflow('''
            ds = tf.data.Dataset.from_tensor_slices([b"abcd", b"abc", b"efgh"]).map(lambda s: tf.decode_raw(s, tf.int32))
            out = []
            it = iter(ds)
            while True:
                try:
                    out.append(next(it).tolist())
                except StopIteration:
                    break
                except tf.errors.InvalidArgumentError:
                    out.append("error")
            emit({"stepped": out, "ignored": [x.tolist() for x in ds.ignore_errors()]})
        ''')
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.assertEqual(r, {"stepped": [[1684234849], "error", [1751606885]],
                             "ignored": [[1684234849], [1751606885]]})

    def test_a_position_holding_a_failed_element_is_saved_and_restored(self):
        # A parallel map and a prefetch hold an element's error in their
        # buffer: the position is saved with it, and a restore gives it back
        # in its place.
        p, r = _towerflow('''
            strings = [b"abcd", b"efgh", b"abc", b"ijkl", b"mnop", b"qrst"]
            ds = (tf.data.Dataset.from_tensor_slices(strings).map(lambda s: tf.decode_raw(s, tf.int32),
                                                                  num_parallel_calls=2).prefetch(4))
            def drain(it):
                out = []
                while True:
                    try:
                        out.append(next(it).tolist())
                    except StopIteration:
                        return out
                    except tf.errors.InvalidArgumentError:
                        out.append("error")
            import time
            it = iter(ds)
            first = next(it).tolist()
            time.sleep(0.3)  # the buffers fill, the failed element among them
            state = it.save()
            rest = drain(it)
            it.restore(state)
            emit({"first": first, "rest": rest, "after_restore": drain(it)})
        ''')
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.assertEqual(r["rest"], r["after_restore"])
        self.assertEqual(r["rest"][1], "error")
        self.assertEqual(len(r["rest"]), 5)

    def test_a_file_writer_writes_after_max_queue_events_without_a_flush(self):
        p, r = _towerflow('''
            logdir = tempfile.mkdtemp()
            w = tf.summary.FileWriter(logdir, max_queue=2, flush_secs=3600)
            s = tf.summary.scalar("x", tf.constant(1.0))
            with tf.Session() as sess:
                v = sess.run(s)
            path = os.path.join(logdir, os.listdir(logdir)[0])
            counts = []
            for step in range(4):
                w.add_summary(v, step)
                counts.append(sum(1 for _ in tf.python_io.tf_record_iterator(path)))
            w.close()
            counts.append(sum(1 for _ in tf.python_io.tf_record_iterator(path)))
            emit(counts)
        ''')
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        # The file version event, then every second summary; all at close.
        self.assertEqual(r, [1, 3, 3, 5, 5])


if __name__ == "__main__":
    unittest.main()
