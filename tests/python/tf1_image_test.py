"""TF1's tf.image (and tf.random_crop, tf.reverse): towerflow.compat.v1
against TensorFlow's own, in the harness of tf1_surface_test.py (each snippet
runs under both engines and the JSON objects they print must be equal):
decoded pixels of JPEG and PNG files (TF's encoder wrote the files below;
the pixels must be TF's, byte for byte), the bytes of encoded images,
resizes of every mapping and their gradients, flips, crops, pads, dtype
conversions and the photometric adjustments, static shapes and errors; the
random ones by what every draw must satisfy.

Run: python -m unittest -v tests/python/tf1_image_test.py (or directly).
"""

import unittest

import tf1_surface_test as surface

# Written by TensorFlow's tf.io.encode_jpeg / encode_png from one 20 x 24
# picture: baseline JPEG (quality 90, 4:2:0), progressive JPEG (quality 75),
# gray JPEG, RGBA PNG. Base64.
JPEG = (
    "/9j/4AAQSkZJRgABAQEBLAEsAAD/2wBDAAMCAgMCAgMDAwMEAwMEBQgFBQQEBQoHBwYIDAoMDAsKCwsNDhIQDQ4RDgsLEBYQERMU"
    "FRUVDA8XGBYUGBIUFRT/2wBDAQMEBAUEBQkFBQkUDQsNFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU"
    "FBQUFBQUFBT/wAARCAAUABgDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
    "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
    "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
    "4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAEC"
    "AxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVm"
    "Z2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq"
    "8vP09fb3+Pn6/9oADAMBAAIRAxEAPwD4G8F+Hy4jwMLjAyM1734M8NlxHhM5HVh/nNcb4E8P7/KwvBx0r6J8FeHhBEjyjYi4yx/z"
    "zXh08vhmMHOdrLVt7JdWz6Hifhd0+a0ToPBfg1WZPkOcgYxnv60V6R4QsJrwx+QhgiPynjlvf2/CivzjFrKnVaw+HlVS+0kkn6X1"
    "+9L9T+cMdwrJV3zRSPkj4c2kRjjbbyvSvfNGgRpLWM52BQ+M9Sf8/qaKK+9xbf8Aq7U83D/0pH+ivE0I8706P8j3rwfZw22nGVEG"
    "8BME84yQKKKK/EuMsfi8DWw8MJWlTThdqMnFN3eujR/PmIoUZ1pOUE/kj//Z")
PROGRESSIVE = (
    "/9j/4AAQSkZJRgABAQEBLAEsAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx"
    "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
    "MjIyMjIyMjL/wgARCAAUABgDASIAAhEBAxEB/8QAGAABAQEBAQAAAAAAAAAAAAAAAAUEBgP/xAAXAQADAQAAAAAAAAAAAAAAAAAD"
    "BAUG/9oADAMBAAIQAxAAAAHkK+ayIvu2k4/O1xrX1xNk/wD/xAAZEAADAQEBAAAAAAAAAAAAAAAAAgMBESH/2gAIAQEAAQUCmpNC"
    "cySk1J50lgpPPP/EABkRAAIDAQAAAAAAAAAAAAAAAAAEAQIRIf/aAAgBAwEBPwFhYut0YLRGn//EABwRAAICAgMAAAAAAAAAAAAA"
    "AAECABEEEhMhM//aAAgBAgEBPwEJvG476FxvAzLdlI1M/8QAFhAAAwAAAAAAAAAAAAAAAAAAARAg/9oACAEBAAY/ArC//8QAGRAA"
    "AwEBAQAAAAAAAAAAAAAAAAEhMREQ/9oACAEBAAE/IcTDwxOaozEQqCVBC7P/2gAMAwEAAgADAAAAENwwgv/EABgRAQEBAQEAAAAA"
    "AAAAAAAAAAEAESEx/9oACAEDAQE/EMt5L7Imynpf/8QAGhEBAAIDAQAAAAAAAAAAAAAAAQARMUGxYf/aAAgBAgEBPxARbiHN+pyd"
    "g+gVprc//8QAHBAAAwEAAgMAAAAAAAAAAAAAAAERITFBYXGR/9oACAEBAAE/EL+BZY+i21hXCEoeEuyNPR7JGnAh9CUgy1Q//9k=")
