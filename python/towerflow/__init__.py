"""towerflow: train neural networks from TFRecord data on GPUs and CPU cores.

``import towerflow.compat.v1 as tf`` runs TF1 programs (graphs, sessions,
towers, queue input pipelines) on towerflow's C++ engine. The engine itself is
``towerflow._core`` (libtowerflow.so, carried in this package).
"""

from . import _core  # noqa: F401 (loads libtowerflow.so)
from . import errors  # noqa: F401

__version__ = "0.1.0"
