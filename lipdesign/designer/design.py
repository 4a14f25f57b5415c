"""Optimal design of randomized-response-type tables over the extreme rays of the notion's cone (docs/math.md §5,
§11).

``design(prior, notion, objective)`` enumerates the extreme rays of the notion's column cone and finds the optimal
weights: the convex A-optimal (``Frequencies``, the default) or c-optimal (``Mean``) program of docs/math.md §11,
certified by its dual bound, or the ray LP for the Bayesian objectives (whose optimum is the GLOBAL optimum of the
non-convex MSE problem, docs/math.md §5). Closed forms come first where they are optimal (k = 2, prior matching).
The table is repaired so that the stored numbers pass EXACT verification (docs/math.md §3) and returned as a
TableMechanism with its certificate of optimality and the baselines at the same epsilon and prior (and at 2 eps
for an LIP design, the LDP guarantee eps-LIP implies at worst).
"""

import math

import numpy as np

from lipdesign.designer.columns import (
    MAX_ROUNDS,
    TARGET_GAP,
    bayes_columns_table,
    columns_bayes_bound,
    population_columns_table,
)
from lipdesign.designer.hashing import check_hashing, hashing_design
from lipdesign.designer.population import (
    PER_BIN_BAYES,
    lower_bounds,
    population_table,
    prior_matching_table,
    uniform_prior_optimum,
)
from lipdesign.designer.rays import MAX_RAYS, extreme_rays
from lipdesign.designer.repair import exact_repair, polished
from lipdesign.designer.unary import MAX_RR_BASELINE_K, check_unary, unary_design
from lipdesign.errors import InfeasibleError, ProblemTooLargeError, SolverError, ValidationError
from lipdesign.mechanisms.hashing import OLH
from lipdesign.mechanisms.oracle import pure_variance
from lipdesign.mechanisms.rr import GRR
from lipdesign.mechanisms.table import TableMechanism
from lipdesign.mechanisms.unary import OUE
from lipdesign.model import Prior
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.objectives import Frequencies, as_objective, gains
from lipdesign.progress import ProgressLine
from lipdesign.validation import MAX_EPSILON, choice, fmt, integer, real_number
from solvers.closed_forms import binary_lip_table
from solvers.ray_lp import solve_ray_lp
from solvers.slices import SliceError
from solvers.threads import one_thread

#: Design families (``design(..., family=...)``): "rr" is the randomized-response type (any table), "unary" a
#: unary encoding with a pair of bit probabilities per value (docs/math.md §7.1), "hashing" local hashing into two
#: buckets with a channel per bucket mass (docs/math.md §7.2).
FAMILIES = ("rr", "unary", "hashing")

#: Design methods of the randomized-response family (``design(..., method=...)``).
METHODS = ("auto", "exact", "columns")

#: Smallest epsilon ``design`` solves for (every notion and family). In a sweep of 6 notions x 3 random priors at
#: k = 4, every design from 1e-3 to 30 succeeded with a finite figure, while at 1e-4 and 1e-6 14 of 36 failed or gave
#: a table the unbiased estimate cannot invert (the programs' entries differ from uniform by about eps).
DESIGN_MIN_EPSILON = 1e-3

#: An LIP optimum may exceed the LDP optimum by this relative amount (the LP solver's tolerance), no more.
OPTIMALITY_RTOL = 1e-9

#: A weight below this fraction of the largest LP weight is solver noise, not a column.
WEIGHT_FLOOR = 1e-13


def _fraction(value, field):
    """A number strictly between 0 and 1 (a relative gap)."""
    number = real_number(value, field)
    if not 0 < number < 1:
        raise ValidationError(f"{field} is {fmt(value)}; it must be a number strictly between 0 and 1")
    return number


