"""Categorical frequency oracles: the LDP baselines of MATH §8 (seed 002) and Harmony's categorical mechanism,
Alg. 3 (Bassily-Smith random projection, MATH §9, seed 000).

Inputs are category indices 0..k-1, one per user. ``perturb(values, rng=None)`` returns one report per user,
``estimate(reports, consistency=None)`` the frequency of every category (``consistency="norm-sub"`` applies
``lipdesign.runtime.norm_sub``), ``variance(frequencies, n)`` the closed-form variance of each estimate and
``privacy_table()`` a finite table whose exact LDP epsilon is the mechanism's (``verify()``). Every
``privacy_table()`` is an exact reduction of constant size (2 rows, at most 4 columns), whatever k: two
inputs, and outputs grouped into classes on which both rows are constant, chosen so that every likelihood
ratio of the mechanism between any two inputs appears in the table. ``GRR`` and ``HadamardResponse`` also
have ``full_table()``, the whole k x k / k x K table, for audits at small k.

``GRR``, ``OUE``, ``OLH`` and ``HadamardResponse`` are pure protocols (MATH §8): a report "supports" value v
with probability p when v is the user's value and q otherwise, independently across users. With C_v the
number of reports supporting v, ``pure_estimate`` f_v = (C_v/n - q)/(p - q) is unbiased and ``pure_variance``
is its variance. Every probability uses ``exp_epsilon`` (e^eps slightly lowered, see ``_base.EXP_MARGIN``).
"""

from __future__ import annotations

import math
from functools import cached_property

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
)
from lipdesign.runtime.estimate import norm_sub
from lipdesign.runtime.perturb import fmt, index_array
from lipdesign.validation import probability_vector

__all__ = [
    "GRR",
    "HASH_PRIME",
    "OLH",
    "OUE",
    "HadamardResponse",
    "HarmonyCategorical",
    "hash_collision",
    "pure_estimate",
    "pure_variance",
]

#: The prime P of OLH's hash family h_{a,b}(x) = ((a x + b) mod P) mod g (a Mersenne prime; a x + b < 2**63).
HASH_PRIME = 2**31 - 1

#: Elements per temporary array in chunked loops (32 MiB of int64).
_BLOCK = 2**22

#: HarmonyCategorical keeps its public projection in memory: at most this many signs (m * k), 64 MiB.
MAX_SIGNS = 2**26

#: Largest k of GRR, OUE and HadamardResponse: outputs and their arithmetic stay in int64 (HadamardResponse's
#: K = the smallest power of 2 > k is then at most 2**62; numpy draws integers below 2**63 only).
MAX_K = 2**62 - 1

#: OUE.perturb returns n * k bytes (one uint8 bit per user and value); it refuses to build more than this
#: (2 GiB) in one call. Perturb fewer users per call, or use OLH / HadamardResponse, whose reports are O(1).
MAX_OUE_BYTES = 2**31

#: ``full_table()`` is built for k <= this by default (a k x k or k x 2k float table, at most 64 MiB).
MAX_FULL_K = 2048


def pure_estimate(support, n, p, q):
    """f_v = (C_v/n - q)/(p - q) (MATH §8), unbiased for a pure protocol with support probabilities p, q."""
    return (np.asarray(support, dtype=float) / n - q) / (p - q)


def pure_variance(frequencies, n, p, q):
    """Var f_v = [f_v p(1-p) + (1-f_v) q(1-q)] / (n (p-q)^2) (MATH §8): C_v is a sum of n independent
    Bernoulli variables, n f_v of them with mean p and the others with mean q."""
    f = np.asarray(frequencies, dtype=float)
    return (f * p * (1.0 - p) + (1.0 - f) * q * (1.0 - q)) / (n * (p - q) ** 2)


def hash_collision(g, prime=HASH_PRIME):
    """Pr[h(x) = h(x')] for x != x' in [0, prime), h = ((a x + b) mod prime) mod g, a uniform in
    [1, prime-1], b uniform in [0, prime-1].

    (a, b) -> (a x + b, a x' + b) mod prime is a bijection onto the ordered pairs of distinct residues
    (a = (u - v)/(x - x'), b = u - a x), so the pair is uniform over those prime (prime - 1) pairs and
    the collision probability is sum_z n_z (n_z - 1) / (prime (prime - 1)), n_z = #{r < prime: r mod g = z}.
    With prime = Q g + R, R residues z have n_z = Q + 1 and g - R have n_z = Q.
    """
    quotient, remainder = divmod(prime, g)
    pairs = remainder * (quotient + 1) * quotient + (g - remainder) * quotient * (quotient - 1)
    return pairs / (prime * (prime - 1))


