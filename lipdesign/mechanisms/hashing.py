"""Local hashing: optimised local hashing (OLH) under LDP (docs/math.md §7, §8). Numpy only."""

import math

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.oracle import PureProtocol
from lipdesign.mechanisms.rr import (
    grr_mixing_probability,
    grr_probabilities,
    grr_reduced_table,
    randomized_response,
)
from lipdesign.mechanisms.sampling import BLOCK, structured_reports
from lipdesign.validation import index_array, integer

#: The prime P of OLH's hash family h_{a,b}(x) = ((a x + b) mod P) mod g (a Mersenne prime; a x + b < 2**63).
HASH_PRIME = 2**31 - 1


def hash_collision(g, prime=HASH_PRIME):
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


class OLH(PureProtocol):
    """Optimised local hashing (docs/math.md §8). Each user draws a hash h_{a,b}(x) = ((a x + b) mod P) mod g, P =
    ``HASH_PRIME`` = 2^31 - 1, with a uniform in [1, P-1] and b uniform in [0, P-1] from her own rng, and
    reports (a, b, y) with y = GRR over g buckets of h(x) (p' = e^eps/(e^eps + g - 1), sampled and realised as
    GRR's mixture, ``rr.grr_mixing_probability``).

    ``g`` defaults to round(e^eps) + 1 (the survey's choice: the variance-minimising integer except in narrow windows
    of epsilon, where it costs up to about 2% variance; docs/math.md §8), capped at P so y fits
    int32. Requires k < P (distinct values stay distinct mod P). Reports: structured array
    [("a", "<i8"), ("b", "<i8"), ("y", "<i4")]. Epsilon in [1e-6, 10].

    A report supports v when h(v) = y: with probability p = p' if v is the user's value, and otherwise
    q = coll p' + (1 - coll)(1 - p')/(g - 1), coll = ``hash_collision(g)`` (exact for this family, slightly off
    1/g; the idealised q = 1/g is not). Aggregating costs O(n k): every report is tested against every value.
    """

    family = "olh"
    client_cost = "O(1) per report (one hash)"
    report_dtype = np.dtype([("a", "<i8"), ("b", "<i8"), ("y", "<i4")])

    def __init__(self, epsilon, k, g=None):
        super().__init__(epsilon, k, max_k=HASH_PRIME - 1)
        if g is None:
            g = min(round(math.exp(self.epsilon)) + 1, HASH_PRIME)
        self.g = integer(g, "g", low=2, high=HASH_PRIME)
        self.alpha = grr_mixing_probability(self.epsilon, self.exp_epsilon, self.g, "g")
        self.p, lie = grr_probabilities(self.alpha, self.g)
        collision = hash_collision(self.g)
        self.q = collision * self.p + (1.0 - collision) * lie

    def parameters(self):
        return {"epsilon": self.epsilon, "k": self.k, "g": self.g}

    @property
    def report_bits(self):
        """a, b and y: ceil(log2((P - 1) P g))."""
        return math.ceil(math.log2((HASH_PRIME - 1) * HASH_PRIME * self.g))

    @classmethod
    def example(cls):
        return cls(2.0, 20)

    def _hash(self, a, b, x):
        return (a * x + b) % HASH_PRIME % self.g

    def _perturb(self, values, rng, user_ids):
        out = np.empty(values.size, dtype=self.report_dtype)
        out["a"] = rng.integers(1, HASH_PRIME, size=values.size)  # 1..P-1 (exclusive upper bound)
        out["b"] = rng.integers(0, HASH_PRIME, size=values.size)  # 0..P-1
        hashed = self._hash(out["a"], out["b"], values)
        out["y"] = randomized_response(hashed, self.g, self.alpha, rng)
        return out

    def empty_reports(self):
        return np.zeros(0, dtype=self.report_dtype)

    def _support(self, reports):
        structured_reports(reports, self.report_dtype)
        a = index_array(reports["a"], HASH_PRIME, "reports['a']")
        if (a == 0).any():
            raise ValidationError(f"reports['a'][{int(np.argmax(a == 0))}] is 0; the hash multiplier a must lie "
                                  f"in 1..{HASH_PRIME - 1}")
        b = index_array(reports["b"], HASH_PRIME, "reports['b']")[:, None]
        y = index_array(reports["y"], self.g, "reports['y']")[:, None]
        a = a[:, None]
        support = np.zeros(self.k, dtype=np.int64)
        step = max(1, BLOCK // max(1, a.size))
        for start in range(0, self.k, step):
            v = np.arange(start, min(start + step, self.k))
            support[start:start + v.size] = (self._hash(a, b, v) == y).sum(axis=0)
        return support, a.size

    def privacy_table(self):
        """Exact reduction of the output (a, b, y): (a, b) has the same distribution for every input, and given
        it y is GRR over g buckets of h(x), so the tightest epsilon is that of the g x g GRR table (two inputs
        with h(x) = h(x') only give ratio 1). Rows: two inputs with h(x) = 0, h(x') = 1 (possible for g >= 2);
        columns: y = 0, y = 1, and the other g - 2 buckets merged (``rr.grr_reduced_table``; none when g = 2)."""
        return grr_reduced_table(self.alpha, self.g)
