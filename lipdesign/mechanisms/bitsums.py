"""Column sums of bit-packed reports (OUE's server side, docs/math.md §8.3): how many reports set each bit.

Rows are 64-bit words, bit b of word w being column 64 w + b. Two exact integer methods give the same sums:
- the numpy carry-save adder (``numpy_column_sums``), always available: blocks of 3^l rows are added as binary
  numbers, bit position by bit position, about 5 word operations per 64 bits;
- a compiled Harley-Seal adder (``compiled.add_columns``) when numba is installed (``pip install
  "lipdesign[fast]"``): the same full adders, 16 rows per step, in one pass over memory, on every core.
``column_sums`` takes the compiled one from ``parallel.COMPILED_WORK`` words on. Numpy only.
"""

import numpy as np

from lipdesign.mechanisms import parallel

#: The numpy adder compresses 3^LEVELS rows at a time into 2^LEVELS bit planes ...
LEVELS = 9

#: ... and the planes of up to this many such chunks together.
CHUNKS = 81

#: Fewer rows than this are counted by unpacking them.
UNPACKED_ROWS = 27

#: Rows handed to the compiled adder per call (a padded block is built per call when rows are not whole words).
COMPILED_BLOCK = 2**16


def column_sums(rows, n, width):
    """int64 (64 width,): the number of 1 bits in each bit column of ``n`` rows of ``width`` 64-bit words;
    ``rows(start, stop)`` returns rows start..stop-1 as uint64 (stop - start, width). Exact integers: by the
    compiled adder on every core when ``parallel.compiled_kernels`` has it, else by the numpy adder."""
    kernels = parallel.compiled_kernels(n * width)
    if kernels is None:
        return numpy_column_sums(rows, n, width)

    def count(start, stop):
        out = np.zeros(64 * width, dtype=np.uint64)
        for first in range(start, stop, COMPILED_BLOCK):
            kernels.add_columns(np.ascontiguousarray(rows(first, min(first + COMPILED_BLOCK, stop)), np.uint64), out)
        return out

    return parallel.sum_in_threads(n, COMPILED_BLOCK, count).astype(np.int64)


# -- the numpy carry-save adder ---------------------------------------------------------------------------------
def _plane_weights(levels):
    """2^popcount(p) for each plane p of ``_compress``: bit l of p says the plane took the carry at level l."""
    planes = np.arange(2**levels)
    return np.left_shift(1, np.bitwise_count(planes).astype(np.int64))


def _compress(words, levels, work):
    """Add 3^levels rows of 64-bit words (3^levels, W) as binary numbers, bit position by bit position: ``levels``
    rounds of full adders over the row thirds (sum a ^ b ^ c keeps its weight, carry maj(a, b, c) doubles it), which
    leaves 2^levels planes (2^levels, W); the column sums are sum_p 2^popcount(p) (bits of plane p)."""
    width = words.shape[1]
    state = words.reshape(1, -1, width)
    for level in range(levels):
        planes, rows, _ = state.shape
        third = rows // 3
        size = planes * third * width
        nxt = work[level % 2][:2 * size].reshape(2 * planes, third, width)
        a, b, c = state[:, :third], state[:, third:2 * third], state[:, 2 * third:]
        total, carry, both = nxt[:planes], nxt[planes:], work[2][:size].reshape(planes, third, width)
        np.bitwise_xor(a, b, out=total)
        np.bitwise_and(a, b, out=carry)
        np.bitwise_and(total, c, out=both)
        np.bitwise_or(carry, both, out=carry)
        np.bitwise_xor(total, c, out=total)
        state = nxt
    return state.reshape(2**levels, width)


def _levels(rows):
    """The largest l <= LEVELS with 3^l <= rows."""
    levels = 0
    while levels < LEVELS and 3**(levels + 1) <= rows:
        levels += 1
    return levels


def _unpacked_sums(words):
    return np.unpackbits(words.astype("<u8", copy=False).view(np.uint8), axis=1,
                         bitorder="little").sum(axis=0, dtype=np.int64)


def numpy_column_sums(rows, n, width, work=None):
    """``column_sums`` by the numpy carry-save adder (``_compress``); the planes of CHUNKS chunks are counted by
    the same method, and fewer than UNPACKED_ROWS rows by unpacking."""
    if work is None:
        size = 3**_levels(n) * width
        work = (np.empty(size, np.uint64), np.empty(size, np.uint64), np.empty(size // 3, np.uint64))
    total = np.zeros(64 * width, dtype=np.int64)
    start = 0
    while n - start >= UNPACKED_ROWS:
        levels = _levels(n - start)
        step = 3**levels
        chunks = min((n - start) // step, CHUNKS)
        planes = np.empty((chunks, 2**levels * width), dtype=np.uint64)
        for chunk in range(chunks):
            begin = start + chunk * step
            planes[chunk] = _compress(rows(begin, begin + step), levels, work).ravel()
        sums = numpy_column_sums(lambda i, j, planes=planes: planes[i:j], chunks, 2**levels * width)
        total += _plane_weights(levels) @ sums.reshape(2**levels, 64 * width)
        start += chunks * step
    if start < n:
        total += _unpacked_sums(rows(start, n))
    return total


def packed_column_sums(reports, bits):
    """int64 (bits,): how many of the bit-packed uint8 ``reports`` (n, ceil(bits / 8); bit j is bit j % 8 of byte
    j // 8) set each bit, by ``column_sums`` over 64-bit words (rows padded to whole words when they are not)."""
    n, width = reports.shape[0], -(-reports.shape[1] // 8)
    if reports.shape[1] == 8 * width:
        words = np.ascontiguousarray(reports).view("<u8")

        def rows(start, stop):
            return words[start:stop]
    else:

        def rows(start, stop):
            block = np.zeros((stop - start, 8 * width), dtype=np.uint8)
            block[:, :reports.shape[1]] = reports[start:stop]
            return block.view("<u8")
    return column_sums(rows, n, width)[:bits]

