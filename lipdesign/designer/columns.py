"""Randomized-response designs past the range of extreme-ray enumeration, by column generation over the slice of
the notion's column cone (docs/math.md §12).

The restricted problem keeps a set of columns: the convex weight problem of docs/math.md §11 for ``Frequencies`` and
``Mean``, the ray LP of docs/math.md §5 for the Bayesian objectives. Pricing looks for a point r of the slice whose
price r^T Z r + y . r (a convex function) beats the columns in use: a monotone ascent from every column in use and
from random vertices, each step a linear maximisation over the slice (``_solvers.slices``: O(k log k) for LIP for X
and LDP, a warm-started HiGHS simplex over the polytope of a latent secret or a prior set). The
columns start from designs that are already good and feasible (GRR, subset selection, the per-bin test columns of
the bound, the one-value columns), so the result is never worse than the best combination of them (up to the
barrier's tolerance). Rounds stop when the figure is within ``target_gap`` of the best certified lower bound, when it
stalls, when pricing finds nothing better, or when ``max_rounds`` have run; the gap is reported either way. Pricing
is a heuristic here, so the equivalence-theorem dual bound over the columns found is not a certificate and is not
reported as one.
"""

import itertools
import math
import time

import numpy as np

from lipdesign._solvers.mirror_descent import descend, multipliers_and_prices, project, trace_inverse
from lipdesign._solvers.ray_lp import solve_ray_lp
from lipdesign._solvers.slices import BoxSlice, Lifting, PolytopeSlice, StaircaseSlice, ascend, prices
from lipdesign.designer.bounds import bound_target
from lipdesign.designer.weights import (
    CANDIDATES,
    PRICE_SLACK,
    Criterion,
    column_generation,
    new_rows,
    scaled_objective,
    weights_table,
)
from lipdesign.errors import InfeasibleError, ProblemTooLargeError, SolverError, ValidationError
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.objectives import BayesHistogram
from lipdesign.progress import ProgressLine

#: The default target: stop when the figure is within this relative gap of the best certified lower bound.
TARGET_GAP = 0.01

#: The default time budget of column generation, in seconds: the rounds stop at the first one that ends past it and
#: the design found so far is returned with its certified gap.
TIME_LIMIT = 600.0

#: The default budget of column-generation rounds (each prices from every column in use and RANDOM_STARTS
#: random vertices, and adds up to 2k columns).
MAX_ROUNDS = 200

#: The rounds stop when the figure improved by less than STALL (relative) over the last STALL_ROUNDS rounds; by
#: less than STALL_ABOVE while it is above the best fixed protocol's (slow rounds that still approach it are worth
#: running, but not forever when the protocol is near optimal).
STALL = 1e-4
STALL_ABOVE = 5e-5
STALL_ROUNDS = 10

#: The figure counts as above a fixed protocol's when it exceeds it by more than this (relative): the barrier's
#: tolerance.
ABOVE_TOLERANCE = 1e-6

#: Random vertices each round's pricing starts from, besides the columns in use (at least this many, else k); when
#: they find nothing, RETRY_STARTS times as many more before the round reports that pricing found nothing.
RANDOM_STARTS = 64
RETRY_STARTS = 8

#: The restricted problem keeps at most this many columns (the heaviest): each barrier step costs the cube of it.
MAX_COLUMNS = 1500

#: The seed of the pricing's random starts: the same input gives the same design on every machine.
PRICING_SEED = 20261201

#: The barrier's duality gap (relative) on the restricted problems of the rounds.
ROUND_TOLERANCE = 1e-6

#: Restricted A-optimal problems drop columns below this fraction of the largest weight (the barrier, stopped at
#: ROUND_TOLERANCE, leaves unused columns near that level).
ROUND_KEEP_FLOOR = 1e-6

#: Rounds of the histogram ray LP whose columns seed a population design.
BAYES_SEED_ROUNDS = 20

