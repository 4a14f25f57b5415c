"""Unary encoding designed for a prior (docs/math.md §7.1): under eps-LIP (for X, a latent secret or a prior set) the
convex program of ``_solvers.unary_encoding`` for the unbiased estimate of the population histogram, or the Bayesian
design for its posterior mean; under eps-LDP the symmetric design; each with its certificate and the baselines beside
it."""

import math
from typing import Any, cast

import numpy as np

from lipdesign._solvers.unary_encoding import (
    CONVEX_MAX_PRIOR,
    bit_probabilities,
    design_unary,
    per_bit_mmse,
    per_bit_mmse_candidates,
)
from lipdesign.designer.baselines import symmetric_unary_variance, unary_baselines
from lipdesign.designer.bounds import PER_BIN, PER_BIN_BAYES, bayes_histogram_bound, per_bin_bound
from lipdesign.errors import SolverError, ValidationError, VerificationError
from lipdesign.mechanisms.closed_forms import binary_lip_flips
from lipdesign.mechanisms.olh import OLH
from lipdesign.mechanisms.oracle import pure_variance
from lipdesign.mechanisms.oue import OUE
from lipdesign.mechanisms.rr import GRR
from lipdesign.mechanisms.sampling import implemented_exp, realized_probability
from lipdesign.mechanisms.unary_encoding import UnaryEncoding
from lipdesign.mechanisms.unary_posterior import joint_mmse_risk
from lipdesign.notions import LDP, LIP

#: ``ld.design`` adds the exact RR optimum to a unary design's baselines up to this k (its rays grow like 2^k).
MAX_RR_BASELINE_K = 10

#: The BP-LIP design enforces the joint condition at every vertex of the prior set, up to this many.
MAX_VERTICES = 500

#: The Bayesian design handles k <= this (SLSQP on 2k variables and 2k dense rows: seconds at k = 64 on skewed
#: priors, a minute at k = 200).
MAX_BAYES_K = 64

#: A bit with alpha beta = (u - 1)(1 - v) below this says nothing worth its noise: it is made uninformative (a = b).
UNINFORMATIVE = 1e-12

#: The Bayesian design's optimum sits on the LIP boundary: it is pulled inside by 1e-12 first, so that its certified
#: epsilon (rounded up) does not print above the claim, then further if the realised bits still miss it.
BAYES_SHRINK = (1e-12, 1e-9, 1e-6, 1e-3)

#: If the realised probabilities (rounded to the 2^-53 grid) miss the claim, the design is pulled toward the
#: uninformative (feasible, interior) point by these fractions in turn. The last two are for a latent secret whose
#: declared joint has a marginal up to MARGINAL_ATOL off the design prior: the claim is certified at both, the
#: barrier sees only the design prior (its bound stays a lower bound: it relaxes the marginal's constraints).
SHRINK = (1e-12, 1e-9, 1e-6, 1e-4, 1e-2)

#: The barrier method's stopping tolerances (relative duality gap), tried in turn when a Newton step meets a
#: numerically singular system: at small eps a centre's slacks fall to ~1e-14 at large t (multipliers ~1e10), the
#: Hessian's low-rank part then swamps its diagonal and the Woodbury capacitance rounds to singular. Stopping at a
#: looser gap (still well inside the accepted gap, _solvers.unary_encoding.ACCEPTED_GAP = 1e-5) ends before that t.
BARRIER_TOLERANCES = (1e-10, 1e-7, 1e-6)

#: What a failed unary design suggests trying.
TRY_INSTEAD = ("try a larger epsilon, a smaller prior set (a narrower box or TV ball, or fewer vertices), a prior "
               "without near-zero entries, or another family (family='rr')")


def _barrier_design(p, epsilon, conditional=None, vertices=None, weights=None):
    """_solvers.unary_encoding.design_unary at the first of BARRIER_TOLERANCES whose Newton steps all solve;
    SolverError (with what to try) if none does."""
    failure: np.linalg.LinAlgError | str | None = None
    for tolerance in BARRIER_TOLERANCES:
        try:
            result = design_unary(p, epsilon, tolerance=tolerance, conditional=conditional, vertices=vertices,
                                  weights=weights)
        except np.linalg.LinAlgError as error:  # a singular Newton system: stop earlier (see BARRIER_TOLERANCES)
            failure = error
            continue
        if np.isfinite(result.value) and np.isfinite(result.alpha).all() and np.isfinite(result.beta).all():
            return result
        failure = "a non-finite point"
    raise SolverError(f"the unary design's barrier method failed at eps = {epsilon:g}: its Newton system is "
                      f"numerically singular ({failure}) at every stopping tolerance {list(BARRIER_TOLERANCES)}; "
                      f"{TRY_INSTEAD}")


