"""Subset mechanisms, the optimal designs at a uniform prior at any k (docs/math.md §11, "Subset mechanisms"):
d-subset selection under eps-LDP (family "subset") and the LIP orbit (family "subset-lip").

At the uniform prior the A-optimal table is one permutation orbit of a slice vertex. Under LDP the vertices are
d-subsets (e^eps on d values, 1 on the others): the report is a d-subset S, drawn with weight e^eps when it holds
the user's value. Under LIP for X the vertex has j values at e^eps, one free value f and k - 1 - j at e^-eps
(f = k - j e^eps - (k - 1 - j) e^-eps): the report is (z, H), a free value z and a j-subset H of the others, drawn
with weight f, e^eps or e^-eps as the user's value is z, in H, or neither. Neither needs a table: a case is drawn
with one uniform, then the rest uniformly among the values, exactly (bounded integers, numpy's Lemire method), so
the realised probabilities are those of the case draw (on numpy's 2^-53 grid) divided by the number of outputs in
the case, and the certificate is computed from them in rational arithmetic.

Reports are bits packed 8 to a byte, bit j being bit j % 8 of byte j // 8 (as OUE's): k bits (the subset S) for
"subset"; 2k bits for "subset-lip", the first k the subset H and the last k the free value z (one bit set).
Aggregates are the bit sums. Numpy and the standard library only.
"""

from __future__ import annotations

import math
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from lipdesign.domains import Categorical
from lipdesign.errors import ValidationError, VerificationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee, Mechanism, check_parameter_names
from lipdesign.mechanisms.bit_reports import check_spare_bits
from lipdesign.mechanisms.bitsums import packed_column_sums
from lipdesign.mechanisms.closed_forms import subset_selection_probabilities, uniform_optimal_orbit
from lipdesign.mechanisms.estimate import Estimate
from lipdesign.mechanisms.oracle import pure_estimate, pure_variance
from lipdesign.mechanisms.postprocess import consistent
from lipdesign.mechanisms.sampling import implemented_exp, realized_probability
from lipdesign.model import Prior, PriorSet
from lipdesign.notions import LDP, LIP
from lipdesign.validation import integer, probability_vector
from lipdesign.verification import Certificate, exp_bounds, log_upper, verify_table

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Self

    import numpy.typing as npt

#: Largest k of the subset families: a report is k (or 2k) bits, and a batch of B users holds B x k positions.
MAX_SUBSET_K = 2**16

#: Positions held in memory per block of users while subsets are drawn (about 64 MiB of int32).
BLOCK_POSITIONS = 2**24


def _labels(labels, k):
    return None if labels is None else list(Categorical(k, labels).labels)


def _exclusion_map(positions, excluded):
    """The values at ``positions`` (n, m) of the list 0..k-1 with the values ``excluded`` (n, e), sorted per row,
    removed: each excluded value at or below a position shifts it up by one."""
    values = positions.copy()
    for column in range(excluded.shape[1]):  # ascending excluded values, so each shift is final
        values += values >= excluded[:, column:column + 1]
    return values