@one_thread
def design(prior, notion, objective=None, *, family="rr", max_rays=MAX_RAYS, baselines=True, progress=None,
           buckets=2, method="auto", target_gap=TARGET_GAP, max_rounds=MAX_ROUNDS):
    """The optimal table of the randomized-response-type family under ``notion`` for ``objective``, as a
    TableMechanism (docs/math.md §5, §11).

    ``prior``: a Prior (or probabilities); ``notion``: ld.LIP (optionally with secret and prior_set),
    ld.WorstCaseLIP or ld.LDP; ``objective``: ld.Frequencies() (the default: the variance of the unbiased estimate of
    the population histogram), ld.Mean(values), or the Bayesian ld.BayesHistogram() / ld.BayesSum(values) (right
    only when the prior is the truth). ``baselines=True`` also evaluates the optimal LDP table, GRR, OUE, OLH and subset
    selection at the same epsilon and prior, and at 2 eps for an LIP design (``mechanism.baselines``).
    ``progress``: None, or a callable that receives a line of text now and then during long work (the extreme-ray
    enumeration of a latent secret or a prior set, the rounds of column generation, the baselines): each line a
    ``lipdesign.progress.ProgressLine``, a str that also says how far its phase has come (for a progress bar).
    ``family="unary"`` designs a unary encoding instead
    (docs/math.md §7.1: ld.LIP for X and ld.Frequencies only; a ``UnaryEncoding``, with the optimal RR table's
    figure among its baselines for k <= 10); ``family="hashing"`` designs local hashing (docs/math.md §7.2: a
    ``LocalHashing`` under ld.LIP for X, ld.mechanisms.OLH under ld.LDP, for ld.Frequencies); with ``buckets`` g in
    3..8, pooled local hashing (a TableMechanism over a public pool of hashes, one ray LP per hash) under ld.LIP,
    OLH with g buckets under ld.LDP.

    ``method`` (family "rr"): "exact" enumerates the extreme rays (optimal, certified; small k), "columns" runs
    column generation over the cone's slice (docs/math.md §12: every notion at any k, stopped within
    ``target_gap`` of the best certified lower bound or after ``max_rounds`` rounds, the gap reported either way),
    "auto" (the default) the exact method where enumeration fits in ``max_rays`` and column generation past it;
    "exact" raises ProblemTooLargeError, before the expensive work, where it does not fit.
    """
    prior = prior if isinstance(prior, Prior) else Prior(prior)
    objective = Frequencies() if objective is None else as_objective(objective)
    max_rays = integer(max_rays, "max_rays")
    objective.check(prior.k)
    choice(family, "family", FAMILIES)
    choice(method, "method", METHODS)
    target_gap = _fraction(target_gap, "target_gap")
    max_rounds = integer(max_rounds, "max_rounds")
    if family != "rr" and method != "auto":
        raise ValidationError(f"method is {method!r}; it chooses how family='rr' is designed (family is {family!r})")
    if (family != "rr" or method == "exact") and (target_gap != TARGET_GAP or max_rounds != MAX_ROUNDS):
        raise ValidationError(f"target_gap and max_rounds set column generation (family='rr', method 'auto' or "
                              f"'columns'); here family is {family!r} and method {method!r}")
    if family != "hashing" and buckets != 2:
        raise ValidationError(f"buckets is {fmt(buckets)}; it sets the buckets of family='hashing' (family is "
                              f"{family!r})")
    if not isinstance(notion, (LDP, LIP, WorstCaseLIP)):
        raise ValidationError(f"notion is {notion!r}; it must be ld.LIP, ld.WorstCaseLIP or ld.LDP")
    if notion.epsilon < DESIGN_MIN_EPSILON:
        raise ValidationError(f"epsilon is {fmt(notion.epsilon)}; ld.design solves for tables at epsilon >= "
                              f"{DESIGN_MIN_EPSILON:g} (below it the programs lose the precision they need: at 1e-4 "
                              "and 1e-6 a third of random designs failed or gave a table the unbiased estimate "
                              "cannot invert); GRR, OUE and OLH (ld.mechanisms) are exact at any epsilon from 1e-6, "
                              "and ld.verify checks any table at any epsilon")
    notion.check(prior)
    if not isinstance(notion, LDP) and (prior.probabilities <= 0).any():
        x = int(np.argmin(prior.probabilities))
        raise ValidationError(
            f"prior[{x}] ({prior.labels[x]!r}) is 0; LIP design needs every value to have positive probability "
            "(docs/math.md §1): drop the value, or build the prior with Prior.from_counts(..., pseudocount=...)")
    if prior.k < 2:
        raise ValidationError("prior has a single value; there is nothing to perturb")
    if family != "rr":
        (check_unary if family == "unary" else check_hashing)(prior, notion, objective)
        rr = None
        if baselines and prior.k <= MAX_RR_BASELINE_K and isinstance(notion, (LIP, LDP)):
            try:  # a baseline only: the encoding's design does not depend on it
                rr = design(prior, notion, objective, max_rays=max_rays, baselines=False).mse
            except (ProblemTooLargeError, SolverError, InfeasibleError):
                rr = None
        if family == "hashing" and buckets != 2:
            return hashing_design(prior, notion, objective, baselines=baselines, rr_optimum=rr, buckets=buckets)
        encoding_design = unary_design if family == "unary" else hashing_design
        return encoding_design(prior, notion, objective, baselines=baselines, rr_optimum=rr)

    plain_lip = isinstance(notion, LIP) and notion.secret is None and notion.prior_set is None
    matching = prior_matching_table(prior, notion.epsilon) if plain_lip and objective.population else None
    bounds = {}
    if plain_lip and prior.k == 2:
        table, info = binary_lip_table(prior.probabilities, notion.epsilon), {"method": "closed form (docs/math.md §6)"}
    elif matching is not None:
        table, info = matching, {"method": "closed form: prior matching (docs/math.md §10, §11)"}
    else:
        rays = None if method == "columns" else _rays(prior, notion, objective, max_rays, progress,
                                                      columns=method == "auto")
        if rays is None:  # the certified bounds first: the rounds stop at the target gap to the best of them
            bounds = lower_bounds(prior, notion, objective) if objective.population else {}
            table, info = _columns_table(prior, notion, objective, bounds, target_gap, max_rounds, progress)
        elif objective.population:
            table, info = population_table(rays[0], prior, objective)
            kind = "A-optimal" if objective.kind == "frequencies" else "c-optimal"
            info["method"] = f"{kind} weights over extreme rays, {rays[1]}"
        else:
            table, info = _ray_lp_table(prior, notion, objective, rays)
    info.setdefault("optimal", True)
    info["mse_before_repair"] = objective.value(table, prior)
    table, info["uniform_mix"] = exact_repair(table, notion, prior)
    info["columns"] = table.shape[1]
    if objective.population and not bounds:  # the exact dual bound comes with the rays: a secret's SDP adds nothing
        bounds = lower_bounds(prior, notion, objective, relaxation=getattr(notion, "secret", None) is None)
    if objective.population or "bayes_bound" in info:
        bounds = {**bounds, **info.pop("lower_bounds", {}), **info.pop("bayes_bound", {})}
        info["optimality"] = _optimality(objective.value(table, prior), bounds)
    if baselines:
        skipped = {}
        info["baselines"] = baseline_figures(prior, notion, objective, max_rays, skipped, progress=progress)
        if skipped:
            info["baselines_skipped"] = skipped
        designed, ldp = objective.value(table, prior), info["baselines"].get("optimal LDP")
        # Every eps-LDP table satisfies every LIP variant (docs/math.md §2): an LIP optimum above the LDP optimum
        # means the enumeration lost rays, so refuse rather than return a non-optimal "optimal" table. (Column
        # generation is not exact, so there the comparison is only reported.)
        if info["optimal"] and ldp is not None and designed > ldp + OPTIMALITY_RTOL * max(1.0, designed):
            raise SolverError(f"{notion.kind} design gave {designed:.12g} ({objective.kind}) above the optimal LDP "
                              f"table's {ldp:.12g}; the extreme-ray enumeration failed numerically")
    return TableMechanism(table, notion, prior, objective, provenance=info)


