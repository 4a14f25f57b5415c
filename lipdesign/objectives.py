"""Utility: the MSE of the MMSE estimate of f(X) from Y (docs/math.md §4).

An objective is a matrix F whose rows are the functions f estimated together: the histogram uses
F = I (one indicator per bin, MSEs summed), a weighted sum uses one row of values. For a column q of
the table, the gain is mu(q) = sum_f (sum_x f(x) P_x q[x])^2 / (P . q), and
MSE = sum_f E[f(X)^2] - sum_y mu(q_y).
"""

from dataclasses import dataclass

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.validation import float_array


@dataclass(frozen=True)
class Histogram:
    """Estimate the whole histogram: the MSE is summed over all bins (docs/math.md §4)."""

    kind = "histogram"

    def functions(self, k):
        return np.eye(k)

    def to_dict(self):
        return {"kind": self.kind}


@dataclass(frozen=True)
class WeightedSum:
    """Estimate sum_i f(X_i) with f(x) = values[x] (docs/math.md §4, weighted summation)."""

    values: tuple
    kind = "weighted_sum"

    def __init__(self, values):
        values = float_array(values, "objective.values", 1)
        if np.abs(values).max() > 1e100:
            raise ValidationError(f"objective.values reach {np.abs(values).max():g}; they must lie within +-1e100")
        object.__setattr__(self, "values", tuple(values.tolist()))

    def functions(self, k):
        if len(self.values) != k:
            raise ValidationError(f"objective.values has {len(self.values)} entries; it must have one per value of the "
                                  f"prior ({k})")
        return np.array([self.values])

    def to_dict(self):
        return {"kind": self.kind, "values": list(self.values)}


def as_objective(objective):
    """Accept "histogram", a Histogram, a WeightedSum, or a dict from a spec file."""
    if isinstance(objective, (Histogram, WeightedSum)):
        return objective
    if isinstance(objective, str) and objective == "histogram":
        return Histogram()
    if isinstance(objective, dict):
        if objective.get("kind") == "histogram":
            return Histogram()
        if objective.get("kind") == "weighted_sum":
            return WeightedSum(objective.get("values"))
    raise ValidationError(
        f"objective is {objective!r}; it must be 'histogram', ld.Histogram() or ld.WeightedSum(values)")


def gains(columns, prior, objective):
    """mu(q) for each column q (columns as the ROWS of ``columns``, shape (n, k)); 0 where P.q = 0."""
    columns = np.atleast_2d(columns)
    prior = np.asarray(prior, dtype=float)
    weighted = as_objective(objective).functions(prior.size) * prior  # (n_f, k)
    numerators = (columns @ weighted.T) ** 2  # (n, n_f)
    mass = columns @ prior
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mass > 0, numerators.sum(axis=1) / mass, 0.0)


def mse(table, prior, objective="histogram"):
    """Per-user MSE of the MMSE estimate under ``prior`` (docs/math.md §4); ``prior`` may be a Prior."""
    prior = np.asarray(getattr(prior, "probabilities", prior), dtype=float)
    functions = as_objective(objective).functions(prior.size)
    second_moment = float((functions**2 @ prior).sum())
    return second_moment - float(gains(np.asarray(table, dtype=float).T, prior, objective).sum())