def check_unary(prior, notion, objective):
    """ValidationError unless the unary design applies: eps-LIP (for X or a latent secret) or eps-LDP, the
    histogram."""
    both = isinstance(notion, LIP) and notion.secret is not None and notion.prior_set is not None
    if not isinstance(notion, (LIP, LDP)) or both:
        raise ValidationError(f"notion is {notion!r}; family='unary' is designed under ld.LIP(eps) (for X, a latent "
                              "secret, or X over a prior set) or ld.LDP(eps) (a secret and a prior set together are "
                              "not built for it; worst-case LIP for X is ld.LDP)")
    if isinstance(notion, LIP) and notion.prior_set is not None:
        count: float  # len, or infinite
        try:
            count = len(notion.prior_set.vertices)
        except ValidationError:  # a box or a TV ball too large to list
            count = math.inf
        if count > MAX_VERTICES:
            raise ValidationError(f"notion.prior_set has {count} vertices; the unary design enforces the joint "
                                  f"condition at each, built for at most {MAX_VERTICES} (family='rr' designs over a "
                                  "box or a TV ball at any k)")
    if objective.kind not in ("frequencies", "histogram"):
        raise ValidationError(f"objective is {objective!r}; family='unary' is designed for the histogram: "
                              "ld.Frequencies() (its unbiased estimate) or ld.BayesHistogram() (its posterior mean)")
    if objective.kind == "histogram":
        if not isinstance(notion, LIP) or notion.secret is not None:
            raise ValidationError(f"notion is {notion!r}; the Bayesian unary design is built under ld.LIP(eps) for X")
        if prior.k > MAX_BAYES_K:
            raise ValidationError(f"prior has {prior.k} values; the Bayesian unary design (a dense local search) is "
                                  f"built for k <= {MAX_BAYES_K}: use ld.Frequencies()")


def unary_design(prior, notion, objective, *, baselines=True, rr_optimum=None):
    """The unary encoding for ``objective`` at ``prior`` under ``notion`` (docs/math.md §7.1): for ld.Frequencies the
    one that minimises n x sum Var of the unbiased histogram estimate, under eps-LIP (for X, a latent secret or a
    prior set) or eps-LDP; for ld.BayesHistogram the best found for the posterior mean. A verified
    ``UnaryEncoding`` with its optimality certificate; ``rr_optimum``, the optimal RR table's figure under the same
    notion, joins the baselines when given."""
    check_unary(prior, notion, objective)
    if isinstance(notion, LDP):
        return _ldp_unary_design(prior, notion, baselines, rr_optimum)
    if objective.kind == "histogram":
        return _bayes_unary_design(prior, notion, objective, baselines, rr_optimum)
    p = prior.probabilities
    secret = notion.secret is not None
    vertices = None if notion.prior_set is None else notion.prior_set.vertices
    result = _barrier_design(p, notion.epsilon, conditional=notion.conditional(prior.k) if secret else None,
                             vertices=vertices)
    convex = p.max() <= CONVEX_MAX_PRIOR
    bound_name = "barrier duality gap m/t" if convex else \
        f"Lagrange dual at the barrier's multipliers (not convex: max P > {CONVEX_MAX_PRIOR})"
    if not result.converged:
        raise SolverError(f"the unary design's barrier method did not certify its result: n x sum Var "
                          f"{result.value:.6g}, lower bound {result.bound:.6g} ({bound_name}); {TRY_INSTEAD}")
    rank = (f"O(k m^2) (m = {notion.conditional(prior.k).shape[0]} secret values)" if secret else
            f"O(k V^2) (the rows at each of V = {len(vertices)} vertices of the prior set)" if vertices is not None
            else "O(k)")
    info = {"method": f"convex program in (u - 1, 1 - v), barrier method with {rank} Newton steps (docs/math.md §7.1)",
            "figure_before_rounding": result.value}
    if baselines:
        info["baselines"] = unary_baselines(prior, notion)
        if rr_optimum is not None:
            info["baselines"]["optimal RR table (LIP)"] = rr_optimum
    bound = result.bound
    for shrink in (0.0, *SHRINK):
        a, b = bit_probabilities(result.alpha * (1 - shrink), result.beta * (1 - shrink))
        figure = float(pure_variance(p, 1, realized_probability(a), realized_probability(b)).sum())  # mech.mse
        info["shrink"] = shrink
        info["optimality"] = {"variance": figure, "lower_bound": bound, "gap": (figure - bound) / figure,
                              "bound": bound_name, "bounds": {bound_name: bound}}
        try:
            return UnaryEncoding(a, b, notion, prior, provenance=info)
        except VerificationError:
            continue
    raise SolverError(f"the unary design's realised bit probabilities miss the claim even after shrinking; "
                      f"{TRY_INSTEAD}")


