"""Extreme rays of the polyhedral cones that hold the columns of a perturbation table.

Cones here are pointed: {q in R^k : q >= 0, A q >= 0}. Rays are returned one per row, scaled to sum 1.
"""

import math

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


def level_rays(ratio, lowest, highest, tol=1e-12):
    """Extreme rays (and some other points) of {q : max_x q_x <= ratio min_P P.q, min_x q_x >= max_P P.q / ratio}
    over a set of priors whose minimising prior depends only on the order of q (a box or a TV ball intersected with
    the simplex): every extreme ray takes at most three values (docs/math.md §5). ``lowest[A]`` and ``highest[A]``
    are min and max of P(A) over the set, for every subset A coded as a bitmask (bit x for value x). Each candidate
    is q = 1 on a low set, 1 + u on a middle set and 1 + u + v on a high set with the largest (u, v) the two
    constraints allow; rows scaled to sum 1, duplicates removed.
    """
    lowest, highest = np.asarray(lowest, dtype=float), np.asarray(highest, dtype=float)
    k = lowest.size.bit_length() - 1
    levels = (np.arange(3**k)[:, None] // 3 ** np.arange(k)) % 3  # 0 low, 1 middle, 2 high
    levels = levels[(levels == 0).any(axis=1) & (levels == 2).any(axis=1)]
    bits = 1 << np.arange(k)
    upper_set, high_set = (levels >= 1) @ bits, (levels == 2) @ bits
    a1, a2, b1, b2 = lowest[upper_set], lowest[high_set], highest[upper_set], highest[high_set]
    # with the low value 1: u (1 - ratio a1) + v (1 - ratio a2) <= ratio - 1 (upper side), u b1 + v b2 <= ratio - 1
    c1, c2, room = 1 - ratio * a1, 1 - ratio * a2, ratio - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        middle = (levels == 1).any(axis=1)
        det = c1 * b2 - c2 * b1
        u = np.where(middle, room * (b2 - c2) / det, 0.0)
        v = np.where(middle, room * (c1 - b1) / det, np.minimum(np.where(c2 > 0, room / c2, np.inf), room / b2))
    ok = np.isfinite(u) & np.isfinite(v) & (v > tol) & (~middle | (u > tol))
    points = 1.0 + u[ok, None] * (levels[ok] >= 1) + v[ok, None] * (levels[ok] == 2)
    return unique_rows(points / points.sum(axis=1, keepdims=True))


def unique_rows(points, decimals=12):
    """Rows of ``points`` with near-duplicates (equal after rounding) removed, in a deterministic order."""
    _, first = np.unique(np.round(points, decimals), axis=0, return_index=True)
    return points[np.sort(first)]


def _pack(zero_sets):
    return np.packbits(zero_sets, axis=1, bitorder="little").view(np.uint8)


def cone_extreme_rays(inequalities, max_rays=200_000, max_work=None, tol=1e-10, block=256, progress=None):
    """Extreme rays of {q >= 0, A q >= 0} by the double description method (Motzkin et al.).

    Constraints are added one at a time to the rays of the non-negative orthant; a positive and a
    negative ray are combined when they are adjacent (no third ray is zero on every constraint that both
    are zero on: the combinatorial test, which needs no rank tolerance). The next constraint is the one that the most
    current rays violate, and a constraint that no current ray violates is dropped for good (the cone
    only shrinks, so it stays redundant). Raises EnumerationLimitError as soon as more than ``max_rays``
    rays appear or the adjacency tests (positive x negative ray pairs, summed over the steps) would exceed
    ``max_work``: a budget of work, so the outcome never depends on the machine's speed or load. Floating point,
    tolerance ``tol`` on the constraint values of sum-1 rays. ``progress``: None, or a callable that receives
    (constraints added, constraints left, rays, work spent) after each step.
    """
    budget = math.inf if max_work is None else max_work
    work, added = 0, 0
    a = np.asarray(inequalities, dtype=float)
    k = a.shape[1]
    a = a / np.abs(a).max(axis=1, keepdims=True).clip(min=1e-300)
    _, first = np.unique(a, axis=0, return_index=True)
    a = a[np.sort(first)]
    rays, zero = np.eye(k), ~np.eye(k, dtype=bool)
    remaining = np.arange(a.shape[0])
    while remaining.size:
        negative = _violation_counts(rays, a[remaining], tol)
        remaining = remaining[negative > 0]
        if not remaining.size:
            break
        chosen = int(np.argmax(negative[negative > 0]))
        row = a[remaining[chosen]]
        remaining = np.delete(remaining, chosen)
        values = rays @ row
        work += int((values > tol).sum()) * int((values < -tol).sum())
        if work > budget:
            raise EnumerationLimitError(
                f"work budget of {budget:.2g} adjacency tests spent with {rays.shape[0]} rays and {remaining.size + 1} "
                "constraints still to add")
        rays, zero = _add_constraint(rays, zero, values, tol, block)
        added += 1
        if progress is not None:
            progress(added, remaining.size, rays.shape[0], work)
        if rays.shape[0] > max_rays:
            raise EnumerationLimitError(
                f"more than {max_rays} extreme rays with {remaining.size} constraints still to add")
    return rays


def _violation_counts(rays, rows, tol, chunk=512):
    """For each row, how many rays violate it (value < -tol)."""
    return np.concatenate([((rays @ rows[start:start + chunk].T) < -tol).sum(axis=0)
                           for start in range(0, rows.shape[0], chunk)])


def _add_constraint(rays, zero, values, tol, block):
    """One double description step: intersect the cone with {q : row . q >= 0}, given row . rays."""
    k = rays.shape[1]
    positive, negative = values > tol, values < -tol
    zero = np.concatenate([zero, (~positive & ~negative)[:, None]], axis=1)
    packed = _pack(zero)
    pos, neg = np.flatnonzero(positive), np.flatnonzero(negative)
    new_rays, new_zero = [], []
    for start in range(0, pos.size, block):
        p = pos[start:start + block]
        enough = np.bitwise_count(packed[p][:, None, :] & packed[neg][None, :, :]).sum(axis=2) >= k - 2
        pi, ni = np.nonzero(enough)
        if pi.size == 0:
            continue
        common = packed[p[pi]] & packed[neg[ni]]
        adjacent = np.concatenate([
            ((packed[None] & chunk[:, None]) == chunk[:, None]).all(axis=2).sum(axis=1) == 2
            for chunk in np.array_split(common, max(1, common.shape[0] // 64))])
        i, j = p[pi[adjacent]], neg[ni[adjacent]]
        both_zero = zero[i] & zero[j]
        combined = values[i, None] * rays[j] - values[j, None] * rays[i]
        combined[both_zero[:, :k]] = 0.0
        combined = np.maximum(combined, 0.0)
        combined /= combined.sum(axis=1, keepdims=True)
        both_zero[:, -1] = True
        new_rays.append(combined)
        new_zero.append(both_zero)
    keep = ~negative
    return _merge_duplicates(np.concatenate([rays[keep], *new_rays]), np.concatenate([zero[keep], *new_zero]))


def _merge_duplicates(rays, zero, decimals=9):
    """Merge rays that agree to ``decimals`` places, uniting their zero sets. In exact arithmetic there
    are none; in floating point a constraint value just above the tolerance can split one ray in two."""
    _, first, inverse = np.unique(np.round(rays, decimals), axis=0, return_index=True, return_inverse=True)
    if first.size == rays.shape[0]:
        return rays, zero
    merged = np.zeros((first.size, zero.shape[1]), dtype=bool)
    np.logical_or.at(merged, inverse.ravel(), zero)
    order = np.argsort(first)
    return rays[first[order]], merged[order]
