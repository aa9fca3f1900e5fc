"""TF1's tf.image colour functions, sample_distorted_bounding_box and the
BICUBIC and AREA resizes: towerflow.compat.v1 against TensorFlow's own, in the
harness of tf1_surface_test.py (each snippet runs under both engines and the
JSON objects they print must be equal): rgb_to_hsv and hsv_to_rgb on the
pixels where their branches meet (gray, black, equal maxima), the hue and
saturation adjustments on float32, uint8 and batched images, resizes and the
bicubic gradient, static shapes, dtypes and errors; the random ones by what
every draw must satisfy.

Run: python -m unittest -v tests/python/tf1_image_color_test.py (or directly).
"""

import unittest

import tf1_surface_test as surface

# Pixels where the conversions' branches meet, in [0, 1]: gray, black, white,
# two equal maxima (each pair), two equal minima, the primaries, red largest
# with blue above green (a hue that wraps below 0), one step from gray.
SPECIAL = '''
            SPECIAL = np.array([[0.5, 0.5, 0.5], [0, 0, 0], [1, 1, 1], [0.8, 0.8, 0.2], [0.3, 0.9, 0.9],
                                [0.7, 0.1, 0.7], [0.2, 0.2, 0.9], [0.6, 0.1, 0.1], [1, 0, 0], [0, 1, 0], [0, 0, 1],
                                [0.9, 0.3, 0.5], [0.25, 0.25, 0.2500001], [1, 1, 0], [0, 1, 1], [1, 0, 1]])

            def picture(rng, h, w, dtype):
                pic = rng.rand(h, w, 3)
                pic.reshape(-1, 3)[:len(SPECIAL)] = SPECIAL
                return pic.astype(dtype)
'''


