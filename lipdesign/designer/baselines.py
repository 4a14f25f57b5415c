"""The figures of the protocols a design is set beside (docs/math.md §7, §8, §11): GRR, OUE, OLH and the best subset
selection, each with its own unbiased estimate at the design prior, given the users' values; the best symmetric
unary encoding under LIP; and the same at 2 eps for a design protecting X under LIP (the LDP level an eps-LIP
mechanism reaches at worst, docs/math.md §2). The optimal LDP table, the one designed baseline, is designed by the
randomized-response designer itself (``designer.rr``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import numpy as np
from scipy.optimize import minimize_scalar

from lipdesign.mechanisms.closed_forms import subset_selection_probabilities
from lipdesign.mechanisms.olh import OLH
from lipdesign.mechanisms.oracle import pure_variance
from lipdesign.mechanisms.oue import OUE
from lipdesign.mechanisms.rr import GRR

if TYPE_CHECKING:
    from lipdesign.model import Prior
    from lipdesign.notions import LDP, LIP, WorstCaseLIP


def subset_selection_variance(prior: Prior, epsilon: float) -> tuple[float, int] | None:
    """The figure of the best d-subset selection at a prior: (n x sum Var, d).

    The variance of the support-count estimate of d-subset selection at the design prior, given the users' values
    (docs/math.md §8), for the d in 1..k-1 that minimises it. Subset selection is eps-LDP, so feasible for every
    notion at that epsilon.

    Parameters
    ----------
    prior : Prior
        The design prior (the users' values are drawn from it).
    epsilon : float
        The LDP epsilon of the subset selection.

    Returns
    -------
    tuple of (float, int) or None
        The figure, n x the sum of the variances of the estimate at the best d, and that d (the size of the
        reported subsets); None for a prior of a single value (no d in 1..k-1).

    See Also
    --------
    fixed_protocols : GRR, OUE, OLH and the best subset selection together.

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.designer import subset_selection_variance
    >>> figure, d = subset_selection_variance(ld.Prior([0.125] * 8), 1.0)
    >>> round(figure, 3), d
    (21.736, 2)
    """
    best = None
    for d in range(1, prior.k):
        p, q = subset_selection_probabilities(epsilon, prior.k, d)
        figure = float(pure_variance(prior.probabilities, 1, p, q).sum())
        if best is None or figure < best[0]:
            best = (figure, d)
    return best


def fixed_protocols(prior: Prior, epsilon: float) -> dict[str, float]:
    """The figures of the fixed LDP protocols at a prior, the baselines a design is set beside.

    {name: n x sum Var} of GRR, OUE, OLH and the best subset selection at ``epsilon``, each with its own unbiased
    estimate at the prior, given the users' values (docs/math.md §8). All are eps-LDP, so feasible for every notion
    at that epsilon. OUE and OLH are left out past their largest epsilon (``OUE.epsilon_range``).

    Parameters
    ----------
    prior : Prior
        The design prior (the users' values are drawn from it).
    epsilon : float
        The LDP epsilon of the protocols.

    Returns
    -------
    dict of str to float
        n x the sum of the variances of each protocol's unbiased estimate, by name ("GRR", "OUE", "OLH",
        "subset selection (d=...)").

    See Also
    --------
    subset_selection_variance : the subset-selection entry.

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.designer import fixed_protocols
    >>> figures = fixed_protocols(ld.Prior([0.5, 0.3, 0.2]), 1.0)
    >>> for name, figure in figures.items():
    ...     print(f"{name}: {figure:.3f}")
    GRR: 4.360
    OUE: 12.048
    OLH: 12.294
    subset selection (d=1): 4.360
    """
    p = prior.probabilities
    figures = {"GRR": float(np.sum(GRR(epsilon, prior.k).variance(p)))}
    if epsilon <= OUE.epsilon_range[1]:
        figures["OUE"] = float(np.sum(OUE(epsilon, prior.k).variance(p)))
        figures["OLH"] = float(np.sum(OLH(epsilon, prior.k).variance(p)))
    ss, d = cast("tuple[float, int]", subset_selection_variance(prior, epsilon))  # None only at k = 1
    figures[f"subset selection (d={d})"] = ss
    return figures


def symmetric_unary_variance(prior: Prior, epsilon: float,
                             ratio: float | None = None) -> tuple[float, float, float]:
    """(n x sum Var, a, b) of the best symmetric unary encoding (one a, one b) with u/v = ``ratio``: by default the
    largest eps-LIP allows at ``prior``, R = (e^eps - p_min)/(1 - p_min) (exactly LIP iff u/v <= R, docs/math.md
    §7.1); e^eps is the eps-LDP one. a/(1 - a) = R b/(1 - b) and b is searched on (0, 1)."""
    p = prior.probabilities
    if ratio is None:
        ratio = (math.exp(epsilon) - p.min()) / (1 - p.min())

    def figure(b: float) -> float:
        a = ratio * b / (1 - b + ratio * b)
        return float(pure_variance(p, 1, a, b).sum())

    best = minimize_scalar(figure, bounds=(1e-9, 1 - 1e-9), method="bounded", options={"xatol": 1e-12})
    b = float(best.x)
    return figure(b), ratio * b / (1 - b + ratio * b), b


def unary_baselines(prior: Prior, notion: LDP | LIP | WorstCaseLIP) -> dict[str, float]:
    """n x sum Var of each baseline's own unbiased estimate at the prior, given the users' values: the best symmetric
    LIP unary encoding at eps (for X); OUE, OLH and GRR at eps and, protecting X, at 2 eps (the LDP level an eps-LIP
    mechanism reaches at worst, docs/math.md §2; with a latent secret there is no such level)."""
    eps, p = notion.epsilon, prior.probabilities
    secret = getattr(notion, "secret", None) is not None
    prior_set = getattr(notion, "prior_set", None)
    ratio = None
    if prior_set is not None:  # symmetric UE is LIP over the set iff u/v <= R at its smallest entry (docs/math.md §7.1)
        smallest = prior_set.smallest_entry()
        ratio = (math.exp(eps) - smallest) / (1 - smallest)
    figures = {} if secret else {"symmetric LIP unary": symmetric_unary_variance(prior, eps, ratio=ratio)[0]}
    for suffix, level in (("", eps),) if secret else (("", eps), (" at 2 eps", 2 * eps)):
        if level <= OUE.epsilon_range[1]:
            figures["OUE" + suffix] = float(np.sum(OUE(level, prior.k).variance(p)))
            figures["OLH" + suffix] = float(np.sum(OLH(level, prior.k).variance(p)))
        if level <= GRR.epsilon_range[1]:
            figures["GRR" + suffix] = float(np.sum(GRR(level, prior.k).variance(p)))
    return figures
