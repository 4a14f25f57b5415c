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
(or a vertex of the prior set), sampled as a population. The per-family knowledge (inputs, classes, table) is in
``_PLANS``, keyed by family id. Imports the mechanisms and scipy, so ``lipdesign.verification`` does not import
this module.
"""

import math
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction

import numpy as np
from scipy import stats

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.hadamard import parity
from lipdesign.mechanisms.rr import grr_probabilities, one_bit_table
from lipdesign.mechanisms.sampling import as_generator
from lipdesign.notions import LDP
from lipdesign.validation import fmt, integer, real_number, upward
from lipdesign.verification.exact import log_upper

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

#: Unary encoding: the bits of at most this many values are read (2^UNARY_BITS classes); the others are pooled.
UNARY_BITS = 10

#: Laplace: the joint class of at most this many coordinates is read (3 classes per coordinate).
LAPLACE_COORDINATES = 6


@dataclass(frozen=True)
class _Plan:
    """What the audit knows about a family: ``inputs`` (one value per row, as ``perturb`` takes it), ``table``
    (rows x classes, Pr[class | row]), ``classify`` (reports -> class index per report), ``members`` (rows x k:
    the input values each row stands for, for LIP notions; None for LDP-only plans), names of rows and classes."""

    inputs: np.ndarray
    table: np.ndarray
    classify: object
    row_names: list
    class_names: list
    members: np.ndarray | None = None

    def __post_init__(self):  # a realised table of exact rationals is read as the doubles nearest to it
        object.__setattr__(self, "table", np.asarray(self.table, dtype=float))


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
    def powered(self):
        """Whether this many reports could show any leak: the bound at the table's own probabilities is above 0."""
        return self.attainable_epsilon > 0

    def summary(self):
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
                         f"{event['hits'][0]} and {event['hits'][1]}, table epsilon {upward(event['table_epsilon'], 4)}, "
                         f"bound {downward(event['empirical_epsilon'])}")
        distribution = self.distribution
        lines.append(f"  distribution test (chi-square, {distribution['df']} df over {distribution['cells']} cells): "
                     f"p = {self.p_value:.3g} {'>=' if self.distribution_passed else '<'} "
                     f"{self.distribution_threshold:.3g}" +
                     (f"; {distribution['impossible']} reports in classes of probability 0"
                      if distribution["impossible"] else ""))
        return "\n".join(lines)

    def to_dict(self):
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


def _json_float(value):
    return value if math.isfinite(value) else None


def downward(value, digits=6):
    """``value`` (an epsilon lower bound) as text with ``digits`` significant digits, rounded down, never up."""
    value = float(value)
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    exact = Decimal(value)
    step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return format(exact.quantize(step, rounding=ROUND_FLOOR).normalize(), "f")


def clopper_pearson(hits, n, alpha):
    """One-sided Clopper-Pearson bounds (lower, upper) on a binomial probability from ``hits`` of ``n``, each side
    at level ``alpha``: the beta quantiles alpha and 1 - alpha (docs/math.md §14); 0 (resp. 1) at the ends."""
    hits, n = np.asarray(hits), np.asarray(n)
    with np.errstate(invalid="ignore"):
        lower = np.where(hits > 0, stats.beta.ppf(alpha, np.maximum(hits, 1), n - hits + 1), 0.0)
        upper = np.where(hits < n, stats.beta.ppf(1 - alpha, hits + 1, np.maximum(n - hits, 1)), 1.0)
    return lower, upper


def log_lower(ratio):
    """A float <= ln(ratio) for a Fraction ratio >= 0 (-inf at 0): ln computed from the exact ratio (log1p of the
    exact ratio - 1 near 1), then stepped down three ulps."""
    if ratio == 0:
        return -math.inf
    value = math.log1p(float(ratio - 1)) if ratio >= Fraction(1, 2) else math.log(float(ratio))
    for _ in range(3):
        value = math.nextafter(value, -math.inf)
    return value


