"""Class-symmetric designs (docs/math.md §11, "Class-symmetric designs"): at a prior whose values fall into a few
classes of equal probability, the A-optimal eps-LIP design is a mixture of orbits under the permutations within
classes; their weights are a convex program in the m class sums and spreads (``_solvers.class_orbits``), priced by
the vertex ascent of column generation over the k-dimensional slice with the class-invariant pricing matrix. The
result is a ``ClassSymmetricLIP``, certified against the relaxation dual bound (valid for every mechanism)."""

import math
import time

import numpy as np
from scipy.optimize import linprog

from lipdesign._solvers.class_orbits import ClassLayout, orbit_weights, pricing_terms
from lipdesign._solvers.slices import BoxSlice, ascend
from lipdesign.designer.columns import PRICING_SEED, RANDOM_STARTS, announce
from lipdesign.errors import SolverError
from lipdesign.mechanisms.class_lip import (
    MAX_CLASS_K,
    MAX_CLASSES,
    ClassSymmetricLIP,
    level_exp,
    min_orbit_weight,
    orbit_levels,
)
from lipdesign.model import Prior
from lipdesign.progress import ProgressLine

#: A prior with at most this many distinct probabilities, over more values than that, is designed class-symmetric
#: (at most MAX_CLASSES): its weights are a program in the classes, not the values.
CLASS_DESIGN_MAX_CLASSES = 32

#: Grouping a prior without classes (docs/math.md §11): values sorted by probability join a class while their
#: probability is within a factor e^GROUP_WIDTH of its first (largest); the class prior is the classes' mean.
GROUP_WIDTH = 0.1

#: ld.design groups a prior without classes from this k (method "auto"; method "classes" at any k): measured at
#: eps = 1, Zipf(1.1), column generation reaches 2.1 % at k = 256 and 34 % at k = 1024 in 600 s, the grouped design
#: 3.2 % and 3.3 % (docs/math.md §12).
GROUPED_MIN_K = 512

#: The first vertex level is eps - LEVEL_GUESS delta (delta = max |ln(P_x / class prior_x)|; measured at Zipf(1.1):
#: the LIP at P then lands just below eps at eps = 1, above it at eps = 2, where the excess X over the level is
#: about 0.65 delta). The next levels follow from X (``grouped_design``), for at most GROUPED_ATTEMPTS designs.
LEVEL_GUESS = 0.3
LEVEL_SAFETY = 1.1
LEVEL_RAISE = 1.05
LEVEL_SLACK = 0.2
GROUPED_ATTEMPTS = 3

#: Orbits lighter than this share of the heaviest leave the program after each round (they can price back in), and
#: at most NEW_PER_CLASS orbits per class enter per round, the best priced: the barrier costs the cube of the orbits.
ROUND_KEEP = 1e-7
NEW_PER_CLASS = 4

#: Relative price above which an orbit enters; the rounds stop when none does, or after CLASS_ROUNDS.
PRICE_TOLERANCE = 1e-9
CLASS_ROUNDS = 60

#: The rounds stop when the figure moved less than STALL of itself over STALL_ROUNDS rounds.
STALL = 1e-6
STALL_ROUNDS = 5


def prior_classes(prior, max_classes=CLASS_DESIGN_MAX_CLASSES):
    """(classes, probabilities): the class of each value (numbered by decreasing probability) and each class's
    probability, when the prior has at most ``max_classes`` distinct probabilities over more values than classes and
    k <= MAX_CLASS_K; else None."""
    p = prior.probabilities
    levels, classes = np.unique(-p, return_inverse=True)
    m = levels.size
    if not 1 < m <= min(max_classes, MAX_CLASSES) or m == p.size or p.size > MAX_CLASS_K:
        return None
    return classes.astype(int), (-levels).tolist()


def _spec(point, layout, low, high):
    """(free class, high counts) of a slice vertex: its values at e^eps per class, and the class of its value
    strictly between the levels (or of one at e^eps, taken as the free value at the top, when none is between)."""
    tolerance = 1e-9 * high
    is_high = point >= high - tolerance
    between = ~is_high & (point > low + tolerance)
    if between.any():
        free = int(layout.classes[np.flatnonzero(between)[0]])
    elif is_high.any():
        first = int(np.flatnonzero(is_high)[0])
        free, is_high = int(layout.classes[first]), is_high.copy()
        is_high[first] = False
    else:
        free = int(layout.classes[0])
    counts = np.bincount(layout.classes[is_high], minlength=layout.m)
    return free, tuple(int(c) for c in counts)


def _representative(spec, layout, low, high, z):
    """A k-dimensional vertex of the orbit ``spec``: the first values of each class at e^eps, then the free one."""
    free, counts = spec
    point = np.full(layout.classes.size, low)
    for c in range(layout.m):
        members = np.flatnonzero(layout.classes == c)
        point[members[:counts[c]]] = high
        if c == free:
            point[members[counts[c]]] = z
    return point


