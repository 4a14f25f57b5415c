"""Multi-attribute collection of d categorical attributes per user (docs/math.md §20), beside Harmony's mixed mechanism.

- ``SPL`` (split): every attribute reported with GRR at its share eps_j of the budget, sum eps_j <= eps;
- ``SMP`` (sample): one attribute j drawn with probability pi_j (uniform by default), reported as (j, GRR_j(x_j));
- ``RSFD`` (random sampling plus fake data, Arcolezi et al. 2021): one attribute drawn uniformly and perturbed at the
  amplified eps' = ln(d (e^eps - 1) + 1) by GRR or unary encoding, every other attribute replaced by fake data, the
  attribute drawn not revealed.

Every report counts, per attribute j and value v, "supports" with probability p_j when x_j = v and q_j otherwise
(docs/math.md §20.3), so each attribute has the pure estimator of ``oracle.pure_estimate`` with these realised
(p_j, q_j). ``attribute_leakage(prior)`` certifies, for a ``JointPrior``, the LIP of every attribute through the whole
tuple of reports and through the reports on the other attributes only: exactly on the product table where it is small
enough, by a valid bound otherwise (docs/math.md §20.4). Numpy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.domains import MixedTuple
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee, Mechanism
from lipdesign.mechanisms.bit_reports import check_spare_bits, unary_reports
from lipdesign.mechanisms.bitsums import packed_column_sums
from lipdesign.mechanisms.estimate import PLUG_IN, Estimate
from lipdesign.mechanisms.oracle import pure_estimate, pure_variance
from lipdesign.mechanisms.postprocess import consistent, norm_sub
from lipdesign.mechanisms.rr import grr_certificate, grr_mixing_probability, grr_probabilities, randomized_response
from lipdesign.mechanisms.sampling import implemented_exp, index_reports, realized_probability, structured_reports
from lipdesign.notions import LDP, LIP
from lipdesign.validation import MAX_EPSILON, choice, fmt, index_array, integer, real_number
from lipdesign.verification import JointCertificate, sampled, sequential, verify_table
from lipdesign.verification.exact import MAX_VERIFY_ENTRIES

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.model import JointPrior
    from lipdesign.verification import Certificate

#: The largest product table (inputs x outputs) on which an attribute's LIP is certified exactly; past it the
#: valid bound of docs/math.md §20.4 is used (the cap of exact verification, docs/math.md §3.7).
MAX_TUPLE_ENTRIES = MAX_VERIFY_ENTRIES

#: SPL keeps the counts of every pair of reported values (``pair_estimate``); their cells together are at most this.
MAX_PAIR_CELLS = 2**22

#: RS+FD with UE bounds an attribute's LIP from the pair tables over 2^k bit vectors up to this k (docs/math.md
#: §20.4); past it, by the tuple's LDP epsilon.
MAX_UE_PAIR_BITS = 12

#: RS+FD's perturbation of the attribute drawn, and its fake data for the others (docs/math.md §20.5).
RSFD_VARIANTS = ("grr", "ue-zero", "ue-random")

#: How an attribute's LIP was obtained (``AttributeLeakage``).
EXACT_TUPLE = "exact: the product table over the tuple"
EXACT_PAIRS = "exact: the largest over the attributes reported, each with its pair table"
TUPLE_LDP_BOUND = "valid bound: the LDP epsilon of the reports (eps-LDP is eps-LIP for every secret and prior)"
SAMPLED_BOUND = ("valid bound: RS+FD is a post-processing of reporting (j, y_j) for the attribute j drawn, whose LIP "
                 "is exact from the pair tables")

#: The structured report of SMP: the attribute drawn and its perturbed value.
SMP_DTYPE = np.dtype([("attribute", "<i4"), ("value", "<i8")])


def category_counts(k: Any) -> tuple[int, ...]:
    """The category counts of d >= 2 attributes, each an integer >= 2."""
    if isinstance(k, (str, bytes)) or not isinstance(k, (list, tuple)) or len(k) < 2:
        raise ValidationError(f"k is {fmt(k)}; it must list the category count (>= 2) of each of at least 2 "
                              "attributes")
    return tuple(integer(size, f"k[{j}]", low=2) for j, size in enumerate(k))


def budgets_within(budgets: Any, d: int, total: float, rule: str) -> tuple[float, ...]:
    """Per-attribute epsilons, one per attribute, each positive, and within ``total`` by ``rule`` ("sum" or "max")."""
    if isinstance(budgets, (str, bytes)) or not isinstance(budgets, (list, tuple)) or len(budgets) != d:
        raise ValidationError(f"budgets is {fmt(budgets)}; it must list one epsilon per attribute ({d})")
    values = tuple(real_number(value, f"budgets[{j}]", low=0.0, high=MAX_EPSILON) for j, value in enumerate(budgets))
    if min(values) <= 0:
        raise ValidationError(f"budgets[{values.index(min(values))}] is {min(values)!r}; every budget must be > 0")
    used = math.fsum(values) if rule == "sum" else max(values)
    if used > total:
        raise ValidationError(f"budgets is {fmt(list(values))}; its {rule} {used:.12g} exceeds the total epsilon "
                              f"{total:g}")
    return values


def kron(first: npt.NDArray[Any], second: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The Kronecker product of two tables (rows x columns), also of object arrays of Fractions."""
    rows, columns = first.shape[0] * second.shape[0], first.shape[1] * second.shape[1]
    return np.multiply.outer(first, second).transpose(0, 2, 1, 3).reshape(rows, columns)


def grr_full(alpha: float, size: int, exact: bool) -> npt.NDArray[Any]:
    """GRR's size x size table as the sampler realises it: Fractions (``exact``) or floats."""
    keep, lie = grr_probabilities(alpha, size, exact)
    table = np.full((size, size), lie, dtype=object if exact else float)
    np.fill_diagonal(table, keep)
    return table


def ue_full(keep: Any, other: Any, size: int, hot: bool) -> npt.NDArray[Any]:
    """Unary encoding over ``size`` bits as a size x 2^size table: row v is the distribution of the bit vector (bit j
    of column c is (c >> j) & 1) when bit v is 1 with probability ``keep`` and every other bit with ``other``; with
    ``hot=False`` every bit has ``other`` (the all-zero vector perturbed), the same in every row."""
    columns = np.arange(2**size)
    bits = (columns[None, :] >> np.arange(size)[:, None]) & 1  # (size, 2^size)
    rows = []
    for v in range(size):
        probability = [keep if (hot and j == v) else other for j in range(size)]
        entries = [math.prod(probability[j] if bits[j, c] else 1 - probability[j] for j in range(size))
                   for c in columns]
        rows.append(entries)
    return np.array(rows, dtype=object if isinstance(keep, Fraction) else float)


