"""TF1's tf.image (and tf.random_crop, tf.reverse): decoding and encoding
JPEG and PNG, resizing, flips, crops and pads, the photometric adjustments
of input pipelines and sample_distorted_bounding_box, as TF1 builds them:
the engine's DecodeJpeg, DecodePng, DecodeImage, EncodeJpeg, EncodePng,
ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic, ResizeArea,
SampleDistortedBoundingBoxV2 and ReverseV2 ops, the rest composed of engine
ops in TF's arithmetic (the HSV conversions and the hue and saturation
adjustments are in image_color.py; tests/python/tf1_image_test.py and
tf1_image_color_test.py compare each with TensorFlow's). Randomness comes
from the engine's seeded generators: a seed gives a repeatable stream, not
TF's numbers."""

import collections

import numpy as np

from . import array_ops
from . import dtypes as _dtypes
from . import framework as fw
from . import graph_ops
from . import indexing
from . import math_ops
from .framework import convert_to_tensor, make_op, make_tensor
from .graph_api import name_scope


class ResizeMethod:
    """TF1's resize methods (tf.image.ResizeMethod)."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_METHOD_NAMES = {"bilinear": 0, "nearest": 1, "bicubic": 2, "area": 3}
_RESIZE_OPS = {ResizeMethod.BILINEAR: "ResizeBilinear", ResizeMethod.NEAREST_NEIGHBOR: "ResizeNearestNeighbor",
               ResizeMethod.BICUBIC: "ResizeBicubic", ResizeMethod.AREA: "ResizeArea"}


# ---- codecs

def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    return make_tensor("DecodeJpeg", [convert_to_tensor(contents, dtype=_dtypes.string)],
                       {"channels": int(channels), "ratio": int(ratio), "fancy_upscaling": bool(fancy_upscaling),
                        "try_recover_truncated": bool(try_recover_truncated),
                        "acceptable_fraction": float(acceptable_fraction), "dct_method": str(dct_method)},
                       name=name or "DecodeJpeg")


def decode_png(contents, channels=0, dtype=_dtypes.uint8, name=None):
    if _dtypes.as_dtype(dtype) != _dtypes.uint8:
        raise NotImplementedError("decode_png's dtype %s is not supported by towerflow (uint8 is)"
                                  % _dtypes.as_dtype(dtype).name)
    return make_tensor("DecodePng", [convert_to_tensor(contents, dtype=_dtypes.string)], {"channels": int(channels)},
                       name=name or "DecodePng")


def decode_image(contents, channels=None, dtype=_dtypes.uint8, name=None, expand_animations=True):
    """A JPEG or PNG image, told apart by its first bytes; GIF, BMP and WebP
    are an InvalidArgumentError naming the format when the op runs."""
    dtype = _dtypes.as_dtype(dtype)
    with name_scope(name, "decode_image"):
        image = make_tensor("DecodeImage", [convert_to_tensor(contents, dtype=_dtypes.string)],
                            {"channels": int(channels or 0)}, name="DecodeImage")
        if dtype == _dtypes.uint8:
            return image
        return convert_image_dtype(image, dtype)


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300, xmp_metadata="",
                name=None):
    if xmp_metadata:
        raise NotImplementedError("encode_jpeg's xmp_metadata is not supported by towerflow")
    return make_tensor("EncodeJpeg", [convert_to_tensor(image)],
                       {"format": str(format), "quality": int(quality), "progressive": bool(progressive),
                        "optimize_size": bool(optimize_size), "chroma_downsampling": bool(chroma_downsampling),
                        "density_unit": str(density_unit), "x_density": int(x_density), "y_density": int(y_density)},
                       name=name or "EncodeJpeg")


def encode_png(image, compression=-1, name=None):
    return make_tensor("EncodePng", [convert_to_tensor(image)], {"compression": int(compression)},
                       name=name or "EncodePng")


# ---- dtypes

_MAX = {"uint8": 255, "int32": 2**31 - 1, "int64": 2**63 - 1}


def _saturate_cast(x, dtype):
    """x clamped to dtype's range, then cast (TF's saturate_cast: a bound
    the float type cannot hold steps inward to the nearest one it can)."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype.is_integer and x.dtype.is_floating:
        f = x.dtype.as_numpy_dtype
        lo = 0 if dtype == _dtypes.uint8 else -_MAX[dtype.name] - 1
        hi = f(_MAX[dtype.name])
        if int(hi) > _MAX[dtype.name]:
            hi = np.nextafter(hi, f(0))
        x = math_ops.clip_by_value(x, float(f(lo)), float(hi))
    elif dtype == _dtypes.uint8 and x.dtype.is_integer:
        x = math_ops.clip_by_value(x, 0, 255)
    return array_ops.cast(x, dtype)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Integers scaled to [0, MAX] and floats to [0, 1], TF's arithmetic
    (floats to integers multiply by MAX + 0.5 and truncate)."""
    image = convert_to_tensor(image)
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating and not dtype.is_integer:
        raise AttributeError("dtype must be either floating point or integer")
    if not image.dtype.is_floating and not image.dtype.is_integer:
        raise AttributeError("image dtype must be either floating point or integer")
    if dtype == image.dtype:
        return array_ops.identity(image, name=name)
    with name_scope(name, "convert_image"):
        src = image.dtype
        if src.is_integer and dtype.is_integer:
            scale_in, scale_out = _MAX[src.name], _MAX[dtype.name]
            if scale_in > scale_out:
                scaled = math_ops.floordiv(image, np.asarray((scale_in + 1) // (scale_out + 1),
                                                             dtype=src.as_numpy_dtype))
                return _saturate_cast(scaled, dtype) if saturate else array_ops.cast(scaled, dtype)
            cast = _saturate_cast(image, dtype) if saturate else array_ops.cast(image, dtype)
            return math_ops.multiply(cast, np.asarray((scale_out + 1) // (scale_in + 1), dtype=dtype.as_numpy_dtype))
        if src.is_floating and dtype.is_floating:
            return array_ops.cast(image, dtype)
        if src.is_integer:
            return math_ops.multiply(array_ops.cast(image, dtype), 1.0 / _MAX[src.name])
        scaled = math_ops.multiply(image, _MAX[dtype.name] + 0.5)
        return _saturate_cast(scaled, dtype) if saturate else array_ops.cast(scaled, dtype)


# ---- shapes

def _rank(image, what="image", at_most_4=True):
    """image as a tensor, and its rank when known: 3 or 4 (or more when not
    at_most_4), else ValueError as TF's."""
    image = convert_to_tensor(image)
    ndims = image.get_shape().ndims
    if ndims is not None and ndims < 3:
        raise ValueError("'%s' (shape %s) must be at least three-dimensional." % (what, image.get_shape()))
    if at_most_4 and ndims is not None and ndims > 4:
        raise ValueError("'%s' must have either 3 or 4 dimensions." % what)
    return image, ndims


