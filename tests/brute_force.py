"""Independent references for the design tests: the vertices of a cone slice by brute force (every set of k - 1
active constraints, none of the library's ray code) and the constraint rows of docs/math.md §2 written out."""

import itertools
import math

import numpy as np


def brute_force_vertices(inequalities, k):
    """Vertices of {q >= 0, A q >= 0, 1.q = 1} by trying every set of k-1 active constraints
    (independent of the library's closed forms and of its double description method)."""
    rows = np.concatenate([np.eye(k), inequalities])
    found = []
    for active in itertools.combinations(range(len(rows)), k - 1):
        system = np.vstack([rows[list(active)], np.ones(k)])
        if abs(np.linalg.det(system)) < 1e-12:
            continue
        point = np.linalg.solve(system, np.r_[np.zeros(k - 1), 1.0])
        if (rows @ point >= -1e-9).all():
            found.append(point)
    return np.unique(np.round(found, 10), axis=0)


def lip_rows(prior, epsilon, conditional=None):
    """Direct LIP constraints of docs/math.md §2, written out in the test: e^eps P.q - T[g].q >= 0 and
    T[g].q - e^-eps P.q >= 0."""
    conditional = np.eye(len(prior)) if conditional is None else conditional
    e = math.exp(epsilon)
    return np.concatenate([e * prior - conditional, conditional - prior / e])


def ldp_rows(k, epsilon):
    e = math.exp(epsilon)
    return np.array([e * np.eye(k)[b] - np.eye(k)[a] for a in range(k) for b in range(k) if a != b])