def _columns_table(prior, notion, objective, bounds, target_gap, max_rounds, progress):
    """(table, info) by column generation (docs/math.md §12), marked not optimal (its pricing is a heuristic)."""
    try:
        if objective.population:
            protocols = fixed_protocols(prior, notion.epsilon) if objective.kind == "frequencies" else {}
            table, info = population_columns_table(prior, notion, objective, bounds, target_gap=target_gap,
                                                   max_rounds=max_rounds, progress=progress, protocols=protocols)
            kind = "A-optimal" if objective.kind == "frequencies" else "c-optimal"
        else:
            bound = columns_bayes_bound(prior, notion, objective)
            table, info = bayes_columns_table(prior, notion, objective, bound, target_gap=target_gap,
                                              max_rounds=max_rounds, progress=progress)
            info["bayes_bound"] = {} if bound is None else {PER_BIN_BAYES: bound}
            kind = "ray LP"
    except SliceError as error:
        raise SolverError(f"column generation for {notion.kind} eps={notion.epsilon:g} failed: {error}") from None
    info["method"] = f"{kind} by column generation over the {notion.kind} slice (docs/math.md §12)"
    info["optimal"] = False
    return table, info


def _rays(prior, notion, objective, max_rays, progress=None, columns=False):
    """(rays, description) of the exact method; None when enumeration is too large and ``columns`` (column
    generation can take over); otherwise a ProblemTooLargeError that says what can be done at this k."""
    try:
        return extreme_rays(prior, notion, max_rays, progress)
    except ProblemTooLargeError as error:
        if columns:
            return None
        advice = [("method='auto' (the default) or method='columns' designs it at any k by column generation "
                   "(docs/math.md §12)")]
        plain = getattr(notion, "secret", None) is None
        if plain and np.ptp(prior.probabilities) == 0 and objective.kind == "frequencies" and notion.kind in ("LIP",
                                                                                                             "LDP"):
            figure, description = uniform_prior_optimum(prior.k, notion.epsilon, notion.kind)
            advice.append(f"at this uniform prior the optimum is known in closed form: n x sum Var = {figure:.6g} "
                          f"({description}; lipdesign.designer.uniform_prior_optimum)")
        advice.append("family='unary' or family='hashing' designs at any k, and ld.compare(prior, notion) sets every "
                      "family side by side (docs/math.md §7); or merge rare values into fewer buckets")
        raise ProblemTooLargeError(f"{error}; " + "; ".join(advice)) from None