class TF1ImageColorTest(surface.BothEngines, unittest.TestCase):
    """Each test: one snippet, run under towerflow and under TensorFlow."""

    def test_hsv_conversions(self):
        self.compare(SPECIAL + '''
            r = {}
            rng = np.random.RandomState(11)
            f32 = tf.constant(picture(rng, 5, 6, np.float32))
            f64 = tf.constant(picture(rng, 4, 7, np.float64))
            # HSV values at the sector boundaries (h = k/6), wrapping (h = 1), and s or v of 0 or 1.
            hsv = rng.rand(3, 4, 5, 3)
            edges = np.array([[0, 1, 1], [1 / 6.0, 1, 1], [2 / 6.0, 0.5, 0.7], [0.5, 1, 0.3], [4 / 6.0, 0.2, 1],
                              [5 / 6.0, 1, 1], [1, 1, 1], [0.3, 0, 0.6], [0.9, 0.7, 0], [0.999, 1, 1]])
            hsv.reshape(-1, 3)[:len(edges)] = edges
            h32 = tf.constant(hsv.astype(np.float32))
            h64 = tf.constant(hsv)
            dyn = tf.placeholder(tf.float32, [None, None, None])
            ts = [tf.image.rgb_to_hsv(f32), tf.image.rgb_to_hsv(f64), tf.image.hsv_to_rgb(h32),
                  tf.image.hsv_to_rgb(h64), tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(f32)),
                  tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(f64)), tf.image.rgb_to_hsv(tf.image.hsv_to_rgb(h64)),
                  tf.image.rgb_to_hsv(tf.constant(SPECIAL.astype(np.float32))), tf.image.rgb_to_hsv([0.2, 0.4, 0.6]),
                  tf.image.rgb_to_hsv(dyn), tf.image.hsv_to_rgb(tf.placeholder(tf.float64))]
            r["sigs"] = [[shape(t), t.dtype.name] for t in ts]
            r["names"] = [ts[0].name, ts[2].name, tf.image.rgb_to_hsv(f32, name="hsv").name]
            with tf.Session() as sess:
                vals = sess.run(ts[:9])
                r["values"] = [np.round(v.astype(np.float64), 6).tolist() for v in vals]
                r["round_trips"] = [bool(np.allclose(vals[4], sess.run(f32), atol=1e-6)),
                                    bool(np.allclose(vals[5], sess.run(f64), atol=1e-12))]
                r["fed"] = np.round(sess.run(ts[9], {dyn: SPECIAL.reshape(4, 4, 3)}).astype(np.float64), 6).tolist()
            r["four_channels"] = raised(lambda: tf.image.rgb_to_hsv(tf.zeros([2, 3, 4])))
            r["four_channels_back"] = raised(lambda: tf.image.hsv_to_rgb(tf.zeros([2, 3, 4], tf.float64)))
            r["int32"] = raised(lambda: tf.image.rgb_to_hsv(tf.zeros([2, 3], tf.int32)))
            emit(r)
        ''')

    def test_adjust_hue_and_saturation(self):
        self.compare(SPECIAL + '''
            r = {}
            rng = np.random.RandomState(12)
            pic = picture(rng, 5, 6, np.float64)
            f = tf.constant(pic.astype(np.float32))
            u8 = tf.constant((pic * 255).astype(np.uint8))
            batch = tf.constant(rng.rand(2, 3, 4, 3).astype(np.float32))
            five = tf.constant(rng.rand(2, 1, 3, 2, 3).astype(np.float32))
            delta = tf.placeholder(tf.float32, [])
            ts = ([tf.image.adjust_hue(img, d) for img in (f, u8) for d in (-0.7, -0.2, 0.0, 0.3, 0.9)]
                  + [tf.image.adjust_saturation(img, s) for img in (f, u8) for s in (0.0, 0.5, 1.3, 4.0)]
                  + [tf.image.adjust_hue(batch, 0.25), tf.image.adjust_saturation(batch, 1.7),
                     tf.image.adjust_hue(five, -0.4), tf.image.adjust_saturation(five, 0.3),
                     tf.image.adjust_hue(f, delta), tf.image.adjust_saturation(u8, tf.constant(2.5))])
            r["sigs"] = [[shape(t), t.dtype.name] for t in ts]
            r["float32_is_kept"] = [ts[0].op.type, ts[10].op.type]
            with tf.Session() as sess:
                vals = sess.run(ts, {delta: 0.45})
            r["values"] = [np.round(v.astype(np.float64), 6).tolist() if v.dtype.kind == "f" else v.tolist()
                           for v in vals]
            x4 = tf.zeros([2, 3, 4])
            r["hue_four_channels"] = raised(lambda: tf.Session().run(tf.image.adjust_hue(x4, 0.1)), "3 channels")
            r["saturation_four_channels"] = raised(lambda: tf.Session().run(tf.image.adjust_saturation(x4, 0.1)),
                                                   "3 channels")
            r["hue_rank_2"] = raised(lambda: tf.image.adjust_hue(tf.zeros([4, 3]), 0.1))
            r["saturation_rank_2"] = raised(lambda: tf.image.adjust_saturation(tf.zeros([4, 3]), 0.1))
            emit(r)
        ''')

    def test_random_hue_and_saturation_draw_within_their_bounds(self):
        self.compare(SPECIAL + '''
            import colorsys
            r = {}
            rng = np.random.RandomState(13)
            pic = picture(rng, 4, 6, np.float32)
            img = tf.constant(pic)
            u8 = tf.constant((pic * 255).astype(np.uint8))
            batch = tf.constant(np.stack([pic, pic[::-1]]))
            ts = [tf.image.random_hue(img, 0.1), tf.image.random_hue(img, 0.5, seed=4),
                  tf.image.random_saturation(img, 0.5, 1.5), tf.image.random_saturation(img, 0.2, 0.9, seed=2),
                  tf.image.random_hue(u8, 0.2), tf.image.random_saturation(batch, 1.0, 3.0),
                  tf.image.random_hue(batch, 0.3)]
            r["sigs"] = [[shape(t), t.dtype.name] for t in ts]
            flat = pic.reshape(-1, 3).astype(np.float64)
            hsv = np.array([colorsys.rgb_to_hsv(*p) for p in flat])
            gray = flat.max(1) == flat.min(1)
            vivid = hsv[:, 1] > 0.2
            ok = {"hue_extremes": True, "hue_shift": True, "hue_shift_wide": True, "hue_u8": True,
                  "saturation_gray": True, "saturation_value": True, "saturation_factor": True,
                  "saturation_factor_low": True, "batch": True}
            draws = {"hue": set(), "saturation": set()}

            def hue_shift(out, bound):
                """The one shift of every vivid pixel's hue, if within bound."""
                h = np.array([colorsys.rgb_to_hsv(*p)[0] for p in out.reshape(-1, 3).astype(np.float64)])
                d = (h - hsv[:, 0] + 0.5) % 1.0 - 0.5
                one = np.allclose(d[vivid], d[vivid][0], atol=2e-4)
                return one and abs(d[vivid][0]) <= bound + 2e-4, round(float(d[vivid][0]), 3)

            def factor(out, lower, upper):
                """The one factor of the saturations left unclipped, if within [lower, upper]."""
                s = np.array([colorsys.rgb_to_hsv(*p)[1] for p in out.reshape(-1, 3).astype(np.float64)])
                keep = vivid & (hsv[:, 1] * upper < 0.999)
                k = s[keep] / hsv[keep, 1]
                return bool(np.allclose(k, k[0], rtol=1e-3) and lower - 1e-3 <= k[0] <= upper + 1e-3), round(
                    float(k[0]), 3)

            with tf.Session() as sess:
                for _ in range(40):
                    h1, h2, s1, s2, hu, sb, hb = sess.run(ts)
                    o = h1.reshape(-1, 3)
                    ok["hue_extremes"] &= bool(np.allclose(o.max(1), flat.max(1), atol=1e-5)
                                               and np.allclose(o.min(1), flat.min(1), atol=1e-5))
                    good, d = hue_shift(h1, 0.1)
                    ok["hue_shift"] &= bool(good)
                    draws["hue"].add(d)
                    ok["hue_shift_wide"] &= bool(hue_shift(h2, 0.5)[0])
                    q = hu.reshape(-1, 3).astype(int)
                    ok["hue_u8"] &= bool((np.abs(q.max(1) - (flat.max(1) * 255).astype(int)) <= 1).all())
                    o = s1.reshape(-1, 3)
                    ok["saturation_gray"] &= bool(np.allclose(o[gray], flat[gray], atol=1e-6))
                    ok["saturation_value"] &= bool(np.allclose(o.max(1), flat.max(1), atol=1e-5))
                    good, k = factor(s1, 0.5, 1.5)
                    ok["saturation_factor"] &= good
                    draws["saturation"].add(k)
                    ok["saturation_factor_low"] &= factor(s2, 0.2, 0.9)[0]
                    ok["batch"] &= bool(np.allclose(sb.max(-1), np.stack([pic, pic[::-1]]).max(-1), atol=1e-5)
                                        and np.allclose(hb.max(-1), np.stack([pic, pic[::-1]]).max(-1), atol=1e-5))
            r["ok"] = ok
            r["many_draws"] = {k: len(v) >= 20 for k, v in draws.items()}
            r["hue_too_big"] = raised(lambda: tf.image.random_hue(img, 0.6), "max_delta must be <= 0.5.")
            r["hue_negative"] = raised(lambda: tf.image.random_hue(img, -0.1), "max_delta must be non-negative.")
            r["hue_very_negative"] = raised(lambda: tf.image.random_hue(img, -0.6), "max_delta must be non-negative.")
            r["saturation_bounds"] = raised(lambda: tf.image.random_saturation(img, 0.5, 0.2), "upper must be > lower.")
            r["saturation_equal"] = raised(lambda: tf.image.random_saturation(img, 0.5, 0.5), "upper must be > lower.")
            r["saturation_negative"] = raised(lambda: tf.image.random_saturation(img, -1.0, 2.0),
                                              "lower must be non-negative.")
            r["saturation_both"] = raised(lambda: tf.image.random_saturation(img, -1.0, -2.0), "upper must be > lower.")
            emit(r)
        ''')

    def test_sample_distorted_bounding_box(self):
        self.compare('''
            r = {}
            sd = tf.image.sample_distorted_bounding_box
            box = [[[0.1, 0.2, 0.5, 0.7]]]
            two = [[[0.0, 0.0, 0.3, 0.3], [0.5, 0.6, 0.9, 1.0]]]
            covered = tf.placeholder(tf.float32, [])
            cases = {
                "defaults": ([40, 60, 3], box, dict(seed=3), 0.1, [0.05, 1.0], [0.75, 1.33]),
                "uint8": (tf.constant([30, 50, 3], tf.uint8), two, dict(
                    seed=5, seed2=7, min_object_covered=0.5, aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.6],
                    max_attempts=50), 0.5, [0.1, 0.6], [0.5, 2.0]),
                "int64": (tf.constant([25, 25, 3], tf.int64), box, dict(seed=9, min_object_covered=covered), 0.7,
                          [0.05, 1.0], [0.75, 1.33]),
                "no_boxes": ([20, 30, 3], tf.zeros([1, 0, 4]), dict(seed=1, use_image_if_no_bounding_boxes=True,
                                                                    area_range=[0.2, 0.5]), 0.0, [0.2, 0.5],
                             [0.75, 1.33]),
            }
            outs = {k: sd(c[0], c[1], **c[2]) for k, c in cases.items()}
            r["sigs"] = {k: [[shape(t), t.dtype.name] for t in o] for k, o in outs.items()}
            r["names"] = [t.name for t in outs["defaults"]] + [sd([4, 4, 3], box, name="crop")[0].name]
            r["fields"] = list(outs["defaults"]._fields)
            r["unknown"] = [[shape(t), t.dtype.name] for t in sd(tf.placeholder(tf.int32), tf.placeholder(tf.float32))]

            def check(ok, seen, b, s, bb, dims, boxes, min_cov, area_range, ar_range, dtype):
                H, W = dims
                minus_one = np.array(-1).astype(dtype)
                b, s = b.astype(np.int64), s.astype(np.int64)
                whole = b[0] == 0 and b[1] == 0 and s[0] == H and s[1] == W
                h, w = s[0], s[1]
                ok["begin"] &= bool(b[2] == 0 and b[0] >= 0 and b[1] >= 0)
                ok["size"] &= bool(s[2] == minus_one.astype(np.int64) and h > 0 and w > 0)
                ok["inside"] &= bool(b[0] + h <= H and b[1] + w <= W)
                area = np.float32(h * w)
                lo = np.float32(area_range[0]) * np.float32(W) * np.float32(H)
                hi = np.float32(area_range[1]) * np.float32(W) * np.float32(H)
                ok["area"] &= bool(whole or lo * (1 - 1e-6) <= area <= hi * (1 + 1e-6))
                ok["aspect"] &= bool(whole or ar_range[0] * h - 0.5 - 1e-4 <= w <= ar_range[1] * h + 0.5 + 1e-4)
                best = 0.0 if len(boxes) else 1.0
                for y0, x0, y1, x1 in boxes:
                    py0, px0 = int(np.float32(y0) * np.float32(H)), int(np.float32(x0) * np.float32(W))
                    py1, px1 = int(np.float32(y1) * np.float32(H)), int(np.float32(x1) * np.float32(W))
                    iy = max(0, min(py1, b[0] + h) - max(py0, b[0]))
                    ix = max(0, min(px1, b[1] + w) - max(px0, b[1]))
                    if (py1 - py0) * (px1 - px0) > 0:
                        best = max(best, iy * ix / float((py1 - py0) * (px1 - px0)))
                ok["covers"] &= bool(whole or best >= min_cov - 1e-6)
                want = np.array([b[0] / np.float32(H), b[1] / np.float32(W), (b[0] + h) / np.float32(H),
                                 (b[1] + w) / np.float32(W)], np.float32)
                ok["bboxes"] &= bool(bb.shape == (1, 1, 4) and np.allclose(bb[0, 0], want, atol=1e-6))
                seen.add((b[0], b[1], h, w))
                return whole

            with tf.Session() as sess:
                for k, c in cases.items():
                    dims = list(sess.run(tf.convert_to_tensor(c[0]))[:2].astype(int))
                    boxes = np.array(sess.run(tf.convert_to_tensor(c[1], tf.float32))).reshape(-1, 4)
                    ok = {"begin": True, "size": True, "inside": True, "area": True, "aspect": True, "covers": True,
                          "bboxes": True}
                    seen = set()
                    wholes = 0
                    dtype = outs[k][0].dtype.as_numpy_dtype
                    for _ in range(200):
                        b, s, bb = sess.run(outs[k], {covered: 0.7} if k == "int64" else None)
                        wholes += check(ok, seen, b, s, bb, dims, boxes, c[3], c[4], c[5], dtype)
                    r[k] = {"ok": ok, "many": len(seen) >= 40, "mostly_cropped": wholes < 20,
                            "size_2": int(s[2])}
                impossible = sd([40, 60, 3], box, area_range=[0.9, 1.0], aspect_ratio_range=[10.0, 11.0], seed=1)
                r["impossible"] = [sess.run(impossible) for _ in range(3)]
                r["bad_box"] = raised(lambda: sess.run(sd([40, 60, 3], [[[0.1, 0.2, 1.5, 0.7]]])),
                                      "must be in [0.0, 1.0]")
                r["negative_box"] = raised(lambda: sess.run(sd([40, 60, 3], [[[-0.1, 0.2, 0.5, 0.7]]])))
                r["empty_boxes"] = raised(lambda: sess.run(sd([40, 60, 3], tf.zeros([1, 0, 4]))))
                fed = tf.placeholder(tf.int32)
                r["fed_two"] = raised(lambda: sess.run(sd(fed, box), {fed: [40, 60]}))
                r["negative_covered"] = raised(lambda: sess.run(sd([40, 60, 3], box, min_object_covered=-1.0)))
                r["area_above_1"] = raised(lambda: sess.run(sd([40, 60, 3], box, area_range=[0.5, 1.5])))
                r["one_ratio"] = raised(lambda: sess.run(sd([40, 60, 3], box, aspect_ratio_range=[1.0])))
            r["two_elements"] = raised(lambda: sd([40, 60], box))
            r["float_size"] = raised(lambda: sd([40.0, 60.0, 3.0], box))
            r["rank_2_size"] = raised(lambda: sd([[40, 60, 3]], box))
            r["rank_2_boxes"] = raised(lambda: sd([40, 60, 3], [[0.1, 0.2, 0.5, 0.7]]))
            r["three_coordinates"] = raised(lambda: sd([40, 60, 3], [[[0.1, 0.2, 0.5]]]))

            def first_draws(seed, seed2):
                with tf.Graph().as_default():
                    o = sd([40, 60, 3], box, seed=seed, seed2=seed2)
                    with tf.Session() as sess:
                        return [sess.run(o[1]).tolist() for _ in range(6)]
            r["repeatable"] = [first_draws(7, None) == first_draws(7, None), first_draws(2, 8) == first_draws(2, 8)]

            # Inception's distortion: a crop of the sampled box, resized.
            rng = np.random.RandomState(14)
            image = tf.constant(rng.rand(40, 60, 3).astype(np.float32))
            begin, size, _ = sd(tf.shape(image), box, min_object_covered=0.1, seed=1)
            crop = tf.slice(image, begin, size)
            out = tf.image.resize_images(crop, [7, 7])
            r["inception"] = shape(out)[:2]
            with tf.Session() as sess:
                v = [sess.run([crop, out]) for _ in range(5)]
            r["inception_run"] = [[list(c.shape[2:]), list(o.shape)] for c, o in v]
            emit(r)
        ''')

    def test_resize_bicubic_and_area(self):
        self.compare('''
            r = {}
            rng = np.random.RandomState(15)
            x = tf.constant(rng.rand(2, 5, 7, 3).astype(np.float32))
            x6 = tf.constant(rng.rand(1, 6, 8, 2).astype(np.float32))
            x3 = tf.constant(rng.rand(6, 4, 2).astype(np.float32))
            u8 = tf.constant(rng.randint(0, 256, (1, 4, 6, 3)).astype(np.uint8))
            p = tf.placeholder(tf.float32, [None, None, None, 3])
            BICUBIC, AREA = tf.image.ResizeMethod.BICUBIC, tf.image.ResizeMethod.AREA
            bicubic = [tf.image.resize_images(x, [9, 11], method=BICUBIC),
                       tf.image.resize_images(x, [3, 4], method=BICUBIC),
                       tf.image.resize_images(x, [9, 11], method=BICUBIC, align_corners=True),
                       tf.image.resize_images(x, [3, 4], method=BICUBIC, align_corners=True),
                       tf.image.resize_images(u8, [7, 5], method=BICUBIC),
                       tf.image.resize_images(u8, [2, 3], method=BICUBIC, align_corners=True),
                       tf.image.resize_images(x3, [10, 3], method=BICUBIC),
                       tf.image.resize_bicubic(x, [8, 3], half_pixel_centers=True),
                       tf.image.resize_bicubic(x, [10, 14], half_pixel_centers=True),
                       tf.image.resize_bicubic(u8, [3, 9]), tf.image.resize_bicubic(x6, [6, 8]),
                       tf.image.resize(x3, [2, 2], method="bicubic")]
            area = [tf.image.resize_images(x6, [3, 4], method=AREA), tf.image.resize_images(x, [2, 3], method=AREA),
                    tf.image.resize_images(x, [3, 5], method=AREA), tf.image.resize_images(x, [9, 11], method=AREA),
                    tf.image.resize_images(x, [3, 4], method=AREA, align_corners=True),
                    tf.image.resize_images(x, [9, 11], method=AREA, align_corners=True),
                    tf.image.resize_images(u8, [3, 4], method=AREA), tf.image.resize_images(x3, [4, 3], method=AREA),
                    tf.image.resize_area(x, [4, 4]), tf.image.resize_area(x6, [2, 2], align_corners=True),
                    tf.image.resize_area(u8, [1, 1]), tf.image.resize(x3, [3, 2], method="area")]
            same = [tf.image.resize_images(x, [5, 7], method=BICUBIC), tf.image.resize_images(x, [5, 7], method=AREA)]
            fed = [tf.image.resize_images(p, [4, 4], method=BICUBIC), tf.image.resize_images(p, [2, 2], method=AREA)]
            r["sigs"] = [[shape(t), t.dtype.name] for t in bicubic + area + fed]
            r["names"] = [tf.image.resize_bicubic(x, [2, 2]).name, tf.image.resize_area(x, [2, 2]).name,
                          tf.image.resize_images(x, [2, 2], method=BICUBIC).name]
            r["same_size_is_the_input"] = [t is x or t.op.type == "Const" for t in same]
            w = tf.constant(rng.randn(2, 9, 11, 3).astype(np.float32))
            w2 = tf.constant(rng.randn(2, 8, 3, 3).astype(np.float32))
            grads = [tf.gradients(tf.reduce_sum(bicubic[0] * w), x)[0],
                     tf.gradients(tf.reduce_sum(bicubic[2] * w), x)[0],
                     tf.gradients(tf.reduce_sum(bicubic[7] * w2), x)[0],
                     tf.gradients(tf.reduce_sum(bicubic[1] ** 2), x)[0]]
            with tf.Session() as sess:
                vals = sess.run(bicubic + area)
                r["values"] = [np.round(v.astype(np.float64), 4).tolist() for v in vals]
                r["grads"] = [np.round(g, 4).tolist() for g in sess.run(grads)]
                feed = {p: np.arange(45, dtype=np.float32).reshape(1, 3, 5, 3) / 45.0}
                r["fed"] = [np.round(v, 4).tolist() for v in sess.run(fed, feed)]
                r["bicubic_both_attrs"] = raised(lambda: sess.run(tf.image.resize_bicubic(
                    x, [2, 2], align_corners=True, half_pixel_centers=True)))
                r["area_zero_size"] = raised(lambda: sess.run(tf.image.resize_area(x, tf.constant([0, 3]))))
            r["unknown_method"] = raised(lambda: tf.image.resize_images(x, [2, 2], method=7),
                                         "Resize method is not implemented: 7")
            emit(r)
        ''')


if __name__ == "__main__":
    unittest.main()
