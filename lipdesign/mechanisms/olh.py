"""Local hashing: optimised local hashing (OLH) under LDP, with a hash per user or from a public pool
(docs/math.md §7, §8). Numpy only (numba, when installed, counts large batches of per-user reports)."""

from __future__ import annotations

import math
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms import parallel
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import SEED_RULE
from lipdesign.mechanisms.oracle import PureProtocol
from lipdesign.mechanisms.rr import (
    grr_certificate,
    grr_mixing_probability,
    grr_probabilities,
    grr_reduced_table,
    randomized_response,
)
from lipdesign.mechanisms.sampling import BLOCK, public_index, public_seed, structured_reports
from lipdesign.validation import fmt, index_array, integer

if TYPE_CHECKING:  # annotations only
    from typing import Self, TypeAlias

    import numpy.typing as npt

    #: (a, b) of a pool's hashes (``OLH.pool_members``).
    PoolMembers: TypeAlias = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]

#: The prime P of OLH's hash family h_{a,b}(x) = ((a x + b) mod P) mod g (a Mersenne prime; a x + b < 2**63).
HASH_PRIME = 2**31 - 1


def hash_collision(g: int, prime: int = HASH_PRIME) -> float:
    """Pr[h(x) = h(x')] for x != x' in [0, prime), h = ((a x + b) mod prime) mod g, a uniform in
    [1, prime-1], b uniform in [0, prime-1] (docs/math.md §8).

    (a, b) -> (a x + b, a x' + b) mod prime is a bijection onto the ordered pairs of distinct residues
    (a = (u - v)/(x - x'), b = u - a x), so the pair is uniform over those prime (prime - 1) pairs and
    the collision probability is sum_z n_z (n_z - 1) / (prime (prime - 1)), n_z = #{r < prime: r mod g = z}.
    With prime = Q g + R, R residues z have n_z = Q + 1 and g - R have n_z = Q.
    """
    quotient, remainder = divmod(prime, g)
    pairs = remainder * (quotient + 1) * quotient + (g - remainder) * quotient * (quotient - 1)
    return pairs / (prime * (prime - 1))


#: A pooled OLH has at most this many hash functions ...
MAX_POOL = 2**20

#: ... at most this many (hash, bucket) cells (its aggregation counts them, 8 bytes each) ...
MAX_POOL_CELLS = 2**26

#: ... k at most this (its estimator solves with the k x k collision matrix, 8 k^2 bytes, in O(k^3)) ...
MAX_POOL_K = 1024

#: ... S k^2 at most this (building the collision matrix, at construction, compares S k^2 pairs of hash values:
#: about a second at this size) ...
MAX_POOL_PAIRS = 2**30

#: ... and S k at most this (the variance holds an S x k array of bucket masses, 8 bytes each).
MAX_POOL_VALUES = 2**24

#: The pool's collision matrix must have its smallest eigenvalue above this times its largest (else the pool does
#: not separate the values well enough to estimate them).
MIN_CONDITION = 1e-9

#: With seed=None, a pooled OLH draws up to this many public seeds until its collision matrix passes MIN_CONDITION
#: (the seed is public and chosen before any report, so the choice costs no privacy).
SEED_DRAWS = 16


