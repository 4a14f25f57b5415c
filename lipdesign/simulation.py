"""Simulation: draw a population, perturb, aggregate, estimate, and compare with theory, for any mechanism through
the contract only (docs/math.md §8, §9).

``simulate(mechanism, n)`` puts every estimated quantity (a frequency, a mean, a sum) beside the truth of the
simulated population, its expectation (the truth for an unbiased estimator) and its closed-form standard deviation,
and sums the squared error of the whole estimate: the accuracy of the estimate the user computes, on that
population.
"""

from dataclasses import dataclass

import numpy as np
from scipy import stats

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.sampling import as_generator
from lipdesign.validation import fmt

#: Largest simulated population.
MAX_USERS = 10**8

#: Largest n times the width of the input (k values or d coordinates): reports such as OUE's n x k bits are held
#: in memory.
MAX_ENTRIES = 10**9

#: Largest width (k or d): every entry costs about 130 bytes of estimates and variances.
MAX_WIDTH = 10**7


@dataclass(frozen=True)
class Simulation:
    """Per estimated quantity: its name, the truth in the simulated population, the expected estimate, the
    estimate and the closed-form standard deviation (all flattened in ``names`` order)."""

    n: int
    method: str
    names: list
    truth: np.ndarray
    expected: np.ndarray
    estimate: np.ndarray
    std: np.ndarray

    @property
    def z_scores(self):
        """(estimate - expected) / std; nan where there is nothing to estimate (e.g. an empty public bucket)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self.estimate - self.expected) / self.std

    @property
    def largest_z(self):
        """The largest |z| over the finite z-scores (nan if there is none)."""
        z = np.abs(self.z_scores[np.isfinite(self.z_scores)])
        return float(z.max()) if z.size else float("nan")

    @property
    def p_value(self):
        """Bonferroni p-value of the largest |z|: min(1, m Pr[|N(0, 1)| >= largest |z|]) over the m finite
        z-scores. Valid whatever their dependence (estimated frequencies sum to 1, so a chi-square of sum z^2 would
        not be), for estimates close to normal (large n)."""
        z = self.z_scores[np.isfinite(self.z_scores)]
        return float(min(1.0, z.size * 2.0 * stats.norm.sf(self.largest_z))) if z.size else float("nan")

    @property
    def squared_error(self):
        """sum of (estimate - truth)^2 over the finite entries: the error of this one run."""
        finite = np.isfinite(self.estimate) & np.isfinite(self.truth)
        return float(np.sum((self.estimate - self.truth)[finite] ** 2))

    @property
    def expected_squared_error(self):
        """E[sum of (estimate - truth)^2] = sum of variances + squared bias (the bias is expected - truth)."""
        finite = np.isfinite(self.std) & np.isfinite(self.expected) & np.isfinite(self.truth)
        return float(np.sum(self.std[finite] ** 2 + (self.expected - self.truth)[finite] ** 2))


def _users(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= n <= MAX_USERS:
        raise ValidationError(f"n is {fmt(n)}; a simulation needs an integer number of users in 2..{MAX_USERS}")
    return int(n)


def _check_size(mechanism, n):
    domain = mechanism.input_domain
    name, width = ("k", domain.k) if domain.kind == "categorical" else ("d", domain.d)
    if width > MAX_WIDTH:
        raise ValidationError(f"{name} is {width}; simulate handles {name} <= {MAX_WIDTH:.0e} (the population, the "
                              "estimates and their variances are held in memory)")
    if n * width > MAX_ENTRIES:
        raise ValidationError(f"n is {n}; n times the {name} of {mechanism!r} must stay below {MAX_ENTRIES:.0e} "
                              "(the reports are held in memory)")


def simulate(mechanism, n=None, rng=None, *, values=None, method=None):
    """Run ``mechanism`` on ``n`` users and compare every estimate with its closed form (the CLI's ``simulate``).

    The users are ``values`` when given (then ``n`` may be omitted, or must be their number), else
    ``mechanism.input_domain.sample(n, rng)`` (the design prior for a designed table, Zipf(1) frequencies or
    normal numeric values otherwise). Users get ids 0..n-1 where public randomness is keyed by user id.
    ``method``: the estimation method (None: the mechanism's default).
    """
    generator = as_generator(rng)
    if values is None:
        n = _users(n)
        _check_size(mechanism, n)
        values = mechanism.input_domain.sample(n, generator)
    else:
        values = np.asarray(values)
        if n is not None and n != len(values):
            raise ValidationError(f"n is {fmt(n)} but values has {len(values)} rows; give one of them, or both alike")
        n = _users(len(values))
        _check_size(mechanism, n)
    user_ids = np.arange(n) if mechanism.uses_user_ids else None
    method = mechanism.default_method if method is None else method
    reports = mechanism.perturb(values, rng=generator, user_ids=user_ids)
    estimate = mechanism.estimate(mechanism.aggregate(reports), method=method)
    population, size = mechanism.population_of(values)
    expected = mechanism.expected_estimate(population, size, method=method, user_ids=user_ids)
    variance = mechanism.variance(population, size, method=method, user_ids=user_ids)
    flat = [np.hstack(np.asarray(part, dtype=object)).astype(float) if isinstance(part, list) else
            np.atleast_1d(np.asarray(part, dtype=float)) for part in
            (mechanism.estimand(values), expected, estimate, variance)]
    return Simulation(n, method, list(mechanism.estimand_names()), flat[0], flat[1], flat[2], np.sqrt(flat[3]))
