"""Static shapes of TF1's Python API: TensorShape and Dimension."""

import numpy as np


class Dimension:
    """One dimension of a TensorShape (TF1's Dimension): ``value`` is an int or None."""

    def __init__(self, value):
        self._value = None if value is None else int(value)

    @property
    def value(self):
        return self._value

    def __int__(self):
        if self._value is None:
            raise ValueError("unknown dimension")
        return self._value

    __index__ = __int__

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return None
        return self._value == other

    def __hash__(self):
        return hash(self._value)

    # TF1's arithmetic and comparisons: an unknown operand gives an unknown
    # dimension (or None for a comparison).
    def _arith(self, other, fn):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return Dimension(None)
        return Dimension(fn(self._value, int(other)))

    def __add__(self, other):
        return self._arith(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._arith(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._arith(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._arith(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._arith(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._arith(other, lambda a, b: b * a)

    def __floordiv__(self, other):
        return self._arith(other, lambda a, b: a // b)

    def __rfloordiv__(self, other):
        return self._arith(other, lambda a, b: b // a)

    def __mod__(self, other):
        return self._arith(other, lambda a, b: a % b)

    def __rmod__(self, other):
        return self._arith(other, lambda a, b: b % a)

    def _compare(self, other, fn):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return None
        return fn(self._value, int(other))

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return None if eq is None else not eq

    def __repr__(self):
        return "Dimension(%s)" % self._value

    def __str__(self):
        return "?" if self._value is None else str(self._value)


class TensorShape:
    """A possibly partial shape (TF1's TensorShape)."""

    def __init__(self, dims):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = None if dims._dims is None else list(dims._dims)
        else:
            if isinstance(dims, (int, np.integer)):
                dims = [dims]
            self._dims = [d.value if isinstance(d, Dimension) else (None if d is None else int(d)) for d in dims]

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        return int(np.prod(self._dims, dtype=np.int64))

    def is_compatible_with(self, other):
        """Whether the two shapes could be one (TF's rule: unknown ranks and
        dims are compatible with anything)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        return len(self._dims) == len(other._dims) and all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return Dimension(None) if isinstance(key, int) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __iter__(self):
        return iter(self.dims or [])

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __repr__(self):
        return "TensorShape(%r)" % (self.dims,)

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        return "(" + ", ".join("?" if d is None else str(d) for d in self._dims) + ("," if len(self._dims) == 1 else "") + ")"


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def _shape_list(shape):
    """A shape argument as the engine takes it: a list with None for unknown dims, or None."""
    if shape is None:
        return None
    return as_shape(shape)._dims


# ---- the default graph stack -------------------------------------------------


def _merge_shapes(a, b):
    if a.ndims is None:
        return b
    if b.ndims is None:
        return a
    if a.ndims != b.ndims:
        return None
    out = []
    for x, y in zip(a.as_list(), b.as_list()):
        if x is not None and y is not None and x != y:
            return None
        out.append(x if x is not None else y)
    return TensorShape(out)