#: The seeds hold every d-subset when there are at most ALL_SUBSETS of them, else SEED_SUBSETS x k random ones.
ALL_SUBSETS = 2000
SEED_SUBSETS = 4

#: The barrier's duality gap (relative) on the last restricted problem, whose weights make the table.
FINAL_TOLERANCE = 1e-9


def notion_slice(prior, notion):
    """The slice of the notion's column cone at ``prior`` (docs/math.md §5, §12): the LIP box for X itself, the LDP
    staircase hull (worst-case LIP without a secret has the LDP cone), otherwise (a latent secret, a prior set) the
    polytope of the notion's constraint rows. ValidationError for a prior with a value of probability 0 (the slice
    needs P > 0)."""
    if (prior.probabilities <= 0).any():
        x = int(np.argmin(prior.probabilities))
        raise ValidationError(f"prior[{x}] ({prior.labels[x]!r}) is 0; column generation needs every value to have "
                              "positive probability (docs/math.md §12): drop the value, or use method='exact'")
    p, plain = prior.probabilities, getattr(notion, "secret", None) is None
    if isinstance(notion, LIP) and plain and notion.prior_set is None:
        return BoxSlice(p, notion.epsilon)
    if isinstance(notion, LDP) or isinstance(notion, WorstCaseLIP) and plain:
        return StaircaseSlice(p, notion.epsilon)
    if isinstance(notion, LIP) and plain and notion.prior_set is not None and notion.prior_set.implicit:
        return PolytopeSlice(p, LIP(notion.epsilon).constraint_rows(prior), prior_set_lifting(notion))
    return PolytopeSlice(p, notion.constraint_rows(prior))


def prior_set_lifting(notion):
    """Bounded-prior LIP for X over a box or a TV ball as an extended formulation (docs/math.md §12): r_x <=
    e^eps min_P P . r and max_P P . r <= e^eps r_x for every x, with min and max over the set written through LP
    duality, so that 2 (2k + 1) (box) or 2 (k + 2) (TV ball) auxiliary variables and 4k rows replace the set's
    exponentially many vertices.

    Box {l <= P <= u, sum P = 1}: min P . r = max {nu + l . a - u . b : nu + a_x - b_x = r_x, a, b >= 0} and
    max P . r = min {nu' + u . a' - l . b' : nu' + a'_x - b'_x = r_x, a', b' >= 0}. TV ball of radius rho around c
    (within the simplex): min P . r = c . r + max {-rho lam - c . g : mu - lam + g_x <= r_x, mu + g_x >= r_x,
    lam, g >= 0}, and max P . r = c . r + min {rho lam' + c . g' : mu' - lam' + g'_x <= -r_x, mu' + g'_x >= -r_x}."""
    k, e, prior_set = notion.prior_set.k, math.exp(notion.epsilon), notion.prior_set
    eye, ones, inf = np.eye(k), np.ones((k, 1)), math.inf
    blocks, lower, upper, row_lower, row_upper = [], [], [], [], []
    if prior_set.kind == "box":
        low, high = np.array(prior_set.parameters["lower"]), np.array(prior_set.parameters["upper"])
        for sign in (1.0, -1.0):  # the min side (nu, a, b), then the max side (nu', a', b')
            value = np.r_[1.0, low, -high] if sign > 0 else np.r_[1.0, high, -low]
            width = 2 * k + 1
            # nu + a_x - b_x - r_x = 0
            blocks.append((np.hstack([-eye, ones, eye, -eye]), np.zeros(k), np.zeros(k), width))
            # min side: r_x - e value . (nu, a, b) <= 0; max side: value . (nu', a', b') - e r_x <= 0
            rows = np.hstack([eye, -e * np.tile(value, (k, 1))]) if sign > 0 else \
                np.hstack([-e * eye, np.tile(value, (k, 1))])
            blocks.append((rows, np.full(k, -inf), np.zeros(k), width))
            lower += [-inf] + [0.0] * (2 * k)
            upper += [inf] * (2 * k + 1)
    else:
        center, radius = np.array(prior_set.parameters["center"]), prior_set.parameters["radius"]
        for sign in (1.0, -1.0):  # (mu, lam, g) for the min side with r, for the max side with -r
            width = k + 2
            base = np.hstack([ones, -ones, eye])  # mu - lam + g_x
            blocks.append((np.hstack([-sign * eye, base]), np.full(k, -inf), np.zeros(k), width))
            blocks.append((np.hstack([-sign * eye, np.hstack([ones, np.zeros((k, 1)), eye])]), np.zeros(k),
                           np.full(k, inf), width))  # mu + g_x - (+-r_x) >= 0
            if sign > 0:  # r_x <= e (c . r - rho lam - c . g)
                rows = np.hstack([eye - e * center[None, :], np.tile(np.r_[0.0, e * radius, e * center], (k, 1))])
            else:  # c . r + rho lam' + c . g' <= e r_x
                rows = np.hstack([center[None, :] - e * eye, np.tile(np.r_[0.0, radius, center], (k, 1))])
            blocks.append((rows, np.full(k, -inf), np.zeros(k), width))
            lower += [-inf, 0.0] + [0.0] * k
            upper += [inf] * (k + 2)
    # place each block's auxiliary columns: the first half of the blocks use the first set of variables
    half = len(blocks) // 2
    width = blocks[0][3]
    matrix = []
    for index, (rows, low_row, high_row, _) in enumerate(blocks):
        full = np.zeros((k, k + 2 * width))
        full[:, :k] = rows[:, :k]
        offset = k + (0 if index < half else width)
        full[:, offset:offset + width] = rows[:, k:]
        matrix.append(full)
        row_lower.append(low_row)
        row_upper.append(high_row)
    return Lifting(np.array(lower), np.array(upper), np.vstack(matrix), np.concatenate(row_lower),
                   np.concatenate(row_upper))