def empirical_epsilon(hits, other_hits, n, other_n, alpha):
    """log(CP lower of p1 / CP upper of p2) rounded down, each bound at level ``alpha`` and moved outward by
    CP_SLACK: with probability >= 1 - 2 alpha at most log(p1/p2) (docs/math.md §14)."""
    lower, _ = clopper_pearson(hits, n, alpha)
    _, upper = clopper_pearson(other_hits, other_n, alpha)
    lower, upper = float(lower) * (1 - CP_SLACK), min(1.0, float(upper) * (1 + CP_SLACK))
    return log_lower(Fraction(lower) / Fraction(upper))


def audit(mechanism, *, reports=DEFAULT_REPORTS, confidence=0.99, rng=None, progress=None, events=EVENTS,
          progress_reports=None):
    """Black-box audit of ``mechanism``'s perturber (docs/math.md §14): an AuditResult with the empirical epsilon
    lower bound beside the claim and the chi-square test of the sampled report classes against the table.

    ``reports``: reports drawn per population; ``confidence``: a sound mechanism passes with at least this
    probability (half the error budget for the epsilon bounds, half for the distribution test); ``rng``: seed,
    Generator or None (``as_generator``); ``progress``: None or a callable receiving one-line strings (a text bar,
    at every 10 % of the reports); ``events``: how many comparisons are bounded (Bonferroni); ``progress_reports``:
    None or a callable receiving ``(done, total)``, the reports drawn so far and the total to draw (``reports`` per
    audited population), after every batch of reports: what a progress bar counts."""
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
    needed = {}
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
    """The plan of the mechanism's family, or of the nearest base class with one (a registered subclass of a known
    family is audited as that family)."""
    for cls in type(mechanism).__mro__:
        family = cls.__dict__.get("family")
        if family in _PLANS:
            return _PLANS[family](mechanism)
    raise ValidationError(f"family is {fmt(getattr(mechanism, 'family', None))}; the audit knows the output classes "
                          f"of {', '.join(sorted(_PLANS))} (and their subclasses) only")


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
    numerators = {}
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
            drawn = mechanism.perturb(_values(mechanism, plan.inputs[rows]), rng=rng, user_ids=user_ids)
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
        groups_expected, groups_observed = np.array(groups_expected), np.array(groups_observed)
        statistic += float(((groups_observed - groups_expected) ** 2 / groups_expected).sum())
        df += groups_expected.size - 1
        cells += groups_expected.size
    p_value = 0.0 if impossible else (float(stats.chi2.sf(statistic, df)) if df else 1.0)
    return {"statistic": statistic, "df": df, "cells": cells, "impossible": impossible, "p_value": p_value}


# -- per-family output classes ------------------------------------------------------------------------------------
def _values(mechanism, inputs):
    """The audited inputs as the mechanism takes them: category indices become its labels when it has named ones
    (integer labels other than the indices are read as labels, docs/math.md §1)."""
    labels = getattr(mechanism.input_domain, "labels", None)
    if labels is None or isinstance(labels, range) or inputs.dtype.kind not in "iu":
        return inputs
    return np.array(labels, dtype=object)[inputs]


def _index_plan(mechanism, classify, class_names=None):
    """Designed tables and local hashing: every input value a row, every column of the (realised) privacy table a
    class; ``classify`` maps a report to its column."""
    k, table = mechanism.prior.k, np.asarray(mechanism.privacy_table(), dtype=float)
    names = class_names or [f"y={y}" for y in range(table.shape[1])]
    return _Plan(np.arange(k), table, classify, [f"x={label}" for label in mechanism.prior.labels], names, np.eye(k))


def _table_plan(mechanism):
    return _index_plan(mechanism, np.asarray)


def _hashing_plan(mechanism):
    """Local hashing: the whole k x 2 p (p - 1) table, report (seed, y) is class 2 seed + y (the privacy table's
    limit on the number of hashes applies)."""
    return _index_plan(mechanism, lambda reports: 2 * reports["seed"].astype(np.int64) + reports["y"],
                       [f"seed={s},y={y}" for s in range(mechanism.hashes) for y in (0, 1)])


