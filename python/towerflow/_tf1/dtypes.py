"""TF1's dtypes: tf.float32, tf.int32, ... and as_dtype."""

import numpy as np


class DType:
    """One element type. Compares equal to the same type's DType."""

    def __init__(self, name, numpy_type):
        self._name = name
        self._numpy = numpy_type

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        return self._numpy

    @property
    def base_dtype(self):
        return self

    @property
    def is_floating(self):
        return self._name in ("float32", "float64")

    @property
    def is_integer(self):
        return self._name in ("int32", "int64", "uint8")

    @property
    def is_bool(self):
        return self._name == "bool"

    def __eq__(self, other):
        try:
            return as_dtype(other)._name == self._name
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return "tf." + self._name

    def __str__(self):
        return "<dtype: '%s'>" % self._name


float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
bool = DType("bool", np.bool_)  # noqa: A001 (TF's name)
string = DType("string", np.object_)
float = float32  # noqa: A001
double = float64

_BY_NAME = {d.name: d for d in (float32, float64, int32, int64, uint8, bool, string)}
_BY_NAME.update({"float": float32, "double": float64})


def as_dtype(value):
    """A DType from a DType, a name, a NumPy type or dtype; TypeError otherwise."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError("towerflow has no dtype '%s' (float32, float64, int32, int64, uint8, bool, string)" % value)
    if value is str or value is bytes:
        return string
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError("Cannot convert %r to a towerflow dtype" % (value,)) from None
    if npd.kind in ("O", "S", "U"):
        return string
    if npd.name in _BY_NAME:
        return _BY_NAME[npd.name]
    raise TypeError("towerflow has no dtype for NumPy's %s (float32, float64, int32, int64, uint8, bool, string)"
                    % npd.name)