#: Largest k column generation takes on: over the LIP box or the LDP staircase (the relaxation dual that certifies
#: it reaches k = 2048; one mirror-descent round at k = 1024 already takes 20-45 s), and over a polytope slice (a
#: latent secret, a prior set: a HiGHS program per linear maximisation, about 4 s a round at k = 64).
MAX_COLUMNS_K = 2048
MAX_POLYTOPE_K = 256


def check_columns_size(prior, notion):
    """ProblemTooLargeError, before any work, when k is past what column generation does in reasonable time for
    this notion, naming what does work at that k."""
    polytope = getattr(notion, "secret", None) is not None or getattr(notion, "prior_set", None) is not None
    limit = MAX_POLYTOPE_K if polytope else MAX_COLUMNS_K
    if prior.k > limit:
        what = "a latent secret or a prior set" if polytope else f"{notion.kind}"
        raise ProblemTooLargeError(
            f"k is {prior.k}; column generation for {what} is built for k <= {limit} (docs/math.md §12); "
            "family='unary' or family='hashing' designs at any k (docs/math.md §7), a uniform prior has its optimum "
            "in closed form at any k (docs/math.md §11), or merge rare values into fewer buckets")


class SlicePricer:
    """Pricing over a slice by monotone ascent from the columns in use and from random vertices."""

    def __init__(self, slice_, seed=PRICING_SEED):
        self.slice = slice_
        self.random = np.random.default_rng(seed)

    def candidates(self, quadratic, linear, level, columns):
        """The slice points found whose price r^T Z r + y . r exceeds ``level``, best first."""
        k = columns.shape[1]
        starts = columns
        for count in (max(RANDOM_STARTS, k), RETRY_STARTS * max(RANDOM_STARTS, k)):  # a retry before giving up
            # directions P_x u_x with u standard normal put the values in a uniformly random order of g_x / P_x,
            # the order the linear maximisation sorts by, so the starts spread over the slice's vertices
            directions = self.slice.prior * self.random.standard_normal((count, k))
            starts = np.concatenate([starts, self.slice.linear_max(directions)])
            points, prices = ascend(self.slice, quadratic, linear, starts)
            better = np.flatnonzero(prices > level + PRICE_SLACK * abs(level))
            if better.size:
                break
            starts = np.empty((0, k))
        return points[better[np.argsort(prices[better])[::-1]]]

    def informative(self, count):
        """Columns that raise one value each (``one_value_columns``), for restricted problems that do not see every
        value."""
        return one_value_columns(self.slice)[:count]


