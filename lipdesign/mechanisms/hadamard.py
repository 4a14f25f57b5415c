"""Hadamard response (docs/math.md §8, the survey's "HRR"). Numpy only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.oracle import MAX_K, PureProtocol
from lipdesign.mechanisms.rr import MAX_FULL_K, full_table_size
from lipdesign.mechanisms.sampling import index_reports, realized_probability
from lipdesign.notions import LDP
from lipdesign.verification import verify_table

if TYPE_CHECKING:  # annotations only
    from typing import Self

    import numpy.typing as npt


def parity(z: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """popcount(z) mod 2 for non-negative int64 z (xor folding)."""
    z = z.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        z ^= z >> shift
    return z & 1


def fwht(vector: npt.ArrayLike) -> npt.NDArray[Any]:
    """Fast Walsh-Hadamard transform: (H v)[r] = sum_y (-1)^popcount(r & y) v[y], len(v) a power of 2 (Sylvester
    order). Each pass applies the 2 x 2 butterfly to one bit of the index."""
    out = np.asarray(vector)
    size, half = out.size, 1
    while half < size:
        pairs = out.reshape(-1, 2, half)
        out = np.stack((pairs[:, 0] + pairs[:, 1], pairs[:, 0] - pairs[:, 1]), axis=1)
        half *= 2
    return out.reshape(size)


class HadamardResponse(PureProtocol):
    """Hadamard response over k values, eps-LDP (docs/math.md §8.5).

    K = the smallest power of 2 > k; value x uses row x + 1 of the Sylvester Hadamard matrix H[i, j] =
    (-1)^popcount(i & j) (row 0, all ones, is skipped). The output y in 0..K-1 is uniform on C_x = {y: H[x+1, y] =
    +1} with probability p = e^eps/(e^eps + 1), else uniform on the complement. Rows x+1 != x'+1 are orthogonal, so
    C_x holds half of C_x' and half of its complement: q = 1/2. The estimate is the pure one of docs/math.md §8.1,
    (C_v/n - q)/(p - q) with C_v the reports in C_v, and ``variance`` its exact variance given the users' values.
    The certificate is verified on the table with p as the sampler realises it (``realised_table``).

    Parameters
    ----------
    epsilon : float
        The LDP level, in [1e-6, 10].
    k : int
        The number of values, 2 <= k <= ``oracle.MAX_K`` (so K <= 2**62); inputs are the indices 0..k-1.

    Attributes
    ----------
    K : int
        The number of outputs, the smallest power of 2 above k.
    p, q : float
        Pr[y in C_v] when v is, and is not, the user's value (p as computed, e^eps/(e^eps + 1); q = 1/2).

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10] or k is not an integer from 2 to ``oracle.MAX_K``.

    See Also
    --------
    GRR, OUE, OLH : The other frequency oracles of docs/math.md §8.

    Notes
    -----
    Reports: int64 (n,) in 0..K-1. Aggregating a batch of reports costs O(K log K) (the fast Walsh-Hadamard
    transform of its histogram).

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> hr = ld.mechanisms.HadamardResponse(1.0, 4)
    >>> hr, hr.K
    (HadamardResponse(epsilon=1.0, k=4), 8)
    >>> hr.verify().passed, round(hr.verify().epsilon, 6)
    (True, 1.0)

    p is e^eps/(e^eps + 1), and the variance of an absent value (f_v = 0) is ((e^eps + 1)/(e^eps - 1))^2 per
    user (docs/math.md §8.1):

    >>> import math
    >>> e = math.exp(1.0)
    >>> round(hr.p, 6), hr.q
    (0.731059, 0.5)
    >>> round(float(hr.variance([1, 0, 0, 0])[1]), 6), round(((e + 1) / (e - 1)) ** 2, 6)
    (4.682694, 4.682694)

    A seeded round: perturb, aggregate, estimate.

    >>> truth = np.array([0.4, 0.3, 0.2, 0.1])
    >>> values = np.random.default_rng(0).choice(4, size=20_000, p=truth)
    >>> reports = hr.perturb(values, rng=1)
    >>> reports.shape, int(reports.max()) < hr.K
    ((20000,), True)
    >>> estimate = hr.estimate(hr.aggregate(reports))
    >>> np.round(estimate.values, 3)
    array([0.388, 0.308, 0.197, 0.089])
    >>> np.round(estimate.standard_errors, 3)
    array([0.015, 0.015, 0.015, 0.015])
    """

    family = "hadamard"
    parameter_rules = (("k", f"integer in 2..{MAX_K}"),)

    def __init__(self, epsilon: float, k: int) -> None:
        super().__init__(epsilon, k)
        self.K = 1 << self.k.bit_length()
        self.p = self.exp_epsilon / (self.exp_epsilon + 1.0)
        self.q = 0.5

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 10)

    def _perturb(self, values, rng, user_ids):
        """Draw y uniform on 0..K-1, then flip the lowest set bit of x + 1 when y is on the wrong side: that flip
        changes the parity of popcount((x+1) & y) and maps C_x one-to-one onto its complement."""
        row = values + 1
        y = rng.integers(0, self.K, size=row.size)
        inside = parity(row & y) == 0
        keep = rng.random(row.size) < self.p
        return y ^ np.where(inside != keep, row & -row, 0)

    def _support(self, reports):
        """C_x = (n + (H h)[x+1]) / 2 with h the output histogram: (H h)[r] counts reports in C minus the rest."""
        reports = index_reports(reports, self.K)
        transform = fwht(np.bincount(reports, minlength=self.K))
        return (reports.size + transform[1:self.k + 1]) // 2, reports.size

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The exact reduction of the k x K table (``full_table``) to 2 rows x 4 columns, O(1) whatever k.

        Every output y has probability 2p/K under x if y is in C_x and 2(1-p)/K otherwise, so the ratio of any
        output between any two inputs is e^eps, e^-eps or 1, and every output of a class below has the same
        probability under each of the two rows. Rows: x = 0, x' = 1 (rows 1 and 2 of H); columns: the classes
        C_x & C_x', C_x - C_x', C_x' - C_x and neither, each of K/4 outputs (distinct non-zero rows of the
        Sylvester matrix are orthogonal and balanced: H[1] and H[2] agree on half of the K outputs, and each is
        +1 on half of those), with the probabilities summed over the class. The ratios e^eps, e^-eps and 1 all
        occur. The sums are the full table's entries times K/4, a power of 2, so exact: the table's ratios are
        bit for bit those of the full table. These are the computed probabilities (p = e^eps/(e^eps + 1));
        ``realised_table`` has the ones the sampler draws with.

        Returns
        -------
        numpy.ndarray
            float (2, 4): rows x = 0, x' = 1; columns C_x & C_x', C_x - C_x', C_x' - C_x and neither.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> np.round(ld.mechanisms.HadamardResponse(1.0, 4).privacy_table(), 4)
        array([[0.3655, 0.3655, 0.1345, 0.1345],
               [0.3655, 0.1345, 0.3655, 0.1345]])
        """
        return self._reduced(*self._entries())

    def realised_table(self) -> npt.NDArray[np.float64]:
        """``privacy_table`` with p as the sampler realises it: what the certificate is verified on.

        p as ``random() < p`` realises it is ceil(p 2^53) / 2^53 (``realized_probability``; y is exactly uniform on
        0..K-1): entries p/2 and (1 - p)/2, exact doubles (p and 1 - p are on the 2^-53 grid). The certificate is
        verified on it, so it is about what is sampled.

        Returns
        -------
        numpy.ndarray
            float (2, 4), with the classes of ``privacy_table``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> hr = ld.mechanisms.HadamardResponse(1.0, 4)
        >>> bool(np.allclose(hr.realised_table(), hr.privacy_table(), rtol=0, atol=1e-15))
        True
        """
        realised = float(realized_probability(self.p))
        return self._reduced(2.0 * realised / self.K, 2.0 * (1.0 - realised) / self.K)

    def _certify(self):
        return verify_table(self.realised_table(), LDP(self.epsilon), exact=True)

    def _reduced(self, inside, outside):
        """The 2 x 4 reduction from the full table's entries on C_x and off it (times K/4, exact)."""
        quarter = self.K // 4
        inside, outside = quarter * inside, quarter * outside
        return np.array([[inside, inside, outside, outside], [inside, outside, inside, outside]])

    def _entries(self):
        """Pr[y | x] for y in C_x and for y outside it: 2p/K and 2(1-p)/K."""
        scale = 2.0 / ((self.exp_epsilon + 1.0) * self.K)
        return self.exp_epsilon * scale, scale

    def full_table(self, max_k: int = MAX_FULL_K) -> npt.NDArray[np.float64]:
        """The whole k x K table Pr[y | x] (2p/K on C_x, 2(1-p)/K elsewhere), for audits at small k.

        Parameters
        ----------
        max_k : int, optional
            The largest k built (default ``rr.MAX_FULL_K`` = 2048).

        Returns
        -------
        numpy.ndarray
            float (k, K): rows the inputs x, columns the outputs y.

        Raises
        ------
        ValidationError
            If k > ``max_k``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> np.round(ld.mechanisms.HadamardResponse(1.0, 2).full_table(), 4)
        array([[0.3655, 0.1345, 0.3655, 0.1345],
               [0.3655, 0.3655, 0.1345, 0.1345]])
        """
        full_table_size(self.k, max_k)
        inside = parity(np.arange(1, self.k + 1)[:, None] & np.arange(self.K)[None, :]) == 0
        high, low = self._entries()
        return np.where(inside, high, low)

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs 0 and 1; classes C_0 & C_1, C_0 - C_1, C_1 - C_0 and
        neither (the exact 2 x 4 reduction; y is in C_x when popcount((x + 1) & y) is even).

        Returns
        -------
        AuditPlan
            The inputs, the ``privacy_table`` and the classifier of reports into its columns.
        """
        def classify(reports):
            return 2 * parity(reports & 1) + parity(reports & 2)

        return AuditPlan(np.array([0, 1]), self.privacy_table(), classify, ["x=0", "x=1"],
                     ["in C0 and C1", "in C0 only", "in C1 only", "in neither"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §5).

        Returns
        -------
        dict
            ``{"k": k, "K": K, "p": p}``.
        """
        return {"k": self.k, "K": self.K, "p": self.p}