class OLH(PureProtocol):
    """Optimised local hashing over k values, eps-LDP (docs/math.md §8.4), with a hash per user or from a public pool.

    Each user hashes her value with h_{a,b}(x) = ((a x + b) mod P) mod g, P = ``HASH_PRIME`` = 2^31 - 1, and reports
    the hash and y = GRR over g buckets of h(x) (p' = e^eps/(e^eps + g - 1), sampled and realised as GRR's mixture,
    ``rr.grr_mixing_probability``).

    - ``pool=None`` (the default, as in files written before pools existed): the user draws a uniform in [1, P-1]
      and b uniform in [0, P-1] from her own rng and reports (a, b, y), structured [("a", "<i8"), ("b", "<i8"),
      ("y", "<i4")]. A report supports v when h(v) = y: with probability p = p' if v is the user's value, and
      otherwise q = coll p' + (1 - coll)(1 - p')/(g - 1), coll = ``hash_collision(g)`` (exact for this family;
      the idealised q = 1/g is not). Aggregating costs O(n k): every report is tested against every value
      (compiled, on every core, when numba is installed).
    - ``pool=S``: a public pool of S hashes (a_s, b_s), derived from the public ``seed`` (``pool_members``; None
      draws one, again while the pool is singular, up to ``SEED_DRAWS`` times); the user draws s uniform in [0, S)
      and reports (s, y), structured [("s", "<i4"), ("y", "<i4")].
      Aggregation is a bincount over (s, y) and one pass over the S x k hash values, O(n + S k); the estimate
      solves with the pool's exact collision matrix C[v, w] = #{s: h_s(v) = h_s(w)} / S (docs/math.md §8.4), so it
      is unbiased for the pool actually used, and ``variance`` is its exact variance. C is built, in O(S k^2), and
      checked to be invertible when the mechanism is built. Requires S (g - 1) + 1 >= k (C's rank is at most that),
      S <= ``MAX_POOL``, S g <= ``MAX_POOL_CELLS``, k <= ``MAX_POOL_K``, S k^2 <= ``MAX_POOL_PAIRS``, S k <=
      ``MAX_POOL_VALUES``; the privacy claim is the same (given the hash, y is GRR on h(x)).

    ``g`` defaults to round(e^eps) + 1 (the survey's choice: the variance-minimising integer except in narrow windows
    of epsilon, where it costs up to about 2% variance; docs/math.md §8.4), capped at P so y fits int32. Requires k <
    P (distinct values stay distinct mod P). Epsilon in [1e-6, 10].

    Parameters
    ----------
    epsilon : float
        The LDP level, in [1e-6, 10].
    k : int
        The number of values, 2 <= k <= P - 1; inputs are the indices 0..k-1.
    g : int, optional
        The number of hash buckets, 2 <= g <= P; by default round(e^eps) + 1.
    pool : int, optional
        The number S of hashes in a public pool, 1 <= S <= ``MAX_POOL``; by default none (a hash per user).
    seed : int, optional
        With a pool only: the public seed the pool is derived from; by default drawn from the OS (and stored in the
        mechanism's file).

    Attributes
    ----------
    p : float
        Pr[y = h(x)] for the user's value x, as the sampler realises it.
    q : float or None
        Per user: the probability that a report supports a value other than the user's (exact for the hash
        family); None with a pool, whose support probabilities depend on the pair of values.
    alpha, lie : float
        The mixture's keep probability and Pr[y = a given other bucket].

    Raises
    ------
    ValidationError
        If an argument breaks its rule above, a seed is given without a pool, the pool cannot separate k values
        (S (g - 1) + 1 < k) or exceeds one of its caps, or its collision matrix is singular.

    See Also
    --------
    GRR, OUE, HadamardResponse : The other frequency oracles of docs/math.md §8.
    LocalHashing : Local hashing with a designed table over the buckets.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> olh = ld.mechanisms.OLH(1.0, 4)
    >>> olh
    OLH(epsilon=1.0, k=4, g=4)
    >>> olh.verify().passed, round(olh.verify().epsilon, 6)
    (True, 1.0)

    The exact q is close to the idealised 1/g, and the variance of an absent value (f_v = 0) is close to the
    survey's (e^eps - 1 + g)^2/((e^eps - 1)^2 (g - 1)) per user (docs/math.md §8.1):

    >>> import math
    >>> e = math.exp(1.0)
    >>> round(olh.p, 6), round(e / (e + 3), 6), round(olh.q, 6)
    (0.475367, 0.475367, 0.25)
    >>> round(float(olh.variance([1, 0, 0, 0])[1]), 6), round((e + 3) ** 2 / ((e - 1) ** 2 * 3), 6)
    (3.691655, 3.691655)

    A seeded round: perturb, aggregate, estimate.

    >>> truth = np.array([0.4, 0.3, 0.2, 0.1])
    >>> values = np.random.default_rng(0).choice(4, size=20_000, p=truth)
    >>> reports = olh.perturb(values, rng=1)
    >>> reports.shape, reports.dtype.names
    ((20000,), ('a', 'b', 'y'))
    >>> estimate = olh.estimate(olh.aggregate(reports))
    >>> np.round(estimate.values, 3)
    array([0.384, 0.306, 0.23 , 0.101])

    With a public pool of 16 hashes, a report is (s, y), 6 bits:

    >>> pooled = ld.mechanisms.OLH(1.0, 4, pool=16, seed=7)
    >>> pooled.report_bits, pooled.q
    (6, None)
    >>> reports = pooled.perturb(values, rng=1)
    >>> np.round(pooled.estimate(pooled.aggregate(reports)).values, 3)
    array([0.401, 0.323, 0.188, 0.091])
    >>> ld.mechanisms.OLH(1.0, 40, pool=2)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: pool is 2; with g = 4 buckets a pool of S hashes separates at most ...
    """

    family = "olh"
    parameter_rules = (("k", f"integer in 2..{HASH_PRIME - 1}"),
                       ("g", f"integer in 2..{HASH_PRIME} (by default round(e^eps) + 1)"),
                       ("pool", (f"integer in 1..{MAX_POOL} with pool (g - 1) + 1 >= k and k <= {MAX_POOL_K} "
                                 "(by default none: a hash per user)")),
                       ("seed", f"with a pool only: {SEED_RULE}"))
    client_cost = "O(1) per report (one hash)"
    report_dtype = np.dtype([("a", "<i8"), ("b", "<i8"), ("y", "<i4")])
    pooled_dtype = np.dtype([("s", "<i4"), ("y", "<i4")])
    q: float | None  # annotation only: None with a pool (set by the constructor)

    def __init__(self, epsilon: float, k: int, g: int | None = None, pool: int | None = None,
                 seed: int | None = None) -> None:
        super().__init__(epsilon, k, max_k=HASH_PRIME - 1)
        if g is None:
            g = min(round(math.exp(self.epsilon)) + 1, HASH_PRIME)
        self.g = integer(g, "g", low=2, high=HASH_PRIME)
        self.alpha = grr_mixing_probability(self.epsilon, self.exp_epsilon, self.g, "g")
        self.p, self.lie = grr_probabilities(self.alpha, self.g)
        self.pool = self.seed = None
        if pool is None:
            if seed is not None:
                raise ValidationError(f"seed is {fmt(seed)}; only a pooled OLH (pool=S) has a public seed")
            collision = hash_collision(self.g)
            self.q = collision * self.p + (1.0 - collision) * self.lie
            return
        self.pool = integer(pool, "pool", low=1, high=MAX_POOL)
        if self.pool * (self.g - 1) + 1 < self.k:
            raise ValidationError(f"pool is {self.pool}; with g = {self.g} buckets a pool of S hashes separates at "
                                  f"most S (g - 1) + 1 values, so k = {self.k} needs S >= "
                                  f"{-(-(self.k - 1) // (self.g - 1))} (docs/math.md §8.4)")
        if self.pool * self.g > MAX_POOL_CELLS:
            raise ValidationError(f"pool is {self.pool}; S g = {self.pool * self.g} (hash, bucket) cells exceed "
                                  f"MAX_POOL_CELLS = {MAX_POOL_CELLS}")
        if self.k > MAX_POOL_K:
            raise ValidationError(f"k is {self.k}; a pooled OLH solves with the k x k collision matrix, built for k <= "
                                  f"MAX_POOL_K = {MAX_POOL_K} (use pool=None)")
        for size, cap, name, what in ((self.pool * self.k**2, MAX_POOL_PAIRS, "MAX_POOL_PAIRS", "S k^2"),
                                      (self.pool * self.k, MAX_POOL_VALUES, "MAX_POOL_VALUES", "S k")):
            if size > cap:
                raise ValidationError(f"pool is {self.pool}; with k = {self.k}, {what} = {size} exceeds {name} = {cap} "
                                      "(the cost of the pool's collision matrix and variance; docs/math.md §8.4)")
        self.q = None  # no single q: the pool's support probabilities depend on the pair (docs/math.md §8.4)
        self.report_dtype = self.pooled_dtype
        draws = 1 if seed is not None else SEED_DRAWS
        for draw in range(draws):
            self.seed = public_seed(seed)
            for name in ("pool_members", "collision_matrix"):  # cached for the previous seed
                self.__dict__.pop(name, None)
            try:
                _ = self.collision_matrix  # refuses a singular pool now, not at the first estimate
                break
            except ValidationError:
                if draw == draws - 1:
                    raise

    def parameters(self) -> dict[str, Any]:
        parameters: dict[str, Any] = {"epsilon": self.epsilon, "k": self.k, "g": self.g}
        if self.pool is not None:  # files without a pool keep their form (and fingerprint)
            parameters.update(pool=self.pool, seed=self.seed)
        return parameters

    @property
    def report_bits(self) -> int:
        """(a, b, y): ceil(log2((P - 1) P g)); (s, y): ceil(log2(S g))."""
        if self.pool is not None:
            return max(1, math.ceil(math.log2(self.pool * self.g)))
        return math.ceil(math.log2((HASH_PRIME - 1) * HASH_PRIME * self.g))

    @classmethod
    def example(cls) -> Self:
        return cls(2.0, 20)

    def _hash(self, a, b, x):
        return (a * x + b) % HASH_PRIME % self.g

    @cached_property
    def pool_members(self) -> PoolMembers | None:
        """(a, b), int64 (S,) each: hash s of the pool is h_{a_s, b_s}, a_s = 1 + I(seed, 2 s, P - 1) and b_s =
        I(seed, 2 s + 1, P), I = ``sampling.public_index`` (SplitMix64; any implementation recomputes the pool from
        the seed). None without a pool."""
        if self.pool is None:
            return None
        ids = np.arange(self.pool, dtype=np.int64)
        a = 1 + public_index(cast(int, self.seed), 2 * ids, HASH_PRIME - 1)  # a pool has its seed
        b = public_index(cast(int, self.seed), 2 * ids + 1, HASH_PRIME)
        for array in (a, b):
            array.setflags(write=False)
        return a, b

    def report_hashes(self, reports: npt.NDArray[np.void], v: int | npt.ArrayLike) -> npt.NDArray[np.int64]:
        """h(v) under the hash of each report (checked): which reports support the value v (h(v) = y).

        Parameters
        ----------
        reports : numpy.ndarray
            Structured reports as ``perturb`` returns them: (a, b, y) per user, or (s, y) with a pool.
        v : int
            A value in 0..k-1 (an array of values broadcasts against the reports).

        Returns
        -------
        numpy.ndarray
            int64 (n,): the bucket of v under each report's hash.

        Raises
        ------
        ValidationError
            If ``reports`` does not have this mechanism's report fields, or a field is out of range.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> olh = ld.mechanisms.OLH(1.0, 4, pool=16, seed=7)
        >>> reports = olh.perturb([0, 0, 1], rng=1)
        >>> supports = olh.report_hashes(reports, 0) == reports["y"]
        >>> supports.shape, supports.dtype
        ((3,), dtype('bool'))
        """
        if self.pool is None:
            a, b, _ = self._per_user_fields(reports)
            return self._hash(a, b, v)
        s, _ = self._pooled_fields(reports)
        a, b = cast("PoolMembers", self.pool_members)  # not None: with a pool
        return self._hash(a[s], b[s], v)

    def collision_probability(self, x: int, v: int) -> float:
        """Pr[h(x) = h(v)] over the hash a report uses.

        Per user: ``hash_collision(g)``, the probability for x != v (returned whatever x and v are); with a pool:
        its frequency C[x, v], which is 1 when x = v.

        Parameters
        ----------
        x, v : int
            Two values in 0..k-1.

        Returns
        -------
        float
            The collision probability.

        Examples
        --------
        >>> import lipdesign as ld
        >>> round(ld.mechanisms.OLH(1.0, 4).collision_probability(0, 1), 6)
        0.25
        >>> pooled = ld.mechanisms.OLH(1.0, 4, pool=16, seed=7)
        >>> pooled.collision_probability(0, 1), pooled.collision_probability(0, 0)
        (0.25, 1.0)
        """
        if self.pool is None:
            return hash_collision(self.g)
        a, b = cast("PoolMembers", self.pool_members)  # not None: with a pool
        return float(np.mean(self._hash(a, b, x) == self._hash(a, b, v)))

    def _perturb(self, values, rng, user_ids):
        out = np.empty(values.size, dtype=self.report_dtype)
        if self.pool is None:
            out["a"] = rng.integers(1, HASH_PRIME, size=values.size)  # 1..P-1 (exclusive upper bound)
            out["b"] = rng.integers(0, HASH_PRIME, size=values.size)  # 0..P-1
            hashed = self._hash(out["a"], out["b"], values)
        else:
            out["s"] = rng.integers(0, self.pool, size=values.size)
            a, b = cast("PoolMembers", self.pool_members)  # not None: with a pool
            hashed = self._hash(a[out["s"]], b[out["s"]], values)
        out["y"] = randomized_response(hashed, self.g, self.alpha, rng)
        return out

    def empty_reports(self) -> npt.NDArray[np.void]:
        return np.zeros(0, dtype=self.report_dtype)

    def _per_user_fields(self, reports):
        structured_reports(reports, self.report_dtype)
        a = index_array(reports["a"], HASH_PRIME, "reports['a']")
        if (a == 0).any():
            raise ValidationError(f"reports['a'][{int(np.argmax(a == 0))}] is 0; the hash multiplier a must lie "
                                  f"in 1..{HASH_PRIME - 1}")
        return a, index_array(reports["b"], HASH_PRIME, "reports['b']"), index_array(reports["y"], self.g,
                                                                                      "reports['y']")

    def _pooled_fields(self, reports):
        structured_reports(reports, self.report_dtype)
        return index_array(reports["s"], self.pool, "reports['s']"), index_array(reports["y"], self.g, "reports['y']")

    def _support(self, reports):
        if self.pool is not None:
            s, y = self._pooled_fields(reports)
            counts = np.bincount(s * self.g + y, minlength=self.pool * self.g).reshape(self.pool, self.g)
            support = np.zeros(self.k, dtype=np.int64)
            for hashes, first in self._pool_hash_blocks():  # C_v = sum_s counts[s, h_s(v)]
                rows = np.arange(first, first + hashes.shape[0])[:, None]
                support += counts[rows, hashes].sum(axis=0)
            return support, s.size
        a, b, y = self._per_user_fields(reports)
        kernels = parallel.compiled_kernels(a.size * self.k)
        if kernels is not None:  # the same counts, compiled, on every core (docs/math.md §8.4)
            a, b, y = (np.ascontiguousarray(field, dtype=np.int64) for field in (a, b, y))

            def count(start, stop):
                support = np.zeros(self.k, dtype=np.int64)
                kernels.add_hash_support(a[start:stop], b[start:stop], y[start:stop], HASH_PRIME, self.g, support)
                return support

            return parallel.sum_in_threads(a.size, max(1, BLOCK // self.k), count), a.size
        a, b, y = a[:, None], b[:, None], y[:, None]
        support = np.zeros(self.k, dtype=np.int64)
        step = max(1, BLOCK // max(1, a.size))
        for start in range(0, self.k, step):
            v = np.arange(start, min(start + step, self.k))
            support[start:start + v.size] = (self._hash(a, b, v) == y).sum(axis=0)
        return support, a.size

    def _pool_hash_blocks(self):
        """(h_s(v) for s in a block of the pool and every value v, int64 (rows, k); the block's first s)."""
        a, b = cast("PoolMembers", self.pool_members)  # not None: called with a pool only
        step = max(1, BLOCK // self.k)
        values = np.arange(self.k)
        for first in range(0, cast(int, self.pool), step):
            yield self._hash(a[first:first + step, None], b[first:first + step, None], values), first

    def _pair_means(self, weights=None):
        """(1/S) sum_s 1[h_s(v) = h_s(w)] weights[s, v] as a k x k float array (weights None: 1, the collision
        matrix C, from exact integer counts); O(S k^2), vectorised over blocks of about BLOCK pairs."""
        total = np.zeros((self.k, self.k))
        counts, counted = np.zeros((self.k, self.k), dtype=np.uint16), 0  # moved to total before they can overflow
        step = min(255, max(1, BLOCK // self.k**2))
        for hashes, first in self._pool_hash_blocks():
            for start in range(0, hashes.shape[0], step):
                block = hashes[start:start + step]
                same = block[:, :, None] == block[:, None, :]
                if weights is not None:
                    total += np.einsum("svw,sv->vw", same, weights[first + start:first + start + block.shape[0]])
                    continue
                np.add(counts, np.add.reduce(same.view(np.uint8), axis=0, dtype=np.uint16), out=counts)
                counted += block.shape[0]
                if counted > 2**16 - 1 - step:
                    total += counts
                    counts[:], counted = 0, 0
        return (total + counts) / cast(int, self.pool)  # not None: called with a pool only

    @cached_property
    def collision_matrix(self) -> npt.NDArray[np.float64] | None:
        """C[v, w] = #{s: h_s(v) = h_s(w)} / S of the pool (read-only), checked to be well conditioned; None without
        a pool."""
        if self.pool is None:
            return None
        matrix = self._pair_means()
        eigenvalues = np.linalg.eigvalsh(matrix)
        if eigenvalues[0] <= MIN_CONDITION * eigenvalues[-1]:
            raise ValidationError(f"pool is {self.pool}, seed is {self.seed}; its collision matrix is singular "
                                  f"(smallest eigenvalue {eigenvalues[0]:.3g}, largest {eigenvalues[-1]:.3g}; the rule "
                                  f"is smallest > {MIN_CONDITION:g} x largest): the pool does not tell the k = "
                                  f"{self.k} values apart, use a larger pool or another seed (docs/math.md §8.4)")
        matrix.setflags(write=False)
        return matrix

    @cached_property
    def _inverse_collisions(self):
        inverse = np.linalg.inv(cast("npt.NDArray[np.float64]", self.collision_matrix))  # not None: with a pool only
        inverse.setflags(write=False)
        return inverse

    def _estimate(self, aggregate, method):
        """Per user: the pure estimate (docs/math.md §8.1); pooled: C^-1 ((C_v / n - lie) / alpha), unbiased for
        the pool (docs/math.md §8.4)."""
        if self.pool is None:
            return super()._estimate(aggregate, method)
        return self._inverse_collisions @ ((aggregate["support"] / aggregate.n - self.lie) / self.alpha)

    def _variance(self, frequencies, n, method, user_ids):
        """Per user: ``pure_variance``; pooled: the diagonal of C^-1 Sigma C^-1 / (n alpha^2), Sigma the average
        covariance of a report's support vector (docs/math.md §8.4)."""
        if self.pool is None:
            return super()._variance(frequencies, n, method, user_ids)
        # not None: with a pool
        collisions, f = cast("npt.NDArray[np.float64]", self.collision_matrix), np.asarray(frequencies, dtype=float)
        bucket_mass = np.empty((self.pool, self.k))  # F_s(h_s(v)): the frequency hashed with v by hash s
        for hashes, first in self._pool_hash_blocks():
            rows = hashes.shape[0]
            cells = hashes + self.g * np.arange(rows)[:, None]  # (hash, bucket) cells of this block
            masses = np.bincount(cells.ravel(), weights=np.tile(f, rows), minlength=rows * self.g)
            bucket_mass[first:first + rows] = masses[cells]
        m = collisions @ f
        sigma = (self.lie * collisions + self.alpha * self._pair_means(bucket_mass) - self.lie**2
                 - self.lie * self.alpha * (m[:, None] + m[None, :]) - self.alpha**2 * (collisions * f) @ collisions)
        inverse = self._inverse_collisions
        return np.einsum("ij,jk,ik->i", inverse, sigma, inverse) / (n * self.alpha**2)

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The exact reduction of the output ((a, b, y) or (s, y)) to the GRR table over g buckets, 2 x 3.

        The hash has the same distribution for every input,
        and given it y is GRR over g buckets of h(x), so the tightest epsilon is that of the g x g GRR table (two
        inputs with h(x) = h(x') only give ratio 1). Rows: two inputs with h(x) = 0, h(x') = 1 (possible for g >= 2;
        a pool that passed its rank check separates some pair); columns: y = 0, y = 1, and the other g - 2 buckets
        merged (``rr.grr_reduced_table``; none when g = 2), in floats. The certificate is verified on its exact rational
        form, the probabilities the mixture realises (``rr.grr_certificate``).

        Returns
        -------
        numpy.ndarray
            float (2, 3), or (2, 2) when g = 2.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> np.round(ld.mechanisms.OLH(1.0, 4).privacy_table(), 4)
        array([[0.4754, 0.1749, 0.3498],
               [0.1749, 0.4754, 0.3498]])
        """
        return grr_reduced_table(self.alpha, self.g)

    def _certify(self):
        return grr_certificate(self.epsilon, self.alpha, self.g)

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs 0 and 1; classes y = h(0) != h(1), y = h(1) != h(0),
        another y with h(0) != h(1), and h(0) = h(1) (probability ``collision_probability(0, 1)``, exact for the
        family or the pool); given the hash, y is GRR over g buckets.

        Returns
        -------
        AuditPlan
            The inputs, the 2 x 4 table of the classes and the classifier of reports into them.
        """
        keep, lie = grr_probabilities(self.alpha, self.g)
        c = self.collision_probability(0, 1)
        table = np.array([[(1 - c) * keep, (1 - c) * lie, (1 - c) * (self.g - 2) * lie, c],
                          [(1 - c) * lie, (1 - c) * keep, (1 - c) * (self.g - 2) * lie, c]])

        def classify(reports):
            first, second = self.report_hashes(reports, 0), self.report_hashes(reports, 1)
            y = reports["y"]
            return np.select([first == second, y == first, y == second], [3, 0, 1], 2)

        return AuditPlan(np.array([0, 1]), table, classify, ["x=0", "x=1"],
                     ["y=h(0)", "y=h(1)", "other y", "h(0)=h(1)"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §5): the hash family's prime and the keep probability (and
        the public pool, when used).

        Returns
        -------
        dict
            ``k``, ``g``, ``prime``, ``alpha``, and with a pool ``pool`` and ``seed``.
        """
        return {"k": self.k, "g": self.g, "prime": HASH_PRIME, "alpha": self.alpha,
                **({} if self.pool is None else {"pool": self.pool, "seed": self.seed})}

    def display_name(self) -> str:
        return f"local hashing: OLH, g = {self.g} (LDP)"
