"""Optimised unary encoding (OUE) under LDP (docs/math.md §8.3). Numpy only."""


from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.bit_reports import UnaryOracleReports, packed_bernoulli
from lipdesign.mechanisms.oracle import MAX_K, PureProtocol
from lipdesign.mechanisms.sampling import realized_probability

if TYPE_CHECKING:  # annotations only
    from typing import Self

    import numpy.typing as npt


class OUE(UnaryOracleReports, PureProtocol):
    """Optimised unary encoding over k values, eps-LDP (docs/math.md §8.3).

    One bit per value; the bit of the true value is 1 with probability p = 1/2, every other bit with q =
    ceil(2^53 fl(1/(e^eps + 1))) / 2^53 (the double rounded up to the 2^-53 grid), both exactly as the sampler
    realises them (``packed_bernoulli``: a random byte per bit compared with the integer threshold q 2^64, refined
    by a word on a tie). The estimate is the pure one of docs/math.md §8.1, (C_v/n - q)/(p - q) with C_v the
    reports whose bit v is set, and ``variance`` its exact variance given the users' values.

    Parameters
    ----------
    epsilon : float
        The LDP level, in [1e-6, 10] (``sampling.ONE_BIT_MIN_EPSILON``, ``ONE_BIT_MAX_EPSILON``).
    k : int
        The number of values, 2 <= k <= ``oracle.MAX_K``; inputs are the indices 0..k-1.

    Attributes
    ----------
    p, q : float
        Pr[bit v = 1] when v is, and is not, the user's value, as the sampler realises them.
    threshold : int
        q 2^64, the integer a bit's random word is compared with (an integer: q is on the 2^-53 grid).

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10] or k is not an integer from 2 to ``oracle.MAX_K``.

    See Also
    --------
    GRR, OLH, HadamardResponse : The other frequency oracles of docs/math.md §8.
    UnaryEncoding : Unary encoding with any pair of bit probabilities.

    Notes
    -----
    Reports: bit-packed uint8 (n, ceil(k / 8)), bit j of a report being bit j % 8 of its byte j // 8 (``bits``
    unpacks them), so ``perturb`` refuses n * ceil(k / 8) > ``MAX_OUE_BYTES``; ``aggregate`` also takes the
    unpacked (n, k) 0/1 reports of earlier versions.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> oue = ld.mechanisms.OUE(1.0, 4)
    >>> oue
    OUE(epsilon=1.0, k=4)
    >>> oue.verify().passed, round(oue.verify().epsilon, 6)
    (True, 1.0)

    The realised q is 1/(e^eps + 1) to six digits, and the variance of an absent value (f_v = 0) is
    4 e^eps/(e^eps - 1)^2 per user (docs/math.md §8.1):

    >>> import math
    >>> e = math.exp(1.0)
    >>> oue.p, round(oue.q, 6), round(1 / (e + 1), 6)
    (0.5, 0.268941, 0.268941)
    >>> round(float(oue.variance([1, 0, 0, 0])[1]), 6), round(4 * e / (e - 1) ** 2, 6)
    (3.682694, 3.682694)

    A seeded round: perturb, aggregate, estimate. Each report is one byte here (k = 4 bits).

    >>> truth = np.array([0.4, 0.3, 0.2, 0.1])
    >>> values = np.random.default_rng(0).choice(4, size=20_000, p=truth)
    >>> reports = oue.perturb(values, rng=1)
    >>> reports.shape, reports.dtype
    ((20000, 1), dtype('uint8'))
    >>> estimate = oue.estimate(oue.aggregate(reports))
    >>> np.round(estimate.values, 3)
    array([0.404, 0.312, 0.198, 0.118])
    >>> np.round(estimate.standard_errors, 3)
    array([0.014, 0.014, 0.014, 0.014])
    """

    family = "oue"
    parameter_rules = (("k", f"integer in 2..{MAX_K}"),)
    client_cost = "O(k) per report (k bits)"
    q: float  # annotation only: always set (PureProtocol's None is OLH's pool)

    def __init__(self, epsilon: float, k: int) -> None:
        super().__init__(epsilon, k)
        self.p = 0.5
        self.q = float(realized_probability(1.0 / (self.exp_epsilon + 1.0)))
        #: Pr[bit = 1] = threshold / 2^64 for a bit other than the user's (an integer: q is on the 2^-53 grid).
        self.threshold = int(self.q * 2.0**64)

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 6)

    def _perturb(self, values, rng, user_ids):
        return packed_bernoulli(values, self.k, self.threshold, rng)

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The exact reduction of OUE's 2^k outputs to 2 rows x 4 (docs/math.md §8.3).

        Two inputs x != x' differ only in the bits x and x' (the others are independent Bernoulli(q) under both and
        cancel from every likelihood ratio), so the rows are inputs x, x' and the columns the pairs (bit x, bit x')
        = 00, 01, 10, 11. The entries (1 - q)/2 and q/2 are exact doubles of the realised probabilities (q on the
        2^-53 grid), so verification is about what is sampled.

        Returns
        -------
        numpy.ndarray
            float (2, 4): rows x, x'; columns (bit x, bit x') = 00, 01, 10, 11.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> np.round(ld.mechanisms.OUE(1.0, 4).privacy_table(), 4)
        array([[0.3655, 0.1345, 0.3655, 0.1345],
               [0.3655, 0.3655, 0.1345, 0.1345]])
        """
        keep, flip = (1.0 - self.q) / 2.0, self.q / 2.0
        return np.array([[keep, flip, keep, flip], [keep, keep, flip, flip]])

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs 0 and 1; classes the pair (bit 0, bit 1) (the exact
        2 x 4 reduction).

        Returns
        -------
        AuditPlan
            The inputs, the ``privacy_table`` and the classifier of reports into its columns.
        """
        def classify(reports):
            bits = self.bits(reports, [0, 1]).astype(np.int64)  # packed reports, or unpacked ones
            return 2 * bits[:, 0] + bits[:, 1]

        return AuditPlan(np.array([0, 1]), self.privacy_table(), classify, ["x=0", "x=1"],
                     ["bits 00", "bits 01", "bits 10", "bits 11"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §5): the integer threshold of a bit.

        Returns
        -------
        dict
            ``{"k": k, "threshold": threshold}``.
        """
        return {"k": self.k, "threshold": self.threshold}

