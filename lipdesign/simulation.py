"""Simulation: draw a population, perturb, aggregate, estimate, and compare with theory, for any mechanism through
the contract only (docs/math.md §8, §9).

``simulate(mechanism, n, truth=..., repetitions=R)`` puts every estimated quantity (a frequency, a mean, a sum)
beside the truth of the simulated population, its expectation (the truth for an unbiased estimator) and its
closed-form standard deviation; over R repetitions it reports the empirical bias, spread and interval coverage,
and the squared error of the whole estimate: the accuracy of the estimate the user computes, on that population.
By default it also runs a population drifted away from the design prior, where a shrinking estimator shows.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from lipdesign.errors import ShrinkageWarning, ValidationError, require
from lipdesign.mechanisms.estimate import Estimate
from lipdesign.mechanisms.sampling import as_generator
from lipdesign.validation import fmt, integer, probability_vector, real_number

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy.typing as npt

    from lipdesign.mechanisms.base import Mechanism, RandomSource

require("ld.simulate", "design", "scipy")

from scipy import stats  # noqa: E402 (after the check that names the extra)

#: Largest simulated population.
MAX_USERS = 10**8

#: Largest n times the width of the input (k values or d coordinates): reports such as OUE's n x k bits are held
#: in memory.
MAX_ENTRIES = 10**9

#: Largest width (k or d): every entry costs about 130 bytes of estimates and variances.
MAX_WIDTH = 10**7


#: Total-variation distance of the drifted population that ``simulate`` runs beside the design prior.
DRIFT = 0.2

#: Largest number of repetitions.
MAX_REPETITIONS = 10**5


@dataclass(frozen=True)
class Simulation:
    """One population of ``n`` users (``population``: what it was drawn from), perturbed and estimated
    ``repetitions`` times. Per estimated quantity (flattened in ``names`` order): the truth of this population, the
    expected estimate (the truth for an unbiased estimator), the closed-form standard deviation of one estimate given
    the users' values, every repetition's estimate, and whether its confidence interval covered the truth.
    ``drifted``: the same run on a population drifted from the design prior (``simulate`` adds it by default)."""

    n: int
    method: str
    names: list
    truth: np.ndarray
    expected: np.ndarray
    estimates: np.ndarray  # (repetitions, m)
    std: np.ndarray
    covered: np.ndarray  # (repetitions, m) of 0/1, nan where no interval exists
    population: str = "the mechanism's default population"
    level: float = 0.95
    interval: str = ""
    drifted: "Simulation | None" = None

    @property
    def repetitions(self) -> int:
        """The number of repetitions (rows of ``estimates``)."""
        return self.estimates.shape[0]

    @property
    def estimate(self) -> npt.NDArray[np.float64]:
        """The mean estimate over the repetitions (the estimate itself when there is one)."""
        return self.estimates.mean(axis=0)

    @property
    def bias(self) -> npt.NDArray[np.float64]:
        """Mean estimate - truth, per quantity (its own standard error is std / sqrt(repetitions))."""
        return self.estimate - self.truth

    @property
    def empirical_std(self) -> npt.NDArray[np.float64]:
        """The standard deviation of the estimates over the repetitions (nan for one repetition)."""
        if self.repetitions < 2:
            return np.full(self.truth.shape, np.nan)
        return self.estimates.std(axis=0, ddof=1)

    @property
    def coverage(self) -> npt.NDArray[np.float64]:
        """The fraction of repetitions whose interval covered the truth, per quantity."""
        return self.covered.mean(axis=0)

    @property
    def z_scores(self) -> npt.NDArray[np.float64]:
        """(mean estimate - expected) / (std / sqrt(repetitions)); nan where there is nothing to estimate (e.g. an
        empty public bucket)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self.estimate - self.expected) / (self.std / np.sqrt(self.repetitions))

    @property
    def largest_z(self) -> float:
        """The largest |z| over the finite z-scores (nan if there is none)."""
        z = np.abs(self.z_scores[np.isfinite(self.z_scores)])
        return float(z.max()) if z.size else float("nan")

    @property
    def p_value(self) -> float:
        """Bonferroni p-value of the largest |z|: min(1, m Pr[|N(0, 1)| >= largest |z|]) over the m finite
        z-scores. Valid whatever their dependence (estimated frequencies sum to 1, so a chi-square of sum z^2 would
        not be), for estimates close to normal (large n)."""
        z = self.z_scores[np.isfinite(self.z_scores)]
        return float(min(1.0, z.size * 2.0 * stats.norm.sf(self.largest_z))) if z.size else float("nan")

    @property
    def squared_error(self) -> float:
        """sum of (estimate - truth)^2 over the finite entries, averaged over the repetitions: the error users get."""
        errors = (self.estimates - self.truth) ** 2
        finite = np.isfinite(errors).all(axis=0)
        return float(errors[:, finite].sum(axis=1).mean())

    @property
    def expected_squared_error(self) -> float:
        """E[sum of (estimate - truth)^2] = sum of variances + squared bias (the bias is expected - truth)."""
        finite = np.isfinite(self.std) & np.isfinite(self.expected) & np.isfinite(self.truth)
        return float(np.sum(self.std[finite] ** 2 + (self.expected - self.truth)[finite] ** 2))

    def __repr__(self) -> str:
        return (f"Simulation({self.n} users from {self.population}, method {self.method!r}, {self.repetitions} "
                "repetitions; .summary() for the table)")

    def __str__(self) -> str:
        return self.summary()

    def summary(self) -> str:
        """A table per population: truth, mean estimate, bias, empirical and theoretical sd, coverage.

        Then the largest z-score of the mean estimate against its expectation, the squared error beside its
        expectation, and the drifted population's table when there is one (what ``print(simulation)`` shows).

        Returns
        -------
        str
            The tables, one line per estimated quantity.
        """
        lines = [(f"{self.n} users drawn from {self.population}; method {self.method!r}, {self.repetitions} "
                 f"repetition{'s' if self.repetitions > 1 else ''}")]
        width = max(len(name) for name in self.names)
        lines.append(f"{'estimate of':>{width}}  {'true':>9}  {'mean est':>9}  {'bias':>9}  {'emp. sd':>9}  "
                     f"{'theory sd':>9}  {'cover':>5}")
        for row in zip(self.names, self.truth, self.estimate, self.bias, self.empirical_std, self.std, self.coverage):
            cover = f"{row[6]:5.2f}" if np.isfinite(row[6]) else "    -"
            lines.append(f"{row[0]:>{width}}  " + "  ".join(f"{value:9.3g}" for value in row[1:6]) + f"  {cover}")
        finite = np.isfinite(self.z_scores)
        skipped = f"; {np.count_nonzero(~finite)} without reports skipped" if not finite.all() else ""
        lines.append(f"largest |z| of the mean estimate against its expectation = {self.largest_z:.2f} over "
                     f"{np.count_nonzero(finite)} estimates{skipped} (Bonferroni p-value {self.p_value:.3g})")
        lines.append(f"squared error summed over the entries: empirical {self.squared_error:.6g}, theoretical "
                     f"{self.expected_squared_error:.6g} (variances + squared bias, for this population)")
        if np.isfinite(self.coverage).any():
            lines.append(f"coverage: the share of {self.level:.0%} intervals ({self.interval}) that held the truth")
        if self.method in ("mle", "ibu") and (self.truth[: self.estimates.shape[1]] == 0).any():
            lines.append("the theory column is the MLE's large-sample one; where the truth is 0 the MLE sits at the "
                         "edge of the simplex, above the truth by about 0.4 sd and less spread (docs/math.md §11)")
        if self.drifted is not None:
            lines += ["", self.drifted.summary()]
        return "\n".join(lines)


