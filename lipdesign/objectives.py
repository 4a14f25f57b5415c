"""What a design optimises (docs/math.md §4, §11). Numpy only.

Population objectives (the estimate users compute from reports, unbiased or maximum likelihood, docs/math.md §11):
- ``Frequencies()``: the histogram of the population; the figure is n x the sum of the variances of the GLS estimate
  at the design prior, given the users' values: tr(M^-1) - 1 with M = Q diag(1/(Q^T P)) Q^T the Fisher information
  (A-optimal design).

Per-user Bayesian objectives (the posterior mean E[f(X) | Y] under the design prior, right when the prior IS the
truth, docs/math.md §4):
- ``Histogram()``: the MSE summed over all bins; ``WeightedSum(values)``: the MSE of the estimated sum of values[X].
  For a column q of the table the gain is mu(q) = sum_f (sum_x f(x) P_x q[x])^2 / (P . q), and
  MSE = sum_f E[f(X)^2] - sum_y mu(q_y).
Every objective has ``value(table, prior)``, the figure a design minimises.
"""

from dataclasses import dataclass

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.validation import float_array

#: Values of a weighted sum or a mean must lie within this (their squares enter every figure).
MAX_VALUE = 1e100


def _values(values, field="objective.values"):
    values = float_array(values, field, 1)
    if np.abs(values).max() > MAX_VALUE:
        raise ValidationError(f"{field} reach {np.abs(values).max():g}; they must lie within +-{MAX_VALUE:g}")
    return tuple(values.tolist())


def _check_length(values, k):
    if len(values) != k:
        raise ValidationError(f"objective.values has {len(values)} entries; it must have one per value of the "
                              f"prior ({k})")


@dataclass(frozen=True)
class Histogram:
    """Bayesian: estimate the whole histogram user by user; the MSE is summed over all bins (docs/math.md §4)."""

    kind = "histogram"
    population = False

    def functions(self, k):
        return np.eye(k)

    def check(self, k):
        """Raise unless the objective fits a prior with k values."""

    def value(self, table, prior):
        return mse(table, prior, self)

    def to_dict(self):
        return {"kind": self.kind}


@dataclass(frozen=True)
class WeightedSum:
    """Bayesian: estimate sum_i f(X_i) with f(x) = values[x] (docs/math.md §4, weighted summation)."""

    values: tuple
    kind = "weighted_sum"
    population = False

    def __init__(self, values):
        object.__setattr__(self, "values", _values(values))

    def functions(self, k):
        _check_length(self.values, k)
        return np.array([self.values])

    def check(self, k):
        _check_length(self.values, k)

    def value(self, table, prior):
        return mse(table, prior, self)

    def to_dict(self):
        return {"kind": self.kind, "values": list(self.values)}


@dataclass(frozen=True)
class Frequencies:
    """The population histogram, estimated without bias: minimise n x the sum of the variances of the GLS (and
    asymptotically MLE) estimate at the design prior, given the users' values (A-optimal, docs/math.md §11)."""

    kind = "frequencies"
    population = True

    def check(self, k):
        """Raise unless the objective fits a prior with k values."""

    def value(self, table, prior):
        """tr(M^-1) - 1 (inf when the table cannot be inverted)."""
        inverse = _inverse_information(table, prior)
        return float(np.trace(inverse) - 1.0) if inverse is not None else float("inf")

    def to_dict(self):
        return {"kind": self.kind}


OBJECTIVES = {"histogram": Histogram, "weighted_sum": WeightedSum, "frequencies": Frequencies}


def as_objective(objective):
    """Accept an objective, "histogram", "frequencies", or a dict from a spec file or an envelope."""
    if isinstance(objective, tuple(OBJECTIVES.values())):
        return objective
    if isinstance(objective, str) and objective in ("histogram", "frequencies"):
        return OBJECTIVES[objective]()
    if isinstance(objective, dict) and objective.get("kind") in OBJECTIVES:
        cls = OBJECTIVES[objective["kind"]]
        return cls(objective.get("values")) if cls is WeightedSum else cls()
    raise ValidationError(f"objective is {objective!r}; it must be ld.Frequencies() ('frequencies'), "
                          "ld.Histogram() ('histogram') or ld.WeightedSum(values)")


def _probabilities(prior):
    return np.asarray(getattr(prior, "probabilities", prior), dtype=float)


def fisher_information(table, frequencies):
    """M = Q diag(1/(Q^T f)) Q^T = sum_y q_y q_y^T / (f . q_y) over the outputs with f . q_y > 0 (docs/math.md
    §11): the information about f in one report."""
    table = np.asarray(table, dtype=float)
    mass = table.T @ _probabilities(frequencies)
    used = mass > 0
    return (table[:, used] / mass[used]) @ table[:, used].T


def _inverse_information(table, prior):
    information = fisher_information(table, prior)
    if np.linalg.matrix_rank(information) < information.shape[0]:
        return None
    return np.linalg.inv(information)


def gains(columns, prior, objective):
    """mu(q) of a Bayesian objective for each column q (columns as the ROWS of ``columns``, shape (n, k)); 0 where
    P.q = 0."""
    columns = np.atleast_2d(columns)
    prior = np.asarray(prior, dtype=float)
    weighted = as_objective(objective).functions(prior.size) * prior  # (n_f, k)
    numerators = (columns @ weighted.T) ** 2  # (n, n_f)
    mass = columns @ prior
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mass > 0, numerators.sum(axis=1) / mass, 0.0)


def mse(table, prior, objective="histogram"):
    """Per-user MSE of the MMSE estimate under ``prior`` (docs/math.md §4); ``prior`` may be a Prior. Bayesian
    objectives only (a population objective's figure is its ``value``)."""
    prior = _probabilities(prior)
    objective = as_objective(objective)
    if objective.population:
        raise ValidationError(f"objective is {objective!r}; mse is the figure of the Bayesian objectives, use "
                              "objective.value(table, prior)")
    functions = objective.functions(prior.size)
    second_moment = float((functions**2 @ prior).sum())
    return second_moment - float(gains(np.asarray(table, dtype=float).T, prior, objective).sum())
