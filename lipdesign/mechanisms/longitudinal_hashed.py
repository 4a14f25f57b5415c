"""Longitudinal reports through a permanent hash or a permanent sample of buckets (docs/math.md §19.6, §19.7), on the
contract of ``lipdesign.mechanisms.longitudinal``. Numpy and the standard library only.

- ``LongitudinalOLH`` (``"l-olh"``): a device hashes its value into g buckets with a hash drawn once from its key,
  then L-GRR over the g buckets (L-OLH of [Arcolezi22]'s longitudinal protocols);
- ``DBitFlipPM`` (``"dbitflip"``): values in buckets, d bucket indices sampled once per device, one bit per sampled
  index memoised per bucket ([Ding17]).

Every probability is an integer threshold on 32-bit words, and both guarantees are certified in exact arithmetic
from those thresholds. The words that must stay the same from round to round (the hash, the sampled indices, the
permanent responses) come from the device key's memo stream (``lipdesign.mechanisms.memo``); ``perturb`` (one report,
no memo) draws the same words from ``rng`` through the same transform.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee
from lipdesign.mechanisms.estimate import PLUG_IN, Estimate
from lipdesign.mechanisms.longitudinal import (
    ATTEMPTS,
    GRR_WORDS,
    MAX_K,
    LongitudinalGRR,
    Memoised,
    grr_lip_ratio,
    grr_stage,
)
from lipdesign.mechanisms.memo import WORD, checked_keys, memo_words
from lipdesign.mechanisms.olh import HASH_PRIME, OLH
from lipdesign.mechanisms.postprocess import CONSISTENCY, norm_sub
from lipdesign.mechanisms.sampling import BLOCK, structured_reports
from lipdesign.validation import MAX_EPSILON, choice, fmt, index_array, integer, probability_vector
from lipdesign.verification import exp_bounds

if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.aggregate import Aggregate

#: Words of a device's hash (a, b): ATTEMPTS draws for a, then ATTEMPTS for b (docs/math.md §19.6).
HASH_WORDS = 2 * ATTEMPTS

#: The memo string of a device's hash: its nonce is ``memo_nonces`` of these bytes (not 8 bytes long, so never a
#: value's or a bucket's nonce string).
HASH_MEMO = b"l-olh hash"

#: The memo string of a device's sampled bucket indices (dBitFlipPM).
INDEX_MEMO = b"dbitflip indices"

#: Uniform draws per Fisher-Yates step of dBitFlipPM's indices (Lemire's rule on a 32-bit word each; if all are
#: rejected, the last one's value is used, with probability below (buckets / 2^32)^4 <= 2^-64).
INDEX_ATTEMPTS = 4

#: The largest number of buckets (dBitFlipPM) ...
MAX_BUCKETS = 2**16

#: ... and of sampled indices: the indices are drawn by a partial Fisher-Yates shuffle tracked sparsely, O(d^2) per
#: device.
MAX_D = 64


def bounded(words: npt.NDArray[np.uint32], m: int) -> npt.NDArray[np.int64]:
    """A value in 0..m-1 from each row of 32-bit words (n, attempts): the first word w accepted by Lemire's rule
    ((w m) mod 2^32 >= 2^32 mod m) gives (w m) >> 32, exactly uniform; if none is accepted, the last word's
    (w m) >> 32 (probability ((2^32 mod m) / 2^32)^attempts)."""
    product = words.astype(np.uint64) * np.uint64(m)
    accepted = (product & np.uint64(WORD - 1)) >= np.uint64(WORD % m)
    first = np.where(accepted.any(axis=1), accepted.argmax(axis=1), words.shape[1] - 1)
    return (product[np.arange(len(words)), first] >> np.uint64(32)).astype(np.int64)


def exact_collision(g: int) -> Fraction:
    """Pr[h(x) = h(x')] for x != x' over a uniform hash h_{a,b} of OLH's family (``olh.hash_collision``), exactly:
    #{ordered pairs of distinct residues mod P with equal residues mod g} / (P (P - 1))."""
    quotient, remainder = divmod(HASH_PRIME, g)
    pairs = remainder * (quotient + 1) * quotient + (g - remainder) * quotient * (quotient - 1)
    return Fraction(pairs, HASH_PRIME * (HASH_PRIME - 1))


# -- L-OLH ------------------------------------------------------------------------------------------------------


class LongitudinalOLH(Memoised):
    """L-OLH (docs/math.md §19.6): each device hashes its value into g buckets with h_{a,b}(x) = ((a x + b) mod P)
    mod g, P = 2^31 - 1, the hash drawn once per device from its key, then L-GRR over the g buckets ([Arcolezi22]):
    a permanent GRR at ``epsilon_permanent`` memoised per device and bucket, then an instantaneous GRR for one
    report at ``epsilon``.

    The hash is public and independent of the value, so the LDP ratio of a report (a, b, y) is that of the GRR over
    g buckets: one report is exactly ``epsilon``-LDP (the realised chained GRR, ``stages``), and any number of
    reports of values in one bucket, memoised, are ``epsilon_permanent``-LDP (the permanent GRR; the hash never
    changes, so rounds reveal nothing through new hashes). Between histories that hold buckets in the same rounds, a
    device's history costs ``epsilon_permanent`` per distinct bucket, at most g of them. Both are certified exactly
    from the realised thresholds.

    LIP at a prior (``certificate_at``, ``permanent_certificate_at``): a valid bound, not the exact LIP of the hash
    family: the worst posterior ratio over every partition of the k values into g buckets (docs/math.md §19.6),
    computed exactly; below the LDP bound, and attained when k = 2 (any hash that separates the two values).

    Parameters
    ----------
    epsilon : float
        One report's LDP level, in (0, 30], at most ``epsilon_permanent``.
    epsilon_permanent : float
        Any number of reports of one value (one bucket), memoised: in (0, 30].
    k : int
        The number of values, 2 to ``MAX_K``.
    g : int, optional
        The buckets, 2 to ``MAX_K``; by default round(e^epsilon_permanent) + 1 (OLH's rule at the permanent stage,
        which minimises the variance floor of many rounds' average; one round's variance is OLH's at ``epsilon``
        with g buckets, smallest near round(e^epsilon) + 1: docs/math.md §19.6).

    Attributes
    ----------
    stages : LongitudinalGRR
        L-GRR over the g buckets: its thresholds are the two GRR stages'.
    collision : fractions.Fraction
        Pr[h(x) = h(x')] for x != x' over a uniform hash.
    p, q : float
        Pr[a report supports v] when v is, and is not, the device's value (one report), for the estimate.

    Raises
    ------
    ValidationError
        An epsilon out of range, ``epsilon`` above ``epsilon_permanent``, a k or g out of range, or a g too large
        for the epsilons (the reports would carry no information).

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.LongitudinalOLH(1.0, 3.0, k=6)
    >>> mechanism.g, mechanism.verify().passed, mechanism.permanent_certificate().passed
    (21, True, True)
    >>> keys = mechanism.device_keys(20_000, rng=0)
    >>> values = np.random.default_rng(1).choice(6, size=20_000, p=[0.3, 0.3, 0.2, 0.1, 0.05, 0.05])
    >>> np.round(mechanism.estimate(mechanism.perturb_memoised(values, keys, rng=2)).values, 2)
    array([0.27, 0.31, 0.22, 0.1 , 0.09, 0.06])
    """

    family = "l-olh"
    epsilon_range = (0.0, MAX_EPSILON)
    parameter_rules = (("epsilon_permanent", "in (0, 30], at least epsilon"), ("k", f"integer in 2..{MAX_K}"),
                       ("g", f"integer in 2..{MAX_K} (by default round(e^epsilon_permanent) + 1)"))
    client_cost = "O(1) per report (10 words; 7 through the memo's ChaCha20 blocks)"
    report_dtype = OLH.report_dtype

    def __init__(self, epsilon: float, epsilon_permanent: float, k: int, g: int | None = None) -> None:
        self._epsilons(epsilon, epsilon_permanent, k)
        if g is None:
            g = min(round(math.exp(self.epsilon_permanent)) + 1, MAX_K)
        self.g = integer(g, "g", low=2, high=MAX_K)
        try:
            self.stages = LongitudinalGRR(self.epsilon, self.epsilon_permanent, self.g)
        except ValidationError:
            raise ValidationError(f"g is {self.g}; with epsilon = {fmt(self.epsilon)} a report of one of {self.g} "
                                  "buckets carries no information on 32-bit words: use fewer buckets") from None
        self.collision = exact_collision(self.g)
        self.permanent_words = HASH_WORDS + GRR_WORDS
        self._probabilities()

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 2.0, 6)

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "g": self.g}

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LDP", self.epsilon, EXACT_TABLE,
                         f"one report; any number of reports of values in one hash bucket, memoised: LDP "
                         f"{self.epsilon_permanent:.6g} (docs/math.md §19.6)")

    @property
    def report_bits(self) -> int:
        return math.ceil(math.log2((HASH_PRIME - 1) * HASH_PRIME * self.g))

    # -- the probabilities: support (p, q) with the hash's collisions, GRR (keep, lie) over the buckets ----------

    def _support_of(self, keep_lie: tuple[Fraction, Fraction]) -> tuple[Fraction, Fraction]:
        keep, lie = keep_lie
        return keep, self.collision * keep + (1 - self.collision) * lie

    def _grr_of(self, support: tuple[Fraction, Fraction]) -> tuple[Fraction, Fraction]:
        p, q = support
        return p, (q - self.collision * p) / (1 - self.collision)

    @property
    def _keep_lie(self) -> tuple[Fraction, Fraction]:
        return self._support_of(self.stages._keep_lie)

    @property
    def _permanent_keep_lie(self) -> tuple[Fraction, Fraction]:
        return self._support_of(self.stages._permanent_keep_lie)

    def _exact_table(self, keep_lie):
        """The GRR table over g buckets (``LongitudinalGRR``'s reduction): rows two values with h(x) = 0 and
        h(x') = 1, which some hash gives (a = 1, b = 0)."""
        return self.stages._exact_table(self._grr_of(keep_lie))

    def _lip_ratio(self, p: Fraction, q: Fraction, prior: Sequence[Fraction]) -> tuple[Fraction, str, int]:
        """The worst posterior ratio over every partition of the values into buckets (docs/math.md §19.6): that of
        GRR over the buckets at a two-bucket prior (P_min, 1 - P_min), P_min the least likely value's."""
        least = min(range(len(prior)), key=prior.__getitem__)
        ratio, side, _ = grr_lip_ratio(*self._grr_of((p, q)), [prior[least], 1 - prior[least]])
        return ratio, side, least

    # -- device side ---------------------------------------------------------------------------------------------

    def _hash(self, words):
        """(a, b) of the hash from HASH_WORDS words per device: a = 1 + a value in 0..P-2, b a value in 0..P-1."""
        return 1 + bounded(words[:, :ATTEMPTS], HASH_PRIME - 1), bounded(words[:, ATTEMPTS:HASH_WORDS], HASH_PRIME)

    def _bucket(self, a, b, values):
        return (a * values + b) % HASH_PRIME % self.g

    def _memo_words(self, values, keys):
        """The hash's words from the memo stream of ``HASH_MEMO``, then the permanent stage's from that of the
        bucket (8 bytes, little-endian): the same device and bucket always get the same permanent response."""
        data = self.input_domain.validate(values)
        checked = checked_keys(keys, len(data))
        size = self._chunk()
        for start in range(0, len(data), size):
            part, part_keys = data[start:start + size], checked[start:start + size]
            hash_words = memo_words(self.fingerprint, [HASH_MEMO] * len(part), part_keys, HASH_WORDS)
            a, b = self._hash(hash_words)
            buckets = self._bucket(a, b, part)
            stage_words = memo_words(self.fingerprint, [int(z).to_bytes(8, "little") for z in buckets], part_keys,
                                     GRR_WORDS)
            yield part, np.concatenate([hash_words, stage_words], axis=1)

    def _permanent(self, values, words):
        a, b = self._hash(words)
        out = np.empty(len(values), dtype=self.report_dtype)
        out["a"], out["b"] = a, b
        out["y"] = grr_stage(self._bucket(a, b, values), self.g, self.stages.permanent_threshold,
                             words[:, HASH_WORDS:])
        return out

    def _instantaneous(self, permanent, rng):
        words = rng.integers(0, WORD, size=(len(permanent), GRR_WORDS), dtype=np.uint32)
        out = permanent.copy()
        out["y"] = grr_stage(permanent["y"].astype(np.int64), self.g, self.stages.instantaneous_threshold, words)
        return out

    def empty_reports(self) -> npt.NDArray[np.void]:
        return np.zeros(0, dtype=self.report_dtype)

    # -- server side ---------------------------------------------------------------------------------------------

    def _fields(self, reports):
        structured_reports(reports, self.report_dtype)
        a = index_array(reports["a"], HASH_PRIME, "reports['a']")
        if (a == 0).any():
            raise ValidationError(f"reports['a'][{int(np.argmax(a == 0))}] is 0; the hash multiplier a must lie in "
                                  f"1..{HASH_PRIME - 1}")
        return a, index_array(reports["b"], HASH_PRIME, "reports['b']"), index_array(reports["y"], self.g,
                                                                                      "reports['y']")

    def _supports(self, reports):
        """Blocks (first value, bool (n, block)): whether each report supports each value, h_{a,b}(v) = y."""
        a, b, y = (field[:, None] for field in self._fields(reports))
        step = max(1, BLOCK // max(1, len(a)))
        for start in range(0, self.k, step):
            yield start, self._bucket(a, b, np.arange(start, min(start + step, self.k))) == y

    def _support(self, reports):
        support = np.zeros(self.k, dtype=np.int64)
        n = 0
        for start, block in self._supports(reports):
            support[start:start + block.shape[1]] = block.sum(axis=0)
            n = block.shape[0]
        return support, n

    def _support_matrix(self, reports):
        blocks = [block for _, block in self._supports(reports)]
        return np.concatenate(blocks, axis=1).astype(float)

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs 0 and 1; classes y = h(0) != h(1), y = h(1) != h(0),
        another y with h(0) != h(1), and h(0) = h(1) (probability ``collision`` for a uniform hash; the realised
        hash is uniform but with probability below 2^-59).

        Returns
        -------
        AuditPlan
            The inputs, the 2 x 4 table of the classes and the classifier of reports into them.
        """
        keep, lie = (float(p) for p in self.stages._keep_lie)
        c = float(self.collision)
        table = np.array([[(1 - c) * keep, (1 - c) * lie, (1 - c) * (self.g - 2) * lie, c],
                          [(1 - c) * lie, (1 - c) * keep, (1 - c) * (self.g - 2) * lie, c]])

        def classify(reports):
            a, b, y = self._fields(reports)
            first, second = self._bucket(a, b, 0), self._bucket(a, b, 1)
            return np.select([first == second, y == first, y == second], [3, 0, 1], 2)

        return AuditPlan(np.array([0, 1]), table, classify, ["x=0", "x=1"],
                         ["y=h(0)", "y=h(1)", "other y", "h(0)=h(1)"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §15): the hash family's prime, the buckets, and the two GRR
        stages' keep thresholds on 32-bit words.

        Returns
        -------
        dict
            ``k``, ``g``, ``prime``, ``permanent_threshold``, ``instantaneous_threshold`` and ``attempts``.
        """
        return {"k": self.k, "g": self.g, "prime": HASH_PRIME, "attempts": ATTEMPTS,
                "permanent_threshold": self.stages.permanent_threshold,
                "instantaneous_threshold": self.stages.instantaneous_threshold}

    def display_name(self) -> str:
        return f"L-OLH, g = {self.g}"


# -- dBitFlipPM -------------------------------------------------------------------------------------------------


class DBitFlipPM(Memoised):
    """dBitFlipPM ([Ding17]; docs/math.md §19.7): the k values fall into ``buckets`` buckets (value v into
    floor(v buckets / k)); each device samples ``d`` distinct bucket indices once (from its key), and reports for
    each sampled index j one bit, 1 with probability p = e^(eps/2) / (e^(eps/2) + 1) when its bucket is j, else
    q = 1 - p, memoised per device and bucket: the same bucket always gives the same report.

    One report is exactly ``epsilon``-LDP, and so is any number of reports while the bucket does not change (they
    are the same report): there is no instantaneous stage (``epsilon_permanent`` equals ``epsilon``). Each distinct
    bucket a device ever holds costs another ``epsilon`` between histories that change bucket in the same rounds;
    whether the bucket changed is not hidden (the report may change when the bucket does, and never otherwise). With
    d = 1 only one of two buckets' bits is ever reported, so the certified epsilon is about epsilon / 2 (the published
    parameters, kept).
    The LIP certificates at a prior are exact: the worst posterior ratio over every report, from the buckets' prior
    masses (docs/math.md §19.7).

    The estimate is of the buckets' frequencies: f_j = (buckets / (n d)) sum over the devices that sampled j of
    (bit - q) / (p - q), unbiased, with the variance of docs/math.md §19.7.

    Parameters
    ----------
    epsilon : float
        The LDP level of one report and of any number of reports of one bucket, in (0, 30].
    k : int
        The number of values, 2 to ``MAX_K``.
    buckets : int
        The number of buckets, 2 to min(k, ``MAX_BUCKETS``).
    d : int
        The bucket indices a device samples and reports, 1 to min(buckets, ``MAX_D``).

    Attributes
    ----------
    threshold : int
        A bit of another bucket is 1 when its word is below ``threshold``, the device's own bucket's bit when its
        word is below 2^32 - ``threshold``.
    p, q : float
        The realised Pr[bit = 1] of the device's bucket and of another.

    Raises
    ------
    ValidationError
        An epsilon, k, buckets or d out of range.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.DBitFlipPM(2.0, k=8, buckets=4, d=2)
    >>> mechanism.verify().passed, round(mechanism.verify().epsilon, 6)
    (True, 2.0)
    >>> keys = mechanism.device_keys(40_000, rng=0)
    >>> values = np.random.default_rng(1).choice(8, size=40_000, p=[0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    >>> np.round(mechanism.estimate(mechanism.perturb_memoised(values, keys)).values, 2)
    array([0.4 , 0.21, 0.2 , 0.2 ])
    """

    family = "dbitflip"
    epsilon_range = (0.0, MAX_EPSILON)
    parameter_rules = (("k", f"integer in 2..{MAX_K}"), ("buckets", f"integer in 2..min(k, {MAX_BUCKETS})"),
                       ("d", f"integer in 1..min(buckets, {MAX_D})"))
    client_cost = f"O(d) per report ({INDEX_ATTEMPTS + 1} d words, all through the memo's ChaCha20 blocks)"
    q: float  # annotation only: always set (``_probabilities``)

    def __init__(self, epsilon: float, k: int, buckets: int, d: int) -> None:
        self._epsilons(epsilon, epsilon, k)
        self.buckets = integer(buckets, "buckets", low=2, high=min(self.k, MAX_BUCKETS))
        self.d = integer(d, "d", low=1, high=min(self.buckets, MAX_D))
        bound = exp_bounds(self.epsilon)[0]

        def within(t: int) -> bool:  # the realised ((2^32 - t) / t)^2 <= e^eps, exactly
            return (WORD - t) ** 2 * bound.denominator <= bound.numerator * t * t

        t = max(1, math.floor(WORD / (1 + math.exp(self.epsilon / 2))))
        while not within(t):
            t += 1
        while t > 1 and within(t - 1):
            t -= 1
        self.threshold = t
        self.permanent_words = self.d * (INDEX_ATTEMPTS + 1)
        self._probabilities()

    @classmethod
    def example(cls) -> Self:
        return cls(2.0, 6, 3, 2)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "k": self.k, "buckets": self.buckets, "d": self.d}

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LDP", self.epsilon, EXACT_TABLE,
                         "one report, and any number of reports of one bucket (memoised: the same report); each "
                         "distinct bucket a device holds costs another epsilon, and a change of bucket is visible "
                         "(docs/math.md §19.7)")

    @property
    def report_bits(self) -> int:
        return self.d * (math.ceil(math.log2(self.buckets)) + 1)

    def bucket_of(self, values: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The bucket of each value, floor(v buckets / k).

        Parameters
        ----------
        values : array_like of int
            Values in 0..k-1.

        Returns
        -------
        numpy.ndarray
            int64, the buckets.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.DBitFlipPM(1.0, k=6, buckets=4, d=1).bucket_of([0, 1, 2, 3, 4, 5]).tolist()
        [0, 0, 1, 2, 2, 3]
        """
        return self.input_domain.validate(values) * self.buckets // self.k

    # -- privacy ----------------------------------------------------------------------------------------------------

    @property
    def _keep_lie(self) -> tuple[Fraction, Fraction]:
        return Fraction(WORD - self.threshold, WORD), Fraction(self.threshold, WORD)

    @property
    def _permanent_keep_lie(self) -> tuple[Fraction, Fraction]:
        return self._keep_lie

    def _exact_table(self, keep_lie):
        """The 2 x 9 reduction (docs/math.md §19.7): rows a value of bucket 0 and one of bucket 1; columns neither
        index sampled, only index 0 (bit 0, 1), only index 1 (bit 0, 1), both (bits of 0 and 1: 00, 01, 10, 11),
        with a uniform d-subset's probabilities (columns of probability 0 when d = 1 or d = buckets)."""
        p, q = keep_lie
        b, d = self.buckets, self.d
        pairs = b * (b - 1)
        neither, one, both = (Fraction((b - d) * (b - d - 1), pairs), Fraction(d * (b - d), pairs),
                              Fraction(d * (d - 1), pairs))

        def row(first, second):  # Pr[bit 1] of index 0 and of index 1
            bits = [1 - first, first], [1 - second, second]
            return ([neither] + [one * bits[0][s] for s in (0, 1)] + [one * bits[1][s] for s in (0, 1)]
                    + [both * bits[0][s] * bits[1][t] for s in (0, 1) for t in (0, 1)])

        return np.array([row(p, q), row(q, p)], dtype=object)

    def _masses(self, prior: Sequence[Fraction]) -> list[Fraction]:
        masses = [Fraction(0)] * self.buckets
        for value, mass in enumerate(prior):
            masses[value * self.buckets // self.k] += mass
        return masses

    def _lip_ratio(self, p: Fraction, q: Fraction, prior: Sequence[Fraction]) -> tuple[Fraction, str, int]:
        """The worst posterior ratio Pr[X = x | report] / P_x or its inverse over every report (docs/math.md §19.7):
        for each bucket u, the report that samples u (or not) and the d - 1 (or d) heaviest other buckets, with the
        bits that push the ratio furthest."""
        high, low = p / q, (1 - p) / (1 - q)
        masses = self._masses(prior)
        order = sorted(range(self.buckets), key=lambda u: -masses[u])
        rank = {u: position for position, u in enumerate(order)}
        prefix = [Fraction(0)]
        for u in order:
            prefix.append(prefix[-1] + masses[u])

        def heaviest(count, u):  # the mass of the `count` heaviest buckets other than u
            return prefix[count] if rank[u] >= count else prefix[count + 1] - masses[u]

        best = (Fraction(0), "upper", 0)
        for u in range(self.buckets):
            own, candidates = masses[u], []
            rest = heaviest(self.d - 1, u)  # u sampled, with d - 1 others
            candidates.append((high / (own * high + rest * low + (1 - own - rest)), "upper"))
            candidates.append(((own * low + rest * high + (1 - own - rest)) / low, "inverse"))
            if self.d < self.buckets:  # u not sampled: d others
                rest = heaviest(self.d, u)
                candidates.append((1 / (own + rest * low + (1 - own - rest)), "upper"))
                candidates.append((own + rest * high + (1 - own - rest), "inverse"))
            for ratio, side in candidates:
                if ratio > best[0]:
                    best = (ratio, side, -(-u * self.k // self.buckets))  # the smallest value of bucket u
        return best

    # -- device side ------------------------------------------------------------------------------------------------

    def _indices(self, words):
        """d distinct indices in 0..buckets-1 per device from d INDEX_ATTEMPTS words: a partial Fisher-Yates shuffle
        of 0..buckets-1, step i swapping position i with i + ``bounded`` (its words, buckets - i), tracked sparsely
        (the positions swapped so far and what they hold)."""
        n, d = len(words), self.d
        rows = np.arange(n)
        chosen, positions, held = (np.empty((n, d), dtype=np.int64) for _ in range(3))

        def current(where, step):  # what position `where` holds before step `step`
            match = positions[:, :step] == where[:, None]
            last = step - 1 - match[:, ::-1].argmax(axis=1) if step else np.zeros(n, dtype=np.int64)
            return np.where(match.any(axis=1), held[rows, last], where)

        for i in range(d):
            target = i + bounded(words[:, i * INDEX_ATTEMPTS:(i + 1) * INDEX_ATTEMPTS], self.buckets - i)
            chosen[:, i] = current(target, i)
            held[:, i] = current(np.full(n, i), i)
            positions[:, i] = target
        return chosen

    def _bits(self, indices, buckets, words):
        own = indices == buckets[:, None]
        return (words < np.where(own, np.uint32(WORD - self.threshold), np.uint32(self.threshold))).astype(np.int64)

    def _memo_words(self, values, keys):
        """The indices' words from the memo stream of ``INDEX_MEMO``, then the bits' from that of the bucket (8
        bytes, little-endian): the same device and bucket always give the same report."""
        data = self.input_domain.validate(values)
        checked = checked_keys(keys, len(data))
        size = self._chunk()
        split = self.d * INDEX_ATTEMPTS
        for start in range(0, len(data), size):
            part, part_keys = data[start:start + size], checked[start:start + size]
            index_words = memo_words(self.fingerprint, [INDEX_MEMO] * len(part), part_keys, split)
            bit_words = memo_words(self.fingerprint, [int(u).to_bytes(8, "little") for u in self.bucket_of(part)],
                                   part_keys, self.d)
            yield part, np.concatenate([index_words, bit_words], axis=1)

    def _permanent(self, values, words):
        split = self.d * INDEX_ATTEMPTS
        indices = self._indices(words[:, :split])
        return np.concatenate([indices, self._bits(indices, self.bucket_of(values), words[:, split:])], axis=1)

    def _instantaneous(self, permanent, rng):
        return permanent  # no instantaneous stage: the memoised report is sent as it is

    def empty_reports(self) -> npt.NDArray[np.int64]:
        return np.zeros((0, 2 * self.d), dtype=np.int64)

    # -- server side ------------------------------------------------------------------------------------------------

    def _fields(self, reports):
        """(indices, bits) of reports int (n, 2 d): the d sampled indices, then their d bits; checked."""
        array = np.asarray(reports)
        if array.ndim != 2 or array.shape[1] != 2 * self.d:
            raise ValidationError(f"reports has shape {array.shape}; a dBitFlipPM report is {2 * self.d} integers "
                                  f"(the d = {self.d} sampled indices, then their bits), as perturb returns")
        indices = index_array(array[:, :self.d], self.buckets, "reports' indices")
        bits = index_array(array[:, self.d:], 2, "reports' bits")
        repeated = (np.diff(np.sort(indices, axis=1), axis=1) == 0).any(axis=1)
        if repeated.any():
            raise ValidationError(f"reports[{int(np.argmax(repeated))}] samples an index twice; the d indices of a "
                                  "report are distinct")
        return indices, bits

    def _statistics(self, reports):
        indices, bits = self._fields(reports)
        ones = np.bincount(indices[bits == 1], minlength=self.buckets)
        return len(indices), {"ones": ones, "sampled": np.bincount(indices.ravel(), minlength=self.buckets)}

    def _estimate(self, aggregate, method):
        """f_j = (buckets / (n d)) (ones_j - q sampled_j) / (p - q) (docs/math.md §19.7)."""
        scale = self.buckets / (aggregate.n * self.d * (self.p - self.q))
        return scale * (aggregate["ones"] - self.q * aggregate["sampled"])

    def estimate(self, reports: npt.ArrayLike | Aggregate, *, method: str | None = None,
                 consistency: str | None = None) -> Estimate:
        """The buckets' frequencies from reports or their Aggregate, with plug-in standard errors (the variance at
        the Norm-Sub projection of the estimate, docs/math.md §19.7).

        Parameters
        ----------
        reports : array_like or Aggregate
            Reports as ``perturb`` returns them, or their Aggregate.
        method : {"unbiased"}, optional
            The estimator.
        consistency : {"norm-sub"}, optional
            Project the estimate onto the simplex.

        Returns
        -------
        Estimate
            One frequency per bucket.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.DBitFlipPM(2.0, k=6, buckets=3, d=2)
        >>> mechanism.estimate(mechanism.perturb([0, 2, 4] * 1000, rng=0)).names
        ['bucket[0]', 'bucket[1]', 'bucket[2]']
        """
        aggregate = self._aggregate_of(reports)
        method = self._method(method)
        consistency = None if consistency is None else choice(consistency, "consistency", CONSISTENCY)
        raw = self._estimate(aggregate, method)
        n = aggregate.n

        def errors():
            return np.sqrt(self._bucket_variance(norm_sub(raw), n))

        return Estimate(self._consistent(raw, consistency), errors, n=n, method=method, names=self.estimand_names(),
                        raw=raw, note=PLUG_IN)

    def _bucket_frequencies(self, frequencies):
        return np.bincount(np.arange(self.k) * self.buckets // self.k, weights=frequencies, minlength=self.buckets)

    def _bucket_variance(self, masses, n):
        """Var f_j = [F_j ((b/d)(1 + p(1-p)/(p-q)^2) - 1) + (1 - F_j) (b/d) q(1-q)/(p-q)^2] / n (docs/math.md §19.7)."""
        spread, share = (self.p - self.q) ** 2, self.buckets / self.d
        own = share * (1 + self.p * (1 - self.p) / spread) - 1
        other = share * self.q * (1 - self.q) / spread
        return (masses * own + (1 - masses) * other) / n

    def _expected(self, frequencies, method, user_ids):
        return self._bucket_frequencies(frequencies)

    def _variance(self, frequencies, n, method, user_ids):
        return self._bucket_variance(self._bucket_frequencies(frequencies), n)

    def estimand(self, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """The buckets' frequencies among ``values``.

        Parameters
        ----------
        values : array_like of int
            One value per device.

        Returns
        -------
        numpy.ndarray
            float (buckets,).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.DBitFlipPM(1.0, k=4, buckets=2, d=1).estimand([0, 1, 3, 3]).tolist()
        [0.5, 0.5]
        """
        buckets = self.bucket_of(values)
        return np.bincount(buckets, minlength=self.buckets) / max(1, buckets.size)

    def estimand_names(self) -> list[str]:
        return [f"bucket[{j}]" for j in range(self.buckets)]

    def user_terms(self, reports: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Each report's term of the unbiased estimate, (buckets / d) (bit_j - q) / (p - q) for each sampled index j
        and 0 for the others: the estimate is their mean (``lipdesign.rounds`` combines rounds from them).

        Parameters
        ----------
        reports : array_like
            One round's reports.

        Returns
        -------
        numpy.ndarray
            float (n, buckets).

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.DBitFlipPM(2.0, k=6, buckets=3, d=2)
        >>> reports = mechanism.perturb([0, 2, 4] * 500, rng=0)
        >>> bool(np.allclose(mechanism.user_terms(reports).mean(axis=0), mechanism.estimate(reports).values))
        True
        """
        indices, bits = self._fields(reports)
        terms = np.zeros((len(indices), self.buckets))
        terms[np.arange(len(indices))[:, None], indices] = (self.buckets / self.d) * (bits - self.q) / (self.p - self.q)
        return terms

    def rounds_variance(self, frequencies: npt.ArrayLike | None = None, n: int = 1, rounds: int = 1
                        ) -> npt.NDArray[np.float64]:
        """The variance of the average of ``rounds`` rounds of the same devices with unchanged values: one round's,
        whatever the rounds, since every round repeats the same reports (docs/math.md §19.7).

        Parameters
        ----------
        frequencies : array_like, optional
            The devices' value frequencies (default uniform).
        n : int, default 1
            The devices.
        rounds : int, default 1
            The rounds averaged.

        Returns
        -------
        numpy.ndarray
            float (buckets,).

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.DBitFlipPM(2.0, k=6, buckets=3, d=2)
        >>> bool(np.allclose(mechanism.rounds_variance(rounds=10), mechanism.variance()))
        True
        """
        integer(rounds, "rounds", low=1)
        f = (np.full(self.k, 1.0 / self.k) if frequencies is None else
             probability_vector(frequencies, "frequencies", length=self.k))
        return self._bucket_variance(self._bucket_frequencies(f), integer(n, "n", low=1))

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): a value of bucket 0 and one of bucket 1; classes as the
        ``privacy_table``'s columns (which of indices 0 and 1 are sampled, and their bits).

        Returns
        -------
        AuditPlan
            The inputs, the ``privacy_table`` and the classifier of reports into its columns.
        """
        def classify(reports):
            indices, bits = self._fields(reports)
            first, second = indices == 0, indices == 1
            bit0, bit1 = (bits * first).sum(axis=1), (bits * second).sum(axis=1)
            s0, s1 = first.any(axis=1), second.any(axis=1)
            return np.select([s0 & s1, s0, s1], [5 + 2 * bit0 + bit1, 1 + bit0, 3 + bit1], 0)

        names = ["neither", "0:bit 0", "0:bit 1", "1:bit 0", "1:bit 1", "both 00", "both 01", "both 10", "both 11"]
        return AuditPlan(np.array([0, -(-self.k // self.buckets)]), self.privacy_table(), classify,
                         ["bucket 0", "bucket 1"], names)

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §15): the buckets, the indices sampled, the bits' threshold
        and the uniform draws per index.

        Returns
        -------
        dict
            ``k``, ``buckets``, ``d``, ``threshold`` and ``attempts``.
        """
        return {"k": self.k, "buckets": self.buckets, "d": self.d, "threshold": self.threshold,
                "attempts": INDEX_ATTEMPTS}

    def display_name(self) -> str:
        return f"dBitFlipPM, {self.buckets} buckets, d = {self.d}"


__all__ = ["DBitFlipPM", "HASH_MEMO", "HASH_WORDS", "INDEX_ATTEMPTS", "INDEX_MEMO", "LongitudinalOLH", "MAX_BUCKETS",
           "MAX_D", "bounded", "exact_collision"]
