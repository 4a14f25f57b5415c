"""Extreme rays of the polyhedral cones that hold the columns of a perturbation table.

Cones here are pointed: {q in R^k : q >= 0, A q >= 0}. Rays are returned one per row, scaled to sum 1.
"""

import math
import time

import numpy as np


class EnumerationLimitError(RuntimeError):
    """The enumeration would produce more rays than the caller allowed."""


def bit_patterns(k):
    """All 0/1 patterns of length k as a (2^k, k) boolean array."""
    return ((np.arange(2**k)[:, None] >> np.arange(k)) & 1).astype(bool)


def box_slice_vertices(weights, lower, upper, atol=1e-12):
    """Vertices of {lower <= q <= upper, weights . q = 1} (weights > 0).

    Every vertex has all coordinates at a bound except at most one, which the equation fixes; so there
    are at most k 2^(k-1) of them. Returned unscaled (they satisfy weights . q = 1), duplicates removed.
    """
    weights, lower, upper = (np.asarray(a, dtype=float) for a in (weights, lower, upper))
    k = weights.size
    patterns = bit_patterns(k - 1)
    found = []
    for free in range(k):
        others = np.delete(np.arange(k), free)
        fixed = np.where(patterns, upper[others], lower[others])
        value = (1.0 - fixed @ weights[others]) / weights[free]
        ok = (value >= lower[free] - atol) & (value <= upper[free] + atol)
        points = np.empty((int(ok.sum()), k))
        points[:, others] = fixed[ok]
        points[:, free] = np.clip(value[ok], lower[free], upper[free])
        found.append(points)
    return unique_rows(np.concatenate(found))


def staircase_rays(k, ratio):
    """Extreme rays of the LDP cone {q >= 0 : q_x <= ratio q_x' for all x, x'}: {1, ratio}^k minus constants."""
    patterns = bit_patterns(k)[1:-1]
    rays = np.where(patterns, ratio, 1.0)
    return rays / rays.sum(axis=1, keepdims=True)


def unique_rows(points, decimals=12):
    """Rows of ``points`` with near-duplicates (equal after rounding) removed, in a deterministic order."""
    _, first = np.unique(np.round(points, decimals), axis=0, return_index=True)
    return points[np.sort(first)]


def _pack(zero_sets):
    return np.packbits(zero_sets, axis=1, bitorder="little").view(np.uint8)


def cone_extreme_rays(inequalities, max_rays=200_000, time_limit=None, tol=1e-10, block=256):
    """Extreme rays of {q >= 0, A q >= 0} by the double description method (Motzkin et al.).

    Constraints are added one at a time to the rays of the non-negative orthant; a positive and a
    negative ray are combined when they are adjacent. The next constraint is the one that the most
    current rays violate, and a constraint that no current ray violates is dropped for good (the cone
    only shrinks, so it stays redundant). Raises EnumerationLimitError as soon as more than ``max_rays``
    rays appear or ``time_limit`` seconds have passed. Floating point, tolerance ``tol`` on the constraint
    values of sum-1 rays.
    """
    deadline = math.inf if time_limit is None else time.monotonic() + time_limit
    a = np.asarray(inequalities, dtype=float)
    k = a.shape[1]
    a = a / np.abs(a).max(axis=1, keepdims=True).clip(min=1e-300)
    _, first = np.unique(a, axis=0, return_index=True)
    a = a[np.sort(first)]
    rays, zero, active_rows = np.eye(k), ~np.eye(k, dtype=bool), np.eye(k)
    remaining = np.arange(a.shape[0])
    while remaining.size:
        negative = _violation_counts(rays, a[remaining], tol)
        remaining = remaining[negative > 0]
        if not remaining.size:
            break
        chosen = int(np.argmax(negative[negative > 0]))
        row = a[remaining[chosen]]
        remaining = np.delete(remaining, chosen)
        active_rows = np.vstack([active_rows, row])
        rays, zero = _add_constraint(rays, zero, active_rows, rays @ row, tol, block, deadline)
        if rays.shape[0] > max_rays:
            raise EnumerationLimitError(
                f"more than {max_rays} extreme rays with {remaining.size} constraints still to add")
        if time.monotonic() > deadline:
            raise EnumerationLimitError(
                f"time limit of {time_limit:g} s reached with {rays.shape[0]} rays and {remaining.size} "
                "constraints still to add")
    return rays


def _violation_counts(rays, rows, tol, chunk=512):
    """For each row, how many rays violate it (value < -tol)."""
    return np.concatenate([((rays @ rows[start:start + chunk].T) < -tol).sum(axis=0)
                           for start in range(0, rows.shape[0], chunk)])


def _adjacent(common, zero_packed, active_rows, k):
    """Adjacency of candidate pairs from their common zero sets (boolean, one row per pair).

    Where exactly k - 2 constraints are common (the usual case) the pair is adjacent iff those rows have
    rank k - 2 (algebraic test, batched); otherwise iff no third ray is zero on all of them (combinatorial).
    """
    sizes = common.sum(axis=1)
    adjacent = np.zeros(common.shape[0], dtype=bool)
    simple = sizes == k - 2 if k > 2 else np.zeros_like(adjacent)
    if simple.any():
        index = np.nonzero(common[simple])[1].reshape(-1, k - 2)
        adjacent[simple] = np.linalg.matrix_rank(active_rows[index], tol=1e-9) == k - 2
    degenerate = np.flatnonzero(~simple)
    for start in range(0, degenerate.size, 64):
        rows = degenerate[start:start + 64]
        chunk = _pack(common[rows])[:, None, :]
        adjacent[rows] = ((zero_packed[None] & chunk) == chunk).all(axis=2).sum(axis=1) == 2
    return adjacent


def _add_constraint(rays, zero, active_rows, values, tol, block, deadline):
    """One double description step: intersect the cone with {q : row . q >= 0} (row = active_rows[-1])."""
    k = rays.shape[1]
    positive, negative = values > tol, values < -tol
    zero = np.concatenate([zero, (~positive & ~negative)[:, None]], axis=1)
    packed = _pack(zero)
    pos, neg = np.flatnonzero(positive), np.flatnonzero(negative)
    new_rays, new_zero = [], []
    for start in range(0, pos.size, block):
        if time.monotonic() > deadline:
            break  # the caller raises; the partial result is discarded
        p = pos[start:start + block]
        enough = np.bitwise_count(packed[p][:, None, :] & packed[neg][None, :, :]).sum(axis=2) >= k - 2
        pi, ni = np.nonzero(enough)
        if pi.size == 0:
            continue
        i, j = p[pi], neg[ni]
        both_zero = zero[i] & zero[j]
        adjacent = _adjacent(both_zero, packed, active_rows, k)
        i, j, both_zero = i[adjacent], j[adjacent], both_zero[adjacent]
        combined = values[i, None] * rays[j] - values[j, None] * rays[i]
        combined[both_zero[:, :k]] = 0.0
        combined = np.maximum(combined, 0.0)
        combined /= combined.sum(axis=1, keepdims=True)
        both_zero[:, -1] = True
        new_rays.append(combined)
        new_zero.append(both_zero)
    keep = ~negative
    return np.concatenate([rays[keep], *new_rays]), np.concatenate([zero[keep], *new_zero])
