"""Unary encoding designed for a prior under eps-LIP (docs/math.md §7.1): the convex program of ``solvers.unary``
for the unbiased estimate of the population histogram, its certificate, and the baselines beside it."""

import math

import numpy as np
from scipy.optimize import minimize_scalar

from lipdesign.errors import SolverError, ValidationError, VerificationError
from lipdesign.mechanisms.hashing import OLH
from lipdesign.mechanisms.oracle import pure_variance
from lipdesign.mechanisms.rr import GRR
from lipdesign.mechanisms.sampling import realized_probability
from lipdesign.mechanisms.unary import OUE, UnaryEncoding
from lipdesign.notions import LIP
from solvers.unary import CONVEX_MAX_PRIOR, bit_probabilities, design_unary

#: ``ld.design`` adds the exact RR optimum to a unary design's baselines up to this k (its rays grow like 2^k).
MAX_RR_BASELINE_K = 10

#: If the realised probabilities (rounded to the 2^-53 grid) miss the claim, the design is pulled toward the
#: uninformative (feasible, interior) point by these fractions in turn.
SHRINK = (1e-12, 1e-9, 1e-6)


def check_unary(prior, notion, objective):
    """ValidationError unless the unary design applies: eps-LIP for X, the histogram, max P <= 3/4."""
    if not isinstance(notion, LIP) or notion.secret is not None or notion.prior_set is not None:
        raise ValidationError(f"notion is {notion!r}; family='unary' is designed under ld.LIP(eps) for X itself so far "
                              "(a latent secret or a prior set is not built for it; ld.mechanisms.OUE is its LDP "
                              "member)")
    if objective.kind != "frequencies":
        raise ValidationError(f"objective is {objective!r}; family='unary' is designed for ld.Frequencies() (the "
                              "unbiased histogram) only so far")
    p = prior.probabilities
    if p.max() > CONVEX_MAX_PRIOR:
        x = int(np.argmax(p))
        raise ValidationError(f"prior[{x}] is {p[x]:.6g}; the unary design is a convex program only when every prior "
                              f"entry is at most {CONVEX_MAX_PRIOR} (docs/math.md §7.1): merge values, or use "
                              "family='rr'")


def unary_design(prior, notion, objective, *, baselines=True, rr_optimum=None):
    """The unary encoding that minimises n x sum Var of the unbiased histogram estimate at ``prior`` under eps-LIP
    for X (docs/math.md §7.1), as a verified ``UnaryEncoding`` with its optimality certificate; ``rr_optimum``, the
    optimal RR table's figure under the same notion, joins the baselines when given."""
    check_unary(prior, notion, objective)
    p = prior.probabilities
    result = design_unary(p, notion.epsilon)
    if not result.converged:
        raise SolverError(f"the unary design's barrier method did not reach its duality gap (gap {result.gap:.3g} at "
                          f"n x sum Var {result.value:.6g})")
    info = {"method": "convex program in (u - 1, 1 - v), barrier method with O(k) Newton steps (docs/math.md §7.1)",
            "figure_before_rounding": result.value}
    if baselines:
        info["baselines"] = unary_baselines(prior, notion)
        if rr_optimum is not None:
            info["baselines"]["optimal RR table (LIP)"] = rr_optimum
    bound = result.value - result.gap
    for shrink in (0.0, *SHRINK):
        a, b = bit_probabilities(result.alpha * (1 - shrink), result.beta * (1 - shrink))
        figure = float(pure_variance(p, 1, realized_probability(a), realized_probability(b)).sum())  # mech.mse
        info["shrink"] = shrink
        info["optimality"] = {"variance": figure, "lower_bound": bound, "gap": (figure - bound) / figure,
                              "bound": "barrier duality gap m/t", "bounds": {"barrier duality gap m/t": bound}}
        try:
            return UnaryEncoding(a, b, notion, prior, provenance=info)
        except VerificationError:
            continue
    raise SolverError("the unary design's realised bit probabilities miss the claim even after shrinking")


def symmetric_unary_variance(prior, epsilon):
    """(n x sum Var, a, b) of the best symmetric unary encoding (one a, one b) under eps-LIP at ``prior``: exactly
    LIP iff u/v <= R = (e^eps - p_min)/(1 - p_min) (docs/math.md §7.1), so a/(1 - a) = R b/(1 - b) and b is
    searched on (0, 1)."""
    p = prior.probabilities
    ratio = (math.exp(epsilon) - p.min()) / (1 - p.min())

    def figure(b):
        a = ratio * b / (1 - b + ratio * b)
        return float(pure_variance(p, 1, a, b).sum())

    best = minimize_scalar(figure, bounds=(1e-9, 1 - 1e-9), method="bounded", options={"xatol": 1e-12})
    b = float(best.x)
    return figure(b), ratio * b / (1 - b + ratio * b), b


def unary_baselines(prior, notion):
    """n x sum Var of each baseline's own unbiased estimate at the prior, given the users' values: the best symmetric
    LIP unary encoding at eps; OUE, OLH and GRR at eps and at 2 eps (the LDP level an eps-LIP mechanism reaches at
    worst, docs/math.md §2)."""
    eps, p = notion.epsilon, prior.probabilities
    figures = {"symmetric LIP unary": symmetric_unary_variance(prior, eps)[0]}
    for suffix, level in (("", eps), (" at 2 eps", 2 * eps)):
        if level <= OUE.epsilon_range[1]:
            figures["OUE" + suffix] = float(OUE(level, prior.k).variance(p).sum())
            figures["OLH" + suffix] = float(OLH(level, prior.k).variance(p).sum())
        if level <= GRR.epsilon_range[1]:
            figures["GRR" + suffix] = float(GRR(level, prior.k).variance(p).sum())
    return figures
