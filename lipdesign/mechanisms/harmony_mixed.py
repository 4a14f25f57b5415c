"""Harmony's collection of mixed numeric and categorical tuples (docs/math.md §9.5, Nguyen et al. 2016).

Each user draws ONE attribute j uniformly and reports a single bit about it, so the whole tuple is eps-LDP:
a numeric attribute (value in [-1, 1]) goes through Harmony Alg. 2 (the value is +-d c), a categorical one
through the Bassily-Smith projection of Alg. 3 with its row s (the value is d alpha). From the same reports
the server estimates the mean of every numeric attribute and the frequencies of every categorical one. Numpy only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.domains import MixedTuple
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan, row_classes, sign_plan
from lipdesign.mechanisms.base import SEED_RULE, Mechanism
from lipdesign.mechanisms.harmony_categorical import MAX_SIGNS, HarmonyCategorical, signed_counts
from lipdesign.mechanisms.postprocess import consistent
from lipdesign.mechanisms.rr import one_bit, one_bit_scale, one_bit_table
from lipdesign.mechanisms.sampling import (
    implemented_exp,
    public_seed,
    sign_field,
    structured_reports,
)
from lipdesign.notions import LDP
from lipdesign.validation import index_array, integer
from lipdesign.verification import sampled, verify_table

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.aggregate import Aggregate

#: The report of one user: the attribute drawn, the projection row (0 for a numeric attribute) and the bit.
REPORT_DTYPE = np.dtype([("attribute", "<i4"), ("row", "<i4"), ("sign", "i1")])


def attribute_seed(seed: int, attribute: int) -> int:
    """The public seed of categorical attribute ``attribute``'s projection, derived from the mechanism's seed
    (numpy SeedSequence([seed, attribute]), top 63 bits of its first 64-bit word)."""
    return int(np.random.SeedSequence([seed, attribute]).generate_state(1, np.uint64)[0] >> np.uint64(1))


class HarmonyMixed(Mechanism):
    """One report per user for a tuple of numeric and categorical attributes (docs/math.md §9).

    Each user draws one attribute j uniformly and reports a single bit about it (docs/math.md §9.5): Harmony
    Alg. 2 for a numeric attribute, the Bassily-Smith projection of ``HarmonyCategorical`` for a categorical
    one, so the whole tuple is eps-LDP. ``perturb(values)`` takes values of shape (n, d), column j holding
    attribute j (category indices as numbers). ``estimate(reports, method="unbiased")`` gives, per attribute,
    the estimated mean (float) or the estimated frequencies (array of length k), by the paper's estimators with
    factor d (``Estimate.attribute(j)``); ``method`` is HarmonyCategorical's ("unbiased" solves G f =
    projection, "projection" is the paper's, with mean G f; the default is "projection" only if some attribute
    has m < k). ``consistency`` applies to the frequencies.

    Parameters
    ----------
    epsilon : float
        The LDP level of the whole tuple, in [1e-6, 10].
    attributes : sequence of str or int
        One entry per attribute: "numeric" (values in [-1, 1]; see ``lipdesign.Range``) or an int k >= 2 (a
        categorical attribute with categories 0..k-1).
    m : int, optional
        The projection rows of every categorical attribute; default HarmonyCategorical's for its k,
        max(4096, 4k) (files store m as null, so that rule is part of the format). All projections together
        hold at most ``MAX_SIGNS`` signs.
    seed : int, optional
        The public seed of the projections: attribute j uses ``attribute_seed(seed, j)`` (default: drawn from
        the OS and stored in the mechanism's file).

    Attributes
    ----------
    d : int
        The number of attributes.
    categorical : dict of int to HarmonyCategorical
        The projection mechanism of each categorical attribute, by attribute index.

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10], an attribute is neither "numeric" nor an integer >= 2, m < 1, the
        projections together need more than ``MAX_SIGNS`` signs, or the seed is not a valid public seed;
        ``estimate`` with ``consistency`` when every attribute is numeric.

    See Also
    --------
    HarmonyNumeric, HarmonyCategorical : The two kinds of attribute alone.

    Notes
    -----
    Reports: a structured array of ``REPORT_DTYPE`` (fields "attribute" int32, "row" int32, 0 for a numeric
    attribute, and "sign" int8); the aggregate holds the sum of signs per numeric attribute and the signed count
    of each projection row per categorical one.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> mixed = ld.mechanisms.HarmonyMixed(2.0, ["numeric", 3], m=32, seed=5)
    >>> certificate = mixed.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 2.0)

    A numeric attribute in [-1, 1] and a categorical one with 3 categories, one row per user:

    >>> rng = np.random.default_rng(0)
    >>> values = np.column_stack([rng.uniform(-1, 1, 20_000), rng.choice(3, 20_000, p=[0.5, 0.3, 0.2])])
    >>> reports = mixed.perturb(values, rng=1)
    >>> reports[:3]
    array([(0,  0, -1), (1,  6,  1), (1, 18,  1)],
          dtype=[('attribute', '<i4'), ('row', '<i4'), ('sign', 'i1')])
    >>> estimate = mixed.estimate(reports)
    >>> round(float(values[:, 0].mean()), 3), round(float(estimate.attribute(0)), 3)
    (0.005, -0.006)
    >>> np.round(estimate.attribute(1), 3)
    array([0.512, 0.3  , 0.2  ])
    >>> round(float(np.sqrt(mixed.variance(values, n=20_000)[0])), 3)  # the mean's standard deviation
    0.012
    """

    family = "harmony-mixed"
    parameter_rules = (("attributes", 'list of "numeric" or a category count k >= 2, e.g. ["numeric", 3]'),
                       ("m", (f"integer >= 1, all projections together at most {MAX_SIGNS} signs (by default "
                              "max(4096, 4 k) per attribute)")),
                       ("seed", SEED_RULE))
    methods = ("unbiased", "projection")

    def __init__(self, epsilon: float, attributes: Sequence[int | str], m: int | None = None,
                 seed: int | None = None) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.exp_epsilon = implemented_exp(self.epsilon)
        self.input_domain = MixedTuple(attributes)
        self.attributes = self.input_domain.attributes
        self.d = self.input_domain.d
        self.m = None if m is None else integer(m, "m")
        self.seed = public_seed(seed)
        categorical = {}
        for j, attribute in enumerate(self.attributes):
            if attribute == "numeric":
                continue
            categorical[j] = HarmonyCategorical(self.epsilon, attribute, m=self.m, seed=attribute_seed(self.seed, j))
            signs = sum(mechanism.m * mechanism.k for mechanism in categorical.values())
            if signs > MAX_SIGNS:
                raise ValidationError(f"attributes has categorical attributes needing {signs} projection signs by "
                                      f"attribute {j}; all of them together may hold at most {MAX_SIGNS} (pass a "
                                      "smaller m)")
        self.categorical = categorical

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "attributes": list(self.attributes), "m": self.m, "seed": self.seed}

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, ["numeric", 4], m=32, seed=5)

    @property
    def default_method(self) -> str:
        """The estimation method used when none is given: "unbiased" unless some categorical attribute has
        m < k."""
        unbiased = all(mechanism.m >= mechanism.k for mechanism in self.categorical.values())
        return "unbiased" if unbiased else "projection"

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The realised one-bit table (``one_bit_table``), whose epsilon is the mechanism's.

        Every output (j, s, b) has probability (1/d)(1/m_j) Pr[b | t] with t = t_j or a projection sign in
        {-1, 1}.

        Returns
        -------
        numpy.ndarray
            2 x 2: rows t = +1 and -1, columns the signs + and -.
        """
        return one_bit_table(self.exp_epsilon)

    def _certify(self):
        """Attribute sampling (docs/math.md §9.5, §13): the attribute is drawn independently of the data and
        published, so the tuple's epsilon is the largest of the attributes' certificates (the one-bit table for a
        numeric attribute, HarmonyCategorical's for a categorical one), against the claim eps."""
        numeric = verify_table(self.privacy_table(), LDP(self.epsilon), exact=True)
        parts = [self.categorical[j].verify() if j in self.categorical else numeric for j in range(self.d)]
        return sampled(parts, self.epsilon)

    def _perturb(self, columns, rng, user_ids):
        """One structured report per row of ``values``: the attribute drawn, the row, the bit."""
        n = columns[0].size
        reports = np.zeros(n, dtype=REPORT_DTYPE)
        reports["attribute"] = rng.integers(0, self.d, n)
        inputs = np.empty(n)
        for j, column in enumerate(columns):
            chosen = np.flatnonzero(reports["attribute"] == j)
            if j in self.categorical:
                mechanism = self.categorical[j]
                rows = rng.integers(0, mechanism.m, chosen.size)
                reports["row"][chosen] = rows
                inputs[chosen] = mechanism.signs[rows, column[chosen]]
            else:
                inputs[chosen] = column[chosen]
        reports["sign"] = one_bit(inputs, self.exp_epsilon, rng)
        return reports

    def empty_reports(self) -> npt.NDArray[np.void]:
        return np.zeros(0, dtype=REPORT_DTYPE)

    def _statistics(self, reports):
        structured_reports(reports, REPORT_DTYPE)
        attribute = index_array(reports["attribute"], self.d, "reports['attribute']")
        sign = sign_field(reports)
        statistics = {"sign_sums": signed_counts(attribute, sign, self.d)}
        for j in range(self.d):
            chosen = attribute == j
            rows = reports["row"][chosen]
            size = self.categorical[j].m if j in self.categorical else 1
            bad = np.flatnonzero((rows < 0) | (rows >= size))
            if bad.size:
                raise ValidationError(f"reports['row'] is {rows[bad[0]]} in a report on attribute {j}; it must "
                                      f"lie in 0..{size - 1}")
            if j in self.categorical:
                statistics[f"attribute_{j}_row_sums"] = signed_counts(rows.astype(np.int64), sign[chosen], size)
        return attribute.size, statistics

    def _estimate(self, aggregate, method):
        """Per attribute: the mean (1/n) sum of d c b (numeric) or the frequencies: the projection
        (1/n) sum of d c b signs[s, l], solved against G for ``method="unbiased"``."""
        weight = self.d * one_bit_scale(self.exp_epsilon)
        return [self.categorical[j].project(aggregate[f"attribute_{j}_row_sums"], weight, aggregate.n, method)
                if j in self.categorical else float(weight * aggregate["sign_sums"][j] / aggregate.n)
                for j in range(self.d)]

    def term_moments(self, aggregate: Aggregate) -> tuple[npt.NDArray[np.float64], ...]:
        """The moments of the per-user terms Y whose mean is the estimate, per entry of the flattened estimate
        (docs/math.md §15).

        For numeric attribute j, Y = d c sign when the user drew j and 0 otherwise, and the aggregate does not
        count the users who drew j, so sum Y^2 is its expectation n d c^2 (s^2 is affine in it: its expectation is
        unchanged); nan for the frequencies of a categorical attribute.

        Parameters
        ----------
        aggregate : Aggregate
            An aggregate of this mechanism's reports.

        Returns
        -------
        tuple of numpy.ndarray
            (sum Y, sum Y^2, users), each with one entry per mean and per category.
        """
        weight = self.d * one_bit_scale(self.exp_epsilon)
        n = aggregate.n
        parts = [np.full((3, self.categorical[j].k), np.nan) if j in self.categorical else
                 np.array([[weight * aggregate["sign_sums"][j]], [n * weight**2 / self.d], [n]], dtype=float)
                 for j in range(self.d)]
        return tuple(np.hstack(parts))

    def _consistent(self, estimate, consistency):
        if consistency is None:
            return estimate
        if not self.categorical:
            raise ValidationError(f"consistency is {consistency!r}; it applies to frequencies, and these attributes "
                                  "are all numeric")
        return [consistent(value, consistency) if j in self.categorical else value for j, value in enumerate(estimate)]

    def _expected(self, columns, method, user_ids):
        """E[estimate] for the population: the means, and the frequencies f ("unbiased") or G f ("projection":
        the paper's cross-talk, O(1/sqrt m))."""
        return [self.categorical[j].expected_estimate(self._frequencies(j, column), method=method)
                if j in self.categorical else float(column.mean()) for j, column in enumerate(columns)]

    def _variance(self, columns, n, method, user_ids):
        """Per attribute, the exact variance of ``estimate(perturb(values), method)`` for this population. A
        user's term is d c b (numeric) or d c b signs[s, :] (categorical), nonzero with probability 1/d, so
        Var = (d c^2 - t_j^2 averaged)/n; for a categorical attribute see HarmonyCategorical.variance_with, with
        second moment d c^2."""
        second_moment = self.d * one_bit_scale(self.exp_epsilon) ** 2
        return [self.categorical[j].variance_with(self._frequencies(j, column), n, method, second_moment)
                if j in self.categorical else float((second_moment - np.mean(column**2)) / n)
                for j, column in enumerate(columns)]

    def _frequencies(self, j, column):
        return np.bincount(column, minlength=self.categorical[j].k) / column.size

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs A (numeric +1, category 0) and B (numeric -1, category
        1); classes (attribute, row class, sign); a numeric attribute is row class (+1, -1) always.

        Returns
        -------
        AuditPlan
            2 inputs and 8 classes per attribute.
        """
        d = self.d
        frequencies, lookup = np.zeros((d, 4)), {}
        for j in range(d):
            if j in self.categorical:
                lookup[j], frequencies[j] = row_classes(self.categorical[j].signs)
            else:
                frequencies[j, 1] = 1
        frequencies /= d
        numeric = np.array([attribute == "numeric" for attribute in self.attributes])
        inputs = np.array([np.where(numeric, 1.0, 0.0), np.where(numeric, -1.0, 1.0)])

        def classify(reports):
            attribute = reports["attribute"].astype(np.int64)
            row_class = np.ones(attribute.size, dtype=np.int64)
            for j, classes in lookup.items():
                chosen = attribute == j
                row_class[chosen] = classes[reports["row"][chosen]]
            return 8 * attribute + 2 * row_class + (reports["sign"] < 0)

        inputs, table, names = sign_plan(inputs, frequencies, one_bit_table(self.exp_epsilon))
        return AuditPlan(inputs, table, classify, ["A", "B"], names)

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §7-§8).

        Returns
        -------
        dict
            ``d``, ``exp_epsilon`` (e^eps as the sampler uses it) and per attribute its ``projection_numbers``,
            or "numeric".
        """
        return {"d": self.d, "exp_epsilon": self.exp_epsilon, "attributes": [
            self.categorical[j].projection_numbers() if j in self.categorical else "numeric" for j in range(self.d)]}
