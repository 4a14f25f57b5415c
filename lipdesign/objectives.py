"""What a design optimises (docs/math.md §4, §11). Numpy only.

Population objectives (the estimate users compute from reports, unbiased or maximum likelihood, docs/math.md §11);
their figures are n x variances at the design prior, given the users' values, with M = Q diag(1/(Q^T P)) Q^T the
Fisher information of one report:
- ``Frequencies()`` (the default of ``ld.design``): the histogram of the population; the figure is n x the sum of the
  variances of the GLS estimate, tr(M^-1) - 1 (A-optimal design).
- ``Mean(values)``: the mean (or sum) of values[X]; the figure is n x the variance of the unbiased estimate of the
  mean, c^T M^+ c - sum_x P_x c_x^2 with c = values (c-optimal design; the table need not be invertible, c must lie
  in the range of M).

Per-user Bayesian objectives (the posterior mean E[f(X) | Y] under the design prior, right only when the prior IS
the truth: with a drifted population these estimates shrink toward the prior, docs/math.md §4, §11):
- ``BayesHistogram()``: the MSE summed over all bins; ``BayesSum(values)``: the MSE of the estimated sum of
  values[X]. For a column q of the table the gain is mu(q) = sum_f (sum_x f(x) P_x q[x])^2 / (P . q), and
  MSE = sum_f E[f(X)^2] - sum_y mu(q_y). Their JSON kinds, "histogram" and "weighted_sum", are those of files written
  before the population objectives existed, so those files keep their meaning; ``Histogram`` and ``WeightedSum``
  are the old names of the classes (deprecated: reading them warns; removed in 0.4.0).
Every objective has ``value(table, prior)``, the figure a design minimises, and ``check(k)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.validation import float_array

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy.typing as npt

    from lipdesign.model import Prior

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
class BayesHistogram:
    """Bayesian: the posterior mean of the histogram user by user under the design prior; the MSE is summed over all
    bins (docs/math.md §4). Right only when the prior is the truth; for the population histogram use Frequencies.

    Its figure is the per-user MSE of the posterior means E[1(X=x) | Y] summed over the bins (``mse``). Its JSON
    kind is ``"histogram"``; ``population`` is False. It takes no parameters.

    See Also
    --------
    Frequencies : The population histogram, estimated without bias.
    mse : The figure of a Bayesian objective.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> table = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5  # randomized response, e^eps = 3
    >>> round(ld.BayesHistogram().value(table, prior), 4)
    0.5245
    >>> mechanism = ld.design(prior, ld.LIP(1.0), ld.BayesHistogram(), baselines=False)
    >>> round(ld.BayesHistogram().value(mechanism.table, prior), 4)
    0.4132
    """

    kind = "histogram"
    population = False

    def functions(self, k: int) -> npt.NDArray[np.float64]:
        """The functions f whose posterior means are estimated: the indicators of the k values.

        Parameters
        ----------
        k : int
            The number of values of X.

        Returns
        -------
        numpy.ndarray
            The (k, k) identity, one function per row (f(x) = row[x]).
        """
        return np.eye(k)

    def check(self, k: int) -> None:
        """Raise unless the objective fits a prior with k values.

        Parameters
        ----------
        k : int
            The number of values of the prior (every k fits).
        """

    def value(self, table: npt.ArrayLike, prior: Prior | npt.ArrayLike) -> float:
        """The figure a design minimises: the per-user MSE under ``prior``, summed over the bins (``mse``).

        Parameters
        ----------
        table : array_like of float, shape (k, n)
            The table, Pr[Y=y | X=x], one row per value.
        prior : Prior or array_like of float
            The prior the posterior means use.

        Returns
        -------
        float
            The MSE.

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> prior = ld.Prior([0.5, 0.3, 0.2])
        >>> table = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5  # randomized response, e^eps = 3
        >>> round(ld.BayesHistogram().value(table, prior), 4)
        0.5245
        """
        return mse(table, prior, self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the objective (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"kind": "histogram"}``.
        """
        return {"kind": self.kind}


