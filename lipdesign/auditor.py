"""Statistical (black-box) audit of a running perturber (docs/math.md §14): ``audit(mechanism)``.

The audit draws reports with the mechanism's own vectorised ``perturb``, maps each report to one of finitely many
output classes whose probability under each audited input is known from the family's privacy table (or its
realised sampler), and then

- for the pairs (numerator population, denominator population, class) where the known table promises the
  strongest evidence, bounds the likelihood ratio from below with Clopper-Pearson intervals: the empirical epsilon
  lower bound log(CP lower of p1 / CP upper of p2), Bonferroni over the events and both sides;
- tests the class counts of every sampled population against the table (Pearson chi-square, small cells pooled).

Under LDP the populations are single inputs; under LIP (a designed table, unary encoding, local hashing) the
numerator is an input (or, with a latent secret, the law of X given G = g) and the denominator the design prior
(or a vertex of the prior set), sampled as a population. The per-family knowledge (inputs, classes, table) is each
family's ``audit_plan()`` (``lipdesign.mechanisms.audit_plan``). Imports the mechanisms and scipy, so
``lipdesign.verification`` does not import this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError, require
from lipdesign.mechanisms.audit_plan import audited_values
from lipdesign.mechanisms.sampling import as_generator
from lipdesign.notions import LDP
from lipdesign.validation import fmt, integer, real_number, upward
from lipdesign.verification.exact import log_upper

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy.typing as npt

    from lipdesign.mechanisms.base import Mechanism, RandomSource

require("ld.audit", "design", "scipy")

from scipy import stats  # noqa: E402 (after the check that names the extra)

#: Default number of reports drawn per audited population.
DEFAULT_REPORTS = 200_000

#: The most reports drawn per audited population (about 2-3 minutes each on one core).
MAX_REPORTS = 10**9

#: Events (comparisons) whose empirical epsilon is bounded; the error budget is split over them (Bonferroni).
EVENTS = 4

#: Events whose table log-ratio is at most this (rounding away from 1) are not bounded.
INFORMATIVE = 1e-6

#: Reports drawn per call of ``perturb``.
BATCH = 2**16

#: Chi-square cells with an expected count below this are pooled (docs/math.md §14).
MIN_EXPECTED = 5.0

#: Clopper-Pearson bounds are moved outward by this relative amount, far above the few-ulp error of scipy's beta
#: quantiles, so that floating point never makes the empirical bound larger.
CP_SLACK = 1e-9




@dataclass(frozen=True)
class AuditResult:
    """The outcome of ``audit`` (docs/math.md §14): ``empirical_epsilon`` is the largest Clopper-Pearson lower bound
    over ``events``, valid with probability ``confidence`` jointly with the distribution test; ``passed`` when it is
    at most ``claimed_epsilon`` and the chi-square ``p_value`` is at least ``distribution_threshold``."""

    family: str
    notion: str
    claimed_epsilon: float
    empirical_epsilon: float
    confidence: float
    reports: int
    passed: bool
    epsilon_passed: bool
    distribution_passed: bool
    p_value: float
    distribution_threshold: float
    events: tuple = ()
    populations: tuple = ()
    distribution: dict = field(default_factory=dict)
    attainable_epsilon: float = math.nan
    reports_for_power: int | None = None

    @property
    def powered(self) -> bool:
        """Whether this many reports could show any leak: the bound at the table's own probabilities is above 0."""
        return self.attainable_epsilon > 0

    def summary(self) -> str:
        """The audit in words: the verdict, the empirical bound beside the claim, the power, each event's counts and
        bound, and the distribution test.

        Returns
        -------
        str
            The report, one line per item.
        """
        verdict = ("PASS" if self.passed else "FAIL") + ("" if self.powered else " (no power)")
        lines = [(f"{verdict}: audit of {self.family} ({self.notion} eps = {upward(self.claimed_epsilon)}), "
                  f"{self.reports} reports per population, {len(self.populations)} populations, confidence "
                  f"{self.confidence:g}"),
                 (f"  empirical epsilon lower bound {downward(self.empirical_epsilon)} "
                  f"{'<=' if self.epsilon_passed else '>'} claimed {upward(self.claimed_epsilon)} (Clopper-Pearson, "
                  f"Bonferroni over {len(self.events)} events and both sides)")]
        more = "" if self.reports_for_power is None else \
            f"; about {self.reports_for_power} reports per population bound it at half the claim"
        if not self.powered:
            lines.append(f"  no power: at the table's own probabilities {self.reports} reports bound epsilon at only "
                         f"{downward(self.attainable_epsilon)}, so this audit cannot show any leak{more}")
        else:
            slack = max(0.0, max(event["table_epsilon"] or 0.0 for event in self.events) - self.attainable_epsilon)
            lines.append(f"  power: at the table's own probabilities the bound is about "
                         f"{downward(self.attainable_epsilon)}; a leak shows (about half the time) once the true "
                         f"epsilon exceeds about {upward(self.claimed_epsilon + slack, 4)}{more}")
        for event in self.events:
            lines.append(f"    {event['numerator']} vs {event['denominator']}, class {event['class']}: counts "
                         f"{event['hits'][0]} and {event['hits'][1]}, "
                         f"table epsilon {upward(event['table_epsilon'], 4)}, "
                         f"bound {downward(event['empirical_epsilon'])}")
        distribution = self.distribution
        lines.append(f"  distribution test (chi-square, {distribution['df']} df over {distribution['cells']} cells): "
                     f"p = {self.p_value:.3g} {'>=' if self.distribution_passed else '<'} "
                     f"{self.distribution_threshold:.3g}" +
                     (f"; {distribution['impossible']} reports in classes of probability 0"
                      if distribution["impossible"] else ""))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The audit as JSON-ready data (the CLI's ``audit --json``; an infinite bound as None).

        Returns
        -------
        dict
            Every field, ``powered`` included.
        """
        return {"family": self.family, "notion": self.notion, "claimed_epsilon": self.claimed_epsilon,
                "empirical_epsilon": _json_float(self.empirical_epsilon), "confidence": self.confidence,
                "reports": self.reports, "passed": self.passed, "epsilon_passed": self.epsilon_passed,
                "distribution_passed": self.distribution_passed, "p_value": self.p_value,
                "distribution_threshold": self.distribution_threshold,
                "events": [dict(event, empirical_epsilon=_json_float(event["empirical_epsilon"]))
                           for event in self.events],
                "populations": list(self.populations), "distribution": dict(self.distribution),
                "attainable_epsilon": _json_float(self.attainable_epsilon), "powered": self.powered,
                "reports_for_power": self.reports_for_power}


def _json_float(value: float) -> float | None:
    return value if math.isfinite(value) else None


def downward(value: float, digits: int = 6) -> str:
    """``value`` (an epsilon lower bound) as text with ``digits`` significant digits, rounded down, never up."""
    value = float(value)
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    exact = Decimal(value)
    step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return format(exact.quantize(step, rounding=ROUND_FLOOR).normalize(), "f")


def clopper_pearson(hits: npt.ArrayLike, n: npt.ArrayLike,
                    alpha: float) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """One-sided Clopper-Pearson bounds (lower, upper) on a binomial probability from ``hits`` of ``n``, each side
    at level ``alpha``: the beta quantiles alpha and 1 - alpha (docs/math.md §14); 0 (resp. 1) at the ends."""
    hits, n = np.asarray(hits), np.asarray(n)
    with np.errstate(invalid="ignore"):
        lower = np.where(hits > 0, stats.beta.ppf(alpha, np.maximum(hits, 1), n - hits + 1), 0.0)
        upper = np.where(hits < n, stats.beta.ppf(1 - alpha, hits + 1, np.maximum(n - hits, 1)), 1.0)
    return lower, upper


def log_lower(ratio: Fraction) -> float:
    """A float <= ln(ratio) for a Fraction ratio >= 0 (-inf at 0): ln computed from the exact ratio (log1p of the
    exact ratio - 1 near 1), then stepped down three ulps."""
    if ratio == 0:
        return -math.inf
    value = math.log1p(float(ratio - 1)) if ratio >= Fraction(1, 2) else math.log(float(ratio))
    for _ in range(3):
        value = math.nextafter(value, -math.inf)
    return value


def empirical_epsilon(hits: int, other_hits: int, n: int, other_n: int, alpha: float) -> float:
    """log(CP lower of p1 / CP upper of p2) rounded down, each bound at level ``alpha`` and moved outward by
    CP_SLACK: with probability >= 1 - 2 alpha at most log(p1/p2) (docs/math.md §14)."""
    lower_bounds, _ = clopper_pearson(hits, n, alpha)
    _, upper_bounds = clopper_pearson(other_hits, other_n, alpha)
    lower, upper = float(lower_bounds) * (1 - CP_SLACK), min(1.0, float(upper_bounds) * (1 + CP_SLACK))
    return log_lower(Fraction(lower) / Fraction(upper))


def audit(mechanism: Mechanism, *, reports: int = DEFAULT_REPORTS, confidence: float = 0.99, rng: RandomSource = None,
          progress: Callable[[str], object] | None = None, events: int = EVENTS,
          progress_reports: Callable[[int, int], object] | None = None) -> AuditResult:
    """Black-box audit of ``mechanism``'s perturber (docs/math.md §14): does what it draws keep its claim?

    Draws reports with the mechanism's own ``perturb`` and returns an AuditResult with the empirical epsilon lower
    bound beside the claim and the chi-square test of the sampled report classes against the table. A sound
    mechanism passes with probability at least ``confidence``; a leak shows once the true epsilon is far enough
    above the claim for the reports drawn (``result.summary()`` says how far, and how many reports would bound
    epsilon at half the claim). The audit complements exact verification (``ld.verify``): it tests the running
    sampler, not the stored numbers.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism to audit: any family that defines ``audit_plan()`` (its output classes and their
        probabilities).
    reports : int, default 200,000
        Reports drawn per audited population (``DEFAULT_REPORTS``; at most ``MAX_REPORTS``).
    confidence : float, default 0.99
        A sound mechanism passes with at least this probability (half the error budget for the epsilon bounds,
        half for the distribution test); strictly between 0 and 1.
    rng : numpy.random.Generator or int, optional
        The randomness of the draws: a seed, a Generator or None (fresh entropy; ``as_generator``).
    progress : callable, optional
        None (the default) or a callable receiving one-line strings (a text bar, at every 10 % of the reports).
    events : int, default 4
        How many comparisons (numerator population, denominator population, class) are bounded (Bonferroni).
    progress_reports : callable, optional
        None (the default) or a callable receiving ``(done, total)``, the reports drawn so far and the total to draw
        (``reports`` per audited population), after every batch of reports: what a progress bar counts.

    Returns
    -------
    AuditResult
        ``passed`` (both tests), ``empirical_epsilon`` beside ``claimed_epsilon``, the chi-square ``p_value``, each
        event's counts and bound, and ``powered`` (whether this many reports could show a leak at all);
        ``summary()`` says it in words.

    Raises
    ------
    ValidationError
        ``reports``, ``events`` or ``confidence`` out of range, a ``progress`` that is not callable, or a family
        without an ``audit_plan()``.

    See Also
    --------
    lipdesign.verify : exact verification of the table.

    Notes
    -----
    The empirical epsilon is log(CP lower of p1 / CP upper of p2) over Clopper-Pearson intervals, Bonferroni over
    the events and both sides; the distribution test is Pearson's chi-square, small cells pooled (docs/math.md
    §14). Under LDP the populations are single inputs; under LIP the numerator is an input (or the law of X given
    a secret value) and the denominator the design prior (or a vertex of the prior set), sampled as a population.

    Examples
    --------
    >>> import lipdesign as ld
    >>> result = ld.audit(ld.mechanisms.GRR(1.0, 3), reports=20_000, rng=0)
    >>> result.passed, result.powered
    (True, True)
    >>> print(f"empirical epsilon >= {result.empirical_epsilon:.2f}, claimed {result.claimed_epsilon:g}")
    empirical epsilon >= 0.92, claimed 1
    >>> print(result.summary())
    PASS: audit of grr (LDP eps = 1), 20000 reports per population, 2 populations, confidence 0.99
    ...

    A designed LIP table is audited against its design prior:

    >>> mechanism = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0), baselines=False)
    >>> ld.audit(mechanism, reports=20_000, rng=0).passed
    True
    >>> ld.audit(mechanism, confidence=1.5)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: confidence is 1.5; it must be a finite number in [0, 1]
    """
    reports = integer(reports, "reports", low=1, high=MAX_REPORTS)
    events = integer(events, "events", low=1)
    if progress is not None and not callable(progress):
        raise ValidationError(f"progress is {fmt(progress)}; it must be None or a callable taking one line of text")
    if progress_reports is not None and not callable(progress_reports):
        raise ValidationError(f"progress_reports is {fmt(progress_reports)}; it must be None or a callable taking "
                              "(reports done, reports in all)")
    confidence = real_number(confidence, "confidence", 0.0, 1.0)
    if not 0.0 < confidence < 1.0:
        raise ValidationError(f"confidence is {fmt(confidence)}; it must lie strictly between 0 and 1")
    plan = _plan_of(mechanism)
    alpha = 1.0 - confidence
    chosen = _choose(plan, _pairs(mechanism, plan), reports, alpha / (4 * events), events)
    side = alpha / (4 * len(chosen))  # the events x 2 sides share alpha / 2 (chosen before any report is drawn)
    needed: dict[str, Any] = {}
    for numerator, denominator, _ in chosen:
        for name, weights in (numerator, denominator):
            needed.setdefault(name, weights)
    counts = _draw(mechanism, plan, needed, reports, as_generator(rng), progress, progress_reports)
    found = []
    for (name, weights), (other, other_weights), y in chosen:
        p1, p2 = (sum(Fraction(float(w)) * Fraction(float(q)) for w, q in zip(row, plan.table[:, y]))
                  for row in (weights, other_weights))  # exact, for the table's epsilon at the event
        bound = empirical_epsilon(counts[name][y], counts[other][y], reports, reports, side)
        found.append({"numerator": name, "denominator": other, "class": plan.class_names[y],
                      "hits": [int(counts[name][y]), int(counts[other][y])],
                      "table_probabilities": [float(p1), float(p2)],
                      "table_epsilon": log_upper(p1 / p2) if p2 > 0 else None,
                      "empirical_epsilon": bound})
    distribution = _chi_square(plan, needed, counts, reports)
    threshold = alpha / 2
    claimed = float(mechanism.guarantee.epsilon)
    empirical = max(event["empirical_epsilon"] for event in found)
    epsilon_passed = bool(empirical <= claimed)
    distribution_passed = bool(distribution["p_value"] >= threshold)
    attainable = _attainable(found, reports, side)
    for_power = None
    if attainable < claimed / 2:
        for_power = next((n for n in (reports << shift for shift in range(1, 64)) if n > MAX_REPORTS or
                          _attainable(found, n, side) >= claimed / 2), None)
        for_power = None if for_power is None or for_power > MAX_REPORTS else for_power
    return AuditResult(mechanism.family, mechanism.guarantee.notion, claimed, empirical, confidence, reports,
                       epsilon_passed and distribution_passed, epsilon_passed, distribution_passed,
                       distribution["p_value"], threshold, tuple(found), tuple(needed), distribution, attainable,
                       for_power)


def _attainable(events, n, side):
    """The largest empirical bound of ``events`` at their expected counts for n reports per population: what a
    mechanism exactly at its table shows (docs/math.md §14); <= 0 means the audit cannot show a leak."""
    return max(empirical_epsilon(round(n * p1), round(n * p2), n, n, side)
               for p1, p2 in (event["table_probabilities"] for event in events))


def _plan_of(mechanism):
    """The mechanism's own ``audit_plan()`` (a subclass inherits its family's); ValidationError when it has none."""
    plan = mechanism.audit_plan()
    if plan is None:
        raise ValidationError(f"family is {fmt(mechanism.family)}; the audit knows the output classes of the families "
                              "that define audit_plan() only (docs/adding-a-family.md)")
    return plan


def _pairs(mechanism, plan):
    """The (numerator, denominator) populations compared, each (name, weights over the plan's rows). LDP: every
    row against every other; LIP notions: the law of X given each secret value (X itself without one) against
    each enforced prior, and the reverse (docs/math.md §2)."""
    rows = len(plan.row_names)
    notion = getattr(mechanism, "notion", None)
    if notion is None or isinstance(notion, LDP):
        units = [(plan.row_names[r], np.eye(rows)[r]) for r in range(rows)]
        return [(a, b) for a in units for b in units if a[0] != b[0]]
    members = plan.members
    secret = getattr(notion, "secret", None)
    numerators: dict[str, np.ndarray] = {}
    for g, row in enumerate(notion.conditional(members.shape[1])):
        weights = row @ members.T / row.sum()
        numerators.setdefault(f"G={g}" if secret is not None else plan.row_names[int(np.argmax(weights))], weights)
    scenarios = notion.scenarios(mechanism.prior)
    names = ["prior"] if getattr(notion, "prior_set", None) is None and len(scenarios) == 1 else \
        [f"prior vertex {s}" for s in range(len(scenarios))]
    denominators = [(name, row @ members.T / row.sum()) for name, row in zip(names, scenarios)]
    return [pair for numerator in numerators.items() for denominator in denominators
            for pair in ((numerator, denominator), (denominator, numerator))]


def _choose(plan, pairs, n, side, events):
    """Up to ``events`` comparisons (numerator, denominator, class) with a table log-ratio above INFORMATIVE and the
    largest expected empirical bound at n reports per population (normal approximation to the CP bounds), ties
    broken by the table's ratio."""
    z = stats.norm.ppf(1 - side)
    p1 = np.array([numerator[1] for numerator, _ in pairs]) @ plan.table
    p2 = np.array([denominator[1] for _, denominator in pairs]) @ plan.table
    with np.errstate(divide="ignore", invalid="ignore"):
        low = p1 - z * np.sqrt(p1 * (1 - p1) / n)
        high = p2 + z * np.sqrt(p2 * (1 - p2) / n)
        score = np.where(low > 0, np.log(low / high), -np.inf)
        ratio = np.where(p1 > 0, np.log(p1 / p2), -np.inf)
    order = np.lexsort((-ratio.ravel(), -score.ravel()))
    informative = order[ratio.ravel()[order] > INFORMATIVE]  # ratios about 1 only spend the error budget
    order = (informative if informative.size else order)[:events]
    return [(*pairs[flat // p1.shape[1]], int(flat % p1.shape[1])) for flat in order]


def _draw(mechanism, plan, populations, n, rng, progress, progress_reports=None):
    """Class counts of n reports per population, drawn in batches with ``perturb`` (progress lines per 10 %,
    ``progress_reports(done, total)`` per batch)."""
    total, done, shown = n * len(populations), 0, -1
    counts, ids = {}, 0
    classes = plan.table.shape[1]
    for name, weights in populations.items():
        count = np.zeros(classes, dtype=np.int64)
        unit = np.flatnonzero(weights == 1)
        for start in range(0, n, BATCH):
            size = min(BATCH, n - start)
            rows = np.full(size, unit[0]) if unit.size else rng.choice(weights.size, size=size, p=weights)
            user_ids = np.arange(ids, ids + size) if mechanism.uses_user_ids else None
            ids += size
            drawn = mechanism.perturb(audited_values(mechanism, plan.inputs[rows]), rng=rng, user_ids=user_ids)
            count += np.bincount(plan.classify(drawn), minlength=classes)
            done += size
            if progress_reports is not None:
                progress_reports(done, total)
            if progress is not None and (10 * done // total > shown or done == total):
                shown = 10 * done // total
                bar = "#" * shown + "." * (10 - shown)
                progress(f"audit {mechanism.family}: [{bar}] {100 * done // total:3d} % ({done} of {total} reports)")
        counts[name] = count
    return counts


def _chi_square(plan, populations, counts, n):
    """Pearson's chi-square of every population's class counts against n x its table row, cells with expected
    count below MIN_EXPECTED pooled (and the pool merged into the smallest other cell while it is still below);
    the statistics and degrees of freedom of the populations add (independent samples). A report in a class of
    probability 0 makes p = 0."""
    statistic, df, cells, impossible = 0.0, 0, 0, 0
    for name, weights in populations.items():
        expected = n * (weights @ plan.table)
        observed = counts[name]
        impossible += int(observed[expected <= 0].sum())
        keep = expected >= MIN_EXPECTED
        groups_expected = list(expected[keep])
        groups_observed = list(observed[keep])
        small = (expected > 0) & ~keep
        if small.any():
            pooled_expected, pooled_observed = expected[small].sum(), observed[small].sum()
            if pooled_expected < MIN_EXPECTED and groups_expected:
                smallest = int(np.argmin(groups_expected))
                groups_expected[smallest] += pooled_expected
                groups_observed[smallest] += pooled_observed
            else:
                groups_expected.append(pooled_expected)
                groups_observed.append(pooled_observed)
        expected_array, observed_array = np.array(groups_expected), np.array(groups_observed)
        statistic += float(((observed_array - expected_array) ** 2 / expected_array).sum())
        df += expected_array.size - 1
        cells += expected_array.size
    p_value = 0.0 if impossible else (float(stats.chi2.sf(statistic, df)) if df else 1.0)
    return {"statistic": statistic, "df": df, "cells": cells, "impossible": impossible, "p_value": p_value}



__all__ = ["DEFAULT_REPORTS", "AuditResult", "audit", "clopper_pearson", "downward", "empirical_epsilon"]