GRAY = (
    "/9j/4AAQSkZJRgABAQEBLAEsAAD/2wBDAAUDBAQEAwUEBAQFBQUGBwwIBwcHBw8LCwkMEQ8SEhEPERETFhwXExQaFRERGCEYGh0d"
    "Hx8fExciJCIeJBweHx7/wAALCAAUABgBAREA/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
    "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
    "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
    "4+Tl5ufo6erx8vP09fb3+Pn6/9oACAEBAAA/APAf+EQYgbVKIVKjeucZA4+p5608+FmKLshDEjguMn0/E8A/0NM/4Q6PzSDG+7cB"
    "jGccjqe+c19BP4PGV2RAKxzxye/cfXH+NI/hKRFRGibHC5Byec9u/wBKYPCAdfMEWAWCsAvHHfAPI/pXtMOn2n2cyCIBoyQMH6//"
    "AFvyp09hb/Z/MwxOR1OeqqT/ADNSppdk0RLQ5yE6k+mK/9k=")
PNG_RGBA = (
    "iVBORw0KGgoAAAANSUhEUgAAABgAAAAUCAYAAACXtf2DAAAEhElEQVQ4jS2QyY5b2RFET+bNO76RZA3q0ZLR6P+we1jYn+LPNiBA"
    "pVINYpF8fGMvWssInEWckA7+d8pMt5myZLYvmXOfSZbRl8xwm6mWzHrKTDljr5nrLpNOmWnOrH0mPWUuW2bbMqyZrc6ES2byGWcT"
    "rDskJcQcoiOyFMRnxG8IR+R6QMq3vCXEJmS9RypF5P/IV0P0DqlekcEjbkDmiFhBvB0gt0h8RM+g1GgoqF/QbUM3jzpFJaAuou4Z"
    "He7QCpTP6OkD2h/RcUIXQ3VG1w9o/4CeejTZT9BNyBJRu8WVZ9ww4pYVt9W48A5Xg+Mj7hhx+Ttc/Ql36nDRcNriYo0Lj7hzwfkb"
    "XHnDjR7nAs4ZgEfcP9BOcTJgc8Ksw9IJGzeMGVt/xQ5P2GXA5g6LDtMaCwu2gfEB2w3YLBi3WJUwq7FgEywNEt/QMeJch6U9PoMn"
    "4N0JP2a8GV5rfPDfuhm//oLfP+MH8Cz49YDPn/Fnw6vgxfBqDcQOiQF1HS4+YmfBcyUsnqBG0I1AJNhMWCHwntAvhO0j4fgjoR0J"
    "yyPhfCUs6RsXCK4nJGshOkT3aF5w63us/4Q/FYKPRAeRQvRKlJpYn4nTmThtRH4lHkbishDXhhiMqLfEshK3Z+JQiN5qCAuyCsqG"
    "w2PO4/WGUCBiJN2R8kxaJ9JSkTwklCRH0giJRLKNhCNJIpknuZW0nUiTNRBmZO3RdMHNBfOKlxNhXIlbTQpP5MstuWSyPZBPNTlc"
    "ycuenCPZHcljIfuZvG5kXsiDI+uOf0XbQ35GBkFFcFywKeJdR2j+viNN78i1UgQK/6TsBsq8ULYj5VpRfEeJG4UnyqXh3+F7SvNC"
    "GQr33hqILRIFlUfcucPiA/50JSzviPWRNEaycxR9oxobqjhQzQ1VqKj8K9V1T5VPVOMdv1XGjb5QDTVVWKhWW2EriH9AT3tcnrCl"
    "xceekCbiGklOybJSNqg4U0+R2lbq7Z66DtRuz+85U1vNIbxSX2+oS6H2M/VqDuSbARUuDNi84reVsBlRI8kFsjtTpr9X1+Ezzclo"
    "dKPZMn/4L+wuQsNAM9/TVJ9oTjPNek9T2c/QnZHpHVq/4q6G6YbfhCBGVCGRyX5HyR+pji11XGjWM+0k/Ck39OUL7bmljZHWlFZ+"
    "oG2+0F6utIsdYUyIGao9Ll2wKeCdECQQ3UJaF/IWKe49VT9Tr0ajPX+mni490V1auih0sqNLR7pxpuNnum6gm62AL4gf0DninGDi"
    "8a4QvBLFk3Qlb1CYqdYr9RL4w7X08RPdW0Mfb+nLI/35Sr/s6NML/aD0ovSiCUwQvkebFhfvsCri3YUwCREhyTN5+Eq5JiqD3+lp"
    "0hPt5Tu6xtGLshPHXjMHU26k5TbCHTX3wW6hrMi2Q9MD7rTD0lf89Y5QrcTtjTS+J/cXyuSpXKSeI42raP1Kt/1E303slj37nNhb"
    "Zm+w58x+yvzHm4FekeWETj0uVVgQvHiCvhKvgeR6cnqjjPf8ljMHG2mWQuuNTif6Zccuj+yXK4e5cPADh9n4ryr38hdDlXsHfLrm"
    "eQAAAABJRU5ErkJggg==")

