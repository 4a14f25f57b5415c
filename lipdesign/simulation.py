"""Simulation: draw a population, perturb, estimate, and compare with theory.

- ``simulate``: a designed table on users drawn from its design prior; empirical per-user MSE of the MMSE
  estimate against the theoretical one (MATH §4).
- ``simulate_harmony``: a lipdesign.harmony mechanism on a built-in population; every estimated mean or
  frequency against its closed-form variance (MATH §8, §9).
"""

from dataclasses import dataclass

import numpy as np
from scipy import stats

from lipdesign import runtime
from lipdesign.errors import ValidationError

#: Largest simulated population (the per-user posteriors are held in memory).
MAX_USERS = 10**8

#: Largest n * k (or n * d) of ``simulate_harmony``: reports such as OUE's n x k bits are held in memory.
MAX_HARMONY_ENTRIES = 10**9

#: Largest k (or d) of ``simulate_harmony``: every category costs about 130 bytes of estimates and variances.
MAX_HARMONY_WIDTH = 10**7


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


@dataclass(frozen=True)
class HarmonySimulation:
    """Per estimated quantity (a numeric attribute's mean or one category's frequency): its name, the truth
    in the simulated population, the expected estimate (the truth for an unbiased estimator), the estimate
    and the closed-form standard deviation; and the chi-square summary of the standardised errors."""

    n: int
    names: list
    truth: np.ndarray
    expected: np.ndarray
    estimate: np.ndarray
    std: np.ndarray

    @property
    def z_scores(self):
        """(estimate - expected) / std; nan where there is nothing to estimate (e.g. an empty public bucket)."""
        return (self.estimate - self.expected) / self.std

    @property
    def chi_square_p_value(self):
        """P-value of sum(z^2) over the finite z under chi-square(their number); z is close to normal for large n."""
        z = self.z_scores[np.isfinite(self.z_scores)]
        return float(stats.chi2.sf(np.sum(z**2), z.size)) if z.size else float("nan")


def harmony_population(mechanism, n, generator):
    """The built-in population of ``simulate_harmony``: numeric attribute j ~ N(mu_j, 0.4) clipped to [-1, 1]
    with means spread over [-0.5, 0.5]; categorical values with Zipf(1) frequencies over 0..k-1."""
    from lipdesign.harmony import HarmonyMixed

    def numeric(size, position, count):
        mean = 0.3 if count == 1 else -0.5 + position / (count - 1)
        return np.clip(generator.normal(mean, 0.4, size), -1.0, 1.0)

    def categorical(size, k):
        weights = 1.0 / np.arange(1, k + 1)
        return generator.choice(k, size=size, p=weights / weights.sum())

    if isinstance(mechanism, HarmonyMixed):
        return np.column_stack([numeric(n, j, mechanism.d) if kind == "numeric" else categorical(n, kind)
                                for j, kind in enumerate(mechanism.attributes)])
    if hasattr(mechanism, "k"):
        return categorical(n, mechanism.k)
    return np.column_stack([numeric(n, j, mechanism.d) for j in range(mechanism.d)])


def simulate_harmony(mechanism, n, rng=None):
    """Run a lipdesign.harmony mechanism on ``n`` users of ``harmony_population`` and compare every estimate
    with its closed-form variance (the CLI's ``simulate`` for these mechanisms)."""
    from lipdesign.harmony import HarmonyCategorical, HarmonyMixed

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= n <= MAX_USERS:
        raise ValidationError(f"n is {n!r}; a simulation needs an integer number of users in 2..{MAX_USERS}")
    size = "k" if hasattr(mechanism, "k") else "d"
    width = getattr(mechanism, size)
    if width > MAX_HARMONY_WIDTH:
        raise ValidationError(f"{size} is {width}; simulate handles {size} <= {MAX_HARMONY_WIDTH:.0e} (the "
                              "population, the estimates and their variances are held in memory)")
    if n * width > MAX_HARMONY_ENTRIES:
        raise ValidationError(f"n is {n}; n times the {size} of {mechanism!r} must stay below "
                              f"{MAX_HARMONY_ENTRIES:.0e} (the reports are held in memory)")
    generator = runtime.as_generator(rng)
    values = harmony_population(mechanism, n, generator)
    options = {"user_ids": np.arange(n)} if getattr(mechanism, "coordinates", None) == "public" else {}
    reports = mechanism.perturb(values, rng=generator, **options)
    # the Bassily-Smith projection can only be unbiased with m >= k; otherwise simulate the paper's projection
    projections = ([mechanism] if isinstance(mechanism, HarmonyCategorical) else
                   list(mechanism.categorical.values()) if isinstance(mechanism, HarmonyMixed) else [])
    method = {"method": "projection"} if any(p.m < p.k for p in projections) else {}
    estimate = mechanism.estimate(reports, **method)
    if isinstance(mechanism, HarmonyMixed):
        names, truth = [], []
        for j, kind in enumerate(mechanism.attributes):
            if kind == "numeric":
                names.append(f"mean[{j}]")
                truth.append(values[:, j].mean())
            else:
                names += [f"frequency[{j}][{v}]" for v in range(kind)]
                truth.extend(np.bincount(values[:, j].astype(int), minlength=kind) / n)
        expected = np.hstack(mechanism.expected_estimate(values, **method))
        variance = np.hstack(mechanism.variance(values, **method))
        estimate = np.hstack(estimate)
    elif hasattr(mechanism, "k"):
        names = [f"frequency[{v}]" for v in range(mechanism.k)]
        truth = np.bincount(values, minlength=mechanism.k) / n
        expected = mechanism.expected_estimate(truth, **method) if hasattr(mechanism, "expected_estimate") else truth
        variance = mechanism.variance(truth, n, **method)
    else:
        names = [f"mean[{j}]" for j in range(mechanism.d)]
        truth = values.mean(axis=0)
        expected = mechanism.expected_estimate(values, **options) if options else truth
        variance = mechanism.variance(values, **options)
    return HarmonySimulation(n, names, np.asarray(truth, dtype=float), np.asarray(expected, dtype=float),
                             np.asarray(estimate, dtype=float), np.sqrt(np.asarray(variance, dtype=float)))