def grr_mixing_probability(exp_epsilon, size, field="k"):
    """alpha of GRR on 0..size-1 written as a mixture (MATH §8): the true value with probability alpha, else a
    value uniform on ALL size values, which is GRR with keep probability alpha + (1 - alpha)/size =
    e^eps/(e^eps + size - 1) for alpha = (e^eps - 1)/(e^eps - 1 + size).

    alpha is rounded DOWN to numpy's 2^-53 grid, so ``rng.random() < alpha`` realises exactly this alpha, and
    the ratio of the realised table, 1 + size alpha/(1 - alpha), stays below e^eps whatever the size (a keep
    probability rounded to the grid would not: for size = 2^40 it overshoots eps by 4e-5). ValidationError when
    alpha rounds to 0 (the size is too large for this epsilon: the reports would carry no information)."""
    alpha = math.floor((exp_epsilon - 1.0) / (exp_epsilon - 1.0 + size) * 2**53) / 2**53
    if alpha <= 0:
        raise ValidationError(f"{field} is {size}; at this epsilon randomized response over {size} values keeps the "
                              "true value with probability below 2^-53 (no information): use a smaller domain or "
                              "a larger epsilon")
    return alpha


def _grr_probabilities(alpha, size):
    """(keep, lie): the realised Pr[y = x] and Pr[y = y'] for y' != x of the mixture with ``alpha``."""
    lie = (1.0 - alpha) / size
    return alpha + lie, lie


def _randomized_response(truth, size, alpha, rng):
    """GRR on 0..size-1 (MATH §8) as the mixture of ``grr_mixing_probability``: the truth with probability
    alpha, else a value uniform on all size values (``integers`` is exactly uniform)."""
    keep = rng.random(truth.shape) < alpha
    return np.where(keep, truth, rng.integers(0, size, size=truth.shape))


def _grr_table(alpha, size):
    """The size x size GRR table of the mixture: keep on the diagonal, lie elsewhere."""
    keep, lie = _grr_probabilities(alpha, size)
    table = np.full((size, size), lie)
    np.fill_diagonal(table, keep)
    return table


def _grr_reduced_table(alpha, size):
    """Exact reduction of ``_grr_table`` to 2 rows x 3 columns (2 x 2 when size = 2), O(1) whatever the size.

    Every column y of the full table is ``keep`` in row y and ``lie`` in every other row, so the ratio of any
    output between two inputs is keep/lie, lie/keep or 1. Rows: inputs x = 0, x' = 1; columns: y = x (ratio
    keep/lie), y = x' (lie/keep) and the other size - 2 outputs merged, (size - 2) lie in both rows (ratio 1;
    absent when size = 2). The entries are the same floats as the full table's, so even the exact rational
    ratios coincide."""
    keep, lie = _grr_probabilities(alpha, size)
    if size == 2:
        return np.array([[keep, lie], [lie, keep]])
    rest = (size - 2) * lie
    return np.array([[keep, lie, rest], [lie, keep, rest]])


def _full_table_size(k, max_k):
    if k > max_k:
        raise ValidationError(f"k is {k}; the full table has O(k^2) entries, so it is built for k <= {max_k} "
                              "(pass a larger max_k; privacy_table() is the exact O(1) reduction)")


def _parity(z):
    """popcount(z) mod 2 for non-negative int64 z (xor folding)."""
    z = z.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        z ^= z >> shift
    return z & 1


def _fwht(vector):
    """Fast Walsh-Hadamard transform: (H v)[r] = sum_y (-1)^popcount(r & y) v[y], len(v) a power of 2 (Sylvester
    order). Each pass applies the 2 x 2 butterfly to one bit of the index."""
    out = np.asarray(vector)
    size, half = out.size, 1
    while half < size:
        pairs = out.reshape(-1, 2, half)
        out = np.stack((pairs[:, 0] + pairs[:, 1], pairs[:, 0] - pairs[:, 1]), axis=1)
        half *= 2
    return out.reshape(size)