def random_subsets(excluded: npt.NDArray[np.int64], size: int, k: int,
                   rng: np.random.Generator) -> npt.NDArray[np.bool_]:
    """For each row of ``excluded`` (n, e) int64 (distinct values per row, sorted), a uniformly random ``size``-subset
    of the k - e other values, as a boolean (n, k) matrix. Partial Fisher-Yates over positions 0..k-e-1: step i
    swaps position i with i + a bounded integer in 0..k-e-1-i (``rng.integers``, exactly uniform), so every subset
    has probability exactly 1/C(k - e, size). Rows are drawn in blocks of BLOCK_POSITIONS positions; within one row
    the draws are the ``size`` bounded integers in order (docs/runtime.md §6)."""
    n, pool = excluded.shape[0], k - excluded.shape[1]
    chosen = np.zeros((n, k), dtype=bool)
    if size == 0 or n == 0:
        return chosen
    block = max(1, BLOCK_POSITIONS // pool)
    for start in range(0, n, block):
        stop = min(n, start + block)
        rows = np.arange(stop - start)
        positions = np.tile(np.arange(pool, dtype=np.int64), (stop - start, 1))
        for step in range(size):
            other = step + rng.integers(0, pool - step, size=stop - start)
            first = positions[:, step].copy()
            positions[:, step] = positions[rows, other]
            positions[rows, other] = first
        values = _exclusion_map(positions[:, :size], excluded[start:stop])
        chosen[start + rows[:, None], values] = True
    return chosen


def pack_bits(bits: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint8]:
    """Rows of bits packed 8 to a byte, little-endian (the subset families' reports)."""
    return np.packbits(bits, axis=1, bitorder="little")


class SubsetFamily(Mechanism):
    """What the two subset families share: k, the labels, the packed reports, the bit sums, and the design
    provenance ``ld.design`` records (``optimality``, ``baselines``)."""

    parameter_rules: ClassVar[tuple[tuple[str, str], ...]] = (("k", f"integer in 2..{MAX_SUBSET_K}"),
                                                    ("labels", "None, or k distinct labels"))
    records_provenance = True  # ld.design returns them at a uniform prior, and subset selection under LDP
    input_domain: Categorical  # annotation only: set by _common

    if TYPE_CHECKING:  # annotations only: what both families' constructors take (``from_parameters``)
        def __init__(self, epsilon: float, k: int, *args: Any, provenance: Mapping[str, Any] | None = None,
                     **kwargs: Any) -> None: ...

    def _common(self, epsilon, k, labels, provenance):
        self.epsilon = self.checked_epsilon(epsilon)
        self.exp_epsilon = implemented_exp(self.epsilon)
        self.k = integer(k, "k", low=2, high=MAX_SUBSET_K)
        self.labels = _labels(labels, self.k)
        self.input_domain = Categorical(self.k, self.labels)
        self.provenance = None if provenance is None else MappingProxyType(dict(provenance))

    @property
    def report_bytes(self) -> int:
        return -(-cast(int, self.report_bits) // 8)  # both families state report_bits

    def empty_reports(self) -> npt.NDArray[np.uint8]:
        return np.zeros((0, self.report_bytes), dtype=np.uint8)

    def _packed(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.report_bytes or reports.dtype != np.uint8:
            raise ValidationError(f"reports has shape {reports.shape} and dtype {reports.dtype}; {self.family} reports "
                                  f"are uint8 of shape (n, {self.report_bytes}): {self.report_bits} bits packed 8 to "
                                  "a byte")
        check_spare_bits(reports, self.report_bits)
        return reports

    @property
    def optimality(self) -> Mapping[str, Any] | None:
        return None if self.provenance is None else self.provenance.get("optimality")

    @property
    def baselines(self) -> dict[str, float]:
        return {} if self.provenance is None else dict(self.provenance.get("baselines", {}))

    @property
    def prior(self) -> Prior:
        """The uniform prior over the k values (with the labels): where these designs are optimal."""
        return Prior(np.full(self.k, 1.0 / self.k), self.labels)

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> Self:
        """The mechanism of ``parameters()``, with the provenance of the design that made it (if any)."""
        mechanism = cls(**parameters, provenance=provenance)
        check_parameter_names(parameters, mechanism.parameters(), cls.__name__)
        return mechanism

    def _estimate_of(self, values, variances, n, method):
        return Estimate(values, np.sqrt(np.maximum(variances, 0.0)), n=n, method=method,
                        names=[str(label) for label in self.input_domain.labels])

    def _expected(self, frequencies, method, user_ids):
        return frequencies


class SubsetSelection(SubsetFamily):
    """d-subset selection over k values, eps-LDP (docs/math.md §8, §11): the A-optimal LDP mechanism at the uniform
    prior.

    The report is a d-subset S of the k values holding the user's value with probability p = d e/(d e + k - d)
    (e = e^eps as implemented, realised on numpy's 2^-53 grid), the rest of S uniform among the other values.
    Optimal (A-optimal) among all eps-LDP mechanisms at the uniform prior for the best d
    (``closed_forms.uniform_optimal_orbit``). Unbiased estimate from the support counts C_v (reports whose subset
    holds v): (C_v/n - q)/(p - q), q = p (d - 1)/(k - 1) + (1 - p) d/(k - 1), with its variance given the users'
    values and plug-in standard errors. ``design_prior`` (None: uniform) is the prior ``ld.design`` chose d for,
    where ``mse`` and the default of ``variance`` are taken; the mechanism itself does not depend on it (eps-LDP
    holds at every prior).

    Parameters
    ----------
    epsilon : float
        The LDP level, in [1e-6, 10].
    k : int
        The number of values, 2 <= k <= ``MAX_SUBSET_K``.
    d : int, optional
        The size of the reported subset, 1 <= d <= k - 1; by default the best at the uniform prior. d = 1 is GRR.
    labels : sequence of str or int, optional
        k distinct labels of the values (inputs may then be given by label); by default the indices 0..k-1.
    design_prior : Prior or array_like, optional
        The prior ``ld.design`` chose d for (k probabilities); by default none (uniform).
    provenance : mapping, optional
        The design record ``ld.design`` writes (``optimality``, ``baselines``); none when built by hand.

    Attributes
    ----------
    p, q : float
        Pr[v in S] when v is, and is not, the user's value, as the sampler realises them.
    inside : float
        Pr[the user's value is in S], as the coin realises it (p, a double on the 2^-53 grid).

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10], k is not an integer from 2 to ``MAX_SUBSET_K``, d not one in 1..k-1, the
        labels are not k distinct ones, or ``design_prior`` is not k probabilities summing to 1.
    VerificationError
        If the realised table were to exceed epsilon (a safeguard: not expected for any accepted input).

    See Also
    --------
    SubsetLIP : The LIP counterpart, optimal under eps-LIP at the uniform prior.
    GRR, OUE : The LDP frequency oracles it is never worse than at the uniform prior.

    Notes
    -----
    Reports: the subset's k bits packed 8 to a byte (uint8, (n, ceil(k / 8))), bit j being bit j % 8 of byte
    j // 8 (as OUE's).

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> subset = ld.mechanisms.SubsetSelection(1.0, 6)
    >>> subset.d, subset.verify().passed, round(subset.verify().epsilon, 6)
    (2, True, 1.0)

    p and q are those of the formula, and ``mse``, n times the sum of the variances at the uniform prior, is the
    optimum (k - 1)^2/(r . r - k) - (k - 1)/k of docs/math.md §11 (r the vertex e^eps on d values, 1 on the
    others, scaled to mean 1), below GRR's and OUE's:

    >>> import math
    >>> e, k, d = math.exp(1.0), 6, 2
    >>> p = d * e / (d * e + k - d)
    >>> q = p * (d - 1) / (k - 1) + (1 - p) * d / (k - 1)
    >>> round(subset.p, 6), round(p, 6), round(subset.q, 6), round(q, 6)
    (0.576117, 0.576117, 0.284777, 0.284777)
    >>> r_squared = (d * e**2 + k - d) / ((d * e + k - d) / k) ** 2
    >>> round(subset.mse, 4), round((k - 1) ** 2 / (r_squared - k) - (k - 1) / k, 4)
    (14.8753, 14.8753)
    >>> round(float(ld.mechanisms.GRR(1.0, 6).variance().sum()), 4)
    15.9807
    >>> round(float(ld.mechanisms.OUE(1.0, 6).variance().sum()), 4)
    23.0962

    A seeded round: perturb, aggregate, estimate.

    >>> truth = np.array([0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
    >>> values = np.random.default_rng(0).choice(6, size=20_000, p=truth)
    >>> reports = subset.perturb(values, rng=1)
    >>> reports.shape, reports.dtype
    ((20000, 1), dtype('uint8'))
    >>> estimate = subset.estimate(subset.aggregate(reports))
    >>> np.round(estimate.values, 3)
    array([0.291, 0.254, 0.201, 0.112, 0.099, 0.042])
    >>> np.round(estimate.standard_errors, 3)
    array([0.011, 0.011, 0.011, 0.011, 0.011, 0.011])
    >>> ld.mechanisms.SubsetSelection(1.0, 6, d=6)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: d is 6; it must be an integer in 1..5
    """

    family = "subset"
    design_family = "rr"
    parameter_rules = SubsetFamily.parameter_rules + (("d", "integer in 1..k-1 (None: the best at the uniform prior)"),
                                                 ("design_prior", "None, or k probabilities summing to 1"))
    client_cost = "O(k) per report (k bits; d bounded integers)"

    def __init__(self, epsilon: float, k: int, d: int | None = None, labels: Sequence[str | int] | None = None,
                 design_prior: Prior | npt.ArrayLike | None = None, *,
                 provenance: Mapping[str, Any] | None = None) -> None:
        self._common(epsilon, k, labels, provenance)
        self.design_prior = None if design_prior is None else \
            probability_vector(design_prior, "design_prior", length=self.k).tolist()
        if d is None:
            d = uniform_optimal_orbit(self.k, self.epsilon, "staircase")[1]
        self.d = integer(d, "d", low=1, high=self.k - 1)
        ideal = subset_selection_probabilities(math.log(self.exp_epsilon), self.k, self.d)[0]
        #: Pr[the user's value is in S], as the coin realises it (a double on the 2^-53 grid).
        self.inside = float(realized_probability(ideal))
        self.p, self.q = self._support_probabilities()
        if not self.certificate.passed:
            raise VerificationError(f"d-subset selection with k = {self.k}, d = {self.d} realises epsilon "
                                    f"{self.certificate.epsilon:.12g} > {self.epsilon:g}")

    def _support_probabilities(self, exact=False):
        inside = Fraction(self.inside) if exact else self.inside
        return inside, inside * (self.d - 1) / (self.k - 1) + (1 - inside) * self.d / (self.k - 1)

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 7, 2)

    @property
    def report_bits(self) -> int:
        return self.k

    @property
    def prior(self) -> Prior:
        """The prior ``ld.design`` chose this d for (``design_prior``), else the uniform one (with the labels)."""
        if self.design_prior is None:
            return super().prior
        return Prior(self.design_prior, self.labels)

    @property
    def notion(self) -> LDP:
        """The notion of the claim: LDP(epsilon), at every prior."""
        return LDP(self.epsilon)

    @property
    def mse(self) -> float:
        """n x the sum of the variances of the unbiased estimate at ``prior``, given the users' values."""
        return float(pure_variance(self.prior.probabilities, 1, self.p, self.q).sum())

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "k": self.k, "d": self.d, "labels": self.labels,
                "design_prior": self.design_prior}

    def _perturb(self, values, rng, user_ids):
        inside = rng.random(values.size) < self.inside
        chosen = np.zeros((values.size, self.k), dtype=bool)
        for holds, size in ((inside, self.d - 1), (~inside, self.d)):
            rows = np.flatnonzero(holds)
            chosen[rows] = random_subsets(values[rows, None], size, self.k, rng)
        chosen[np.flatnonzero(inside), values[inside]] = True
        return pack_bits(chosen)

    def _statistics(self, reports):
        reports = self._packed(reports)
        return reports.shape[0], {"support": packed_column_sums(reports, self.k)}

    def _estimate(self, aggregate, method):
        values = pure_estimate(aggregate["support"], aggregate.n, self.p, self.q)
        plug_in = consistent(values, "norm-sub")
        return self._estimate_of(values, pure_variance(plug_in, aggregate.n, self.p, self.q), aggregate.n, method)

    def _variance(self, frequencies, n, method, user_ids):
        return pure_variance(frequencies, n, self.p, self.q)

    def privacy_table(self, exact: bool = False) -> npt.NDArray[Any]:
        """The exact reduction of the C(k, d) outputs to 2 rows x 4 classes (docs/math.md §11).

        Inputs 0 and 1, outputs by whether S holds 0 and whether it holds 1; within a class every subset has the
        same probability under each input (the rest of S is uniform), so the ratios are those of the full table.
        Pr[0 in S, 1 in S | X = 0] = p (d - 1)/(k - 1), and so on, with p as the coin realises it.

        Parameters
        ----------
        exact : bool, default False
            Whether to return the exact Fractions (what ``verify`` checks) instead of floats.

        Returns
        -------
        numpy.ndarray
            (2, 4), float, or object (Fractions) with ``exact``: rows the inputs 0 and 1; columns 0 and 1 in S,
            0 only, 1 only, neither.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> subset = ld.mechanisms.SubsetSelection(1.0, 6, d=2)
        >>> np.round(subset.privacy_table(), 3)
        array([[0.115, 0.461, 0.17 , 0.254],
               [0.115, 0.17 , 0.461, 0.254]])
        >>> sum(subset.privacy_table(exact=True)[0])
        Fraction(1, 1)
        """
        inside = Fraction(self.inside) if exact else self.inside
        k, d = self.k, self.d
        both, first_only = inside * (d - 1) / (k - 1), inside * (k - d) / (k - 1)
        second_only, neither = (1 - inside) * d / (k - 1), (1 - inside) * (k - 1 - d) / (k - 1)
        rows = [[both, first_only, second_only, neither], [both, second_only, first_only, neither]]
        return np.array(rows, dtype=object if exact else float)

    def _certify(self):
        return verify_table(self.privacy_table(exact=True), LDP(self.epsilon), exact=True)

    def summary(self) -> str:
        lines = [f"{self!r}\n{self.verify().summary()}",
                 f"  accuracy: n x sum of the variances of the unbiased estimate at the uniform prior, given the "
                 f"users' values: {self.mse:.6g}"]
        return "\n".join(lines + design_lines(self))

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs 0 and 1; classes by whether the subset holds 0 and
        whether it holds 1 (the exact 2 x 4 reduction, ``SubsetSelection.privacy_table``).

        Returns
        -------
        AuditPlan
            The inputs, the ``privacy_table`` and the classifier of reports into its columns.
        """
        def classify(reports):
            return 2 - 2 * (reports[:, 0] & 1) + 1 - ((reports[:, 0] >> 1) & 1)

        return AuditPlan(np.array([0, 1]), self.privacy_table(), classify, ["x=0", "x=1"],
                     ["0 and 1 in S", "0 in S only", "1 in S only", "neither in S"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §6).

        Returns
        -------
        dict
            ``{"k": k, "d": d, "inside": inside}``.
        """
        return {"k": self.k, "d": self.d, "inside": self.inside}

    def display_name(self) -> str:
        return f"randomized response: subset selection, d = {self.d}"


class SubsetLIP(SubsetFamily):
    """The eps-LIP design for X at the uniform prior over k values (docs/math.md §11), a closed-form sampler.

    One permutation orbit of the slice vertex with j values at e^eps, k - 1 - j at e^-eps and the free value f = k
    - j e^eps - (k - 1 - j) e^-eps (e^eps as implemented). A report (z, H): the case is drawn with one uniform (the
    user's value is z with probability f/k, in H with j e/k, neither with the rest), then z uniform among the other
    values (unless it is the user's) and H uniform among the values left. Optimal among all eps-LIP mechanisms at
    the uniform prior for the best j (the default); it is eps-LIP at that prior only (``certificate_at`` gives its
    LIP at any other, never above its LDP level). Unbiased estimate: GLS at the uniform prior, f^ = M^-1 s^ with s^
    the mean of s(y)_x = rho_(class of x in y) over the reports (the bit sums), M = alpha I + beta J; its variance
    given the users' values is exact (docs/math.md §11).

    Parameters
    ----------
    epsilon : float
        The LIP level at the uniform prior, in [1e-6, 10].
    k : int
        The number of values, 2 <= k <= ``MAX_SUBSET_K``.
    j : int, optional
        The number of values at e^eps in a report's H, 0 <= j <= k - 1, such that the free value lies in
        [e^-eps, e^eps]; by default the best.
    labels : sequence of str or int, optional
        k distinct labels of the values; by default the indices 0..k-1.
    provenance : mapping, optional
        The design record ``ld.design`` writes (``optimality``, ``baselines``); none when built by hand.

    Attributes
    ----------
    free : float
        The free value f of the vertex.
    free_end, high_end : float
        The case draw: the user's value is z when u < ``free_end``, in H when u < ``high_end`` (u uniform).
    epsilons : mapping
        The exactly verified epsilons: ``"claimed"`` and ``"LIP for X"`` (at the uniform prior) and ``"LDP"``.
    notion : LIP
        The notion of the claim, LIP(epsilon).

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10], k is not an integer from 2 to ``MAX_SUBSET_K``, j not one in 0..k-1 or
        with a free value outside [e^-eps, e^eps], or the labels are not k distinct ones.
    VerificationError
        If the realised case probabilities were to exceed epsilon at the uniform prior (a safeguard: not expected
        for any accepted input).

    See Also
    --------
    SubsetSelection : The LDP counterpart.

    Notes
    -----
    Reports: 2k bits packed 8 to a byte (uint8, (n, ceil(2k / 8))), H then the one-hot z.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> lip = ld.mechanisms.SubsetLIP(1.0, 4)
    >>> lip
    SubsetLIP(epsilon=1.0, k=4, j=1, labels=None)
    >>> {name: round(value, 6) for name, value in lip.epsilons.items()}
    {'claimed': 1.0, 'LIP for X': 1.0, 'LDP': 2.0}

    ``mse``, n times the sum of the variances at the uniform prior given the users' values, is the optimum
    (k - 1)^2/(r . r - k) - (k - 1)/k of docs/math.md §11, r the vertex (f, e^eps j times, e^-eps k - 1 - j times):

    >>> import math
    >>> e, k, j = math.exp(1.0), 4, lip.j
    >>> f = k - j * e - (k - 1 - j) / e
    >>> r_squared = f**2 + j * e**2 + (k - 1 - j) / e**2
    >>> round(lip.mse, 4), round((k - 1) ** 2 / (r_squared - k) - (k - 1) / k, 4)
    (1.524, 1.524)

    A seeded round: perturb, aggregate, estimate.

    >>> truth = np.array([0.4, 0.3, 0.2, 0.1])
    >>> values = np.random.default_rng(0).choice(4, size=20_000, p=truth)
    >>> reports = lip.perturb(values, rng=1)
    >>> reports.shape, reports.dtype
    ((20000, 1), dtype('uint8'))
    >>> estimate = lip.estimate(lip.aggregate(reports))
    >>> np.round(estimate.values, 3)
    array([0.392, 0.305, 0.205, 0.098])
    >>> np.round(estimate.standard_errors, 3)
    array([0.005, 0.004, 0.004, 0.004])
    """

    family = "subset-lip"
    design_family = "rr"
    parameter_rules = SubsetFamily.parameter_rules + (("j", "integer in 0..k-1 with a free value in [e^-eps, e^eps] "
                                                       "(None: the best)"),)
    client_cost = "O(k) per report (2k bits; j + 1 bounded integers)"

    def __init__(self, epsilon: float, k: int, j: int | None = None, labels: Sequence[str | int] | None = None,
                 *, provenance: Mapping[str, Any] | None = None) -> None:
        self._common(epsilon, k, labels, provenance)
        if j is None:
            j = uniform_optimal_orbit(self.k, self.epsilon, "box")[1]
        self.j = integer(j, "j", low=0, high=self.k - 1)
        e, a = self.exp_epsilon, 1.0 / self.exp_epsilon
        self.free = self.k - self.j * e - (self.k - 1 - self.j) * a
        if not a <= self.free <= e:
            raise ValidationError(f"j is {self.j}; with k = {self.k} and eps = {self.epsilon:g} the free value "
                                  f"{self.free:.6g} falls outside [e^-eps, e^eps] = [{a:.6g}, {e:.6g}]: no vertex of "
                                  "the LIP slice has j values at e^eps (j = None takes the best one)")
        #: the case draw: the user's value is z when u < ``free_end``, in H when u < ``high_end`` (u uniform)
        self.free_end = float(realized_probability(self.free / self.k))
        self.high_end = float(realized_probability(min(1.0, (self.free + self.j * e) / self.k)))
        self.notion = LIP(self.epsilon)
        ratios = self.ratios(exact=True)
        ldp = Certificate("LDP", None, log_upper(max(ratios.values()) / min(ratios.values())), None, True,
                          {"classes": sorted(ratios)})
        self._claimed = self.certificate_at(self.prior)
        if not self._claimed.passed:
            raise VerificationError(f"the orbit with k = {self.k}, j = {self.j} realises LIP epsilon "
                                    f"{self._claimed.epsilon:.12g} > {self.epsilon:g} at the uniform prior")
        self.epsilons = MappingProxyType({"claimed": self._claimed.epsilon, "LIP for X": self._claimed.epsilon,
                                          "LDP": ldp.epsilon})
        rho = {name: float(value) for name, value in ratios.items()}
        self._rho = (rho.get("z", 0.0), rho.get("high", 0.0), rho.get("low", 0.0))

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 7)

    @property
    def report_bits(self) -> int:
        return 2 * self.k

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LIP", self.epsilon, EXACT_TABLE, "at the uniform prior, on the realised case probabilities "
                                                          "(docs/math.md §11)")

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "k": self.k, "j": self.j, "labels": self.labels}

    def case_probabilities(self, exact: bool = False) -> dict[str, Any]:
        """The probabilities of the three cases of the user's value in her report, as the case draw realises them.

        Parameters
        ----------
        exact : bool, default False
            Whether to return exact Fractions instead of floats.

        Returns
        -------
        dict
            ``{"z": ..., "high": ..., "low": ...}``: Pr[the user's value is z], [in H], [neither] (cases that cannot
            occur, j = 0 or j = k - 1, are left out).

        Examples
        --------
        >>> import lipdesign as ld
        >>> cases = ld.mechanisms.SubsetLIP(1.0, 4).case_probabilities()
        >>> {case: round(value, 4) for case, value in cases.items()}
        {'z': 0.1365, 'high': 0.6796, 'low': 0.1839}
        """
        free_end, high_end = (Fraction(self.free_end), Fraction(self.high_end)) if exact else \
            (self.free_end, self.high_end)
        cases = {"z": free_end, "high": high_end - free_end, "low": 1 - high_end}
        present = {"z": True, "high": self.j > 0, "low": self.j < self.k - 1}
        return {name: value for name, value in cases.items() if present[name]}

    def ratios(self, exact: bool = False) -> dict[str, Any]:
        """The posterior ratios rho = Pr[y | x] / Pr[y] at the uniform prior, by case of the input x in the output y.

        The same for every y: k Pr[z] (one value), k Pr[H]/j (j values), k Pr[neither]/(k - 1 - j) (the rest); each
        output of a case has Pr[case]/(its number of outputs), and the counts are C(k-1, j) (times 1, j and
        k - 1 - j). LIP at the uniform prior is the largest of their absolute logarithms.

        Parameters
        ----------
        exact : bool, default False
            Whether to return exact Fractions instead of floats.

        Returns
        -------
        dict
            ``{case: rho}`` for the cases of ``case_probabilities``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ratios = ld.mechanisms.SubsetLIP(1.0, 4).ratios()
        >>> {case: round(value, 4) for case, value in ratios.items()}
        {'z': 0.546, 'high': 2.7183, 'low': 0.3679}
        """
        members = {"z": 1, "high": self.j, "low": self.k - 1 - self.j}
        return {name: self.k * value / members[name] for name, value in self.case_probabilities(exact).items()}

    def certificate_at(self, prior: Prior | PriorSet | npt.ArrayLike) -> Certificate:
        """The exact Certificate of eps-LIP for X at another prior, or the worst over a set of priors.

        For an output (z, H) and an input in case c the ratio is rho_c / D, D = P_z rho_z + P(H) rho_H
        + (1 - P_z - P(H)) rho_low, so the extremes take the smallest and largest D over (z, H), found by sorting P
        (H the j smallest or largest values other than z). Never above the LDP level ``epsilons["LDP"]``.

        Parameters
        ----------
        prior : Prior, array_like or PriorSet
            A prior (or its k probabilities), or a PriorSet: the worst over its vertices, or for a TV ball over the
            two priors where D is smallest and largest (docs/math.md §11).

        Returns
        -------
        Certificate
            LIP at the claimed epsilon: its tightest epsilon and whether it passes.

        Raises
        ------
        ValidationError
            If the prior does not have one probability per value.

        Examples
        --------
        >>> import lipdesign as ld
        >>> lip = ld.mechanisms.SubsetLIP(1.0, 4)
        >>> at_uniform = lip.certificate_at(lip.prior)
        >>> at_uniform.passed, round(at_uniform.epsilon, 6)
        (True, 1.0)
        >>> skewed = lip.certificate_at([0.4, 0.3, 0.2, 0.1])
        >>> skewed.passed, round(skewed.epsilon, 4)
        (False, 1.4486)
        >>> ball = lip.certificate_at(ld.PriorSet.tv_ball([0.25] * 4, 0.05))
        >>> ball.passed, round(ball.epsilon, 4)
        (False, 1.125)
        """
        if isinstance(prior, PriorSet):
            if prior.k != self.k:
                raise ValidationError(f"prior has {prior.k} values; it must have one per value of the mechanism "
                                      f"({self.k})")
            extremes = self._tv_ball_extremes(prior) if prior.kind == "tv_ball" else None
            return max((self.certificate_at(vertex) for vertex in (prior.vertices if extremes is None else extremes)),
                       key=lambda c: c.epsilon)
        p = probability_vector(getattr(prior, "probabilities", prior), "prior", length=self.k)
        rho = self.ratios(exact=True)
        z, high, low = rho.get("z", 0), rho.get("high", 0), rho.get("low", 0)
        exact = [Fraction(float(value)) for value in p]
        total = sum(exact)
        exact = [value / total for value in exact]
        extremes = []
        for sign in (1, -1):  # the smallest D, then the largest
            order = sorted(range(self.k), key=lambda x: sign * (high - low) * exact[x])
            best = None
            for free in sorted(range(self.k), key=lambda x: sign * (z - low) * exact[x])[:self.j + 2]:
                chosen = [x for x in order if x != free][:self.j]
                value = low + exact[free] * (z - low) + sum(exact[x] for x in chosen) * (high - low)
                best = value if best is None or sign * value < sign * best else best
            extremes.append(best)
        smallest, largest = extremes
        worst = max(max(rho.values()) / smallest, largest / min(rho.values()))
        return Certificate("LIP", self.epsilon, log_upper(worst), bool(worst <= exp_bounds(self.epsilon)[0]), True,
                           {"cases": sorted(rho), "prior": [float(value) for value in p]})

    def _tv_ball_extremes(self, ball):
        """The priors of the TV ball where D (``certificate_at``) is smallest and largest over every output, or None
        when the cases' ratios are not ordered rho_low <= rho_z <= rho_high (then the vertices are used). Over a TV
        ball the extreme of P . c for a column c of three levels depends only on the centre's mass on z and on H,
        and is monotone in both, so it is reached with z and H among the j + 1 smallest (for the smallest D) or
        largest (for the largest D) centre entries (docs/math.md §11); each split of those j + 1 values into z and
        H is tried, with the greedy extreme prior of the ball (``PriorSet.extreme_prior``), and D compared
        exactly."""
        rho = self.ratios(exact=True)
        z = rho["z"]
        high, low = rho.get("high", z), rho.get("low", z)
        if not low <= z <= high:
            return None
        order = np.argsort(np.asarray(ball.parameters["center"]), kind="stable")
        levels = {"z": float(z), "high": float(high), "low": float(low)}
        extremes = []
        for lowest, members in ((True, order[:self.j + 1]), (False, order[self.k - self.j - 1:])):
            best = None
            for free in members:
                column = np.full(self.k, levels["low"])
                column[members] = levels["high"]
                column[free] = levels["z"]
                candidate = ball.extreme_prior(column, lowest=lowest)[1]
                exact = [Fraction(float(value)) for value in candidate]
                total = sum(exact)
                value = (low * total + (z - low) * exact[free] + (high - low) * sum(exact[x] for x in members
                                                                                     if x != free)) / total
                if best is None or (value < best[0] if lowest else value > best[0]):
                    best = (value, candidate)
            extremes.append(cast("tuple[Fraction, Any]", best)[1])  # not None: members holds j + 1 >= 1 values
        return extremes

    def _certify(self):
        return self._claimed

    def verified_epsilons(self) -> dict[str, float]:
        return dict(self.epsilons)

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The outputs grouped into 8 classes by the cases of the values 0 and 1 in (z, H), for audits.

        The classes: z, high or low for each of 0 and 1, not both z. Rows 0 and 1 are the inputs 0 and 1: within a
        class every output has the same probability under each of them (the rest of the output is uniform), so
        their ratios are those of the full table (an exact LDP reduction); Pr[class | x] = Pr[x's case] Pr[the
        other's case | x's case]. Row 2 (k >= 3) is any other input, whose probabilities vary within a class: the
        classes' probabilities for the audit's comparison with the uniform prior, not a reduction. The certificates
        come from ``ratios``.

        Returns
        -------
        numpy.ndarray
            float (3, 8), or (2, 8) when k = 2: columns (case of 0, case of 1) = (z, high), (z, low), (high, z),
            (low, z), (high, high), (high, low), (low, high), (low, low).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> np.round(ld.mechanisms.SubsetLIP(1.0, 4).privacy_table(), 4)
        array([[0.0455, 0.091 , 0.2265, 0.0613, 0.    , 0.453 , 0.0613, 0.0613],
               [0.2265, 0.0613, 0.0455, 0.091 , 0.    , 0.0613, 0.453 , 0.0613],
               [0.0307, 0.2572, 0.0307, 0.2572, 0.    , 0.0762, 0.0762, 0.272 ]])
        """
        k, j = self.k, self.j
        cases = self.case_probabilities()
        z, high, low = cases.get("z", 0.0), cases.get("high", 0.0), cases.get("low", 0.0)
        names = [("z", "high"), ("z", "low"), ("high", "z"), ("low", "z"), ("high", "high"), ("high", "low"),
                 ("low", "high"), ("low", "low")]

        def given(case):
            """Pr[another value's case | the user's case]: z, high, low among the k - 1 other values."""
            if case == "z":
                return {"z": 0.0, "high": j / (k - 1), "low": (k - 1 - j) / (k - 1)}
            h = j - 1 if case == "high" else j
            return {"z": 1 / (k - 1), "high": h / (k - 1), "low": (k - 2 - h) / (k - 1)}

        def joint(case, third):
            """Pr[0 and 1 in the cases of the pair | a third value x in ``third``] (k >= 3)."""
            h = {"z": j, "high": j - 1, "low": j}[third]
            has_z = third != "z"
            labels = {"z": int(has_z), "high": h, "low": k - 1 - int(has_z) - h}
            first, second = case
            count = labels[first] * (labels[second] - (first == second))
            return count / ((k - 1) * (k - 2))

        by_case = {"z": z, "high": high, "low": low}
        rows = [[by_case[first] * given(first)[second] for first, second in names],
                [by_case[second] * given(second)[first] for first, second in names]]
        if k >= 3:
            rows.append([sum(by_case[third] * joint(pair, third) for third in by_case) for pair in names])
        return np.array(rows)

    def _perturb(self, values, rng, user_ids):
        u = rng.random(values.size)
        own, high = u < self.free_end, (u >= self.free_end) & (u < self.high_end)
        free = values.copy()
        moved = np.flatnonzero(~own)
        other = rng.integers(0, self.k - 1, size=moved.size)
        free[moved] = other + (other >= values[moved])  # uniform among the values other than the user's
        chosen = np.zeros((values.size, self.k), dtype=bool)
        rows = np.flatnonzero(own)
        chosen[rows] = random_subsets(values[rows, None], self.j, self.k, rng)
        for holds, size in ((high, self.j - 1), (~own & ~high, self.j)):
            rows = np.flatnonzero(holds)
            excluded = np.sort(np.column_stack([values[rows], free[rows]]), axis=1)
            chosen[rows] = random_subsets(excluded, size, self.k, rng)
        chosen[np.flatnonzero(high), values[high]] = True
        one_hot = np.zeros((values.size, self.k), dtype=bool)
        one_hot[np.arange(values.size), free] = True
        return pack_bits(np.concatenate([chosen, one_hot], axis=1))

    def _statistics(self, reports):
        reports = self._packed(reports)
        sums = packed_column_sums(reports, 2 * self.k)
        return reports.shape[0], {"high": sums[:self.k], "free": sums[self.k:]}

    def _information(self):
        """(alpha, beta): M = alpha I + beta J = E[s s^T] over the outputs at the uniform prior (docs/math.md §11)."""
        k, j = self.k, self.j
        z, high, low = self._rho
        square = (z**2 + j * high**2 + (k - 1 - j) * low**2) / k
        cross = ((z + j * high + (k - 1 - j) * low) ** 2 - k * square) / (k * (k - 1))
        return square - cross, cross

    def _estimate(self, aggregate, method):
        n = aggregate.n
        z, high, low = self._rho
        mean = low + (z - low) * aggregate["free"] / n + (high - low) * aggregate["high"] / n
        values = self._solve(mean)
        plug_in = consistent(values, "norm-sub")
        return self._estimate_of(values, self._variance(plug_in, n, method, None), n, method)

    def _solve(self, vector):
        alpha, beta = self._information()
        return (vector - beta * vector.sum() / (alpha + self.k * beta)) / alpha

    def _variance(self, frequencies, n, method, user_ids):
        """The exact variance of each entry of the GLS estimate, given the users' values (frequencies f):
        Cov(f^) = M^-1 [sum_x f_x Cov(s | x)] M^-1 / n, where E[s s^T | x] takes four values (at (x, x), (x, u),
        (u, u) and (u, v) for u != v other than x) from the cases' exchangeable labels (docs/math.md §11)."""
        k, j = self.k, self.j
        rho = dict(zip(("z", "high", "low"), self._rho))
        cases = self.case_probabilities()
        at_x = at_xu = at_uu = at_uv = 0.0
        for case, probability in cases.items():
            h = j if case == "z" else j - (case == "high")
            labels = {"z": int(case != "z"), "high": h, "low": k - 1 - int(case != "z") - h}
            first = sum(count * rho[name] for name, count in labels.items()) / (k - 1)
            second = sum(count * rho[name] ** 2 for name, count in labels.items()) / (k - 1)
            pairs = 0.0 if k < 3 else ((k - 1) ** 2 * first**2 - (k - 1) * second) / ((k - 1) * (k - 2))
            at_x += probability * rho[case] ** 2
            at_xu += probability * rho[case] * first
            at_uu += probability * second
            at_uv += probability * pairs
        alpha, beta = self._information()
        f = np.asarray(frequencies, dtype=float)
        # sum_x f_x Cov(s | x) = c1 J + c2 I + c3 (f 1^T + 1 f^T) + c4 diag(f), with E[s | x] = M e_x
        c1, c2 = at_uv - beta**2, at_uu - at_uv
        c3 = at_xu - at_uv - alpha * beta
        c4 = at_x - at_uu - 2 * at_xu + 2 * at_uv - alpha**2
        # the diagonal of B C B with B = M^-1 = (I - t J)/alpha, t = beta/(alpha + k beta): for each x,
        # (e_x - t 1)^T C (e_x - t 1)/alpha^2 = (C_xx - 2 t (C 1)_x + t^2 1^T C 1)/alpha^2, each term O(k)
        t = beta / (alpha + k * beta)
        row_sums = c1 * k + c2 + c3 * (k * f + f.sum()) + c4 * f  # (C 1)_x
        diagonal = c1 + c2 + 2 * c3 * f + c4 * f  # C_xx
        variances = (diagonal - 2 * t * row_sums + t**2 * row_sums.sum()) / alpha**2
        return variances / n

    @property
    def mse(self) -> float:
        """n x the sum of the variances of the unbiased estimate at the uniform prior, given the users' values."""
        return float(self._variance(np.full(self.k, 1.0 / self.k), 1, "unbiased", None).sum())

    def summary(self) -> str:
        rho = self.ratios()
        lines = [f"{self!r}: the LIP orbit at the uniform prior, one free value at {self.free:.6g}, {self.j} "
                 f"value{'' if self.j == 1 else 's'} at e^eps, {self.k - 1 - self.j} at e^-eps (docs/math.md §11)",
                 f"  guarantee (exactly verified on the realised case probabilities, rounded up): LIP for X "
                 f"{self.epsilons['LIP for X']:.6g} at the uniform prior, LDP for X {self.epsilons['LDP']:.6g}",
                 f"  posterior ratios at the uniform prior by case: "
                 f"{', '.join(f'{n} {v:.6g}' for n, v in rho.items())}",
                 f"  accuracy: n x sum of the variances of the unbiased estimate at the uniform prior, given the "
                 f"users' values: {self.mse:.6g}"]
        return "\n".join(lines + design_lines(self))

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14) for the LIP orbit.

        Inputs 0, 1 and (k >= 3) 2, which stands for every value but 0 and 1 (their classes have the same
        probabilities); classes by the cases of 0 and of 1 in the report (z, H) (``SubsetLIP.privacy_table``). LIP
        compares the law given X = 0 or 1 with the uniform prior's mixture of the three rows.

        Returns
        -------
        AuditPlan
            The inputs, the ``privacy_table``, the classifier of reports into its columns and the members of each
            row.
        """
        k = self.k
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
        return AuditPlan(np.arange(rows), self.privacy_table(), classify, ["x=0", "x=1", "x=2"][:rows],
                     [f"0 {first}, 1 {second}" for first, second in cases], members)

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §6).

        Returns
        -------
        dict
            ``{"k": k, "j": j, "free_end": free_end, "high_end": high_end}``.
        """
        return {"k": self.k, "j": self.j, "free_end": self.free_end, "high_end": self.high_end}

    def display_name(self) -> str:
        return "randomized response: the LIP orbit (closed form)"


def design_lines(mechanism: SubsetFamily) -> list[str]:
    """The optimality and baselines ``ld.design`` recorded, if it made this mechanism."""
    lines = []
    optimality = mechanism.optimality
    if optimality:
        lines.append(f"    lower bound {optimality['lower_bound']:.6g} ({optimality['bound']}), "
                     f"gap {optimality['gap']:.2e}")
    for name, figure in mechanism.baselines.items():
        lines.append(f"    {name}: {figure:.6g}")
    if mechanism.provenance and mechanism.provenance.get("method"):
        lines.append(f"  designed by: {mechanism.provenance['method']}")
    return lines
