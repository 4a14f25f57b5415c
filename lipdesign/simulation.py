"""Simulation: draw a population from the design prior, perturb, estimate, and compare the empirical
per-user MSE of the MMSE estimate with the theoretical one (MATH §4)."""

from dataclasses import dataclass

import numpy as np
from scipy import stats

from lipdesign import runtime
from lipdesign.errors import ValidationError

#: Largest simulated population (the per-user posteriors are held in memory).
MAX_USERS = 10**8


@dataclass(frozen=True)
class SimulationResult:
    n: int
    theoretical_mse: float
    empirical_mse: float
    confidence_interval: tuple  # 99% normal interval for the per-user MSE
    true_frequencies: np.ndarray
    estimates: dict  # method -> estimated frequencies


def simulate(mechanism, n, rng=None, confidence=0.99):
    """Run ``mechanism`` on ``n`` users drawn from its design prior (vectorised, seeded by ``rng``)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= n <= MAX_USERS:
        raise ValidationError(f"n is {n!r}; a simulation needs an integer number of users in 2..{MAX_USERS}")
    generator = runtime.as_generator(rng)
    prior = mechanism.prior.probabilities
    values = generator.choice(prior.size, size=n, p=prior)
    reports = runtime.TablePerturber(mechanism.table).perturb(values, rng=generator)
    posterior = runtime.posterior(mechanism.table, prior)[reports]  # (n, k): Pr[X | Y=y_i]
    functions = mechanism.objective.functions(prior.size)  # rows f; the MSE sums over them
    estimates_f = posterior @ functions.T  # E[f(X) | Y_i]
    errors = ((functions.T[values] - estimates_f) ** 2).sum(axis=1)
    half_width = stats.norm.ppf(0.5 + confidence / 2) * errors.std(ddof=1) / np.sqrt(n)
    counts = runtime.counts(reports, mechanism.table.shape[1])
    estimates = {"mmse": runtime.mmse_frequencies(mechanism.table, prior, counts),
                 "ibu": runtime.ibu_frequencies(mechanism.table, counts)}
    return SimulationResult(n, mechanism.mse, float(errors.mean()),
                            (float(errors.mean() - half_width), float(errors.mean() + half_width)),
                            np.bincount(values, minlength=prior.size) / n, estimates)