def _bayes_unary_design(prior, notion, objective, baselines, rr_optimum):
    """The unary encoding for the posterior mean of the histogram at ``prior`` under eps-LIP for X (docs/math.md
    §7.1): the per-bit MMSE is minimised by SLSQP from the unbiased design and from the one-informative-bit designs of
    the three likeliest values (not convex: the best found), and the figure is the joint posterior mean's MSE beside
    the §10 bound."""
    p, eps = prior.probabilities, notion.epsilon
    unbiased = _barrier_design(p, eps)
    starts = [(unbiased.alpha, unbiased.beta)] + [_one_bit(p, eps, x) for x in np.argsort(-p, kind="stable")[:3]]
    # scored by the figure reported, the joint posterior mean's MSE (the per-bit MMSE charges an uninformative bit
    # its whole P(1 - P), which the joint posterior does not)
    scored = [(joint_mmse_risk(p / p.sum(), *_realised_bits(alpha, beta)), alpha, beta)
              for alpha, beta in per_bit_mmse_candidates(p, eps, starts)]
    _, alpha, beta = min(scored, key=lambda item: item[0])
    informative = alpha * beta > UNINFORMATIVE
    info = {"method": f"per-bit MMSE minimised by SLSQP from {len(starts)} starts, every start and result scored by "
                      "the joint posterior mean's MSE (not convex: the best found; docs/math.md §7.1)",
            "per_bit_mmse": per_bit_mmse(alpha, beta, p), "informative_bits": int(informative.sum())}
    if baselines:
        info["baselines"] = {"GRR": objective.value(GRR(eps, prior.k).full_table(), prior)}
        if rr_optimum is not None:
            info["baselines"]["optimal RR table (LIP)"] = rr_optimum
    bound = bayes_histogram_bound(prior, eps)
    for shrink in BAYES_SHRINK:  # toward (0, 0), the uninformative bits: feasible, and the feasible set is convex
        a, b = _bits(alpha * (1 - shrink), beta * (1 - shrink))
        figure = joint_mmse_risk(p / p.sum(), realized_probability(a), realized_probability(b))  # mechanism.mse
        info["shrink"] = shrink
        info["optimality"] = {"variance": figure, "lower_bound": bound, "gap": (figure - bound) / figure,
                              "bound": PER_BIN_BAYES, "bounds": {PER_BIN_BAYES: bound}}
        try:
            return UnaryEncoding(a, b, notion, prior, objective=objective, provenance=info)
        except VerificationError:
            continue
    raise SolverError("the Bayesian unary design's realised bit probabilities miss the claim even after shrinking; "
                      "try a larger epsilon, ld.Frequencies(), or another family (family='rr')")


def _bits(alpha, beta):
    """(a, b) of (alpha, beta), with a = b = 1/2 on the bits that say nothing (alpha beta below UNINFORMATIVE)."""
    informative = alpha * beta > UNINFORMATIVE
    a, b = bit_probabilities(np.where(informative, alpha, 1.0), np.where(informative, beta, 1.0))
    return np.where(informative, a, 0.5), np.where(informative, b, 0.5)


def _realised_bits(alpha, beta):
    return tuple(realized_probability(value) for value in _bits(alpha, beta))


def _one_bit(p, epsilon, x):
    """(alpha, beta) with only bit x informative, set to the §6 binary channel of 1[X = x] (eps-LIP for X: the joint
    condition then reduces to that bit's)."""
    flip_rare, flip_common = binary_lip_flips(min(p[x], 1 - p[x]), epsilon)
    a, b = (1 - flip_rare, flip_common) if p[x] <= 0.5 else (1 - flip_common, flip_rare)
    alpha, beta = np.zeros(p.size), np.zeros(p.size)
    alpha[x], beta[x] = a / b - 1, 1 - (1 - a) / (1 - b)
    return alpha, beta


def _ldp_unary_design(prior, notion, baselines, rr_optimum):
    """The eps-LDP unary encoding for the unbiased histogram at ``prior``: symmetric with u/v = e^eps and b chosen
    for the prior (docs/math.md §7.1: an optimum lies in a two-level family, proved; the symmetric member was the
    optimum in every check, observed)."""
    info: dict[str, Any] = {"method": "symmetric, u/v = e^eps, b searched for the prior (docs/math.md §7.1)"}
    if baselines:
        p = prior.probabilities
        # variance is one array on a categorical domain (a list of arrays only for mixed tuples)
        info["baselines"] = {name: float(cast(np.ndarray, cls(notion.epsilon, prior.k).variance(p)).sum())
                             for name, cls in (("OUE", OUE), ("OLH", OLH), ("GRR", GRR))}
        if rr_optimum is not None:
            info["baselines"]["optimal RR table (LDP)"] = rr_optimum
    bound = cast(float, per_bin_bound(prior, notion))  # not None: only a latent secret has none, and LDP has no secret
    for shrink in (0.0, *SHRINK):  # at e^eps (1 - EXP_MARGIN), as the fixed mechanisms: the claim is then met with room
        ratio = implemented_exp(notion.epsilon) * (1 - shrink)
        figure, a, b = symmetric_unary_variance(prior, notion.epsilon, ratio=ratio)
        info["shrink"] = shrink
        info["optimality"] = {"variance": figure, "lower_bound": bound, "gap": (figure - bound) / figure,
                              "bound": PER_BIN, "bounds": {PER_BIN: bound}}
        try:
            return UnaryEncoding(np.full(prior.k, a), np.full(prior.k, b), notion, prior, provenance=info)
        except VerificationError:
            continue
    raise SolverError("the LDP unary design's realised bit probabilities miss the claim even after shrinking; "
                      "try a larger epsilon or another family (family='rr')")
