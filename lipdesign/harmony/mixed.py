"""Harmony's collection of mixed numeric and categorical tuples (MATH §9, seed 000 "mixed attributes").

Each user draws ONE attribute j uniformly and reports a single bit about it, so the whole tuple is eps-LDP:
a numeric attribute (value in [-1, 1]) goes through Harmony Alg. 2 (the value is +-d c), a categorical one
through the Bassily-Smith projection of Alg. 3 with its row s (the value is d alpha). From the same reports
the server estimates the mean of every numeric attribute and the frequencies of every categorical one.
"""

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.harmony._base import (
    HarmonyMechanism,
    as_generator,
    category_values,
    integer_parameter,
    one_bit,
    one_bit_scale,
    one_bit_table,
    public_seed,
    sign_field,
    structured_reports,
    unit_values,
)
from lipdesign.harmony.frequency import MAX_SIGNS, HarmonyCategorical, check_method
from lipdesign.validation import float_array

#: The report of one user: the attribute drawn, the projection row (0 for a numeric attribute) and the bit.
REPORT_DTYPE = np.dtype([("attribute", "<i4"), ("row", "<i4"), ("sign", "i1")])


def attribute_seed(seed, attribute):
    """The public seed of categorical attribute ``attribute``'s projection, derived from the mechanism's seed
    (numpy SeedSequence([seed, attribute]), top 63 bits of its first 64-bit word)."""
    return int(np.random.SeedSequence([seed, attribute]).generate_state(1, np.uint64)[0] >> np.uint64(1))