def _dim(image, i):
    """Dimension i of image: a Python int when the graph knows it, else a
    scalar int32 tensor."""
    d = image.get_shape().as_list()[i] if image.get_shape().ndims is not None else None
    if d is not None:
        return d
    return array_ops.reshape(array_ops.slice(array_ops.shape(image), [i % image.get_shape().ndims], [1]), [])


def _batched(image, what="image"):
    """image as 4-D (a 3-D image gains a batch of one), and whether it was."""
    image, ndims = _rank(image, what)
    if ndims is None:
        raise ValueError("'%s' contains no shape." % what)
    if ndims == 3:
        return array_ops.expand_dims(image, 0), False
    if ndims != 4:
        raise ValueError("'%s' must have either 3 or 4 dimensions." % what)
    return image, True


def _unbatched(image, is_batch):
    return image if is_batch else array_ops.squeeze(image, [0])


def _refine(out, image, height, width):
    """Sets out's static shape to image's batch and channels with the
    height and width given as Python ints (unknown where tensors), as TF's
    set_shape does."""
    dims = image.get_shape().as_list()
    known = [v if _is_static(v) else None for v in (height, width)]
    out.set_shape([dims[0], known[0], known[1], dims[3]])


def _is_static(*values):
    return all(not array_ops._is_tensor(v) for v in values)


