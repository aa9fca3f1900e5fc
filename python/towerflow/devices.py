"""The devices a session makes and where it placed each op (the placement log
as data)."""

from . import _core
from ._tf1 import session as _session


def list_devices(config=None):
    """The devices a session with `config` (a tf.ConfigProto) would have: a list
    of dicts (name, short_name, device_type, physical_description,
    intra_op_threads). CPUs first; GPUs where CUDA finds them."""
    options = (config or _session.ConfigProto())._session_options()
    return _core.Session(_core.Graph(), options).list_devices()


def placement(session):
    """{op name: (device, reason)} for every op `session` (a tf.Session) has
    placed: where it runs and why ("requested", "soft placement: no GPU kernel
    for ...")."""
    out = {}
    for op in session.graph.get_operations():
        device, reason = session.placed_device(op)
        if device:
            out[op.name] = (device, reason)
    return out