@dataclass(frozen=True)
class AttributeLeakage:
    """What the reports reveal about one attribute at a joint prior (docs/math.md §20.4): its LIP through the whole
    tuple of reports and through the reports on the other attributes only, each a certificate (exact or a valid
    bound; ``method`` says which).

    Parameters
    ----------
    name : str
        The attribute's name in the joint prior.
    through_tuple : Certificate
        The LIP of the attribute, as a latent secret of the tuple, through all the reports.
    through_others : Certificate
        The same through the tuple of reports without the attribute's own report.
    method : str
        How both were obtained (``EXACT_TUPLE``, ``EXACT_PAIRS``, ``TUPLE_LDP_BOUND`` or ``SAMPLED_BOUND``).
    """

    name: str
    through_tuple: Certificate
    through_others: Certificate
    method: str

    def summary(self) -> str:
        """One line: the attribute, its two epsilons, and how they were obtained.

        Returns
        -------
        str
            ``name: LIP <= a through the tuple, <= b through the others' reports (method)``.
        """
        return (f"{self.name}: LIP <= {self.through_tuple.epsilon:.6g} through the tuple, <= "
                f"{self.through_others.epsilon:.6g} through the others' reports ({self.method})")


def leakage_summary(leakage: Sequence[AttributeLeakage]) -> str:
    """What the reports reveal about each attribute, one line per attribute (``AttributeLeakage.summary``).

    Parameters
    ----------
    leakage : sequence of AttributeLeakage
        What ``attribute_leakage`` returns.

    Returns
    -------
    str
        The lines, joined.

    Examples
    --------
    >>> import lipdesign as ld
    >>> prior = ld.JointPrior([[0.4, 0.1], [0.1, 0.4]], names=["a", "b"])
    >>> print(ld.mechanisms.leakage_summary(ld.mechanisms.SMP(1.0, [2, 2]).attribute_leakage(prior)))
    a: LIP <= 0.620115 through the tuple, <= 0.32472 through the others' reports (exact: the largest ...)
    b: LIP <= 0.620115 through the tuple, <= 0.32472 through the others' reports (exact: the largest ...)
    """
    return "\n".join(row.summary() for row in leakage)


def mixture_classes(branches: Sequence[tuple[float, Sequence[npt.NDArray[np.float64]]]]) -> npt.NDArray[np.float64]:
    """The audit table of a tuple of reports classified attribute by attribute (docs/math.md §14): each branch is
    (weight, per-attribute (2, classes) tables for the inputs A and B), the classes of the tuple are the C-order
    product of the attributes' classes, and the table is the weighted sum of the branches' products."""
    table = None
    for weight, factors in branches:
        product = np.ones((2, 1))
        for factor in factors:
            product = np.einsum("ra,rb->rab", product, factor).reshape(2, -1)
        table = weight * product if table is None else table + weight * product
    assert table is not None  # noqa: S101 (at least one branch)
    return table


def product_class_names(widths: Sequence[int], names: Sequence[str]) -> list[str]:
    """The names of the C-order product of per-attribute classes, "a0:name,a1:name,..."."""
    labels = [""]
    for j, width in enumerate(widths):
        labels = [f"{label}{',' if label else ''}a{j}:{names[c]}" for label in labels for c in range(width)]
    return labels


def grr_classes(alpha: float, size: int) -> npt.NDArray[np.float64]:
    """GRR's report of inputs 0 and 1 in the classes y = 0, y = 1, other (``rr.grr_reduced_table``)."""
    from lipdesign.mechanisms.rr import grr_reduced_table

    return grr_reduced_table(alpha, size)


def tuple_classify(reports: npt.NDArray[Any], widths: Sequence[int]) -> npt.NDArray[np.int64]:
    """The C-order product class of int reports (n, d): per attribute y = 0, y = 1 or other (min(y, 2))."""
    classes = np.zeros(len(reports), dtype=np.int64)
    for j, width in enumerate(widths):
        classes = classes * width + np.minimum(np.asarray(reports)[:, j], width - 1)
    return classes


