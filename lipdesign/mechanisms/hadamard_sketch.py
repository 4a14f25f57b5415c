"""The Hadamard count-mean sketch ([Apple17]; docs/math.md §16.4): one bit per report, a Hadamard coefficient of
the string's one-hot row, flipped. Numpy only.

A report is 5 bytes: the row j (2 bytes, low byte first), the coefficient l (2 bytes, low byte first) and the bit
(1 for the sign +1). The server's statistics are, per row and coefficient, the number of reports and of ones; the
estimate is least squares over a candidate list, computed with one fast Walsh-Hadamard transform per row.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.estimate import Estimate
from lipdesign.mechanisms.hadamard import fwht, parity
from lipdesign.mechanisms.hashed_bits import CHUNK, DENSE_CANDIDATES, MAX_COHORTS, WORD, StringMechanism
from lipdesign.mechanisms.sampling import MAX_SEED, ONE_BIT_MAX_EPSILON, ONE_BIT_MIN_EPSILON
from lipdesign.notions import LDP
from lipdesign.strings import DEFAULT_MAX_BYTES, bounded, byte_words, string_hash
from lipdesign.validation import fmt, index_array, integer
from lipdesign.verification import verify_table

if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.aggregate import Aggregate

#: The widest sketch: m buckets, a power of 2 (the coefficient takes 2 bytes of a report).
MAX_WIDTH = 2**16


class HadamardCountMeanSketch(StringMechanism):
    """The Hadamard count-mean sketch over strings, eps-LDP with one bit per report ([Apple17]; docs/math.md §16.4).

    A user draws a row j of d and a coefficient l of m (both uniform), and sends (j, l, s): s is the sign
    (-1)^popcount(l AND h_j(v)) of the Hadamard matrix at her string's bucket h_j(v), flipped with probability
    1/(1 + e^eps). Whatever the two strings, the sign's distribution moves by at most the flip's ratio, so a report
    is eps-LDP, verified exactly on the realised flip: a 32-bit word below ceil(2^32 / (1 + e^eps)).

    Parameters
    ----------
    epsilon : float
        The LDP level, in [1e-6, 10].
    m : int, default 1024
        Buckets per row, a power of 2 from 2 to 65536.
    d : int, default 64
        Rows, each with its own hash function, 1 to 65536.
    seed : int, optional
        The public seed of the hash functions, 0 to 2^63 - 1; by default drawn from the operating system and stored.
    max_bytes : int, default 64
        The longest value, in bytes of UTF-8.
    candidates : sequence of str, optional
        The strings ``estimate`` decodes over (not a parameter: see ``with_candidates``).

    Attributes
    ----------
    flip_threshold : int
        The sign is flipped when its 32-bit word is below this.

    Raises
    ------
    ValidationError
        epsilon outside [1e-6, 10], m not a power of 2 in 2..65536, or d outside 1..65536.

    Notes
    -----
    Given the users' values the least-squares counts have variance n d m c^2 (G^-1)_kk - N_k, c = (e^eps + 1) /
    (e^eps - 1) as realised, G the candidates' collision matrix times m (docs/math.md §16.4): about n c^2 when the
    candidates do not collide. ``estimate`` gives it at the estimated counts.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> words = ["the", "of", "and", "to"]
    >>> sketch = ld.mechanisms.HadamardCountMeanSketch(2.0, m=64, d=8, seed=3, candidates=words)
    >>> sketch.verify().passed, sketch.report_bytes
    (True, 5)
    >>> users = np.array(words, dtype=object)[np.random.default_rng(0).choice(4, size=50_000, p=[0.4, 0.3, 0.2, 0.1])]
    >>> estimate = sketch.estimate(sketch.perturb(users, rng=1))
    >>> np.round(estimate.values, 2), np.round(estimate.standard_errors, 3)
    (array([0.4 , 0.3 , 0.21, 0.1 ]), array([0.005, 0.005, 0.006, 0.006]))
    """

    family = "hcms"
    epsilon_range = (ONE_BIT_MIN_EPSILON, ONE_BIT_MAX_EPSILON)
    parameter_rules = (("m", f"power of 2 in 2..{MAX_WIDTH}"), ("d", f"integer in 1..{MAX_COHORTS}"),
                       ("seed", f"integer in 0..{MAX_SEED - 1}"), ("max_bytes", "integer in 1..4096"))
    client_cost = "O(1) per report (one hash, one bit)"

    def __init__(self, epsilon: float, m: int = 1024, d: int = 64, seed: int | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES, candidates: Sequence[str] | None = None) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.m = integer(m, "m", low=2, high=MAX_WIDTH)
        if self.m & (self.m - 1):
            raise ValidationError(f"m is {self.m}; the Hadamard sketch's width must be a power of 2")
        self.d = integer(d, "d", low=1, high=MAX_COHORTS)
        #: The hash key of each row (docs/math.md §16.1, functions 0..d-1).
        self.keys = self._open_domain(seed, max_bytes, candidates, self.d)
        #: Flip when the 32-bit word is below this: the realised flip is at least 1/(1 + e^eps).
        self.flip_threshold = math.ceil(WORD / (1.0 + math.exp(self.epsilon)))
        self.flip = Fraction(self.flip_threshold, WORD)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "m": self.m, "d": self.d, "seed": self.seed, "max_bytes": self.max_bytes}

    @classmethod
    def example(cls) -> Self:
        words = ["the", "of", "and", "to", "in", "is", "you", "that"]
        return cls(2.0, m=32, d=4, seed=7, max_bytes=16, candidates=words)

    def display_name(self) -> str:
        """The family's name in tables.

        Returns
        -------
        str
            "Hadamard count-mean sketch".
        """
        return "Hadamard count-mean sketch"

    @property
    def report_bits(self) -> int:
        """Bits per report as stored: 16 (row) + 16 (coefficient) + 8 (the bit's byte)."""
        return 40

    @property
    def report_bytes(self) -> int:
        """Bytes per report: 5."""
        return 5

    def privacy_table(self) -> npt.NDArray[np.object_]:
        """The exact 2 x 2 table of the report's bit for two strings whose signs differ at the drawn (row,
        coefficient), as rationals of the realised flip (equal signs give equal rows: ratio 1).

        Returns
        -------
        numpy.ndarray
            2 x 2 of ``fractions.Fraction``: rows sign +1 and -1, columns bit 1 and bit 0.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.HadamardCountMeanSketch(1.0, m=8, d=2, seed=1).privacy_table().shape
        (2, 2)
        """
        keep, flip = 1 - self.flip, self.flip
        table = np.empty((2, 2), dtype=object)
        table[:] = [[keep, flip], [flip, keep]]
        return table

    def _certify(self):
        return verify_table(self.privacy_table(), LDP(self.epsilon), exact=True)

    def buckets(self, values: Any, rows: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The bucket h_j(v) of each value in its row (docs/math.md §16.1).

        Parameters
        ----------
        values : sequence of str or bytes
            The strings.
        rows : array_like of int
            One row per value, 0 to d - 1.

        Returns
        -------
        numpy.ndarray
            int64, one bucket in 0..m-1 per value.

        Examples
        --------
        >>> import lipdesign as ld
        >>> sketch = ld.mechanisms.HadamardCountMeanSketch(1.0, m=8, d=2, seed=1)
        >>> sketch.buckets(["the", "the"], [0, 1]).shape
        (2,)
        """
        data = self.strings.validate(values)
        indices = index_array(rows, self.d, "rows")
        if indices.shape != (len(data),):
            raise ValidationError(f"rows is {fmt(indices)}; it must hold one row in 0..{self.d - 1} per value")
        return self._buckets(data, indices)

    def _buckets(self, data, rows):
        return bounded(string_hash(*byte_words(data), self.keys[rows][:, None])[:, 0], self.m)

    def _perturb(self, values, rng, user_ids):
        """Per chunk: the rows (a bounded integer each, none when d = 1), the coefficients (a bounded integer
        each), then one 32-bit word per report for the flip; a single report draws row, coefficient, word."""
        chunks = []
        for start in range(0, len(values), CHUNK):
            data = values[start:start + CHUNK]
            rows = rng.integers(0, self.d, size=len(data)) if self.d > 1 else np.zeros(len(data), np.int64)
            coefficients = rng.integers(0, self.m, size=len(data))
            positive = parity(coefficients & self._buckets(data, rows)) == 0
            flips = rng.integers(0, WORD, size=len(data), dtype=np.uint32) < np.uint32(self.flip_threshold)
            bits = (positive ^ flips).astype(np.uint8)
            chunks.append(np.column_stack([rows & 0xFF, rows >> 8, coefficients & 0xFF, coefficients >> 8,
                                           bits]).astype(np.uint8))
        return np.concatenate(chunks)

    def empty_reports(self) -> npt.NDArray[np.uint8]:
        return np.zeros((0, 5), dtype=np.uint8)

    def unpack(self, reports: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                                                      npt.NDArray[np.int64]]:
        """The rows, coefficients and bits of ``reports`` (checked).

        Parameters
        ----------
        reports : array_like of uint8, shape (n, 5)
            Reports as ``perturb`` returns them.

        Returns
        -------
        rows, coefficients, bits : numpy.ndarray
            int64 (n,) each.

        Raises
        ------
        ValidationError
            A report of another shape or dtype, a row or coefficient out of range, or a bit other than 0 or 1.

        Examples
        --------
        >>> import lipdesign as ld
        >>> sketch = ld.mechanisms.HadamardCountMeanSketch(1.0, m=8, d=2, seed=1)
        >>> [part.shape for part in sketch.unpack(sketch.perturb(["the", "of"], rng=0))]
        [(2,), (2,), (2,)]
        """
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != 5 or reports.dtype != np.uint8:
            raise ValidationError(f"reports has shape {reports.shape} and dtype {reports.dtype}; "
                                  "HadamardCountMeanSketch reports are uint8 (n, 5): row, coefficient, bit")
        wide = reports.astype(np.int64)
        rows, coefficients, bits = wide[:, 0] | wide[:, 1] << 8, wide[:, 2] | wide[:, 3] << 8, wide[:, 4]
        for name, values, bound in (("row", rows, self.d), ("coefficient", coefficients, self.m), ("bit", bits, 2)):
            if values.size and values.max() >= bound:
                row = int(np.argmax(values >= bound))
                raise ValidationError(f"reports[{row}] has {name} {values[row]}; it must be below {bound}")
        return rows, coefficients, bits

    def _statistics(self, reports):
        rows, coefficients, bits = self.unpack(reports)
        cells = rows * self.m + coefficients
        reports_per_cell = np.bincount(cells, minlength=self.d * self.m).reshape(self.d, self.m)
        ones = np.bincount(cells, weights=bits, minlength=self.d * self.m).reshape(self.d, self.m)
        return len(rows), {"cell_reports": reports_per_cell.astype(np.int64), "ones": ones.astype(np.int64)}

    def _entries(self, data):
        """(row, string, bucket) of every string in every row: the entries ``_pair_sums`` joins."""
        rows = np.repeat(np.arange(self.d), len(data))
        strings = np.tile(np.arange(len(data)), self.d)
        return rows, strings, self._buckets(list(data) * self.d, rows)

    def _design(self):
        """The candidates' buckets (K, d) and G = m x the number of rows in which two candidates share a bucket
        (built by joining their entries on (row, bucket), memory in the number of sharing pairs)."""
        candidates = self.strings.required_candidates("decoding HadamardCountMeanSketch reports")
        if len(candidates) > DENSE_CANDIDATES:
            raise ValidationError(f"candidates holds {len(candidates)} strings; the Hadamard sketch decodes at most "
                                  f"{DENSE_CANDIDATES} (its least squares is dense)")
        data = [candidate.encode("utf-8") for candidate in candidates]
        entries = self._entries(data)
        buckets = entries[2].reshape(self.d, len(data)).T
        gram = self.m * self._pair_sums(entries, entries, np.ones((self.d, self.m)), len(data))
        if np.linalg.matrix_rank(gram, hermitian=True) < len(candidates):  # G is symmetric: eigvalsh, not an SVD
            raise ValidationError(f"candidates holds {len(candidates)} strings; two or more share a bucket in every "
                                  f"one of the d = {self.d} rows, so no decoder can tell them apart: use more rows")
        return buckets, gram

    def _scale(self) -> float:
        """c = 1 / (1 - 2 flip): the realised flip's debiasing factor, (e^eps + 1) / (e^eps - 1) when exact."""
        return float(1 / (1 - 2 * self.flip))

    def _estimate(self, aggregate: Aggregate, method: str) -> Estimate:
        """Least squares (docs/math.md §16.4): y = c (ones - zeros) per cell, X^T y by one fast Walsh-Hadamard
        transform per row, N = d m G^-1 X^T y."""
        buckets, gram = self._design()
        n = aggregate.n
        transformed = self._bucket_counts(aggregate)
        projected = transformed[np.arange(self.d)[None, :], buckets].sum(axis=1)
        counts = self.d * self.m * np.linalg.solve(gram, projected)
        inverse_diagonal = np.diag(np.linalg.inv(gram))
        variance = n * self.d * self.m * self._scale() ** 2 * inverse_diagonal - np.maximum(counts, 0.0)
        frequencies = counts / n
        mass, error = self._unlisted(buckets, aggregate)
        outside = ("the mass outside the list cannot be estimated: the candidates use every (row, bucket) cell"
                   if math.isnan(mass) else f"users outside the list, estimated from the cells no candidate uses: "
                   f"{mass:.3f} +- {error:.2g} (unlisted_mass())")
        note = (f"least squares over {len(gram)} candidates (docs/math.md §16.4): unbiased when they hold every "
                f"value the users have; {outside}; standard errors from n d m c^2 (G^-1)_kk - N_k at the estimated "
                "counts")
        return Estimate(frequencies, np.sqrt(np.maximum(variance, 0.0)) / n, n=n, method=method,
                        names=self.estimand_names(), note=note)

    def _bucket_counts(self, aggregate):
        """(d, m): H^T y_j per row, y the debiased signs per (row, coefficient): an unbiased count of the row's users
        in each bucket (the Hadamard rows are orthogonal, docs/math.md §16.4)."""
        cells, ones = aggregate.statistics["cell_reports"], aggregate.statistics["ones"]
        signs = self._scale() * (2 * ones - cells).astype(float)  # (d, m)
        return np.stack([fwht(row) for row in signs])

    def unlisted_mass(self, reports: npt.ArrayLike | Aggregate) -> tuple[float, float]:
        """The share of users whose value is not a candidate, and its standard error (docs/math.md §16.4), from the
        (row, bucket) cells no candidate falls in: a row's debiased count of a bucket counts that row's users there,
        and an unlisted string falls in an unused bucket with probability s_j, the unused share of row j. Unbiased
        on average over the public hash functions; least squares spreads this mass over the candidates.

        Parameters
        ----------
        reports : array_like or Aggregate
            The reports, or their aggregate.

        Returns
        -------
        tuple of float
            (share, standard error); (nan, nan) when the candidates use every bucket of every row.

        Raises
        ------
        ValidationError
            No candidates, or reports of another mechanism.

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> words = np.array([f"w{i}" for i in range(400)], dtype=object)
        >>> users = words[np.random.default_rng(0).integers(0, 400, size=100_000)]  # 300 of 400 words are unlisted
        >>> sketch = ld.mechanisms.HadamardCountMeanSketch(4.0, m=256, d=16, seed=1, candidates=list(words[:100]))
        >>> share, error = sketch.unlisted_mass(sketch.perturb(users, rng=3))
        >>> round(share, 2), round(error, 2)  # one bit per report: a larger error than the sketch's m signs
        (0.76, 0.06)
        """
        aggregate = self._aggregate_of(reports)
        buckets, _ = self._design()
        return self._unlisted(buckets, aggregate)

    def _unlisted(self, buckets, aggregate):
        free = np.ones((self.d, self.m), dtype=bool)
        free[np.arange(self.d)[None, :], buckets] = False
        share = free.mean(axis=1)
        used = share > 0
        rows = aggregate.statistics["cell_reports"].sum(axis=1)
        total = float(rows[used].sum())
        if not used.any() or total == 0:
            return math.nan, math.nan
        counts = np.where(free, self._bucket_counts(aggregate), 0.0).sum(axis=1)
        weight = np.where(used, 1 / np.where(used, share, 1.0), 0.0)
        # the debiased counts of distinct buckets are uncorrelated, each with variance at most n_j c^2
        variance = rows * self._scale() ** 2 * free.sum(axis=1)
        return float(weight @ counts) / total, math.sqrt(float(weight ** 2 @ variance)) / total

    def _means(self, population):
        """Per distinct value u of the population, its users' expected contribution to the counts, G^-1 (m x the
        rows in which each candidate shares u's bucket) (e_u for a listed value), and how many users hold u."""
        _, gram = self._design()
        candidates = [candidate.encode("utf-8") for candidate in self.strings.required_candidates("the variance")]
        unique, counts = self._unique(population)
        shared = self._pair_sums(self._entries(candidates), self._entries(unique), np.ones((self.d, self.m)),
                                 len(unique))  # (K, U)
        return gram, np.linalg.solve(gram, self.m * shared), counts.astype(float)

    def _expected(self, population, method, user_ids):
        """E[frequencies] given the users' values: the candidates' frequencies when the list holds every value
        (docs/math.md §16.4)."""
        _, means, counts = self._means(population)
        return means @ counts / counts.sum()

    def _variance(self, population, n, method, user_ids):
        """Var[frequencies] given the users' values (docs/math.md §16.4): each user's contribution
        d m G^-1 x_jl c s has second moment d m c^2 (G^-1)_kk whatever her value (s^2 = 1, sum over (j, l) of
        x x^T = G), less the square of its mean."""
        gram, means, counts = self._means(population)
        second = counts.sum() * self.d * self.m * self._scale() ** 2 * np.diag(np.linalg.inv(gram))
        return (second - (means ** 2) @ counts) / counts.sum() ** 2

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): two generated strings v, w that differ in a bucket of some row;
        a report is classed by whether v's and w's signs at its (row, coefficient) are equal, and whether its bit
        agrees with v's sign. Where the signs differ the two rows' class probabilities are 1 - flip and flip,
        swapped: the full epsilon.

        Returns
        -------
        AuditPlan
            Inputs v and w; 4 classes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.HadamardCountMeanSketch(1.0, m=8, d=2, seed=1).audit_plan().table.shape
        (2, 4)
        """
        tries = [f"audit-{i}".encode() for i in range(64)]
        buckets = np.stack([self._buckets(tries, np.full(len(tries), row)) for row in range(self.d)], axis=1)
        second = 1 + int(np.argmax((buckets[1:] != buckets[0]).any(axis=1)))
        pair = [tries[0], tries[second]]
        equal = float(np.mean(np.where(buckets[0] == buckets[second], 1.0, 0.5)))  # Pr[signs equal]
        keep, flip = float(1 - self.flip), float(self.flip)

        def classify(reports):
            rows, coefficients, bits = self.unpack(reports)
            signs = [parity(coefficients & self._buckets([value] * len(rows), rows)) == 0 for value in pair]
            return 2 * (signs[0] != signs[1]) + (bits != signs[0])

        table = [[equal * keep, equal * flip, (1 - equal) * keep, (1 - equal) * flip],
                 [equal * keep, equal * flip, (1 - equal) * flip, (1 - equal) * keep]]
        return AuditPlan(np.array([value.decode() for value in pair], dtype=object), np.array(table), classify,
                         [f"v={pair[0].decode()!r}", f"w={pair[1].decode()!r}"],
                         ["signs equal, bit = v's", "signs equal, bit != v's", "signs differ, bit = v's",
                          "signs differ, bit != v's"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §12).

        Returns
        -------
        dict
            ``flip_threshold``: flip the sign when its 32-bit word is below it.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.HadamardCountMeanSketch(2.0, m=64, d=8, seed=3).device_numbers()
        {'flip_threshold': 511972652}
        """
        return {"flip_threshold": self.flip_threshold}
