"""The compiled server kernels, imported only when numba is installed (``pip install "lipdesign[fast]"``) and the
work is large (``parallel.compiled_kernels``): the column sums of OUE's bit-packed reports (docs/math.md §8.3) and
the support counts of OLH reports with a hash per user (§8.4). Each gives the same integers as its numpy
counterpart, which the tests check."""

import numba
import numpy as np


@numba.njit(inline="always")
def full_adder(a, b, c):
    """(a ^ b ^ c, maj(a, b, c)): the sum keeps the weight of its inputs, the carry doubles it."""
    half = a ^ b
    return half ^ c, (a & b) | (half & c)


@numba.njit(nogil=True, cache=True, boundscheck=False)
def add_columns(words, out):
    """Add the bit columns of ``words`` (uint64, (n, W); bit b of word w is column 64 w + b) to ``out`` (uint64,
    64 W), in one pass. Per word position, planes ones, twos, fours, eights take 16 rows per step through 15 full
    adders (Harley-Seal); the carries of weight 16 are counted in 8-bit lanes (bit b of every byte, masked by
    0x01..01, over at most 255 steps before they are emptied), and the planes and the rows left over are added bit
    by bit at the end."""
    n, width = words.shape
    lanes = np.uint64(0x0101010101010101)
    ones = np.zeros(width, np.uint64)
    twos = np.zeros(width, np.uint64)
    fours = np.zeros(width, np.uint64)
    eights = np.zeros(width, np.uint64)
    carries = np.zeros(width, np.uint64)
    sixteens = np.zeros((8, width), np.uint64)  # sixteens[b, w]: byte j counts the carries into column 64w+8j+b
    steps = 0
    row = 0
    while row + 16 <= n:
        for w in range(width):
            o, t, f, e = ones[w], twos[w], fours[w], eights[w]
            o, t1 = full_adder(o, words[row, w], words[row + 1, w])
            o, t2 = full_adder(o, words[row + 2, w], words[row + 3, w])
            t, f1 = full_adder(t, t1, t2)
            o, t1 = full_adder(o, words[row + 4, w], words[row + 5, w])
            o, t2 = full_adder(o, words[row + 6, w], words[row + 7, w])
            t, f2 = full_adder(t, t1, t2)
            f, e1 = full_adder(f, f1, f2)
            o, t1 = full_adder(o, words[row + 8, w], words[row + 9, w])
            o, t2 = full_adder(o, words[row + 10, w], words[row + 11, w])
            t, f1 = full_adder(t, t1, t2)
            o, t1 = full_adder(o, words[row + 12, w], words[row + 13, w])
            o, t2 = full_adder(o, words[row + 14, w], words[row + 15, w])
            t, f2 = full_adder(t, t1, t2)
            f, e2 = full_adder(f, f1, f2)
            e, carry = full_adder(e, e1, e2)
            ones[w], twos[w], fours[w], eights[w], carries[w] = o, t, f, e, carry
        for b in range(8):  # a loop of its own, so that it runs on vectors of words
            for w in range(width):
                sixteens[b, w] += (carries[w] >> np.uint64(b)) & lanes
        row += 16
        steps += 1
        if steps == 255 or row + 16 > n:  # before a lane can overflow, and after the last step
            for w in range(width):
                for b in range(8):
                    for j in range(8):
                        out[64 * w + 8 * j + b] += np.uint64(16) * ((sixteens[b, w] >> np.uint64(8 * j))
                                                                     & np.uint64(255))
                    sixteens[b, w] = 0
            steps = 0
    for w in range(width):
        for bit in range(64):
            shift = np.uint64(bit)
            column = ((ones[w] >> shift) & np.uint64(1)) + np.uint64(2) * ((twos[w] >> shift) & np.uint64(1)) \
                + np.uint64(4) * ((fours[w] >> shift) & np.uint64(1)) \
                + np.uint64(8) * ((eights[w] >> shift) & np.uint64(1))
            for r in range(row, n):
                column += (words[r, w] >> shift) & np.uint64(1)
            out[64 * w + bit] += column


@numba.njit(nogil=True, cache=True, boundscheck=False)
def add_hash_support(a, b, y, prime, g, out):
    """Add to ``out`` (int64, k) the support counts of per-user OLH reports (a, b, y) (int64 arrays): out[v] +=
    #{i: ((a_i v + b_i) mod prime) mod g = y_i}. The residue r = (a v + b) mod prime and m = r mod g follow v
    without a division: r + a < 2 prime wraps at most once, and m moves by a mod g, less prime mod g on a wrap."""
    k = out.size
    wrap_step = prime % g
    for i in range(a.size):
        step = a[i] % g
        residue = b[i]
        bucket = residue % g
        target = y[i]
        for v in range(k):
            if bucket == target:
                out[v] += 1
            residue += a[i]
            bucket += step
            if residue >= prime:
                residue -= prime
                bucket -= wrap_step
            if bucket < 0:
                bucket += g
            elif bucket >= g:
                bucket -= g