def _grr_plan(mechanism):
    """GRR: inputs 0 and 1; classes y = 0, y = 1 and any other output (the exact 2 x 3 reduction)."""
    table = mechanism.privacy_table()
    names = ["y=0", "y=1", "other"][:table.shape[1]]
    return _Plan(np.array([0, 1]), table, lambda reports: np.minimum(reports, 2), ["x=0", "x=1"], names)


def _oue_plan(mechanism):
    """OUE: inputs 0 and 1; classes the pair (bit 0, bit 1) (the exact 2 x 4 reduction)."""
    def classify(reports):
        bits = mechanism.bits(reports, [0, 1]).astype(np.int64)  # packed reports, or unpacked ones
        return 2 * bits[:, 0] + bits[:, 1]

    return _Plan(np.array([0, 1]), mechanism.privacy_table(), classify, ["x=0", "x=1"],
                 ["bits 00", "bits 01", "bits 10", "bits 11"])


def _unary_plan(mechanism):
    """Unary encoding: the bits of up to UNARY_BITS values S (the worst value of the certificate first, then by
    increasing prior) are read, class = their pattern; rows: each value of S and one row for all the others, whose
    bits of S all follow b. Pr[pattern | row] is the product of the realised bit probabilities."""
    k = mechanism.k
    worst = mechanism.certificate.worst.get("value", mechanism.certificate.worst.get("inputs", [0])[0])
    order = [int(worst)] + [int(x) for x in np.argsort(mechanism.prior.probabilities, kind="stable") if x != worst]
    read = np.array(order[:UNARY_BITS])
    rest = np.setdiff1d(np.arange(k), read)
    rows = list(read) + ([int(rest[0])] if rest.size else [])
    members = np.zeros((len(rows), k))
    members[np.arange(read.size), read] = 1
    members[read.size:, rest] = 1
    ones = np.where(read[None, :] == np.array(rows)[:, None], mechanism.p[read], mechanism.q[read])  # Pr[bit = 1]
    patterns = (np.arange(2**read.size)[:, None] >> np.arange(read.size)) & 1
    table = np.where(patterns[None] == 1, ones[:, None, :], 1 - ones[:, None, :]).prod(axis=2)
    weights = 1 << np.arange(read.size)

    def classify(reports):
        return mechanism.bits(reports)[:, read].astype(np.int64) @ weights

    names = [f"x={mechanism.prior.labels[x]}" for x in read] + (["other values"] if rest.size else [])
    return _Plan(np.array(rows), table, classify, names,
                 ["bits of " + ",".join(map(str, read)) + " = " + "".join(map(str, p)) for p in patterns], members)


def _olh_plan(mechanism):
    """OLH: inputs 0 and 1; classes y = h(0) != h(1), y = h(1) != h(0), another y with h(0) != h(1), and h(0) =
    h(1) (probability ``collision_probability(0, 1)``, exact for the family or the pool); given the hash, y is GRR
    over g buckets."""
    keep, lie = grr_probabilities(mechanism.alpha, mechanism.g)
    c = mechanism.collision_probability(0, 1)
    table = np.array([[(1 - c) * keep, (1 - c) * lie, (1 - c) * (mechanism.g - 2) * lie, c],
                      [(1 - c) * lie, (1 - c) * keep, (1 - c) * (mechanism.g - 2) * lie, c]])

    def classify(reports):
        first, second = mechanism.report_hashes(reports, 0), mechanism.report_hashes(reports, 1)
        y = reports["y"]
        return np.select([first == second, y == first, y == second], [3, 0, 1], 2)

    return _Plan(np.array([0, 1]), table, classify, ["x=0", "x=1"],
                 ["y=h(0)", "y=h(1)", "other y", "h(0)=h(1)"])