def _max(a, b):
    return max(a, b) if _is_static(a, b) else math_ops.maximum(a, b)


def _min(a, b):
    return min(a, b) if _is_static(a, b) else math_ops.minimum(a, b)


# ---- resizing

def _resize_op(op, images, size, align_corners, half_pixel_centers, name):
    """One resize op; half_pixel_centers None for ResizeArea, which has no such attr."""
    images = convert_to_tensor(images)
    attrs = {"align_corners": bool(align_corners)}
    if half_pixel_centers is not None:
        attrs["half_pixel_centers"] = bool(half_pixel_centers)
    with fw.op_name(name or op, images.graph) as name:
        return make_tensor(op, [images, array_ops._int32(size, name + "/size")], attrs, name=name)


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _resize_op("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _resize_op("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name)


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _resize_op("ResizeBicubic", images, size, align_corners, half_pixel_centers, name)


def resize_area(images, size, align_corners=False, name=None):
    return _resize_op("ResizeArea", images, size, align_corners, None, name)


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False, preserve_aspect_ratio=False,
                  name=None):
    """TF1's resize_images: 3-D or 4-D images; bilinear, bicubic and area
    give float32, nearest neighbour keeps the dtype; a resize to the size
    the graph knows the images have returns them as they are. An unknown
    method is TF's ValueError, raised where TF raises it (after the checks
    of the images and the size, and not for a resize to the same size)."""
    method = _METHOD_NAMES.get(method, method) if isinstance(method, str) else method
    with name_scope(name, "resize"):
        images, is_batch = _batched(images, "images")
        _, height, width, _ = images.get_shape().as_list()
        new_h = new_w = None
        if array_ops._is_tensor(size) or array_ops._has_tensor(size):
            size = array_ops._int32(size, "size")
            if size.get_shape().ndims is not None and size.get_shape().as_list() not in ([2], [None]):
                raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        else:
            values = np.asarray(size)
            if values.dtype.kind not in "iu":
                raise ValueError("'size' must be a 1-D int32 Tensor")
            if values.shape != (2,):
                raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
            new_h, new_w = int(values[0]), int(values[1])
        if preserve_aspect_ratio:
            if None in (height, width, new_h, new_w):
                raise NotImplementedError("resize_images' preserve_aspect_ratio needs sizes the graph knows "
                                          "in towerflow")
            scale = min(np.float32(new_h) / np.float32(height), np.float32(new_w) / np.float32(width))
            new_h = int(np.round(np.float32(scale * np.float32(height))))
            new_w = int(np.round(np.float32(scale * np.float32(width))))
        if not preserve_aspect_ratio and new_h is not None and (new_h, new_w) == (height, width):
            return _unbatched(images, is_batch)
        op = next((v for k, v in _RESIZE_OPS.items() if method == k), None)
        if op is None:
            raise ValueError("Resize method is not implemented: {}".format(method))
        out = _resize_op(op, images, size if new_h is None else [new_h, new_w], align_corners,
                         None if op == "ResizeArea" else False, None)
        return _unbatched(out, is_batch)


resize = resize_images


# ---- flips and rotations

def flip_left_right(image):
    image, _ = _rank(image)
    return reverse(image, [-2], name="flip_left_right")


def flip_up_down(image):
    image, _ = _rank(image)
    return reverse(image, [-3], name="flip_up_down")


def _random_flip(image, axis, seed, scope_name):
    image, ndims = _rank(image)
    with name_scope(None, scope_name):
        if ndims == 3:
            # One draw: reversed along the axes [axis][:u < 0.5], so the
            # image is copied once when flipped and passed on when not.
            u = graph_ops.random_uniform([], 0, 1.0, seed=seed)
            flip = array_ops.reshape(array_ops.cast(math_ops.less(u, 0.5), _dtypes.int32), [1])
            return reverse(image, array_ops.slice(fw.constant([axis]), [0], flip))
        flipped = reverse(image, [axis])
        if ndims is None:
            raise ValueError("'image' contains no shape.")
        # A batch: each image flipped on its own draw.
        batch = array_ops.slice(array_ops.shape(image), [0], [1])
        u = graph_ops.random_uniform(batch, 0, 1.0, seed=seed)
        mask = array_ops.reshape(math_ops.greater_equal(u, 0.5), array_ops.concat([batch, [1, 1, 1]], 0))
        return indexing.where_v2(mask, flipped, image)