def _check_consistency(consistency):
    if consistency is not None and not (isinstance(consistency, str) and consistency == "norm-sub"):
        raise ValidationError(f"consistency is {consistency!r}; it must be None or 'norm-sub'")


def _consistent(estimate, consistency):
    return norm_sub(estimate) if consistency == "norm-sub" else estimate


class _PureProtocol(HarmonyMechanism):
    """Estimate and variance of a pure protocol (MATH §8). Subclasses set ``k``, ``p``, ``q`` and
    ``_support(reports)`` -> (C, n), C[v] = number of reports supporting v."""

    def estimate(self, reports, consistency=None):
        """Unbiased frequencies f_v = (C_v/n - q)/(p - q) (MATH §8); ``consistency="norm-sub"``: Norm-Sub."""
        _check_consistency(consistency)
        support, n = self._support(reports)
        return _consistent(pure_estimate(support, n, self.p, self.q), consistency)

    def variance(self, frequencies, n):
        """Per-value variance of ``estimate`` for true frequencies ``frequencies`` and n users (MATH §8)."""
        f = probability_vector(frequencies, "frequencies", length=self.k)
        return pure_variance(f, integer_parameter(n, "n"), self.p, self.q)


class GRR(_PureProtocol):
    """Generalised randomised response (MATH §8): the true value with probability p = e^eps/(e^eps + k - 1),
    every other value with probability q = 1/(e^eps + k - 1). Sampled as a mixture (``grr_mixing_probability``:
    the truth with probability alpha, else uniform on all k values), whose realised p and q are the ones used
    here, for estimation and in the privacy table. Reports: int64 (n,) in 0..k-1; k <= ``MAX_K``."""

    def __init__(self, epsilon, k):
        super().__init__(epsilon)
        self.k = integer_parameter(k, "k", low=2, high=MAX_K)
        self.alpha = grr_mixing_probability(self.exp_epsilon, self.k)
        self.p, self.q = _grr_probabilities(self.alpha, self.k)

    def parameters(self):
        return {"epsilon": self.epsilon, "k": self.k}

    def perturb(self, values, rng=None):
        values = category_values(values, self.k)
        return _randomized_response(values, self.k, self.alpha, as_generator(rng))

    def _support(self, reports):
        reports = category_values(reports, self.k, "reports")
        return np.bincount(reports, minlength=self.k), reports.size

    def privacy_table(self):
        """Exact 2 x 3 reduction of the k x k GRR table (2 x 2 for k = 2); see ``_grr_reduced_table``."""
        return _grr_reduced_table(self.alpha, self.k)

    def full_table(self, max_k=MAX_FULL_K):
        """The whole k x k table Pr[y | x] (rows x, columns y), for audits at small k (k <= ``max_k``)."""
        _full_table_size(self.k, max_k)
        return _grr_table(self.alpha, self.k)


