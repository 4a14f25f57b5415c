"""Lower bounds on a design's figure, valid for every mechanism of a notion at a prior (docs/math.md §10, §11, §12),
and the optimality record that sets a design beside the best of them.

Population objectives (``Frequencies``, ``Mean``): the per-bin Cramer-Rao bound, the contraction bound, the
uniform-prior optimum and the relaxation SDP (k <= MAX_RELAXATION_K); the Bayesian histogram: LB(P, eps) of
docs/math.md §10. With a latent secret none but the relaxation over the cone's rows applies (X may be released
freely). The equivalence-theorem dual bound over enumerated rays lives with the weights (``designer.weights``).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign._solvers.relaxation_dual import certified_value, maximise
from lipdesign.designer.weights import SOLVER_TOLERANCE, scaled_objective
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.closed_forms import uniform_optimal_orbit
from lipdesign.notions import LDP, WorstCaseLIP
from lipdesign.objectives import BayesHistogram

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy.typing as npt

    from lipdesign.model import Prior
    from lipdesign.notions import LIP
    from lipdesign.objectives import BayesSum, Frequencies, Mean

    Notion = LDP | LIP | WorstCaseLIP
    Objective = Frequencies | Mean | BayesHistogram | BayesSum


def per_bin_variance(p: npt.ArrayLike, epsilon: float, notion: Notion) -> npt.NDArray[np.float64]:
    """n Var of the best unbiased estimate of 1[X = b] from any eps-LIP (``notion`` LIP without a secret) or eps-LDP
    mechanism, users drawn i.i.d. (the binary channel of docs/math.md §6 and §11), for each prior entry p."""
    e = math.exp(epsilon)
    p = np.asarray(p, dtype=float)
    if isinstance(notion, (LDP, WorstCaseLIP)):
        return (p * e + 1 - p) * (p + (1 - p) * e) / (e - 1) ** 2
    q = np.minimum(p, 1 - p)
    rare = q <= 1 / (1 + e)
    return np.where(rare, e * (1 - q) ** 2, e**2 * q * (1 - q)) / (e - 1) ** 2


#: The name of ``per_bin_bound`` in bound tables.
PER_BIN = "per-bin (Cramer-Rao, docs/math.md §11)"

#: The name of ``bayes_histogram_bound`` in bound tables.
PER_BIN_BAYES = "per-bin binary optimum (docs/math.md §10)"


def bayes_histogram_bound(prior: Prior, epsilon: float) -> float:
    """LB(P, eps) = sum_b binMSE(P_b, eps) (docs/math.md §10): every eps-LIP mechanism for X (so every eps-LDP one) is
    eps-LIP for each indicator 1[X = b], whose MSE from any observation is at least the §6 binary optimum:
    binMSE = q - q^2 (e^(2 eps) + e^-eps)/(1 + e^eps) if q = min(p, 1 - p) <= 1/(1 + e^eps), else
    q (1 - q) e^-eps (2 - e^-eps). A lower bound on the per-user histogram MSE of any estimate at the prior."""
    q = np.minimum(prior.probabilities, 1 - prior.probabilities)
    e = math.exp(epsilon)
    small = q - q**2 * (e**2 + 1 / e) / (1 + e)
    large = q * (1 - q) / e * (2 - 1 / e)
    return float(np.where(q <= 1 / (1 + e), small, large).sum())


def per_bin_bound(prior: Prior, notion: Notion) -> float | None:
    """The per-bin lower bound on the figure of every mechanism of a notion at a prior (docs/math.md §11).

    The per-bin (Cramer-Rao) lower bound on n x the sum of the variances given the users' values, valid for every
    eps-LIP mechanism for X (so every eps-LDP one) at the prior: each bin's indicator 1[X = b] is estimated at best
    by the optimal binary channel (docs/math.md §6). None where it does not apply (a latent secret: X itself may be
    released freely).

    Parameters
    ----------
    prior : Prior
        The design prior.
    notion : LIP, WorstCaseLIP or LDP
        The notion and its epsilon (LDP and worst-case LIP take the LDP binary channel).

    Returns
    -------
    float or None
        The bound, or None with a latent secret.

    See Also
    --------
    uniform_prior_optimum : the optimum itself at a uniform prior.

    Examples
    --------
    A design's figure is at least the bound:

    >>> import lipdesign as ld
    >>> from lipdesign.designer import per_bin_bound
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> round(per_bin_bound(prior, ld.LIP(1.0)), 4), round(per_bin_bound(prior, ld.LDP(1.0)), 4)
    (1.1205, 2.762)
    >>> mechanism = ld.design(prior, ld.LIP(1.0), baselines=False)
    >>> mechanism.mse >= per_bin_bound(prior, ld.LIP(1.0))
    True
    >>> secret = ld.SecretModel([[0.8, 0.2, 0.0], [0.1, 0.3, 0.6]])
    >>> print(per_bin_bound(prior, ld.LIP(1.0, secret=secret)))
    None
    """
    if getattr(notion, "secret", None) is not None:
        return None
    p = prior.probabilities
    return float(per_bin_variance(p, notion.epsilon, notion).sum() - (1.0 - p @ p))


def bayes_bound(prior: Prior, notion: Notion, objective: Objective) -> float | None:
    """A certified lower bound on the Bayesian objective's MSE, or None: the per-bin binary optimum of
    docs/math.md §10 for the histogram (valid for every eps-LIP mechanism for X at the prior, so for every eps-LDP
    and bounded-prior one); none with a latent secret, which may leave X free."""
    if not isinstance(objective, BayesHistogram) or getattr(notion, "secret", None) is not None:
        return None
    return bayes_histogram_bound(prior, notion.epsilon)


def uniform_prior_optimum(k: int, epsilon: float, notion_kind: str = "LIP") -> tuple[float, str]:
    """The optimal figure at the uniform prior over k values, in closed form, and the design that reaches it.

    (figure, description): the A-optimal n x sum Var, given the users' values, at the uniform prior over k values
    (docs/math.md §11), in O(k) for any k (``closed_forms.uniform_optimal_orbit``): one permutation orbit of
    a slice vertex; LDP: d-subset selection with the best d; LIP: j values at e^eps, k - 1 - j at e^-eps and one
    free coordinate.

    Parameters
    ----------
    k : int
        The number of values.
    epsilon : float
        The notion's epsilon.
    notion_kind : {"LIP", "LDP"}, default "LIP"
        "LDP" for the LDP cone (staircase columns, also worst-case LIP without a secret); anything else takes the
        LIP box slice.

    Returns
    -------
    figure : float
        The optimal n x sum Var at the uniform prior.
    description : str
        The optimal orbit, in words.

    See Also
    --------
    per_bin_bound : a bound at any prior.

    Examples
    --------
    >>> from lipdesign.designer import uniform_prior_optimum
    >>> figure, description = uniform_prior_optimum(4, 1.0)
    >>> round(figure, 4), description
    (1.524, 'orbit of 1 value at e^eps, 2 at e^-eps and one at 0.545959')
    >>> figure, description = uniform_prior_optimum(4, 1.0, "LDP")
    >>> round(figure, 4), description
    (7.5562, 'subset selection, d = 1')
    """
    if k < 2:  # one value has no orbit to choose (the LDP staircase has no d in 1..k-1)
        raise ValidationError(f"k is {k}; the uniform prior needs k >= 2 values")
    figure, size, free = uniform_optimal_orbit(k, epsilon, "staircase" if notion_kind == "LDP" else "box")
    if free is None:
        return figure, f"subset selection, d = {size}"
    return figure, (f"orbit of {size} value{'' if size == 1 else 's'} at e^eps, {k - 1 - size} at e^-eps and one at "
                    f"{free:.6g}")


#: The relaxation SDP's optimum is stepped down by this fraction (of the trace) before it is used as a bound.
RELAXATION_STEP = 1e-5

#: Largest k of the relaxation SDP (a 2k x 2k semidefinite constraint; about 30 s at k = 32, docs/math.md §11).
MAX_RELAXATION_K = 32

#: Most cone rows whose pairwise products the relaxation SDP takes with a latent secret (MAX_RELAXATION_ROWS^2
#: inequalities; 128 is worst-case LIP for a binary secret at k = 32).
MAX_RELAXATION_ROWS = 128


def relaxation_bound(prior: Prior, notion: Notion, objective: Objective) -> float | None:
    """The relaxation SDP of docs/math.md §11 (None above MAX_RELAXATION_K, or with more than MAX_RELAXATION_ROWS
    cone rows): minimise the figure over matrices X >= M^-1 where M has M P = 1 and the averaged products of the
    constraints every slice point meets (RLT inequalities). For X itself these are the box constraints
    a <= s_i <= e of every eps-LIP column (the diagonal cap among them), and X also meets the per-bin bounds and the
    contraction X >= P P^T + (diag P - P P^T)/(1 - e^-eps)^2 (histogram), or t >= c^T M^+ c with the contraction
    bound on t (mean): every eps-LIP (so every eps-LDP, BP-LIP and WC-LIP) mechanism at P gives a feasible point.
    With a latent secret they are the products of the notion's rows A and of r >= 0 (M >= 0, A M >= 0,
    A M A^T >= 0, docs/math.md §12), and no per-bin or contraction bound applies."""
    import cvxpy as cp

    k, plain = prior.k, getattr(notion, "secret", None) is None
    if k > MAX_RELAXATION_K:
        return None
    p, e = prior.probabilities, math.exp(notion.epsilon)
    a = 1.0 / e
    information = cp.Variable((k, k), symmetric=True)
    constraints = [information @ p == 1]
    if plain:
        constraints += [
            information <= e + a - 1,  # (s_i - a)(e - s_j) >= 0 averaged with the weights P . q_y
            information >= max(2 * a - a**2, 2 * e - e**2),  # (s_i - a)(s_j - a) >= 0 and (e - s_i)(e - s_j) >= 0
        ]
    else:
        rows = notion.constraint_rows(prior)
        if len(rows) > MAX_RELAXATION_ROWS:
            return None
        rows = rows / np.abs(rows).max(axis=1, keepdims=True)
        products = cp.Variable((len(rows), k))  # A M, so that A M A^T costs rows^2 k terms, not rows^2 k^2
        constraints += [information >= 0, products == rows @ information, products >= 0, products @ rows.T >= 0]
    values, offset, scale = scaled_objective(prior, objective)
    if values is not None:  # M may be singular: bound t >= c^T M^+ c through the Schur complement
        target = cp.Variable()
        constraints.append(cp.bmat([[cp.reshape(target, (1, 1), order="C"), values[None, :]],
                                    [values[:, None], information]]) >> 0)
        if plain:
            constraints.append(target >= offset / (1 - a) ** 2)
    else:
        inverse = cp.Variable((k, k), symmetric=True)
        constraints.append(cp.bmat([[inverse, np.eye(k)], [np.eye(k), information]]) >> 0)
        if plain:
            sigma = np.diag(p) - np.outer(p, p)
            constraints += [inverse - np.outer(p, p) - sigma / (1 - a) ** 2 >> 0,
                            cp.diag(inverse) >= per_bin_variance(p, notion.epsilon, notion) + p**2]
        target = cp.trace(inverse)
    problem = cp.Problem(cp.Minimize(target), constraints)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            problem.solve(solver=cp.CLARABEL, tol_gap_abs=SOLVER_TOLERANCE, tol_gap_rel=SOLVER_TOLERANCE,
                          tol_feas=SOLVER_TOLERANCE)
        except cp.error.SolverError:  # a bound is optional: the design keeps its others
            return None
    if problem.status != cp.OPTIMAL:
        return None
    # Clarabel's optimum is within its tolerances of the true one; step down by well over them (relative to the
    # trace, about 1: with a figure tr - 1 of 1e-3, at eps = 8, a step of 1e-7 had left the bound above the optimum)
    return (float(problem.value) * (1 - RELAXATION_STEP) - offset) * scale**2


#: The name of ``relaxation_dual_bound`` in bound tables.
RELAXATION_DUAL = "relaxation dual (docs/math.md §11)"

#: Largest k of the relaxation dual (one dense k x k eigendecomposition per step: about 10 s in all at k = 1024).
MAX_RELAXATION_DUAL_K = 2048

#: Seconds the relaxation dual's optimiser may take (any point it reaches is a valid bound).
RELAXATION_DUAL_SECONDS = 120.0


def relaxation_dual_bound(prior: Prior, notion: Notion, objective: Objective) -> float | None:
    """The relaxation's dual in 2k numbers (docs/math.md §11) on n x sum Var given the users' values, or None where
    it does not apply (not ``Frequencies``, a latent secret, a value of probability 0, k past
    MAX_RELAXATION_DUAL_K): every eps-LIP mechanism at P (so every eps-LDP, BP-LIP and WC-LIP one) has
    M = 1 1^T + C with C >= 0, C P = 0, C_xx <= (e^eps - 1)(1 - e^-eps) (Bhatia-Davis) and (M^-1)_xx at least the
    per-bin bound plus P_x^2, and for every d >= 0, s in [0, 1]^k tr(M^-1) is at least the right side of
    ``_solvers.relaxation_dual``; the (d, s) found is evaluated with a rounding margin. It beats the per-bin bound on
    skewed priors by 5.5 % at k = 64 and 1.2 % at k = 1024 (Zipf(1.1), eps = 1) and never falls below it (s = 0 is
    the per-bin bound)."""
    p = prior.probabilities
    if (objective.kind != "frequencies" or getattr(notion, "secret", None) is not None
            or prior.k > MAX_RELAXATION_DUAL_K):
        return None
    if (p <= 0).any():
        return None
    e = math.exp(notion.epsilon)
    cap = e + 1 / e - 2
    inverse_diagonal = per_bin_variance(p, notion.epsilon, notion) + p**2
    d, s = maximise(p, cap, inverse_diagonal, time_limit=RELAXATION_DUAL_SECONDS)
    return certified_value(d, s, p, cap, inverse_diagonal) - 1.0


def lower_bounds(prior: Prior, notion: Notion, objective: Objective,
                 relaxation: bool = True) -> dict[str, float]:
    """The valid lower bounds on the figure of ``objective`` over every mechanism of ``notion`` at ``prior``, by name
    (docs/math.md §11): per-bin and relaxation dual (histogram), contraction (mean), the uniform-prior optimum, and
    the relaxation SDP unless ``relaxation`` is False."""
    bounds = {}
    plain = getattr(notion, "secret", None) is None
    if objective.kind == "frequencies":
        per_bin = per_bin_bound(prior, notion)
        if per_bin is not None:
            bounds[PER_BIN] = per_bin
        dual = relaxation_dual_bound(prior, notion, objective)
        if dual is not None:
            bounds[RELAXATION_DUAL] = dual
        uniform = np.ptp(prior.probabilities) == 0
        if uniform and (isinstance(notion, LDP) or plain and getattr(notion, "prior_set", None) is None):
            cone = "LDP" if isinstance(notion, (LDP, WorstCaseLIP)) else "LIP"  # WC-LIP without a secret: LDP's
            bounds["uniform-prior optimum (docs/math.md §11)"] = uniform_prior_optimum(prior.k, notion.epsilon, cone)[0]
    elif plain:
        _, offset, scale = scaled_objective(prior, objective)
        a = math.exp(-notion.epsilon)
        bounds["contraction (docs/math.md §11)"] = offset * (1 / (1 - a) ** 2 - 1) * scale**2
    relaxed = relaxation_bound(prior, notion, objective) if relaxation else None
    if relaxed is not None:
        bounds["relaxation SDP (docs/math.md §11)"] = relaxed
    return bounds


def bound_target(bounds: Mapping[str, float | None],
                 target_gap: float) -> tuple[str | None, float | None, float]:
    """(name, bound, the figure at which the gap to it is ``target_gap``), for the largest certified bound."""
    finite = {name: value for name, value in bounds.items() if value is not None and np.isfinite(value)}
    if not finite:
        return None, None, -math.inf
    name = max(finite, key=finite.__getitem__)
    return name, finite[name], finite[name] / (1 - target_gap)


def optimality(value: float, bounds: Mapping[str, float | None]) -> dict[str, Any]:
    """The design's figure beside the best valid lower bound, the relative gap, the bound's name and every bound
    computed (docs/math.md §11)."""
    finite = {name: bound for name, bound in bounds.items() if bound is not None and np.isfinite(bound)}
    if not finite:
        return {"variance": value, "lower_bound": None, "gap": None, "bound": None, "bounds": {}}
    name = max(finite, key=finite.__getitem__)
    bound = min(finite[name], value)  # a bound computed in floating point may exceed the optimum by rounding
    return {"variance": value, "lower_bound": bound, "gap": (value - bound) / value if value else 0.0,
            "bound": name, "bounds": finite}
