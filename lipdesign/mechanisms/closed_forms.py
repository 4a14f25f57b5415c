"""Closed forms of the mechanisms as plain functions of arrays (numpy only): the optimal binary LIP channel, the
prior-matching channel, subset selection, the uniform-prior orbit, and the per-cell channels of local hashing
(docs/math.md §6, §7.2, §8, §10, §11). The mechanisms build their numbers from them; the designer uses them too."""

from typing import cast

import numpy as np


def binary_lip_flips(rare, epsilon):
    """(flip of the rare value, flip of the common one) of the optimal eps-LIP channel of a binary X whose rarer
    value has prior ``rare`` <= 1/2 (docs/math.md §6), elementwise over arrays of ``rare`` and ``epsilon``: if
    rare <= 1/(1+e^eps) they are 1/(1+e^eps) and (1 - rare e^eps)/((1+e^eps)(1-rare)); otherwise e^-eps (1-rare)
    and e^-eps rare."""
    rare, e = np.asarray(rare, dtype=float), np.exp(np.asarray(epsilon, dtype=float))
    first = rare <= 1.0 / (1.0 + e)
    with np.errstate(divide="ignore", invalid="ignore"):
        flip_rare = np.where(first, 1.0 / (1.0 + e), (1.0 - rare) / e)
        flip_common = np.where(first, (1.0 - rare * e) / ((1.0 + e) * (1.0 - rare)), rare / e)
    return flip_rare, flip_common


def binary_lip_table(prior, epsilon):
    """The optimal eps-LIP channel for a binary X (docs/math.md §6), as a 2x2 row-stochastic table."""
    prior = np.asarray(prior, dtype=float)
    rare = int(np.argmin(prior))
    flip_rare, flip_common = binary_lip_flips(prior[rare], epsilon)
    flips = np.empty(2)
    flips[rare], flips[1 - rare] = flip_rare, flip_common
    return np.array([[1.0 - flips[0], flips[0]], [flips[1], 1.0 - flips[1]]])


def prior_matching_channel(prior, epsilon):
    """The prior-matching channel Q[x, y] = e^-eps P_y (y != x), Q[x, x] = 1 - e^-eps (1 - P_x) (docs/math.md §10,
    §11): eps-LIP at P, and optimal among all eps-LIP mechanisms for every population histogram and mean when every
    P_x >= 1/(1 + e^eps); None when that condition fails."""
    p, a = np.asarray(prior, dtype=float), np.exp(-epsilon)
    if p.min() < 1.0 / (1.0 + np.exp(epsilon)):
        return None
    table = np.tile(a * p, (p.size, 1))
    np.fill_diagonal(table, 1.0 - a * (1.0 - p))
    return table


def subset_selection_probabilities(epsilon, k, d):
    """(p, q) of d-subset selection over k values (docs/math.md §8, §11): the report is a d-subset S, drawn with
    weight e^eps if it holds the user's value and 1 otherwise; p = Pr[v in S | X = v] = d e/(d e + k - d) and
    q = Pr[v in S | X != v] = d ((d - 1) e + k - d)/((k - 1)(d e + k - d))."""
    e = np.exp(epsilon)
    return d * e / (d * e + k - d), d * ((d - 1) * e + k - d) / ((k - 1) * (d * e + k - d))


def uniform_optimal_orbit(k, epsilon, cone):
    """(figure, size, free): the A-optimal n x sum Var, given the users' values, at the uniform prior over k values
    (docs/math.md §11), and the orbit that attains it, in O(k) for any k.

    By symmetry the optimum is one permutation orbit of a slice vertex r (sum r = k), whose information matrix has
    eigenvalue k on 1 and (|r|^2 - k)/(k - 1) on its complement, so tr(M^-1) = 1/k + (k - 1)^2/(|r|^2 - k): the
    vertex of largest |r|^2 wins. ``cone`` "staircase" (LDP): ``size`` = d coordinates at e^eps and k - d at 1, d-subset
    selection (``free`` None); "box" (LIP for X): ``size`` = j coordinates at e^eps, k - 1 - j at e^-eps and one at
    ``free``, fixed by sum r = k."""
    e = float(np.exp(epsilon))
    best = None
    if cone == "staircase":
        for d in range(1, k):
            norm = k**2 * (d * e**2 + k - d) / (d * e + k - d) ** 2
            if best is None or norm > best[0]:
                best = (norm, d, None)
    else:
        a = 1.0 / e
        for j in range(k):
            free = k - j * e - (k - 1 - j) * a
            if a - 1e-12 <= free <= e + 1e-12:
                norm = j * e**2 + (k - 1 - j) * a**2 + free**2
                if best is None or norm > best[0]:
                    best = (norm, j, min(e, max(a, free)))
    # not None: k >= 2 (SubsetSelection and uniform_prior_optimum check it) gives d = 1 in the staircase, and in the box
    # free falls by e - 1/e per step of j, from >= 1/e at j = 0 to <= e at j = k - 1, so one j lies in [1/e, e]
    norm, size, free = cast("tuple[float, int, float | None]", best)
    return 1.0 / k + (k - 1) ** 2 / (norm - k) - 1.0, size, free


# -- local hashing: one binary channel per cell of the bucket mass (docs/math.md §7.2) ----------------------------
#: Bisection steps for each cell's epsilon (2^-60 of epsilon: below the rounding of the flips).
CELL_BISECTION_STEPS = 60


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
        for _ in range(CELL_BISECTION_STEPS):
            middle = (below + above) / 2
            flips = [realised(f) for f in binary_lip_flips(rare, middle)]
            worst = np.maximum(*(channel_epsilon(flips[0], flips[1], end) for end in ends))
            ok = worst <= epsilon - margin
            below, above = np.where(ok, middle, below), np.where(ok, above, middle)
        flips = [realised(f) for f in binary_lip_flips(rare, below)]
        better = below > best_eps
        best_eps = np.where(better, below, best_eps)
        best_flips = flips if best_flips is None else [np.where(better, new, old)
                                                       for new, old in zip(flips, best_flips)]
    # bucket 0 is the rare one below m = 1/2; best_flips is set by the first of the three passes above
    flip_rare, flip_common = cast("list[np.ndarray]", best_flips)
    return np.concatenate([flip_rare, flip_common[::-1]]), np.concatenate([flip_common, flip_rare[::-1]])
