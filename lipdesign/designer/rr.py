"""The randomized-response family: the optimal table for a prior, a notion and an objective (docs/math.md §5, §6,
§10, §11, §12).

Closed forms first where they are optimal (k = 2, prior matching); otherwise the extreme rays of the notion's cone
are enumerated where they fit (the convex A-optimal or c-optimal weights of docs/math.md §11, certified by their
dual bound, or the ray LP of docs/math.md §5 for the Bayesian objectives, whose optimum is the GLOBAL optimum of the
non-convex MSE problem), and column generation over the cone's slice takes over past that (docs/math.md §12). The
table is repaired so that the stored numbers pass EXACT verification (docs/math.md §3) and returned as a
TableMechanism with its certificate of optimality and the baselines at the same epsilon and prior (and at 2 eps for
an LIP design, the LDP guarantee eps-LIP implies at worst).
"""

from typing import Any, cast

import numpy as np

from lipdesign._solvers.slices import SliceError
from lipdesign.designer.baselines import fixed_protocols, subset_selection_variance
from lipdesign.designer.bounds import (
    PER_BIN,
    PER_BIN_BAYES,
    bayes_bound,
    lower_bounds,
    optimality,
    per_bin_bound,
    uniform_prior_optimum,
)
from lipdesign.designer.classes import GROUPED_MIN_K, class_symmetric_design, grouped_design, prior_classes
from lipdesign.designer.columns import (
    MAX_ROUNDS,
    TARGET_GAP,
    announce,
    bayes_columns_table,
    check_columns_size,
    population_columns_table,
)
from lipdesign.designer.rays import MAX_RAYS, extreme_rays
from lipdesign.designer.repair import exact_repair
from lipdesign.designer.weights import population_table, ray_lp_table
from lipdesign.errors import InfeasibleError, ProblemTooLargeError, SolverError
from lipdesign.mechanisms.class_lip import MAX_CLASS_K, MAX_CLASSES, ClassSymmetricLIP
from lipdesign.mechanisms.closed_forms import binary_lip_table, prior_matching_channel
from lipdesign.mechanisms.rr import GRR
from lipdesign.mechanisms.subset import SubsetLIP, SubsetSelection
from lipdesign.mechanisms.table import TableMechanism
from lipdesign.notions import LDP, LIP
from lipdesign.progress import ProgressLine
from lipdesign.validation import MAX_EPSILON

#: An LIP optimum may exceed the LDP optimum by this relative amount (the LP solver's tolerance), no more.
OPTIMALITY_RTOL = 1e-9