class HarmonyMixed(HarmonyMechanism):
    """One report per user for a tuple of numeric and categorical attributes (MATH §9).

    ``attributes``: one entry per attribute, "numeric" (values in [-1, 1]; see ``Range``) or an int k >= 2
    (a categorical attribute with categories 0..k-1). ``m`` and ``seed``: the projection size and public seed
    of the categorical attributes (attribute j uses ``attribute_seed(seed, j)``; ``m=None`` takes
    HarmonyCategorical's default for its k); all projections together hold at most MAX_SIGNS signs.

    ``perturb(values)``: values of shape (n, d), column j holding attribute j (category indices as numbers);
    reports are structured (REPORT_DTYPE). ``estimate(reports, method="unbiased")``: a list with, per
    attribute, the estimated mean (float) or the estimated frequencies (array of length k), by the paper's
    estimators with factor d; ``method`` is HarmonyCategorical's ("unbiased" solves G f = projection,
    "projection" is the paper's, with mean G f).
    """

    def __init__(self, epsilon, attributes, m=None, seed=None):
        super().__init__(epsilon)
        if not isinstance(attributes, (list, tuple)):
            raise ValidationError(f"attributes is {attributes!r}; it must be a list of 'numeric' or category "
                                  "counts k >= 2, in column order")
        if not attributes:
            raise ValidationError("attributes is empty; a tuple needs at least one attribute")
        self.d = len(attributes)
        self.m = None if m is None else integer_parameter(m, "m")
        self.seed = public_seed(seed)
        self.categorical = {}
        for j, attribute in enumerate(attributes):
            if isinstance(attribute, str) and attribute == "numeric":
                continue
            if isinstance(attribute, str):
                raise ValidationError(f"attributes[{j}] is {attribute!r}; each attribute must be 'numeric' or "
                                      "an int k >= 2 (a categorical attribute with k categories)")
            k = integer_parameter(attribute, f"attributes[{j}]", low=2)
            self.categorical[j] = HarmonyCategorical(self.epsilon, k, m=self.m, seed=attribute_seed(self.seed, j))
            signs = sum(mechanism.m * mechanism.k for mechanism in self.categorical.values())
            if signs > MAX_SIGNS:
                raise ValidationError(f"attributes has categorical attributes needing {signs} projection signs by "
                                      f"attribute {j}; all of them together may hold at most {MAX_SIGNS} (pass a "
                                      "smaller m)")
        self.attributes = tuple(self.categorical[j].k if j in self.categorical else "numeric" for j in range(self.d))

    def parameters(self):
        return {"epsilon": self.epsilon, "attributes": list(self.attributes), "m": self.m, "seed": self.seed}

    def privacy_table(self):
        """Every output (j, s, b) has probability (1/d)(1/m_j) Pr[b | t] with t = t_j or a projection sign
        in {-1, 1}, so the mechanism's epsilon is the one-bit table's."""
        return one_bit_table(self.exp_epsilon)

    def _columns(self, values):
        """(n, d) float array validated column by column: [-1, 1] or a category index."""
        array = float_array(values, "values", 2)
        if array.shape[1] != self.d:
            raise ValidationError(f"values has shape {array.shape}; expected (n, {self.d}), one column per "
                                  "attribute")
        columns = []
        for j, column in enumerate(array.T):
            if j in self.categorical:
                columns.append(category_values(column, self.categorical[j].k, f"values[:, {j}]"))
            else:
                columns.append(unit_values(column, 1, f"values[:, {j}]")[:, 0])
        return columns

    def perturb(self, values, rng=None):
        """One structured report per row of ``values`` (MATH §9): the attribute drawn, the row, the bit."""
        columns = self._columns(values)
        generator = as_generator(rng)
        n = columns[0].size
        reports = np.zeros(n, dtype=REPORT_DTYPE)
        reports["attribute"] = generator.integers(0, self.d, n)
        inputs = np.empty(n)
        for j, column in enumerate(columns):
            chosen = np.flatnonzero(reports["attribute"] == j)
            if j in self.categorical:
                mechanism = self.categorical[j]
                rows = generator.integers(0, mechanism.m, chosen.size)
                reports["row"][chosen] = rows
                inputs[chosen] = mechanism.signs[rows, column[chosen]]
            else:
                inputs[chosen] = column[chosen]
        reports["sign"] = one_bit(inputs, self.exp_epsilon, generator)
        return reports

    def _check_reports(self, reports):
        structured_reports(reports, REPORT_DTYPE)
        attribute = category_values(reports["attribute"], self.d, "reports['attribute']")
        for j in range(self.d):
            rows = reports["row"][attribute == j]
            size = self.categorical[j].m if j in self.categorical else 1
            bad = np.flatnonzero((rows < 0) | (rows >= size))
            if bad.size:
                raise ValidationError(f"reports['row'] is {rows[bad[0]]} in a report on attribute {j}; it must "
                                      f"lie in 0..{size - 1}")
        return reports

    def estimate(self, reports, method="unbiased"):
        """Per attribute: the mean (1/n) sum of d c b (numeric) or the frequencies: the projection
        (1/n) sum of d c b signs[s, l], solved against G for ``method="unbiased"`` (MATH §9)."""
        reports = self._check_reports(reports)
        check_method(method)
        n = reports.size
        weights = self.d * one_bit_scale(self.exp_epsilon) * sign_field(reports)
        estimates = []
        for j in range(self.d):
            chosen = reports["attribute"] == j
            if j in self.categorical:
                estimates.append(self.categorical[j].project(reports["row"][chosen], weights[chosen], n, method))
            else:
                estimates.append(float(weights[chosen].sum() / n))
        return estimates

    def expected_estimate(self, values, method="unbiased"):
        """E[estimate] for the population ``values``: the means, and the frequencies f ("unbiased") or G f
        ("projection": the paper's cross-talk, O(1/sqrt m))."""
        columns = self._columns(values)
        check_method(method)
        return [self.categorical[j].expected_estimate(self._frequencies(j, column), method)
                if j in self.categorical else float(column.mean()) for j, column in enumerate(columns)]

    def variance(self, values, method="unbiased"):
        """Per attribute, the exact variance of ``estimate(perturb(values), method)`` for this population. A
        user's term is d c b (numeric) or d c b signs[s, :] (categorical), nonzero with probability 1/d, so
        Var = (d c^2 - t_j^2 averaged)/n; for a categorical attribute Cov(projection) = (d c^2 G - G diag(f) G)/n,
        whose diagonal is (d c^2 - sum_v f_v G[v, l]^2)/n, and the unbiased G^-1 projection has
        Var = (d c^2 (G^-1)[l, l] - f_l)/n."""
        columns = self._columns(values)
        check_method(method)
        n = columns[0].size
        second_moment = self.d * one_bit_scale(self.exp_epsilon) ** 2
        result = []
        for j, column in enumerate(columns):
            if j not in self.categorical:
                result.append(float((second_moment - np.mean(column**2)) / n))
                continue
            f, mechanism = self._frequencies(j, column), self.categorical[j]
            if method == "unbiased":
                result.append((second_moment * np.diag(mechanism.gram_inverse) - f) / n)
            else:
                result.append((second_moment - f @ mechanism.gram**2) / n)
        return result

    def _frequencies(self, j, column):
        return np.bincount(column, minlength=self.categorical[j].k) / column.size