def one_value_columns(slice_):
    """The 2k one-value columns: the slice's maximum and minimum of each coordinate."""
    k = slice_.prior.size
    return slice_.linear_max(np.concatenate([np.eye(k), -np.eye(k)]))


def seed_columns(prior, notion, seed=PRICING_SEED, slice_=None):
    """Good feasible columns to start from (docs/math.md §12), most useful first (a restricted problem that keeps
    fewer takes the first ones): GRR's (first k, always), under LIP for X the columns whose free coordinate is a
    likely value (``free_value_columns``), d-subsets at d = k / (e^eps + 1), the size of the uniform prior's optimal
    orbit (docs/math.md §11: all of them when there are at most ALL_SUBSETS, else SEED_SUBSETS x k random ones;
    under LDP the columns of subset selection, under LIP the slice vertex that raises the subset first), the
    per-bin binary test columns of the bound (LIP: one value at e^(+-eps), the rest level) and the one-value
    columns."""
    slice_ = notion_slice(prior, notion) if slice_ is None else slice_
    p, k, e = prior.probabilities, prior.k, math.exp(notion.epsilon)
    grr = 1.0 + (e - 1.0) * np.eye(k)  # GRR's columns (eps-LDP, so in every slice)
    columns = [grr / (grr @ p)[:, None]]
    if isinstance(slice_, BoxSlice):
        columns.append(free_value_columns(slice_, seed))
    size = min(k - 1, max(1, round(k / (e + 1))))
    if math.comb(k, size) <= ALL_SUBSETS:  # every d-subset: subset selection itself is among the designs
        subsets = np.array(list(itertools.combinations(range(k), size)))
    else:
        subsets = np.argsort(np.random.default_rng(seed).random((SEED_SUBSETS * k, k)), axis=1)[:, :size]
    indicators = np.zeros((len(subsets), k))
    np.put_along_axis(indicators, subsets, 1.0, axis=1)
    if not isinstance(slice_, StaircaseSlice):
        columns.append(slice_.linear_max(indicators))
    else:
        steps = 1.0 + (e - 1.0) * indicators
        columns.append(steps / (steps @ p)[:, None])
    if isinstance(slice_, BoxSlice):
        for level in (e, 1 / e):  # one value at e^(+-eps), the rest at the level that P . r = 1 leaves
            rest = (1 - p * level) / (1 - p)
            ok = (rest >= 1 / e) & (rest <= e)
            tests = np.tile(rest[ok, None], (1, k))
            tests[np.arange(ok.sum()), np.flatnonzero(ok)] = level
            columns.append(tests)
    columns.append(one_value_columns(slice_))
    return np.concatenate(columns)


#: Seeds whose free coordinate is one of the FREE_VALUES likeliest values, FREE_SEEDS_PER_VALUE x k in all.
FREE_VALUES = 8
FREE_SEEDS_PER_VALUE = 2


