"""Verification: the tightest epsilon a table actually gives (docs/math.md §3), in floating point or exactly.

``verify_table(table, notion, prior)`` returns a Certificate with the tightest epsilon, where it is attained
(output y, secret value g or input pair, and the prior), and pass/fail against the claim. Each table row is read as the
distribution a perturber samples: the stored numbers divided by their row sum. ``exact=True`` does this
in rational arithmetic (every stored float is the rational number it is, fractions.Fraction) and compares
against a rational lower bound of e^eps, so a pass is a proof about the stored numbers; its reported
epsilon is rounded up, never down. Floating-point mode is approximate (within FLOAT_SLACK).
"""

import decimal
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.model.prior import Prior
from lipdesign.model.prior_set import GREEDY_KINDS
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.validation import stochastic_rows

#: Floating-point verification passes when the tightest epsilon exceeds the claim by at most this.
FLOAT_SLACK = 1e-9


@dataclass(frozen=True)
class Certificate:
    """What verification found. With ``exact=True``, ``epsilon`` is an upper bound on the table's tightest
    epsilon; in floating point it is the computed value."""

    notion: str
    claimed_epsilon: float | None
    epsilon: float
    passed: bool | None
    exact: bool
    worst: dict = field(default_factory=dict)
    #: How an exact certificate was computed, when not in rational arithmetic (a bounded-rounding method).
    arithmetic: str = ""

    def summary(self):
        verdict = {True: "PASS", False: "FAIL", None: "no claim"}[self.passed]
        mode = (self.arithmetic or "exact rational") if self.exact else "floating point"
        claim = "" if self.claimed_epsilon is None else f" against claimed eps = {self.claimed_epsilon:g}"
        return (f"{verdict}: tightest {self.notion} epsilon <= {self.epsilon:.12g}{claim} ({mode}); "
                f"worst at {self.worst}")

    def to_dict(self):
        return {"notion": self.notion, "claimed_epsilon": self.claimed_epsilon, "epsilon": self.epsilon,
                "passed": self.passed, "exact": self.exact, "worst": self.worst}


def exp_bounds(epsilon):
    """Rational (lower, upper) bracket of e^epsilon for the float ``epsilon`` (decimal exp at 60 digits)."""
    with decimal.localcontext() as context:
        context.prec = 60
        value = Fraction(decimal.Decimal(epsilon).exp())
    slack = value * Fraction(1, 10**50)
    return value - slack, value + slack


def log_upper(ratio):
    """A float >= ln(ratio) for a Fraction or float ratio >= 1 (outward rounding)."""
    if ratio == math.inf:
        return math.inf
    if ratio == 1:
        return 0.0
    value = math.log1p(float(ratio - 1))
    for _ in range(3):
        value = math.nextafter(value, math.inf)
    return max(value, 0.0)


def _as_numbers(array, exact):
    """Nested lists of Fractions (exact) or floats."""
    array = np.asarray(array, dtype=float)
    return [_as_numbers(row, exact) for row in array] if array.ndim > 1 else \
        [Fraction(float(v)) if exact else float(v) for v in array]


def _normalised(vector):
    total = sum(vector)
    return [v / total for v in vector]


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


class _Scenarios:
    """min and max of P . q over the priors a LIP notion enforces (docs/math.md §3): a plain max over listed
    priors, a greedy fill for a box or a TV ball intersected with the simplex."""

    def __init__(self, notion, prior, exact):
        self.kind = "listed"
        prior_set = getattr(notion, "prior_set", None)
        if isinstance(notion, WorstCaseLIP):
            self.priors = _as_numbers(np.eye(prior.k), exact)
        elif prior_set is None:
            self.priors = [_normalised(_as_numbers(prior.probabilities, exact))]
        elif prior_set.kind in GREEDY_KINDS:
            self.kind = prior_set.kind
            self.parameters = {key: _as_numbers(value, exact) if isinstance(value, list) else
                               (Fraction(value) if exact else float(value))
                               for key, value in prior_set.parameters.items()}
            if self.kind == "tv_ball":
                self.parameters["center"] = _normalised(self.parameters["center"])
        else:
            self.priors = [_normalised(row) for row in _as_numbers(prior_set.vertices, exact)]

    def mass_range(self, column):
        """((min P.q, argmin P), (max P.q, argmax P))."""
        if self.kind == "listed":
            masses = [_dot(p, column) for p in self.priors]
            low, high = masses.index(min(masses)), masses.index(max(masses))
            return (masses[low], self.priors[low]), (masses[high], self.priors[high])
        return self._greedy(column, lowest=True), self._greedy(column, lowest=False)

    def _greedy(self, column, lowest):
        order = sorted(range(len(column)), key=column.__getitem__, reverse=not lowest)
        if self.kind == "box":
            prior = list(self.parameters["lower"])
            left = 1 - sum(prior)
            for x in order:
                step = min(self.parameters["upper"][x] - prior[x], left)
                prior[x] += step
                left -= step
        else:  # move up to `radius` of mass onto the best coordinate, taking it from the worst ones first
            prior = list(self.parameters["center"])
            receiver, left = order[0], self.parameters["radius"]
            for x in reversed(order[1:]):
                step = min(prior[x], left)
                prior[x] -= step
                prior[receiver] += step
                left -= step
        return _dot(prior, column), prior