FILES = "            FILES = {%r: %r, %r: %r, %r: %r, %r: %r}\n" % ("jpeg", JPEG, "progressive", PROGRESSIVE, "gray", GRAY,
                                                        "png", PNG_RGBA)


class TF1ImageTest(surface.BothEngines, unittest.TestCase):
    """Each test: one snippet, run under towerflow and under TensorFlow."""

    def test_decode_as_tensorflow_does(self):
        self.compare(FILES + '''
            import base64, hashlib
            r = {}
            data = {k: base64.b64decode(v) for k, v in FILES.items()}
            p = tf.placeholder(tf.string, [])
            ts = {"jpeg": tf.image.decode_jpeg(p), "jpeg_gray": tf.image.decode_jpeg(p, channels=1),
                  "jpeg_accurate": tf.image.decode_jpeg(p, dct_method="INTEGER_ACCURATE"),
                  "jpeg_half": tf.image.decode_jpeg(p, ratio=2), "jpeg_plain": tf.image.decode_jpeg(
                      p, fancy_upscaling=False), "jpeg_rgb": tf.io.decode_jpeg(p, channels=3),
                  "png": tf.image.decode_png(p), "png_rgb": tf.image.decode_png(p, channels=3),
                  "png_gray": tf.image.decode_png(p, channels=1),
                  "image": tf.image.decode_image(p), "image_float": tf.image.decode_image(p, dtype=tf.float32)}
            # decode_image: TF's static rank is unknown (it may decode a GIF), towerflow's 3.
            r["sigs"] = {k: [shape(t), t.dtype.name] for k, t in ts.items() if not k.startswith("image")}
            # Each decoder also takes the other format (jpeg of a PNG, png of a JPEG), as TF's.
            uses = {"jpeg": ["jpeg", "progressive", "gray", "png"], "jpeg_gray": ["jpeg", "progressive"],
                    "jpeg_accurate": ["jpeg", "progressive"], "jpeg_half": ["jpeg", "gray"],
                    "jpeg_plain": ["jpeg"], "jpeg_rgb": ["gray"], "png": ["png", "jpeg"], "png_rgb": ["png"],
                    "png_gray": ["png"], "image": ["jpeg", "png", "gray"],
                    "image_float": ["jpeg"]}
            with tf.Session() as sess:
                for k, files in uses.items():
                    for f in files:
                        v = sess.run(ts[k], {p: data[f]})
                        r[k + "/" + f] = [list(v.shape), str(v.dtype),
                                          hashlib.sha1(v.tobytes()).hexdigest() if v.dtype == np.uint8
                                          else np.round(v, 6).tolist()]
                cut = data["jpeg"][:len(data["jpeg"]) // 2]
                r["truncated"] = raised(lambda: sess.run(ts["jpeg"], {p: cut}))
                recover = tf.image.decode_jpeg(p, try_recover_truncated=True, acceptable_fraction=0.1)
                r["no_scan_to_recover"] = raised(lambda: sess.run(recover, {p: cut}))
                v = sess.run(recover, {p: data["jpeg"][:len(data["jpeg"]) * 4 // 5]})
                r["recovered"] = [list(v.shape), hashlib.sha1(v.tobytes()).hexdigest()]
                # Recovery from cuts all through the scans (TF hangs on some cuts of progressive files).
                cuts = {}
                for f in ("jpeg", "gray"):
                    for n in range(data[f].find(b"\\xff\\xda") + 2, len(data[f]), 17):
                        try:
                            v = sess.run(recover, {p: data[f][:n]})
                            cuts[f + str(n)] = hashlib.sha1(v.tobytes()).hexdigest()
                        except tf.errors.InvalidArgumentError:
                            cuts[f + str(n)] = "InvalidArgumentError"
                r["cuts"] = cuts
                r["empty"] = raised(lambda: sess.run(ts["image"], {p: b""}), "empty")
                r["unknown"] = raised(lambda: sess.run(ts["image"], {p: b"no image here"}), "Unknown image file format")
                r["png_corrupt"] = raised(lambda: sess.run(ts["png"], {p: data["png"][:-40]}), "PNG")
            r["bad_channels"] = raised(lambda: tf.Session().run(tf.image.decode_jpeg(p, channels=4), {p: data["jpeg"]}))
            r["two_channels"] = raised(lambda: tf.Session().run(tf.image.decode_png(p, channels=2), {p: data["png"]}))
            emit(r)
        ''')

    def test_encode_as_tensorflow_does(self):
        self.compare(FILES + '''
            import base64, hashlib
            r = {}
            rng = np.random.RandomState(3)
            y, x = np.mgrid[0:13, 0:17]
            pic = np.stack([y * 15, x * 12, (x + y) * 7], -1).astype(np.uint8)
            img = tf.constant(pic)
            gray = tf.constant(pic[:, :, :1])
            rgba = tf.constant(np.concatenate([pic, rng.randint(0, 255, (13, 17, 1)).astype(np.uint8)], -1))
            ts = [tf.image.encode_jpeg(img), tf.image.encode_jpeg(img, quality=50), tf.image.encode_jpeg(gray),
                  tf.image.encode_jpeg(img, progressive=True), tf.image.encode_jpeg(img, chroma_downsampling=False),
                  tf.image.encode_jpeg(img, optimize_size=True, density_unit="cm", x_density=72, y_density=96),
                  tf.image.encode_png(img), tf.image.encode_png(gray), tf.image.encode_png(rgba),
                  tf.image.encode_png(rgba, compression=9), tf.io.encode_png(img, compression=0)]
            r["sigs"] = [[shape(t), t.dtype.name] for t in ts]
            with tf.Session() as sess:
                out = sess.run(ts)
                r["sha1"] = [hashlib.sha1(b).hexdigest() for b in out]
                back = sess.run([tf.image.decode_png(out[8]), tf.image.decode_jpeg(out[0])])
                r["png_round_trip"] = bool((back[0] == sess.run(rgba)).all())
                r["jpeg_mean_error"] = round(float(np.abs(back[1].astype(int) - pic).mean()), 3)
                r["bad_channels"] = raised(lambda: sess.run(tf.image.encode_jpeg(rgba)))
            r["bad_quality"] = raised(lambda: tf.Session().run(tf.image.encode_jpeg(img, quality=101)))
            emit(r)
        ''')

    def test_resize_every_mapping_and_its_gradient(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(5)
            x = tf.constant(rng.rand(2, 5, 7, 3).astype(np.float32))
            x3 = tf.constant(rng.rand(6, 4, 2).astype(np.float32))
            u8 = tf.constant(rng.randint(0, 256, (1, 4, 6, 3)).astype(np.uint8))
            p = tf.placeholder(tf.float32, [None, None, None, 3])
            ts = [tf.image.resize_images(x, [9, 11]), tf.image.resize_images(x, [3, 4]),
                  tf.image.resize_images(x, [9, 11], align_corners=True),
                  tf.image.resize_images(x, [9, 4], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR),
                  tf.image.resize_images(x, [3, 13], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR,
                                         align_corners=True),
                  tf.image.resize_bilinear(x, [8, 3], half_pixel_centers=True),
                  tf.image.resize_nearest_neighbor(x, [8, 3], half_pixel_centers=True),
                  tf.image.resize_images(x3, [3, 9]), tf.image.resize_images(u8, [7, 5]),
                  tf.image.resize_images(u8, [2, 3], method=1), tf.image.resize_images(x, [5, 7]),
                  tf.image.resize_images(p, [4, 4]), tf.image.resize_images(x, tf.constant([4, 6])),
                  tf.image.resize_images(x, [4, 4], preserve_aspect_ratio=True),
                  tf.image.resize(x3, [2, 2], method="nearest")]
            r["sigs"] = [[shape(t), t.dtype.name] for t in ts]
            r["same_size_is_the_input"] = ts[10] is x or ts[10].op.type == "Const"
            w = tf.constant(rng.randn(2, 9, 11, 3).astype(np.float32))
            loss = (tf.reduce_sum(ts[0] * w) + tf.reduce_sum(ts[2] * w) + tf.reduce_sum(ts[1] ** 2)
                    + tf.reduce_sum(ts[3] * ts[3]) + tf.reduce_sum(ts[5]) + tf.reduce_sum(ts[6] * 3.0))
            g = tf.gradients(loss, x)[0]
            with tf.Session() as sess:
                vals = sess.run(ts[:11] + ts[12:], {p: rng.rand(1, 3, 5, 3)})
                r["values"] = [np.round(v.astype(np.float64), 5).tolist() for v in vals]
                r["grad"] = np.round(sess.run(g), 4).tolist()
                r["fed"] = np.round(sess.run(ts[11], {p: np.arange(45, dtype=np.float32).reshape(1, 3, 5, 3)}),
                                    4).tolist()
                r["bad_size"] = raised(lambda: sess.run(tf.image.resize_bilinear(x, tf.constant([0, 3]))))
            r["no_shape"] = raised(lambda: tf.image.resize_images(tf.placeholder(tf.float32), [2, 2]))
            r["rank_2"] = raised(lambda: tf.image.resize_images(tf.zeros([3, 3]), [2, 2]))
            r["both_attrs"] = raised(lambda: tf.image.resize_bilinear(x, [2, 2], align_corners=True,
                                                                     half_pixel_centers=True))
            emit(r)
        ''')

    def test_flips_crops_and_pads(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(6)
            img = tf.constant(rng.randint(0, 256, (5, 6, 3)).astype(np.uint8))
            batch = tf.constant(rng.rand(2, 4, 7, 1).astype(np.float32))
            dyn = tf.placeholder(tf.float32, [None, None, 3])
            ts = [tf.image.flip_left_right(img), tf.image.flip_up_down(img), tf.image.flip_left_right(batch),
                  tf.image.flip_up_down(batch), tf.image.transpose_image(img), tf.image.transpose_image(batch),
                  tf.image.rot90(img), tf.image.rot90(img, 2), tf.image.rot90(batch, k=3), tf.image.rot90(img, 4),
                  tf.reverse(img, [0, 2]), tf.reverse_v2(batch, axis=[-1, 1]),
                  tf.image.crop_to_bounding_box(img, 1, 2, 3, 4), tf.image.crop_to_bounding_box(batch, 0, 3, 4, 2),
                  tf.image.pad_to_bounding_box(img, 2, 1, 8, 9), tf.image.pad_to_bounding_box(batch, 0, 0, 5, 7),
                  tf.image.resize_image_with_crop_or_pad(img, 3, 10), tf.image.resize_image_with_crop_or_pad(
                      img, 8, 3), tf.image.resize_image_with_crop_or_pad(batch, 7, 4),
                  tf.image.central_crop(img, 0.5), tf.image.central_crop(batch, 0.33),
                  tf.image.central_crop(img, 1.0), tf.image.resize_image_with_crop_or_pad(dyn, 4, 4),
                  tf.image.central_crop(dyn, 0.6)]
            # rot90 (6 to 9): TF's static shapes are unknown (it picks the turn with a cond), towerflow's known.
            r["sigs"] = [[shape(t), t.dtype.name] for i, t in enumerate(ts) if not 6 <= i <= 9]
            grads = tf.gradients(tf.reduce_sum(ts[11] * tf.constant(rng.randn(2, 4, 7, 1).astype(np.float32))),
                                 batch)
            with tf.Session() as sess:
                feed = {dyn: rng.rand(7, 2, 3)}
                r["values"] = [np.round(v.astype(np.float64), 5).tolist() for v in sess.run(ts, feed)]
                r["grad"] = np.round(sess.run(grads[0]), 5).tolist()
                r["dyn_small"] = list(sess.run(ts[22], {dyn: rng.rand(1, 9, 3)}).shape)
            r["negative_offset"] = raised(lambda: tf.image.crop_to_bounding_box(img, -1, 0, 2, 2))
            r["too_wide"] = raised(lambda: tf.image.crop_to_bounding_box(img, 0, 3, 2, 4))
            r["pad_too_small"] = raised(lambda: tf.image.pad_to_bounding_box(img, 0, 0, 4, 6))
            r["fraction"] = raised(lambda: tf.image.central_crop(img, 0.0))
            r["rank_2"] = raised(lambda: tf.image.flip_left_right(tf.zeros([3, 3])))
            emit(r)
        ''')

    def test_dtypes_and_photometric_adjustments(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(8)
            u8 = tf.constant(rng.randint(0, 256, (2, 4, 5, 3)).astype(np.uint8))
            f = tf.constant(rng.rand(4, 5, 3).astype(np.float32))
            i32 = tf.constant(rng.randint(0, 2**31 - 1, (3, 2)).astype(np.int32))
            flat = tf.constant(np.full((3, 3, 1), 0.25, np.float32))
            ts = [tf.image.convert_image_dtype(u8, tf.float32), tf.image.convert_image_dtype(f, tf.uint8),
                  tf.image.convert_image_dtype(f * 2.0 - 0.5, tf.uint8, saturate=True),
                  tf.image.convert_image_dtype(i32, tf.uint8), tf.image.convert_image_dtype(u8, tf.int32),
                  tf.image.convert_image_dtype(f, tf.float64), tf.image.convert_image_dtype(u8, tf.uint8),
                  tf.image.adjust_brightness(u8, 0.2), tf.image.adjust_brightness(f, -0.3),
                  tf.image.adjust_contrast(u8, 1.7), tf.image.adjust_contrast(f, 0.4),
                  tf.image.per_image_standardization(u8), tf.image.per_image_standardization(f),
                  tf.image.per_image_standardization(flat), tf.image.rgb_to_grayscale(f),
                  tf.image.rgb_to_grayscale(u8), tf.image.grayscale_to_rgb(flat)]
            r["sigs"] = [[shape(t), t.dtype.name] for t in ts]
            # Ops named by their name scope's full name (TF's name=scope idiom).
            with tf.name_scope("outer"):
                r["names"] = [tf.image.per_image_standardization(f).name,
                              tf.image.adjust_contrast(f, 0.5).op.inputs[0].name]
            r["names"] += [o.name for o in tf.get_default_graph().get_operations() if o.type == "AdjustContrastv2"]
            with tf.Session() as sess:
                vals = sess.run(ts)
            # Integer results may land one step apart where TF's float rounding differs in the last bit.
            r["values"] = [np.round(v.astype(np.float64), 4).tolist() if v.dtype.kind == "f"
                           else (v.astype(np.int64) // 2).tolist() for v in vals]
            r["bad_dtype"] = raised(lambda: tf.image.convert_image_dtype(f, tf.bool))
            r["negative_delta"] = raised(lambda: tf.image.random_brightness(f, -0.1))
            r["bad_bounds"] = raised(lambda: tf.image.random_contrast(f, 0.5, 0.2))
            emit(r)
        ''')

    def test_random_ops_draw_within_their_bounds(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(9)
            pic = rng.rand(6, 8, 3).astype(np.float32)
            img = tf.constant(pic)
            batch = tf.constant(np.stack([pic, pic[::-1]]))
            ts = [tf.image.random_flip_left_right(img), tf.image.random_flip_up_down(img),
                  tf.image.random_flip_left_right(batch, seed=3), tf.random_crop(img, [4, 5, 3]),
                  tf.image.random_crop(batch, [2, 3, 3, 3], seed=1), tf.image.random_brightness(img, 0.2),
                  tf.image.random_contrast(img, 0.5, 1.5)]
            r["sigs"] = [[shape(t), t.dtype.name] for t in ts]
            seen = {"lr": set(), "ud": set(), "batch": set(), "crop": set()}
            ok = {"lr": True, "ud": True, "batch": True, "crop": True, "crop4": True, "brightness": True,
                  "contrast": True}
            b = np.stack([pic, pic[::-1]])
            mean = pic.mean(axis=(0, 1), keepdims=True)
            with tf.Session() as sess:
                for _ in range(60):
                    lr, ud, fb, c, c4, br, co = sess.run(ts)
                    k = 1 if np.array_equal(lr, pic[:, ::-1]) else 0 if np.array_equal(lr, pic) else -1
                    ok["lr"] &= k >= 0
                    seen["lr"].add(k)
                    k = 1 if np.array_equal(ud, pic[::-1]) else 0 if np.array_equal(ud, pic) else -1
                    ok["ud"] &= k >= 0
                    seen["ud"].add(k)
                    for i in range(2):
                        k = 1 if np.array_equal(fb[i], b[i][:, ::-1]) else 0 if np.array_equal(fb[i], b[i]) else -1
                        ok["batch"] &= k >= 0
                        seen["batch"].add(k)
                    hits = [(y, x) for y in range(3) for x in range(4) if np.array_equal(c, pic[y:y + 4, x:x + 5])]
                    ok["crop"] &= len(hits) == 1
                    seen["crop"].update(hits)
                    ok["crop4"] &= any(np.array_equal(c4, b[:, y:y + 3, x:x + 3]) for y in range(4) for x in range(6))
                    d = br - pic
                    ok["brightness"] &= bool(np.allclose(d, d.flat[0], atol=1e-5) and abs(d.flat[0]) <= 0.2 + 1e-6)
                    fac = (co - mean) / (pic - mean)
                    ok["contrast"] &= bool(np.allclose(fac, np.median(fac), rtol=1e-3, atol=1e-3)
                                           and 0.5 - 1e-4 <= np.median(fac) <= 1.5 + 1e-4)
            r["ok"] = ok
            r["both_ways"] = {k: sorted(v) for k, v in seen.items() if k != "crop"}
            r["many_crops"] = len(seen["crop"]) >= 6
            r["too_big"] = raised(lambda: tf.Session().run(tf.random_crop(img, [7, 5, 3])))
            emit(r)
        ''')


if __name__ == "__main__":
    unittest.main()
