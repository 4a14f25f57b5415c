"""Heavy hitters over an open domain: PEM and TreeHist as one-round prefix protocols (docs/math.md §18). Numpy only.

A value is a UTF-8 string of at most L = ``max_bytes`` bytes, padded to L bytes with the byte 0xFF (which no UTF-8
text contains, so the padded bytes determine the string). Level t (0..L-1) is the prefix of t + 1 padded bytes. A
user draws one level and one row of a public pool of hash functions, hashes her prefix at that level into B buckets
with that row's function, and reports the bucket through a frequency oracle: GRR over B = g buckets (PEM, OLH's
sampler) or one Hadamard coefficient's sign, flipped (TreeHist, the Hadamard count-mean sketch's sampler). Given the
level and the row, which do not depend on the value, a report is one oracle report: its epsilon is the oracle's,
certified exactly on what the sampler realises, and each user reports once.

The server's statistics are per (level, row, oracle output) counts, mergeable by addition; from them any candidate
prefix of any level can be estimated later. ``estimate`` extends the prefixes kept at level t by every next byte
that UTF-8 allows, estimates them from level t + 1's users, keeps the largest (PEM) or those above a threshold
(TreeHist), and returns the top strings of the last level with their frequencies and standard errors.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.estimate import Estimate
from lipdesign.mechanisms.hadamard import fwht, parity
from lipdesign.mechanisms.hadamard_sketch import HadamardCountMeanSketch
from lipdesign.mechanisms.hashed_bits import WORD, StringMechanism
from lipdesign.mechanisms.rr import (
    grr_certificate,
    grr_mixing_probability,
    grr_probabilities,
    grr_reduced_table,
    randomized_response,
)
from lipdesign.mechanisms.sampling import MAX_SEED, implemented_exp, structured_reports
from lipdesign.notions import LDP
from lipdesign.strings import MAX_BYTES_LIMIT, bounded, hash_key, mix, string_hash
from lipdesign.validation import index_array, integer, real_number
from lipdesign.verification import verify_table

if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.aggregate import Aggregate

#: The byte that pads a value to L bytes (never part of UTF-8 text).
TERMINATOR = 0xFF

#: The default L of the heavy-hitter families (one level, so one group of users, per byte).
DEFAULT_HH_BYTES = 16

#: Row s of the pool hashes with the key of hash function ROW_OFFSET + s (docs/runtime.md §14); levels use 0..L-1.
ROW_OFFSET = MAX_BYTES_LIMIT

#: The most rows of the pool, and of levels x rows x oracle outputs in the statistics (8 bytes each).
MAX_ROWS = 2**16
MAX_CELLS = 2**26

#: Candidates x rows hashed per block when estimating (8 bytes each).
HASH_BLOCK = 2**22

#: PEM's largest number of buckets g by default (round(e^eps) + 1 below it; docs/math.md §18.3).
MAX_DEFAULT_G = 1024


def padded(data: Sequence[bytes], length: int) -> npt.NDArray[np.uint8]:
    """The strings as an (n, length) uint8 matrix, each padded with TERMINATOR (each at most ``length`` bytes)."""
    lengths = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
    matrix = np.full((len(data), length), TERMINATOR, dtype=np.uint8)
    matrix[np.arange(length)[None, :] < lengths[:, None]] = np.frombuffer(b"".join(data), dtype=np.uint8)
    return matrix


def prefix_hashes(matrix: npt.NDArray[np.uint8], size: int, key: np.uint64) -> npt.NDArray[np.uint64]:
    """``lipdesign.strings.string_hash`` under ``key`` of the first ``size`` bytes of each row of ``matrix``."""
    words = np.zeros((matrix.shape[0], 8 * -(-size // 8)), dtype=np.uint8)
    words[:, :size] = matrix[:, :size]
    return string_hash(words.view("<u8").astype(np.uint64), np.full(matrix.shape[0], size, dtype=np.int64),
                       np.array([key], dtype=np.uint64))[:, 0]


def lead_lengths() -> npt.NDArray[np.int64]:
    """For each byte, the length of the UTF-8 character it starts (0: not a first byte; 0xC0, 0xC1 and 0xF5..0xFF
    start none; a continuation byte 0x80..0xBF none)."""
    lengths = np.zeros(256, dtype=np.int64)
    lengths[:0x80], lengths[0xC2:0xE0], lengths[0xE0:0xF0], lengths[0xF0:0xF5] = 1, 2, 3, 4
    return lengths


def next_bytes(prefixes: npt.NDArray[np.uint8], length: int) -> npt.NDArray[np.bool_]:
    """(C, 256) booleans: which byte may follow each prefix (C, t) of a padded value of ``length`` bytes
    (docs/math.md §18.2): after the terminator only the terminator; inside a character a continuation byte; else a
    character that fits in the bytes left, or the terminator (not as the first byte)."""
    count, size = prefixes.shape
    leads = lead_lengths()
    pending = np.zeros(count, dtype=np.int64)  # continuation bytes still owed by the last character
    for column in range(size):
        pending = np.where(pending > 0, pending - 1, np.maximum(leads[prefixes[:, column]] - 1, 0))
    ended = (prefixes[:, -1] == TERMINATOR) if size else np.zeros(count, dtype=bool)
    left = length - size  # bytes left, this one included
    allowed = np.zeros((count, 256), dtype=bool)
    free = ~ended & (pending == 0)
    allowed[free] = (leads >= 1) & (leads <= left)
    if size:
        allowed[free | ended, TERMINATOR] = True
    allowed[ended, :TERMINATOR] = False
    allowed[pending > 0, 0x80:0xC0] = True
    return allowed


class PrefixHeavyHitters(StringMechanism):
    """The shared part of PEM and TreeHist (docs/math.md §18): the padded prefixes, the levels and the public pool of
    row hashes, the statistics per (level, row, oracle output), candidate estimates from any level, and the search
    for the heavy hitters. A family sets ``buckets`` (B), ``report_dtype`` and the oracle: ``_respond`` (its
    report of each bucket), ``_tally`` (the statistics), ``_scores`` (per row and bucket, the sum over a level's
    reports of the per-report score Z, whose mean given the bucket b' of the user's prefix is [b = b']) and
    ``_second_moment`` (E[Z^2] given that mean).

    Examples
    --------
    >>> import lipdesign as ld
    >>> pem = ld.mechanisms.PEM(2.0, max_bytes=8, seed=1)
    >>> isinstance(pem, ld.mechanisms.PrefixHeavyHitters), pem.levels, pem.rows, pem.top, pem.keep
    (True, 8, 1024, 20, 40)
    """

    levels: int
    rows: int
    buckets: int
    top: int
    keep: int
    report_dtype: np.dtype[Any]
    _oracle_fields: tuple[str, ...]

    def _prefix_pool(self, max_bytes: int, rows: int, seed: int | None, candidates: Sequence[str] | None,
                     top: int, keep: int | None, outputs: int) -> None:
        """Check and set the levels (L = max_bytes), the rows, the seed, the domain, the keys and the decoding
        options; ``outputs`` is the number of oracle outputs per row (cells of the statistics)."""
        self.rows = integer(rows, "rows", low=1, high=MAX_ROWS)
        keys = self._open_domain(seed, max_bytes, candidates, integer(max_bytes, "max_bytes", 1, MAX_BYTES_LIMIT))
        self.levels = self.strings.max_bytes
        #: The key of level t's string hash (docs/runtime.md §14).
        self.level_keys = keys
        row_keys = hash_key(self.seed, ROW_OFFSET + np.arange(self.rows))
        row_keys.setflags(write=False)
        #: The key of row s's bucket hash.
        self.row_keys = row_keys
        cells = self.levels * self.rows * outputs
        if cells > MAX_CELLS:
            raise ValidationError(f"rows is {self.rows}; the statistics hold levels x rows x outputs = {self.levels} "
                                  f"x {self.rows} x {outputs} = {cells} counts, more than MAX_CELLS = {MAX_CELLS}: "
                                  "use fewer rows or a smaller max_bytes")
        self.top = integer(top, "top", low=1)
        self.keep = self.top * 2 if keep is None else integer(keep, "keep", low=1)
        if self.keep < self.top:
            raise ValidationError(f"keep is {self.keep}; the search keeps at least top = {self.top} prefixes per level")

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "max_bytes": self.max_bytes, "rows": self.rows, "seed": self.seed,
                **self._oracle_parameters()}

    def _oracle_parameters(self) -> dict[str, Any]:
        raise NotImplementedError

    def with_candidates(self, candidates: Sequence[str]) -> Self:
        """The same mechanism (same reports, file and fingerprint) estimating ``candidates`` from the last level.

        Parameters
        ----------
        candidates : sequence of str
            Distinct non-empty strings of at most ``max_bytes`` bytes.

        Returns
        -------
        PrefixHeavyHitters
            A copy whose ``estimate`` gives the candidates' frequencies instead of searching for the top strings.

        Examples
        --------
        >>> import lipdesign as ld
        >>> pem = ld.mechanisms.PEM(4.0, max_bytes=4, seed=1)
        >>> pem.with_candidates(["the", "of"]).candidates
        ('the', 'of')
        """
        family: Any = type(self)
        return family(**self.parameters(), candidates=candidates, top=self.top, keep=self.keep)

    def with_top(self, top: int, keep: int | None = None) -> Self:
        """The same mechanism (same reports, file and fingerprint) searching for another number of strings.

        Parameters
        ----------
        top : int
            How many strings ``estimate`` returns, at least 1.
        keep : int, optional
            Prefixes kept per level (at least ``top``); by default 2 ``top``.

        Returns
        -------
        PrefixHeavyHitters
            A copy with these decoding options (and no candidates).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.PEM(4.0, max_bytes=4, seed=1).with_top(5).keep
        10
        """
        family: Any = type(self)
        return family(**self.parameters(), top=top, keep=keep)

    @property
    def report_bits(self) -> int:
        """Bits of information per report: the level, the row and the oracle's output."""
        return math.ceil(math.log2(self.levels * self.rows * self._outputs()))

    def _outputs(self) -> int:
        raise NotImplementedError

    def display_name(self) -> str:
        return f"{type(self).__name__} heavy hitters"

    # -- device side ----------------------------------------------------------------------------------------------

    def _buckets(self, matrix: npt.NDArray[np.uint8], levels: npt.NDArray[np.int64],
                 rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The bucket of each padded value's prefix at its level, under its row's hash (docs/math.md §18.2)."""
        hashes = np.zeros(len(levels), dtype=np.uint64)
        for level in np.unique(levels):  # a loop over levels, not reports
            chosen = levels == level
            hashes[chosen] = prefix_hashes(matrix[chosen], int(level) + 1, self.level_keys[level])
        with np.errstate(over="ignore"):
            return bounded(mix(hashes ^ self.row_keys[rows]), self.buckets)

    def _perturb(self, values, rng, user_ids):
        """The levels (a bounded integer each; none when L = 1), the rows (likewise; none with one row), then the
        oracle's draws; a single report draws its level, its row, then the oracle's words."""
        n = len(values)
        levels = rng.integers(0, self.levels, size=n) if self.levels > 1 else np.zeros(n, dtype=np.int64)
        rows = rng.integers(0, self.rows, size=n) if self.rows > 1 else np.zeros(n, dtype=np.int64)
        out = np.empty(n, dtype=self.report_dtype)
        out["level"], out["row"] = levels, rows
        for name, field in self._respond(self._buckets(padded(values, self.levels), levels, rows), rng).items():
            out[name] = field
        return out

    def _respond(self, buckets: npt.NDArray[np.int64], rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        raise NotImplementedError

    def empty_reports(self) -> npt.NDArray[np.void]:
        return np.zeros(0, dtype=self.report_dtype)

    # -- server side ----------------------------------------------------------------------------------------------

    def _fields(self, reports):
        """(level, row, oracle fields...) of ``reports``, checked."""
        structured_reports(reports, self.report_dtype)
        bounds = {"level": self.levels, "row": self.rows, **self._field_bounds()}
        return [index_array(reports[name], bound, f"reports['{name}']") for name, bound in bounds.items()]

    def _field_bounds(self) -> dict[str, int]:
        raise NotImplementedError

    def _cells(self, level, row):
        return (level * self.rows + row) * self._outputs()

    def _level_size(self, aggregate: Aggregate, level: int) -> int:
        raise NotImplementedError

    def _scores(self, aggregate: Aggregate, level: int) -> npt.NDArray[np.float64]:
        raise NotImplementedError

    def _second_moment(self, mean: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        raise NotImplementedError

    def _row_buckets(self, hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
        """(C, rows): the bucket in every row of each prefix hash (docs/math.md §18.2)."""
        with np.errstate(over="ignore"):
            return bounded(mix(hashes[:, None] ^ self.row_keys[None, :]), self.buckets)

    def _candidate_buckets(self, matrix: npt.NDArray[np.uint8], level: int) -> npt.NDArray[np.int64]:
        """(C, rows): each candidate prefix's bucket in every row at ``level``."""
        return self._row_buckets(prefix_hashes(matrix, level + 1, self.level_keys[level]))

    def _level_estimates(self, aggregate: Aggregate, matrix: npt.NDArray[np.uint8], level: int
                         ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
        """The frequency estimates of the candidate prefixes (rows of ``matrix``) from ``level``'s users, their
        plug-in standard errors and the level's number of reports (docs/math.md §18.4)."""
        size = self._level_size(aggregate, level)
        if size == 0:
            nan = np.full(matrix.shape[0], np.nan)
            return nan, nan, 0
        scores = self._scores(aggregate, level)
        hashes = prefix_hashes(matrix, level + 1, self.level_keys[level])
        means = np.empty(len(hashes))
        rows = np.arange(self.rows)[None, :]
        step = max(1, HASH_BLOCK // self.rows)
        for start in range(0, len(hashes), step):  # sum_s scores[s, b_s(c)], in blocks of candidates
            means[start:start + step] = scores[rows, self._row_buckets(hashes[start:start + step])].sum(axis=1)
        means /= size
        collision = 1.0 / self.buckets
        estimates = (means - collision) / (1.0 - collision)
        variance = self._plug_in_variance(np.clip(estimates, 0.0, 1.0), aggregate.n, size)
        return estimates, np.sqrt(variance), size

    def _plug_in_variance(self, holders, n, size):
        """Var of a candidate's estimate from ``size`` reports of a level, when a fraction ``holders`` of the n users
        hold it and the others' mean score is the hash's 1/B (docs/math.md §18.4)."""
        collision = 1.0 / self.buckets
        within = (holders * (self._second_moment(np.ones_like(holders)) - 1.0)
                  + (1 - holders) * (self._second_moment(np.full_like(holders, collision)) - collision**2))
        between = holders * (1 - holders) * (1 - collision) ** 2 * (n - size) / max(n - 1, 1)
        return (within + between) / (size * (1 - collision) ** 2)

    def _estimate(self, aggregate, method):
        """Candidates given: their frequencies from the last level's users; else the search of docs/math.md
        §18.3 and the top strings' frequencies from the last level's users, with plug-in standard errors."""
        last = self.levels - 1
        if self.candidates is not None:
            matrix = padded([candidate.encode("utf-8") for candidate in self.candidates], self.levels)
            values, errors, size = self._level_estimates(aggregate, matrix, last)
            return Estimate(values, errors, n=aggregate.n, method=method, names=self.estimand_names(),
                            note=self._note(size))
        kept = np.zeros((1, 0), dtype=np.uint8)
        values = errors = np.zeros(0)
        size = 0
        for level in range(self.levels):
            allowed = next_bytes(kept, self.levels)
            parents, children = np.nonzero(allowed)
            matrix = np.concatenate([kept[parents], children[:, None].astype(np.uint8)], axis=1)
            values, errors, size = self._level_estimates(aggregate, matrix, level)
            absent = float(np.sqrt(self._plug_in_variance(np.zeros(1), aggregate.n, max(size, 1)))[0])
            order = self._selected(values, absent)
            kept, values, errors = matrix[order], values[order], errors[order]
        labels = []
        valid = []
        for i, row in enumerate(kept):  # at most ``keep`` strings
            text = bytes(row[row != TERMINATOR])
            try:
                labels.append(text.decode("utf-8"))
                valid.append(i)
            except UnicodeDecodeError:  # a prefix that UTF-8's finer rules (overlong forms, surrogates) exclude
                continue
        chosen = np.array(valid[:self.top], dtype=np.int64)
        return Estimate(values[chosen], errors[chosen], n=aggregate.n, method=method,
                        names=labels[:self.top], note=self._note(size))

    def _selected(self, values: npt.NDArray[np.float64], absent: float) -> npt.NDArray[np.int64]:
        """Indices of the prefixes kept at a level, largest estimate first (``absent``: the standard error of the
        estimate of a prefix no user holds)."""
        raise NotImplementedError

    def _note(self, size: int) -> str:
        return (f"frequencies from the {size} reports of the last level (docs/math.md §18.4), unbiased over the "
                "public hashes' draw; plug-in standard errors. The strings were chosen as the largest of many "
                "estimates: an interval is valid for a string fixed in advance, and a string found at low epsilon "
                "can be noise (true share 0) whose interval misses 0")

    # -- the audit plan ------------------------------------------------------------------------------------------------

    #: The two strings ``audit_plan`` sets side by side (they differ in their first byte, so at every level).
    AUDITED = ("a", "b")

    def _audited_buckets(self, levels: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
                         ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The buckets of the two audited strings at each (level, row) given."""
        first, second = (self._buckets(padded([value.encode()] * len(levels), self.levels), levels, rows)
                         for value in self.AUDITED)
        return first, second

    def _audited_collision(self) -> float:
        """The share of the L x rows (level, row) pairs, each equally likely, at which the audited strings share a
        bucket (exact for this pool)."""
        levels, rows = np.divmod(np.arange(self.levels * self.rows), self.rows)
        first, second = self._audited_buckets(levels, rows)
        return float(np.mean(first == second))

    # -- closed forms given the users' values (candidates) ---------------------------------------------------------

    def _means(self, population):
        """Per candidate c and distinct value u of the population: the mean over the pool's rows of [b_s(c) =
        b_s(u)] at the last level (1 for u = c), and how many users hold each u."""
        candidates = self.strings.required_candidates(f"the variance of {type(self).__name__}'s estimate")
        unique, counts = self._unique(population)
        last = self.levels - 1
        mine = self._candidate_buckets(padded([c.encode("utf-8") for c in candidates], self.levels), last)
        theirs = self._candidate_buckets(padded(unique, self.levels), last)
        shared = np.zeros((len(candidates), len(unique)))
        for row in range(self.rows):
            shared += mine[:, row, None] == theirs[None, :, row]
        return shared / self.rows, counts.astype(float)

    def _expected(self, population, method, user_ids):
        """E[estimate | the users' values and the pool] (docs/math.md §18.4): (mean of the collisions - 1/B) /
        (1 - 1/B); the candidates' frequencies when no other value shares their buckets more often than 1/B."""
        shared, counts = self._means(population)
        collision = 1.0 / self.buckets
        return (shared @ counts / counts.sum() - collision) / (1 - collision)

    def _variance(self, population, n, method, user_ids):
        """Var[estimate | the users' values and the pool] from a last level of n / L reports, drawn without
        replacement from the n users (docs/math.md §18.4)."""
        shared, counts = self._means(population)
        weights = counts / counts.sum()
        size = n / self.levels
        mean = shared @ weights
        within = (self._second_moment(shared) - shared**2) @ weights
        between = (shared**2) @ weights - mean**2
        collision = 1.0 / self.buckets
        return (within + between * (n - size) / max(n - 1, 1)) / (size * (1 - collision) ** 2)


class PEM(PrefixHeavyHitters):
    """Prefix extending method (PEM) for heavy hitters, one round, eps-LDP (Wang, Li, Jha 2019; docs/math.md §18).

    Each user pads her string to L = ``max_bytes`` bytes with 0xFF, draws a level t in 0..L-1 and a row s of a
    public pool of ``rows`` hash functions, hashes her prefix of t + 1 bytes into g buckets with row s's function,
    and sends (t, s, y), y = GRR over the g buckets (OLH's sampler: the true bucket with probability alpha, else a
    uniform one). Given (t, s), which do not depend on the value, a report is one OLH report, so the exact epsilon
    is that of OLH's GRR table over g buckets, certified on the realised alpha. The server counts reports per
    (t, s, y); ``estimate`` extends the ``keep`` largest prefixes of each level by every next byte UTF-8 allows and
    returns the ``top`` strings of the last level (docs/math.md §18.3).

    Parameters
    ----------
    epsilon : float
        The LDP level of each user's one report, in [1e-6, 10].
    max_bytes : int, default 16
        L: the longest value in bytes of UTF-8, and the number of levels (groups of users).
    rows : int, default 1024
        Hash functions in the public pool, 1 to 65536.
    g : int, optional
        Buckets, 2 to 2^20; by default min(round(e^eps) + 1, 1024) (OLH's choice, capped).
    seed : int, optional
        The public seed of the hash functions, 0 to 2^63 - 1; by default drawn from the operating system and stored.
    candidates : sequence of str, optional
        Strings to estimate from the last level instead of searching (not a parameter: ``with_candidates``).
    top : int, default 20
        How many strings the search returns (not a parameter: ``with_top``).
    keep : int, optional
        Prefixes kept per level, at least ``top``; by default 2 ``top``.

    Attributes
    ----------
    alpha, p, lie : float
        OLH's mixture probability, Pr[y = own bucket] and Pr[y = a given other bucket], as realised.

    Raises
    ------
    ValidationError
        A parameter outside its range, or statistics of more than ``MAX_CELLS`` counts (L x rows x g).

    See Also
    --------
    TreeHist : The same search with a one-bit Hadamard oracle and a threshold.
    OLH : The frequency oracle of each level.
    lipdesign.heavy_hitters : A whole simulated collection.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> pem = ld.mechanisms.PEM(4.0, max_bytes=4, rows=256, seed=1, top=3)
    >>> pem.verify().passed, round(pem.verify().epsilon, 6)
    (True, 4.0)
    >>> words = np.array(["the", "of", "and", "to", "a", "in"], dtype=object)
    >>> users = words[np.random.default_rng(0).choice(6, size=100_000, p=[0.3, 0.25, 0.2, 0.1, 0.1, 0.05])]
    >>> estimate = pem.estimate(pem.perturb(users, rng=1))
    >>> estimate.names
    ['the', 'of', 'and']
    >>> np.round(estimate.values, 2), np.round(estimate.standard_errors, 3)
    (array([0.3 , 0.26, 0.2 ]), array([0.005, 0.004, 0.004]))
    """

    family = "pem"
    parameter_rules = (("max_bytes", f"integer in 1..{MAX_BYTES_LIMIT} (the number of levels)"),
                       ("rows", f"integer in 1..{MAX_ROWS}"), ("g", "integer in 2..2^20 (by default "
                                                               "min(round(e^eps) + 1, 1024))"),
                       ("seed", f"integer in 0..{MAX_SEED - 1}"))
    client_cost = "O(L) per report (one prefix hash, one row hash)"
    report_dtype = np.dtype([("level", "<i2"), ("row", "<i4"), ("y", "<i4")])

    def __init__(self, epsilon: float, max_bytes: int = DEFAULT_HH_BYTES, rows: int = 1024, g: int | None = None,
                 seed: int | None = None, candidates: Sequence[str] | None = None, top: int = 20,
                 keep: int | None = None) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        exp_epsilon = implemented_exp(self.epsilon)
        if g is None:
            g = min(round(math.exp(self.epsilon)) + 1, MAX_DEFAULT_G)
        self.g = self.buckets = integer(g, "g", low=2, high=2**20)
        self._prefix_pool(max_bytes, rows, seed, candidates, top, keep, self.g)
        self.alpha = grr_mixing_probability(self.epsilon, exp_epsilon, self.g, "g")
        self.p, self.lie = grr_probabilities(self.alpha, self.g)

    def _oracle_parameters(self) -> dict[str, Any]:
        return {"g": self.g}

    def _outputs(self) -> int:
        return self.g

    @classmethod
    def example(cls) -> Self:
        words = ["the", "of", "and", "to", "in", "is", "you", "that"]
        return cls(2.0, max_bytes=6, rows=64, g=8, seed=7, candidates=words)

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """OLH's exact reduction of the GRR table over g buckets (``rr.grr_reduced_table``): the table of two
        values whose prefixes fall in different buckets at the drawn (level, row); equal buckets give ratio 1.

        Returns
        -------
        numpy.ndarray
            float (2, 3), or (2, 2) when g = 2.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.PEM(1.0, max_bytes=4, g=4, seed=1).privacy_table().shape
        (2, 3)
        """
        return grr_reduced_table(self.alpha, self.g)

    def _certify(self):
        return grr_certificate(self.epsilon, self.alpha, self.g)

    def _respond(self, buckets, rng):
        return {"y": randomized_response(buckets, self.g, self.alpha, rng)}

    def _field_bounds(self):
        return {"y": self.g}

    def _statistics(self, reports):
        level, row, y = self._fields(reports)
        size = self.levels * self.rows * self.g
        counts = np.bincount(self._cells(level, row) + y, minlength=size).astype(np.int64)
        return len(level), {"counts": counts.reshape(self.levels, self.rows, self.g)}

    def _level_size(self, aggregate, level):
        return int(aggregate["counts"][level].sum())

    def _scores(self, aggregate, level):
        """Z = ([y = b] - lie) / alpha summed per (row, b): (counts - lie x the row's reports) / alpha."""
        counts = aggregate["counts"][level].astype(float)
        return (counts - self.lie * counts.sum(axis=1, keepdims=True)) / self.alpha

    def _second_moment(self, mean):
        """E[Z^2] = (pi (1 - 2 lie) + lie^2) / alpha^2 with pi = lie + alpha x mean = Pr[y = b]."""
        support = self.lie + self.alpha * np.asarray(mean, dtype=float)
        return (support * (1 - 2 * self.lie) + self.lie**2) / self.alpha**2

    def _selected(self, values, absent):
        """The ``keep`` largest estimates."""
        return np.argsort(-values, kind="stable")[:self.keep]

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): the strings "a" and "b"; a report is classed by whether their
        buckets coincide at its (level, row) (probability c, exact for the pool) and, where they differ, whether y is
        a's bucket, b's, or another; given (level, row), y is OLH's GRR over g buckets (docs/math.md §18.1).

        Returns
        -------
        AuditPlan
            Inputs "a" and "b"; 4 classes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.PEM(1.0, max_bytes=4, seed=1).audit_plan().table.shape
        (2, 4)
        """
        keep, lie = grr_probabilities(self.alpha, self.g)
        c = self._audited_collision()
        table = np.array([[(1 - c) * keep, (1 - c) * lie, (1 - c) * (self.g - 2) * lie, c],
                          [(1 - c) * lie, (1 - c) * keep, (1 - c) * (self.g - 2) * lie, c]])

        def classify(reports):
            level, row, y = self._fields(reports)
            first, second = self._audited_buckets(level, row)
            return np.select([first == second, y == first, y == second], [3, 0, 1], 2)

        return AuditPlan(np.array(self.AUDITED, dtype=object), table, classify,
                         [f"x={value!r}" for value in self.AUDITED], ["y=h(a)", "y=h(b)", "other y", "h(a)=h(b)"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §14).

        Returns
        -------
        dict
            ``alpha``: OLH's keep probability of the true bucket (a coin ``random() < alpha``).

        Examples
        --------
        >>> import lipdesign as ld
        >>> round(ld.mechanisms.PEM(4.0, max_bytes=4, seed=1).device_numbers()["alpha"], 6)
        0.489042
        """
        return {"alpha": self.alpha}


class TreeHist(PrefixHeavyHitters):
    """TreeHist heavy hitters, one round, eps-LDP (Bassily, Nissim, Stemmer, Thakurta 2017; docs/math.md §18).

    As ``PEM`` (padded prefixes, one level and one row of a public hash pool per user), with the Hadamard count-mean
    sketch's one-bit oracle: the user hashes her prefix into m buckets (m a power of 2), draws a coefficient l in
    0..m-1 and sends (t, s, l, bit), the sign (-1)^popcount(l AND b) flipped with probability 1/(1 + e^eps) (the
    realised flip of ``HadamardCountMeanSketch``, whose exact table certifies it). ``estimate`` keeps, at each
    level, the prefixes whose estimate exceeds ``z`` standard errors of an absent prefix (at most ``keep``), and
    returns up to ``top`` strings of the last level (docs/math.md §18.3).

    Parameters
    ----------
    epsilon : float
        The LDP level of each user's one report, in [1e-6, 10].
    max_bytes : int, default 16
        L: the longest value in bytes of UTF-8, and the number of levels.
    rows : int, default 256
        Hash functions in the public pool, 1 to 65536.
    m : int, default 256
        Buckets, a power of 2 from 2 to 65536.
    seed : int, optional
        The public seed of the hash functions; by default drawn from the operating system and stored.
    candidates : sequence of str, optional
        Strings to estimate from the last level instead of searching (``with_candidates``).
    top : int, default 20
        Most strings the search returns (``with_top``).
    keep : int, optional
        Most prefixes kept per level, at least ``top``; by default 2 ``top``.
    z : float, default 3.0
        A prefix is kept when its estimate exceeds z times the standard error of an absent one (not a parameter,
        like ``top`` and ``keep``: kept by ``with_candidates`` and ``with_top``, not written to files).

    Attributes
    ----------
    flip_threshold : int
        The sign is flipped when its 32-bit word is below this.

    Raises
    ------
    ValidationError
        A parameter outside its range (m not a power of 2), or statistics of more than ``MAX_CELLS`` counts.

    See Also
    --------
    PEM : The same search with OLH and the largest prefixes kept.
    HadamardCountMeanSketch : The one-bit oracle.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> tree = ld.mechanisms.TreeHist(4.0, max_bytes=4, rows=64, seed=1, top=3)
    >>> tree.verify().passed
    True
    >>> words = np.array(["the", "of", "and", "to", "a", "in"], dtype=object)
    >>> users = words[np.random.default_rng(0).choice(6, size=100_000, p=[0.3, 0.25, 0.2, 0.1, 0.1, 0.05])]
    >>> estimate = tree.estimate(tree.perturb(users, rng=1))
    >>> estimate.names
    ['the', 'of', 'and']
    >>> np.round(estimate.values, 2), np.round(estimate.standard_errors, 3)
    (array([0.29, 0.26, 0.22]), array([0.006, 0.006, 0.006]))
    """

    family = "treehist"
    parameter_rules = (("max_bytes", f"integer in 1..{MAX_BYTES_LIMIT} (the number of levels)"),
                       ("rows", f"integer in 1..{MAX_ROWS}"), ("m", "power of 2 in 2..65536"),
                       ("seed", f"integer in 0..{MAX_SEED - 1}"))
    client_cost = "O(L) per report (one prefix hash, one row hash, one bit)"
    report_dtype = np.dtype([("level", "<i2"), ("row", "<i4"), ("coefficient", "<i4"), ("bit", "u1")])

    def __init__(self, epsilon: float, max_bytes: int = DEFAULT_HH_BYTES, rows: int = 256, m: int = 256,
                 seed: int | None = None, candidates: Sequence[str] | None = None, top: int = 20,
                 keep: int | None = None, z: float = 3.0) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        #: The one-bit oracle whose realised flip and exact table this family uses (one row, no strings of its own).
        self.oracle = HadamardCountMeanSketch(self.epsilon, m=m, d=1, seed=0)
        self.m = self.buckets = self.oracle.m
        self.flip_threshold = self.oracle.flip_threshold
        self.z = real_number(z, "z", 0.0, 100.0)
        self._prefix_pool(max_bytes, rows, seed, candidates, top, keep, 2 * self.m)

    def _oracle_parameters(self) -> dict[str, Any]:
        return {"m": self.m}

    def _outputs(self) -> int:
        return self.m

    def with_candidates(self, candidates: Sequence[str]) -> Self:
        family: Any = type(self)
        return family(**self.parameters(), candidates=candidates, top=self.top, keep=self.keep, z=self.z)

    def with_top(self, top: int, keep: int | None = None) -> Self:
        family: Any = type(self)
        return family(**self.parameters(), top=top, keep=keep, z=self.z)

    @classmethod
    def example(cls) -> Self:
        words = ["the", "of", "and", "to", "in", "is", "you", "that"]
        return cls(2.0, max_bytes=6, rows=16, m=16, seed=7, candidates=words)

    def privacy_table(self) -> npt.NDArray[np.object_]:
        """The Hadamard sketch's exact 2 x 2 table of the sent bit for two values whose signs differ at the drawn
        (level, row, coefficient) (``HadamardCountMeanSketch.privacy_table``); equal signs give ratio 1.

        Returns
        -------
        numpy.ndarray
            2 x 2 of ``fractions.Fraction``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.TreeHist(1.0, max_bytes=4, seed=1).privacy_table().shape
        (2, 2)
        """
        return self.oracle.privacy_table()

    def _certify(self):
        return verify_table(self.privacy_table(), LDP(self.epsilon), exact=True)

    def _respond(self, buckets, rng):
        coefficients = rng.integers(0, self.m, size=len(buckets))
        flips = rng.integers(0, WORD, size=len(buckets), dtype=np.uint32) < np.uint32(self.flip_threshold)
        return {"coefficient": coefficients,
                "bit": ((parity(coefficients & buckets) == 0) ^ flips).astype(np.uint8)}

    def _field_bounds(self):
        return {"coefficient": self.m, "bit": 2}

    def _statistics(self, reports):
        level, row, coefficient, bit = self._fields(reports)
        cells = self._cells(level, row) + coefficient
        size = self.levels * self.rows * self.m
        shape = (self.levels, self.rows, self.m)
        return len(level), {"cell_reports": np.bincount(cells, minlength=size).astype(np.int64).reshape(shape),
                            "ones": np.bincount(cells, weights=bit, minlength=size).astype(np.int64).reshape(shape)}

    def _level_size(self, aggregate, level):
        return int(aggregate["cell_reports"][level].sum())

    def _scale(self) -> float:
        return float(1 / (1 - 2 * self.oracle.flip))

    def _scores(self, aggregate, level):
        """Z = c x sign x H[l, b] summed per (row, b): c times the fast Walsh-Hadamard transform of each row's
        (ones - zeros) per coefficient (docs/math.md §18.4)."""
        signs = self._scale() * (2 * aggregate["ones"][level] - aggregate["cell_reports"][level]).astype(float)
        return np.stack([fwht(row) for row in signs])

    def _second_moment(self, mean):
        """E[Z^2] = c^2 whatever the value (Z = +-c)."""
        return np.full_like(np.asarray(mean, dtype=float), self._scale() ** 2)

    def _selected(self, values, absent):
        """The estimates above z times ``absent``, the largest ``keep`` of them."""
        order = np.argsort(-values, kind="stable")
        return order[values[order] > self.z * absent][:self.keep]

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): the strings "a" and "b"; a report is classed by whether their
        signs agree at its (level, row, coefficient) (probability 1 where their buckets coincide, 1/2 where they
        differ, averaged exactly over the pool's (level, row) pairs) and whether its bit is a's sign. Where the signs
        differ the rows' probabilities are 1 - phi and phi, swapped: the full epsilon.

        Returns
        -------
        AuditPlan
            Inputs "a" and "b"; 4 classes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.TreeHist(1.0, max_bytes=4, seed=1).audit_plan().table.shape
        (2, 4)
        """
        c = self._audited_collision()
        equal = c + (1 - c) / 2
        keep, flip = float(1 - self.oracle.flip), float(self.oracle.flip)

        def classify(reports):
            level, row, coefficient, bit = self._fields(reports)
            signs = [parity(coefficient & buckets) == 0 for buckets in self._audited_buckets(level, row)]
            return 2 * (signs[0] != signs[1]) + (bit != signs[0])

        table = [[equal * keep, equal * flip, (1 - equal) * keep, (1 - equal) * flip],
                 [equal * keep, equal * flip, (1 - equal) * flip, (1 - equal) * keep]]
        return AuditPlan(np.array(self.AUDITED, dtype=object), np.array(table), classify,
                         [f"x={value!r}" for value in self.AUDITED],
                         ["signs equal, bit = a's", "signs equal, bit != a's", "signs differ, bit = a's",
                          "signs differ, bit != a's"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §14).

        Returns
        -------
        dict
            ``flip_threshold``: flip the sign when its 32-bit word is below it.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.TreeHist(2.0, max_bytes=4, m=64, seed=3).device_numbers()
        {'flip_threshold': 511972652}
        """
        return {"flip_threshold": self.flip_threshold}