@dataclass(frozen=True)
class BayesSum:
    """Bayesian: the posterior mean of sum_i f(X_i) with f(x) = values[x] under the design prior (docs/math.md §4,
    weighted summation). Right only when the prior is the truth; for the population mean or sum use Mean.

    Its figure is the per-user MSE of E[f(X) | Y] (``mse``). Its JSON kind is ``"weighted_sum"``; ``population``
    is False.

    Parameters
    ----------
    values : array_like of float, shape (k,)
        f(x) for each value x, finite and within +-1e100.

    Attributes
    ----------
    values : tuple of float
        The values, as floats.

    Raises
    ------
    ValidationError
        When ``values`` is not a one-dimensional array of finite numbers within +-1e100; a design or ``check``
        refuses values of another length than the prior.

    See Also
    --------
    Mean : The population mean, estimated without bias.
    mse : The figure of a Bayesian objective.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> table = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5  # randomized response, e^eps = 3
    >>> objective = ld.BayesSum([0, 1, 2])
    >>> objective
    BayesSum(values=(0.0, 1.0, 2.0))
    >>> round(objective.value(table, prior), 4)
    0.5183
    """

    values: tuple
    kind = "weighted_sum"
    population = False

    def __init__(self, values: npt.ArrayLike) -> None:
        object.__setattr__(self, "values", _values(values))

    def functions(self, k: int) -> npt.NDArray[np.float64]:
        """The function f whose posterior mean is estimated, as a row: f(x) = values[x].

        Parameters
        ----------
        k : int
            The number of values of X.

        Returns
        -------
        numpy.ndarray
            ``values`` as a (1, k) array.

        Raises
        ------
        ValidationError
            When ``values`` does not have k entries.
        """
        _check_length(self.values, k)
        return np.array([self.values])

    def check(self, k: int) -> None:
        """Raise unless the objective fits a prior with k values.

        Parameters
        ----------
        k : int
            The number of values of the prior.

        Raises
        ------
        ValidationError
            When ``values`` does not have k entries.
        """
        _check_length(self.values, k)

    def value(self, table: npt.ArrayLike, prior: Prior | npt.ArrayLike) -> float:
        """The figure a design minimises: the per-user MSE of E[f(X) | Y] under ``prior`` (``mse``).

        Parameters
        ----------
        table : array_like of float, shape (k, n)
            The table, Pr[Y=y | X=x], one row per value.
        prior : Prior or array_like of float
            The prior the posterior means use.

        Returns
        -------
        float
            The MSE.
        """
        return mse(table, prior, self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the objective (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"kind": "weighted_sum", "values": [...]}``.
        """
        return {"kind": self.kind, "values": list(self.values)}


@dataclass(frozen=True)
class Frequencies:
    """The population histogram, estimated without bias: minimise n x the sum of the variances of the GLS (and
    asymptotically MLE) estimate at the design prior, given the users' values (A-optimal, docs/math.md §11).

    The default objective of ``ld.design``. Its figure is tr(M^-1) - 1, with M = Q diag(1/(Q^T P)) Q^T the Fisher
    information of one report: divided by n, the sum of the variances of the n users' estimated frequencies. Its
    JSON kind is ``"frequencies"``; ``population`` is True. It takes no parameters.

    See Also
    --------
    BayesHistogram : The Bayesian (per-user) histogram objective.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> table = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5  # randomized response, e^eps = 3
    >>> round(ld.Frequencies().value(table, prior), 4)
    3.5
    >>> mechanism = ld.design(prior, ld.LIP(1.0), ld.Frequencies(), baselines=False)
    >>> round(ld.Frequencies().value(mechanism.table, prior), 4)
    1.2843
    """

    kind = "frequencies"
    population = True

    def check(self, k: int) -> None:
        """Raise unless the objective fits a prior with k values.

        Parameters
        ----------
        k : int
            The number of values of the prior (every k fits).
        """

    def value(self, table: npt.ArrayLike, prior: Prior | npt.ArrayLike) -> float:
        """tr(M^-1) - 1 (inf when the table cannot be inverted).

        Parameters
        ----------
        table : array_like of float, shape (k, n)
            The table, Pr[Y=y | X=x], one row per value.
        prior : Prior or array_like of float
            The design prior P (the users' frequencies M is evaluated at).

        Returns
        -------
        float
            The sum of the variances of the estimated frequencies times n, or inf.

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> prior = ld.Prior([0.5, 0.3, 0.2])
        >>> ld.Frequencies().value(np.full((3, 2), 0.5), prior)
        inf
        """
        inverse = _inverse_information(table, prior)
        return float(np.trace(inverse) - 1.0) if inverse is not None else float("inf")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the objective (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"kind": "frequencies"}``.
        """
        return {"kind": self.kind}


@dataclass(frozen=True)
class Mean:
    """The population mean of f(X) with f(x) = values[x] (or its sum, n x the mean), estimated without bias: minimise
    n x the variance of the unbiased estimate at the design prior, given the users' values (c-optimal, docs/math.md
    §11). A table need not be invertible for this: c must lie in the range of its information matrix.

    Its figure is c^T M^+ c - sum_x P_x c_x^2 with c = values (c-optimal design). Its JSON kind is ``"mean"``;
    ``population`` is True.

    Parameters
    ----------
    values : array_like of float, shape (k,)
        f(x) for each value x, finite and within +-1e100.

    Attributes
    ----------
    values : tuple of float
        The values, as floats.

    Raises
    ------
    ValidationError
        When ``values`` is not a one-dimensional array of finite numbers within +-1e100; a design or ``check``
        refuses values of another length than the prior.

    See Also
    --------
    BayesSum : The Bayesian (per-user) weighted sum.
    Range : Maps a raw numeric attribute to [-1, 1].

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> table = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5  # randomized response, e^eps = 3
    >>> objective = ld.Mean([0, 1, 2])
    >>> round(objective.value(table, prior), 4)
    3.55
    >>> mechanism = ld.design(prior, ld.LIP(1.0), objective, baselines=False)
    >>> round(objective.value(mechanism.table, prior), 4)
    1.1406
    >>> ld.Mean([0, 1]).check(prior.k)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: objective.values has 2 entries; it must have one per value of the prior (3)
    """

    values: tuple
    kind = "mean"
    population = True

    def __init__(self, values: npt.ArrayLike) -> None:
        object.__setattr__(self, "values", _values(values))

    def check(self, k: int) -> None:
        """Raise unless the objective fits a prior with k values.

        Parameters
        ----------
        k : int
            The number of values of the prior.

        Raises
        ------
        ValidationError
            When ``values`` does not have k entries.
        """
        _check_length(self.values, k)

    def value(self, table: npt.ArrayLike, prior: Prior | npt.ArrayLike) -> float:
        """c^T M^+ c - sum_x P_x c_x^2 (inf when c is outside the range of M: no unbiased estimate exists).

        Parameters
        ----------
        table : array_like of float, shape (k, n)
            The table, Pr[Y=y | X=x], one row per value.
        prior : Prior or array_like of float
            The design prior P (the users' frequencies M is evaluated at).

        Returns
        -------
        float
            The variance of the unbiased estimate of the mean times n, or inf.
        """
        p = _probabilities(prior)
        c = np.asarray(self.values)
        quadratic = mean_quadratic(fisher_information(table, p), c)
        return float(quadratic - p @ c**2) if np.isfinite(quadratic) else float("inf")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the objective (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"kind": "mean", "values": [...]}``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.Mean([0, 1, 2]).to_dict()
        {'kind': 'mean', 'values': [0.0, 1.0, 2.0]}
        """
        return {"kind": self.kind, "values": list(self.values)}


#: The old names of the Bayesian objectives (lipdesign 0.1 and 0.2), deprecated: reading one warns.
_OLD_NAMES = {"Histogram": BayesHistogram, "WeightedSum": BayesSum}


def __getattr__(name: str) -> Any:
    if name in _OLD_NAMES:
        import sys
        import warnings

        new = _OLD_NAMES[name].__name__
        through_package = sys._getframe(1).f_globals.get("__name__") == "lipdesign"  # ld.Histogram: blame the caller
        warnings.warn(f"ld.{name} is deprecated since 0.3.0 and will be removed in 0.4.0: it is ld.{new} (a Bayesian "
                      f"objective; for the population's frequencies use ld.Frequencies())", DeprecationWarning,
                      stacklevel=3 if through_package else 2)
        return _OLD_NAMES[name]
    raise AttributeError(f"module 'lipdesign.objectives' has no attribute {name!r}")

OBJECTIVES: dict[str, Any] = {"histogram": BayesHistogram, "weighted_sum": BayesSum, "frequencies": Frequencies,
                              "mean": Mean}
_WITH_VALUES = (BayesSum, Mean)


def as_objective(objective: Any) -> BayesHistogram | BayesSum | Frequencies | Mean:
    """Accept an objective, "frequencies", "histogram" (BayesHistogram), or a dict from a spec file or an
    envelope."""
    if isinstance(objective, (BayesHistogram, BayesSum, Frequencies, Mean)):  # OBJECTIVES' classes
        return objective
    if isinstance(objective, str) and objective in ("histogram", "frequencies"):
        return OBJECTIVES[objective]()
    if isinstance(objective, dict) and objective.get("kind") in OBJECTIVES:
        cls = OBJECTIVES[objective["kind"]]
        return cls(objective.get("values")) if cls in _WITH_VALUES else cls()
    raise ValidationError(f"objective is {objective!r}; it must be ld.Frequencies() ('frequencies'), "
                          "ld.Mean(values), ld.BayesHistogram() ('histogram') or ld.BayesSum(values)")


def _probabilities(prior: Any) -> npt.NDArray[np.float64]:
    return np.asarray(getattr(prior, "probabilities", prior), dtype=float)


def fisher_information(table: npt.ArrayLike, frequencies: Prior | npt.ArrayLike) -> npt.NDArray[np.float64]:
    """M = Q diag(1/(Q^T f)) Q^T = sum_y q_y q_y^T / (f . q_y) over the outputs with f . q_y > 0 (docs/math.md
    §11): the information about f in one report."""
    table = np.asarray(table, dtype=float)
    mass = table.T @ _probabilities(frequencies)
    used = mass > 0
    return (table[:, used] / mass[used]) @ table[:, used].T


#: Eigenvalues of M below this fraction of the largest are taken as zero (M has entries of order 1 to e^eps).
RANK_RTOL = 1e-10


def mean_quadratic(information: npt.NDArray[np.float64], values: npt.ArrayLike) -> float:
    """c^T M^+ c, or inf when c = ``values`` has a component outside the range of M (no unbiased estimate of c . f
    exists then, docs/math.md §11)."""
    eigenvalues, vectors = np.linalg.eigh(information)
    kept = eigenvalues > RANK_RTOL * eigenvalues.max()
    coordinates = vectors.T @ values
    if np.abs(coordinates[~kept]).max(initial=0.0) > 1e-8 * max(1.0, np.abs(values).max()):
        return float("inf")
    return float((coordinates[kept] ** 2 / eigenvalues[kept]).sum())


def _inverse_information(table, prior):
    information = fisher_information(table, prior)
    if np.linalg.matrix_rank(information) < information.shape[0]:
        return None
    return np.linalg.inv(information)


def gains(columns: npt.ArrayLike, prior: npt.ArrayLike,
          objective: BayesHistogram | BayesSum | Frequencies | Mean | str | Mapping[str, Any],
          ) -> npt.NDArray[np.float64]:
    """mu(q) of a Bayesian objective for each column q (columns as the ROWS of ``columns``, shape (n, k)); 0 where
    P.q = 0."""
    columns = np.atleast_2d(columns)
    prior = np.asarray(prior, dtype=float)
    bayesian = cast("BayesHistogram | BayesSum", as_objective(objective))  # mu(q) is a Bayesian objective's
    weighted = bayesian.functions(prior.size) * prior  # (n_f, k)
    numerators = (columns @ weighted.T) ** 2  # (n, n_f)
    mass = columns @ prior
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mass > 0, numerators.sum(axis=1) / mass, 0.0)


def mse(table: npt.ArrayLike, prior: Prior | npt.ArrayLike,
        objective: BayesHistogram | BayesSum | Frequencies | Mean | str | Mapping[str, Any] = "histogram") -> float:
    """Per-user MSE of the MMSE estimate under ``prior`` (docs/math.md §4); ``prior`` may be a Prior. Bayesian
    objectives only (a population objective's figure is its ``value``).

    MSE = sum_f E[f(X)^2] - sum_y mu(q_y), with mu(q) = sum_f (sum_x f(x) P_x q[x])^2 / (P . q) for each column q
    of the table: the error of the posterior means E[f(X) | Y] of one user, right only when ``prior`` is the
    truth (on a drifted population they shrink toward it, docs/math.md §11).

    Parameters
    ----------
    table : array_like of float, shape (k, n)
        The table, Pr[Y=y | X=x], one row per value.
    prior : Prior or array_like of float
        The prior the posterior means use.
    objective : BayesHistogram, BayesSum, str or mapping, default "histogram"
        A Bayesian objective, ``"histogram"`` (``BayesHistogram()``), or its JSON form (``to_dict``).

    Returns
    -------
    float
        The per-user MSE.

    Raises
    ------
    ValidationError
        When ``objective`` is not an objective, or is a population objective (Frequencies, Mean: their figure is
        ``objective.value(table, prior)``), or its values do not fit the prior.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> table = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5
    >>> round(ld.mse(table, prior), 4)
    0.5245
    >>> round(ld.mse(table, prior, ld.BayesSum([0, 1, 2])), 4)
    0.5183
    >>> ld.mse(table, prior, ld.Frequencies())
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: objective is Frequencies(); mse is the figure of the Bayesian objectives, use
    objective.value(table, prior)
    """
    prior = _probabilities(prior)
    objective = as_objective(objective)
    if objective.population:
        raise ValidationError(f"objective is {objective!r}; mse is the figure of the Bayesian objectives, use "
                              "objective.value(table, prior)")
    functions = objective.functions(prior.size)  # type: ignore[union-attr]  # population objectives refused above
    second_moment = float((functions**2 @ prior).sum())
    return second_moment - float(gains(np.asarray(table, dtype=float).T, prior, objective).sum())
