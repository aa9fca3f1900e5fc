"""The implementation of towerflow.compat.v1 (TF1's Python surface), one
module per family: dtypes, framework (graphs, tensors, scopes), variables,
array/math/nn ops, sessions, training, input pipelines, summaries."""