class MultiAttribute(Mechanism):
    """What the multi-attribute families share (docs/math.md §20): the input is a tuple of d categorical attributes
    (``MixedTuple`` of category counts ``k``), every attribute has support probabilities (``support``) and the pure
    estimator, and the reports of a user are the product of per-attribute factors in each branch of the sampler
    (``_branches``), from which the product table over the tuple is built."""

    k: tuple[int, ...]
    d: int
    #: Per attribute, (p_j, q_j): Pr[a report supports value v of attribute j] when x_j = v, and when not.
    support: tuple[tuple[float, float], ...]

    def _setup(self, epsilon: float, k: Any) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.k = category_counts(k)
        self.d = len(self.k)
        self.input_domain = MixedTuple(list(self.k))

    # -- estimation (docs/math.md §20.3) ------------------------------------------------------------------------
    def _supports(self, reports) -> tuple[list[npt.NDArray[np.int64]], int]:
        """Per attribute, how many reports support each value; and the number of reports."""
        raise NotImplementedError

    def _statistics(self, reports):
        supports, n = self._supports(reports)
        return n, {f"support_{j}": support for j, support in enumerate(supports)}

    def _estimate(self, aggregate, method):
        n = aggregate.n
        raw = [pure_estimate(aggregate[f"support_{j}"], n, p, q) for j, (p, q) in enumerate(self.support)]

        def errors():  # plug-in: the variance at the Norm-Sub projection of each attribute's estimate
            return np.concatenate([np.sqrt(pure_variance(norm_sub(part), n, p, q))
                                   for part, (p, q) in zip(raw, self.support)])

        return Estimate(np.concatenate(raw), errors, n=n, method=method, kind="tuple",
                        names=self.estimand_names(), note=PLUG_IN, parts=[("frequencies", size) for size in self.k])

    def _consistent(self, estimate, consistency):
        if consistency is None:
            return estimate
        offsets = np.cumsum((0,) + self.k)
        values = np.concatenate([consistent(estimate.values[start:end], consistency)
                                 for start, end in zip(offsets[:-1], offsets[1:])])
        return Estimate(values, estimate.standard_errors, n=estimate.n, method=estimate.method, kind="tuple",
                        names=estimate.names, raw=estimate.raw, note=estimate.note, parts=estimate.parts)

    def _frequencies(self, columns):
        return [np.bincount(column, minlength=size) / column.size for column, size in zip(columns, self.k)]

    def _expected(self, columns, method, user_ids):
        return self._frequencies(columns)

    def _variance(self, columns, n, method, user_ids):
        return [pure_variance(f, n, p, q) for f, (p, q) in zip(self._frequencies(columns), self.support)]

    def total_variance(self, prior: JointPrior, n: int = 1) -> float:
        """The sum over attributes and values of the estimate's variance for a population at the prior's
        marginals (docs/math.md §20.3): what the designs minimise.

        Parameters
        ----------
        prior : JointPrior
            The joint prior; only its marginals enter.
        n : int, default 1
            The number of users (1: the per-user figure).

        Returns
        -------
        float
            sum_j sum_v Var f_hat_{j, v}.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["a", "b"])
        >>> spl = ld.mechanisms.SPL(2.0, [2, 2])
        >>> round(spl.total_variance(prior), 4)  # 2 attributes x 2 values, each GRR's e/(e - 1)^2 at eps = 1, k = 2
        3.6827
        """
        self._check_prior(prior)
        n = integer(n, "n")
        return float(sum(pure_variance(prior.marginal(j).probabilities, n, p, q).sum()
                         for j, (p, q) in enumerate(self.support)))

    # -- the tuple under LIP (docs/math.md §20.4) ----------------------------------------------------------------
    def _branches(self, exact: bool) -> list[tuple[Any, list[npt.NDArray[Any]]]]:
        """(weight, per-attribute tables): the report's distribution is the weighted sum over branches of the
        Kronecker product of the tables (attribute j's rows its values, columns its report's values)."""
        raise NotImplementedError

    def _outputs(self) -> int:
        """The number of columns of the product table (before all-zero columns are dropped)."""
        return math.prod(table.shape[1] for table in self._branches(False)[0][1])

    def tuple_table(self, without: int | None = None, exact: bool = False) -> npt.NDArray[Any]:
        """Pr[reports | tuple] over the product domain (docs/math.md §20.4), as the sampler realises it.

        Parameters
        ----------
        without : int, optional
            An attribute whose own report is summed out (the reports on the others only); None keeps all.
        exact : bool, default False
            Fractions (an object array, what exact verification reads) or floats.

        Returns
        -------
        numpy.ndarray
            (prod k, outputs): rows the tuples in C order (the last attribute fastest), columns the joint reports
            that can occur (all-zero columns dropped).

        Raises
        ------
        ValidationError
            The table would have more than ``MAX_TUPLE_ENTRIES`` entries.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.SPL(2.0, [2, 2]).tuple_table().shape
        (4, 4)
        """
        entries = math.prod(self.k) * self._outputs()
        if entries > MAX_TUPLE_ENTRIES:
            raise ValidationError(f"k is {list(self.k)}; the product table would have {entries} entries, more than "
                                  f"MAX_TUPLE_ENTRIES = {MAX_TUPLE_ENTRIES}")
        table = None
        for weight, factors in self._branches(exact):
            if without is not None:
                factors = [np.ones((size, 1), dtype=object if exact else float) if j == without else factor
                           for j, (size, factor) in enumerate(zip(self.k, factors))]
            product = factors[0]
            for factor in factors[1:]:
                product = kron(product, factor)
            table = weight * product if table is None else table + weight * product
        assert table is not None  # noqa: S101 (every family has a branch)
        return table[:, np.asarray((table != 0).any(axis=0), dtype=bool)]

    def _check_prior(self, prior: JointPrior) -> None:
        from lipdesign.model import JointPrior

        if not isinstance(prior, JointPrior):
            raise ValidationError(f"prior is {fmt(prior)}; it must be an ld.JointPrior over the {self.d} attributes")
        if prior.k != self.k:
            raise ValidationError(f"prior has attributes of {list(prior.k)} values; this {type(self).__name__} "
                                  f"reports attributes of {list(self.k)}")

    def attribute_leakage(self, prior: JointPrior, epsilon: float | None = None) -> list[AttributeLeakage]:
        """Per attribute, its LIP at ``prior`` through the whole tuple of reports and through the reports on the
        other attributes only (docs/math.md §20.4), certified against ``epsilon``.

        Exact (rational arithmetic on the realised probabilities, rounded up) where the product table has at most
        ``MAX_TUPLE_ENTRIES`` entries or the family has an exact pairwise form (SMP); a valid bound otherwise.

        Parameters
        ----------
        prior : JointPrior
            The joint prior of the attributes (its category counts must be ``k``).
        epsilon : float, optional
            The claim checked; default the mechanism's LDP epsilon (``guarantee.epsilon``), which always holds.

        Returns
        -------
        list of AttributeLeakage
            One per attribute, in order; ``leakage_summary`` prints them.

        Raises
        ------
        ValidationError
            ``prior`` is not a JointPrior with these category counts, or ``epsilon`` is not an epsilon.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.JointPrior([[0.4, 0.1], [0.1, 0.4]], names=["a", "b"])
        >>> for row in ld.mechanisms.SPL(2.0, [2, 2]).attribute_leakage(prior):
        ...     print(row.summary())
        a: LIP <= 1.0654 through the tuple, <= 0.32472 through the others' reports (exact: the product table ...)
        b: LIP <= 1.0654 through the tuple, <= 0.32472 through the others' reports (exact: the product table ...)
        """
        self._check_prior(prior)
        claim = LIP(self.guarantee.epsilon if epsilon is None else epsilon).epsilon
        if math.prod(self.k) * self._outputs() > MAX_TUPLE_ENTRIES:
            return self._bounded_leakage(prior, claim)
        flat = prior.flat
        table = self.tuple_table(exact=True)
        rows = []
        for j in range(self.d):
            notion = LIP(claim, secret=prior.secret(j))
            others = verify_table(self.tuple_table(without=j, exact=True), notion, flat, exact=True)
            rows.append(AttributeLeakage(prior.names[j], verify_table(table, notion, flat, exact=True), others,
                                         EXACT_TUPLE))
        return rows

    def _bounded_leakage(self, prior: JointPrior, claim: float) -> list[AttributeLeakage]:
        raise NotImplementedError

    def _bound(self, epsilon: float, claim: float, method: str) -> JointCertificate:
        return JointCertificate("LIP", claim, epsilon, epsilon <= claim, True, {}, method=method)

    def attribute_lip(self, prior: JointPrior) -> npt.NDArray[np.float64]:
        """The LIP epsilon of every attribute through the tuple at ``prior``, in floating point (what the designs
        search with; ``attribute_leakage`` certifies it exactly).

        Parameters
        ----------
        prior : JointPrior
            The joint prior (its category counts must be ``k``; the product table must fit ``MAX_TUPLE_ENTRIES``).

        Returns
        -------
        numpy.ndarray
            (d,): max over reports y and values a of |ln(Pr[y | X_j = a] / Pr[y])|.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.JointPrior([[0.4, 0.1], [0.1, 0.4]], names=["a", "b"])
        >>> ld.mechanisms.SPL(2.0, [2, 2]).attribute_lip(prior).round(4)
        array([1.0654, 1.0654])
        """
        self._check_prior(prior)
        return tuple_lip(self.tuple_table(), prior)


def tuple_lip(table: npt.NDArray[np.float64], prior: JointPrior) -> npt.NDArray[np.float64]:
    """Per attribute j, max |ln(T_j q_y / P q_y)| over the columns q_y of ``table`` (rows the tuples in C order) with
    T_j = ``prior.secret(j).conditional``, in floating point (docs/math.md §20.2)."""
    marginal = prior.flat.probabilities @ table
    return np.array([np.abs(np.log((prior.secret(j).conditional @ table) / marginal)).max() for j in range(prior.d)])