def free_value_columns(slice_, seed=PRICING_SEED):
    """Box-slice vertices whose free coordinate is one of the FREE_VALUES likeliest values and whose values at
    e^eps form a random subset of the others (of random size up to twice k/(e^eps + 1)): the shape of the columns
    that carry the weight of the optimal designs on skewed priors (observed at k = 64: a random fifth of the tail
    high, the mode free). Built by the linear maximisation with the subset first and the free value second, so
    each is a vertex whatever the subset's mass."""
    p = slice_.prior
    k = p.size
    rng = np.random.default_rng(seed)
    count = FREE_SEEDS_PER_VALUE * k
    top = np.argsort(-p, kind="stable")[: min(FREE_VALUES, k)]
    largest = max(1, min(k - 1, round(2 * k / (slice_.high + 1))))
    directions = []
    for free in top:
        sizes = rng.integers(1, largest + 1, size=count // len(top) + 1)
        order = np.argsort(rng.random((sizes.size, k)), axis=1)
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(k)[None, :], axis=1)
        rank = 1.0 + (ranks < sizes[:, None])  # 2 on the subset, 1 elsewhere
        rank[:, free] = 1.5  # raised after the subset, before the rest
        directions.append(p * (rank + 1e-3 * rng.random(rank.shape)))
    return slice_.linear_max(np.concatenate(directions))


#: Rounds over which the progress lines measure the rate at which the figure approaches the target.
RATE_ROUNDS = 5


def _report(progress, kind, bound_name, bound, max_rounds, target_gap=TARGET_GAP, time_limit=None):
    """None without ``progress``, else a ``report(rounds, columns, figure)`` passing ``progress`` a ``ProgressLine``
    per round (phase "column generation", rounds out of the budget of ``max_rounds``): the figure, its gap to the best
    certified bound, the time so far and, from the last RATE_ROUNDS rounds, the time the target gap would take at
    the current rate of geometric shrinking (an estimate: the rounds slow down as they near the optimum), or that it
    is out of reach before the time limit."""
    if progress is None:
        return None
    start, history = time.perf_counter(), []

    def report(rounds, columns, figure):
        now = time.perf_counter() - start
        history.append((now, figure))
        detail = f"{columns} columns, {kind} {figure:.6g}"
        if bound is not None:
            gap = (figure - bound) / figure
            detail += f", gap {gap:.2%} to the {bound_name} (target {target_gap:.2%})"
            target = bound / (1 - target_gap)
            if len(history) > RATE_ROUNDS and figure > target:
                # the distance to the bound shrinks about geometrically: extrapolate its logarithm
                then, before = history[-1 - RATE_ROUNDS]
                shrink = math.log(max(before - bound, 1e-300) / max(figure - bound, 1e-300))
                needed = math.log((figure - bound) / (target - bound))
                left = math.inf if shrink <= 0 else needed / shrink * (now - then)
                if time_limit is not None and left > time_limit - now:
                    detail += f"; out of reach at the current rate before the time limit ({time_limit:g} s)"
                elif math.isfinite(left):
                    detail += f"; about {left:.0f} s more at the current rate"
        detail += f"; {now:.1f} s"
        progress(ProgressLine(f"column generation round {rounds}: {detail}",
                              phase="column generation", done=rounds, total=max_rounds, unit="rounds",
                              detail=detail))
    return report


def announce(progress, text, max_rounds):
    """A progress line for a step before the rounds (bounds, seeds), so that long work is never silent: round 0 of
    ``max_rounds``."""
    if progress is not None:
        progress(ProgressLine(f"column generation: {text}", phase="column generation", done=0, total=max_rounds,
                              unit="rounds", detail=text))


