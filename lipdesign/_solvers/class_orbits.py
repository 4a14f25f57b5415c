"""Class-symmetric A-optimal designs: the weights of orbits of slice points under the permutations within classes
of equally likely values (docs/math.md §11, "Class-symmetric designs").

Values fall into classes c of n_c values of equal prior probability. A column r of the LIP slice contributes, once
averaged over its orbit, only its class sums S_c = sum_{x in c} r_x and within-class spreads V_c = sum_{x in c} r_x^2
- S_c^2/n_c, and the orbit-averaged information matrix of weights w over orbits is U T U^T + sum_c alpha_c (I_c -
J_c/n_c), with U the class indicators scaled by 1/sqrt(n_c), T = sum_o w_o v_o v_o^T (v_c = S_c/sqrt(n_c)) and
alpha_c = sum_o w_o V_oc/(n_c - 1). So

    tr(M^-1) = tr(T^-1) + sum_{c: n_c > 1} (n_c - 1)^2 / (sum_o w_o V_oc),

convex in w, minimised subject to sum_o w_o S_oc = n_c (the rows of the orbit-averaged table sum to 1) and w >= 0
by ``_solvers.design_weights.barrier``. Everything here is O(m) or O(m^2) in the number m of classes, whatever k.
"""

from dataclasses import dataclass

import numpy as np

from lipdesign._solvers.design_weights import DesignWeights, Objective, barrier, interior_point


@dataclass(frozen=True)
class ClassLayout:
    """``classes[x]`` the class of value x (0..m-1, every class non-empty) and ``sizes[c]`` = n_c."""

    classes: np.ndarray
    sizes: np.ndarray

    @classmethod
    def of(cls, classes):
        classes = np.asarray(classes, dtype=np.int64)
        return cls(classes, np.bincount(classes))

    @property
    def m(self):
        return self.sizes.size

    def summaries(self, points):
        """(S, V): the class sums and within-class spreads of each row of ``points`` (N x k), each N x m."""
        points = np.atleast_2d(points)
        indicator = np.zeros((self.classes.size, self.m))
        indicator[np.arange(self.classes.size), self.classes] = 1.0
        sums, squares = points @ indicator, (points**2) @ indicator
        return sums, np.maximum(squares - sums**2 / self.sizes, 0.0)

    def pricing(self, inverse_t, spread_weights, multipliers):
        """(Z, y) in k-space with r^T Z r + y . r = v^T T^-2 v + sum_c lambda_c V_c - mu . S for a point r (v, V, S
        its class summaries; ``inverse_t`` = T^-1, ``spread_weights`` = lambda, ``multipliers`` = mu)."""
        scaled = np.zeros((self.classes.size, self.m))
        scaled[np.arange(self.classes.size), self.classes] = 1.0 / np.sqrt(self.sizes[self.classes])
        quadratic = scaled @ (inverse_t @ inverse_t) @ scaled.T
        same = self.classes[:, None] == self.classes[None, :]
        lam = spread_weights[self.classes]
        quadratic += np.diag(lam) - same * (lam / self.sizes[self.classes])[:, None]
        return quadratic, -multipliers[self.classes]


def _parts(sums, spreads, sizes, weights):
    vectors = sums / np.sqrt(sizes)
    information = vectors.T @ (weights[:, None] * vectors)
    several = sizes > 1
    within = spreads[:, several].T @ weights
    return vectors, information, within, (sizes[several] - 1.0) ** 2, several


def trace_inverse(sums, spreads, sizes, weights):
    """tr(M^-1) of the orbit mixture with ``weights`` (inf where M is singular)."""
    _, information, within, multiplicity, _ = _parts(sums, spreads, sizes, weights)
    if (within <= 0).any():
        return np.inf
    try:
        lower = np.linalg.cholesky(information)
    except np.linalg.LinAlgError:
        return np.inf
    inverse_lower = np.linalg.inv(lower)
    return float((inverse_lower**2).sum() + (multiplicity / within).sum())


def _derivatives(sums, spreads, sizes, weights):
    vectors, information, within, multiplicity, several = _parts(sums, spreads, sizes, weights)
    inverse = np.linalg.inv(information)
    if (within <= 0).any():
        raise np.linalg.LinAlgError("a class has no spread")
    g = vectors @ inverse @ vectors.T
    h = vectors @ inverse @ inverse @ vectors.T
    value = float(np.trace(inverse) + (multiplicity / within).sum())
    spread = spreads[:, several]
    gradient = -np.diag(h) - spread @ (multiplicity / within**2)
    hessian = 2.0 * g * h + (spread * (2.0 * multiplicity / within**3)) @ spread.T
    return value, gradient, hessian


def orbit_weights(sums, spreads, sizes, *, tolerance=1e-11):
    """The optimal weights over the orbits with class summaries (``sums``, ``spreads``), N x m each: a
    ``DesignWeights`` whose multipliers mu satisfy grad F + S mu >= 0 (a new orbit lowers F when
    v^T T^-2 v + sum_c lambda_c V_c - mu . S > 0, lambda_c = (n_c - 1)^2/(sum_o w_o V_oc)^2)."""
    sums, spreads = np.asarray(sums, dtype=float), np.asarray(spreads, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    found = interior_point(sums, sizes)
    if found is None:
        return DesignWeights(np.zeros(len(sums)), np.zeros(sizes.size), float("nan"), False)
    start, support = found
    chosen = (sums[support], spreads[support])
    objective = Objective(lambda w: trace_inverse(*chosen, sizes, w), lambda w: _derivatives(*chosen, sizes, w))
    result = barrier(chosen[0], sizes, start[support], objective, tolerance)
    weights = np.zeros(len(sums))
    weights[support] = result.weights
    return DesignWeights(weights, result.multipliers, result.value, result.converged)


def pricing_terms(sums, spreads, sizes, weights):
    """(T^-1, lambda): what ``ClassLayout.pricing`` needs at ``weights``."""
    sizes = np.asarray(sizes, dtype=float)
    _, information, within, multiplicity, several = _parts(sums, spreads, sizes, weights)
    lam = np.zeros(sizes.size)
    lam[several] = multiplicity / within**2
    return np.linalg.inv(information), lam