class SPL(MultiAttribute):
    """Split the budget: every attribute reported with GRR at its share of epsilon (docs/math.md §20.3).

    Attribute j is perturbed by GRR at ``budgets[j]`` (by default epsilon / d each), independently, and the tuple of
    d reports is published, so the whole tuple is (sum of the budgets)-LDP (sequential composition of the exactly
    verified GRR tables, docs/math.md §13). ``perturb(values)`` takes values of shape (n, d), column j the index of
    attribute j's value; ``estimate`` gives every attribute's frequencies (``Estimate.attribute(j)``) by GRR's
    estimator, and ``pair_estimate`` the joint frequencies of two attributes (docs/math.md §20.6).

    Parameters
    ----------
    epsilon : float
        The LDP level of the whole tuple, in (0, 30].
    k : sequence of int
        The category count (>= 2) of each of d >= 2 attributes.
    budgets : sequence of float, optional
        Each attribute's epsilon, positive, summing to at most ``epsilon``; default epsilon / d each.

    Attributes
    ----------
    d : int
        The number of attributes.
    budgets : tuple of float
        The epsilon of each attribute's GRR.
    alphas : tuple of float
        Each GRR's mixing probability, as realised (``rr.grr_mixing_probability``).

    Raises
    ------
    ValidationError
        An epsilon outside (0, 30], fewer than 2 attributes or one with fewer than 2 categories, budgets that are
        not one positive epsilon per attribute or that sum to more than ``epsilon``, or more than ``MAX_PAIR_CELLS``
        cells of pair counts.

    See Also
    --------
    SMP, RSFD : The other multi-attribute protocols.
    lipdesign.designer.multi_attribute.design_spl : The budget split designed under LIP at a joint prior.

    Notes
    -----
    Reports: int64 (n, d), column j attribute j's perturbed value. The aggregate holds, per attribute, the count of
    each reported value and, per pair of attributes, the counts of the pairs of reported values.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> spl = ld.mechanisms.SPL(2.0, [2, 3])
    >>> spl.budgets
    (1.0, 1.0)
    >>> certificate = spl.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 2.0)
    >>> rng = np.random.default_rng(0)
    >>> values = np.column_stack([rng.choice(2, 20_000, p=[0.3, 0.7]), rng.choice(3, 20_000, p=[0.5, 0.3, 0.2])])
    >>> estimate = spl.estimate(spl.perturb(values, rng=1))
    >>> np.round(estimate.attribute(1), 2)
    array([0.5 , 0.31, 0.2 ])
    >>> ld.mechanisms.SPL(2.0, [2, 3], budgets=[1.5, 1.0])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: budgets is [1.5, 1.0]; its sum 2.5 exceeds the total epsilon 2
    """

    family = "spl"
    epsilon_range = (0.0, MAX_EPSILON)
    parameter_rules = (("k", "list of category counts, each >= 2, of at least 2 attributes, e.g. [2, 5, 16]"),
                       ("budgets", "list of one epsilon > 0 per attribute, summing to at most epsilon (by default "
                                   "epsilon / d each)"))
    client_cost = "O(d) per report"

    def __init__(self, epsilon: float, k: Sequence[int], budgets: Sequence[float] | None = None) -> None:
        self._setup(epsilon, k)
        self.budgets = (self.epsilon / self.d,) * self.d if budgets is None else \
            budgets_within(budgets, self.d, self.epsilon, "sum")
        cells = sum(self.k[j] * self.k[m] for j in range(self.d) for m in range(j + 1, self.d))
        if cells > MAX_PAIR_CELLS:
            raise ValidationError(f"k is {list(self.k)}; the pair counts would hold {cells} cells, more than "
                                  f"MAX_PAIR_CELLS = {MAX_PAIR_CELLS}")
        self.alphas = tuple(grr_mixing_probability(budget, implemented_exp(budget), size, f"k[{j}]")
                            for j, (budget, size) in enumerate(zip(self.budgets, self.k)))
        self.support = tuple(grr_probabilities(alpha, size) for alpha, size in zip(self.alphas, self.k))
        self._given_budgets = None if budgets is None else list(self.budgets)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "k": list(self.k),
                "budgets": None if self._given_budgets is None else list(self._given_budgets)}

    @classmethod
    def example(cls) -> Self:
        return cls(2.0, [2, 3, 4], budgets=[0.5, 0.75, 0.75])

    @property
    def report_bits(self) -> int:
        return sum(math.ceil(math.log2(size)) for size in self.k)

    def _perturb(self, columns, rng, user_ids):
        """Attribute after attribute, GRR's mixture on every user (``rr.randomized_response``)."""
        return np.column_stack([randomized_response(column, size, alpha, rng)
                                for column, size, alpha in zip(columns, self.k, self.alphas)])

    def empty_reports(self) -> npt.NDArray[np.int64]:
        return np.zeros((0, self.d), dtype=np.int64)

    def _checked(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.d:
            raise ValidationError(f"reports has shape {reports.shape}; SPL reports have shape (n, {self.d}), one "
                                  "column per attribute")
        return [index_reports(reports[:, j], size) for j, size in enumerate(self.k)]

    def _supports(self, reports):
        columns = self._checked(reports)
        return [np.bincount(column, minlength=size) for column, size in zip(columns, self.k)], columns[0].size

    def _statistics(self, reports):
        n, statistics = super()._statistics(reports)
        columns = self._checked(reports)
        for j in range(self.d):
            for m in range(j + 1, self.d):
                cells = np.bincount(columns[j] * self.k[m] + columns[m], minlength=self.k[j] * self.k[m])
                statistics[f"pair_{j}_{m}"] = cells.reshape(self.k[j], self.k[m])
        return n, statistics

    def pair_estimate(self, reports: Any, first: int, second: int) -> npt.NDArray[np.float64]:
        """The joint frequencies of two attributes from the pairs of their reports (docs/math.md §20.6).

        The reported pairs have expected frequencies G_j^T F G_l, with F the true joint table and G_j, G_l the two
        GRR tables, so F_hat = G_j^-T (C / n) G_l^-1 is unbiased (G_j^-1 in closed form: GRR's table is
        (p - q) I + q J).

        Parameters
        ----------
        reports : array_like or Aggregate
            SPL reports, or their aggregate.
        first, second : int
            Two different attributes.

        Returns
        -------
        numpy.ndarray
            (k_first, k_second): the estimated Pr[X_first = a, X_second = b] (unbiased; entries may be negative).

        Raises
        ------
        ValidationError
            The same attribute twice, one outside 0..d-1, or reports of another mechanism.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> spl = ld.mechanisms.SPL(6.0, [2, 2])
        >>> rng = np.random.default_rng(0)
        >>> x = rng.choice(2, 50_000)
        >>> values = np.column_stack([x, np.where(rng.random(50_000) < 0.9, x, 1 - x)])  # 90 % agree
        >>> np.round(spl.pair_estimate(spl.perturb(values, rng=1), 0, 1), 2)
        array([[0.45, 0.05],
               [0.05, 0.45]])
        """
        aggregate = self._aggregate_of(reports)
        j, m = (integer(first, "first", low=0, high=self.d - 1), integer(second, "second", low=0, high=self.d - 1))
        if j == m:
            raise ValidationError(f"second is {second!r}; a pair needs two different attributes")
        low, high = min(j, m), max(j, m)
        cells = aggregate[f"pair_{low}_{high}"] / aggregate.n
        estimate = self._inverse(low).T @ cells @ self._inverse(high)
        return estimate if j < m else estimate.T

    def _inverse(self, j):
        """G_j^-1 for G_j = (p - q) I + q J: (I - q J / (p - q + k q)) / (p - q) (Sherman-Morrison)."""
        p, q = self.support[j]
        size = self.k[j]
        return (np.eye(size) - q / (p - q + size * q)) / (p - q)

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The product of the d GRR tables' exact 2 x 3 reductions would grow with d; the guarantee is the
        sequential composition of the attributes' exact GRR certificates (``_certify``), and this is the first
        attribute's reduced table (``rr.grr_reduced_table``), one part of it.

        Returns
        -------
        numpy.ndarray
            float (2, 3) (2 x 2 for k = 2): the first attribute's GRR reduction.
        """
        from lipdesign.mechanisms.rr import grr_reduced_table

        return grr_reduced_table(self.alphas[0], self.k[0])

    @property
    def guarantee(self) -> Guarantee:
        from lipdesign.mechanisms.base import COMPOSITION

        return Guarantee("LDP", self.epsilon, COMPOSITION, f"{self.d} attributes, each with an exact GRR table at its "
                         "budget")

    def _certify(self):
        return sequential([grr_certificate(budget, alpha, size)
                           for budget, alpha, size in zip(self.budgets, self.alphas, self.k)], self.epsilon)

    def _branches(self, exact):
        return [(1, [grr_full(alpha, size, exact) for alpha, size in zip(self.alphas, self.k)])]

    def _bounded_leakage(self, prior, claim):
        parts = self._certify().parts
        whole = self._bound(self.certificate.epsilon, claim, TUPLE_LDP_BOUND)
        return [AttributeLeakage(prior.names[j], whole,
                                 self._bound(math.fsum(part["epsilon"] for i, part in enumerate(parts) if i != j),
                                             claim, TUPLE_LDP_BOUND), TUPLE_LDP_BOUND) for j in range(self.d)]

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): tuples A = (0, ..., 0) and B = (1, ..., 1); classes whether
        each attribute's report is 0, 1 or another value (the C-order product over attributes).

        Returns
        -------
        AuditPlan
            2 inputs, their class probabilities from the realised GRR tables.
        """
        widths = [min(size, 3) for size in self.k]
        table = mixture_classes([(1.0, [grr_classes(alpha, size) for alpha, size in zip(self.alphas, self.k)])])
        return AuditPlan(np.array([np.zeros(self.d), np.ones(self.d)]), table,
                         lambda reports: tuple_classify(reports, widths), ["A", "B"],
                         product_class_names(widths, ["y=0", "y=1", "other"]))

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §16): each attribute's GRR mixing probability.

        Returns
        -------
        dict
            ``{"k": [...], "alpha": [...]}``.
        """
        return {"k": list(self.k), "alpha": list(self.alphas)}


def sampling_ends(probabilities: Any, d: int) -> tuple[int, ...]:
    """The integer ends of the attributes' ranges on numpy's 2^-53 grid (docs/math.md §20.3): attribute j is drawn
    when ends[j - 1] <= u 2^53 < ends[j] for a uniform double u, so with probability (ends[j] - ends[j - 1]) / 2^53
    exactly. ``probabilities`` None is uniform; ends are floor(2^53 (pi_1 + ... + pi_j)) in exact arithmetic."""
    if probabilities is None:
        values = [Fraction(1, d)] * d
    else:
        if isinstance(probabilities, (str, bytes)) or not isinstance(probabilities, (list, tuple)) or \
                len(probabilities) != d:
            raise ValidationError(f"probabilities is {fmt(probabilities)}; it must list one probability per attribute "
                                  f"({d})")
        values = [Fraction(real_number(value, f"probabilities[{j}]", low=0.0, high=1.0))
                  for j, value in enumerate(probabilities)]
        total = sum(values, Fraction(0))
        if abs(total - 1) > Fraction(1, 10**9):
            raise ValidationError(f"probabilities sums to {float(total):.12g}; it must sum to 1 within 1e-09")
        values = [value / total for value in values]
    ends = [math.floor(sum(values[:j + 1]) * 2**53) for j in range(d - 1)] + [2**53]
    starts = [0] + ends[:-1]
    empty = [j for j in range(d) if ends[j] <= starts[j]]
    if empty:
        raise ValidationError(f"probabilities[{empty[0]}] is {float(values[empty[0]])!r}; every attribute must be "
                              "drawn with a probability of at least 2^-53")
    return tuple(ends)


class SMP(MultiAttribute):
    """Sample one attribute: each user draws attribute j with probability pi_j and reports (j, GRR_j(x_j))
    (docs/math.md §20.3).

    By default pi is uniform and every attribute's GRR runs at the full epsilon; ``budgets`` (each at most
    epsilon) and ``probabilities`` are what ``design_smp`` chooses under LIP. The attribute is drawn independently
    of the data and published, so the tuple is (max budget)-LDP (docs/math.md §13). The probabilities are realised on
    numpy's 2^-53 grid (``sampling_ends``); ``realised_probabilities`` are the exact ones, used everywhere.

    The estimator of attribute j is GRR's with support probabilities pi_j p_j and pi_j q_j (the drawn attribute's
    count divided by n pi_j, not by the number of its reports): unbiased with a closed-form variance
    (docs/math.md §20.3).

    Parameters
    ----------
    epsilon : float
        The LDP level of the whole tuple, in (0, 30].
    k : sequence of int
        The category count (>= 2) of each of d >= 2 attributes.
    budgets : sequence of float, optional
        Each attribute's GRR epsilon, positive and at most ``epsilon``; default ``epsilon`` each.
    probabilities : sequence of float, optional
        pi_j, summing to 1; default uniform.

    Attributes
    ----------
    realised_probabilities : tuple of fractions.Fraction
        The exact probability of drawing each attribute.
    alphas : tuple of float
        Each GRR's mixing probability, as realised.

    Raises
    ------
    ValidationError
        As ``SPL``, for budgets above ``epsilon``, or probabilities that are not one per attribute summing to 1 with
        every one at least 2^-53.

    See Also
    --------
    SPL, RSFD : The other multi-attribute protocols.
    lipdesign.designer.multi_attribute.design_smp : Budgets and probabilities designed under LIP.

    Notes
    -----
    Reports: a structured array of ``SMP_DTYPE`` (fields "attribute" int32 and "value" int64).

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> smp = ld.mechanisms.SMP(1.0, [2, 3])
    >>> certificate = smp.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 1.0)
    >>> rng = np.random.default_rng(0)
    >>> values = np.column_stack([rng.choice(2, 20_000, p=[0.3, 0.7]), rng.choice(3, 20_000, p=[0.5, 0.3, 0.2])])
    >>> reports = smp.perturb(values, rng=1)
    >>> reports[:2]
    array([(1, 2), (1, 2)], dtype=[('attribute', '<i4'), ('value', '<i8')])
    >>> np.round(smp.estimate(reports).attribute(0), 2)
    array([0.29, 0.72])
    """

    family = "smp"
    epsilon_range = (0.0, MAX_EPSILON)
    parameter_rules = (("k", SPL.parameter_rules[0][1]),
                       ("budgets", "list of one epsilon > 0 per attribute, each at most epsilon (by default epsilon)"),
                       ("probabilities", "list of one probability per attribute, summing to 1 (by default uniform)"))
    client_cost = "O(1) per report"

    def __init__(self, epsilon: float, k: Sequence[int], budgets: Sequence[float] | None = None,
                 probabilities: Sequence[float] | None = None) -> None:
        self._setup(epsilon, k)
        self.budgets = (self.epsilon,) * self.d if budgets is None else \
            budgets_within(budgets, self.d, self.epsilon, "max")
        self.ends = sampling_ends(probabilities, self.d)
        starts = (0,) + self.ends[:-1]
        self.realised_probabilities = tuple(Fraction(end - start, 2**53) for start, end in zip(starts, self.ends))
        self.alphas = tuple(grr_mixing_probability(budget, implemented_exp(budget), size, f"k[{j}]")
                            for j, (budget, size) in enumerate(zip(self.budgets, self.k)))
        grr = [grr_probabilities(alpha, size) for alpha, size in zip(self.alphas, self.k)]
        self.support = tuple((float(pi) * p, float(pi) * q) for pi, (p, q) in zip(self.realised_probabilities, grr))
        self._given = (None if budgets is None else list(self.budgets),
                       None if probabilities is None else [float(value) for value in probabilities])

    def parameters(self) -> dict[str, Any]:
        budgets, probabilities = self._given
        return {"epsilon": self.epsilon, "k": list(self.k), "budgets": None if budgets is None else list(budgets),
                "probabilities": None if probabilities is None else list(probabilities)}

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, [2, 3, 4], budgets=[1.0, 0.75, 1.0], probabilities=[0.25, 0.25, 0.5])

    @property
    def report_bits(self) -> int:
        return math.ceil(math.log2(self.d)) + max(math.ceil(math.log2(size)) for size in self.k)

    def _perturb(self, columns, rng, user_ids):
        """The attribute from one double per user (``sampling_ends``), then attribute after attribute GRR on the
        users who drew it."""
        n = columns[0].size
        reports = np.zeros(n, dtype=SMP_DTYPE)
        grid = (rng.random(n) * 2.0**53).astype(np.int64)
        attribute = np.searchsorted(np.array(self.ends, dtype=np.int64), grid, side="right")
        reports["attribute"] = attribute
        for j, (column, size, alpha) in enumerate(zip(columns, self.k, self.alphas)):
            chosen = np.flatnonzero(attribute == j)
            reports["value"][chosen] = randomized_response(column[chosen], size, alpha, rng)
        return reports

    def empty_reports(self) -> npt.NDArray[np.void]:
        return np.zeros(0, dtype=SMP_DTYPE)

    def _supports(self, reports):
        structured_reports(reports, SMP_DTYPE)
        attribute = index_array(reports["attribute"], self.d, "reports['attribute']")
        supports = []
        for j, size in enumerate(self.k):
            supports.append(np.bincount(index_array(reports["value"][attribute == j], size, "reports['value']"),
                                        minlength=size))
        return supports, attribute.size

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """One attribute's exact GRR reduction (``rr.grr_reduced_table``), the first; the guarantee is the largest of
        the attributes' exact GRR certificates (attribute sampling, docs/math.md §13).

        Returns
        -------
        numpy.ndarray
            float (2, 3) (2 x 2 for k = 2).
        """
        from lipdesign.mechanisms.rr import grr_reduced_table

        return grr_reduced_table(self.alphas[0], self.k[0])

    def _certify(self):
        return sampled([grr_certificate(budget, alpha, size)
                        for budget, alpha, size in zip(self.budgets, self.alphas, self.k)], self.epsilon)

    def _branches(self, exact):
        """Branch m: attribute m drawn; its report's value, and a column "not drawn" (last) for every other."""
        branches = []
        for m, pi in enumerate(self.realised_probabilities):
            factors = []
            for j, (alpha, size) in enumerate(zip(self.alphas, self.k)):
                factor = np.zeros((size, size + 1), dtype=object if exact else float)
                if j == m:
                    factor[:, :size] = grr_full(alpha, size, exact)
                else:
                    factor[:, size] = 1
                factors.append(factor)
            branches.append((pi if exact else float(pi), factors))
        return branches

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): tuples A = (0, ..., 0) and B = (1, ..., 1); classes the
        attribute drawn and whether its report is 0, 1 or another value.

        Returns
        -------
        AuditPlan
            2 inputs and 3 classes per attribute, from the realised probabilities and GRR tables.
        """
        table = np.hstack([float(pi) * np.pad(grr_classes(alpha, size), ((0, 0), (0, 3 - min(size, 3))))
                           for pi, alpha, size in zip(self.realised_probabilities, self.alphas, self.k)])

        def classify(reports):
            return 3 * reports["attribute"].astype(np.int64) + np.minimum(reports["value"], 2)

        names = [f"a{j}:{name}" for j in range(self.d) for name in ("y=0", "y=1", "other")]
        return AuditPlan(np.array([np.zeros(self.d), np.ones(self.d)]), table, classify, ["A", "B"], names)

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §16).

        Returns
        -------
        dict
            ``k``, ``ends`` (the attributes' integer range ends on the 2^-53 grid) and ``alpha`` (each GRR's mixing
            probability).
        """
        return {"k": list(self.k), "ends": list(self.ends), "alpha": list(self.alphas)}

    def attribute_leakage(self, prior: JointPrior, epsilon: float | None = None) -> list[AttributeLeakage]:
        """Per attribute j, its LIP through the report (l, y) at ``prior``, exact at any size (docs/math.md §20.4):
        pi_l cancels from every posterior ratio, so it is the largest over l of the LIP of X_j through GRR_l applied
        to X_l (the pair table Pr[X_l | X_j]); through the others' reports, the largest over l != j.

        Parameters
        ----------
        prior : JointPrior
            The joint prior (category counts ``k``).
        epsilon : float, optional
            The claim checked; default the LDP epsilon of the tuple.

        Returns
        -------
        list of AttributeLeakage
            One per attribute.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.JointPrior([[0.4, 0.1], [0.1, 0.4]], names=["a", "b"])
        >>> print(ld.mechanisms.leakage_summary(ld.mechanisms.SMP(1.0, [2, 2]).attribute_leakage(prior)))
        a: LIP <= 0.620115 through the tuple, <= 0.32472 through the others' reports (exact: the largest ...)
        b: LIP <= 0.620115 through the tuple, <= 0.32472 through the others' reports (exact: the largest ...)
        """
        self._check_prior(prior)
        claim = LIP(self.guarantee.epsilon if epsilon is None else epsilon).epsilon
        rows = []
        for j in range(self.d):
            parts = [pair_certificate(grr_full(alpha, size, True), prior, j, m, claim)
                     for m, (alpha, size) in enumerate(zip(self.alphas, self.k))]
            rows.append(AttributeLeakage(prior.names[j], sampled(parts, claim),
                                         sampled([part for other, part in enumerate(parts) if other != j], claim),
                                         EXACT_PAIRS))
        return rows