def population_columns_table(prior, notion, objective, bounds, *, target_gap=TARGET_GAP, max_rounds=MAX_ROUNDS,
                             progress=None, protocols=None, time_limit=None):
    """(table, info): the A-optimal (``Frequencies``) or c-optimal (``Mean``) table by column generation over the
    slice, stopped at ``target_gap`` above the best of ``bounds`` (certified lower bounds on the figure by name), or
    after ``time_limit`` seconds (None: no limit). The histogram's restricted problems are solved by mirror descent
    (``_solvers.mirror_descent``: thousands of columns), a mean's by the barrier method.
    ``protocols`` ({name: figure} of fixed eps-LDP protocols, feasible for the notion): the rounds do not stop at a
    stall while the figure is above the best of them, and ``info["stopped"]`` says so if the budget ends there."""
    values, offset, scale = scaled_objective(prior, objective)
    name, bound, target = bound_target(bounds, target_gap)
    slice_ = notion_slice(prior, notion)
    report = _report(progress, "n x sum Var" if values is None else "n x Var", name, bound, max_rounds, target_gap,
                     time_limit)
    announce(progress, f"seeding the columns (k = {prior.k})", max_rounds)
    seeds = seed_columns(prior, notion, slice_=slice_)
    if values is not None or prior.k < DESCENT_MIN_K:  # the barrier starts better from the histogram ray LP's basis
        basis = bayes_columns_table(prior, notion, BayesHistogram(), None, max_rounds=BAYES_SEED_ROUNDS,
                                    columns_only=True, slice_=slice_)
        seeds = np.concatenate([seeds, new_rows(seeds, basis)])
    best = min(protocols.items(), key=lambda item: item[1]) if protocols else (None, math.inf)
    stop = _Stop(target, floor=best[1], time_limit=time_limit)
    if values is None and prior.k >= DESCENT_MIN_K:
        columns, weights, rounds, ended = descent_columns(seeds, SlicePricer(slice_), stop, max_rounds, report)
        status = "mirror descent with exact KL projections (_solvers.mirror_descent)"
        figure = trace_inverse(columns, weights)[0] - 1.0
    else:
        criterion = Criterion(values)
        columns, weights, _, status, rounds, ended = column_generation(
            seeds, criterion, SlicePricer(slice_), max_rounds=max_rounds, tolerance=ROUND_TOLERANCE,
            keep_floor=ROUND_KEEP_FLOOR, max_columns=MAX_COLUMNS, done=lambda value: stop((value - offset) * scale**2),
            progress=None if report is None else lambda r, n, value: report(r, n, (value - offset) * scale**2))
        weights, _, status = criterion.solve(columns, weights, FINAL_TOLERANCE)
        figure = (criterion.value((columns.T * weights) @ columns) - offset) * scale**2
    table = weights_table(columns, weights)
    info = _info(status, rounds, ended, table, max_rounds, stop.stall, time_limit)
    if bound is not None:  # which bound limits the gap
        info["stopped"] += f"; the gap is {(figure - bound) / figure:.2%} to the {name}"
    if figure > best[1] * (1 + ABOVE_TOLERANCE):  # never silently worse than a protocol the user could run instead
        advice = "raise max_rounds, or use that protocol" if ended == "budget" else "use that protocol"
        info["stopped"] += (f"; the design is still above {best[0]} at the same eps ({figure:.6g} > {best[1]:.6g}): "
                            f"{advice}")
    return table, info


#: The histogram's restricted problems are solved by mirror descent from this k on (the barrier's exact multipliers
#: price better while its cubic cost in the columns is small).
DESCENT_MIN_K = 24

#: The mirror-descent rounds keep the heaviest DESCENT_COLUMNS_PER_VALUE x k columns (at most DESCENT_MAX_COLUMNS):
#: at k = 64, 16 per value reached a 0.6 % gap where 8 per value stalled at 1.7 % (observed).
DESCENT_COLUMNS_PER_VALUE = 16
DESCENT_MAX_COLUMNS = 4096

#: Mirror-descent steps per round, and the relative improvement per step below which a round ends early.
DESCENT_STEPS = 30
DESCENT_TOLERANCE = 1e-7

#: New columns enter at 1e-3 of the lightest kept weight, or of this fraction of the heaviest if that is larger.
ENTRY_FLOOR = 1e-4

#: A column whose weight falls below this fraction of the largest is dropped from the table.
TABLE_WEIGHT_FLOOR = 1e-9


