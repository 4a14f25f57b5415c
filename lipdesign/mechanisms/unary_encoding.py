"""Unary encoding with per-value bit probabilities designed for a prior under LIP or LDP (family "unary",
docs/math.md §7.1). Numpy and the standard library only."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.errors import ValidationError, VerificationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import (
    EXACT_TABLE,
    Guarantee,
    worst_over_vertices,
)
from lipdesign.mechanisms.bit_reports import (
    PACK_BLOCK,
    PackedBitReports,
    check_spare_bits,
    packed_unary_reports,
)
from lipdesign.mechanisms.designed import DesignedMechanism
from lipdesign.mechanisms.estimate import Estimate, shrinkage_note
from lipdesign.mechanisms.oracle import pure_estimate, pure_variance
from lipdesign.mechanisms.postprocess import CONSISTENCY
from lipdesign.mechanisms.sampling import realized_probability
from lipdesign.model import Prior, PriorSet
from lipdesign.notions import LDP, LIP, notion_from_dict
from lipdesign.objectives import as_objective
from lipdesign.validation import choice, float_array, fmt, probability_vector
from lipdesign.verification import exp_bounds
from lipdesign.verification.exact import Certificate, log_upper
from lipdesign.verification.unary_encoding import joint_ldp_ratio, joint_lip_bound, secret_lip_bound

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.aggregate import Aggregate
    from lipdesign.model import SecretModel
    from lipdesign.objectives import BayesHistogram, BayesSum, Frequencies, Mean

#: The MMSE estimate's expectation and variance given the users' values (k x k moments) are built up to this k.
MAX_MOMENTS_K = 256


#: ``UnaryEncoding.privacy_table`` is built for k <= this by default (k x (2k + 1) floats, 64 MiB).
MAX_REDUCED_K = 2048

#: The audit reads the bits of at most this many values (2^UNARY_BITS output classes); the others are pooled.
UNARY_BITS = 10


class UnaryEncoding(PackedBitReports, DesignedMechanism):
    """Unary encoding with one pair of bit probabilities per value, designed for a prior (docs/math.md §7.1;
    ``ld.design(prior, notion, family="unary")``): bit j of the report is 1 with probability ``a[j]`` when j is the
    user's value and ``b[j]`` otherwise. Reports: the k bits packed 8 to a byte, uint8 (n, ceil(k / 8))
    (``bits(reports)`` unpacks them). The notion: eps-LIP for X, for a latent secret, or for X over a prior set, or
    eps-LDP; the objective: "frequencies" (every bit informative) or "histogram" (Bayesian; a = b is allowed).

    The guarantee is verified EXACTLY on the realised probabilities (``rng.random() < p`` realises
    ceil(p 2^53)/2^53): the joint condition of docs/math.md §7.1 over all 2^k reports, rounded outward; a
    claim it fails raises VerificationError. Estimates (``ld.Estimate``): "unbiased" per bit, (C_j/n - b_j)/(a_j -
    b_j), with standard errors given the users' values; "mmse", the joint posterior mean (no errors: biased toward
    the prior). ``bit_probabilities`` gives (a, b) as realised. Its weights, like an RR table's, are designed at the
    prior; what unary encoding adds is a design whose cost grows linearly in k.

    Parameters
    ----------
    a : array_like
        k probabilities strictly between 0 and 1: ``a[j]`` = Pr[bit j = 1 | X = j].
    b : array_like
        k probabilities strictly between 0 and 1: ``b[j]`` = Pr[bit j = 1 | X != j] (a[j] != b[j] as realised,
        unless the objective is Bayesian).
    notion : LIP or LDP
        ``ld.LIP(eps)`` for X, for a latent secret or over a prior set (not both), or ``ld.LDP(eps)``.
    prior : Prior or array_like
        The design prior: a Prior, or k probabilities.
    objective : Frequencies, BayesHistogram or str, default "frequencies"
        ``"frequencies"`` (``ld.Frequencies()``, the unbiased estimate) or ``"histogram"``
        (``ld.BayesHistogram()``, the posterior mean); an objective's dict is accepted too.
    provenance : mapping, optional
        The design's record (``baselines``, ``optimality``), as ``ld.design`` writes it; None when built directly.

    Raises
    ------
    ValidationError
        If the objective does not estimate the histogram, the notion is neither LIP nor LDP (or has both a secret
        and a prior set) or does not fit the prior, ``a`` or ``b`` has not k entries strictly between 0 and 1, or
        a bit of a population design has a = b as realised.
    VerificationError
        If the realised bit probabilities fail the claim (the exact joint condition of docs/math.md §7.1).

    See Also
    --------
    lipdesign.design : ``family="unary"`` designs it.
    OUE : Optimised unary encoding, the same bits under LDP with one pair of probabilities for every value.
    LocalHashing : The designed encoding whose report stays short at any k.

    Examples
    --------
    A design at a prior of four values (``baselines=False`` skips the comparison with the other families):

    >>> import lipdesign as ld
    >>> import numpy as np
    >>> prior = ld.Prior([0.1, 0.2, 0.3, 0.4])
    >>> mech = ld.design(prior, ld.LIP(1.0), family="unary", baselines=False)
    >>> type(mech).__name__, mech.report_bytes
    ('UnaryEncoding', 1)
    >>> certificate = mech.certificate  # exact, over all 2^k reports
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 1.0)
    >>> a, b = mech.bit_probabilities
    >>> np.round(a, 3), np.round(b, 3)
    (array([0.507, 0.547, 0.61 , 0.663]), array([0.271, 0.238, 0.308, 0.371]))

    Each report is the k bits, packed; the aggregate's bit counts give the estimate:

    >>> rng = np.random.default_rng(0)
    >>> values = rng.choice(4, size=20_000, p=prior.probabilities)
    >>> reports = mech.perturb(values, rng=rng)
    >>> reports.shape, reports.dtype
    ((20000, 1), dtype('uint8'))
    >>> estimate = mech.estimate(mech.aggregate(reports))
    >>> np.round(estimate.values, 3)
    array([0.114, 0.192, 0.317, 0.388])
    >>> np.round(np.bincount(values) / values.size, 3)  # the truth
    array([0.102, 0.191, 0.305, 0.403])

    Bit probabilities chosen by hand are verified when built:

    >>> mech = ld.mechanisms.UnaryEncoding([0.5] * 4, [0.3] * 4, ld.LIP(1.0), prior)
    >>> round(mech.epsilons["LIP for X"], 4), round(mech.epsilons["LDP"], 4)
    (0.7885, 0.8473)
    >>> ld.mechanisms.UnaryEncoding([0.9] * 4, [0.1] * 4, ld.LIP(1.0), prior)
    Traceback (most recent call last):
    ...
    lipdesign.errors.VerificationError: the bit probabilities are not LIP with eps=1: ...
    """

    family = "unary"
    design_family = "unary"
    client_cost = "O(k) per report (k bits)"
    methods = ("unbiased", "mmse")

    def __init__(self, a: npt.ArrayLike, b: npt.ArrayLike, notion: LDP | LIP,
                 prior: Prior | npt.ArrayLike, *,
                 objective: Frequencies | Mean | BayesHistogram | BayesSum | str | Mapping[str, Any] = "frequencies",
                 provenance: Mapping[str, Any] | None = None) -> None:
        self.prior = prior if isinstance(prior, Prior) else Prior(prior)
        self.objective = as_objective(objective)
        if self.objective.kind not in ("frequencies", "histogram"):
            raise ValidationError(f"objective is {self.objective!r}; a unary encoding estimates the histogram: "
                                  "ld.Frequencies() or ld.BayesHistogram()")
        if not isinstance(notion, (LIP, LDP)) or \
                getattr(notion, "secret", None) and getattr(notion, "prior_set", None) is not None:
            raise ValidationError(f"notion is {notion!r}; unary encoding is verified under ld.LIP(eps) (for X, a "
                                  "latent secret, or X over a prior set) or ld.LDP(eps) (a secret and a prior set "
                                  "together are not built for it)")
        notion.check(self.prior)  # a secret's size and marginal, the design prior inside a prior set
        self.notion = notion
        self.k = self.prior.k
        self.input_domain = self.prior.domain
        requested = {}
        for name, values in (("a", a), ("b", b)):
            values = float_array(values, name, 1)
            if values.size != self.k:
                raise ValidationError(f"{name} has {values.size} entries; it must have one per value ({self.k})")
            bad = ~((values > 0) & (values < 1))
            if bad.any():
                x = int(np.argmax(bad))
                raise ValidationError(f"{name}[{x}] is {fmt(values[x])}; it must lie strictly between 0 and 1 (a bit "
                                      "that is certain has an infinite epsilon)")
            requested[name] = values
        self.a, self.b = (np.array(requested[name]) for name in ("a", "b"))
        self.p, self.q = realized_probability(self.a), realized_probability(self.b)
        same = self.p == self.q
        if same.any() and self.objective.population:
            x = int(np.argmax(same))
            raise ValidationError(f"a[{x}] and b[{x}] ({self.a[x]:.17g}, {self.b[x]:.17g}) are realised as the same "
                                  "probability on the sampler's 2^-53 grid; such a bit says nothing about its value "
                                  "and has no unbiased estimate")
        self._weights = self.prior.probabilities / self.prior.probabilities.sum()
        for array in (self.a, self.b, self.p, self.q, self._weights):
            array.setflags(write=False)
        lip = self._lip_for_x(self.prior.probabilities)
        ldp_ratio, (high, low) = joint_ldp_ratio(self.p, self.q, where=True)
        ldp = Certificate("LDP", self.epsilon, log_upper(ldp_ratio), bool(ldp_ratio <= exp_bounds(self.epsilon)[0]),
                          True, {"inputs": [high, low]})
        if isinstance(notion, LDP):
            self._claimed = ldp
        elif notion.prior_set is not None:  # the worst over the set's vertices, where the ratios peak
            self._claimed = self.certificate_at(notion.prior_set)
        else:
            self._claimed = self._secret_claim() if self.secret else lip
        if not self._claimed.passed:
            where = ", ".join(f"{name} {value}" for name, value in self._claimed.worst.items() if name != "prior")
            raise VerificationError(f"the bit probabilities are not {notion.kind} with eps={notion.epsilon:g}: the "
                                    f"joint epsilon of the realised bits is {self._claimed.epsilon:.12g} (exact, "
                                    f"docs/math.md §7.1), at {where}")
        epsilons = {"claimed": self._claimed.epsilon}
        if self.secret:
            epsilons["LIP for the secret"] = self._claimed.epsilon
        self._record(self._claimed, {**epsilons, "LIP for X": lip.epsilon, "LDP": ldp.epsilon}, provenance)

    def _design_figure(self):
        """n x sum Var of the unbiased estimate at the design prior, or the Bayes risk of a Bayesian design."""
        if self.objective.population:
            return float(pure_variance(self.prior.probabilities, 1, self.p, self.q).sum())
        return self.bayes_risk

    @property
    def secret(self) -> SecretModel | None:
        """The latent secret the design protects (a SecretModel), or None for X itself."""
        return getattr(self.notion, "secret", None)

    def certificate_at(self, prior: Prior | PriorSet | npt.ArrayLike) -> Certificate:
        """The exact Certificate of eps-LIP, for the secret the design protects (X itself without one), at ``prior``.

        From the joint condition of docs/math.md §7.1 on the realised bit probabilities (decimal arithmetic with its
        rounding bounded and added: ``joint_lip_bound``, ``secret_lip_bound``).

        Parameters
        ----------
        prior : Prior, PriorSet or array_like
            A Prior, k probabilities, or a PriorSet: the worst over its vertices, where a linear-fractional ratio
            peaks.

        Returns
        -------
        Certificate
            Whether the mechanism is eps-LIP at ``prior``, and its epsilon there (rounded up).

        Raises
        ------
        ValidationError
            If ``prior`` is not a probability vector of length k.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mech = ld.mechanisms.UnaryEncoding([0.5] * 4, [0.3] * 4, ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> certificate = mech.certificate_at([0.25, 0.25, 0.25, 0.25])
        >>> certificate.passed, round(certificate.epsilon, 4)
        (True, 0.6931)
        """
        if isinstance(prior, PriorSet):
            return worst_over_vertices(self, prior)
        probabilities = probability_vector(getattr(prior, "probabilities", prior), "prior", length=self.k)
        return self._lip_for_x(probabilities) if self.secret is None else self._secret_certificate(probabilities)

    def _secret_certificate(self, probabilities):
        notion = cast(LIP, self.notion)  # a secret (the callers check it) is an LIP notion's
        ratio, side, value = secret_lip_bound(self.p, self.q, probabilities, notion.conditional(self.k))
        return self._lip_certificate(ratio, {"side": side, "secret": value,
                                             "prior": [float(p) for p in probabilities]})

    def _secret_claim(self):
        """The claim for the secret at the design prior and at the declared joint's marginal, if any (docs/math.md
        §1): the larger certificate."""
        declared = cast(LIP, self.notion).declared_prior()  # called with a secret: an LIP notion's
        return max([self.certificate_at(self.prior)] + ([] if declared is None else
                                                         [self._secret_certificate(declared)]),
                   key=lambda certificate: certificate.epsilon)

    def _lip_for_x(self, probabilities):
        ratio, side, value = joint_lip_bound(self.p, self.q, probabilities)
        return self._lip_certificate(ratio, {"side": side, "value": value, "prior": probabilities.tolist()})

    def _lip_certificate(self, ratio, worst):
        return Certificate("LIP", self.epsilon, log_upper(ratio), bool(ratio <= exp_bounds(self.epsilon)[0]), True,
                           worst, arithmetic="50-digit decimal, rounding bounded")

    def privacy_table(self, max_k: int = MAX_REDUCED_K) -> npt.NDArray[np.float64]:
        """The reports that decide every posterior ratio, for audits (floats).

        For each value x, the report with bit x at its more likely side for x and every other bit at its less likely
        one, and the reverse (docs/math.md §7.1: the worst ratios at ANY prior come from these 2k reports), then one
        column for all other reports. Each entry multiplies k floats, so it may differ from the realised probability
        in the last digit: the certificates come from the exact joint condition (``certificate_at``), not from this
        table.

        Parameters
        ----------
        max_k : int, default MAX_REDUCED_K
            The largest k the table is built for (k x (2k + 1) floats).

        Returns
        -------
        numpy.ndarray
            k rows; one column per distinct deciding report (at most 2k), then the rest; each row sums to 1.

        Raises
        ------
        ValidationError
            If k is larger than ``max_k``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> mech = ld.mechanisms.UnaryEncoding([0.5] * 4, [0.3] * 4, ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> table = mech.privacy_table()
        >>> table.shape, np.round(table.sum(axis=1), 6)
        ((4, 9), array([1., 1., 1., 1.]))
        """
        if self.k > max_k:
            raise ValidationError(f"k is {self.k}; the reduced table has k (2k + 1) entries, built for k <= {max_k}")
        likely_one = self.p > self.q  # for bit x, is 1 the report that favours X = x?
        candidates = []
        for x in range(self.k):
            high = ~likely_one.copy()
            high[x] = likely_one[x]
            candidates += [high, ~high]
        patterns = np.unique(np.array(candidates), axis=0)
        # Pr[pattern | x']: bit j is 1 with p_j if j = x' else q_j
        logs = np.where(patterns, np.log(self.q), np.log1p(-self.q)).sum(axis=1)  # every bit at its "other" law
        own = np.where(patterns, np.log(self.p / self.q), np.log1p(-self.p) - np.log1p(-self.q))  # (patterns, k)
        columns = np.exp(logs[:, None] + own).T  # (k, patterns)
        return np.column_stack([columns, np.maximum(1.0 - columns.sum(axis=1), 0.0)])

    @property
    def bit_probabilities(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """(a, b) as the sampler realises them: Pr[bit j = 1 | X = j] and Pr[bit j = 1 | X != j]."""
        return self.p, self.q

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.notion.kind, self.epsilon, EXACT_TABLE,
                         "joint condition over all 2^k reports on the realised bit probabilities (docs/math.md §7.1)")

    def _method(self, method):
        method = super()._method(method)
        same = self.p == self.q
        if method == "unbiased" and same.any():
            x = int(np.argmax(same))
            raise ValidationError(f"method is 'unbiased'; bit {x} of this Bayesian design says nothing about its value "
                                  "(a = b), so there is no unbiased estimate: use method='mmse'")
        return method

    verified_on = "the realised bits"
    value_beside_baselines = "unary encoding's value is a design whose cost grows linearly in k"

    def _summary_title(self):
        return (f"unary encoding, {self.notion.kind} eps={self.epsilon:g}, k={self.k}: bit j is 1 with a[j] if X = j, "
                "b[j] otherwise")

    def _summary_accuracy(self):
        if self.objective.population:
            return ["  accuracy: n x sum of the variances of the unbiased estimate, at the design prior, given the "
                    f"users' values: {self.mse:.6g}"]
        return ["  accuracy: histogram MSE per user of the joint posterior mean at the design prior (right only when "
                f"the prior is the truth, docs/math.md §11): {self.mse:.6g}"]

    def _summary_details(self):
        lines = []
        informative = np.flatnonzero(self.p != self.q)
        if self.provenance.get("informative_bits") == 1 and informative.size == 1:  # a design of _one_bit's form
            label = self.prior.labels[int(informative[0])]
            lines.append(f"  the design degenerates to ONE informative bit, for value {label!r}: the binary channel of "
                         f"docs/math.md §6 on 1[X = {label!r}]; the other bits are coin flips (docs/math.md §7.1)")
        if self.objective.population:
            lines.append("  the joint posterior mean (method='mmse', biased toward the prior): histogram MSE per user "
                         f"at the design prior {self.bayes_risk:.6g}")
        return lines

    def parameters(self) -> dict[str, Any]:
        parameters = {"prior": self.prior.to_dict(), "notion": self.notion.to_dict(), "a": self.a.tolist(),
                      "b": self.b.tolist()}
        if not self.objective.population:  # files of population designs keep their form
            parameters["objective"] = self.objective.to_dict()
        return parameters

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> Self:
        notion = cast("LDP | LIP", notion_from_dict(parameters["notion"]))  # the constructor refuses WorstCaseLIP
        return cls(parameters["a"], parameters["b"], notion,
                   Prior.from_dict(parameters["prior"]), objective=parameters.get("objective", "frequencies"),
                   provenance=provenance)

    @classmethod
    def example(cls) -> Self:
        """Symmetric UE at P = (0.2, 0.3, 0.5), eps = 1: a = 1/2 and u/v = 0.9 (e - p_min)/(1 - p_min), inside the
        exact condition of docs/math.md §7.1 (u/v <= (e^eps - p_min)/(1 - p_min))."""
        prior, e = np.array([0.2, 0.3, 0.5]), np.exp(1.0)
        ratio = 0.9 * (e - 0.2) / 0.8  # u / v with a = 1/2: (1/2 / b) / (1/2 / (1 - b)) = (1 - b)/b
        b = 1.0 / (1.0 + ratio)
        return cls(np.full(3, 0.5), np.full(3, b), LIP(1.0), Prior(prior))

    def _perturb(self, values, rng, user_ids):
        """Reports packed 8 bits to a byte (``packed_unary_reports``; ``bits`` unpacks them), with a and b as
        requested: the sampler realises ``bit_probabilities``, which are what is verified."""
        return packed_unary_reports(values, self.k, self.a, self.b, rng, "unary")

    def empty_reports(self) -> npt.NDArray[np.uint8]:
        return np.zeros((0, self.report_bytes), dtype=np.uint8)

    def bits(self, reports: npt.ArrayLike) -> npt.NDArray[np.uint8]:
        """The (n, k) uint8 bits of packed ``reports``, checked (for audits; aggregation never unpacks all of them).

        Parameters
        ----------
        reports : array_like
            uint8 reports of shape (n, ceil(k / 8)), as ``perturb`` makes them (bit j of a report is bit j % 8 of
            byte j // 8).

        Returns
        -------
        numpy.ndarray
            uint8 of shape (n, k): bit j of each report.

        Raises
        ------
        ValidationError
            If ``reports`` has another shape or dtype, or sets a spare bit beyond the k-th.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> mech = ld.mechanisms.UnaryEncoding([0.5] * 4, [0.3] * 4, ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> reports = np.array([[0b0101], [0b1000]], dtype=np.uint8)
        >>> mech.bits(reports)
        array([[1, 0, 1, 0],
               [0, 0, 0, 1]], dtype=uint8)
        """
        return np.unpackbits(self._packed(reports), axis=1, count=self.k, bitorder="little")

    def _packed(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.report_bytes or reports.dtype != np.uint8:
            raise ValidationError(f"reports has shape {reports.shape} and dtype {reports.dtype}; unary reports are "
                                  f"uint8 of shape (n, {self.report_bytes}): k = {self.k} bits packed 8 to a byte")
        check_spare_bits(reports, self.k)
        return reports

    def _statistics(self, reports):
        """The support counts (bit sums) and the sums of the joint posteriors Pr[X = . | y] ∝ P_x rho_x(y_x)
        (docs/math.md §7.1), O(k) per report, in blocks of unpacked bits."""
        reports = self._packed(reports)
        counts, posteriors = np.zeros(self.k, dtype=np.int64), np.zeros(self.k)
        # P_x rho_x(y_x) = base_x + y_x change_x: the normaliser S = sum_x base_x + y . change is one product per
        # block, and so is the sum over reports of the posteriors, base sum(1/S) + change * (y^T (1/S))
        base = self._weights * (1 - self.p) / (1 - self.q)
        change = self._weights * self.p / self.q - base
        step = max(1, PACK_BLOCK // self.k)
        for start in range(0, reports.shape[0], step):
            chunk = np.unpackbits(reports[start:start + step], axis=1, count=self.k, bitorder="little")
            counts += chunk.sum(axis=0, dtype=np.int64)
            bits = chunk.astype(float)
            inverse = 1.0 / (base.sum() + bits @ change)
            posteriors += base * inverse.sum() + change * (inverse @ bits)
        return reports.shape[0], {"support": counts, "posterior_sums": posteriors}

    def _estimate(self, aggregate, method):
        if method == "mmse":
            return aggregate["posterior_sums"] / aggregate.n
        return pure_estimate(aggregate["support"], aggregate.n, self.p, self.q)

    def estimate(self, reports: npt.ArrayLike | Aggregate, *, method: str | None = None,
                 consistency: str | None = None) -> Estimate:
        """The unbiased frequencies (C_j/n - b_j)/(a_j - b_j) as an ``ld.Estimate``, from reports or their Aggregate.

        With plug-in standard errors given the users' values: ``variance`` at the estimate clipped to [0, 1]
        (docs/math.md §7.1, §11); ``method="mmse"``: the mean of the joint posteriors (biased toward the design
        prior, no standard errors).

        Parameters
        ----------
        reports : numpy.ndarray or Aggregate
            Packed uint8 reports of shape (n, ceil(k / 8)) from ``perturb``, or their ``aggregate``.
        method : str, optional
            ``"unbiased"`` or ``"mmse"``; None: ``default_method`` (``"unbiased"`` for a population design,
            ``"mmse"`` for a Bayesian one).
        consistency : str, optional
            ``"norm-sub"`` projects the frequencies onto the simplex (the errors stay those of ``raw``); None
            leaves them as estimated.

        Returns
        -------
        Estimate
            The k frequencies, their standard errors (NaN for ``"mmse"``) and ``raw``, the values before
            ``consistency``.

        Raises
        ------
        ValidationError
            If the reports are malformed or empty, the aggregate is of another mechanism, ``method`` or
            ``consistency`` is not one of the choices, or ``"unbiased"`` is asked of a design with a bit whose a = b.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> mech = ld.mechanisms.UnaryEncoding([0.5] * 4, [0.3] * 4, ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> values = np.repeat([0, 1, 2, 3], [1000, 2000, 3000, 4000])
        >>> reports = mech.perturb(values, rng=np.random.default_rng(1))
        >>> estimate = mech.estimate(reports)  # the truth is 0.1, 0.2, 0.3, 0.4
        >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
        (array([0.086, 0.188, 0.295, 0.422]), array([0.023, 0.023, 0.024, 0.024]))
        >>> np.round(mech.estimate(reports, consistency="norm-sub").values, 3)  # on the simplex
        array([0.089, 0.19 , 0.297, 0.424])
        """
        aggregate = self._aggregate_of(reports)
        method = self._method(method)
        consistency = None if consistency is None else choice(consistency, "consistency", CONSISTENCY)
        raw = self._estimate(aggregate, method)
        if method == "mmse":
            errors, note = np.full(self.k, np.nan), shrinkage_note()
        else:
            errors, note = np.sqrt(pure_variance(np.clip(raw, 0.0, 1.0), aggregate.n, self.p, self.q)), ""
        return Estimate(self._consistent(raw, consistency), errors, n=aggregate.n, method=method,
                        names=self.input_domain.names(), raw=raw, note=note)

    @cached_property
    def bayes_risk(self) -> float:
        """The histogram MSE per user of the joint posterior mean at the design prior (docs/math.md §7.1: one
        integral in t, O(k) per node)."""
        from lipdesign.mechanisms.unary_posterior import joint_mmse_risk

        return joint_mmse_risk(self._weights, self.p, self.q)

    @cached_property
    def _posterior_moments(self):
        if self.k > MAX_MOMENTS_K:
            raise ValidationError(f"method is 'mmse'; its expectation and variance given the users' values need "
                                  f"E[posterior | X = x] for every x, O(k^2) per quadrature node, built for k <= "
                                  f"{MAX_MOMENTS_K} (k is {self.k}): the MMSE estimate is biased toward the prior "
                                  "anyway; use method='unbiased' or mech.bayes_risk")
        from lipdesign.mechanisms.unary_posterior import joint_mmse_moments

        return joint_mmse_moments(self._weights, self.p, self.q)

    def _expected(self, frequencies, method, user_ids):
        if method == "mmse":
            return frequencies @ self._posterior_moments[0]
        return frequencies

    def _variance(self, frequencies, n, method, user_ids):
        if method == "mmse":
            first, second = self._posterior_moments
            return frequencies @ (second - first**2) / n
        return pure_variance(frequencies, n, self.p, self.q)

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads: the bits of up to UNARY_BITS values S, class = their pattern.

        S is the worst value of the certificate first, then the others by increasing prior; rows: each value of S
        and one row for all the others, whose bits of S all follow b. Pr[pattern | row] is the product of the
        realised bit probabilities.

        Returns
        -------
        AuditPlan
            The rows, the 2^|S| output classes and their probabilities.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mech = ld.mechanisms.UnaryEncoding([0.5] * 4, [0.3] * 4, ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> plan = mech.audit_plan()
        >>> plan.table.shape, plan.row_names
        ((4, 16), ['x=0', 'x=1', 'x=2', 'x=3'])
        """
        k = self.k
        worst = self.certificate.worst.get("value", self.certificate.worst.get("inputs", [0])[0])
        order = [int(worst)] + [int(x) for x in np.argsort(self.prior.probabilities, kind="stable") if x != worst]
        read = np.array(order[:UNARY_BITS])
        rest = np.setdiff1d(np.arange(k), read)
        rows = list(read) + ([int(rest[0])] if rest.size else [])
        members = np.zeros((len(rows), k))
        members[np.arange(read.size), read] = 1
        members[read.size:, rest] = 1
        ones = np.where(read[None, :] == np.array(rows)[:, None], self.p[read], self.q[read])  # Pr[bit = 1]
        patterns = (np.arange(2**read.size)[:, None] >> np.arange(read.size)) & 1
        table = np.where(patterns[None] == 1, ones[:, None, :], 1 - ones[:, None, :]).prod(axis=2)
        weights = 1 << np.arange(read.size)

        def classify(reports):
            return self.bits(reports)[:, read].astype(np.int64) @ weights

        names = [f"x={self.prior.labels[x]}" for x in read] + (["other values"] if rest.size else [])
        return AuditPlan(np.array(rows), table, classify, names,
                     ["bits of " + ",".join(map(str, read)) + " = " + "".join(map(str, p)) for p in patterns], members)

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §5): the bit probabilities.

        Returns
        -------
        dict
            ``k``, and ``a`` and ``b`` as requested (the sampler realises them on its 2^-53 grid).
        """
        return {"k": self.k, "a": self.a.tolist(), "b": self.b.tolist()}

    def display_name(self) -> str:
        return "unary encoding"

