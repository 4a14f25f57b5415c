"""Extreme rays of the polyhedral cones that hold the columns of a perturbation table.

Cones here are pointed: {q in R^k : q >= 0, A q >= 0}. Rays are returned one per row, scaled to sum 1.
"""

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


def cone_extreme_rays(inequalities, max_rays=200_000, tol=1e-10, block=256):
    """Extreme rays of {q >= 0, A q >= 0} by the double description method (Motzkin et al.).

    Constraints are added one at a time to the rays of the non-negative orthant; a positive and a
    negative ray are combined when they are adjacent (no third ray is zero on every constraint that both
    are zero on: the combinatorial test). Raises EnumerationLimitError as soon as more than ``max_rays``
    rays appear. Floating point with tolerance ``tol`` on the constraint values of sum-1 rays.
    """
    a = np.asarray(inequalities, dtype=float)
    k = a.shape[1]
    a = a / np.abs(a).max(axis=1, keepdims=True).clip(min=1e-300)
    rays = np.eye(k)
    zero = ~np.eye(k, dtype=bool)
    zero = np.concatenate([zero, np.zeros((k, a.shape[0]), dtype=bool)], axis=1)
    for index, row in enumerate(a):
        column = k + index
        values = rays @ row
        positive, negative = values > tol, values < -tol
        zero[~positive & ~negative, column] = True
        if not negative.any():
            continue
        packed = _pack(zero)
        pos, neg = np.flatnonzero(positive), np.flatnonzero(negative)
        new_rays, new_zero = [], []
        for start in range(0, pos.size, block):
            p = pos[start:start + block]
            common = packed[p][:, None, :] & packed[neg][None, :, :]
            enough = np.bitwise_count(common).sum(axis=2, dtype=np.int64) >= k - 2
            pi, ni = np.nonzero(enough)
            if pi.size == 0:
                continue
            candidates = common[pi, ni]
            adjacent = np.empty(pi.size, dtype=bool)
            for c0 in range(0, pi.size, block):
                chunk = candidates[c0:c0 + block]
                covers = ((packed[None, :, :] & chunk[:, None, :]) == chunk[:, None, :]).all(axis=2)
                adjacent[c0:c0 + block] = covers.sum(axis=1) == 2
            i, j = p[pi[adjacent]], neg[ni[adjacent]]
            combined = values[i, None] * rays[j] - values[j, None] * rays[i]
            combined[~zero[i, :k] | ~zero[j, :k]] = np.maximum(combined[~zero[i, :k] | ~zero[j, :k]], 0.0)
            both_zero = zero[i] & zero[j]
            combined[both_zero[:, :k]] = 0.0
            combined /= combined.sum(axis=1, keepdims=True)
            both_zero[:, column] = True
            new_rays.append(combined)
            new_zero.append(both_zero)
        keep = ~negative
        rays = np.concatenate([rays[keep], *new_rays])
        zero = np.concatenate([zero[keep], *new_zero])
        if rays.shape[0] > max_rays:
            raise EnumerationLimitError(
                f"more than {max_rays} extreme rays after {index + 1} of {a.shape[0]} constraints")
    return rays
