"""Optimal design of randomized-response-type tables: the LP over extreme rays (docs/math.md §5).

``design(prior, notion, objective)`` enumerates the extreme rays of the notion's column cone, solves the ray LP
with HiGHS (its optimum is the GLOBAL optimum of the non-convex MSE problem, docs/math.md §5), builds the table,
repairs it so that the stored numbers pass EXACT verification (docs/math.md §3), and returns it as a
TableMechanism beside the optimal LDP table and GRR at the same epsilon and prior.
"""

import numpy as np

from lipdesign.designer.population import (
    a_optimal_table,
    per_bin_bound,
    prior_matching_table,
    uniform_prior_optimum,
)
from lipdesign.designer.rays import MAX_RAYS, extreme_rays
from lipdesign.designer.repair import exact_repair, polished
from lipdesign.errors import InfeasibleError, SolverError, ValidationError
from lipdesign.mechanisms.rr import GRR
from lipdesign.mechanisms.table import TableMechanism
from lipdesign.mechanisms.unary import OUE
from lipdesign.model import Prior
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.objectives import as_objective, gains
from lipdesign.validation import choice, fmt
from solvers.closed_forms import binary_lip_table
from solvers.ray_lp import solve_ray_lp

#: Design families (``design(..., family=...)``); "rr" is the randomized-response type: any table.
FAMILIES = ("rr",)

#: An LIP optimum may exceed the LDP optimum by this relative amount (the LP solver's tolerance), no more.
OPTIMALITY_RTOL = 1e-9

#: A weight below this fraction of the largest LP weight is solver noise, not a column.
WEIGHT_FLOOR = 1e-13


def _max_rays(max_rays):
    if isinstance(max_rays, bool) or not isinstance(max_rays, (int, np.integer)) or max_rays < 1:
        raise ValidationError(f"max_rays is {fmt(max_rays)}; it must be a positive integer")
    return int(max_rays)


def design(prior, notion, objective="histogram", *, family="rr", max_rays=MAX_RAYS, baselines=True):
    """The MSE-optimal table of the randomized-response-type family under ``notion`` (docs/math.md §5), as a
    TableMechanism.

    ``prior``: a Prior (or probabilities); ``notion``: ld.LIP (optionally with secret and prior_set),
    ld.WorstCaseLIP or ld.LDP; ``objective``: "histogram" or ld.WeightedSum(values). Raises ProblemTooLargeError
    before enumeration when more than ``max_rays`` extreme rays would be needed. ``baselines=True`` also designs
    the optimal LDP table and evaluates GRR at the same epsilon and prior (``mechanism.baselines``).
    """
    prior = prior if isinstance(prior, Prior) else Prior(prior)
    objective = as_objective(objective)
    max_rays = _max_rays(max_rays)
    objective.check(prior.k)
    choice(family, "family", FAMILIES)
    if not isinstance(notion, (LDP, LIP, WorstCaseLIP)):
        raise ValidationError(f"notion is {notion!r}; it must be ld.LIP, ld.WorstCaseLIP or ld.LDP")
    notion.check(prior)
    if not isinstance(notion, LDP) and (prior.probabilities <= 0).any():
        x = int(np.argmin(prior.probabilities))
        raise ValidationError(
            f"prior[{x}] ({prior.labels[x]!r}) is 0; LIP design needs every value to have positive probability "
            "(docs/math.md §1): drop the value, or build the prior with Prior.from_counts(..., pseudocount=...)")
    if prior.k < 2:
        raise ValidationError("prior has a single value; there is nothing to perturb")

    plain_lip = isinstance(notion, LIP) and notion.secret is None and notion.prior_set is None
    matching = prior_matching_table(prior, notion.epsilon) if plain_lip and objective.population else None
    if plain_lip and prior.k == 2:
        table, info = binary_lip_table(prior.probabilities, notion.epsilon), {"method": "closed form (docs/math.md §6)"}
    elif matching is not None:
        table, info = matching, {"method": "closed form: prior matching (docs/math.md §10, §11)"}
    elif objective.population:
        rays, method = extreme_rays(prior, notion, max_rays)
        table, info = a_optimal_table(rays, prior)
        info["method"] = f"A-optimal weights over extreme rays, {method}"
    else:
        table, info = _ray_lp_table(prior, notion, objective, max_rays)
    info["optimal"] = True
    info["mse_before_repair"] = objective.value(table, prior)
    table, info["uniform_mix"] = exact_repair(table, notion, prior)
    if objective.population:
        info["optimality"] = _optimality(objective.value(table, prior), info.pop("lower_bounds", {}), prior, notion)
    if baselines:
        info["baselines"] = baseline_mses(prior, notion.epsilon, objective, max_rays)
        designed, ldp = objective.value(table, prior), info["baselines"]["optimal LDP"]
        # Every eps-LDP table satisfies every LIP variant (docs/math.md §2): an LIP optimum above the LDP optimum
        # means the enumeration lost rays, so refuse rather than return a non-optimal "optimal" table.
        if designed > ldp + OPTIMALITY_RTOL * max(1.0, designed):
            raise SolverError(f"{notion.kind} design gave MSE {designed:.12g} above the optimal LDP MSE {ldp:.12g}; "
                              "the extreme-ray enumeration failed numerically")
    return TableMechanism(table, notion, prior, objective, provenance=info)


