"""Bit-vector reports (unary encoding, OUE, subset selection): exact sampling of independent bits, packed 8 to a
byte, little-endian (docs/math.md §3, §8.3). Numpy only."""

from typing import Any

import numpy as np
import numpy.typing as npt

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.bitsums import packed_column_sums
from lipdesign.mechanisms.sampling import BLOCK
from lipdesign.validation import fmt

#: Unary reports are bit-packed, n * ceil(k / 8) bytes; ``perturb`` refuses to build more than this (2 GiB) in one
#: call. Perturb fewer users per call, or use OLH / HadamardResponse, whose reports are O(1).
MAX_OUE_BYTES = 2**31


#: ``OUE.perturb`` draws the random bytes of at most this many bits per segment (several users, or a column range of
#: one user when k is larger; a multiple of 64), then the refinement words of that segment's ties.
OUE_SEGMENT = 2**22


#: A threshold T of OUE's sampler is split as T = hi 2^56 + lo: one random byte decides unless it equals hi.
LOW_BITS = 56


#: OUE and ``UnaryEncoding`` perturb, and ``UnaryEncoding`` aggregates, in blocks of about this many unpacked bits.
PACK_BLOCK = 2**22


def unary_reports(values, k, keep, other, rng, name):
    """Unary-encoding reports, uint8 (n, k): bit j is 1 with probability ``keep`` (a scalar, or one per value) when
    j is the user's value and ``other`` (scalar or one per bit) otherwise, realised exactly as ceil(p 2^53) / 2^53
    (``sampling.realized_probability``): one 64-bit word w per bit (``random_raw``), the bit being 1 iff w >> 11 <
    ceil(p 2^53), the integer form of ``rng.random() < p`` (which draws the same bits from the same words).
    Chunks of about ``BLOCK`` words: several users per chunk (first every user's k words in order, then one word per
    user for her own bit), or (k > BLOCK) one user's row in column blocks, which draws the same stream as the whole
    row at once."""
    check_report_bytes(values.size, k, name, per_report="k")
    keep, other = _grid_thresholds(keep), _grid_thresholds(other)
    out = np.empty((values.size, k), dtype=np.bool_)
    step = max(1, BLOCK // k)
    shift = np.uint64(11)
    for start in range(0, values.size, step):
        chunk = values[start:start + step]
        rows = out[start:start + chunk.size]
        for column in range(0, k, BLOCK):  # a single block unless k > BLOCK (then chunk.size == 1)
            width = min(BLOCK, k - column)
            words = rng.bit_generator.random_raw(chunk.size * width).reshape(chunk.size, width)
            np.right_shift(words, shift, out=words)
            np.less(words, other[column:column + width] if other.ndim else other, out=rows[:, column:column + width])
        rows[np.arange(chunk.size), chunk] = (rng.bit_generator.random_raw(chunk.size) >> shift) < \
            (keep[chunk] if keep.ndim else keep)
    return out.view(np.uint8)


def check_report_bytes(n, width, name, per_report="ceil(k / 8)"):
    """Refuse building n reports of ``width`` bytes (``per_report`` says how they are counted) beyond MAX_OUE_BYTES,
    before allocating."""
    if n * width > MAX_OUE_BYTES:
        raise ValidationError(f"values has {n} entries; {name} reports take n * {per_report} = {n} * {width} bytes and "
                              f"perturb builds at most MAX_OUE_BYTES = {MAX_OUE_BYTES} per call (perturb fewer users "
                              "per call, or use OLH / HadamardResponse for large k)")


def check_spare_bits(reports, k):
    """Refuse packed (n, ceil(k / 8)) reports that set any of the 8 ceil(k / 8) - k spare bits of their last byte."""
    spare = 8 * reports.shape[1] - k
    if spare and reports.size and (reports[:, -1] >> (8 - spare)).any():
        row = int(np.argmax((reports[:, -1] >> (8 - spare)) != 0))
        raise ValidationError(f"reports[{row}] sets bits beyond k = {k} in its last byte; it is not a report of this "
                              "mechanism")


def _grid_thresholds(probability):
    """ceil(p 2^53) as uint64: the number of 53-bit words below which ``unary_reports`` sets a bit."""
    return np.ceil(np.asarray(probability, dtype=float) * 2.0**53).astype(np.uint64)


def packed_unary_reports(values, k, keep, other, rng, name):
    """``unary_reports`` packed 8 bits to a byte: uint8 (n, ceil(k / 8)), bit j of a report is bit j % 8 of byte
    j // 8 (``np.packbits(..., bitorder="little")``), drawn in blocks of users so that the unpacked bits never take
    more than about PACK_BLOCK bytes (the same stream as unpacked reports). Refuses n * ceil(k / 8) >
    ``MAX_OUE_BYTES``."""
    width = (k + 7) // 8
    check_report_bytes(values.size, width, name)
    step = max(1, PACK_BLOCK // k)
    out = np.empty((values.size, width), dtype=np.uint8)
    for start in range(0, values.size, step):
        bits = unary_reports(values[start:start + step], k, keep, other, rng, name)
        out[start:start + step] = np.packbits(bits, axis=1, bitorder="little")
    return out


def packed_bernoulli(values, k, threshold, rng):
    """OUE reports, bit-packed (docs/math.md §8.3): uint8 (n, ceil(k / 8)), bit j of a report is bit j % 8 of byte
    j // 8. Bit j != x is 1 with probability ``threshold`` / 2^64 exactly, bit x (the user's value) with 1/2.

    Per user, ceil(k / 8) 64-bit words are drawn (``random_raw``) and read as little-endian bytes, byte j deciding
    bit j: with threshold = hi 2^56 + lo, bit j is 1 if byte < hi, 0 if byte > hi, and on a tie (byte = hi) 1 iff
    (w >> 8) < lo for one further word w; bit x is 1 iff its byte < 128. Users are drawn in segments of about
    OUE_SEGMENT bits (several users, or 64-aligned column ranges of one user): first the bytes of the segment, then
    one word per tie, in row-major order. Checks n * ceil(k / 8) <= ``MAX_OUE_BYTES``."""
    width = (k + 7) // 8
    check_report_bytes(values.size, width, "OUE")
    high, low = divmod(int(threshold), 2**LOW_BITS)
    out = np.empty((values.size, width), dtype=np.uint8)
    users = max(1, OUE_SEGMENT // (8 * width))  # a user draws 8 ceil(k / 8) bytes
    columns = min(k, OUE_SEGMENT)
    for start in range(0, values.size, users):
        chunk = values[start:start + users]
        for first in range(0, k, columns):  # one range unless k > OUE_SEGMENT (then chunk.size == 1)
            last = min(first + columns, k)
            draws = rng.bit_generator.random_raw(chunk.size * -(-(last - first) // 8)).astype("<u8", copy=False)
            byte = draws.view(np.uint8).reshape(chunk.size, -1)[:, :last - first]
            bits = byte < high
            ties = byte == high
            rows = np.flatnonzero((chunk >= first) & (chunk < last))
            own = chunk[rows] - first
            bits[rows, own] = byte[rows, own] < 128
            ties[rows, own] = False
            tied = np.flatnonzero(ties)
            if tied.size:
                bits.flat[tied] = (rng.bit_generator.random_raw(tied.size) >> np.uint64(64 - LOW_BITS)) < low
            out[start:start + chunk.size, first // 8:(last + 7) // 8] = np.packbits(bits, axis=1, bitorder="little")
    return out


class PackedBitReports:
    """The size of a report of k bits packed 8 to a byte (OUE, unary encoding): a mixin beside the mechanism base."""

    k: int  # set by the mechanism

    @property
    def report_bits(self):
        return self.k

    @property
    def report_bytes(self):
        """Bytes per report: the k bits packed, ceil(k / 8)."""
        return (self.k + 7) // 8


class UnaryOracleReports(PackedBitReports):
    """Reports of a pure unary oracle (OUE, L-UE): packed bits whose column sums are the support counts."""

    def empty_reports(self) -> npt.NDArray[np.uint8]:
        return np.zeros((0, self.report_bytes), dtype=np.uint8)

    def _checked(self, reports: npt.ArrayLike) -> tuple[npt.NDArray[Any], bool]:
        """(reports, packed): bit-packed (n, ceil(k / 8)) uint8, or the unpacked (n, k) bits of earlier versions."""
        reports = np.asarray(reports)
        if reports.ndim == 2 and reports.shape[1] == self.report_bytes and reports.dtype == np.uint8:
            check_spare_bits(reports, self.k)
            return reports, True
        if reports.ndim != 2 or reports.shape[1] != self.k:
            raise ValidationError(f"reports has shape {reports.shape}; it must have shape (n, {self.report_bytes}) "
                                  f"uint8, k = {self.k} bits packed 8 to a byte (or the unpacked (n, {self.k}) bits)")
        if not (np.issubdtype(reports.dtype, np.integer) or reports.dtype == np.bool_):
            raise ValidationError(f"reports has dtype {reports.dtype}; reports are bits (packed uint8)")
        if reports.size and reports.dtype != np.bool_ and (reports.min() < 0 or reports.max() > 1):
            row, column = np.argwhere((reports < 0) | (reports > 1))[0]
            raise ValidationError(f"reports[{row}, {column}] is {fmt(reports[row, column])}; every entry of unpacked "
                                  "reports must be a bit, 0 or 1")
        return reports, False

    def bits(self, reports: npt.ArrayLike, columns: npt.ArrayLike | None = None) -> npt.NDArray[np.uint8]:
        """The 0/1 bits of ``reports``, packed or unpacked (checked).

        Parameters
        ----------
        reports : array_like
            Bit-packed uint8 reports (n, ceil(k / 8)), as ``perturb`` returns them, or unpacked (n, k) 0/1 ones.
        columns : array_like of int, optional
            The bit indices to read (audits read two); by default all k.

        Returns
        -------
        numpy.ndarray
            uint8 (n, k), or (n, len(columns)): bit j of report i at [i, j].

        Raises
        ------
        ValidationError
            If ``reports`` has neither form, a spare bit of the last byte is set, or an unpacked entry is not 0 or 1.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> oue = ld.mechanisms.OUE(1.0, 4)
        >>> reports = np.array([[0b0101], [0b0010]], dtype=np.uint8)  # bits 0 and 2; bit 1
        >>> oue.bits(reports)
        array([[1, 0, 1, 0],
               [0, 1, 0, 0]], dtype=uint8)
        >>> oue.bits(reports, [0, 1])
        array([[1, 0],
               [0, 1]], dtype=uint8)
        >>> oue.bits(oue.perturb([0, 1, 2], rng=1)).shape
        (3, 4)
        """
        reports, packed = self._checked(reports)
        columns = np.arange(self.k) if columns is None else np.asarray(columns, dtype=np.int64)
        if not packed:
            return reports[:, columns].astype(np.uint8)
        return (reports[:, columns // 8] >> (columns % 8).astype(np.uint8)) & np.uint8(1)  # type: ignore[return-value]  # numpy's stubs: uint8 >> uint8 & uint8 is uint8

    def _support(self, reports):
        """Bit sums: over packed reports by ``bitsums.packed_column_sums`` (64-bit words, no unpacking), O(k) per
        report."""
        reports, packed = self._checked(reports)
        if not packed:
            return reports.sum(axis=0, dtype=np.int64), reports.shape[0]
        return packed_column_sums(reports, self.k), reports.shape[0]
