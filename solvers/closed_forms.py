"""Closed forms as plain functions of arrays."""

import math

import numpy as np


def binary_lip_table(prior, epsilon):
    """The optimal eps-LIP channel for a binary X (MATH §6), as a 2x2 row-stochastic table.

    With p <= 1/2 the prior of the rarer value: if p <= 1/(1+e^eps), the rare value flips with
    probability 1/(1+e^eps) and the common one with (1 - p e^eps)/((1+e^eps)(1-p)); otherwise they flip
    with e^-eps (1-p) and e^-eps p.
    """
    prior = np.asarray(prior, dtype=float)
    rare = int(np.argmin(prior))
    p = prior[rare]
    e = math.exp(epsilon)
    if p <= 1.0 / (1.0 + e):
        flip_rare, flip_common = 1.0 / (1.0 + e), (1.0 - p * e) / ((1.0 + e) * (1.0 - p))
    else:
        flip_rare, flip_common = (1.0 - p) / e, p / e
    flips = np.empty(2)
    flips[rare], flips[1 - rare] = flip_rare, flip_common
    return np.array([[1.0 - flips[0], flips[0]], [flips[1], 1.0 - flips[1]]])