def _users(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= n <= MAX_USERS:
        raise ValidationError(f"n is {fmt(n)}; a simulation needs an integer number of users in 2..{MAX_USERS}")
    return int(n)


def _check_size(mechanism, n):
    domain = mechanism.input_domain
    if domain.kind == "strings":
        name, width = "the number of candidates", len(domain.names())
    else:
        name, width = ("k", domain.k) if domain.kind == "categorical" else ("d", domain.d)
    if width > MAX_WIDTH:
        raise ValidationError(f"{name} is {width}; simulate handles {name} <= {MAX_WIDTH:.0e} (the population, the "
                              "estimates and their variances are held in memory)")
    if n * width > MAX_ENTRIES:
        raise ValidationError(f"n is {n}; n times the {name} of {mechanism!r} must stay below {MAX_ENTRIES:.0e} "
                              "(the reports are held in memory)")


def drifted(frequencies: npt.ArrayLike, distance: float = DRIFT) -> npt.NDArray[np.float64]:
    """A distribution at total-variation distance ``distance`` from ``frequencies`` (or as far as the move allows):
    mass moves from the values the prior holds most likely to those it holds least likely, by mixing toward the
    prior's values in reversed order of probability. The drift a shrinking (MMSE) estimator cannot follow."""
    p = np.asarray(frequencies, dtype=float)
    order = np.argsort(p, kind="stable")
    reversed_prior = np.empty_like(p)
    reversed_prior[order] = p[order[::-1]]
    distance_full = 0.5 * np.abs(reversed_prior - p).sum()
    if distance_full == 0:  # uniform: move toward the first value instead
        target = np.zeros_like(p)
        target[0] = 1.0
        reversed_prior, distance_full = target, 0.5 * np.abs(target - p).sum()
    mix = min(1.0, distance / distance_full)
    return (1 - mix) * p + mix * reversed_prior


def _truth(mechanism, truth):
    domain = mechanism.input_domain
    if domain.kind == "strings":  # a distribution over the candidates
        return probability_vector(truth, "truth", length=len(domain.names()))
    if domain.kind != "categorical":
        raise ValidationError(f"truth is given; {type(mechanism).__name__} takes numeric values, so pass values= "
                              "instead of a distribution")
    return probability_vector(truth, "truth", length=domain.k)


def simulate(mechanism: Mechanism, n: int | None = None, rng: RandomSource = None, *,
             values: npt.ArrayLike | None = None, truth: npt.ArrayLike | None = None, repetitions: int = 1,
             method: str | None = None, level: float = 0.95, drift: bool = True,
             progress: Callable[[int, int], object] | None = None) -> Simulation:
    """Run ``mechanism`` on a population of ``n`` users ``repetitions`` times and compare every estimate with its
    closed form (the CLI's ``simulate``; docs/math.md §8, §9).

    The users are ``values`` when given, else n users drawn once from ``truth`` (the TRUE distribution of the
    population; default: ``mechanism.input_domain.sample``, i.e. the design prior for a designed table, Zipf(1)
    frequencies or normal numeric values otherwise). Each repetition perturbs the same users afresh, so the spread of
    the estimates is their variance given the users' values. By default (categorical inputs, no ``values`` or
    ``truth`` given) it also runs a population at TV distance DRIFT from the default (``result.drifted``), where an
    estimator that shrinks toward the prior shows its bias. Users get ids 0..n-1 where public randomness is keyed by
    user id.

    Parameters
    ----------
    mechanism : Mechanism
        Any mechanism (through its contract: ``perturb``, ``aggregate``, ``estimate`` and their closed forms).
    n : int, optional
        The number of users (2..10^8); required unless ``values`` is given (then it must match their number).
    rng : numpy.random.Generator or int, optional
        The randomness of the population and of the reports: a seed, a Generator or None (fresh entropy).
    values : array_like, optional
        The users' values themselves (one per user; a row per user for numeric inputs). Exclusive with ``truth``.
    truth : array_like of float, optional
        The distribution the n users are drawn from (categorical inputs; one probability per value). Exclusive with
        ``values``.
    repetitions : int, default 1
        How many times the same users are perturbed and estimated (1..10^5).
    method : str, optional
        The estimation method ("unbiased", "mle", "ibu", "mmse", ... as the mechanism offers); None: the
        mechanism's default.
    level : float, default 0.95
        The confidence of the intervals whose coverage is counted (the estimate's own interval,
        ``Estimate.confidence_interval``, where every entry has a standard error, else the normal interval with the
        closed-form sd); strictly between 0 and 1.
    drift : bool, default True
        Also run the drifted population (categorical inputs, no ``values`` or ``truth`` given).
    progress : callable, optional
        None, or a callable receiving ``(done, total)`` after every repetition: the repetitions run so far and in all
        (``repetitions``, twice that with the drifted population), so it is called exactly ``total`` times, the last
        with ``done == total``.

    Returns
    -------
    Simulation
        Per estimated quantity: the truth of the population, the expected estimate, the closed-form sd, every
        repetition's estimate and whether its interval covered the truth; ``bias``, ``empirical_std``,
        ``coverage``, ``squared_error`` and ``p_value`` summarise them, ``drifted`` holds the drifted run and
        ``print`` shows the tables.

    Raises
    ------
    ValidationError
        ``n``, ``repetitions`` or ``level`` out of range, both ``values`` and ``truth``, ``n`` that does not match
        ``values``, ``truth`` for numeric inputs, a population too large to hold in memory, or a ``progress`` that
        is not callable.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0), baselines=False)
    >>> result = ld.simulate(mechanism, 10_000, rng=0, repetitions=20)
    >>> result
    Simulation(10000 users from the design prior, method 'unbiased', 20 repetitions; .summary() for the table)
    >>> print(np.round(result.truth, 2), np.round(result.estimate, 2))
    [0.5 0.3 0.2] [0.5 0.3 0.2]
    >>> print(result.drifted.population)
    a drifted population (TV 0.2 from the design prior)

    A fixed protocol on a population drawn from a given distribution:

    >>> result = ld.simulate(ld.mechanisms.GRR(1.0, 3), 5_000, rng=0, truth=[0.6, 0.3, 0.1])
    >>> print(result)
    5000 users drawn from the given truth; method 'unbiased', 1 repetition
     estimate of       true   mean est       bias    emp. sd  theory sd  cover
    frequency[0] ...
    >>> ld.simulate(mechanism, 1)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: n is 1; a simulation needs an integer number of users in 2..100000000
    """
    generator = as_generator(rng)
    repetitions = integer(repetitions, "repetitions", low=1, high=MAX_REPETITIONS)
    if progress is not None and not callable(progress):
        raise ValidationError(f"progress is {fmt(progress)}; it must be None or a callable taking (repetitions done, "
                              "repetitions in all)")
    level = real_number(level, "level")
    if not 0 < level < 1:
        raise ValidationError(f"level is {fmt(level)}; it must lie strictly between 0 and 1")
    if values is not None and truth is not None:
        raise ValidationError("values and truth are both given; the population is either the users' values or drawn "
                              "from a distribution")
    categorical = mechanism.input_domain.kind == "categorical"
    population = "the mechanism's default population"
    if values is None:
        n = _users(n)
        _check_size(mechanism, n)
        if truth is None:
            values = mechanism.input_domain.sample(n, generator)
            if hasattr(mechanism, "prior"):
                population = "the design prior"
        else:
            frequencies = _truth(mechanism, truth)
            values = generator.choice(frequencies.size, size=n, p=frequencies)
            if mechanism.input_domain.kind == "strings":  # the draws index the candidates
                values = np.asarray(getattr(mechanism.input_domain, "candidates"), dtype=object)[values]
            population = "the given truth"
    else:
        values = np.asarray(values)
        if n is not None and n != len(values):
            raise ValidationError(f"n is {fmt(n)} but values has {len(values)} rows; give one of them, or both alike")
        n = _users(len(values))
        _check_size(mechanism, n)
        population = "the given values"
    drifting = drift and categorical and truth is None and population != "the given values"
    total, done = repetitions * (2 if drifting else 1), itertools.count(1)
    tick = None if progress is None else lambda: progress(next(done), total)
    result = _run(mechanism, values, generator, repetitions, method, level, population, tick)
    if drifting:
        base = getattr(mechanism, "prior", None)
        base = base.probabilities if base is not None else mechanism.input_domain.truth(values)
        moved = drifted(base, DRIFT)
        users = generator.choice(moved.size, size=n, p=moved)
        label = f"a drifted population (TV {0.5 * np.abs(moved - base).sum():.2g} from {population})"
        result = replace(result, drifted=_run(mechanism, users, generator, repetitions, method, level, label, tick))
    return result


def _flat(part):
    """An estimate, or a mixed tuple's per-attribute list of expectations or variances, as one flat vector."""
    if isinstance(part, list):
        return np.hstack(np.asarray(part, dtype=object)).astype(float)  # type: ignore[call-overload]  # numpy's stubs: hstack takes an object array (of arrays) too
    return np.atleast_1d(np.asarray(part, dtype=float))


def _run(mechanism, values, generator, repetitions, method, level, population, tick=None):
    """The Simulation of ``repetitions`` runs on ``values``; ``tick()`` (None or a callable) after each run."""
    n = len(values)
    user_ids = np.arange(n) if mechanism.uses_user_ids else None
    method = mechanism.default_method if method is None else method
    pop, size = mechanism.population_of(values)
    truth = _flat(mechanism.estimand(values))
    expected = _flat(mechanism.expected_estimate(pop, size, method=method, user_ids=user_ids))
    std = np.sqrt(_flat(mechanism.variance(pop, size, method=method, user_ids=user_ids)))
    z = stats.norm.ppf(0.5 + level / 2)
    estimates, covered, interval = [], [], "normal, closed-form sd"
    for _ in range(repetitions):
        reports = mechanism.perturb(values, rng=generator, user_ids=user_ids)
        with warnings.catch_warnings():  # the shrinkage warning is the point of a drifted run, said once below
            warnings.simplefilter("ignore", ShrinkageWarning)
            estimate = mechanism.estimate(mechanism.aggregate(reports), method=method)
        flat = _flat(estimate)
        estimates.append(flat)
        if isinstance(estimate, Estimate) and np.isfinite(estimate.standard_errors).all():
            low, high = (np.atleast_1d(bound) for bound in estimate.confidence_interval(level))
            interval = {"categorical": "the estimate's plug-in standard errors",
                        "strings": "the estimate's binomial standard errors"}.get(
                mechanism.input_domain.kind, "the estimate's sample-variance standard errors")
        else:
            low, high = flat - z * std, flat + z * std
        inside = ((low <= truth) & (truth <= high)).astype(float)
        inside[~np.isfinite(low) | ~np.isfinite(high)] = np.nan
        covered.append(inside)
        if tick is not None:
            tick()
    if method == "mmse":
        warnings.warn("method 'mmse' shrinks toward the design prior: its bias shows on a drifted population",
                      ShrinkageWarning, stacklevel=3)
    return Simulation(n, method, list(mechanism.estimand_names()), truth, expected, np.array(estimates), std,
                      np.array(covered), population, level, interval)