def _ratio(numerator, denominator):
    if denominator == 0:
        return math.inf if numerator > 0 else 0
    return numerator / denominator


def _worst_lip(table_columns, notion, prior, exact):
    """Largest posterior/prior ratio of G over outputs y, secret values g and enforced priors."""
    conditional = None if notion.secret is None else \
        [_normalised(row) for row in _as_numbers(notion.conditional(prior.k), exact)]
    scenarios = _Scenarios(notion, prior, exact)
    best, worst = 0, {}
    for y, column in enumerate(table_columns):
        if not any(column):
            continue
        (low, low_prior), (high, high_prior) = scenarios.mass_range(column)
        if notion.secret is None:  # G = X: the secret masses are the column's entries; only its extremes can be worst
            largest, smallest = max(column), min(column)
            candidates = [(column.index(largest), largest), (column.index(smallest), smallest)]
        else:
            candidates = [(g, _dot(row, column)) for g, row in enumerate(conditional)]
        for g, secret_mass in candidates:
            for ratio, side, where in ((_ratio(secret_mass, low), "upper", low_prior),
                                       (_ratio(high, secret_mass), "lower", high_prior)):
                if ratio > best:
                    best = ratio
                    worst = {"output": y, "secret": g, "side": side, "prior": [float(p) for p in where]}
    return best, worst


def _worst_ldp(table_columns):
    best, worst = 0, {}
    for y, column in enumerate(table_columns):
        if not any(column):
            continue
        ratio = _ratio(max(column), min(column))
        if ratio > best:
            best = ratio
            worst = {"output": y, "inputs": [column.index(max(column)), column.index(min(column))]}
    return best, worst


def tightest(table, notion, prior, *, exact=False):
    """(largest ratio, worst place) of ``table`` under ``notion``; the tightest epsilon is ln(ratio)."""
    rows = [_normalised(row) for row in _as_numbers(table, exact)]  # what a perturber samples
    columns = [list(column) for column in zip(*rows)]
    if isinstance(notion, LDP):
        return _worst_ldp(columns)
    if isinstance(notion, (LIP, WorstCaseLIP)):
        return _worst_lip(columns, notion, prior, exact)
    raise ValidationError(f"notion is {notion!r}; it must be ld.LDP, ld.LIP or ld.WorstCaseLIP")


def check_table(table, k=None):
    """A finite, non-negative table whose rows sum to 1 within 1e-9, with ``k`` rows when given (kept as
    given: verification reads the numbers as they are)."""
    table = stochastic_rows(table, "table")
    if k is not None and table.shape[0] != k:
        raise ValidationError(f"table has {table.shape[0]} rows; it must have one per value of the prior ({k})")
    return table


def verify_table(table, notion, prior=None, *, exact=True):
    """Certificate of the tightest epsilon of ``table`` under ``notion`` (docs/math.md §3); the claim checked is
    ``notion.epsilon``.

    ``prior`` (a Prior or probabilities) is needed for LIP notions; it is checked against the notion's secret and
    prior set for sizes only (membership of the design prior in a prior set is a design-time rule). Exact mode
    (the default) has no slack and rounds the reported epsilon up; ``exact=False`` is floating point and passes
    within FLOAT_SLACK.
    """
    if not isinstance(notion, (LDP, LIP, WorstCaseLIP)):
        raise ValidationError(f"notion is {notion!r}; verify needs ld.LIP, ld.LDP or ld.WorstCaseLIP")
    if prior is not None and not isinstance(prior, Prior):
        prior = Prior(prior)
    if prior is None:
        if isinstance(notion, LIP):
            raise ValidationError("prior is None; verifying an LIP notion needs the design prior")
        size = np.shape(table)[0] if np.ndim(table) == 2 and np.shape(table)[0] else 1
        prior = Prior(np.full(size, 1.0 / size))
    notion.check_sizes(prior)
    table = check_table(table, prior.k)
    ratio, worst = tightest(table, notion, prior, exact=exact)
    epsilon = log_upper(ratio) if ratio else 0.0
    if exact:
        passed = ratio <= exp_bounds(notion.epsilon)[0]
    else:
        passed = epsilon <= notion.epsilon + FLOAT_SLACK
    return Certificate(notion.kind, notion.epsilon, epsilon, bool(passed), exact, worst)


def compose(part, parts, claimed_epsilon):
    """Certificate of ``parts`` sequentially composed mechanisms, each certified by ``part`` (LDP budgets add,
    docs/math.md §2): epsilon = parts x part.epsilon rounded up, passed against ``claimed_epsilon``."""
    epsilon = part.epsilon if parts == 1 else math.nextafter(parts * part.epsilon, math.inf)
    worst = dict(part.worst, parts=parts, part_epsilon=part.epsilon)
    passed = bool(part.passed) and epsilon <= claimed_epsilon
    return Certificate(part.notion, claimed_epsilon, epsilon, passed, part.exact, worst)