def pair_certificate(table: npt.NDArray[Any], prior: JointPrior, secret: int, reported: int,
                     claim: float) -> Certificate:
    """The exact LIP certificate of attribute ``secret`` through ``table`` applied to attribute ``reported``
    (docs/math.md §20.4): the latent secret X_secret with T[a, v] = Pr[X_reported = v | X_secret = a] (the identity
    when they are the same attribute), at the prior of X_reported."""
    from lipdesign.model import Prior, SecretModel

    marginal = prior.marginal(reported)
    if secret == reported:
        return verify_table(table, LIP(claim), marginal, exact=True)
    pair = prior.pair(secret, reported)
    conditional = pair / pair.sum(axis=1, keepdims=True)
    return verify_table(table, LIP(claim, secret=SecretModel(conditional)), Prior(marginal.probabilities), exact=True)


def amplified_epsilon(epsilon: float, d: int) -> float:
    """RS+FD's eps' = ln(d (e^eps - 1) + 1) for the attribute drawn (docs/math.md §20.5)."""
    return math.log(d * math.expm1(epsilon) + 1.0)


class RSFD(MultiAttribute):
    """Random sampling plus fake data (Arcolezi, Couchot, Al Bouna, Xiao, CIKM 2021; docs/math.md §20.5).

    Each user draws one attribute j uniformly (not revealed) and reports every attribute: attribute j perturbed at
    the amplified eps' = ln(d (e^eps - 1) + 1), every other one fake. ``variant`` "grr": GRR at eps' on j, a uniform
    value for the others (the paper's uniform value then GRR has the same uniform distribution); "ue-zero": OUE at
    eps' (p = 1/2, q = 1/(e^eps' + 1)) on j, the all-zero vector perturbed for the others; "ue-random": the same,
    the others a uniform one-hot vector perturbed.

    The guarantee certified on the realised tables is eps'-LDP for the tuple: the reports are a mixture over j of the
    attribute tables, so the ratio is at most the largest attribute's, and all attributes at their extremes attain it
    (docs/math.md §20.5). The paper's eps holds for two tuples that differ in ONE attribute, not for the whole tuple
    (proved in docs/math.md §20.5); ``attribute_leakage`` certifies what each attribute's LIP is.

    Parameters
    ----------
    epsilon : float
        The paper's epsilon (for tuples differing in one attribute), in [1e-6, 10].
    k : sequence of int
        The category count (>= 2) of each of d >= 2 attributes (UE variants: at most 64 each).
    variant : {"grr", "ue-zero", "ue-random"}, default "grr"
        The perturbation and the fake data.

    Attributes
    ----------
    amplified : float
        eps', the epsilon of the attribute drawn and the LDP claim of the tuple.
    p, q : tuple of float
        Per attribute, the perturbation's realised keep and lie probabilities (GRR) or bit probabilities (UE).

    Raises
    ------
    ValidationError
        An epsilon outside [1e-6, 10], fewer than 2 attributes or one of fewer than 2 categories, an unknown
        variant, or (UE) an attribute of more than 64 categories.

    See Also
    --------
    SPL, SMP : The other multi-attribute protocols.

    Notes
    -----
    Reports: "grr", int64 (n, d); UE variants, the d unary vectors concatenated (attribute j's bits after those of
    attributes 0..j-1) and packed 8 to a byte, uint8 (n, ceil(sum k / 8)).

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> rsfd = ld.mechanisms.RSFD(1.0, [2, 3])
    >>> round(rsfd.amplified, 6), round(float(np.log(2 * (np.e - 1) + 1)), 6)
    (1.48988, 1.48988)
    >>> print(rsfd.verify().summary())
    PASS: joint LDP epsilon <= 1.48988... against claimed eps = 1.48988 (one part drawn independently ...
    >>> rng = np.random.default_rng(0)
    >>> values = np.column_stack([rng.choice(2, 40_000, p=[0.3, 0.7]), rng.choice(3, 40_000, p=[0.5, 0.3, 0.2])])
    >>> np.round(rsfd.estimate(rsfd.perturb(values, rng=1)).attribute(1), 2)
    array([0.49, 0.3 , 0.2 ])
    """

    family = "rsfd"
    parameter_rules = (("k", SPL.parameter_rules[0][1] + " (UE variants: each at most 64)"),
                       ("variant", f"one of {', '.join(RSFD_VARIANTS)}"))
    client_cost = "O(d) per report (GRR), O(sum k) (UE)"

    def __init__(self, epsilon: float, k: Sequence[int], variant: str = "grr") -> None:
        self._setup(epsilon, k)
        self.variant = choice(variant, "variant", RSFD_VARIANTS)
        self.amplified = amplified_epsilon(self.epsilon, self.d)
        exp_amplified = implemented_exp(self.amplified)
        if self.variant == "grr":
            self.alphas = tuple(grr_mixing_probability(self.amplified, exp_amplified, size, f"k[{j}]")
                                for j, size in enumerate(self.k))
            keep_lie = [grr_probabilities(alpha, size) for alpha, size in zip(self.alphas, self.k)]
            self.p, self.q = tuple(p for p, _ in keep_lie), tuple(q for _, q in keep_lie)
        else:
            big = [j for j, size in enumerate(self.k) if size > 64]
            if big:
                raise ValidationError(f"k[{big[0]}] is {self.k[big[0]]}; the UE variants report one bit per category "
                                      "and take at most 64 categories per attribute")
            self.alphas = ()
            q = float(realized_probability(1.0 / (exp_amplified + 1.0)))
            self.p, self.q = (0.5,) * self.d, (q,) * self.d
        self.offsets = tuple(int(offset) for offset in np.cumsum((0,) + self.k))
        self.support = tuple(self._support_of(j) for j in range(self.d))

    def _support_of(self, j):
        """(p', q') of attribute j (docs/math.md §20.5): drawn with probability 1/d, fake otherwise."""
        d, size, p, q = self.d, self.k[j], self.p[j], self.q[j]
        fake = {"grr": 1.0 / size, "ue-zero": q, "ue-random": q + (p - q) / size}[self.variant]
        return (p + (d - 1) * fake) / d, (q + (d - 1) * fake) / d

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "k": list(self.k), "variant": self.variant}

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, [2, 3, 4])

    @property
    def report_bits(self) -> int:
        if self.variant == "grr":
            return sum(math.ceil(math.log2(size)) for size in self.k)
        return self.offsets[-1]

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LDP", self.amplified, EXACT_TABLE, f"the whole tuple, at the amplified eps'; the paper's "
                         f"eps = {self.epsilon:g} holds for tuples differing in one attribute (docs/math.md §20.5)")

    def _perturb(self, columns, rng, user_ids):
        """The attribute drawn (``integers``), then (not "ue-zero") a uniform fake value of every attribute, then
        attribute after attribute the perturbation (GRR on the users who drew it; UE on every user)."""
        n = columns[0].size
        drawn = rng.integers(0, self.d, n)
        fakes = [] if self.variant == "ue-zero" else [rng.integers(0, size, n) for size in self.k]
        if self.variant == "grr":
            reports = np.column_stack(fakes)
            for j, (column, size, alpha) in enumerate(zip(columns, self.k, self.alphas)):
                chosen = np.flatnonzero(drawn == j)
                reports[chosen, j] = randomized_response(column[chosen], size, alpha, rng)
            return reports
        bits = np.zeros((n, self.offsets[-1]), dtype=np.uint8)
        for j, (column, size) in enumerate(zip(columns, self.k)):
            block = bits[:, self.offsets[j]:self.offsets[j + 1]]
            if self.variant == "ue-random":
                hot = np.where(drawn == j, column, fakes[j])
                block[:] = unary_reports(hot, size, self.p[j], self.q[j], rng, "RS+FD")
            else:
                chosen = drawn == j
                block[chosen] = unary_reports(column[chosen], size, self.p[j], self.q[j], rng, "RS+FD")
                block[~chosen] = unary_reports(column[~chosen], size, self.q[j], self.q[j], rng, "RS+FD")
        return np.packbits(bits, axis=1, bitorder="little")

    def empty_reports(self) -> npt.NDArray[Any]:
        if self.variant == "grr":
            return np.zeros((0, self.d), dtype=np.int64)
        return np.zeros((0, (self.offsets[-1] + 7) // 8), dtype=np.uint8)

    def _supports(self, reports):
        reports = np.asarray(reports)
        if self.variant == "grr":
            if reports.ndim != 2 or reports.shape[1] != self.d:
                raise ValidationError(f"reports has shape {reports.shape}; RS+FD[GRR] reports have shape (n, {self.d})")
            return ([np.bincount(index_reports(reports[:, j], size), minlength=size) for j, size in enumerate(self.k)],
                    reports.shape[0])
        width = (self.offsets[-1] + 7) // 8
        if reports.ndim != 2 or reports.shape[1] != width or reports.dtype != np.uint8:
            raise ValidationError(f"reports has shape {reports.shape} and dtype {reports.dtype}; RS+FD[UE] reports are "
                                  f"uint8 (n, {width}), {self.offsets[-1]} bits packed 8 to a byte")
        check_spare_bits(reports, self.offsets[-1])
        sums = packed_column_sums(reports, self.offsets[-1])
        return [sums[start:end] for start, end in zip(self.offsets[:-1], self.offsets[1:])], reports.shape[0]

    def _attribute_tables(self, exact: bool) -> list[npt.NDArray[Any]]:
        """Per attribute, the realised table of its perturbation when drawn (GRR, or UE over 2^k bit vectors)."""
        if self.variant == "grr":
            return [grr_full(alpha, size, exact) for alpha, size in zip(self.alphas, self.k)]
        p, q = (Fraction(0.5), Fraction(self.q[0])) if exact else (0.5, self.q[0])
        return [ue_full(p, q, size, True) for size in self.k]

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The table of the attribute drawn with the largest ratio: the tuple's LDP epsilon is the largest of the
        attributes' (docs/math.md §20.5). GRR: its exact 2 x 3 reduction; UE: OUE's 2 x 4 reduction.

        Returns
        -------
        numpy.ndarray
            float (2, 3), (2, 2) or (2, 4).
        """
        from lipdesign.mechanisms.rr import grr_reduced_table

        if self.variant == "grr":
            return grr_reduced_table(self.alphas[0], self.k[0])
        keep, flip = (1.0 - self.q[0]) / 2.0, self.q[0] / 2.0
        return np.array([[keep, flip, keep, flip], [keep, keep, flip, flip]])

    def _certify(self):
        if self.variant == "grr":
            parts = [grr_certificate(self.amplified, alpha, size) for alpha, size in zip(self.alphas, self.k)]
        else:
            parts = [verify_table(self.privacy_table(), LDP(self.amplified), exact=True)]
        return sampled(parts, self.amplified)

    def _fake_table(self, j: int, exact: bool) -> npt.NDArray[Any]:
        """The distribution of attribute j's fake report, one identical row per value."""
        size = self.k[j]
        if self.variant == "grr":
            return np.full((size, size), Fraction(1, size) if exact else 1.0 / size, dtype=object if exact else float)
        p, q = (Fraction(0.5), Fraction(self.q[j])) if exact else (0.5, self.q[j])
        if self.variant == "ue-zero":
            return ue_full(p, q, size, False)
        row = ue_full(p, q, size, True).sum(axis=0) / size
        return np.tile(row, (size, 1))

    def _branches(self, exact):
        tables = self._attribute_tables(exact)
        weight = Fraction(1, self.d) if exact else 1.0 / self.d
        return [(weight, [tables[j] if j == drawn else self._fake_table(j, exact) for j in range(self.d)])
                for drawn in range(self.d)]

    def _outputs(self):
        return math.prod(self.k) if self.variant == "grr" else 2 ** self.offsets[-1]

    def _bounded_leakage(self, prior, claim):
        """RS+FD is a post-processing of (j, y_j) with j uniform (fake data is independent of the tuple given j),
        whose LIP is exact from the pair tables (GRR: k_j x k_j; UE: k_j x 2^k_j while every k_j is at most
        ``MAX_UE_PAIR_BITS``, else the LDP epsilon of the tuple), docs/math.md §20.4."""
        if self.variant != "grr" and max(self.k) > MAX_UE_PAIR_BITS:
            whole = self._bound(self.certificate.epsilon, claim, TUPLE_LDP_BOUND)
            return [AttributeLeakage(name, whole, whole, TUPLE_LDP_BOUND) for name in prior.names]
        tables = self._attribute_tables(True)
        rows = []
        for j in range(self.d):
            parts = [pair_certificate(tables[other], prior, j, other, claim) for other in range(self.d)]
            others = sampled([part for other, part in enumerate(parts) if other != j], claim)
            through = sampled(parts, claim)
            rows.append(AttributeLeakage(prior.names[j], self._bound(through.epsilon, claim, SAMPLED_BOUND),
                                         self._bound(others.epsilon, claim, SAMPLED_BOUND), SAMPLED_BOUND))
        return rows

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): tuples A = (0, ..., 0) and B = (1, ..., 1); classes per
        attribute whether the report is 0, 1 or another value (GRR) or its bits 0 and 1 (UE), the C-order product
        over attributes; the attribute drawn is not seen, so every class mixes the d branches.

        Returns
        -------
        AuditPlan
            2 inputs, their class probabilities from the realised tables.
        """
        if self.variant == "grr":
            widths = [min(size, 3) for size in self.k]
            drawn = [grr_classes(alpha, size) for alpha, size in zip(self.alphas, self.k)]
            fake = [np.tile([1.0 / size, 1.0 / size, (size - 2) / size][:min(size, 3)], (2, 1)) for size in self.k]
            names = ["y=0", "y=1", "other"]

            def classify(reports):
                return tuple_classify(reports, widths)
        else:
            widths = [4] * self.d
            p, q = self.p[0], self.q[0]

            def pair(first, second):  # (bit 0, bit 1) = 00, 01, 10, 11 of independent bits
                return np.outer([1 - first, first], [1 - second, second]).ravel()

            drawn = [np.array([pair(p, q), pair(q, p)])] * self.d
            if self.variant == "ue-zero":
                fake = [np.tile(pair(q, q), (2, 1))] * self.d
            else:
                fake = [np.tile((pair(p, q) + pair(q, p) + (size - 2) * pair(q, q)) / size, (2, 1)) for size in self.k]
            names = ["bits 00", "bits 01", "bits 10", "bits 11"]
            offsets = self.offsets[:-1]

            def classify(reports):
                bits = np.unpackbits(np.asarray(reports, dtype=np.uint8), axis=1, bitorder="little")
                classes = np.zeros(len(bits), dtype=np.int64)
                for offset in offsets:
                    classes = 4 * classes + 2 * bits[:, offset] + bits[:, offset + 1]
                return classes
        table = mixture_classes([(1.0 / self.d, [drawn[j] if j == chosen else fake[j] for j in range(self.d)])
                                 for chosen in range(self.d)])
        return AuditPlan(np.array([np.zeros(self.d), np.ones(self.d)]), table, classify, ["A", "B"],
                         product_class_names(widths, names))

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §16).

        Returns
        -------
        dict
            ``k``, ``variant`` and ``alpha`` (GRR: each attribute's mixing probability) or ``p`` and ``q`` (UE: the
            bit probabilities).
        """
        numbers: dict[str, Any] = {"k": list(self.k), "variant": self.variant}
        if self.variant == "grr":
            numbers["alpha"] = list(self.alphas)
        else:
            numbers["p"], numbers["q"] = self.p[0], self.q[0]
        return numbers


__all__ = ["RSFD", "SMP", "SPL", "AttributeLeakage", "MultiAttribute", "amplified_epsilon", "leakage_summary",
           "tuple_lip"]
