"""towerflow: train neural networks from TFRecord data on GPUs and CPU cores.

- ``import towerflow.compat.v1 as tf`` runs TF1 programs (graphs, sessions,
  towers, queue input pipelines) on towerflow's C++ engine.
- ``towerflow.data``: tf.data's Dataset API over the engine's pipelines.
- ``towerflow.train.Replicate``: data-parallel towers, one batch each.
- ``towerflow.devices``: the devices a session makes and its placement.
- ``towerflow.cli``: the ``towerflow`` command (train, eval) from Python.

The engine itself is ``towerflow._core`` (over libtowerflow.so, carried in
this package).
"""

from . import _core  # noqa: F401 (loads libtowerflow.so)
from . import errors  # noqa: F401
from . import data  # noqa: F401
from . import train  # noqa: F401
from . import devices  # noqa: F401
from . import cli  # noqa: F401
from .devices import list_devices, placement  # noqa: F401

__version__ = "0.1.0"