def _hadamard_plan(mechanism):
    """Hadamard response: inputs 0 and 1; classes C_0 & C_1, C_0 - C_1, C_1 - C_0 and neither (the exact 2 x 4
    reduction; y is in C_x when popcount((x + 1) & y) is even)."""
    def classify(reports):
        return 2 * parity(reports & 1) + parity(reports & 2)

    return _Plan(np.array([0, 1]), mechanism.privacy_table(), classify, ["x=0", "x=1"],
                 ["in C0 and C1", "in C0 only", "in C1 only", "in neither"])


def _sign_plan(inputs, row_classes, one_bit):
    """The one-bit families: a report is (attribute j, row class r, sign b), r = 2 [A's bit input is -1] + [B's is
    -1] for the two audited inputs A and B; ``row_classes[j, r]`` = Pr[attribute j, row class r] (the same under A
    and B). Pr[class | A] = row_classes[j, r] Pr[b | t_A(r)] from ``one_bit`` (rows t = +1, -1)."""
    attributes = row_classes.shape[0]
    table = np.zeros((2, attributes * 8))
    for j in range(attributes):
        for r in range(4):
            for b in range(2):
                table[0, 8 * j + 2 * r + b] = row_classes[j, r] * one_bit[r // 2, b]
                table[1, 8 * j + 2 * r + b] = row_classes[j, r] * one_bit[r % 2, b]
    names = [f"attribute {j}, inputs ({'+-'[r // 2]}1, {'+-'[r % 2]}1), sign {'+-'[b]}"
             for j in range(attributes) for r in range(4) for b in range(2)]
    return inputs, table, names


def _row_classes(signs, first=0, second=1):
    """Per projection row s, r = 2 [signs[s, first] < 0] + [signs[s, second] < 0], and the frequency of each r."""
    classes = 2 * (signs[:, first] < 0) + (signs[:, second] < 0)
    return classes.astype(np.int64), np.bincount(classes, minlength=4) / signs.shape[0]


def _harmony_categorical_plan(mechanism):
    """Harmony's categorical mechanism: inputs 0 and 1; classes (row class of the public signs of 0 and 1, sign)."""
    classes, frequencies = _row_classes(mechanism.signs)
    inputs, table, names = _sign_plan(np.array([0, 1]), frequencies[None], one_bit_table(mechanism.exp_epsilon))
    return _Plan(inputs, table, lambda reports: 2 * classes[reports["row"]] + (reports["sign"] < 0), ["x=0", "x=1"],
                 names)


def _harmony_mixed_plan(mechanism):
    """Harmony's mixed tuples: inputs A (numeric +1, category 0) and B (numeric -1, category 1); classes (attribute,
    row class, sign); a numeric attribute is row class (+1, -1) always."""
    d = mechanism.d
    frequencies, lookup = np.zeros((d, 4)), {}
    for j in range(d):
        if j in mechanism.categorical:
            lookup[j], frequencies[j] = _row_classes(mechanism.categorical[j].signs)
        else:
            frequencies[j, 1] = 1
    frequencies /= d
    numeric = np.array([attribute == "numeric" for attribute in mechanism.attributes])
    inputs = np.array([np.where(numeric, 1.0, 0.0), np.where(numeric, -1.0, 1.0)])

    def classify(reports):
        attribute = reports["attribute"].astype(np.int64)
        row_class = np.ones(attribute.size, dtype=np.int64)
        for j, classes in lookup.items():
            chosen = attribute == j
            row_class[chosen] = classes[reports["row"][chosen]]
        return 8 * attribute + 2 * row_class + (reports["sign"] < 0)

    inputs, table, names = _sign_plan(inputs, frequencies, one_bit_table(mechanism.exp_epsilon))
    return _Plan(inputs, table, classify, ["A", "B"], names)


def _extremes(d):
    return np.array([np.ones(d), -np.ones(d)])


def _harmony_numeric_plan(mechanism):
    """Harmony's numeric mechanism: inputs +1 and -1 in every coordinate; class the sign (whichever coordinate is
    reported, its input is the same extreme)."""
    return _Plan(_extremes(mechanism.d), mechanism.privacy_table(), lambda reports: (reports["sign"] < 0).astype(int),
                 ["t=+1", "t=-1"], ["sign +", "sign -"])


def _duchi_plan(mechanism):
    """Duchi: inputs +1 and -1 in every coordinate; classes s.1 > 0, < 0 (and = 0 for even d), the privacy table's
    columns (docs/math.md §9.3)."""
    d = mechanism.d

    def classify(reports):
        balance = 2 * np.count_nonzero(reports > 0, axis=1) - d
        return np.select([balance > 0, balance < 0], [0, 1], 2)

    table = mechanism.privacy_table()
    return _Plan(_extremes(d), table, classify, ["t=+1", "t=-1"], ["s.1 > 0", "s.1 < 0", "s.1 = 0"][:table.shape[1]])


def _laplace_plan(mechanism):
    """Laplace: inputs +1 and -1 in every coordinate (grid points M and 0); per coordinate the classes bottom end,
    interior, top end of the realised per-coordinate table, joint over the first LAPLACE_COORDINATES coordinates
    (independent, so the joint table is the product)."""
    realized, grid = mechanism.privacy_table(), mechanism.grid
    per = np.array([[row[0], row[1:grid].sum(), row[grid]] for row in (realized[grid], realized[0])])
    used = min(mechanism.d, LAPLACE_COORDINATES)
    table = np.ones((2, 1))
    for _ in range(used):
        table = (table[:, :, None] * per[:, None, :]).reshape(2, -1)
    powers = 3 ** np.arange(used)[::-1]

    def classify(reports):
        reports = np.asarray(reports).reshape(-1, mechanism.d)[:, :used]
        code = np.where(reports == mechanism.outputs[0], 0, np.where(reports == mechanism.outputs[-1], 2, 1))
        return code @ powers

    codes = (np.arange(3**used)[:, None] // powers) % 3
    names = ["".join("lit"[c] for c in code) for code in codes]
    return _Plan(_extremes(mechanism.d), table, classify, ["t=+1", "t=-1"],
                 [f"coordinates {name} (l: lowest, i: interior, t: top)" for name in names])


def _piecewise_plan(mechanism):
    """Piecewise and Hybrid: inputs +1 and -1 in every coordinate; classes of the first coordinate: not sampled
    (report 0), or sampled with its bin of the realised table (Hybrid: or its one-bit output +-c). With k > 1
    sampled attributes a coordinate alone carries eps / k (docs/math.md §9.8)."""
    table = mechanism.privacy_table()
    one_bit_only = getattr(mechanism, "piecewise_probability", 1.0) == 0.0
    top, bottom = (0, 1) if one_bit_only else (table.shape[0] - 1, 0)
    chosen = mechanism.attributes / mechanism.d
    rows = np.column_stack([np.full(2, 1 - chosen), chosen * table[[top, bottom]]])
    scale = mechanism.d / mechanism.attributes
    bins = 0 if one_bit_only else mechanism.piecewise.edges.size - 1
    bit = getattr(mechanism, "scale", None)

    def classify(reports):
        value = np.asarray(reports).reshape(-1, mechanism.d)[:, 0] / scale
        code = np.ones(value.size, dtype=np.int64)
        if bins:
            code += np.clip(np.searchsorted(mechanism.piecewise.edges, value, side="right") - 1, 0, bins - 1)
        if bit is not None:
            code = np.where(np.isclose(value, bit, rtol=1e-12, atol=0), 1 + bins,
                            np.where(np.isclose(value, -bit, rtol=1e-12, atol=0), 2 + bins, code))
        return np.where(value == 0, 0, code)

    names = ["not sampled"] + [f"bin {b}" for b in range(bins)] + (["+c", "-c"] if bit is not None else [])
    return _Plan(_extremes(mechanism.d), rows, classify, ["t=+1", "t=-1"], names)


def _subset_plan(mechanism):
    """Subset selection: inputs 0 and 1; classes by whether the subset holds 0 and whether it holds 1 (the exact
    2 x 4 reduction, ``SubsetSelection.privacy_table``)."""
    def classify(reports):
        return 2 - 2 * (reports[:, 0] & 1) + 1 - ((reports[:, 0] >> 1) & 1)

    return _Plan(np.array([0, 1]), mechanism.privacy_table(), classify, ["x=0", "x=1"],
                 ["0 and 1 in S", "0 in S only", "1 in S only", "neither in S"])


def _subset_lip_plan(mechanism):
    """The LIP orbit: inputs 0, 1 and (k >= 3) 2, which stands for every value but 0 and 1 (their classes have the
    same probabilities); classes by the cases of 0 and of 1 in the report (z, H) (``SubsetLIP.privacy_table``).
    LIP compares the law given X = 0 or 1 with the uniform prior's mixture of the three rows."""
    k = mechanism.k
    cases = [("z", "high"), ("z", "low"), ("high", "z"), ("low", "z"), ("high", "high"), ("high", "low"),
             ("low", "high"), ("low", "low")]
    code = {pair: index for index, pair in enumerate(cases)}

    def case_of(reports, x):
        free = (reports[:, (k + x) // 8] >> ((k + x) % 8)) & 1
        high = (reports[:, x // 8] >> (x % 8)) & 1
        return np.where(free == 1, 0, np.where(high == 1, 1, 2))

    lookup = np.array([[code.get((first, second), -1) for second in ("z", "high", "low")]
                       for first in ("z", "high", "low")])

    def classify(reports):
        return lookup[case_of(reports, 0), case_of(reports, 1)]

    rows = 3 if k >= 3 else 2
    members = np.zeros((rows, k))
    members[0, 0] = members[1, 1] = 1.0
    if rows == 3:
        members[2, 2:] = 1.0
    return _Plan(np.arange(rows), mechanism.privacy_table(), classify, ["x=0", "x=1", "x=2"][:rows],
                 [f"0 {first}, 1 {second}" for first, second in cases], members)


def _class_lip_plan(mechanism):
    """A class-symmetric design: inputs u and v (``ClassSymmetricLIP.pair``) and one value per class for the rest
    of it; classes of outputs by (orbit, u's case, v's case) (``ClassSymmetricLIP.privacy_table``)."""
    k, u, v = mechanism.k, *mechanism.pair()
    members = mechanism.classes_of_rows()
    lookup = np.full((len(mechanism.orbits), 3, 3), -1)
    for index, (o, first, second) in enumerate(mechanism.groups()):
        lookup[o, first, second] = index

    def case_of(reports, x):
        free = (reports[:, 2 + (k + x) // 8] >> ((k + x) % 8)) & 1
        high = (reports[:, 2 + x // 8] >> (x % 8)) & 1
        return np.where(free == 1, 0, np.where(high == 1, 1, 2))

    def classify(reports):
        orbit = reports[:, 0].astype(np.int64) + 256 * reports[:, 1].astype(np.int64)
        return lookup[orbit, case_of(reports, u), case_of(reports, v)]

    inputs = np.array([int(np.flatnonzero(row)[0]) for row in members])
    names = ["free", "high", "low"]
    return _Plan(inputs, mechanism.privacy_table(), classify, [f"x={x}" for x in inputs],
                 [f"orbit {o}: {u} {names[a]}, {v} {names[b]}" for o, a, b in mechanism.groups()], members)


_PLANS = {"table": _table_plan, "grr": _grr_plan, "oue": _oue_plan, "unary": _unary_plan, "olh": _olh_plan,
          "hashing": _hashing_plan, "hadamard": _hadamard_plan, "harmony-categorical": _harmony_categorical_plan,
          "harmony-mixed": _harmony_mixed_plan, "harmony-numeric": _harmony_numeric_plan, "duchi": _duchi_plan,
          "laplace": _laplace_plan, "piecewise": _piecewise_plan, "hybrid": _piecewise_plan, "subset": _subset_plan,
          "subset-lip": _subset_lip_plan, "class-lip": _class_lip_plan}

__all__ = ["DEFAULT_REPORTS", "AuditResult", "audit", "clopper_pearson", "downward", "empirical_epsilon"]
