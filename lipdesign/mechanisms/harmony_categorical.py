"""Harmony's categorical mechanism: the Bassily-Smith random projection (Harmony Alg. 3, docs/math.md §9).
Numpy only."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.domains import Categorical
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan, row_classes, sign_plan
from lipdesign.mechanisms.base import SEED_RULE, Mechanism
from lipdesign.mechanisms.rr import one_bit, one_bit_scale, one_bit_table
from lipdesign.mechanisms.sampling import (
    BLOCK,
    implemented_exp,
    public_seed,
    sign_field,
    structured_reports,
)
from lipdesign.validation import index_array, integer

if TYPE_CHECKING:  # annotations only
    from typing import Self

    import numpy.typing as npt

#: HarmonyCategorical keeps its public projection in memory: at most this many signs (m * k), 64 MiB.
MAX_SIGNS = 2**26


def projection_signs(m: int, k: int, seed: int) -> npt.NDArray[np.int8]:
    """The public m x k signs: bit j (least significant first) of the w-th 64-bit output of the PCG64 bit
    generator of ``numpy.random.default_rng(seed)`` gives entry 64 w + j in row-major order, 0 -> +1, 1 -> -1.
    Bit-generator streams (PCG64, SeedSequence) are stable across numpy versions, unlike Generator methods."""
    words = np.random.default_rng(seed).bit_generator.random_raw(-(-m * k // 64))
    bits = np.unpackbits(np.asarray(words, dtype="<u8").view(np.uint8), bitorder="little")[:m * k]
    return (1 - 2 * bits.astype(np.int8)).reshape(m, k)


def signed_counts(rows: npt.NDArray[np.integer[Any]], sign: npt.NDArray[np.integer[Any]],
                  size: int) -> npt.NDArray[np.int64]:
    """sum of ``sign`` (+-1) per row index, as exact integers (int64, length ``size``)."""
    positive = sign > 0
    return np.bincount(rows[positive], minlength=size) - np.bincount(rows[~positive], minlength=size)


class HarmonyCategorical(Mechanism):
    """Harmony Alg. 3, Bassily-Smith random projection (docs/math.md §9). Public Phi = signs / sqrt(m), signs in
    {-1, +1}^(m x k) from ``seed`` (see ``projection_signs``). A user with value v picks a row s uniformly and
    reports sign = one_bit(signs[s, v]) (+signs[s, v] with probability e^eps/(e^eps + 1)); the paper's report
    alpha = c m Phi[s, v] times the kept/flipped sign is c sqrt(m) sign. Reports: structured array
    [("row", "<i4"), ("sign", "i1")]; the aggregate holds the signed count of each row.

    ``m`` defaults to max(4096, 4k). The per-user variance does not grow with m (every term of the estimate is
    +-c), only memory and time (m k). The projection estimate has mean G f, G = Phi^T Phi, whose cross-talk
    sum_{v != l} f_v G[v, l] has standard deviation sqrt(sum_{v != l} f_v^2 / m) <= 1/sqrt(m) <= 1/64 over the
    draw of Phi, below the sampling error c/sqrt(n) only while n < c^2 m: at n = 10^6, eps = 1, k = 64 it is
    several standard deviations, which is why the default method is "unbiased" (whenever m >= k; with fewer rows
    the paper's "projection" is the only estimate there is). "unbiased" removes the cross-talk and needs G well
    conditioned: at m = 4k its eigenvalues lie near [(1 - 1/2)^2, (1 + 1/2)^2] (Marchenko-Pastur), so inverting
    G costs a factor about m/(m - k) = 4/3 in variance.

    Parameters
    ----------
    epsilon : float
        The LDP level, in [1e-6, 10].
    k : int
        The number of categories, >= 2; inputs are the indices 0..k-1.
    m : int, optional
        The rows of the projection, >= 1, with m k <= ``MAX_SIGNS``; default max(4096, 4k).
    seed : int, optional
        The public seed of the projection (default: drawn from the OS and stored in the mechanism's file).

    Attributes
    ----------
    signs : numpy.ndarray
        The public m x k signs (int8, read-only).
    scale : float
        c = (e^eps + 1)/(e^eps - 1).

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10], k < 2, m < 1, m k > ``MAX_SIGNS`` or the seed is not a valid public
        seed; at estimation, ``method="unbiased"`` with m < k or a singular G.

    See Also
    --------
    HarmonyNumeric : The same one-bit report for a numeric value.
    HarmonyMixed : Numeric and categorical attributes in one report.

    Notes
    -----
    Reports: a structured array [("row", "<i4"), ("sign", "i1")]; the aggregate holds the signed count of each
    row.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> harmony = ld.mechanisms.HarmonyCategorical(1.0, k=4, m=64, seed=3)
    >>> harmony.signs.shape, harmony.default_method
    ((64, 4), 'unbiased')
    >>> certificate = harmony.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 1.0)
    >>> truth = np.array([0.4, 0.3, 0.2, 0.1])
    >>> values = np.random.default_rng(0).choice(4, size=20_000, p=truth)
    >>> reports = harmony.perturb(values, rng=1)
    >>> reports[:3]
    array([(30, 1), (32, 1), (48, 1)], dtype=[('row', '<i4'), ('sign', 'i1')])
    >>> estimate = harmony.estimate(reports)
    >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
    (array([0.409, 0.333, 0.223, 0.095]), array([0.015, 0.015, 0.016, 0.016]))

    The paper's projection estimate is biased by the cross-talk of this projection: its mean is G f.

    >>> np.round(harmony.estimate(reports, method="projection").values, 3)
    array([0.376, 0.242, 0.267, 0.117])
    >>> np.round(harmony.expected_estimate(truth, method="projection"), 3)
    array([0.372, 0.209, 0.247, 0.122])
    """

    family = "harmony-categorical"
    parameter_rules = (("k", "integer >= 2"),
                       ("m", f"integer >= 1 with m k <= {MAX_SIGNS} (by default max(4096, 4 k))"),
                       ("seed", SEED_RULE))
    methods = ("unbiased", "projection")
    report_dtype = np.dtype([("row", "<i4"), ("sign", "i1")])

    def __init__(self, epsilon: float, k: int, m: int | None = None, seed: int | None = None) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.exp_epsilon = implemented_exp(self.epsilon)
        self.k = integer(k, "k", low=2)
        self.input_domain = Categorical(self.k)
        self.m = max(4096, 4 * self.k) if m is None else integer(m, "m")
        if self.m * self.k > MAX_SIGNS:
            raise ValidationError(f"m * k is {self.m} * {self.k} = {self.m * self.k}; the public projection must "
                                  f"hold at most {MAX_SIGNS} signs (pass a smaller m)")
        self.seed = public_seed(seed)
        self.signs = projection_signs(self.m, self.k, self.seed)
        self.signs.setflags(write=False)
        self.scale = one_bit_scale(self.exp_epsilon)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "k": self.k, "m": self.m, "seed": self.seed}

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 5, m=64, seed=3)

    @property
    def default_method(self) -> str:
        """The estimation method used when none is given: "unbiased" when m >= k, else "projection"."""
        return "unbiased" if self.m >= self.k else "projection"

    @cached_property
    def gram(self) -> npt.NDArray[np.float64]:
        """G = Phi^T Phi = signs^T signs / m (k x k, unit diagonal); E[projection estimate] = G f."""
        gram = np.zeros((self.k, self.k))
        step = max(1, BLOCK // self.k)
        for start in range(0, self.m, step):
            block = self.signs[start:start + step].astype(float)
            gram += block.T @ block
        gram /= self.m
        gram.setflags(write=False)
        return gram

    @cached_property
    def gram_inverse(self) -> npt.NDArray[np.float64]:
        """G^-1, for the unbiased estimate; ValidationError when m < k or G is singular."""
        if self.m < self.k:
            raise ValidationError(f"method is 'unbiased' but m is {self.m} and k is {self.k}; it needs m >= k "
                                  "(G = Phi^T Phi has rank at most m)")
        eigenvalues, vectors = np.linalg.eigh(self.gram)
        if eigenvalues[0] <= self.k * np.finfo(float).eps * eigenvalues[-1]:
            raise ValidationError(f"method is 'unbiased' but the projection of seed {self.seed} has linearly "
                                  "dependent columns; it needs G = Phi^T Phi nonsingular (use another seed or a "
                                  "larger m)")
        inverse = (vectors / eigenvalues) @ vectors.T
        inverse.setflags(write=False)
        return inverse

    def _perturb(self, values, rng, user_ids):
        out = np.empty(values.size, dtype=self.report_dtype)
        out["row"] = rng.integers(0, self.m, size=values.size)
        out["sign"] = one_bit(self.signs[out["row"], values], self.exp_epsilon, rng)
        return out

    def empty_reports(self) -> npt.NDArray[np.void]:
        return np.zeros(0, dtype=self.report_dtype)

    def _statistics(self, reports):
        structured_reports(reports, self.report_dtype)
        rows = index_array(reports["row"], self.m, "reports['row']")
        return rows.size, {"row_sums": signed_counts(rows, sign_field(reports), self.m)}

    def _estimate(self, aggregate, method):
        """"unbiased": the solution of G f = projection, mean f for this fixed Phi (needs m >= k). "projection"
        (the paper's): f(l) = <z_bar, Phi[:, l]> = (1/n) sum_i c sign_i signs[s_i, l], mean G f, biased by the
        cross-talk of this Phi."""
        return self.project(aggregate["row_sums"], self.scale, aggregate.n, method)

    def project(self, row_sums: npt.NDArray[np.integer[Any]], weight: float, n: int,
                method: str) -> npt.NDArray[np.float64]:
        """The frequency estimate from the signed row counts: (weight/n) sum_s row_sums[s] signs[s, :] (the paper's
        projection for weight c), solved against G for ``method="unbiased"``.

        Shared with HarmonyMixed, whose weight carries a factor d.

        Parameters
        ----------
        row_sums : numpy.ndarray
            The sum of the signs reported with each row (length m).
        weight : float
            The weight of a sign: c here, d c in ``HarmonyMixed``.
        n : int
            The number of reports.
        method : {"unbiased", "projection"}
            Solve against G (unbiased) or not (the paper's projection, mean G f).

        Returns
        -------
        numpy.ndarray
            The k estimated frequencies.

        Raises
        ------
        ValidationError
            For ``method="unbiased"`` when m < k or G is singular.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> harmony = ld.mechanisms.HarmonyCategorical(1.0, k=4, m=64, seed=3)
        >>> values = np.random.default_rng(0).choice(4, size=20_000, p=[0.4, 0.3, 0.2, 0.1])
        >>> aggregate = harmony.aggregate(harmony.perturb(values, rng=1))
        >>> np.round(harmony.project(aggregate["row_sums"], harmony.scale, aggregate.n, "unbiased"), 3)
        array([0.409, 0.333, 0.223, 0.095])
        """
        per_row = row_sums * weight
        projection = np.empty(self.k)
        step = max(1, BLOCK // self.m)
        for start in range(0, self.k, step):
            projection[start:start + step] = per_row @ self.signs[:, start:start + step]
        projection /= n
        return self.gram_inverse @ projection if method == "unbiased" else projection

    def _expected(self, frequencies, method, user_ids):
        """E[estimate]: G f for the projection method, f for the unbiased one."""
        return self.gram @ frequencies if method == "projection" else frequencies

    def _variance(self, frequencies, n, method, user_ids):
        return self.variance_with(frequencies, n, method, self.scale**2)

    def variance_with(self, frequencies: npt.NDArray[np.float64], n: int, method: str,
                      second_moment: float) -> npt.NDArray[np.float64]:
        """The per-value variance of the estimate when each user's term is Z = w signs[s, :] with E[w^2] =
        ``second_moment``.

        E[Z Z^T] = second_moment G and E[Z] = G[:, v], so Cov(projection) = (second_moment G - G diag(f) G)/n:
        Var f(l) = (second_moment - sum_v f_v G[v, l]^2)/n; for the unbiased G^-1 projection
        Cov = (second_moment G^-1 - diag(f))/n: Var = (second_moment (G^-1)[l, l] - f_l)/n.

        Parameters
        ----------
        frequencies : numpy.ndarray
            The users' true frequencies f (length k).
        n : int
            The number of users.
        method : {"unbiased", "projection"}
            The estimate's method.
        second_moment : float
            E[w^2]: c^2 here (``variance``), d c^2 in ``HarmonyMixed``.

        Returns
        -------
        numpy.ndarray
            The variance of each of the k estimated frequencies.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> harmony = ld.mechanisms.HarmonyCategorical(1.0, k=4, m=64, seed=3)
        >>> truth = np.array([0.4, 0.3, 0.2, 0.1])
        >>> by_hand = harmony.variance_with(truth, 20_000, "unbiased", harmony.scale**2)
        >>> bool(np.allclose(by_hand, harmony.variance(truth, n=20_000)))
        True
        """
        if method == "projection":
            return (second_moment - frequencies @ self.gram**2) / n
        return (second_moment * np.diag(self.gram_inverse) - frequencies) / n

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The realised one-bit table (``one_bit_table``), to which the mechanism reduces exactly.

        Output (s, b) has probability (1/m) Pr[b | t = signs[s, v]], so every likelihood ratio is 1 or the one-bit
        ratio e^eps (attained by any v, v' whose columns of signs differ somewhere; only if all k columns coincide
        is the mechanism more private than the table).

        Returns
        -------
        numpy.ndarray
            2 x 2: rows t = +1 and -1, columns the signs + and -.
        """
        return one_bit_table(self.exp_epsilon)

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs 0 and 1; classes (row class of the public signs of 0
        and 1, sign).

        Returns
        -------
        AuditPlan
            2 inputs and 8 classes.
        """
        classes, frequencies = row_classes(self.signs)
        inputs, table, names = sign_plan(np.array([0, 1]), frequencies[None], one_bit_table(self.exp_epsilon))
        return AuditPlan(inputs, table, lambda reports: 2 * classes[reports["row"]] + (reports["sign"] < 0),
                         ["x=0", "x=1"], names)

    def projection_numbers(self) -> dict[str, Any]:
        """The projection's shape and its signs as the 64-bit words of ``projection_signs``, 16 hex digits each
        (docs/runtime.md §7).

        Returns
        -------
        dict
            ``m``, ``k`` and ``sign_words``, a list of ceil(m k / 64) strings.

        Examples
        --------
        >>> import lipdesign as ld
        >>> numbers = ld.mechanisms.HarmonyCategorical(1.0, k=4, m=64, seed=3).projection_numbers()
        >>> numbers["m"], numbers["k"], numbers["sign_words"][:2]
        (64, 4, ['15ed1a93cfbec2f8', '3c9f9d052defd3f5'])
        """
        words = np.random.default_rng(self.seed).bit_generator.random_raw(-(-self.m * self.k // 64))
        return {"m": self.m, "k": self.k, "sign_words": [f"{int(word):016x}" for word in words]}

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §7).

        Returns
        -------
        dict
            ``exp_epsilon`` (e^eps as the sampler uses it) and the ``projection_numbers``.
        """
        return {"exp_epsilon": self.exp_epsilon, **self.projection_numbers()}
