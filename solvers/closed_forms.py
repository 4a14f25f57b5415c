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