def descent_columns(seeds, pricer, stop, max_rounds, report=None):
    """(columns, weights, rounds, ended): column generation for the A-optimal design with a mirror-descent master
    (docs/math.md §12). Each round runs DESCENT_STEPS steps, fits the multipliers lambda of the equivalence theorem
    by weighted least squares, prices the slice by ascent of r^T M^-2 r - lambda . r from the heaviest columns and
    random vertices, and adds the best 2k points that price above 0; the heaviest columns stay (new ones enter
    light: the descent raises the useful ones). If the columns kept cannot meet the row sums with every weight
    positive (the KL projection needs that), the first k seeds come back: GRR's columns, a simplicial cone with 1
    inside. ``stop(figure)`` names a reason to end (the target gap, a stall, the time limit), else None."""
    k = seeds.shape[1]
    cap = min(DESCENT_COLUMNS_PER_VALUE * k, max(DESCENT_MAX_COLUMNS, 4 * k))
    anchors = seeds[:k]
    columns = new_rows(np.empty((0, k)), seeds)[:cap]  # in the seeds' order, most useful first
    weights, _, feasible = project(np.zeros(len(columns)), columns)
    if not feasible:
        raise SolverError(f"the {len(columns)} seed columns cannot make every row of the table sum to 1")
    rate, ended = 1.0, "budget"
    for rounds in range(1, max_rounds + 1):
        descent = descend(columns, weights, steps=DESCENT_STEPS, rate=rate, tolerance=DESCENT_TOLERANCE)
        weights, rate = descent.weights, descent.rate
        figure = descent.value - 1.0
        if report is not None:
            report(rounds, len(columns), figure)
        reason = stop(figure)
        if reason:
            ended = reason
            break
        quadratic, multipliers, _ = multipliers_and_prices(columns, weights, descent.inverse)
        heaviest = np.argsort(-weights)[: 4 * k]
        candidates = pricer.candidates(quadratic, -multipliers, 0.0, columns[heaviest])
        fresh = new_rows(columns, candidates)[: min(k * CANDIDATES, cap // 4)]  # most of the budget stays kept
        if not len(fresh):
            ended = "converged"
            break
        kept = np.sort(np.argsort(-weights)[: cap - len(fresh)])
        # new columns enter light, below every kept column that still counts: 1e-3 of the lightest kept weight,
        # but never below 1e-7 of the heaviest (columns that faded to 1e-100 must not drag new ones down with them:
        # from there a column needs hundreds of steps to matter; k = 256, eps = 0.5 stalled at 19 % so)
        floor = np.log(max(weights[kept].min(), ENTRY_FLOOR * weights.max())) + np.log(1e-3)
        columns = np.concatenate([columns[kept], fresh])
        log_weights = np.concatenate([np.log(weights[kept]), np.full(len(fresh), floor)])
        weights, _, feasible = project(log_weights - log_weights.max(), columns)
        if not feasible:  # bring GRR's columns back, light, and project again
            back = new_rows(columns, anchors)
            columns = np.concatenate([columns, back])
            log_weights = np.concatenate([log_weights, np.full(len(back), floor)])
            weights, _, feasible = project(log_weights - log_weights.max(), columns)
        if not feasible:
            raise SolverError(f"the KL projection onto the row sums failed over {len(columns)} columns")
    used = weights > TABLE_WEIGHT_FLOOR * weights.max()
    weights, _, _ = project(np.log(weights[used]), columns[used])
    return columns[used], weights, rounds, ended


class _Stop:
    """When to end the rounds: the figure at or below ``target``, or a stall: the figure improved by less than
    STALL of itself over the last STALL_ROUNDS rounds, or by less than STALL_ABOVE while it is above ``floor`` (the
    best fixed protocol's: a slow round that still approaches it beats stopping above it). ``stall``: the threshold
    of the last test."""

    def __init__(self, target, floor=math.inf, time_limit=None):
        self.target, self.floor, self.history, self.stall = target, floor, [], STALL
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit

    def __call__(self, figure):
        self.history.append(figure)
        if figure <= self.target:
            return "target"
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return "time"
        self.stall = STALL if figure <= self.floor else STALL_ABOVE
        if len(self.history) > STALL_ROUNDS and self.history[-1 - STALL_ROUNDS] - figure <= self.stall * figure:
            return "stalled"
        return None


_ENDINGS = {"converged": "pricing (a heuristic ascent) found no better column",
            "target": "the target gap was reached",
            "stalled": "the figure stalled (less than {stall:.2%} better over {rounds} rounds)",
            "budget": "the budget of {max_rounds} round{plural} ran out",
            "time": "the time limit of {time_limit:g} s ran out"}


def _info(solver, rounds, ended, table, max_rounds, stall=STALL, time_limit=None):
    stopped = _ENDINGS[ended].format(stall=stall, rounds=STALL_ROUNDS, max_rounds=max_rounds,
                                     plural="" if max_rounds == 1 else "s", time_limit=time_limit or 0)
    return {"solver": solver, "rounds": rounds, "columns": table.shape[1], "stopped": stopped}


def bayes_columns_table(prior, notion, objective, bound, *, target_gap=TARGET_GAP, max_rounds=MAX_ROUNDS,
                        progress=None, columns_only=False, slice_=None, time_limit=None):
    """(table, info): the ray LP of docs/math.md §5 for a Bayesian objective by column generation over the slice
    (maximise sum_j w_j r_j^T A r_j subject to sum_j w_j r_j = 1, A = sum_f (f P)(f P)^T for rays with P . r = 1),
    stopped when the MSE is within ``target_gap`` of ``bound`` (a certified lower bound on it, or None).
    ``columns_only``: return the columns of the LP's optimal basis instead. ``slice_``: the notion's slice, when the
    caller has built it already."""
    p = prior.probabilities
    functions = objective.functions(prior.k) * p
    gain = functions.T @ functions
    second_moment = float((objective.functions(prior.k) ** 2 @ p).sum())
    target = -math.inf if bound is None else bound / (1 - target_gap)
    slice_ = notion_slice(prior, notion) if slice_ is None else slice_
    pricer = SlicePricer(slice_)
    columns = seed_columns(prior, notion, slice_=slice_)
    report = _report(progress, "MSE", "bound", bound, max_rounds)
    stop, ended, best_dual, best_bound = _Stop(target, time_limit=time_limit), "budget", None, math.inf

    def solve(columns):
        result = solve_ray_lp(columns, prices(columns, gain, np.zeros(prior.k)))
        if result.status != "optimal":
            raise InfeasibleError(f"the ray LP for {notion.kind} eps={notion.epsilon:g} found no table: "
                                  f"{result.message}")
        return result

    for rounds in range(1, max_rounds + 1):
        result = solve(columns)
        mse = second_moment - result.objective
        if report is not None:
            report(rounds, len(columns), mse)
        reason = stop(mse)
        if reason:
            ended = reason
            break
        # Wentges smoothing: price at a mix of the duals with the best Lagrangian bound so far and the current ones
        # (the LP's duals are degenerate and jump between rounds); the LP's own duals decide convergence
        smoothed = result.duals if best_dual is None else 0.7 * best_dual + 0.3 * result.duals
        for duals in (smoothed, result.duals):
            candidates = pricer.candidates(gain, -duals, 0.0, columns[result.weights > 0])
            # every column stays: the LP is cheap, and dropping made it cycle
            fresh = new_rows(columns, candidates)[: prior.k * CANDIDATES]
            if len(fresh):
                heuristic = duals.sum() + float(np.max(prices(fresh, gain, -duals)))
                if heuristic < best_bound:
                    best_bound, best_dual = heuristic, duals
                break
        if not len(fresh):
            ended = "converged"
            break
        columns = np.concatenate([columns, fresh])
    else:
        result = solve(columns)
    used = result.weights > 0
    if columns_only:  # the optimal basis: good slice points, seeds of a population design
        return columns[used]
    table = weights_table(columns[used], result.weights[used])
    return table, {**_info("HiGHS dual simplex", rounds, ended, table, max_rounds, time_limit=time_limit),
                   "lp_objective": result.objective}

