"""The figures of the protocols a design is set beside (docs/math.md §7, §8, §11): GRR, OUE, OLH and the best subset
selection, each with its own unbiased estimate at the design prior, given the users' values; the best symmetric
unary encoding under LIP; and the same at 2 eps for a design protecting X under LIP (the LDP level an eps-LIP
mechanism reaches at worst, docs/math.md §2). The optimal LDP table, the one designed baseline, is designed by the
randomized-response designer itself (``designer.rr``)."""

import math

from scipy.optimize import minimize_scalar

from lipdesign.mechanisms.closed_forms import subset_selection_probabilities
from lipdesign.mechanisms.olh import OLH
from lipdesign.mechanisms.oracle import pure_variance
from lipdesign.mechanisms.oue import OUE
from lipdesign.mechanisms.rr import GRR


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


def symmetric_unary_variance(prior, epsilon, ratio=None):
    """(n x sum Var, a, b) of the best symmetric unary encoding (one a, one b) with u/v = ``ratio``: by default the
    largest eps-LIP allows at ``prior``, R = (e^eps - p_min)/(1 - p_min) (exactly LIP iff u/v <= R, docs/math.md
    §7.1); e^eps is the eps-LDP one. a/(1 - a) = R b/(1 - b) and b is searched on (0, 1)."""
    p = prior.probabilities
    if ratio is None:
        ratio = (math.exp(epsilon) - p.min()) / (1 - p.min())

    def figure(b):
        a = ratio * b / (1 - b + ratio * b)
        return float(pure_variance(p, 1, a, b).sum())

    best = minimize_scalar(figure, bounds=(1e-9, 1 - 1e-9), method="bounded", options={"xatol": 1e-12})
    b = float(best.x)
    return figure(b), ratio * b / (1 - b + ratio * b), b


def unary_baselines(prior, notion):
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
            figures["OUE" + suffix] = float(OUE(level, prior.k).variance(p).sum())
            figures["OLH" + suffix] = float(OLH(level, prior.k).variance(p).sum())
        if level <= GRR.epsilon_range[1]:
            figures["GRR" + suffix] = float(GRR(level, prior.k).variance(p).sum())
    return figures
