"""LDP learning: Harmony's mini-batch gradient descent with dimension reduction (Alg. 4, docs/math.md §9) as
scikit-learn-style estimators, numpy only."""

from lipdesign.learn.linear import (
    LDPLinearRegression,
    LDPLinearSVC,
    LDPLogisticRegression,
    default_batch_size,
    default_reduced_dim,
)

__all__ = ["LDPLinearRegression", "LDPLinearSVC", "LDPLogisticRegression", "default_batch_size",
           "default_reduced_dim"]
