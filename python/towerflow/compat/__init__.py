"""Compatibility surfaces: ``towerflow.compat.v1`` is TF1's Python API."""
