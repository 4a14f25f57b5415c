"""Per-hash binary channels of local hashing under eps-LIP, one per cell of the bucket mass (docs/math.md §7.2).

A hash splits the domain into buckets 0 and 1; m, the prior mass of bucket 0, decides the channel. The channel
is a function of the cell of m only, [j/cells, (j+1)/cells], and is eps-LIP for EVERY bucket mass in that cell
widened by ``widen`` on both sides. The posterior ratios are linear-fractional in m, so checking the two ends of
the widened cell covers all of it; the lipdesign verifier repeats that check in rational arithmetic.
Plain numpy.
"""

import numpy as np

from solvers.closed_forms import binary_lip_flips

#: Bisection steps for each cell's epsilon (2^-60 of epsilon: below the rounding of the flips).
STEPS = 60


def channel_epsilon(flip0, flip1, mass):
    """The largest |ln posterior/prior ratio| of the binary channel (bucket z flips with probability flip_z) at
    bucket-0 mass ``mass``, elementwise; a zero-mass bucket's row is kept (its ratio is the limit as the mass
    goes to 0, which bounds every small mass)."""
    rows = np.stack([np.stack([1.0 - flip0, flip0]), np.stack([flip1, 1.0 - flip1])])  # (z, y, ...)
    outputs = mass * rows[0] + (1.0 - mass) * rows[1]  # Pr[y], (y, ...)
    with np.errstate(divide="ignore"):
        logs = np.log(rows) - np.log(outputs)
    return np.abs(logs).max(axis=(0, 1))


def cell_flips(epsilon, cells, widen, realised, margin=1e-12):
    """(flip0, flip1): for each cell j of the bucket-0 mass, the realised flip probabilities of buckets 0 and 1
    (``realised`` maps a requested probability to the one the sampler realises).

    Each cell's channel is the §6 closed form at a point p* of the cell (its lower end, middle or upper end in
    rare-bucket mass, whichever allows the largest epsilon) and at the largest eps' <= eps (bisection) for which
    the realised channel stays within eps - ``margin`` at both ends of the widened cell. Cells above m = 1/2 mirror
    those below (bucket 1 is then the rare one); ``cells`` must be even.
    """
    half = cells // 2
    low = np.arange(half) / cells
    high = low + 1.0 / cells
    ends = (np.maximum(low - widen, 0.0), np.minimum(high + widen, 1.0))
    best_eps, best_flips = np.full(half, -1.0), None
    for rare in (low, (low + high) / 2, high):
        below, above = np.zeros(half), np.full(half, float(epsilon))
        for _ in range(STEPS):
            middle = (below + above) / 2
            flips = [realised(f) for f in binary_lip_flips(rare, middle)]
            worst = np.maximum(*(channel_epsilon(*flips, end) for end in ends))
            ok = worst <= epsilon - margin
            below, above = np.where(ok, middle, below), np.where(ok, above, middle)
        flips = [realised(f) for f in binary_lip_flips(rare, below)]
        better = below > best_eps
        best_eps = np.where(better, below, best_eps)
        best_flips = flips if best_flips is None else [np.where(better, new, old)
                                                       for new, old in zip(flips, best_flips)]
    flip_rare, flip_common = best_flips  # bucket 0 is the rare one below m = 1/2
    return np.concatenate([flip_rare, flip_common[::-1]]), np.concatenate([flip_common, flip_rare[::-1]])
