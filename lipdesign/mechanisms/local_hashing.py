"""Local hashing designed for a prior under eps-LIP (docs/math.md §7.2): each user hashes the domain into two
buckets with a public random hash and sends the hash's seed and one bit from a binary channel chosen by the
bucket's prior mass. Numpy and the standard library only."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.errors import ValidationError, VerificationError
from lipdesign.mechanisms.aggregate import Aggregate
from lipdesign.mechanisms.audit_plan import index_plan
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee
from lipdesign.mechanisms.closed_forms import cell_flips
from lipdesign.mechanisms.designed import DesignedMechanism
from lipdesign.mechanisms.estimate import Estimate, shrinkage_note
from lipdesign.mechanisms.olh import hash_collision
from lipdesign.mechanisms.postprocess import CONSISTENCY
from lipdesign.mechanisms.sampling import BLOCK, realized_probability, structured_reports
from lipdesign.model import Prior, PriorSet
from lipdesign.notions import LIP, notion_from_dict
from lipdesign.validation import choice, fmt, index_array, integer
from lipdesign.verification.exact import verify_table
from lipdesign.verification.local_hashing import cell_certificate

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.audit_plan import AuditPlan
    from lipdesign.mechanisms.table import TableMechanism
    from lipdesign.verification import Certificate

#: Cells of the bucket mass: a hash's channel depends only on the cell its bucket-0 mass falls in.
CELLS = 4096

#: Each cell's channel holds over the cell widened by this much on both sides: more than the floating-point error
#: of a client's bucket mass, at most (2k + 2) 2^-53 for k <= MAX_K (docs/math.md §7.2).
WIDEN = 2.0**-27

#: The largest k (so that (2k + 2) 2^-53 < WIDEN, and a x + b < 2^63).
MAX_K = 2**24

#: Averages over the hash family are exact (every hash) up to this many hashes, and over SAMPLED_HASHES hashes
#: drawn with SAMPLE_SEED beyond (their standard error is reported beside them).
EXACT_HASHES = 2**17
SAMPLED_HASHES = 2**14
SAMPLE_SEED = 20261201

#: The MMSE estimate's expectation and variance given the users' values cost O(hashes k^2): built up to this.
MAX_POSTERIOR_WORK = 2**29

#: ``privacy_table`` (every (hash, bit) output as a column) is built up to this many hashes.
MAX_TABLE_HASHES = 2**12


def smallest_prime_at_least(n: int) -> int:
    """The smallest prime >= max(n, 2) (trial division; n <= MAX_K here)."""
    candidate = max(int(n), 2)
    while any(candidate % d == 0 for d in range(2, math.isqrt(candidate) + 1)):
        candidate += 1
    return candidate


@lru_cache(maxsize=16)
def cell_channels(epsilon: float) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], Certificate]:
    """(flip0, flip1, certificate): the realised flip probabilities of buckets 0 and 1 for each of the CELLS cells,
    and the exact Certificate that every cell's channel is eps-LIP at every bucket-0 mass of its widened cell
    (docs/math.md §7.2; prior-independent, so computed once per epsilon)."""
    # realised again here (idempotent): what is verified below and sampled is on the sampler's grid, whatever returns
    flip0, flip1 = (realized_probability(f) for f in cell_flips(epsilon, CELLS, WIDEN, realized_probability))
    for array in (flip0, flip1):
        array.setflags(write=False)
    return flip0, flip1, cell_certificate(epsilon, flip0, flip1, WIDEN)


class LocalHashing(DesignedMechanism):
    """Local hashing with g = 2 designed for a prior under eps-LIP for X (docs/math.md §7.2;
    ``ld.design(prior, ld.LIP(eps), family="hashing")``).

    The hash family is h_s(x) = ((a x + b) mod p) mod 2 with p the smallest prime >= k, seed s in
    [0, p (p - 1)), a = 1 + s // p, b = s % p. A user draws s uniformly (from her own rng), computes
    the prior mass m of bucket 0 (O(k), once), takes the channel of m's cell (``cell_channels``) and reports
    (s, y): y is her bucket, flipped with that bucket's probability. Reports: structured
    [("seed", "<i8"), ("y", "u1")], ceil(log2(p (p - 1))) + 1 bits of information.

    The guarantee is exact for every hash: each cell's realised channel is verified in rational arithmetic at both
    ends of its cell widened by WIDEN, which bounds the client's floating-point error in m (docs/math.md §7.2).
    Estimates: ``"unbiased"`` inverts each report's channel, (t_v - c)/(1 - c) with c the family's collision
    probability, with plug-in standard errors; ``"mmse"`` averages the posteriors Pr[X = x | s, y] (biased toward
    the design prior). Variances are exact averages over the whole family up to EXACT_HASHES hashes (k <= 359) and
    averages over SAMPLED_HASHES seeded hashes beyond (``variance_basis`` says which). Aggregating costs O(n k).

    Parameters
    ----------
    notion : LIP
        ``ld.LIP(eps)`` for X itself (no latent secret, no prior set); eps within ``epsilon_range``.
    prior : Prior or array_like
        The design prior: a Prior, or k >= 2 positive probabilities (k <= MAX_K).
    g : int, default 2
        The number of buckets; only 2 is built.
    provenance : mapping, optional
        The design's record (``baselines``, ``lower_bounds``), as ``ld.design`` writes it; None when built directly.

    Raises
    ------
    ValidationError
        If ``notion`` is not ``ld.LIP`` for X (a secret, a prior set, or LDP: ``ld.mechanisms.OLH`` is the LDP
        member), ``g`` is not 2, epsilon is outside ``epsilon_range``, k is outside 2..MAX_K, or a prior entry is 0.
    VerificationError
        If the cell channels at this epsilon fail their exact certificate.

    See Also
    --------
    lipdesign.design : ``family="hashing"`` designs it (with baselines and lower bounds).
    OLH : Optimised local hashing, its LDP counterpart.
    UnaryEncoding : The designed encoding whose report grows with k.

    Examples
    --------
    A design at a prior of four values (the mechanism is set by the prior and eps; ``baselines=False`` skips the
    comparison with the other families):

    >>> import lipdesign as ld
    >>> import numpy as np
    >>> prior = ld.Prior([0.1, 0.2, 0.3, 0.4])
    >>> mech = ld.design(prior, ld.LIP(1.0), family="hashing", baselines=False)
    >>> type(mech).__name__, mech.prime, mech.hashes, mech.report_bits
    ('LocalHashing', 5, 20, 6)
    >>> certificate = mech.certificate  # exact, for every hash
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 1.0)

    Each user sends the seed of her hash and one bit; the aggregate of the reports gives the estimate:

    >>> rng = np.random.default_rng(0)
    >>> values = rng.choice(4, size=20_000, p=prior.probabilities)
    >>> reports = mech.perturb(values, rng=rng)
    >>> reports[:3]
    array([(18, 0), (19, 1), ( 1, 1)], dtype=[('seed', '<i8'), ('y', 'u1')])
    >>> estimate = mech.estimate(mech.aggregate(reports))
    >>> np.round(estimate.values, 3)
    array([0.102, 0.182, 0.306, 0.4  ])
    >>> np.round(np.bincount(values) / values.size, 3)  # the truth
    array([0.102, 0.191, 0.305, 0.403])
    >>> np.round(estimate.standard_errors, 3)
    array([0.009, 0.009, 0.009, 0.009])
    """

    family = "hashing"
    design_family = "hashing"
    client_cost = "O(k) per user (hash the domain, sum the prior of bucket 0), then O(1)"
    methods = ("unbiased", "mmse", "gls", "mle")
    report_dtype = np.dtype([("seed", "<i8"), ("y", "u1")])
    # set by _record in __init__ (an annotation only, for the type checker: never None here)
    provenance: Mapping[str, Any]

    def __init__(self, notion: LIP, prior: Prior | npt.ArrayLike, *, g: int = 2,
                 provenance: Mapping[str, Any] | None = None) -> None:
        self.prior = prior if isinstance(prior, Prior) else Prior(prior)
        if not isinstance(notion, LIP) or notion.secret is not None or notion.prior_set is not None:
            raise ValidationError(f"notion is {notion!r}; local hashing is designed under ld.LIP(eps) for X itself "
                                  "(latent secrets and prior sets are not built for it yet; ld.mechanisms.OLH is its "
                                  "LDP member)")
        if integer(g, "g", low=2) != 2:
            raise ValidationError(f"g is {fmt(g)}; local hashing under LIP is built for g = 2 (the closed form of "
                                  "docs/math.md §6 per hash); g > 2 needs a ray LP per hash, not built yet")
        self.notion, self.g = notion, 2
        self.checked_epsilon(notion.epsilon)
        self.k = integer(self.prior.k, "prior size", low=2, high=MAX_K)
        if (self.prior.probabilities <= 0).any():
            x = int(np.argmin(self.prior.probabilities))
            raise ValidationError(f"prior[{x}] is 0; LIP needs every value to have positive probability")
        self.input_domain = self.prior.domain
        self.prime = smallest_prime_at_least(self.k)
        self.hashes = self.prime * (self.prime - 1)
        self.collision = hash_collision(2, self.prime)
        self._weights = self.prior.probabilities / self.prior.probabilities.sum()
        self._weights.setflags(write=False)
        self.flip0, self.flip1, claimed = cell_channels(self.epsilon)
        if not claimed.passed:
            raise VerificationError(f"the cell channels are not LIP with eps={self.epsilon:g}: {claimed.summary()}")
        self._record(claimed, {"claimed": claimed.epsilon, "LIP for X": claimed.epsilon}, provenance)

    @cached_property
    def _design_figures(self):
        return self._family_average(self.prior.probabilities, errors=True)

    def _design_figure(self):
        """n x sum Var of the unbiased estimate at the design prior, given the users' values (docs/math.md §7.2),
        averaged over the hash family as ``variance_basis`` says."""
        return self._design_figures["variance_total"]

    @property
    def mse_error(self) -> float:
        """The Monte Carlo standard error of ``mse`` (0 when averaged over every hash)."""
        return self._design_figures["variance_total_error"]

    @property
    def bayes_risk(self) -> float:
        """The histogram MSE per user of the posterior mean at the design prior, 1 - E||posterior||^2.

        Averaged over the hash family as ``variance_basis`` says; ``bayes_risk_error`` is its Monte Carlo error.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mech = ld.mechanisms.LocalHashing(ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> round(mech.bayes_risk, 4), mech.bayes_risk_error
        (0.6026, 0.0)
        """
        return self._design_figures["bayes_risk"]

    @property
    def bayes_risk_error(self) -> float:
        """The Monte Carlo standard error of ``bayes_risk`` (0 when averaged over every hash)."""
        return self._design_figures["bayes_risk_error"]

    # -- the hash family ----------------------------------------------------------------------------------------
    def _seeds(self, seeds, field="seed"):
        return index_array(seeds, self.hashes, field)

    def _in_zero(self, seeds):
        """1.0 where a value falls in bucket 0 under a hash, else 0.0: shape (seeds, k), floats for the products
        below (int32 arithmetic while p^2 < 2^31, int64 beyond: a x + b < p^2 < 2^63)."""
        kind = np.int32 if self.prime < 46_341 else np.int64
        a, b = (1 + seeds // self.prime).astype(kind), (seeds % self.prime).astype(kind)
        residues = (a[:, None] * np.arange(self.k, dtype=kind) + b[:, None]) % kind(self.prime)
        return (1 - (residues & 1)).astype(float)

    def _flips(self, in_zero):
        """(mass, flip0, flip1) of each hash: the bucket-0 prior mass (a sum of positive floats, so within
        (2k + 2) 2^-53 of the exact mass, docs/math.md §7.2) and the realised flips of its cell's channel (the
        client's computation)."""
        # added left to right (not a BLAS product, whose order varies): a device adds the same doubles in the same
        # order, so it lands in the same cell (docs/runtime.md)
        mass = np.cumsum(in_zero * self._weights, axis=1)[:, -1]
        cell = np.clip(np.floor(mass * CELLS).astype(np.int64), 0, CELLS - 1)
        return mass, self.flip0[cell], self.flip1[cell]

    def hash_values(self, seed: int) -> npt.NDArray[np.int64]:
        """The bucket (0 or 1) of every input value under the hash with this seed.

        Parameters
        ----------
        seed : int
            The hash's seed s, in 0 .. p (p - 1) - 1 (``hashes``): h_s(x) = ((a x + b) mod p) mod 2 with
            a = 1 + s // p, b = s % p.

        Returns
        -------
        numpy.ndarray
            k integers, each value's bucket.

        Raises
        ------
        ValidationError
            If ``seed`` is not an integer in 0 .. hashes - 1.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mech = ld.mechanisms.LocalHashing(ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> mech.hash_values(7)
        array([0, 0, 1, 1])
        """
        seeds = np.array([integer(seed, "seed", low=0, high=self.hashes - 1)])
        return 1 - self._in_zero(seeds)[0].astype(np.int64)

    def channel(self, seed: int) -> npt.NDArray[np.float64]:
        """The 2 x 2 table (rows: buckets, columns: the bit y) that the hash with this seed samples, as realised.

        The channel is the one of the cell that the prior mass of the hash's bucket 0 falls in (docs/math.md §7.2).

        Parameters
        ----------
        seed : int
            The hash's seed, in 0 .. ``hashes`` - 1.

        Returns
        -------
        numpy.ndarray
            2 x 2 floats, row z = Pr[y | bucket z] (each row sums to 1).

        Raises
        ------
        ValidationError
            If ``seed`` is not an integer in 0 .. hashes - 1.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> mech = ld.mechanisms.LocalHashing(ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> np.round(mech.channel(7), 3)  # values 0, 1 in bucket 0 (mass 0.3), values 2, 3 in bucket 1
        array([[0.742, 0.258],
               [0.11 , 0.89 ]])
        """
        _, f0, f1 = self._flips(1.0 - self.hash_values(seed)[None, :])
        return np.array([[1.0 - f0[0], f0[0]], [f1[0], 1.0 - f1[0]]])

    @property
    def report_bits(self) -> int:
        """The seed and the bit: ceil(log2(2 p (p - 1)))."""
        return math.ceil(math.log2(2 * self.hashes))

    @property
    def step(self) -> int:
        """Hashes (or reports) per block, so that a block's (hashes, k) arrays stay near BLOCK entries."""
        return max(1, BLOCK // self.k)

    # -- the contract -------------------------------------------------------------------------------------------
    @property
    def guarantee(self) -> Guarantee:
        return Guarantee(self.notion.kind, self.epsilon, EXACT_TABLE,
                         f"every hash: the {CELLS} cell channels, exactly, at both ends of each cell widened by "
                         "2^-27, beyond the client's floating-point error in the bucket mass (docs/math.md §7.2)")

    def privacy_table(self, max_hashes: int = MAX_TABLE_HASHES) -> npt.NDArray[np.float64]:
        """The whole mechanism as a k x (2 p (p - 1)) table, column (s, y) = Pr[seed s, bit y | x].

        For audits at small k: ``ld.verify(table, ld.LIP(eps), prior)`` then checks the guarantee by brute force.
        In floats: each entry is rounded once in the division by the number of hashes (``exact_table`` has the
        realised numbers).

        Parameters
        ----------
        max_hashes : int, default MAX_TABLE_HASHES
            The most hashes the table is built for (2 columns each).

        Returns
        -------
        numpy.ndarray
            k x 2 p (p - 1) floats; column 2 s + y is the report (s, y), each row sums to 1.

        Raises
        ------
        ValidationError
            If the family has more than ``max_hashes`` hashes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.Prior([0.1, 0.2, 0.3, 0.4])
        >>> mech = ld.mechanisms.LocalHashing(ld.LIP(1.0), prior)
        >>> table = mech.privacy_table()
        >>> table.shape
        (4, 40)
        >>> certificate = ld.verify(table, ld.LIP(1.0), prior)
        >>> certificate.passed, round(certificate.epsilon, 4)
        (True, 1.0)
        """
        return self._channels(max_hashes) / self.hashes

    def exact_table(self, max_hashes: int = MAX_TABLE_HASHES) -> npt.NDArray[np.object_]:
        """``privacy_table`` as the sampler realises it, an object array of Fractions.

        Pr[seed s] = 1 / (p (p - 1)) exactly (``integers`` is exactly uniform) times Pr[bit y | x, s], the realised
        flips (exact doubles on the 2^-53 grid).

        Parameters
        ----------
        max_hashes : int, default MAX_TABLE_HASHES
            The most hashes the table is built for.

        Returns
        -------
        numpy.ndarray
            k x 2 p (p - 1) Fractions (dtype object); every row sums to exactly 1.

        Raises
        ------
        ValidationError
            If the family has more than ``max_hashes`` hashes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mech = ld.mechanisms.LocalHashing(ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> table = mech.exact_table()
        >>> table.shape, [sum(row) for row in table]
        ((4, 40), [Fraction(1, 1), Fraction(1, 1), Fraction(1, 1), Fraction(1, 1)])
        """
        channels = self._channels(max_hashes)
        values, where = np.unique(channels, return_inverse=True)  # a few distinct flips: one Fraction each
        exact = np.array([Fraction(float(value)) / self.hashes for value in values], dtype=object)
        return exact[where.reshape(channels.shape)]

    def _channels(self, max_hashes):
        """Pr[bit y | x, seed s] as realised (exact doubles), k x (2 p (p - 1)), column 2 s + y."""
        if self.hashes > max_hashes:
            raise ValidationError(f"k is {self.k}; the full table has 2 p (p - 1) = {2 * self.hashes} columns, built "
                                  f"for at most {max_hashes} hashes")
        seeds = np.arange(self.hashes)
        in_zero = self._in_zero(seeds)  # (hashes, k)
        _, f0, f1 = self._flips(in_zero)
        flip = np.where(in_zero == 1, f0[:, None], f1[:, None])  # Pr[y != bucket]
        ones = np.where(in_zero == 0, 1.0 - flip, flip)  # Pr[y = 1 | x, s]: 1 - flip is exact on the grid
        return np.stack([1.0 - ones, ones], axis=2).transpose(1, 0, 2).reshape(self.k, -1)

    def certificate_at(self, prior: Prior | PriorSet | npt.ArrayLike) -> Certificate:
        """The exact Certificate of eps-LIP for X at ``prior``, another prior than the design's.

        Verified in rational arithmetic on the whole table as the sampler realises it (``exact_table``; up to
        MAX_TABLE_HASHES hashes). What ``ld.verify(mech, prior=...)`` returns.

        Parameters
        ----------
        prior : Prior, PriorSet or array_like
            A Prior, k probabilities, or a PriorSet (the worst over the set).

        Returns
        -------
        Certificate
            Whether the mechanism is eps-LIP at ``prior``, and its exact epsilon there.

        Raises
        ------
        ValidationError
            If ``prior`` is not a distribution over the k values, or the family has more than MAX_TABLE_HASHES
            hashes.

        Examples
        --------
        The design holds at its prior; at the uniform prior its epsilon is larger:

        >>> import lipdesign as ld
        >>> mech = ld.mechanisms.LocalHashing(ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> certificate = mech.certificate_at(ld.Prior([0.25, 0.25, 0.25, 0.25]))
        >>> certificate.passed, round(certificate.epsilon, 4)
        (False, 1.3513)
        """
        if isinstance(prior, PriorSet):
            return verify_table(self.exact_table(), LIP(self.epsilon, prior_set=prior), self.prior, exact=True)
        return verify_table(self.exact_table(), LIP(self.epsilon), prior, exact=True)

    def parameters(self) -> dict[str, Any]:
        return {"prior": self.prior.to_dict(), "notion": self.notion.to_dict(), "g": self.g}

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> Self:
        notion = cast(LIP, notion_from_dict(parameters["notion"]))  # the constructor refuses any other notion
        return cls(notion, Prior.from_dict(parameters["prior"]), g=parameters["g"],
                   provenance=provenance)

    @classmethod
    def example(cls) -> Self:
        return cls(LIP(1.0), Prior([0.1, 0.2, 0.3, 0.4]))

    def empty_reports(self) -> npt.NDArray[Any]:
        return np.zeros(0, dtype=self.report_dtype)

    def _perturb(self, values, rng, user_ids):
        out = np.empty(values.size, dtype=self.report_dtype)
        out["seed"] = rng.integers(0, self.hashes, size=values.size)  # 0..hashes-1 (exclusive upper bound)
        for start in range(0, values.size, self.step):
            block = slice(start, start + self.step)
            in_zero = self._in_zero(out["seed"][block])
            _, f0, f1 = self._flips(in_zero)
            own = 1 - in_zero[np.arange(in_zero.shape[0]), values[block]].astype(np.uint8)  # her bucket
            flip = np.where(own == 0, f0, f1)  # on the 2^-53 grid: random() < flip realises it exactly
            out["y"][block] = own ^ (rng.random(own.size) < flip)
        return out

    def _reports(self, reports):
        structured_reports(reports, self.report_dtype)
        seeds = self._seeds(reports["seed"], "reports['seed']")
        return seeds, index_array(reports["y"], 2, "reports['y']")

    @staticmethod
    def _report_terms(mass, f0, f1, y):
        """Per report (hash mass, flips, bit y), indexed by the bucket z of a value v: t[z], the unbiased estimate
        of 1[h(X) = h(v)] (the 2 x 2 channel inverted: ([y = z] - flip of the other bucket) / (1 - f0 - f1)), and
        likelihood[z] = C[z, y]; and Pr[y] under the design prior, so that Pr[X = v | s, y] = P_v C[h(v), y] / Pr[y]
        (docs/math.md §7.2). Shapes (n, 2), (n, 2), (n,)."""
        flips, y = np.stack([f0, f1], axis=1), y[:, None]
        z = np.arange(2)
        t = ((z == y) - flips[:, ::-1]) / (1.0 - f0 - f1)[:, None]
        likelihood = np.where(z == y, 1.0 - flips, flips)
        return t, likelihood, mass * likelihood[:, 0] + (1.0 - mass) * likelihood[:, 1]

    @staticmethod
    def _by_value(in_zero, terms):
        """sum over rows of terms[row, bucket of v under the row's hash], for every value v: O(rows k), one product."""
        return terms[:, 1].sum() + (terms[:, 0] - terms[:, 1]) @ in_zero

    def _statistics(self, reports):
        seeds, y = self._reports(reports)
        sums, squares, posteriors = (np.zeros(self.k) for _ in range(3))
        for start in range(0, seeds.size, self.step):
            block = slice(start, start + self.step)
            in_zero = self._in_zero(seeds[block])
            mass, flip0, flip1 = self._flips(in_zero)
            t, likelihood, chance = self._report_terms(mass, flip0, flip1, y[block])
            odds = likelihood / chance[:, None]
            sums += self._by_value(in_zero, t)
            squares += self._by_value(in_zero, t * t)
            posteriors += self._by_value(in_zero, odds)
        statistics = {"unbiased_sums": sums, "unbiased_squares": squares, "posterior_sums": posteriors * self._weights}
        if self.hashes <= MAX_TABLE_HASHES:  # the counts of every (seed, bit): what GLS and the MLE need
            statistics["counts"] = np.bincount(2 * seeds + y, minlength=2 * self.hashes)
        return seeds.size, statistics

    def _estimate(self, aggregate, method):
        if method == "mmse":
            return aggregate["posterior_sums"] / aggregate.n
        return (aggregate["unbiased_sums"] / aggregate.n - self.collision) / (1.0 - self.collision)

    def estimate(self, reports: npt.ArrayLike | Aggregate, *, method: str | None = None,
                 consistency: str | None = None) -> Estimate:
        """The frequencies as an ``ld.Estimate``, from reports or from their Aggregate.

        ``"unbiased"`` (default) with plug-in standard errors given the users' values, from the reports' own spread
        (docs/math.md §7.2); ``"mmse"`` without; up to MAX_TABLE_HASHES hashes also ``"gls"`` (the best unbiased
        linear estimate over the whole family) and ``"mle"``, from the counts of every (seed, bit) through the
        equivalent table (``as_table``).

        Parameters
        ----------
        reports : numpy.ndarray or Aggregate
            Structured reports [("seed", "<i8"), ("y", "u1")] from ``perturb``, or their ``aggregate``.
        method : str, optional
            ``"unbiased"`` (None: the default), ``"mmse"``, ``"gls"`` or ``"mle"``.
        consistency : str, optional
            ``"norm-sub"`` makes the frequencies non-negative and sum to 1 (the errors stay those of ``raw``);
            None leaves them as estimated.

        Returns
        -------
        Estimate
            The k frequencies, their standard errors (NaN for ``"mmse"``) and ``raw``, the values before
            ``consistency``.

        Raises
        ------
        ValidationError
            If the reports are malformed or empty, the aggregate is of another mechanism, ``method`` or
            ``consistency`` is not one of the choices, or ``"gls"``/``"mle"`` is asked of a family of more than
            MAX_TABLE_HASHES hashes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> mech = ld.mechanisms.LocalHashing(ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4])
        >>> values = np.repeat([0, 1, 2, 3], [1000, 2000, 3000, 4000])
        >>> reports = mech.perturb(values, rng=np.random.default_rng(1))
        >>> estimate = mech.estimate(reports)  # the truth is 0.1, 0.2, 0.3, 0.4
        >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
        (array([0.093, 0.211, 0.279, 0.375]), array([0.013, 0.013, 0.013, 0.012]))
        >>> gls = mech.estimate(mech.aggregate(reports), method="gls")  # from the counts of every (seed, bit)
        >>> np.round(gls.values, 3), np.round(gls.standard_errors, 3)
        (array([0.1  , 0.221, 0.293, 0.386]), array([0.012, 0.011, 0.011, 0.011]))
        """
        aggregate = self._aggregate_of(reports)
        method = self._method(method)
        consistency = None if consistency is None else choice(consistency, "consistency", CONSISTENCY)
        if method in ("gls", "mle"):
            table = self.as_table()
            counts = Aggregate(table.fingerprint, table.family, aggregate.n, {"counts": aggregate["counts"]})
            found = table.estimate(counts, method="unbiased" if method == "gls" else "mle", consistency=consistency)
            return Estimate(found.values, found.standard_errors, n=found.n, method=method, names=found.names,
                            raw=found.raw, note=found.note)
        raw = self._estimate(aggregate, method)
        errors, note = np.full(self.k, np.nan), ""
        if method == "mmse":
            note = shrinkage_note()
        else:
            n = aggregate.n
            spread = aggregate["unbiased_squares"] / n - (aggregate["unbiased_sums"] / n) ** 2
            # the reports' spread also holds the spread of E[t_v | x] over the users' values, f(1 - f)(1 - c)^2:
            # take it out, to give the error given the users' values (docs/math.md §7.2)
            held = np.clip(raw, 0.0, 1.0)
            spread = np.maximum(spread - held * (1 - held) * (1 - self.collision) ** 2, 0.0)
            errors = np.sqrt(spread / n) / (1.0 - self.collision)
        return Estimate(self._consistent(raw, consistency), errors, n=aggregate.n, method=method,
                        names=self.input_domain.names(), raw=raw, note=note)

    # -- averages over the hash family --------------------------------------------------------------------------
    @property
    def variance_basis(self) -> str:
        """How ``variance``, ``expected_estimate`` and ``mse`` average over the hash family.

        Exactly over every hash up to EXACT_HASHES hashes, else over SAMPLED_HASHES hashes drawn with SAMPLE_SEED.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.LocalHashing(ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4]).variance_basis
        'exact: every one of the 20 hashes'
        """
        if self.hashes <= EXACT_HASHES:
            return f"exact: every one of the {self.hashes} hashes"
        return f"{SAMPLED_HASHES} hashes sampled with seed {SAMPLE_SEED} (of {self.hashes})"

    def _hash_sample(self):
        if self.hashes <= EXACT_HASHES:
            return np.arange(self.hashes)
        return np.random.default_rng(SAMPLE_SEED).integers(0, self.hashes, size=SAMPLED_HASHES)

    def _family_average(self, frequencies, errors=False, posterior_means=False):
        """Averages over the hash family (all of it, or the seeded sample), docs/math.md §7.2: under ``frequencies``
        f, t2[v] = E_f[t_v^2] and posterior2[v] = E_f[pi_v^2] (pi = Pr[X = . | s, y]); with ``posterior_means`` the
        k x k matrix E[pi_v | X = x] (O(hashes k^2)); under the design prior, the Bayes risk; and n x sum Var of the
        unbiased estimate given the users' values. With ``errors``, the Monte Carlo standard errors of the last two
        (0 over the whole family)."""
        seeds = self._hash_sample()
        t2, posterior2 = np.zeros(self.k), np.zeros(self.k)
        means = np.zeros((self.k, self.k)) if posterior_means else None
        variances, risks = [], []
        squares = self._weights**2
        for start in range(0, seeds.size, self.step):
            in_zero = self._in_zero(seeds[start:start + self.step])
            truth = in_zero @ frequencies  # Pr[h(X) = 0 | hash] under f
            mass, f0, f1 = self._flips(in_zero)
            zero_squares = in_zero @ squares  # sum of P_v^2 over bucket 0 (normalised prior)
            block_t2, risk = np.zeros((in_zero.shape[0], 2)), np.zeros(in_zero.shape[0])
            pair = np.zeros((in_zero.shape[0], 2, 2))  # sum_y C[z, y] odds[z', y]
            for bit in (0, 1):
                t, likelihood, prior_chance = self._report_terms(mass, f0, f1, np.full(in_zero.shape[0], bit))
                chance = truth * likelihood[:, 0] + (1.0 - truth) * likelihood[:, 1]  # Pr[y = bit | hash] under f
                odds = likelihood / prior_chance[:, None]
                block_t2 += chance[:, None] * t * t
                posterior2 += self._by_value(in_zero, chance[:, None] * odds**2)
                risk += prior_chance * (zero_squares * odds[:, 0] ** 2
                                        + (squares.sum() - zero_squares) * odds[:, 1] ** 2)
                pair += likelihood[:, :, None] * odds[:, None, :]
            t2 += self._by_value(in_zero, block_t2)
            zeros = in_zero.sum(axis=1)
            variances.append(block_t2[:, 0] * zeros + block_t2[:, 1] * (self.k - zeros))
            risks.append(risk)
            if posterior_means:
                sides = (in_zero, 1.0 - in_zero)
                for z in (0, 1):
                    for other in (0, 1):
                        means += (sides[z] * pair[:, z, other][:, None]).T @ sides[other]
        c, size = self.collision, seeds.size
        # given the users' values, E[t_v | x] is 1 for x = v and c otherwise: subtract sum_x f_x E[t_v | x]^2
        given = frequencies + (1 - frequencies) * c**2
        result = {"t2": t2 / size, "posterior2": posterior2 * squares / size,
                  "bayes_risk": 1.0 - float(np.concatenate(risks).mean()),
                  "variance_total": float((t2 / size - given).sum() / (1 - c) ** 2)}
        if posterior_means:
            result["posterior_means"] = means / size * self._weights
        if errors:
            sampled = self.hashes > EXACT_HASHES
            result["variance_total_error"] = float(np.concatenate(variances).std(ddof=1) / math.sqrt(size)
                                                   / (1 - c) ** 2) if sampled else 0.0
            result["bayes_risk_error"] = float(np.concatenate(risks).std(ddof=1) / math.sqrt(size)) if sampled else 0.0
        return result

    def _check_posterior_means(self):
        work = self._hash_sample().size * self.k**2
        if work > MAX_POSTERIOR_WORK:
            raise ValidationError(f"method is 'mmse'; its expectation and variance given the users' values need "
                                  f"E[posterior | X = x] for every x, O(hashes k^2) = {work:.3g} here (built up to "
                                  f"{MAX_POSTERIOR_WORK:.3g}, k <= about 150): the MMSE estimate is biased toward the "
                                  "prior anyway; use method='unbiased' or mech.bayes_risk")

    def as_table(self) -> TableMechanism:
        """The mechanism as the k x 2 p (p - 1) table of ``privacy_table`` in a verified TableMechanism.

        Report (seed, y) is column 2 seed + y; for GLS and the MLE; up to MAX_TABLE_HASHES hashes (k <= 61).

        Returns
        -------
        TableMechanism
            The equivalent table mechanism, under the same notion at the same prior (built once).

        Raises
        ------
        ValidationError
            If the family has more than MAX_TABLE_HASHES hashes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.LocalHashing(ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4]).as_table()
        TableMechanism(LIP eps=1, frequencies, k=4, 40 outputs)
        """
        return self._table

    @cached_property
    def _table(self):
        from lipdesign.mechanisms.table import TableMechanism

        if self.hashes > MAX_TABLE_HASHES:
            raise ValidationError(f"method needs the whole table; k is {self.k} and the family has {self.hashes} "
                                  f"hashes, more than the {MAX_TABLE_HASHES} it is built for: use method='unbiased'")
        return TableMechanism(self.privacy_table(), self.notion, self.prior)

    def _expected(self, frequencies, method, user_ids):
        if method in ("gls", "mle"):
            return self.as_table().expected_estimate(frequencies, method="unbiased" if method == "gls" else "mle")
        if method == "unbiased":
            return frequencies
        self._check_posterior_means()
        return frequencies @ self._family_average(frequencies, posterior_means=True)["posterior_means"]

    def _variance(self, frequencies, n, method, user_ids):
        if method in ("gls", "mle"):
            return self.as_table().variance(frequencies, n, method="unbiased" if method == "gls" else "mle")
        if method == "unbiased":
            figures = self._family_average(frequencies)
            given = frequencies + (1 - frequencies) * self.collision**2
            return (figures["t2"] - given) / (n * (1 - self.collision) ** 2)
        self._check_posterior_means()
        figures = self._family_average(frequencies, posterior_means=True)
        return (figures["posterior2"] - frequencies @ figures["posterior_means"] ** 2) / n

    @property
    def optimality(self) -> dict[str, Any] | None:
        """The unbiased estimate's figure (``mse``) beside the best lower bound the design recorded, and the gap.

        None when the mechanism was not made by ``ld.design`` (no lower bounds recorded).
        """
        bounds = self.provenance.get("lower_bounds")
        if not bounds:
            return None
        name = max(bounds, key=bounds.get)
        return {"variance": self.mse, "lower_bound": bounds[name], "gap": (self.mse - bounds[name]) / self.mse,
                "bound": name, "bounds": dict(bounds)}

    verified_on = "every hash"
    value_beside_baselines = "local hashing's value is a report of one bit and a seed, designed at any k"

    def _summary_title(self):
        return (f"local hashing, LIP eps={self.epsilon:g}, k={self.k}: a user sends the seed of a public hash into 2 "
                f"buckets (one of {self.hashes}, prime {self.prime}) and her bucket through its channel")

    def _summary_accuracy(self):
        error = f" (+- {self.mse_error:.2g}, sampled hashes)" if self.mse_error else ""
        risk_error = f" (+- {self.bayes_risk_error:.2g})" if self.bayes_risk_error else ""
        return [("  accuracy: n x sum of the variances of the unbiased estimate, at the design prior, given the users' "
                 f"values: {self.mse:.6g}{error}; averaged over hashes: {self.variance_basis}"),
                ("  Bayes risk of the posterior mean at the design prior (histogram MSE per user): "
                 f"{self.bayes_risk:.6g}{risk_error}"),
                f"  report: seed and one bit, {self.report_bits} bits; client cost {self.client_cost}"]

    def _summary_drift(self):
        """Not shown: LIP at another prior needs the whole table of every hash (``ld.verify(mech, prior=...)``)."""
        return []

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads: the whole k x 2 p (p - 1) table, report (seed, y) is class 2 seed + y.

        The privacy table's limit on the number of hashes applies.

        Returns
        -------
        AuditPlan
            One row per value, one output class per (seed, bit).

        Raises
        ------
        ValidationError
            If the family has more than MAX_TABLE_HASHES hashes.
        """
        return index_plan(self, lambda reports: 2 * reports["seed"].astype(np.int64) + reports["y"],
                           [f"seed={s},y={y}" for s in range(self.hashes) for y in (0, 1)])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §5): the prime, the hashes, the bucket weights and each cell's
        flips.

        Returns
        -------
        dict
            ``k``, ``prime``, ``hashes``, ``cells``, ``weights`` (the normalised prior) and ``flip0``, ``flip1``
            (the realised flips of each cell's channel, CELLS each).

        Examples
        --------
        >>> import lipdesign as ld
        >>> numbers = ld.mechanisms.LocalHashing(ld.LIP(1.0), [0.1, 0.2, 0.3, 0.4]).device_numbers()
        >>> numbers["prime"], numbers["hashes"], numbers["cells"], len(numbers["flip0"])
        (5, 20, 4096, 4096)
        """
        return {"k": self.k, "prime": self.prime, "hashes": self.hashes, "cells": self.flip0.size,
                "weights": (self.prior.probabilities / self.prior.probabilities.sum()).tolist(),
                "flip0": self.flip0.tolist(), "flip1": self.flip1.tolist()}

    def display_name(self) -> str:
        return "local hashing (g = 2)"
