"""LDP learning: Harmony's mini-batch gradient descent with dimension reduction (Alg. 4, docs/math.md §9.10) as
scikit-learn-style estimators, and the same algorithm as a deployed protocol between a server (``Trainer``) and
devices (``Task``, ``client_report``; docs/math.md §9.11). Numpy only."""

from lipdesign.learn.linear import (
    LDPLinearRegression,
    LDPLinearSVC,
    LDPLogisticRegression,
    default_batch_size,
    default_reduced_dim,
    users_needed,
)
from lipdesign.learn.protocol import REPORT_DTYPE, Task, Trainer, client_report, learning_guarantee

__all__ = ["REPORT_DTYPE", "LDPLinearRegression", "LDPLinearSVC", "LDPLogisticRegression", "Task", "Trainer",
           "client_report", "default_batch_size", "default_reduced_dim", "learning_guarantee", "users_needed"]
