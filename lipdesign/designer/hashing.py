"""Local hashing designed for a prior under eps-LIP (docs/math.md §7.2): g = 2 with the §6 closed form per cell
of the bucket mass, its guarantee verified for every hash, and the baselines beside it; under LDP its member is
OLH."""

from lipdesign.designer.population import PER_BIN, per_bin_bound
from lipdesign.designer.unary import unary_baselines
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.hashing import OLH
from lipdesign.mechanisms.local_hashing import LocalHashing
from lipdesign.notions import LDP, LIP, WorstCaseLIP


def check_hashing(prior, notion, objective):
    """ValidationError unless the hashing design applies: eps-LIP for X or eps-LDP (WC-LIP for X is eps-LDP), the
    histogram."""
    plain_lip = isinstance(notion, LIP) and notion.secret is None and notion.prior_set is None
    if not (plain_lip or isinstance(notion, (LDP, WorstCaseLIP))):
        raise ValidationError(f"notion is {notion!r}; family='hashing' is designed under ld.LIP(eps) for X itself or "
                              "ld.LDP(eps) so far (a latent secret or a prior set is not built for it)")
    if isinstance(notion, LIP):
        LocalHashing.checked_epsilon(notion.epsilon)  # the family's range, before any baseline is built
    if objective.kind != "frequencies":
        raise ValidationError(f"objective is {objective!r}; family='hashing' is designed for ld.Frequencies() (the "
                              "histogram) only so far; its channel is optimal for every utility at g = 2, and "
                              "mechanism.bayes_risk gives the posterior mean's MSE")


def hashing_design(prior, notion, objective, *, baselines=True, rr_optimum=None):
    """Local hashing for ``prior`` under ``notion`` (docs/math.md §7.2): a ``LocalHashing`` (g = 2) under eps-LIP for
    X, with the per-bin bound and the baselines recorded; ``ld.mechanisms.OLH`` (its default g) under eps-LDP or
    WC-LIP. ``rr_optimum``, the optimal RR table's figure under the same notion, joins the baselines when given."""
    check_hashing(prior, notion, objective)
    if not isinstance(notion, LIP):
        return OLH(notion.epsilon, prior.k)
    info = {"method": "g = 2, the closed form of docs/math.md §6 per cell of the bucket mass (docs/math.md §7.2)"}
    if baselines:
        info["baselines"] = unary_baselines(prior, notion)
        if rr_optimum is not None:
            info["baselines"]["optimal RR table (LIP)"] = rr_optimum
    info["lower_bounds"] = {PER_BIN: per_bin_bound(prior, notion)}
    return LocalHashing(notion, prior, provenance=info)