class OUE(_PureProtocol):
    """Optimised unary encoding (MATH §8): one bit per value; the bit of the true value is 1 with probability
    p = 1/2, every other bit with probability q = 1/(e^eps + 1). Reports: uint8 (n, k) of 0/1, n * k bytes, so
    ``perturb`` refuses n * k > ``MAX_OUE_BYTES`` (for large k prefer OLH or HadamardResponse); k <= ``MAX_K``."""

    def __init__(self, epsilon, k):
        super().__init__(epsilon)
        self.k = integer_parameter(k, "k", low=2, high=MAX_K)
        self.p = 0.5
        self.q = 1.0 / (self.exp_epsilon + 1.0)

    def parameters(self):
        return {"epsilon": self.epsilon, "k": self.k}

    def perturb(self, values, rng=None):
        """Chunks of about ``_BLOCK`` uniforms: several users per chunk, or (k > _BLOCK) one user's row in
        column blocks, which draws the same stream as the whole row at once."""
        values = category_values(values, self.k)
        if values.size * self.k > MAX_OUE_BYTES:
            raise ValidationError(f"OUE reports take n * k = {values.size} * {self.k} = {values.size * self.k} "
                                  f"bytes; perturb builds at most MAX_OUE_BYTES = {MAX_OUE_BYTES} per call (perturb "
                                  "fewer users per call, or use OLH / HadamardResponse for large k)")
        rng = as_generator(rng)
        out = np.empty((values.size, self.k), dtype=np.uint8)
        step = max(1, _BLOCK // self.k)
        for start in range(0, values.size, step):
            chunk = values[start:start + step]
            rows = out[start:start + chunk.size]
            for column in range(0, self.k, _BLOCK):  # a single block unless k > _BLOCK (then chunk.size == 1)
                width = min(_BLOCK, self.k - column)
                rows[:, column:column + width] = rng.random((chunk.size, width)) < self.q
            rows[np.arange(chunk.size), chunk] = rng.random(chunk.size) < self.p
        return out

    def _support(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[0] == 0 or reports.shape[1] != self.k:
            raise ValidationError(f"reports has shape {reports.shape}; expected (n, {self.k}) with n >= 1, "
                                  f"one row of k = {self.k} bits per user")
        if not (np.issubdtype(reports.dtype, np.integer) or reports.dtype == np.bool_):
            raise ValidationError(f"reports has dtype {reports.dtype}; OUE reports are bits (uint8 0/1)")
        if reports.dtype != np.bool_ and (reports.min() < 0 or reports.max() > 1):
            row, column = np.argwhere((reports < 0) | (reports > 1))[0]
            raise ValidationError(f"reports[{row}, {column}] is {fmt(reports[row, column])}; every OUE report "
                                  "entry must be a bit, 0 or 1")
        return reports.sum(axis=0, dtype=np.int64), reports.shape[0]

    def privacy_table(self):
        """Exact reduction to 2 rows x 4 outputs: two inputs x != x' differ only in the bits x and x' (the others
        are independent Bernoulli(q) under both and cancel from every likelihood ratio), so the rows are inputs
        x, x' and the columns the pairs (bit x, bit x') = 00, 01, 10, 11."""
        keep = 0.5 * self.exp_epsilon / (self.exp_epsilon + 1.0)  # (1/2) (1 - q)
        flip = 0.5 / (self.exp_epsilon + 1.0)  # (1/2) q
        return np.array([[keep, flip, keep, flip], [keep, keep, flip, flip]])


class OLH(_PureProtocol):
    """Optimised local hashing (MATH §8). Each user draws a hash h_{a,b}(x) = ((a x + b) mod P) mod g, P =
    ``HASH_PRIME`` = 2^31 - 1, with a uniform in [1, P-1] and b uniform in [0, P-1] from her own rng, and
    reports (a, b, y) with y = GRR over g buckets of h(x) (p' = e^eps/(e^eps + g - 1), sampled and realised as
    GRR's mixture, ``grr_mixing_probability``).

    ``g`` defaults to round(e^eps) + 1, the variance-minimising integer (MATH §8), capped at P so y fits int32.
    Requires k < P (distinct values stay distinct mod P). Reports: structured array
    [("a", "<i8"), ("b", "<i8"), ("y", "<i4")].

    A report supports v when h(v) = y: with probability p = p' if v is the user's value, and otherwise
    q = coll p' + (1 - coll)(1 - p')/(g - 1), coll = ``hash_collision(g)`` (exact for this family, slightly off
    1/g; MATH §8's q = 1/g is the idealised value).
    """

    report_dtype = np.dtype([("a", "<i8"), ("b", "<i8"), ("y", "<i4")])

    def __init__(self, epsilon, k, g=None):
        super().__init__(epsilon)
        self.k = integer_parameter(k, "k", low=2, high=HASH_PRIME - 1)
        if g is None:
            g = min(round(math.exp(self.epsilon)) + 1, HASH_PRIME)
        self.g = integer_parameter(g, "g", low=2, high=HASH_PRIME)
        self.alpha = grr_mixing_probability(self.exp_epsilon, self.g, "g")
        self.p, lie = _grr_probabilities(self.alpha, self.g)
        collision = hash_collision(self.g)
        self.q = collision * self.p + (1.0 - collision) * lie

    def parameters(self):
        return {"epsilon": self.epsilon, "k": self.k, "g": self.g}

    def _hash(self, a, b, x):
        return (a * x + b) % HASH_PRIME % self.g

    def perturb(self, values, rng=None):
        values = category_values(values, self.k)
        rng = as_generator(rng)
        out = np.empty(values.size, dtype=self.report_dtype)
        out["a"] = rng.integers(1, HASH_PRIME, size=values.size)  # 1..P-1 (exclusive upper bound)
        out["b"] = rng.integers(0, HASH_PRIME, size=values.size)  # 0..P-1
        hashed = self._hash(out["a"], out["b"], values)
        out["y"] = _randomized_response(hashed, self.g, self.alpha, rng)
        return out

    def _support(self, reports):
        structured_reports(reports, self.report_dtype)
        a = index_array(reports["a"], HASH_PRIME, "reports['a']")
        if (a == 0).any():
            raise ValidationError(f"reports['a'][{int(np.argmax(a == 0))}] is 0; the hash multiplier a must lie "
                                  f"in 1..{HASH_PRIME - 1}")
        b = index_array(reports["b"], HASH_PRIME, "reports['b']")[:, None]
        y = index_array(reports["y"], self.g, "reports['y']")[:, None]
        a = a[:, None]
        support = np.empty(self.k, dtype=np.int64)
        step = max(1, _BLOCK // a.size)
        for start in range(0, self.k, step):
            v = np.arange(start, min(start + step, self.k))
            support[start:start + v.size] = (self._hash(a, b, v) == y).sum(axis=0)
        return support, a.size

    def privacy_table(self):
        """Exact reduction of the output (a, b, y): (a, b) has the same distribution for every input, and given
        it y is GRR over g buckets of h(x), so the tightest epsilon is that of the g x g GRR table (two inputs
        with h(x) = h(x') only give ratio 1). Rows: two inputs with h(x) = 0, h(x') = 1 (possible for g >= 2);
        columns: y = 0, y = 1, and the other g - 2 buckets merged (``_grr_reduced_table``; none when g = 2)."""
        return _grr_reduced_table(self.alpha, self.g)


class HadamardResponse(_PureProtocol):
    """Hadamard response (MATH §8, seed 002 "HRR"). K = the smallest power of 2 > k; value x uses row x + 1 of
    the Sylvester Hadamard matrix H[i, j] = (-1)^popcount(i & j) (row 0, all ones, is skipped). The output y in
    0..K-1 is uniform on C_x = {y: H[x+1, y] = +1} with probability p = e^eps/(e^eps + 1), else uniform on the
    complement. Rows x+1 != x'+1 are orthogonal, so C_x holds half of C_x' and half of its complement: q = 1/2.
    Reports: int64 (n,) in 0..K-1; k <= ``MAX_K`` (so K <= 2**62).
    """

    def __init__(self, epsilon, k):
        super().__init__(epsilon)
        self.k = integer_parameter(k, "k", low=2, high=MAX_K)
        self.K = 1 << self.k.bit_length()
        self.p = self.exp_epsilon / (self.exp_epsilon + 1.0)
        self.q = 0.5

    def parameters(self):
        return {"epsilon": self.epsilon, "k": self.k}

    def perturb(self, values, rng=None):
        """Draw y uniform on 0..K-1, then flip the lowest set bit of x + 1 when y is on the wrong side: that flip
        changes the parity of popcount((x+1) & y) and maps C_x one-to-one onto its complement."""
        row = category_values(values, self.k) + 1
        rng = as_generator(rng)
        y = rng.integers(0, self.K, size=row.size)
        inside = _parity(row & y) == 0
        keep = rng.random(row.size) < self.p
        return y ^ np.where(inside != keep, row & -row, 0)

    def _support(self, reports):
        """C_x = (n + (H h)[x+1]) / 2 with h the output histogram: (H h)[r] counts reports in C minus the rest."""
        reports = category_values(reports, self.K, "reports")
        transform = _fwht(np.bincount(reports, minlength=self.K))
        return (reports.size + transform[1:self.k + 1]) // 2, reports.size

    def privacy_table(self):
        """Exact reduction of the k x K table (``full_table``) to 2 rows x 4 columns, O(1) whatever k.

        Every output y has probability 2p/K under x if y is in C_x and 2(1-p)/K otherwise, so the ratio of any
        output between any two inputs is e^eps, e^-eps or 1, and every output of a class below has the same
        probability under each of the two rows. Rows: x = 0, x' = 1 (rows 1 and 2 of H); columns: the classes
        C_x & C_x', C_x - C_x', C_x' - C_x and neither, each of K/4 outputs (distinct non-zero rows of the
        Sylvester matrix are orthogonal and balanced: H[1] and H[2] agree on half of the K outputs, and each is
        +1 on half of those), with the probabilities summed over the class. The ratios e^eps, e^-eps and 1 all
        occur. The sums are the full table's entries times K/4, a power of 2, so exact: the table's ratios are
        bit for bit those of the full table."""
        inside, outside = self._entries()
        quarter = self.K // 4
        inside, outside = quarter * inside, quarter * outside
        return np.array([[inside, inside, outside, outside], [inside, outside, inside, outside]])

    def _entries(self):
        """Pr[y | x] for y in C_x and for y outside it: 2p/K and 2(1-p)/K."""
        scale = 2.0 / ((self.exp_epsilon + 1.0) * self.K)
        return self.exp_epsilon * scale, scale

    def full_table(self, max_k=MAX_FULL_K):
        """The whole k x K table Pr[y | x] (2p/K on C_x, 2(1-p)/K elsewhere), for audits at small k
        (k <= ``max_k``)."""
        _full_table_size(self.k, max_k)
        inside = _parity(np.arange(1, self.k + 1)[:, None] & np.arange(self.K)[None, :]) == 0
        high, low = self._entries()
        return np.where(inside, high, low)


def check_method(method):
    """The estimation method of the Bassily-Smith projection: "unbiased" or "projection"."""
    if not (isinstance(method, str) and method in ("projection", "unbiased")):
        raise ValidationError(f"method is {method!r}; it must be 'unbiased' or 'projection'")


def _projection_signs(m, k, seed):
    """The public m x k signs: bit j (least significant first) of the w-th 64-bit output of the PCG64 bit
    generator of ``numpy.random.default_rng(seed)`` gives entry 64 w + j in row-major order, 0 -> +1, 1 -> -1.
    Bit-generator streams (PCG64, SeedSequence) are stable across numpy versions, unlike Generator methods."""
    words = np.random.default_rng(seed).bit_generator.random_raw(-(-m * k // 64))
    bits = np.unpackbits(np.asarray(words, dtype="<u8").view(np.uint8), bitorder="little")[:m * k]
    return (1 - 2 * bits.astype(np.int8)).reshape(m, k)


class HarmonyCategorical(HarmonyMechanism):
    """Harmony Alg. 3, Bassily-Smith random projection (MATH §9). Public Phi = signs / sqrt(m), signs in
    {-1, +1}^(m x k) from ``seed`` (see ``_projection_signs``). A user with value v picks a row s uniformly and
    reports sign = one_bit(signs[s, v]) (+signs[s, v] with probability e^eps/(e^eps + 1)); the paper's report
    alpha = c m Phi[s, v] times the kept/flipped sign is c sqrt(m) sign. Reports: structured array
    [("row", "<i4"), ("sign", "i1")].

    ``m`` defaults to max(4096, 4k). The per-user variance does not grow with m (every term of the estimate is
    +-c), only memory and time (m k). The projection estimate has mean G f, G = Phi^T Phi, whose cross-talk
    sum_{v != l} f_v G[v, l] has standard deviation sqrt(sum_{v != l} f_v^2 / m) <= 1/sqrt(m) <= 1/64 over the
    draw of Phi, below the sampling error c/sqrt(n) only while n < c^2 m: at n = 10^6, eps = 1, k = 64 it is
    several standard deviations, which is why ``estimate`` defaults to ``method="unbiased"``. That removes it and
    needs G well conditioned: at m = 4k its eigenvalues lie near [(1 - 1/2)^2, (1 + 1/2)^2] (Marchenko-Pastur),
    so inverting G costs a factor about m/(m - k) = 4/3 in variance. m k is capped at ``MAX_SIGNS``.
    """

    report_dtype = np.dtype([("row", "<i4"), ("sign", "i1")])

    def __init__(self, epsilon, k, m=None, seed=None):
        super().__init__(epsilon)
        self.k = integer_parameter(k, "k", low=2)
        self.m = max(4096, 4 * self.k) if m is None else integer_parameter(m, "m")
        if self.m * self.k > MAX_SIGNS:
            raise ValidationError(f"m * k is {self.m} * {self.k} = {self.m * self.k}; the public projection must "
                                  f"hold at most {MAX_SIGNS} signs (pass a smaller m)")
        self.seed = public_seed(seed)
        self.signs = _projection_signs(self.m, self.k, self.seed)
        self.signs.setflags(write=False)
        self.scale = one_bit_scale(self.exp_epsilon)

    def parameters(self):
        return {"epsilon": self.epsilon, "k": self.k, "m": self.m, "seed": self.seed}

    @cached_property
    def gram(self):
        """G = Phi^T Phi = signs^T signs / m (k x k, unit diagonal); E[projection estimate] = G f (MATH §9)."""
        gram = np.zeros((self.k, self.k))
        step = max(1, _BLOCK // self.k)
        for start in range(0, self.m, step):
            block = self.signs[start:start + step].astype(float)
            gram += block.T @ block
        return gram / self.m

    @cached_property
    def gram_inverse(self):
        """G^-1, for the unbiased estimate; ValidationError when m < k or G is singular."""
        if self.m < self.k:
            raise ValidationError(f"method='unbiased' needs m >= k (m is {self.m}, k is {self.k}): G = Phi^T Phi "
                                  "has rank at most m")
        eigenvalues, vectors = np.linalg.eigh(self.gram)
        if eigenvalues[0] <= self.k * np.finfo(float).eps * eigenvalues[-1]:
            raise ValidationError(f"method='unbiased' needs G = Phi^T Phi nonsingular, but the projection of seed "
                                  f"{self.seed} has linearly dependent columns (use another seed or a larger m)")
        return (vectors / eigenvalues) @ vectors.T

    def perturb(self, values, rng=None):
        values = category_values(values, self.k)
        rng = as_generator(rng)
        out = np.empty(values.size, dtype=self.report_dtype)
        out["row"] = rng.integers(0, self.m, size=values.size)
        out["sign"] = one_bit(self.signs[out["row"], values], self.exp_epsilon, rng)
        return out

    def estimate(self, reports, consistency=None, method="unbiased"):
        """``method="unbiased"`` (default): the solution of G f = projection, mean f for this fixed Phi (needs
        m >= k, which the default m guarantees). ``method="projection"`` (the paper's): f(l) = <z_bar, Phi[:, l]>
        = (1/n) sum_i c sign_i signs[s_i, l], mean G f, biased by the cross-talk of this Phi (MATH §9)."""
        _check_consistency(consistency)
        check_method(method)
        structured_reports(reports, self.report_dtype)
        rows = index_array(reports["row"], self.m, "reports['row']")
        projection = self.project(rows, self.scale * sign_field(reports), rows.size, method)
        return _consistent(projection, consistency)

    def project(self, rows, weights, n, method="unbiased"):
        """(1/n) sum_i weights_i signs[rows_i, :] (the paper's <z_bar, Phi[:, l]> for weights c sign_i), solved
        against G for ``method="unbiased"`` (MATH §9). Shared with HarmonyMixed, whose weights carry a factor d."""
        per_row = np.bincount(rows, weights=weights, minlength=self.m)
        projection = np.empty(self.k)
        step = max(1, _BLOCK // self.m)
        for start in range(0, self.k, step):
            projection[start:start + step] = per_row @ self.signs[:, start:start + step]
        projection /= n
        return self.gram_inverse @ projection if method == "unbiased" else projection

    def expected_estimate(self, frequencies, method="unbiased"):
        """E[estimate]: G f for the projection method, f for the unbiased one."""
        check_method(method)
        f = probability_vector(frequencies, "frequencies", length=self.k)
        return self.gram @ f if method == "projection" else f

    def variance(self, frequencies, n, method="unbiased"):
        """Per-value variance. Each user's term Z = c sign signs[s, :] has E[Z Z^T] = c^2 G and E[Z] = G[:, v], so
        Cov(projection) = (c^2 G - G diag(f) G)/n: Var f(l) = (c^2 - sum_v f_v G[v, l]^2)/n; for the unbiased
        G^-1 projection, Cov = (c^2 G^-1 - diag(f))/n: Var = (c^2 (G^-1)[l, l] - f_l)/n."""
        check_method(method)
        f = probability_vector(frequencies, "frequencies", length=self.k)
        n = integer_parameter(n, "n")
        if method == "projection":
            return (self.scale**2 - f @ self.gram**2) / n
        return (self.scale**2 * np.diag(self.gram_inverse) - f) / n

    def privacy_table(self):
        """Exact reduction to ``one_bit_table``: output (s, b) has probability (1/m) Pr[b | t = signs[s, v]], so
        every likelihood ratio is 1 or the one-bit ratio e^eps (attained by any v, v' whose columns of signs
        differ somewhere; only if all k columns coincide is the mechanism more private than the table)."""
        return one_bit_table(self.exp_epsilon)