def random_flip_left_right(image, seed=None):
    return _random_flip(image, -2, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    return _random_flip(image, -3, seed, "random_flip_up_down")


def transpose_image(image, name=None):
    image, ndims = _rank(image)
    if ndims is None:
        raise ValueError("'image' contains no shape.")
    perm = [1, 0, 2] if ndims == 3 else [0, 2, 1, 3]
    return indexing.transpose(image, perm, name=name or "transpose")


def rot90(image, k=1, name=None):
    """image turned k times by 90 degrees counter-clockwise (k a Python int)."""
    if array_ops._is_tensor(k):
        raise NotImplementedError("rot90 of a tensor k is not supported by towerflow (a Python int is)")
    image, ndims = _rank(image)
    if ndims is None:
        raise ValueError("'image' contains no shape.")
    k = int(k) % 4
    with name_scope(name, "rot90"):
        if k == 0:
            return image
        if k == 2:
            return reverse(image, [-3, -2])
        perm = [1, 0, 2] if ndims == 3 else [0, 2, 1, 3]
        if k == 1:
            return indexing.transpose(reverse(image, [-2]), perm)
        return reverse(indexing.transpose(image, perm), [-2])


def reverse(tensor, axis, name=None):
    """tf.reverse / reverse_v2: tensor with the axes in `axis` reversed (ReverseV2)."""
    x = convert_to_tensor(tensor)
    with fw.op_name(name or "ReverseV2", x.graph) as name:
        return make_tensor("ReverseV2", [x, indexing._index_tensor(axis, name + "/axis")], name=name)


# ---- crops and pads

def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    with name_scope(None, "crop_to_bounding_box"):
        image, is_batch = _batched(image)
        height, width = _dim(image, 1), _dim(image, 2)
        for v, what in ((offset_width, "offset_width"), (offset_height, "offset_height")):
            if _is_static(v) and v < 0:
                raise ValueError("%s must be >= 0." % what)
        for v, what in ((target_width, "target_width"), (target_height, "target_height")):
            if _is_static(v) and v <= 0:
                raise ValueError("%s must be > 0." % what)
        if _is_static(width, target_width, offset_width) and width < target_width + offset_width:
            raise ValueError("width must be >= target + offset.")
        if _is_static(height, target_height, offset_height) and height < target_height + offset_height:
            raise ValueError("height must be >= target + offset.")
        cropped = array_ops.slice(image, [0, offset_height, offset_width, 0], [-1, target_height, target_width, -1])
        return _unbatched(cropped, is_batch)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    with name_scope(None, "pad_to_bounding_box"):
        image, is_batch = _batched(image)
        height, width = _dim(image, 1), _dim(image, 2)
        after_w = target_width - offset_width - width
        after_h = target_height - offset_height - height
        for v, what in ((offset_height, "offset_height"), (offset_width, "offset_width")):
            if _is_static(v) and v < 0:
                raise ValueError("%s must be >= 0" % what)
        if _is_static(after_w) and after_w < 0:
            raise ValueError("width must be <= target - offset")
        if _is_static(after_h) and after_h < 0:
            raise ValueError("height must be <= target - offset")
        paddings = [[0, 0], [offset_height, after_h], [offset_width, after_w], [0, 0]]
        padded = indexing.pad(image, paddings)
        _refine(padded, image, target_height, target_width)
        return _unbatched(padded, is_batch)


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """Centered crop or zero pad of each axis to the target, TF's offsets."""
    with name_scope(None, "resize_image_with_crop_or_pad"):
        image, is_batch = _batched(image)
        for v, what in ((target_width, "target_width"), (target_height, "target_height")):
            if _is_static(v) and v <= 0:
                raise ValueError("%s must be > 0." % what)
        height, width = _dim(image, 1), _dim(image, 2)
        width_diff = target_width - width
        height_diff = target_height - height
        crop_w = _max(-width_diff // 2, 0)
        pad_w = _max(width_diff // 2, 0)
        crop_h = _max(-height_diff // 2, 0)
        pad_h = _max(height_diff // 2, 0)
        cropped = crop_to_bounding_box(image, crop_h, crop_w, _min(target_height, height), _min(target_width, width))
        resized = pad_to_bounding_box(cropped, pad_h, pad_w, target_height, target_width)
        _refine(resized, image, target_height, target_width)
        return _unbatched(resized, is_batch)


resize_with_crop_or_pad = resize_image_with_crop_or_pad


def central_crop(image, central_fraction):
    if array_ops._is_tensor(central_fraction):
        raise NotImplementedError("central_crop of a tensor central_fraction is not supported by towerflow")
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    image = convert_to_tensor(image)
    if central_fraction == 1.0:
        return image
    with name_scope(None, "central_crop"):
        image, is_batch = _batched(image)
        height, width = _dim(image, 1), _dim(image, 2)

        def start(d):
            if _is_static(d):
                return int((float(d) - float(d) * central_fraction) / 2)
            dd = array_ops.cast(d, _dtypes.float64)
            return array_ops.cast((dd - dd * central_fraction) / 2, _dtypes.int32)

        h0, w0 = start(height), start(width)
        out = array_ops.slice(image, [0, h0, w0, 0], [-1, height - h0 * 2, width - w0 * 2, -1])
        return _unbatched(out, is_batch)


def random_crop(value, size, seed=None, name=None):
    """A slice of `size` at a uniformly drawn offset (tf.random_crop); a
    size larger than value is an InvalidArgumentError from the slice."""
    value = convert_to_tensor(value)
    with name_scope(name, "random_crop"):
        size = array_ops._int32(size, "size")
        shape = array_ops.shape(value)
        limit = math_ops.maximum(shape - size + 1, 1)
        u = graph_ops.random_uniform(array_ops.shape(shape), 0, 1.0, seed=seed)
        offset = math_ops.minimum(array_ops.cast(u * array_ops.cast(limit, _dtypes.float32), _dtypes.int32),
                                  limit - 1)
        return array_ops.slice(value, offset, size)


_SampledBox = collections.namedtuple("SampleDistortedBoundingBoxV2", ["begin", "size", "bboxes"])


def sample_distorted_bounding_box(image_size, bounding_boxes, seed=None, seed2=None, min_object_covered=0.1,
                                  aspect_ratio_range=None, area_range=None, max_attempts=None,
                                  use_image_if_no_bounding_boxes=None, name=None):
    """TF1's: a random crop of an image of image_size ([height, width,
    channels]) covering at least min_object_covered of one of the boxes
    ([batch, N, 4] of [y_min, x_min, y_max, x_max] in [0, 1]), as (begin,
    size, bboxes) for tf.slice and draw_bounding_boxes. The engine's
    SampleDistortedBoundingBoxV2 with min_object_covered a tensor; an attr
    left None takes the op's default. seed and seed2 go to the op as given (0
    for None), as TF1's do: the graph seed plays no part, and (0, 0) is
    unseeded."""
    with name_scope(name, "sample_distorted_bounding_box"):
        attrs = {"seed": int(seed or 0), "seed2": int(seed2 or 0)}
        if aspect_ratio_range is not None:
            attrs["aspect_ratio_range"] = [float(v) for v in aspect_ratio_range]
        if area_range is not None:
            attrs["area_range"] = [float(v) for v in area_range]
        if max_attempts is not None:
            attrs["max_attempts"] = int(max_attempts)
        if use_image_if_no_bounding_boxes is not None:
            attrs["use_image_if_no_bounding_boxes"] = bool(use_image_if_no_bounding_boxes)
        image_size = convert_to_tensor(image_size)
        if image_size.dtype not in (_dtypes.uint8, _dtypes.int32, _dtypes.int64):
            raise TypeError("Value passed to parameter 'image_size' has DataType %s not in list of allowed values: "
                            "uint8, int8, int16, int32, int64" % image_size.dtype.name)
        inputs = [image_size, convert_to_tensor(bounding_boxes, dtype=_dtypes.float32),
                  convert_to_tensor(min_object_covered, dtype=_dtypes.float32)]
        op = make_op("SampleDistortedBoundingBoxV2", inputs, attrs, name=name or "SampleDistortedBoundingBoxV2")
        return _SampledBox(*op.outputs)


# ---- photometric adjustments

def _as_float(image):
    """image itself when float32, else converted to float32 (TF's adjusts)."""
    return image if image.dtype == _dtypes.float32 else convert_image_dtype(image, _dtypes.float32)


def adjust_brightness(image, delta):
    with name_scope(None, "adjust_brightness"):
        image = convert_to_tensor(image)
        flt = _as_float(image)
        adjusted = math_ops.add(flt, array_ops.cast(delta, flt.dtype))
        return convert_image_dtype(adjusted, image.dtype, saturate=True)


def random_brightness(image, max_delta, seed=None):
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = graph_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def adjust_contrast(images, contrast_factor):
    """Each channel of each image: mean + factor * (x - mean), the mean over
    its height and width (TF's AdjustContrastv2, in float32)."""
    with name_scope(None, "adjust_contrast") as name:
        images = convert_to_tensor(images)
        flt = _as_float(images)
        factor = convert_to_tensor(contrast_factor, dtype=_dtypes.float32, name="contrast_factor")
        adjusted = make_tensor("AdjustContrastv2", [flt, factor], name=name)
        return convert_image_dtype(adjusted, images.dtype, saturate=True)


def _random_factor(lower, upper, seed):
    """A factor drawn uniformly from [lower, upper), with TF's checks of the
    bounds (random_contrast, random_saturation)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return graph_ops.random_uniform([], lower, upper, seed=seed)


def random_contrast(image, lower, upper, seed=None):
    return adjust_contrast(image, _random_factor(lower, upper, seed))


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(pixels)) over each image, float32."""
    with name_scope(None, "per_image_standardization") as scope:
        image, _ = _rank(image, at_most_4=False)
        image = array_ops.cast(image, _dtypes.float32)
        shape = array_ops.shape(image)
        h, w, c = array_ops.unstack(array_ops.slice(shape, array_ops.reshape(array_ops.rank(image) - 3, [1]), [3]))
        num_pixels = h * w * c
        mean = math_ops.reduce_mean(image, axis=[-1, -2, -3], keepdims=True)
        variance = math_ops.reduce_mean(math_ops.squared_difference(image, mean), axis=[-1, -2, -3], keepdims=True)
        stddev = math_ops.sqrt(variance)
        min_stddev = math_ops.rsqrt(array_ops.cast(num_pixels, _dtypes.float32))
        adjusted = math_ops.maximum(stddev, min_stddev)
        return math_ops.divide(math_ops.subtract(image, mean), adjusted, name=scope)


def rgb_to_grayscale(images, name=None):
    """0.2989 R + 0.5870 G + 0.1140 B in float32, back to the images' dtype."""
    with name_scope(name, "rgb_to_grayscale"):
        images = convert_to_tensor(images)
        last = images.get_shape().as_list()[-1] if images.get_shape().ndims else None
        if last is not None and last != 3:
            raise ValueError("rgb_to_grayscale needs 3 channels in the last dimension, got shape %s"
                             % images.get_shape())
        flt = convert_image_dtype(images, _dtypes.float32)
        w = fw.constant(np.array([0.2989, 0.5870, 0.1140], dtype=np.float32))
        gray = math_ops.reduce_sum(math_ops.multiply(flt, w), axis=[-1], keepdims=True)
        return convert_image_dtype(gray, images.dtype)


def grayscale_to_rgb(images, name=None):
    with name_scope(name, "grayscale_to_rgb"):
        images = convert_to_tensor(images)
        ndims = images.get_shape().ndims
        if ndims is None:
            raise ValueError("'images' contains no shape.")
        if images.get_shape().as_list()[-1] not in (None, 1):
            raise ValueError("Last dimension of a grayscale image should be size 1.")
        return indexing.tile(images, [1] * (ndims - 1) + [3])
