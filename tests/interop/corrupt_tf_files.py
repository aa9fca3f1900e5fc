"""A TFRecord file TensorFlow wrote, then damaged, is DataLoss for towerflow,
naming the file and the byte offset of the bad record; TensorFlow itself
agrees that the file is damaged (tf.errors.DataLossError).

Damage: a data byte, a length byte, a data CRC byte, a length CRC byte, a cut
inside a record, a cut inside a record's header (which TF 2.x itself reads as a
clean end; see the test); and a GZIP file cut short.
Checked through `towerflow records verify` and `count` (exit status 1, one
stderr line "<file>: DataLoss: ... at <offset> ...") and through the graph ops
(tfrecord_interop_tool read fails with DataLoss).
"""
import unittest

import tensorflow as tf

from interop_common import (TOWERFLOW, TempDirTest, make_tf_example, read_bytes, record_offsets, run,
                            tool_read_args)

N = 6


class CorruptTfFiles(TempDirTest):
    def write(self, name, options=None):
        path = self.path(name)
        with tf.io.TFRecordWriter(path, options=options) as writer:
            for i in range(N):
                writer.write(make_tf_example(tf, i)[0].SerializeToString())
        return path

    def damaged(self, name, edit):
        """A copy of a fresh plain TF file changed by edit(bytearray, offsets)."""
        path = self.write(name)
        offsets, _ = record_offsets(path)
        data = bytearray(read_bytes(path))
        data = edit(data, offsets)
        with open(path, "wb") as f:
            f.write(bytes(data))
        return path, offsets

    def assertTfSaysDataLoss(self, path, compression=""):
        with self.assertRaises(tf.errors.DataLossError):
            for _ in tf.data.TFRecordDataset(path, compression_type=compression):
                pass

    def assertTowerflowSaysDataLoss(self, path, message, compression="none"):
        for command in ("verify", "count"):
            proc = run([TOWERFLOW, "records", command, path], check=False)
            self.assertEqual(proc.returncode, 1, "%s: %s %s" % (command, proc.stdout, proc.stderr))
            lines = proc.stderr.splitlines()
            self.assertEqual(len(lines), 1, proc.stderr)
            self.assertTrue(lines[0].startswith(path + ": DataLoss: "), lines[0])
            self.assertIn(message, lines[0])
        # The parse ops stop with the same error (one example at a time, and batched).
        for batch in (0, 4):
            proc = run(tool_read_args(compression, batch) + [path], check=False)
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn("DataLoss", proc.stderr)
            self.assertIn(message, proc.stderr)

    def test_data_byte(self):
        def edit(d, off):
            d[off[2] + 12 + 5] ^= 0x40
            return d
        path, off = self.damaged("data.tfrecord", edit)
        self.assertTfSaysDataLoss(path)
        self.assertTowerflowSaysDataLoss(path, "corrupted record at %d" % off[2])

    def test_data_crc_byte(self):
        def edit(d, off):
            d[off[2] - 1] ^= 0x01  # the last byte of record 1's data CRC
            return d
        path, off = self.damaged("crc.tfrecord", edit)
        self.assertTfSaysDataLoss(path)
        self.assertTowerflowSaysDataLoss(path, "corrupted record at %d" % off[1])

    def test_length_byte(self):
        def edit(d, off):
            d[off[3]] ^= 0x02
            return d
        path, off = self.damaged("length.tfrecord", edit)
        self.assertTfSaysDataLoss(path)
        self.assertTowerflowSaysDataLoss(path, "corrupted record at %d" % off[3])

    def test_length_crc_byte(self):
        def edit(d, off):
            d[off[4] + 9] ^= 0x80
            return d
        path, off = self.damaged("lencrc.tfrecord", edit)
        self.assertTfSaysDataLoss(path)
        self.assertTowerflowSaysDataLoss(path, "corrupted record at %d" % off[4])

    def test_cut_inside_data(self):
        path, off = self.damaged("cut.tfrecord", lambda d, off: d[:off[5] + 12 + 3])
        self.assertTfSaysDataLoss(path)
        self.assertTowerflowSaysDataLoss(path, "truncated record at %d" % off[5])

    def test_cut_inside_header(self):
        path, off = self.damaged("cuthead.tfrecord", lambda d, off: d[:off[4] + 7])
        # TF 2.x's reader (tsl RecordReader::ReadRecord) passes the header's short
        # read on as OutOfRange, so tf.data ends quietly after record 3; towerflow
        # reports the cut, as TF 1.x's reader did (tf1-semantics.md 1.4).
        got = 0
        try:
            for _ in tf.data.TFRecordDataset(path):
                got += 1
        except tf.errors.DataLossError:
            pass
        self.assertEqual(got, 4)
        self.assertTowerflowSaysDataLoss(path, "truncated record at %d" % off[4])

    def test_gzip_cut_short(self):
        path = self.write("cut.tfrecord.gz", tf.io.TFRecordOptions(compression_type="GZIP"))
        data = read_bytes(path)
        with open(path, "wb") as f:
            f.write(data[:len(data) * 2 // 3])
        self.assertTfSaysDataLoss(path, "GZIP")
        self.assertTowerflowSaysDataLoss(path, "GZIP", compression="gzip")

    def test_clean_file_is_fine(self):
        """The same checks pass on an undamaged file: the failures above are the damage's."""
        path = self.write("clean.tfrecord")
        self.assertEqual(run([TOWERFLOW, "records", "count", path]).stdout, "%d\n" % N)
        self.assertEqual(len(run(tool_read_args("none") + [path]).stdout.splitlines()), N)


if __name__ == "__main__":
    unittest.main()