def design_table(prior, notion, objective, *, max_rays=MAX_RAYS, baselines=True, progress=None, method="auto",
                 target_gap=TARGET_GAP, max_rounds=MAX_ROUNDS, time_limit=None):
    """The randomized-response design of ``ld.design`` (family "rr") for inputs it has validated: a TableMechanism
    with its provenance (method, optimality, baselines). ``method``: "exact" (enumerated rays; ProblemTooLargeError
    past ``max_rays``), "columns" (column generation), "classes" (class-symmetric, docs/math.md §11) or "auto"
    (exact where it fits)."""
    plain_lip = isinstance(notion, LIP) and notion.secret is None and notion.prior_set is None
    matching = (prior_matching_channel(prior.probabilities, notion.epsilon)
                if plain_lip and objective.population else None)
    uniform = objective.kind == "frequencies" and prior.k > 2 and np.ptp(prior.probabilities) == 0
    if uniform and matching is None and (plain_lip or isinstance(notion, LDP)):
        return _orbit_design(prior, notion, baselines)
    bounds: dict[str, Any] = {}
    info: dict[str, Any]
    if plain_lip and prior.k == 2:
        table, info = binary_lip_table(prior.probabilities, notion.epsilon), {"method": "closed form (docs/math.md §6)"}
    elif matching is not None:
        table, info = matching, {"method": "closed form: prior matching (docs/math.md §10, §11)"}
    else:
        rays = None if method in ("columns", "classes") else _rays(prior, notion, max_rays, progress,
                                                                   columns=method == "auto")
        if rays is None and plain_lip and objective.kind == "frequencies" and (
                method == "classes" or method == "auto" and (prior_classes(prior) is not None or
                                                             GROUPED_MIN_K <= prior.k <= MAX_CLASS_K)):
            return _class_design(prior, notion, objective, max_rays, baselines, progress, time_limit)
        if rays is None:  # the certified bounds first: the rounds stop at the target gap to the best of them
            check_columns_size(prior, notion)
            if objective.population:
                announce(progress, f"certified lower bounds (k = {prior.k})", max_rounds)
            bounds = lower_bounds(prior, notion, objective) if objective.population else {}
            table, info = _columns_table(prior, notion, objective, bounds, target_gap, max_rounds, progress,
                                         time_limit)
        elif objective.population:
            table, info = population_table(rays[0], prior, objective)
            kind = "A-optimal" if objective.kind == "frequencies" else "c-optimal"
            info["method"] = f"{kind} weights over extreme rays, {rays[1]}"
        else:
            table, info = ray_lp_table(prior, notion, objective, rays)
    info.setdefault("optimal", True)
    info["mse_before_repair"] = objective.value(table, prior)
    table, info["uniform_mix"] = exact_repair(table, notion, prior)
    info["columns"] = table.shape[1]
    if objective.population and not bounds:  # the exact dual bound comes with the rays: a secret's SDP adds nothing
        bounds = lower_bounds(prior, notion, objective, relaxation=getattr(notion, "secret", None) is None)
    if objective.population or "bayes_bound" in info:
        bounds = {**bounds, **info.pop("lower_bounds", {}), **info.pop("bayes_bound", {})}
        info["optimality"] = optimality(objective.value(table, prior), bounds)
    if baselines:
        skipped: dict[str, Any] = {}
        info["baselines"] = _baselines(prior, notion, objective, max_rays, skipped, progress=progress)
        if skipped:
            info["baselines_skipped"] = skipped
        designed, ldp = objective.value(table, prior), info["baselines"].get("optimal LDP")
        # Every eps-LDP table satisfies every LIP variant (docs/math.md §2): an LIP optimum above the LDP optimum
        # means the enumeration lost rays, so refuse rather than return a non-optimal "optimal" table. (Column
        # generation is not exact, so there the comparison is only reported.)
        if info["optimal"] and ldp is not None and designed > ldp + OPTIMALITY_RTOL * max(1.0, designed):
            raise SolverError(f"{notion.kind} design gave {designed:.12g} ({objective.kind}) above the optimal LDP "
                              f"table's {ldp:.12g}; the extreme-ray enumeration failed numerically")
    if isinstance(notion, LDP) and objective.kind == "frequencies" and not info["optimal"]:
        # not None: k >= 2 (ld.design refuses a prior of a single value)
        subset, d = cast("tuple[float, int]", subset_selection_variance(prior, notion.epsilon))
        figure = objective.value(table, prior)
        if subset < figure:  # column generation ended above subset selection, an eps-LDP mechanism: take it
            info["method"] = (f"subset selection (d = {d}): the best column-generation table reached {figure:.6g} "
                              f"above its {subset:.6g} ({info['method']}; docs/math.md §11, §12)")
            info["optimality"] = optimality(subset, bounds)
            ending = info["stopped"].split("; ")[0]  # the rest spoke of the table, which is not returned
            info["stopped"] = (f"{ending}; the table then was above subset selection (d = {d}) at the same eps "
                               f"({figure:.6g} > {subset:.6g}), which is returned instead (family 'subset')")
            if info["optimality"].get("bound"):
                info["stopped"] += (f"; its gap is {info['optimality']['gap']:.2%} to the "
                                    f"{info['optimality']['bound']}")
            return SubsetSelection(notion.epsilon, prior.k, d, _labels(prior), prior.probabilities.tolist(),
                                   provenance=info)
    return TableMechanism(table, notion, prior, objective, provenance=info)


def _labels(prior):
    """The prior's labels for a subset mechanism, or None when they are the indices."""
    return None if list(prior.labels) == list(range(prior.k)) else list(prior.labels)


def _orbit_design(prior, notion, baselines):
    """The optimum at a uniform prior, at any k (docs/math.md §11): the LIP orbit (``SubsetLIP``) or subset selection
    (``SubsetSelection``) with the best orbit, certified by the closed form of its figure (the realised
    probabilities sit 1e-10 inside e^eps, so the gap is about that)."""
    kind = "LIP" if isinstance(notion, LIP) else "LDP"
    closed, description = uniform_prior_optimum(prior.k, notion.epsilon, kind)
    info: dict[str, Any] = {"method": f"closed form at the uniform prior: {description} (docs/math.md §11)",
                            "optimal": True}
    if baselines:
        info["baselines"] = {"optimal LDP": uniform_prior_optimum(prior.k, notion.epsilon, "LDP")[0],
                             **fixed_protocols(prior, notion.epsilon)}
        if kind == "LIP" and 2 * notion.epsilon <= MAX_EPSILON:
            twice = {"optimal LDP": uniform_prior_optimum(prior.k, 2 * notion.epsilon, "LDP")[0],
                     **fixed_protocols(prior, 2 * notion.epsilon)}
            info["baselines"].update({name + " at 2 eps": value for name, value in twice.items()})
    cls = SubsetLIP if kind == "LIP" else SubsetSelection
    mechanism = cls(notion.epsilon, prior.k, None, _labels(prior))
    bounds = {"uniform-prior optimum (docs/math.md §11)": closed, PER_BIN: per_bin_bound(prior, notion)}
    info["optimality"] = optimality(mechanism.mse, bounds)
    return cls(notion.epsilon, prior.k, None, _labels(prior), provenance=info)


