"""Optimal design of randomized-response-type tables: the LP over extreme rays (MATH §5).

``design(prior, notion, objective)`` enumerates the extreme rays of the notion's column cone, solves the
ray LP with HiGHS (its optimum is the GLOBAL optimum of the non-convex MSE problem, MATH §5), builds the
table, repairs it so that the stored numbers pass EXACT verification (MATH §3), and reports it beside
the optimal LDP table and plain GRR at the same epsilon and prior.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from lipdesign import runtime
from lipdesign.errors import (
    InfeasibleError,
    ProblemTooLargeError,
    SolverError,
    ValidationError,
    VerificationError,
)
from lipdesign.model import Prior
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.utility import as_objective, gains, mse
from lipdesign.verification import exp_bounds, tightest, verify
from solvers.closed_forms import binary_lip_table
from solvers.ray_lp import solve_ray_lp
from solvers.rays import EnumerationLimitError, box_slice_vertices, cone_extreme_rays, staircase_rays

#: Default cap on the number of extreme rays handed to the LP.
MAX_RAYS = 200_000
#: Caps on the double description method (its cost grows with the square of its intermediate rays).
MAX_DD_RAYS = 20_000
DD_TIME_LIMIT = 30.0
#: Columns whose probability under the design prior is below this fraction of the largest are merged.
EMPTY_COLUMN = 1e-9

FAMILIES = ("rr",)


@dataclass
class Mechanism:
    """A designed (or loaded) perturbation table with its guarantee, utility and provenance.

    ``table[x, y] = Pr[Y=y | X=x]``; ``mse`` is the per-user MSE of the MMSE estimate under the design
    prior (MATH §4); ``epsilons`` are exactly verified tightest epsilons of the stored table (the claimed
    notion, plain LIP for X under the design prior, and LDP); ``baselines`` are the MSEs of the optimal
    LDP table and of GRR at the same epsilon and prior.
    """

    prior: Prior
    notion: object
    objective: object
    table: np.ndarray
    family: str = "rr"
    mse: float = float("nan")
    epsilons: dict = field(default_factory=dict)
    certificate: dict = field(default_factory=dict)
    baselines: dict = field(default_factory=dict)

    @property
    def labels(self):
        return self.prior.labels

    def perturb(self, values, rng=None):
        """Perturb a whole array of values (indices or labels) at once; ``rng`` is a seed, a Generator,
        or None for a cryptographically seeded source. Returns output indices."""
        return runtime.TablePerturber(self.table).perturb(self.prior.indices(values), rng=rng)

    def estimate(self, reports, method="mmse", what=None):
        """Estimate from reports (output indices).

        ``method``: "mmse" (posterior mean under the design prior, MATH §4), "unbiased" (GLS inversion;
        needs a table of rank k), "ibu" (iterative Bayesian update, any table), each optionally followed by
        Norm-Sub with "unbiased+norm-sub". ``what``: "histogram" returns the estimated fraction of users
        per value; "sum" returns the estimated sum of f(X) over users (weighted-sum objective). Defaults to
        the design objective.
        """
        counts = runtime.counts(reports, self.table.shape[1])
        estimators = {
            "mmse": lambda: runtime.mmse_frequencies(self.table, self.prior.probabilities, counts),
            "unbiased": lambda: runtime.unbiased_frequencies(self.table, counts, self.prior.probabilities),
            "ibu": lambda: runtime.ibu_frequencies(self.table, counts),
        }
        if not isinstance(method, str):
            raise ValidationError(f"method is {method!r}; expected 'mmse', 'unbiased' or 'ibu'")
        base, _, post = method.partition("+")
        if base not in estimators or post not in ("", "norm-sub"):
            raise ValidationError(
                f"method is {method!r}; expected 'mmse', 'unbiased', 'ibu', optionally with '+norm-sub'")
        frequencies = estimators[base]()
        if post:
            frequencies = runtime.norm_sub(frequencies)
        what = what or ("sum" if self.objective.kind == "weighted_sum" else "histogram")
        if what == "histogram":
            return frequencies
        if what == "sum":
            if self.objective.kind != "weighted_sum":
                raise ValidationError("what='sum' needs a mechanism designed for ld.WeightedSum(values)")
            return float(counts.sum() * frequencies @ np.asarray(self.objective.values))
        raise ValidationError(f"what is {what!r}; expected 'histogram' or 'sum'")

    def to_dict(self):
        from lipdesign.io import mechanism_to_dict
        return mechanism_to_dict(self)

    def to_json(self, path):
        """Write the versioned JSON envelope (see lipdesign.io)."""
        from lipdesign.io import save
        save(self, path)

    def summary(self):
        lines = [(f"{self.notion.kind} eps={self.notion.epsilon:g}, {self.objective.kind}, k={self.prior.k}, "
                  f"{self.table.shape[1]} outputs: MSE {self.mse:.6g}")]
        lines += [f"  {name}: MSE {value:.6g}" for name, value in self.baselines.items()]
        lines.append("  verified eps: " + ", ".join(f"{k} {v:.6g}" for k, v in self.epsilons.items()))
        return "\n".join(lines)


def as_prior(prior):
    if isinstance(prior, Prior):
        return prior
    return Prior(prior)


def design(prior, notion, objective="histogram", *, family="rr", max_rays=MAX_RAYS, baselines=True):
    """The MSE-optimal table of the randomized-response-type family under ``notion`` (MATH §5).

    ``prior``: a Prior (or probabilities); ``notion``: ld.LIP (optionally with secret and prior_set),
    ld.WorstCaseLIP or ld.LDP; ``objective``: "histogram" or ld.WeightedSum(values). Raises
    ProblemTooLargeError before enumeration when more than ``max_rays`` extreme rays would be needed.
    """
    prior = as_prior(prior)
    objective = as_objective(objective)
    if isinstance(max_rays, bool) or not isinstance(max_rays, (int, np.integer)) or max_rays < 1:
        raise ValidationError(f"max_rays is {max_rays!r}; it must be a positive integer")
    objective.functions(prior.k)
    if family not in FAMILIES:
        raise ValidationError(f"family is {family!r}; supported: {list(FAMILIES)}")
    if not isinstance(notion, (LDP, LIP, WorstCaseLIP)):
        raise ValidationError(f"notion must be ld.LIP, ld.WorstCaseLIP or ld.LDP (got {notion!r})")
    notion.check(prior)
    if not isinstance(notion, LDP) and (prior.probabilities <= 0).any():
        x = int(np.argmin(prior.probabilities))
        raise ValidationError(
            f"prior[{x}] ({prior.labels[x]!r}) is 0; LIP design needs every value to have positive probability "
            "(MATH §1): drop the value, or build the prior with Prior.from_counts(..., pseudocount=...)")
    if prior.k < 2:
        raise ValidationError("prior has a single value; there is nothing to perturb")

    if isinstance(notion, LIP) and notion.secret is None and notion.prior_set is None and prior.k == 2:
        table, info = binary_lip_table(prior.probabilities, notion.epsilon), {"method": "closed form (MATH §6)"}
    else:
        table, info = _ray_lp_table(prior, notion, objective, max_rays)
    info["optimal"] = True
    info["mse_before_repair"] = mse(table, prior, objective)
    table, info["uniform_mix"] = exact_repair(table, notion, prior)
    mechanism = Mechanism(prior, notion, objective, table, family, mse(table, prior, objective),
                          verified_epsilons(table, notion, prior), info)
    if baselines:
        mechanism.baselines = baseline_mses(prior, notion.epsilon, objective, max_rays)
        # Every eps-LDP table satisfies every LIP variant (MATH §2): an LIP optimum above the LDP optimum
        # means the enumeration lost rays, so refuse rather than return a non-optimal "optimal" table.
        if mechanism.mse > mechanism.baselines["optimal LDP"] + 1e-9 * max(1.0, mechanism.mse):
            raise SolverError(
                f"{notion.kind} design gave MSE {mechanism.mse:.12g} above the optimal LDP MSE "
                f"{mechanism.baselines['optimal LDP']:.12g}; the extreme-ray enumeration failed numerically")
    return mechanism


def _extreme_rays(prior, notion, max_rays):
    """Extreme rays of the column cone, built directly where MATH §5 gives their form."""
    k, e = prior.k, math.exp(notion.epsilon)
    if isinstance(notion, LDP) or isinstance(notion, WorstCaseLIP) and notion.secret is None:
        if 2**k - 2 > max_rays:
            raise ProblemTooLargeError(
                f"exact LDP design at k = {k} needs 2^k - 2 = {2**k - 2} extreme rays (limit max_rays={max_rays})")
        return staircase_rays(k, e), "LDP staircase rays {1, e^eps}^k (MATH §5)"
    if isinstance(notion, LIP) and notion.secret is None and notion.prior_set is None:
        if k * 2 ** (k - 1) > 16 * max_rays:
            raise ProblemTooLargeError(
                f"exact LIP design at k = {k} would examine k 2^(k-1) = {k * 2 ** (k - 1)} candidate rays "
                f"(limit max_rays={max_rays})")
        vertices = box_slice_vertices(prior.probabilities, np.full(k, 1 / e), np.full(k, e))
        if len(vertices) > max_rays:
            raise ProblemTooLargeError(
                f"exact LIP design at k = {k} needs {len(vertices)} extreme rays (limit max_rays={max_rays})")
        return vertices / vertices.sum(axis=1, keepdims=True), "LIP box-slice vertices (MATH §5)"
    rows = notion.constraint_rows(prior)
    if k > 16:
        raise ProblemTooLargeError(f"exact design with a latent secret or a prior set is limited to k <= 16 (got {k})")
    try:
        rays = cone_extreme_rays(rows, max_rays=min(max_rays, MAX_DD_RAYS), time_limit=DD_TIME_LIMIT)
    except EnumerationLimitError as error:  # too many rays, too long, or numerical trouble
        raise ProblemTooLargeError(
            f"exact {notion.kind} design at k = {k} with {len(rows)} cone constraints is too large for extreme-ray "
            f"enumeration ({error}); use fewer values, fewer prior-set vertices or a smaller secret") from None
    return rays, f"double description over {len(rows)} cone constraints (MATH §5)"


def _ray_lp_table(prior, notion, objective, max_rays):
    rays, method = _extreme_rays(prior, notion, max_rays)
    result = solve_ray_lp(rays, gains(rays, prior.probabilities, objective))
    if result.status != "optimal":
        raise InfeasibleError(f"the ray LP for {notion.kind} eps={notion.epsilon:g} found no table: {result.message}")
    used = result.weights > 1e-13 * result.weights.max()
    table = (_polished(result.weights[used], rays[used]) * rays[used].T)
    table /= table.sum(axis=1, keepdims=True)
    order = np.lexsort((-table.max(axis=0), table.argmax(axis=0)))
    info = {"method": f"extreme-ray LP, {method}", "solver": "HiGHS dual simplex", "rays": len(rays),
            "lp_objective": result.objective}
    return table[:, order], info


def _polished(weights, rays):
    """Re-solve the row-sum equations on the LP's support (the solver meets them only to ~1e-9), so that
    normalising the rows barely moves the columns off their rays; keep the LP weights if that fails."""
    solution, *_ = np.linalg.lstsq(rays.T, np.ones(rays.shape[1]), rcond=None)
    if (solution > 0).all() and np.abs(rays.T @ solution - 1).max() < np.abs(rays.T @ weights - 1).max():
        return solution
    return weights


def exact_repair(table, notion, prior):
    """Make the stored numbers pass EXACT verification of the claim (MATH §3).

    Merge near-empty columns into the heaviest one (a sum of cone members stays in the cone; tiny columns
    can hide huge ratios), normalise the rows, and while exact verification fails, mix with the uniform
    table (every ratio moves toward 1), starting from the mix that the float excess calls for and
    growing it fourfold. Returns (table, mix).
    """
    table = np.asarray(table, dtype=float)
    mass = prior.probabilities @ table
    empty = mass < EMPTY_COLUMN * mass.max()
    if empty.any():
        heaviest = int(np.argmax(mass))
        table[:, heaviest] += table[:, empty].sum(axis=1)
        table = table[:, ~empty]
    n_out, e = table.shape[1], math.exp(notion.epsilon)
    bound = exp_bounds(notion.epsilon)[0]
    mix = 0.0
    for _ in range(60):
        candidate = (1 - mix) * table + mix / n_out
        candidate /= candidate.sum(axis=1, keepdims=True)
        ratio, _ = tightest(candidate, notion, prior, exact=True)
        if ratio <= bound:
            return candidate, mix
        excess = max(float(ratio) - e, 0.0)
        mix = min(1.0, max(4 * mix, 2 * n_out * excess / (e - 1), 1e-15))
    raise VerificationError(f"could not repair the table to pass exact {notion.kind} verification")


def verified_epsilons(table, notion, prior):
    """Exactly verified tightest epsilons of the stored table: under the claimed notion, under plain LIP
    for X with the design prior, and under LDP."""
    return {name: verify(table, other, prior, exact=True).epsilon for name, other in
            (("claimed", notion), ("LIP for X", LIP(notion.epsilon)), ("LDP", LDP(notion.epsilon)))}


def baseline_mses(prior, epsilon, objective, max_rays=MAX_RAYS):
    """MSE of the optimal LDP table and of GRR at the same epsilon and prior (MATH §5, §8)."""
    ldp = design(prior, LDP(epsilon), objective, max_rays=max_rays, baselines=False)
    return {"optimal LDP": ldp.mse, "GRR": mse(runtime.grr_table(prior.k, epsilon), prior, objective)}