def _ray_lp_table(prior, notion, objective, max_rays):
    rays, method = extreme_rays(prior, notion, max_rays)
    result = solve_ray_lp(rays, gains(rays, prior.probabilities, objective))
    if result.status != "optimal":
        raise InfeasibleError(f"the ray LP for {notion.kind} eps={notion.epsilon:g} found no table: {result.message}")
    used = result.weights > WEIGHT_FLOOR * result.weights.max()
    table = polished(result.weights[used], rays[used]) * rays[used].T
    table /= table.sum(axis=1, keepdims=True)
    order = np.lexsort((-table.max(axis=0), table.argmax(axis=0)))
    info = {"method": f"extreme-ray LP, {method}", "solver": "HiGHS dual simplex", "rays": len(rays),
            "lp_objective": result.objective}
    return table[:, order], info


def _optimality(value, bounds, prior, notion):
    """The design's figure beside the best valid lower bound and the relative gap (docs/math.md §11)."""
    per_bin = per_bin_bound(prior, notion)
    if per_bin is not None:
        bounds["per-bin (Cramer-Rao, docs/math.md §11)"] = per_bin
    uniform = np.ptp(prior.probabilities) == 0
    if uniform and (isinstance(notion, LDP) or isinstance(notion, LIP) and notion.secret is notion.prior_set is None):
        bounds["uniform-prior optimum (docs/math.md §11)"] = uniform_prior_optimum(prior.k, notion.epsilon,
                                                                                 notion.kind)[0]
    if not bounds:
        return {"variance": value, "lower_bound": None, "gap": None, "bound": None}
    name = max(bounds, key=bounds.get)
    bound = min(bounds[name], value)  # a bound computed in floating point may exceed the optimum by rounding
    return {"variance": value, "lower_bound": bound, "gap": (value - bound) / value if value else 0.0,
            "bound": name}


def baseline_mses(prior, epsilon, objective, max_rays=MAX_RAYS):
    """The figure of the objective (docs/math.md §4, §11) for the optimal LDP table and for GRR (the package's
    sampler, ``mechanisms.rr.GRR``) at the same epsilon and prior, and for OUE too under the population objective
    (its variance given the users' values, docs/math.md §8)."""
    ldp = design(prior, LDP(epsilon), objective, max_rays=max_rays, baselines=False)
    figures = {"optimal LDP": ldp.mse, "GRR": objective.value(GRR(epsilon, prior.k).full_table(), prior)}
    if objective.population and epsilon <= OUE.epsilon_range[1]:
        figures["OUE"] = float(OUE(epsilon, prior.k).variance(prior.probabilities).sum())
    return figures