def class_symmetric_design(prior, epsilon, *, progress=None, time_limit=None):
    """(ClassSymmetricLIP at ``prior`` without provenance, info): the orbit weights by rounds of the convex program
    and pricing until no orbit prices above PRICE_TOLERANCE (or CLASS_ROUNDS, or stalled, or ``time_limit``);
    ``prior`` has a few classes of equally likely values (``prior_classes``)."""
    classes, probabilities = prior_classes(prior, MAX_CLASSES)
    layout = ClassLayout.of(classes)
    high = level_exp(epsilon)
    low = 1.0 / high
    slice_ = BoxSlice(prior.probabilities, math.log(high))
    rng = np.random.default_rng(PRICING_SEED)
    indicator = (classes[None, :] == np.arange(layout.m)[:, None]).astype(float)
    p = prior.probabilities
    halves = np.zeros_like(indicator)  # each class half raised: orbits with a spread inside the class
    for c in range(layout.m):
        members = np.flatnonzero(classes == c)
        halves[c, members[:max(1, members.size // 2)]] = 1.0
    starts = np.concatenate([indicator * p, (1.0 - indicator) * p, halves * p,
                             rng.random((RANDOM_STARTS, prior.k)) * p])
    specs, start = {}, time.perf_counter()

    def add(points):
        fresh = 0
        for point in points:
            spec = _spec(point, layout, low, high)
            if spec in specs:
                continue
            levels = orbit_levels(epsilon, layout.sizes, probabilities, *spec)
            if low * (1 - 1e-9) <= levels[2] <= high * (1 + 1e-9):
                specs[spec] = levels
                fresh += 1
        return fresh

    add(slice_.linear_max(starts))
    _make_feasible(specs, add, slice_, layout)
    announce(progress, f"class-symmetric design: {layout.m} classes, {len(specs)} seed orbits", CLASS_ROUNDS)
    stopped, history = f"no orbit prices above {PRICE_TOLERANCE:g} of the figure", []
    for rounds in range(1, CLASS_ROUNDS + 1):
        keys = list(specs)
        sums = np.array([specs[key][0] for key in keys])
        spreads = np.maximum(np.array([specs[key][1] for key in keys]) - sums**2 / layout.sizes, 0.0)
        result = orbit_weights(sums, spreads, layout.sizes)
        weights = result.weights
        if not result.converged:
            raise SolverError(f"the class-symmetric weights over {len(keys)} orbits did not converge")
        inverse_t, spread_weights = pricing_terms(sums, spreads, layout.sizes, weights)
        quadratic, linear = layout.pricing(inverse_t, spread_weights, result.multipliers)
        used = [_representative(key, layout, low, high, specs[key][2]) for key, w in zip(keys, weights) if w > 0]
        points, values = ascend(slice_, quadratic, linear,
                                np.concatenate([used, slice_.linear_max(rng.random((RANDOM_STARTS, prior.k)) * p)]))
        if progress is not None:
            detail = (f"{int((weights > 0).sum())} orbits, figure {result.value - 1:.6g} at the class prior; "
                      f"{time.perf_counter() - start:.1f} s")
            progress(ProgressLine(f"class-symmetric design round {rounds}: {detail}", phase="class-symmetric design",
                                  done=rounds, total=CLASS_ROUNDS, unit="rounds", detail=detail))
        history.append(result.value)
        if len(history) > STALL_ROUNDS and history[-1 - STALL_ROUNDS] - history[-1] < STALL * history[-1]:
            stopped = f"stalled: the figure moved less than {STALL:g} of itself in {STALL_ROUNDS} rounds"
            break
        for key, weight in zip(keys, weights):  # the barrier keeps every weight positive: drop the negligible
            if weight < ROUND_KEEP * weights.max():
                del specs[key]
        priced = np.argsort(-values)[:NEW_PER_CLASS * layout.m]
        if not add(points[priced[values[priced] > PRICE_TOLERANCE * abs(result.value)]]):
            break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            stopped = f"the time limit of {time_limit:g} s ran out"
            break
    else:
        stopped = f"the budget of {CLASS_ROUNDS} rounds ran out"
    orbits = _kept(specs, layout, min_orbit_weight(epsilon))
    mechanism = ClassSymmetricLIP(epsilon, classes, probabilities, orbits, None if list(prior.labels) == list(
        range(prior.k)) else list(prior.labels))
    info = {"method": f"class-symmetric orbits over {layout.m} classes of equally likely values, weights by the "
                      f"barrier method (docs/math.md §11)", "stopped": stopped, "optimal": False,
            "orbits": len(orbits)}
    return mechanism, info


def grouped_prior(prior, width=GROUP_WIDTH):
    """(class prior, delta): the prior with each class of nearly equal values (``GROUP_WIDTH``) replaced by its
    mean, and the largest |ln(P_x / class prior_x)|."""
    p = prior.probabilities
    order = np.argsort(-p, kind="stable")
    classes = np.empty(p.size, dtype=np.int64)
    while True:  # wider classes where the probabilities span more than MAX_CLASSES steps of the width
        current, first = 0, p[order[0]]
        for x in order:
            if math.log(first / p[x]) > width:
                current, first = current + 1, p[x]
            classes[x] = current
        if current < MAX_CLASSES:
            break
        width *= 1.5
    means = np.bincount(classes, weights=p) / np.bincount(classes)
    grouped = means[classes] / (means[classes].sum())
    return Prior(grouped, prior.labels), float(np.abs(np.log(p / grouped)).max())


def grouped_design(prior, notion, *, progress=None, time_limit=None):
    """(ClassSymmetricLIP claiming eps-LIP at ``prior`` itself, info) for a prior without classes: the class-symmetric
    design at the grouped prior (``grouped_prior``) with its vertices at a level eps' < eps, certified exactly at the
    prior (``certificate_at``, rearrangement within classes). eps' starts at eps - LEVEL_GUESS delta; with X the
    certified LIP at the prior less eps', a design that fails is redone at eps - LEVEL_SAFETY X and one that holds
    with room to spare (eps - its LIP above LEVEL_SLACK X) at eps - LEVEL_RAISE X; the best that holds is returned
    (docs/math.md §11)."""
    grouped, delta = grouped_prior(prior)
    epsilon, start = notion.epsilon, time.perf_counter()
    level, best = epsilon - LEVEL_GUESS * delta, None
    for attempt in range(1, GROUPED_ATTEMPTS + 1):
        left = None if time_limit is None else time_limit - (time.perf_counter() - start)
        if left is not None and left <= 0 and best is not None:
            break
        announce(progress, f"grouped into classes (delta {delta:.4f}); design {attempt} at vertex level "
                           f"eps' = {level:.6g}", CLASS_ROUNDS)
        mechanism, info = class_symmetric_design(grouped, level, progress=progress,
                                                 time_limit=None if left is None else max(left, 1.0))
        certified = mechanism.certificate_at(prior).epsilon
        excess = certified - level
        if certified <= epsilon:
            parameters = {**mechanism.parameters(), "epsilon": epsilon, "level_epsilon": level,
                          "prior": prior.probabilities.tolist()}
            candidate = ClassSymmetricLIP(**parameters)
            if best is None or candidate.mse < best[0].mse:
                info["method"] = (f"class-symmetric orbits over {mechanism.sizes.size} classes of the prior grouped "
                                  f"to within e^{GROUP_WIDTH:g} (delta {delta:.4f}), vertices at eps' = {level:.6g}, "
                                  f"certified eps-LIP at the prior itself ({certified:.6g}; docs/math.md §11)")
                info["attempts"] = attempt
                best = (candidate, info)
            if epsilon - certified <= LEVEL_SLACK * excess:
                break
            level = epsilon - LEVEL_RAISE * excess
        else:
            level = epsilon - LEVEL_SAFETY * excess
    if best is None:
        raise SolverError(f"the grouped class-symmetric design did not certify eps = {epsilon:g} at the prior in "
                          f"{GROUPED_ATTEMPTS} attempts (last vertex level {level:.6g}); try method='columns'")
    return best


#: Rounds of the phase-1 program that adds orbits until the rows of the table can sum to 1.
FEASIBILITY_ROUNDS = 200


def _make_feasible(specs, add, slice_, layout):
    """Add orbits until some weights make every row sum to 1: the LP min sum |sum_o w_o S_o - n| over w >= 0
    (HiGHS), whose dual y prices an orbit by y . S, a linear function of the point, maximised over the slice
    exactly (``linear_max``); SolverError when no orbit improves it."""
    m = layout.m
    for _ in range(FEASIBILITY_ROUNDS):
        sums = np.array([value[0] for value in specs.values()])
        result = linprog(np.r_[np.zeros(len(sums)), np.ones(2 * m)],
                         A_eq=np.hstack([sums.T, np.eye(m), -np.eye(m)]), b_eq=layout.sizes.astype(float),
                         bounds=[(0, None)] * (len(sums) + 2 * m), method="highs")
        if result.status != 0:
            break
        if result.fun <= 1e-12 * layout.sizes.sum():
            return
        if not add(slice_.linear_max(result.eqlin.marginals[layout.classes][None, :])):
            break
    raise SolverError(f"no mixture of the {len(specs)} class-symmetric orbits found makes the rows of the table sum "
                      "to 1 (the phase-1 program stalled)")


def _kept(specs, layout, lightest):
    """The orbits of positive weight, every one at least ``lightest`` (lighter ones dropped and the weights solved
    again over the rest): the sampler realises an orbit's probability on the 2^-53 grid, and the realised ratios
    must stay inside the margin on e^eps (``min_orbit_weight``)."""
    keys = list(specs)
    while True:
        sums = np.array([specs[key][0] for key in keys])
        spreads = np.maximum(np.array([specs[key][1] for key in keys]) - sums**2 / layout.sizes, 0.0)
        result = orbit_weights(sums, spreads, layout.sizes)
        if not result.converged:
            raise SolverError(f"the class-symmetric weights over the {len(keys)} orbits left after dropping those "
                              f"below {lightest:g} did not converge")
        weights = result.weights
        light = weights < lightest
        if not light.any():
            return [{"weight": float(w), "free": key[0], "high": list(key[1])} for key, w in zip(keys, weights)]
        keys = [key for key, drop in zip(keys, light) if not drop]
