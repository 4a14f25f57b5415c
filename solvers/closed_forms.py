"""Closed forms as plain functions of arrays."""

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
    norm, size, free = best
    return 1.0 / k + (k - 1) ** 2 / (norm - k) - 1.0, size, free
