"""Randomized response: the binary one-bit mechanism on t in [-1, 1] and generalised randomized response over k
values, the only GRR of the package (docs/math.md §8, §9). Numpy only.

- ``one_bit``: +1 with probability 1/2 + t (e^eps - 1) / (2 (e^eps + 1)), else -1 (Harmony Alg. 2 and 3, Duchi's
  one-dimensional mechanism); ``one_bit_scale`` makes c * bit unbiased for t; ``one_bit_table`` is its privacy
  table as the sampler realises it.
- ``GRR``: the true value with probability p = e^eps/(e^eps + k - 1), every other value with q = 1/(e^eps + k - 1),
  sampled as a mixture whose realised table never exceeds its claim (``grr_mixing_probability``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.oracle import MAX_K, PureProtocol
from lipdesign.mechanisms.sampling import index_reports, realized_probability
from lipdesign.notions import LDP
from lipdesign.validation import MAX_EPSILON
from lipdesign.verification import exp_bounds, verify_table

if TYPE_CHECKING:  # annotations only
    from typing import Self

    import numpy.typing as npt

    from lipdesign.verification import Certificate

#: ``grr_mixing_probability`` lowers alpha by at most this many 2^-53 steps to meet the claim exactly.
MAX_GRID_STEPS = 64

#: ``full_table()`` is built for k <= this by default (a k x k float table, at most 32 MiB).
MAX_FULL_K = 2048


def _plus_probability(values, exp_epsilon):
    """Pr[+1 | t] = 1/2 + t (e^eps - 1) / (2 (e^eps + 1)), computed as ``one_bit`` samples it."""
    return 0.5 + np.asarray(values) * ((exp_epsilon - 1.0) / (2.0 * (exp_epsilon + 1.0)))


def one_bit(values: npt.ArrayLike, exp_epsilon: float, rng: np.random.Generator) -> npt.NDArray[np.int8]:
    """Binary randomized response on values t in [-1, 1] (docs/math.md §9): +1 with probability
    1/2 + t (e^eps - 1) / (2 (e^eps + 1)), else -1; int8, same shape as ``values``. E[c * bit] = t with
    c = ``one_bit_scale``; both outcomes have probabilities within a factor e^eps for any two inputs. ``rng`` must
    already be a Generator."""
    plus = _plus_probability(values, exp_epsilon)
    return np.where(rng.random(np.shape(values)) < plus, 1, -1).astype(np.int8)


def one_bit_scale(exp_epsilon: float) -> float:
    """c = (e^eps + 1) / (e^eps - 1), the factor that makes c * one_bit(t) unbiased for t (docs/math.md §9)."""
    return (exp_epsilon + 1.0) / (exp_epsilon - 1.0)


def one_bit_table(exp_epsilon: float, values: npt.ArrayLike = (1.0, -1.0)) -> npt.NDArray[np.float64]:
    """The privacy table of ``one_bit`` as the sampler realises it (``realized_probability``): rows t in
    ``values`` (by default the extreme inputs +1, -1), outputs +1, -1. Pr[+1 | t] is monotone in t, so the
    largest ratio over [-1, 1] is attained at the two extreme inputs."""
    plus = realized_probability(_plus_probability(np.asarray(values, dtype=float), exp_epsilon))
    return np.column_stack([plus, 1.0 - plus])


def grr_mixing_probability(epsilon: float, exp_epsilon: float, size: int, field: str = "k") -> float:
    """alpha of GRR on 0..size-1 written as a mixture (docs/math.md §8): the true value with probability alpha,
    else a value uniform on ALL size values, which is GRR with keep probability alpha + (1 - alpha)/size =
    e^eps/(e^eps + size - 1) for alpha = (e^eps - 1)/(e^eps - 1 + size).

    alpha is rounded DOWN to numpy's 2^-53 grid, so ``rng.random() < alpha`` realises exactly this alpha, and then
    lowered by one grid step at a time until, in exact rational arithmetic, both the realised ratio
    1 + size alpha/(1 - alpha) and the ratio of the table's floats keep/lie stay below a lower bound of e^eps. The
    float quotient alone is not enough: at large epsilon 1 - alpha is a few thousand grid steps, so one step of
    rounding moves the ratio by 1e-4 (eps = 30, size = 4: 30.00013 before the check). ValidationError when alpha
    reaches 0 (the domain is too large for this epsilon: the reports would carry no information)."""
    steps = math.floor((exp_epsilon - 1.0) / (exp_epsilon - 1.0 + size) * 2**53)
    bound = exp_bounds(epsilon)[0]
    for _ in range(MAX_GRID_STEPS):
        if steps <= 0:
            break
        alpha = steps / 2**53
        keep, lie = grr_probabilities(alpha, size)
        if 1 + Fraction(size * steps, 2**53 - steps) <= bound and Fraction(keep) <= bound * Fraction(lie):
            return alpha
        steps -= 1
    raise ValidationError(f"epsilon is {epsilon!r} with {field} = {size}; randomized response over {size} values "
                          "cannot keep the true value with a probability on the 2^-53 grid within the claim (no "
                          "information left): use a larger epsilon or a smaller domain")


@overload
def grr_probabilities(alpha: float | Fraction, size: int, exact: Literal[False] = False) -> tuple[float, float]: ...


@overload
def grr_probabilities(alpha: float | Fraction, size: int, exact: Literal[True]) -> tuple[Fraction, Fraction]: ...


@overload
def grr_probabilities(alpha: float | Fraction, size: int, exact: bool) -> tuple[float | Fraction, float | Fraction]: ...


def grr_probabilities(alpha: float | Fraction, size: int,
                      exact: bool = False) -> tuple[float | Fraction, float | Fraction]:
    """(keep, lie): the realised Pr[y = x] and Pr[y = y'] for y' != x of the mixture with ``alpha``, alpha + lie and
    lie = (1 - alpha)/size: as floats (rounded), or with ``exact`` the Fractions the sampler realises (alpha is on
    the 2^-53 grid, so ``random() < alpha`` realises it exactly, and the uniform draw is exactly uniform)."""
    if exact:
        alpha = Fraction(alpha)
    lie = (1 - alpha) / size
    return alpha + lie, lie


def randomized_response(truth: npt.NDArray[np.int64], size: int, alpha: float,
                        rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """GRR on 0..size-1 (docs/math.md §8) as the mixture of ``grr_mixing_probability``: the truth with
    probability alpha, else a value uniform on all size values (``integers`` is exactly uniform)."""
    keep = rng.random(truth.shape) < alpha
    return np.where(keep, truth, rng.integers(0, size, size=truth.shape))


def grr_reduced_table(alpha: float, size: int, exact: bool = False) -> npt.NDArray[Any]:
    """Exact reduction of the size x size GRR table to 2 rows x 3 columns (2 x 2 when size = 2), O(1).

    Every column y of the full table is ``keep`` in row y and ``lie`` in every other row, so the ratio of any
    output between two inputs is keep/lie, lie/keep or 1. Rows: inputs x = 0, x' = 1; columns: y = x (ratio
    keep/lie), y = x' (lie/keep) and the other size - 2 outputs merged, (size - 2) lie in both rows (ratio 1;
    absent when size = 2). Floats: the same as the full table's, so even the exact rational ratios coincide. With
    ``exact``: an object array of the Fractions the sampler realises (``grr_probabilities``), which no double holds
    in general (keep = alpha + lie rounds): what ``grr_certificate`` verifies."""
    return grr_reduced_rows(*grr_probabilities(alpha, size, exact), size, dtype=object if exact else float)


def grr_reduced_rows(keep: Any, lie: Any, size: int, dtype: Any = object) -> npt.NDArray[Any]:
    """``grr_reduced_table``'s rows for given keep and lie probabilities (floats or Fractions): inputs 0 and 1;
    outputs y = 0, y = 1 and the other size - 2 merged (absent when size = 2)."""
    rows = [[keep, lie], [lie, keep]] if size == 2 else [[keep, lie, (size - 2) * lie], [lie, keep, (size - 2) * lie]]
    return np.array(rows, dtype=dtype)


def grr_certificate(epsilon: float, alpha: float, size: int) -> Certificate:
    """The exact LDP Certificate of GRR's mixture with ``alpha`` over ``size`` values, verified in rational
    arithmetic on the probabilities the sampler realises (``grr_reduced_table(..., exact=True)``), so its epsilon
    is ln(1 + size alpha/(1 - alpha)) rounded up, not the ratio of the rounded floats."""
    return verify_table(grr_reduced_table(alpha, size, exact=True), LDP(epsilon), exact=True)


def grr_audit_plan(table: npt.NDArray[np.float64]) -> AuditPlan:
    """The audit plan of a GRR table's 2 x 3 reduction (``grr_reduced_table``): inputs 0 and 1; classes y = 0, y = 1
    and any other output."""
    names = ["y=0", "y=1", "other"][:table.shape[1]]
    return AuditPlan(np.array([0, 1]), table, lambda reports: np.minimum(reports, 2), ["x=0", "x=1"], names)


def full_table_size(k: int, max_k: int) -> None:
    if k > max_k:
        raise ValidationError(f"k is {k}; the full table has O(k^2) entries, so it is built for k <= {max_k} "
                              "(pass a larger max_k; privacy_table() is the exact O(1) reduction)")


class GRR(PureProtocol):
    """Generalised randomized response over k values, eps-LDP (docs/math.md §8).

    The true value with probability p = e^eps/(e^eps + k - 1), every other value with q = 1/(e^eps + k - 1).
    Sampled as a mixture (``grr_mixing_probability``: the truth with probability alpha, else uniform on all k
    values), whose realised p and q are the ones used here, for estimation and in the privacy table; the
    certificate is verified on them as exact rationals (``grr_certificate``). The estimate is the pure one of
    docs/math.md §8.1, (C_v/n - q)/(p - q) with C_v the reports equal to v, and ``variance`` its exact variance
    [f_v p (1 - p) + (1 - f_v) q (1 - q)] / (n (p - q)^2), given the users' values.

    Epsilon lies in (0, 30], the range of the designed tables, whose baseline GRR is: alpha is checked in exact
    arithmetic (``grr_mixing_probability``), so the realised ratio stays below e^eps at any epsilon (below
    e^eps (1 - EXP_MARGIN) up to about eps = 14, where the margin alone suffices), and a domain too large for the
    epsilon (alpha below 2^-53, e.g. epsilon below 1e-9) is refused.

    Parameters
    ----------
    epsilon : float
        The LDP level, in (0, 30].
    k : int
        The number of values, 2 <= k <= ``MAX_K``; inputs and reports are the indices 0..k-1.

    Attributes
    ----------
    p, q : float
        Pr[report = v] when v is, and is not, the user's value, as the sampler realises them.
    alpha : float
        The probability of keeping the true value in the mixture, on numpy's 2^-53 grid.

    Raises
    ------
    ValidationError
        If epsilon is outside (0, 30], k is not an integer from 2 to ``MAX_K``, or the domain is too large for
        epsilon (alpha would round to 0: the reports would carry no information).

    See Also
    --------
    OUE, OLH, HadamardResponse : The other frequency oracles of docs/math.md §8.
    SubsetSelection : The A-optimal eps-LDP mechanism at the uniform prior.

    Notes
    -----
    Reports: int64 (n,) in 0..k-1, ceil(log2 k) bits each.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> grr = ld.mechanisms.GRR(1.0, 4)
    >>> grr
    GRR(epsilon=1.0, k=4)
    >>> grr.verify().passed, round(grr.verify().epsilon, 6)
    (True, 1.0)

    The realised p and q are those of the formula, and the variance of an absent value (f_v = 0) is
    (e^eps + k - 2)/(e^eps - 1)^2 per user (docs/math.md §8.1):

    >>> import math
    >>> e = math.exp(1.0)
    >>> round(grr.p, 6), round(e / (e + 3), 6)
    (0.475367, 0.475367)
    >>> round(float(grr.variance([1, 0, 0, 0])[1]), 6), round((e + 2) / (e - 1) ** 2, 6)
    (1.598067, 1.598067)

    A seeded round: perturb, aggregate, estimate.

    >>> truth = np.array([0.4, 0.3, 0.2, 0.1])
    >>> values = np.random.default_rng(0).choice(4, size=20_000, p=truth)
    >>> reports = grr.perturb(values, rng=1)
    >>> reports.shape, reports.dtype
    ((20000,), dtype('int64'))
    >>> estimate = grr.estimate(grr.aggregate(reports))
    >>> np.round(estimate.values, 3)
    array([0.391, 0.31 , 0.208, 0.092])
    >>> np.round(estimate.standard_errors, 3)
    array([0.01 , 0.01 , 0.01 , 0.009])

    A domain too large for the epsilon is refused:

    >>> ld.mechanisms.GRR(1e-12, 4)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: epsilon is 1e-12 with k = 4; randomized response over 4 values cannot keep ...
    """

    family = "grr"
    epsilon_range = (0.0, MAX_EPSILON)
    parameter_rules = (("k", f"integer in 2..{MAX_K}"),)

    client_cost = "O(1) per report"

    @property
    def report_bits(self) -> int:
        return math.ceil(math.log2(self.k))

    def __init__(self, epsilon: float, k: int) -> None:
        super().__init__(epsilon, k)
        self.alpha = grr_mixing_probability(self.epsilon, self.exp_epsilon, self.k)
        self.p, self.q = grr_probabilities(self.alpha, self.k)

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 6)

    def _perturb(self, values, rng, user_ids):
        return randomized_response(values, self.k, self.alpha, rng)

    def _support(self, reports):
        reports = index_reports(reports, self.k)
        return np.bincount(reports, minlength=self.k), reports.size

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The exact 2 x 3 reduction of the k x k GRR table (2 x 2 for k = 2), in floats (``grr_reduced_table``).

        Every column of the full table is p in one row and q in the others, so any ratio between two inputs is
        p/q, q/p or 1 (docs/math.md §8.2). The certificate is verified on its exact rational form
        (``grr_certificate``).

        Returns
        -------
        numpy.ndarray
            float (2, 3): rows the inputs 0 and 1; columns y = 0, y = 1 and the other k - 2 outputs merged
            (absent when k = 2).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> np.round(ld.mechanisms.GRR(1.0, 4).privacy_table(), 4)
        array([[0.4754, 0.1749, 0.3498],
               [0.1749, 0.4754, 0.3498]])
        """
        return grr_reduced_table(self.alpha, self.k)

    def _certify(self):
        return grr_certificate(self.epsilon, self.alpha, self.k)

    def full_table(self, max_k: int = MAX_FULL_K) -> npt.NDArray[np.float64]:
        """The whole k x k table Pr[y | x] (rows x, columns y), for audits and baselines at small k.

        Parameters
        ----------
        max_k : int, optional
            The largest k built (default ``MAX_FULL_K`` = 2048): the table has k^2 entries.

        Returns
        -------
        numpy.ndarray
            float (k, k): the realised p on the diagonal, q elsewhere.

        Raises
        ------
        ValidationError
            If k > ``max_k``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> np.round(ld.mechanisms.GRR(1.0, 3).full_table(), 4)
        array([[0.5761, 0.2119, 0.2119],
               [0.2119, 0.5761, 0.2119],
               [0.2119, 0.2119, 0.5761]])
        """
        full_table_size(self.k, max_k)
        keep, lie = grr_probabilities(self.alpha, self.k)
        table = np.full((self.k, self.k), lie)
        np.fill_diagonal(table, keep)
        return table

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs 0 and 1; classes y = 0, y = 1 and any other output
        (the exact 2 x 3 reduction).

        Returns
        -------
        AuditPlan
            The inputs, the ``privacy_table`` and the classifier of reports into its columns.
        """
        return grr_audit_plan(self.privacy_table())

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §5): the keep probability as realised.

        Returns
        -------
        dict
            ``{"k": k, "alpha": alpha}``.
        """
        return {"k": self.k, "alpha": self.alpha}


__all__ = ["GRR", "MAX_K", "grr_certificate", "grr_mixing_probability", "one_bit", "one_bit_scale", "one_bit_table"]
