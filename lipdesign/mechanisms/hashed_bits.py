"""Strings reported as hashed bits: the shared part of RAPPOR and the count-mean sketch (docs/math.md §16). Numpy
only.

A family here hashes a user's string into a filter of m bits with h public hash functions per cohort (a
RAPPOR cohort, a sketch's row), sends the cohort and m bits, each 1 with probability q* on the filter and p* off it
(independently given the filter), and is decoded over a candidate list by least squares (docs/math.md §16.4). A
report is ``2 + ceil(m / 8)`` bytes: the cohort (2 bytes, low byte first), then the m bits packed 8 to a byte, bit i
being bit i mod 8 of byte 2 + i div 8. The server's statistics are, per cohort, the number of reports and the count
of each bit.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.chacha import stream_words
from lipdesign.domains import Strings
from lipdesign.errors import SolverError, ValidationError, require
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import Mechanism
from lipdesign.mechanisms.estimate import Estimate
from lipdesign.mechanisms.memo import checked_keys, device_keys, memo_words
from lipdesign.mechanisms.parallel import one_blas_thread
from lipdesign.mechanisms.sampling import public_seed
from lipdesign.notions import LDP
from lipdesign.strings import bounded, byte_words, hash_key, string_hash
from lipdesign.validation import fmt, index_array, integer, real_number
from lipdesign.verification import verify_table

if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from fractions import Fraction
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.aggregate import Aggregate
    from lipdesign.model import Prior

#: Largest filter (bits per report), number of hash functions and number of cohorts.
MAX_BITS = 2**16
MAX_HASHES = 64
MAX_COHORTS = 2**16

#: Users perturbed per chunk, at most: a chunk holds CHUNK_WORDS 32-bit words at most (64 MiB), so fewer users
#: when the filter is wide (``chunk``).
CHUNK = 2**14
CHUNK_WORDS = 2**24


def chunk(m: int) -> int:
    """Users per chunk for reports of m bits: CHUNK, or fewer so that a chunk holds at most CHUNK_WORDS words."""
    return max(1, min(CHUNK, CHUNK_WORDS // m))

#: Largest cohorts x candidates^2 for which ``estimate`` adds the cohort draw's variance (it costs one K x K
#: product per cohort).
MAX_COHORT_TERM = 2**22

#: ``_statistics`` sums the bits cohort by cohort when at most this many cohorts (or n / 256) are present.
GROUPED_COHORTS = 4096

#: Longest candidate list decoded with a dense G (K x K); longer lists are solved by conjugate gradients on the
#: sparse G, with the standard errors of the SPARSE_ERRORS largest estimates.
DENSE_CANDIDATES = 2048
SPARSE_ERRORS = 20

#: Conjugate gradients stop at this relative residual (ERROR_TOLERANCE for a standard error's row of G^-1), or after
#: CG_ITERATIONS steps (then the list is refused).
CG_TOLERANCE = 1e-10
ERROR_TOLERANCE = 1e-6
CG_ITERATIONS = 2000

#: The ChaCha20 block counter a device's cohort is drawn at (nonce 0): the permanent words of its values start at
#: block 0 and use fewer than 2^12 blocks, so the cohort's word is never one of theirs (docs/math.md §16.5).
COHORT_BLOCK = 2**63

#: 2^32: the 32-bit words every coin of these families compares with an integer threshold (docs/math.md §16.2).
WORD = 2**32


def threshold(probability: float, field: str, scale: int = WORD) -> int:
    """The integer threshold round(probability * scale) of a coin drawn on a 32-bit word."""
    return int(round(real_number(probability, field, 0.0, 1.0) * scale))


class FilterGram:
    """G = A^T A for a long candidate list, never formed: A (cohort and bit by candidate, 0/1) is held as the
    candidates' filter entries, so G x costs two passes over them (numpy only). ``solve`` runs Jacobi-preconditioned
    conjugate gradients; ``weighted(x, w)`` is A^T diag(w) A x.

    The entries are held twice, sorted by cell and sorted by string, so that each pass is a gather and one
    ``np.add.reduceat`` over contiguous runs (a weighted ``np.bincount`` scatters instead: twice the time per product,
    measured for 10,000 candidates in 128 cohorts of 256 bits in the same process)."""

    def __init__(self, entries: Any, cohorts: int, m: int, size: int) -> None:
        self.cohorts_, self.strings, self.bits = entries
        self.cells, self.size = cohorts * m, size
        self.cell = self.cohorts_ * m + self.bits
        self.diagonal = np.bincount(self.strings, minlength=size).astype(float)
        self._by_cell = self._runs(self.cell, self.strings)
        self._by_string = self._runs(self.strings, self.cell)

    @staticmethod
    def _runs(key, other):
        """(the distinct keys, where each key's run starts, ``other`` in key order): the entries sorted by key."""
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        starts = np.flatnonzero(np.concatenate(([True], sorted_key[1:] != sorted_key[:-1]))) if key.size else \
            np.zeros(0, dtype=np.int64)
        return sorted_key[starts], starts, other[order]

    def __len__(self) -> int:
        return self.size

    def weighted(self, x: npt.NDArray[Any], weights: npt.NDArray[Any] | None = None) -> npt.NDArray[np.float64]:
        """A^T diag(weights) A x (weights per (cohort, bit), flattened; None: all 1)."""
        image = np.zeros(self.cells)
        result = np.zeros(self.size)
        if not self.cell.size:
            return result
        cells, starts, strings = self._by_cell
        image[cells] = np.add.reduceat(np.asarray(x, dtype=float)[strings], starts)
        if weights is not None:
            image = image * weights
        strings_present, starts, cells_of = self._by_string
        result[strings_present] = np.add.reduceat(image[cells_of], starts)
        return result

    def solve(self, b: npt.NDArray[Any], tolerance: float = CG_TOLERANCE) -> npt.NDArray[np.float64]:
        """x with G x = b to the relative residual ``tolerance``, by preconditioned conjugate gradients;
        ValidationError when they do not converge (G singular: candidates that no decoder can tell apart)."""
        if (self.diagonal <= 0).any():
            raise ValidationError("candidates include a string with an empty filter; no decoder can estimate it")
        x = np.zeros(self.size)
        residual = np.asarray(b, dtype=float).copy()
        z = residual / self.diagonal
        direction = z.copy()
        product = residual @ z
        target = tolerance * max(float(np.linalg.norm(b)), 1e-300)
        for _ in range(CG_ITERATIONS):
            if np.linalg.norm(residual) <= target:
                return x
            image = self.weighted(direction)
            curvature = direction @ image
            if curvature <= 0:  # G is singular along this direction: candidates no decoder separates
                break
            step = product / curvature
            x += step * direction
            residual -= step * image
            z = residual / self.diagonal
            product, previous = residual @ z, product
            direction = z + (product / previous) * direction
        if np.linalg.norm(residual) <= target:
            return x
        raise ValidationError(f"candidates holds {self.size} strings; least squares did not converge in "
                              f"{CG_ITERATIONS} conjugate-gradient steps (their filters are nearly dependent): use "
                              "fewer candidates, or more bits or cohorts")


class StringMechanism(Mechanism):
    """A mechanism over strings from an open domain (docs/math.md §16): the ``Strings`` input domain, an optional
    candidate list that is no part of the mechanism (``with_candidates``), the public hash keys, and the join of
    two sets of hashed entries (cohort or row, string, bit or bucket) on the cells they share."""

    m: int
    seed: int
    strings: Strings

    def _open_domain(self, seed: int | None, max_bytes: int, candidates: Sequence[str] | None,
                     functions: int) -> npt.NDArray[np.uint64]:
        """Set the public seed and the input domain; the keys of hash functions 0..functions-1 (read-only)."""
        self.seed = public_seed(seed)
        #: The input domain, typed as what it is (``input_domain`` is the same object).
        self.strings = Strings(max_bytes, candidates)
        self.input_domain = self.strings
        keys = hash_key(self.seed, np.arange(functions))
        keys.setflags(write=False)
        return keys

    def _pairs(self, first: Any, second: Any, weights: npt.NDArray[np.float64]
               ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The pairs of entries of ``first`` and ``second`` (as ``_entries`` gives them) that share a (cohort, bit),
        joined by sorting (numpy only, memory in the number of sharing pairs): (string of first, string of second,
        weights[cohort, bit]) as three arrays, one element per pair."""
        (c1, a, i1), (c2, b, i2) = first, second
        left, right = c1 * self.m + i1, c2 * self.m + i2
        order = np.argsort(right, kind="stable")
        low = np.searchsorted(right[order], left, side="left")
        high = np.searchsorted(right[order], left, side="right")
        repeats = high - low
        starts = np.repeat(low - np.cumsum(repeats) + repeats, repeats) + np.arange(repeats.sum())
        own = np.repeat(np.arange(left.size), repeats)
        return a[own], b[order[starts]], weights.ravel()[left[own]]

    def _pair_sums(self, first, second, weights, size):
        """sum over cohorts c and bits i of weights[c, i] [i in F_c(a)] [i in F_c(b)] for every a of ``first`` and b of
        ``second``: a dense (len(first strings), size) matrix."""
        rows, columns, values = self._pairs(first, second, weights)
        count = int(first[1].max()) + 1 if first[1].size else 0
        return np.bincount(rows * size + columns, weights=values, minlength=count * size).reshape(count, size)

    @property
    def max_bytes(self) -> int:
        """The longest value, in bytes of UTF-8."""
        return self.strings.max_bytes

    @property
    def candidates(self) -> tuple[str, ...] | None:
        """The strings ``estimate`` decodes over (None until given)."""
        return self.strings.candidates

    def with_candidates(self, candidates: Sequence[str]) -> Self:
        """The same mechanism (same reports, file and fingerprint) decoding over ``candidates``.

        Parameters
        ----------
        candidates : sequence of str
            Distinct non-empty strings of at most ``max_bytes`` bytes.

        Returns
        -------
        HashedBitReports
            A copy (of the same family) whose ``estimate`` decodes over the candidates.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1)
        >>> decoder = rappor.with_candidates(["the", "of", "and"])
        >>> decoder == rappor, decoder.candidates
        (True, ('the', 'of', 'and'))
        """
        family: Any = type(self)  # every family of this base takes candidates= beside its parameters
        return family(**self.parameters(), candidates=candidates)

    @staticmethod
    def _unique(population):
        """The distinct values of a population (UTF-8 bytes) and how many users hold each."""
        index: dict[bytes, int] = {}
        positions = np.fromiter((index.setdefault(value, len(index)) for value in population), dtype=np.int64,
                                count=len(population))
        return list(index), np.bincount(positions, minlength=len(index))


class HashedBitReports(StringMechanism):
    """The shared part of the hashed-bit families (docs/math.md §16): the filters, the report format, the
    statistics, the least-squares decoding over candidates with its variance, the grouped privacy table of the worst
    pair and the audit plan. A family sets ``m``, ``h``, ``cohorts``, ``seed``, ``strings`` (its input domain),
    ``q_star`` and ``p_star`` (exact rationals: Pr[bit = 1] on and off the filter), and draws its reports.

    Examples
    --------
    >>> import lipdesign as ld
    >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1)
    >>> isinstance(rappor, ld.mechanisms.HashedBitReports), rappor.report_bytes
    (True, 10)
    """

    h: int
    cohorts: int
    q_star: Fraction
    p_star: Fraction

    #: "unbiased": least squares with standard errors; "nnls": non-negative least squares (scipy's), biased but never
    #: negative, for lists that hold many values nobody has (docs/math.md §16.4).
    methods = ("unbiased", "nnls")

    def _sketch(self, m: int, h: int, cohorts: int, seed: int | None, max_bytes: int,
                candidates: Sequence[str] | None, cohort_field: str = "cohorts") -> None:
        """Check and set m, h, the cohorts, the seed, the input domain and the hash keys."""
        self.m = integer(m, "m", low=1, high=MAX_BITS)
        self.h = integer(h, "h", low=1, high=MAX_HASHES)
        if self.h > self.m:
            raise ValidationError(f"h is {self.h}; a filter of m = {self.m} bits takes at most m hash functions")
        self.cohorts = integer(cohorts, cohort_field, low=1, high=MAX_COHORTS)
        keys = self._open_domain(seed, max_bytes, candidates, self.cohorts * self.h)
        #: The hash keys of cohort c: row c (docs/math.md §16.1, functions c h .. c h + h - 1).
        self.keys = keys.reshape(self.cohorts, self.h)

    @property
    def report_bits(self) -> int:
        """Bits per report: 16 (the cohort) + m."""
        return 16 + self.m

    @property
    def report_bytes(self) -> int:
        """Bytes per report: 2 + ceil(m / 8)."""
        return 2 + (self.m + 7) // 8

    def privacy_table(self) -> npt.NDArray[np.object_]:
        """The exact grouped table of the worst pair of strings (docs/math.md §16.3): rows v and v' whose filters
        are disjoint sets of h bits, column (a, b) the outputs with a ones on v's bits and b ones on v''s, as exact
        rationals of what the sampler realises.

        Returns
        -------
        numpy.ndarray
            2 x (h + 1)^2, of ``fractions.Fraction`` (object dtype); its exact LDP epsilon is ``epsilon``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1)
        >>> table = rappor.privacy_table()
        >>> table.shape, sum(table[0]) == 1
        ((2, 9), True)
        """
        h, q_star, p_star = self.h, self.q_star, self.p_star

        def ones(count, probability):
            return math.comb(h, count) * probability ** count * (1 - probability) ** (h - count)

        rows = [[ones(a, q_star) * ones(b, p_star) for a in range(h + 1) for b in range(h + 1)],
                [ones(a, p_star) * ones(b, q_star) for a in range(h + 1) for b in range(h + 1)]]
        table = np.empty((2, (h + 1) ** 2), dtype=object)
        table[:] = rows
        return table

    def _certify(self):
        return verify_table(self.privacy_table(), LDP(self.epsilon), exact=True)

    def filters(self, values: Any, cohorts: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """The Bloom filters of ``values`` in the given cohorts (docs/math.md §16.2), (n, m) booleans.

        Parameters
        ----------
        values : sequence of str or bytes
            The strings (checked as ``perturb`` checks them).
        cohorts : array_like of int
            One cohort per value, 0 to ``cohorts`` - 1.

        Returns
        -------
        numpy.ndarray
            bool (n, m): bit i of row u is set when one of the h hashes of value u in its cohort is i.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=16, h=2, cohorts=4, seed=1)
        >>> rappor.filters(["the", "the"], [0, 1]).sum(axis=1)
        array([2, 2])
        """
        data = self.input_domain.validate(values)
        indices = index_array(cohorts, self.cohorts, "cohorts")
        if indices.shape != (len(data),):
            raise ValidationError(f"cohorts is {fmt(indices)}; it must hold one cohort in 0..{self.cohorts - 1} per "
                                  "value")
        return self._filters(data, indices)

    def _filters(self, data, cohorts):
        positions = bounded(string_hash(*byte_words(data), self.keys[cohorts]), self.m)
        filters = np.zeros((len(data), self.m), dtype=bool)
        filters[np.arange(len(data))[:, None], positions] = True
        return filters

    def _pack(self, cohorts, bits):
        head = np.stack([cohorts & 0xFF, cohorts >> 8], axis=1).astype(np.uint8)
        return np.concatenate([head, np.packbits(bits, axis=1, bitorder="little")], axis=1)

    def empty_reports(self) -> npt.NDArray[np.uint8]:
        return np.zeros((0, self.report_bytes), dtype=np.uint8)

    def unpack(self, reports: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
        """The cohorts and bits of ``reports`` (checked).

        Parameters
        ----------
        reports : array_like of uint8, shape (n, 2 + ceil(m / 8))
            Reports as ``perturb`` returns them.

        Returns
        -------
        cohorts : numpy.ndarray
            int64 (n,).
        bits : numpy.ndarray
            uint8 (n, m), 0 or 1.

        Raises
        ------
        ValidationError
            A report of another shape or dtype, a cohort out of range, or a spare bit of the last byte set.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=16, h=2, cohorts=4, seed=1)
        >>> cohorts, bits = rappor.unpack(rappor.perturb(["the", "of"], rng=0))
        >>> cohorts.shape, bits.shape
        ((2,), (2, 16))
        """
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.report_bytes or reports.dtype != np.uint8:
            raise ValidationError(f"reports has shape {reports.shape} and dtype {reports.dtype}; "
                                  f"{type(self).__name__} reports are uint8 (n, {self.report_bytes}): the cohort in 2 "
                                  f"bytes, then m = {self.m} bits")
        cohorts = reports[:, 0].astype(np.int64) | (reports[:, 1].astype(np.int64) << 8)
        if cohorts.size and cohorts.max() >= self.cohorts:
            row = int(np.argmax(cohorts >= self.cohorts))
            raise ValidationError(f"reports[{row}] has cohort {cohorts[row]}; this mechanism has cohorts "
                                  f"0..{self.cohorts - 1}")
        bits = np.unpackbits(reports[:, 2:], axis=1, bitorder="little")
        if bits.shape[1] > self.m and bits[:, self.m:].any():
            row = int(np.argmax(bits[:, self.m:].any(axis=1)))
            raise ValidationError(f"reports[{row}] sets a bit beyond m = {self.m}; the spare bits of the last byte "
                                  "must be 0")
        return cohorts, bits[:, :self.m]

    # -- memoisation on the device (docs/math.md §16.5): one key per device, no table of past answers --------

    device_keys = staticmethod(device_keys)

    def device_cohorts(self, keys: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Each device's cohort, derived from its key (docs/math.md §16.5): the first word w of its ChaCha20 block
        at counter ``COHORT_BLOCK`` = 2^63 and nonce 0 (a block no value's permanent words reach), reduced to
        0..cohorts-1 as (w cohorts) >> 32.

        Parameters
        ----------
        keys : array_like of uint32, shape (n, 8)
            The devices' keys (``device_keys``).

        Returns
        -------
        numpy.ndarray
            int64 (n,).

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=16, h=2, cohorts=4, seed=1)
        >>> cohorts = rappor.device_cohorts(rappor.device_keys(1000, rng=0))
        >>> int(cohorts.min()), int(cohorts.max())
        (0, 3)
        """
        checked = checked_keys(keys)
        words = stream_words(checked, np.zeros(len(checked), np.uint64), 1, COHORT_BLOCK)[:, 0].astype(np.uint64)
        return ((words * np.uint64(self.cohorts)) >> np.uint64(32)).astype(np.int64)

    def _memo_words(self, values: Any, keys: npt.ArrayLike):
        """Per chunk of devices: (their cohorts, drawn from their keys; their values' filters there; the m memo words
        of each device's value: the ChaCha20 stream keyed by the device's key with the value's keyed BLAKE2b nonce,
        docs/math.md §16.5)."""
        data = self.strings.validate(values)
        checked = checked_keys(keys, len(data))
        size = chunk(self.m)
        for start in range(0, len(data), size):
            part, keys_part = data[start:start + size], checked[start:start + size]
            cohorts = self.device_cohorts(keys_part)
            yield cohorts, self._filters(part, cohorts), memo_words(self.fingerprint, part, keys_part, self.m)

    # -- server side --------------------------------------------------------------------------------------------

    def _statistics(self, reports):
        """Per cohort, the reports and the count of each bit: the reports grouped by cohort (a stable radix sort of
        the 16-bit cohorts), then one column sum per cohort present, a loop over cohorts, not reports (np.add.at
        over the n x m bits cost about 6 times more: 1.2 s against 0.2 s at n = 10^6, m = 128, 32 cohorts); with more
        cohorts present than n / 256 (or GROUPED_COHORTS), np.add.at."""
        cohorts, bits = self.unpack(reports)
        per_cohort = np.bincount(cohorts, minlength=self.cohorts).astype(np.int64)
        counts = np.zeros((self.cohorts, self.m), dtype=np.int64)
        present = np.flatnonzero(per_cohort)
        if present.size > max(GROUPED_COHORTS, len(cohorts) // 256):
            np.add.at(counts, cohorts, bits.astype(np.int64))
        elif present.size:
            grouped = bits[np.argsort(cohorts.astype(np.uint16), kind="stable")]
            ends = np.cumsum(per_cohort)
            for cohort in present:
                counts[cohort] = grouped[ends[cohort] - per_cohort[cohort]:ends[cohort]].sum(axis=0, dtype=np.int64)
        return len(cohorts), {"cohort_reports": per_cohort, "bit_counts": counts}

    def _entries(self, data):
        """The filters of ``data`` (UTF-8 strings) in every cohort as sparse entries: (cohort, string, bit) arrays,
        one entry per set bit (a bit two of a string's hashes share counts once)."""
        count = len(data)
        cohorts = np.repeat(np.arange(self.cohorts), count)
        positions = bounded(string_hash(*byte_words(list(data) * self.cohorts), self.keys[cohorts]), self.m)
        positions = np.sort(positions, axis=1)
        fresh = np.ones(positions.shape, dtype=bool)
        fresh[:, 1:] = positions[:, 1:] != positions[:, :-1]
        rows, columns = np.nonzero(fresh)
        return cohorts[rows], rows % count, positions[rows, columns]

    def _design(self):
        """The candidates' filter entries and G = sum_c X_c^T X_c (K x K: the bits two candidates share, over all
        cohorts), refused when G is singular."""
        candidates = self.strings.required_candidates(f"decoding {type(self).__name__} reports")
        entries = self._entries([candidate.encode("utf-8") for candidate in candidates])
        size = len(candidates)
        ones = np.ones((self.cohorts, self.m))
        if size > DENSE_CANDIDATES:
            self._separable(entries, candidates)
            return entries, FilterGram(entries, self.cohorts, self.m, size)
        gram = self._pair_sums(entries, entries, ones, size)
        if gram.shape != (size, size) or np.linalg.matrix_rank(gram, hermitian=True) < size:
            raise ValidationError(f"candidates holds {size} strings; their filters over {self.cohorts} cohorts of "
                                  f"m = {self.m} bits are not linearly independent, so least squares cannot tell "
                                  "them apart: use fewer candidates, or more bits or cohorts")
        return entries, gram

    def _separable(self, entries, candidates):
        """Refuse a long list that least squares cannot separate for certain: two candidates with the same filter in
        every cohort, or more candidates than (cohort, bit) cells in use (G is then singular, and conjugate
        gradients would converge to an arbitrary split)."""
        cohorts, strings, bits = entries
        order = np.lexsort((bits, cohorts, strings))
        signature = np.full((len(candidates), self.cohorts * self.h), -1, dtype=np.int64)
        position = np.arange(order.size) - np.searchsorted(strings[order], strings[order])
        signature[strings[order], position] = (cohorts * self.m + bits)[order]
        _, first, counts = np.unique(signature, axis=0, return_index=True, return_counts=True)
        if (counts > 1).any():
            twin = signature[first[np.argmax(counts > 1)]]
            pair = np.flatnonzero((signature == twin).all(axis=1))[:2]
            raise ValidationError(f"candidates[{pair[0]}] and candidates[{pair[1]}] ({candidates[pair[0]]!r} and "
                                  f"{candidates[pair[1]]!r}) have the same filter in every cohort: no decoder can "
                                  "tell them apart (use more bits or cohorts, or drop one)")
        cells = np.unique(cohorts * self.m + bits).size
        if len(candidates) > cells:
            raise ValidationError(f"candidates holds {len(candidates)} strings; their filters use only {cells} "
                                  "(cohort, bit) cells, so least squares cannot tell them apart: use fewer "
                                  "candidates, or more bits or cohorts")

    def _dense_design(self, what):
        entries, gram = self._design()
        if isinstance(gram, FilterGram):
            raise ValidationError(f"candidates holds {len(gram)} strings; {what} given the users' values is computed "
                                  f"for at most {DENSE_CANDIDATES} candidates (simulate with a shorter list)")
        return entries, gram

    def _solve(self, entries, gram, centred):
        """C G^-1 sum_c X_c^T centred_c: the least-squares counts for the centred bit counts (C, m)."""
        cohorts, strings, bits = entries
        projected = np.bincount(strings, weights=centred[cohorts, bits], minlength=len(gram))
        if isinstance(gram, FilterGram):
            return self.cohorts * gram.solve(projected)
        return self.cohorts * np.linalg.solve(gram, projected)

    def _estimate(self, aggregate: Aggregate, method: str) -> Estimate:
        """Least squares over the candidates (docs/math.md §16.4): unbiased for every listed value's frequency
        when the list holds all the users' values, with conservative standard errors from the bit counts; one BLAS
        thread (``parallel.one_blas_thread``)."""
        with one_blas_thread():
            return self._least_squares(aggregate, method)

    def _least_squares(self, aggregate, method):
        entries, gram = self._design()
        n = aggregate.n
        if n < self.cohorts:
            raise ValidationError(f"reports holds {n} reports; this {type(self).__name__} spreads users over "
                                  f"{self.cohorts} cohorts (rows), and decoding needs at least as many users as "
                                  "cohorts: collect more reports, or use fewer cohorts")
        reports, counts = aggregate.statistics["cohort_reports"], aggregate.statistics["bit_counts"]
        on, off = self.cell_probabilities()
        scale = on - off
        centred = (counts - reports[:, None] * off) / scale
        if method == "nnls":
            return self._non_negative(entries, gram, centred, aggregate)
        counts_hat = self._solve(entries, gram, centred)
        rate = np.divide(counts, reports[:, None], out=np.zeros(counts.shape), where=reports[:, None] > 0)
        bit_variance = reports[:, None] * rate * (1 - rate) / scale ** 2
        if isinstance(gram, FilterGram):
            return self._sparse_estimate(entries, gram, counts_hat, bit_variance, n, method, aggregate)
        inverse = np.linalg.inv(gram)
        variance = self._bit_term(inverse, entries, bit_variance)
        if self.cohorts * len(gram) ** 2 <= MAX_COHORT_TERM:  # the cohort draw's own variance, at the estimates
            variance = variance + np.maximum(counts_hat, 0.0) @ self._cohort_spread(inverse, entries, entries)
            errors = "conservative binomial standard errors"
        else:
            errors = "binomial standard errors given the cohorts (the cohort draw's term is left out at this size)"
        frequencies = counts_hat / n
        note = (f"least squares over {len(gram)} candidates (docs/math.md §16.4): unbiased when they hold every "
                f"value the users have; {self._outside_note(entries, aggregate)}; {errors}")
        return Estimate(frequencies, np.sqrt(np.maximum(variance, 0.0)) / n, n=n, method=method,
                        names=self.estimand_names(), note=note)

    def _non_negative(self, entries, gram, centred, aggregate):
        """Non-negative least squares over the candidates (docs/math.md §16.4): the counts N >= 0 minimising
        sum_c |centred_c - X_c N / C|^2, by scipy's active-set solver on the cells the candidates use (the others
        add a constant). No standard errors: the estimate is biased, toward 0 for candidates nobody holds."""
        require("method='nnls'", "design", "scipy")
        from scipy.optimize import nnls

        if isinstance(gram, FilterGram):
            raise ValidationError(f"candidates holds {len(gram)} strings; method='nnls' forms the cells x candidates "
                                  f"matrix, for at most {DENSE_CANDIDATES} candidates (method='unbiased' takes more)")
        cohorts, strings, bits = entries
        cells, rows = np.unique(cohorts * self.m + bits, return_inverse=True)
        design = np.zeros((cells.size, len(gram)))
        np.add.at(design, (rows, strings), 1.0 / self.cohorts)
        target = centred.ravel()[cells]
        try:
            counts_hat, _ = nnls(design, target, maxiter=50 * len(gram))
        except RuntimeError as error:  # its iteration limit
            raise SolverError(f"scipy's nnls stopped before the optimum ({error}); use method='unbiased'") from None
        gradient = design.T @ (design @ counts_hat - target)  # the optimality conditions, checked: >= 0, 0 where > 0
        tolerance = 1e-6 * max(float(np.abs(design.T @ target).max()), 1.0)
        if gradient.min() < -tolerance or np.abs(gradient[counts_hat > 0]).max(initial=0.0) > tolerance:
            raise SolverError("scipy's nnls returned a point that is not optimal (its gradient breaks the conditions "
                              "of non-negative least squares); use method='unbiased'")
        n = aggregate.n
        note = (f"non-negative least squares over {len(gram)} candidates (docs/math.md §16.4): never negative, and "
                "biased for it (toward 0 where a candidate is rare or absent): no standard errors, use "
                f"method='unbiased' for intervals; {self._outside_note(entries, aggregate)}")
        return Estimate(counts_hat / n, np.full(len(gram), np.nan), n=n, method="nnls", names=self.estimand_names(),
                        note=note)

    def _sparse_estimate(self, entries, gram, counts_hat, bit_variance, n, method, aggregate):
        """A long list (docs/math.md §16.4): the counts by conjugate gradients on the sparse G, and the standard
        errors of the ``SPARSE_ERRORS`` largest estimates, each by one more solve (the others' are nan)."""
        variance = np.full(len(gram), np.nan)
        weights = bit_variance.ravel()
        for k in np.argsort(-counts_hat)[:SPARSE_ERRORS]:
            unit = np.zeros(len(gram))
            unit[k] = 1.0
            row = gram.solve(unit, ERROR_TOLERANCE)  # row k of G^-1, to the precision a standard error needs
            variance[k] = self.cohorts ** 2 * row @ gram.weighted(row, weights)
        frequencies = counts_hat / n
        note = (f"least squares over {len(gram)} candidates by conjugate gradients (docs/math.md §16.4): unbiased "
                f"when they hold every value the users have; {self._outside_note(entries, aggregate)}; binomial "
                f"standard errors given the cohorts for the {min(SPARSE_ERRORS, len(gram))} largest estimates, nan "
                "for the others")
        return Estimate(frequencies, np.sqrt(np.maximum(variance, 0.0)) / n, n=n, method=method,
                        names=self.estimand_names(), note=note)

    def unlisted_mass(self, reports: npt.ArrayLike | Aggregate) -> tuple[float, float]:
        """The share of users whose value is not a candidate, and its standard error (docs/math.md §16.4), from the
        (cohort, bit) cells no candidate's filter uses: only values outside the list set bits there. A random
        string sets h' = m (1 - (1 - 1/m)^h) distinct bits of its cohort, a share s_c of them in those cells, so the
        debiased counts there, over h' s_c, count the unlisted users of cohort c. Unbiased on average over the
        public hash functions (given them, for many distinct unlisted values); least squares cannot see this mass,
        since it spreads it over the candidates whose cells the unlisted values share.

        Parameters
        ----------
        reports : array_like or Aggregate
            The reports, or their aggregate.

        Returns
        -------
        tuple of float
            (share, standard error); (nan, nan) when the candidates use every cell. The error is the counts'
            binomial one given the hash functions; which cells the unlisted values fall in adds its own (about 0.01
            for 150 unlisted words in 256 x 8 cells), not included.

        Raises
        ------
        ValidationError
            No candidates (``with_candidates``), or reports of another mechanism.

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> words = np.array([f"w{i}" for i in range(400)], dtype=object)
        >>> users = words[np.random.default_rng(0).integers(0, 400, size=100_000)]  # 300 of 400 words are unlisted
        >>> sketch = ld.mechanisms.CountMeanSketch(4.0, m=256, d=16, seed=1, candidates=list(words[:100]))
        >>> share, error = sketch.unlisted_mass(sketch.perturb(users, rng=2))
        >>> round(share, 2), round(error, 3)
        (0.72, 0.026)
        """
        aggregate = self._aggregate_of(reports)
        candidates = self.strings.required_candidates(f"the unlisted mass of {type(self).__name__} reports")
        entries = self._entries([candidate.encode("utf-8") for candidate in candidates])
        return self._unlisted(entries, aggregate)

    def _unlisted(self, entries, aggregate):
        cohorts, _, bits = entries
        free = np.ones((self.cohorts, self.m), dtype=bool)
        free[cohorts, bits] = False
        share = free.mean(axis=1)
        used = share > 0
        reports, counts = aggregate.statistics["cohort_reports"], aggregate.statistics["bit_counts"]
        if not used.any() or reports[used].sum() == 0:
            return math.nan, math.nan
        on, off = (np.broadcast_to(side, (self.cohorts, self.m)) for side in self.cell_probabilities())
        centred = (counts - reports[:, None] * off) / (on - off)
        rate = np.divide(counts, reports[:, None], out=np.zeros(counts.shape), where=reports[:, None] > 0)
        variance = reports[:, None] * rate * (1 - rate) / (on - off) ** 2
        distinct = self.m * (1 - (1 - 1 / self.m) ** self.h)  # a random string's distinct bits in its cohort
        weight = np.where(used, 1 / (distinct * np.where(used, share, 1.0)), 0.0)
        total = float(reports[used].sum())
        mass = float(weight @ np.where(free, centred, 0.0).sum(axis=1)) / total
        error = math.sqrt(float(weight ** 2 @ np.where(free, variance, 0.0).sum(axis=1))) / total
        return mass, error

    def _outside_note(self, entries, aggregate):
        """The estimate note's words on the mass outside the list (``unlisted_mass``)."""
        mass, error = self._unlisted(entries, aggregate)
        if math.isnan(mass):
            return ("the mass outside the list cannot be estimated: the candidates use every (cohort, bit) cell, and "
                    "least squares spreads any such mass over them")
        return (f"users outside the list, estimated from the cells no candidate uses: {mass:.3f} +- {error:.2g} given "
                "the hash functions (unlisted_mass(); least squares spreads that mass over the candidates sharing its "
                "cells)")

    def _population_bits(self, population):
        """The users' values as distinct strings: their filter entries and how many users hold each."""
        unique, counts = self._unique(population)
        return self._entries(unique), counts.astype(float)

    def _closed_form(self, method):
        if method == "nnls":
            raise ValidationError("method is 'nnls'; the mean and variance of non-negative least squares have no "
                                  "closed form here: use method='unbiased' (or simulate)")

    def _expected(self, population, method, user_ids):
        """E[frequencies] given the users' values (docs/math.md §16.4): the candidates' frequencies when the list
        holds every value; a value outside it moves mass onto the candidates whose bits it shares."""
        self._closed_form(method)
        entries, gram = self._dense_design("the expected estimate")
        (cohorts, strings, bits), counts = self._population_bits(population)
        expected = np.zeros((self.cohorts, self.m))
        np.add.at(expected, (cohorts, bits), counts[strings] / self.cohorts)
        return self._solve(entries, gram, expected) / counts.sum()

    def _variance(self, population, n, method, user_ids):
        """Var[frequencies] given the users' values: the bits' binomial variance averaged over the uniform cohort,
        plus the variance of the cohort draw itself (docs/math.md §16.4)."""
        self._closed_form(method)
        with one_blas_thread():
            return self._weighted_variance(*self._population_bits(population))

    def _weighted_variance(self, values: Any, counts: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Var[frequencies] of the candidates' estimate when the users' values are the strings whose filter entries
        are ``values`` (as ``_entries`` gives them), held by ``counts`` users each (docs/math.md §16.4). Linear in
        the counts up to the final division: counts that are a prior (summing to 1) give n x Var, the per-user
        variance."""
        entries, gram = self._dense_design("the variance")
        cohorts, strings, bits = values
        on, off = (np.broadcast_to(side, (self.cohorts, self.m)) for side in self.cell_probabilities())
        # every bit varies as off (1 - off) per user of its cohort, a bit of the user's filter as on (1 - on) instead
        bit_variance = off * (1 - off) * counts.sum() / self.cohorts
        np.add.at(bit_variance, (cohorts, bits),
                  (on * (1 - on) - off * (1 - off))[cohorts, bits] * counts[strings] / self.cohorts)
        inverse = np.linalg.inv(gram)
        variance = self._bit_term(inverse, entries, bit_variance / (on - off) ** 2)
        variance = variance + counts @ self._cohort_spread(inverse, entries, values)
        return variance / counts.sum() ** 2

    def variance_at(self, prior: Prior) -> npt.NDArray[np.float64]:
        """n x Var of each estimated frequency when the users hold the prior's labels (as strings) in its
        proportions, decoded over those labels (docs/math.md §16.4): the figure ``ld.compare`` and the designs
        report (n x its sum).

        Parameters
        ----------
        prior : Prior
            Its labels are the strings, its probabilities their share of the users.

        Returns
        -------
        numpy.ndarray
            One entry per label.

        Examples
        --------
        >>> import lipdesign as ld
        >>> sketch = ld.mechanisms.CountMeanSketch(2.0, m=64, d=8, seed=3)
        >>> round(float(sketch.variance_at(ld.Prior([0.5, 0.3, 0.2], labels=["a", "b", "c"])).sum()), 3)
        2.762
        """
        labels = [str(label) for label in prior.labels]
        decoder = self if self.candidates == tuple(labels) else self.with_candidates(labels)
        weights = prior.probabilities / prior.probabilities.sum()
        return decoder._weighted_variance(decoder._entries([label.encode("utf-8") for label in labels]), weights)

    def cell_probabilities(self) -> tuple[Any, Any]:
        """Pr[bit = 1] of a (cohort, bit) cell on the user's filter and off it, as realised: (q*, p*) as floats for
        the families with one pair, arrays (cohorts, m) for a design with a pair per cell.

        Returns
        -------
        tuple
            (on, off), each a float or a (cohorts, m) array, broadcastable against the bit counts.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1).cell_probabilities()
        (0.6875, 0.5625)
        """
        return float(self.q_star), float(self.p_star)

    def _bit_term(self, inverse, entries, bit_variance):
        """diag(C^2 G^-1 (sum_c X_c^T D_c X_c) G^-1): the bits' variance through least squares."""
        middle = self._pair_sums(entries, entries, bit_variance, len(inverse))
        # two matrix products (BLAS), not einsum's triple loop: 0.05 s against 1.7 s at K = 1,000
        return self.cohorts ** 2 * ((inverse @ middle) * inverse).sum(axis=1)

    def _cohort_spread(self, inverse, entries, values):
        """Per value (``values``: filter entries of U strings) the variance over its uniform cohort c of its expected
        contribution C G^-1 X_c^T x_c(v) to the counts: (U, K), one cohort at a time."""
        size = int(values[1].max()) + 1
        first, second = np.zeros((size, len(inverse))), np.zeros((size, len(inverse)))
        for cohort in range(self.cohorts):
            mine, theirs = (tuple(part[entry[0] == cohort] for part in entry) for entry in (values, entries))
            overlaps = np.zeros((size, len(inverse)))
            if mine[0].size and theirs[0].size:
                shared = self._pair_sums(mine, theirs, np.ones((self.cohorts, self.m)), len(inverse))
                overlaps[:len(shared)] = shared
            contribution = self.cohorts * overlaps @ inverse  # G^-1 is symmetric
            first += contribution / self.cohorts
            second += contribution ** 2 / self.cohorts
        return second - first ** 2

    def audit_plan(self) -> AuditPlan | None:
        """What ``ld.audit`` reads (docs/math.md §14): two strings whose filters are disjoint sets of h bits in every
        cohort (the worst pair of docs/math.md §16.3), each report classed by the ones it has on each string's bits,
        the rows ``privacy_table()``'s. None when no such pair is found among 10^4 generated strings (a filter too
        small for its hash functions).

        Returns
        -------
        AuditPlan or None
            Inputs the two strings; (h + 1)^2 classes (a, b).

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1)
        >>> plan = rappor.audit_plan()
        >>> plan.table.shape, len(plan.class_names)
        ((2, 9), 9)
        """
        pair = self._disjoint_pair()
        if pair is None:
            return None
        masks = np.stack([self._filters(pair, np.full(2, c)) for c in range(self.cohorts)])  # (C, 2, m)
        side = self.h + 1

        def classify(reports):
            cohorts, bits = self.unpack(reports)
            ones = np.einsum("ni,nvi->nv", bits.astype(np.int64), masks[cohorts].astype(np.int64))
            return ones[:, 0] * side + ones[:, 1]

        names = [f"{a} of v's bits, {b} of v''s" for a in range(side) for b in range(side)]
        return AuditPlan(np.array([value.decode("utf-8") for value in pair], dtype=object), self.privacy_table(),
                         classify, [f"v={pair[0].decode()!r}", f"v'={pair[1].decode()!r}"], names)

    def _disjoint_pair(self):
        """Two generated strings whose filters have h bits each and share none, in every cohort."""
        tries = [f"audit-{i}".encode() for i in range(10_000)]
        filters = np.stack([self._filters(tries, np.full(len(tries), c)) for c in range(self.cohorts)])
        full = (filters.sum(axis=2) == self.h).all(axis=0)
        candidates = np.flatnonzero(full)
        for position, first in enumerate(candidates[:200]):
            overlap = (filters[:, first, None, :] & filters[:, candidates[position + 1:], :]).any(axis=2).any(axis=0)
            if (~overlap).any():
                return [tries[first], tries[candidates[position + 1 + int(np.argmax(~overlap))]]]
        return None

