"""TF1's colour-space functions of tf.image: the HSV conversions and the hue
and saturation adjustments with their random forms, as TF1 builds them on
the engine's RGBToHSV, HSVToRGB, AdjustHue and AdjustSaturation ops (the
last dimension holds the 3 channels; tests/python/tf1_image_color_test.py
compares each with TensorFlow's). The adjustments work in float32: another
image dtype is converted there and back with convert_image_dtype, as TF's
(TF also passes float16 through; towerflow has no float16). Randomness
comes from the engine's seeded generators: a seed gives a repeatable
stream, not TF's numbers."""

from . import dtypes as _dtypes
from . import graph_ops
from .framework import convert_to_tensor, make_tensor
from .graph_api import name_scope
from .image import _as_float, _random_factor, convert_image_dtype


def _float_images(images):
    """images as a float32 or float64 tensor, else TF's TypeError (which
    also names the float types towerflow lacks)."""
    images = convert_to_tensor(images)
    if images.dtype not in (_dtypes.float32, _dtypes.float64):
        raise TypeError("Value passed to parameter 'images' has DataType %s not in list of allowed values: "
                        "float16, bfloat16, float32, float64" % images.dtype.name)
    return images


def rgb_to_hsv(images, name=None):
    """Hue, saturation and value in [0, 1] of float32 or float64 RGB values
    in [0, 1]: RGBToHSV itself."""
    return make_tensor("RGBToHSV", [_float_images(images)], name=name or "RGBToHSV")


def hsv_to_rgb(images, name=None):
    return make_tensor("HSVToRGB", [_float_images(images)], name=name or "HSVToRGB")


def _adjust(op, image, value, value_name, scope_name, name):
    """image in float32, through `op` with its float32 scalar, back to the
    image's dtype (no saturation: the op's results stay within [0, 1])."""
    with name_scope(name, scope_name):
        image = convert_to_tensor(image)
        flt = _as_float(image)
        adjusted = make_tensor(op, [flt, convert_to_tensor(value, dtype=_dtypes.float32, name=value_name)], name=op)
        return convert_image_dtype(adjusted, image.dtype)


def adjust_hue(image, delta, name=None):
    """Each pixel's hue turned by delta (a fraction of the colour wheel)."""
    return _adjust("AdjustHue", image, delta, "delta", "adjust_hue", name)


def adjust_saturation(image, saturation_factor, name=None):
    """Each pixel's saturation multiplied by saturation_factor, clipped to [0, 1]."""
    return _adjust("AdjustSaturation", image, saturation_factor, "scale", "adjust_saturation", name)


def random_hue(image, max_delta, seed=None):
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = graph_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_hue(image, delta)


def random_saturation(image, lower, upper, seed=None):
    return adjust_saturation(image, _random_factor(lower, upper, seed))