def _class_design(prior, notion, objective, max_rays, baselines, progress, time_limit):
    """The class-symmetric optimum (docs/math.md §11) at a prior with a few classes of equally likely values, where
    the extreme rays do not fit: a ``ClassSymmetricLIP`` with the gap to the certified bounds and the baselines."""
    announce(progress, f"certified lower bounds (k = {prior.k})", MAX_ROUNDS)
    bounds = lower_bounds(prior, notion, objective)
    if prior_classes(prior, MAX_CLASSES) is not None:
        mechanism, info = class_symmetric_design(prior, notion.epsilon, progress=progress, time_limit=time_limit)
    else:  # grouped into classes, certified at the prior itself
        mechanism, info = grouped_design(prior, notion, progress=progress, time_limit=time_limit)
    info["optimality"] = optimality(mechanism.mse, bounds)
    if baselines:
        skipped: dict[str, Any] = {}
        info["baselines"] = _baselines(prior, notion, objective, max_rays, skipped, progress=progress)
        if skipped:
            info["baselines_skipped"] = skipped
    return ClassSymmetricLIP.from_parameters(mechanism.parameters(), provenance=info)


def _columns_table(prior, notion, objective, bounds, target_gap, max_rounds, progress, time_limit):
    """(table, info) by column generation (docs/math.md §12), marked not optimal (its pricing is a heuristic)."""
    try:
        if objective.population:
            protocols = fixed_protocols(prior, notion.epsilon) if objective.kind == "frequencies" else {}
            table, info = population_columns_table(prior, notion, objective, bounds, target_gap=target_gap,
                                                   max_rounds=max_rounds, progress=progress, protocols=protocols,
                                                   time_limit=time_limit)
            kind = "A-optimal" if objective.kind == "frequencies" else "c-optimal"
        else:
            bound = bayes_bound(prior, notion, objective)
            table, info = bayes_columns_table(prior, notion, objective, bound, target_gap=target_gap,
                                              max_rounds=max_rounds, progress=progress, time_limit=time_limit)
            info["bayes_bound"] = {} if bound is None else {PER_BIN_BAYES: bound}
            kind = "ray LP"
    except SliceError as error:
        raise SolverError(f"column generation for {notion.kind} eps={notion.epsilon:g} failed: {error}") from None
    info["method"] = f"{kind} by column generation over the {notion.kind} slice (docs/math.md §12)"
    info["optimal"] = False
    return table, info


def _rays(prior, notion, max_rays, progress=None, columns=False):
    """(rays, description) of the exact method; None when enumeration is too large and ``columns`` (column
    generation can take over); otherwise a ProblemTooLargeError that says what can be done at this k."""
    try:
        return extreme_rays(prior, notion, max_rays, progress)
    except ProblemTooLargeError as error:
        if columns:
            return None
        advice = [("method='auto' (the default) or method='columns' designs it at any k by column generation "
                   "(docs/math.md §12)")]
        advice.append("family='unary' or family='hashing' designs at any k, and ld.compare(prior, notion) sets every "
                      "family side by side (docs/math.md §7); or merge rare values into fewer buckets")
        raise ProblemTooLargeError(f"{error}; " + "; ".join(advice)) from None


def _baselines(prior, notion, objective, max_rays=MAX_RAYS, skipped=None, progress=None):
    """The figure of the objective (docs/math.md §4, §11) for the optimal LDP table (where its rays can be
    enumerated: column generation would double the design's time for an inexact figure) and GRR at the notion's
    epsilon and prior; for ``Frequencies`` also OUE, OLH and subset selection, each with its own unbiased estimate
    (its variance given the users' values, docs/math.md §8); and, for LIP or BP-LIP protecting X itself, all of them
    again at 2 eps (the LDP level an eps-LIP table reaches at worst, docs/math.md §2). GRR is taken with its own
    estimate under population objectives and as the table it realises under the Bayesian ones. A baseline that
    cannot be computed never blocks the design: it is left out, with the reason in ``skipped`` when given.
    ``progress`` (None or a callable taking a line of text) hears when each epsilon's figures start (the optimal
    LDP table is the long part): ``ProgressLine``s of phase "baselines", counting the epsilons done before."""
    levels = [("", notion.epsilon)]
    if isinstance(notion, LIP) and notion.secret is None and 2 * notion.epsilon <= MAX_EPSILON:
        levels.append((" at 2 eps", 2 * notion.epsilon))
    figures = {}
    for done, (suffix, epsilon) in enumerate(levels):
        if progress is not None:
            detail = f"optimal LDP table and fixed protocols at eps={epsilon:g}"
            progress(ProgressLine(f"baselines: {detail} ({done + 1} of {len(levels)})", phase="baselines", done=done,
                                  total=len(levels), unit="epsilons", detail=detail))
        try:
            figures["optimal LDP" + suffix] = design_table(prior, LDP(epsilon), objective, max_rays=max_rays,
                                                           baselines=False, method="exact").mse
        except (ProblemTooLargeError, SolverError, InfeasibleError) as error:
            if skipped is not None:
                skipped["optimal LDP" + suffix] = str(error)
        if objective.kind == "frequencies":
            figures.update({name + suffix: figure for name, figure in fixed_protocols(prior, epsilon).items()})
        else:
            figures["GRR" + suffix] = objective.value(GRR(epsilon, prior.k).full_table(), prior)
    return figures