def _ray_lp_table(prior, notion, objective, enumerated):
    rays, method = enumerated
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


def _optimality(value, bounds):
    """The design's figure beside the best valid lower bound, the relative gap, the bound's name and every bound
    computed (docs/math.md §11)."""
    bounds = {name: bound for name, bound in bounds.items() if bound is not None and np.isfinite(bound)}
    if not bounds:
        return {"variance": value, "lower_bound": None, "gap": None, "bound": None, "bounds": {}}
    name = max(bounds, key=bounds.get)
    bound = min(bounds[name], value)  # a bound computed in floating point may exceed the optimum by rounding
    return {"variance": value, "lower_bound": bound, "gap": (value - bound) / value if value else 0.0,
            "bound": name, "bounds": bounds}


def subset_selection_probabilities(epsilon, k, d):
    """(p, q) of d-subset selection (docs/math.md §8, §11): the report is a d-subset S of the values, drawn with
    weight e^eps if it holds the user's value and 1 otherwise; p = Pr[v in S | X = v] = d e/(d e + k - d) and
    q = Pr[v in S | X != v] = d ((d - 1) e + k - d)/((k - 1)(d e + k - d))."""
    e = math.exp(epsilon)
    return d * e / (d * e + k - d), d * ((d - 1) * e + k - d) / ((k - 1) * (d * e + k - d))


def subset_selection_variance(prior, epsilon):
    """(n x sum Var, d): the support-count estimate of d-subset selection at the design prior, given the users'
    values, for the d in 1..k-1 that minimises it."""
    best = None
    for d in range(1, prior.k):
        p, q = subset_selection_probabilities(epsilon, prior.k, d)
        figure = float(pure_variance(prior.probabilities, 1, p, q).sum())
        if best is None or figure < best[0]:
            best = (figure, d)
    return best


def baseline_figures(prior, notion, objective, max_rays=MAX_RAYS, skipped=None, progress=None):
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
            figures["optimal LDP" + suffix] = design(prior, LDP(epsilon), objective, max_rays=max_rays,
                                                     baselines=False, method="exact").mse
        except (ProblemTooLargeError, SolverError, InfeasibleError) as error:
            if skipped is not None:
                skipped["optimal LDP" + suffix] = str(error)
        if objective.kind == "frequencies":
            figures.update({name + suffix: figure for name, figure in fixed_protocols(prior, epsilon).items()})
        else:
            figures["GRR" + suffix] = objective.value(GRR(epsilon, prior.k).full_table(), prior)
    return figures


def fixed_protocols(prior, epsilon):
    """{name: n x sum Var} of GRR, OUE, OLH and the best subset selection at ``epsilon``, each with its own unbiased
    estimate at the prior, given the users' values (docs/math.md §8). All are eps-LDP, so feasible for every notion
    at that epsilon."""
    p = prior.probabilities
    figures = {"GRR": float(GRR(epsilon, prior.k).variance(p).sum())}
    if epsilon <= OUE.epsilon_range[1]:
        figures["OUE"] = float(OUE(epsilon, prior.k).variance(p).sum())
        figures["OLH"] = float(OLH(epsilon, prior.k).variance(p).sum())
    ss, d = subset_selection_variance(prior, epsilon)
    figures[f"subset selection (d={d})"] = ss
    return figures
