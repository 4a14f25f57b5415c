"""Local hashing designed for a prior under eps-LIP (docs/math.md §7.2): g = 2 with the §6 closed form per cell
of the bucket mass, its guarantee verified for every hash (``LocalHashing``); g = 3..8 over a public pool of hashes
with a ray LP each, verified as one table (``pooled_hashing``); the baselines beside them; under LDP, OLH."""

from typing import Any

import numpy as np

from lipdesign._solvers.ray_lp import solve_ray_lp
from lipdesign.designer.baselines import unary_baselines
from lipdesign.designer.bounds import PER_BIN, per_bin_bound
from lipdesign.designer.rays import MAX_RAYS, extreme_rays
from lipdesign.designer.repair import exact_repair
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.local_hashing import LocalHashing, smallest_prime_at_least
from lipdesign.mechanisms.olh import OLH
from lipdesign.mechanisms.table import TableMechanism
from lipdesign.model import Prior
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.objectives import Frequencies
from lipdesign.validation import integer


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


def hashing_design(prior, notion, objective, *, baselines=True, rr_optimum=None, buckets=2):
    """Local hashing for ``prior`` under ``notion`` (docs/math.md §7.2): with g = ``buckets`` = 2 a ``LocalHashing``
    under eps-LIP for X, with the per-bin bound and the baselines recorded; with 3..8 buckets the pooled design
    (``pooled_hashing``); ``ld.mechanisms.OLH`` (its default g, or ``buckets`` when given) under eps-LDP or WC-LIP.
    ``rr_optimum``, the optimal RR table's figure under the same notion, joins the baselines when given."""
    check_hashing(prior, notion, objective)
    if not isinstance(notion, LIP):
        return OLH(notion.epsilon, prior.k, None if buckets == 2 else buckets)
    if buckets != 2:
        return pooled_hashing(prior, notion, buckets, baselines=baselines, rr_optimum=rr_optimum)
    info: dict[str, Any] = {"method": "g = 2, the closed form of docs/math.md §6 per cell of the bucket mass "
                                      "(docs/math.md §7.2)"}
    if baselines:
        info["baselines"] = unary_baselines(prior, notion)
        if rr_optimum is not None:
            info["baselines"]["optimal RR table (LIP)"] = rr_optimum
    info["lower_bounds"] = {PER_BIN: per_bin_bound(prior, notion)}
    return LocalHashing(notion, prior, provenance=info)


#: Pooled local hashing (g > 2): hashes in the public pool, the seed that draws them, and the largest g.
POOL = 256
POOL_SEED = 20261201
MAX_BUCKETS = 8


def pooled_hashing(prior, notion, buckets, *, pool=POOL, seed=POOL_SEED, max_rays=MAX_RAYS, baselines=True,
                   rr_optimum=None):
    """Local hashing into ``buckets`` (3..8) buckets under eps-LIP for X over a public pool of ``pool`` hashes
    ((a x + b) mod p) mod g drawn with ``seed`` (docs/math.md §7.2): for each hash, the ray LP of its bucket
    masses m with the gain sum_z w_z q_z^2 / (m . q), w_z = sum_{x in z} P_x^2, over the LIP cone at m. The whole
    mechanism is one table with a column per (hash, output), Q[x, (s, y)] = C_s[h_s(x), y] / pool, repaired and
    verified exactly as a whole (so on every hash of the pool) and returned as a TableMechanism: its GLS, MLE and
    posterior-mean estimates and its file format are the table's. ``rr_optimum`` joins the baselines when given."""
    check_hashing(prior, notion, Frequencies())
    g = integer(buckets, "buckets", low=2, high=MAX_BUCKETS)
    pool = integer(pool, "pool", low=1)
    k, p = prior.k, prior.probabilities
    prime = smallest_prime_at_least(max(k, g))
    seeds = np.sort(np.random.default_rng(seed).choice(prime * (prime - 1), size=min(pool, prime * (prime - 1)),
                                                        replace=False))
    columns, plain = [], LIP(notion.epsilon)
    for s in seeds:
        hashed = ((1 + s // prime) * np.arange(k) + s % prime) % prime % g
        mass, weight = np.bincount(hashed, p, g), np.bincount(hashed, p**2, g)
        live = mass > 0
        rays, _ = extreme_rays(Prior(mass[live] / mass[live].sum()), plain, max_rays)
        result = solve_ray_lp(rays, (rays**2 @ weight[live]) / (rays @ mass[live]))
        used = result.weights > 1e-13 * result.weights.max()
        channel = np.zeros((g, int(used.sum())))
        channel[live] = (result.weights[used, None] * rays[used]).T
        channel[~live] = channel[live][0]  # a bucket no value falls in: never used
        columns.append(channel[hashed] / seeds.size)
    table, mix = exact_repair(np.hstack(columns), notion, prior)
    info = {"method": f"pooled local hashing: {seeds.size} hashes ((a x + b) mod {prime}) mod {g}, a ray LP per "
                      "hash (docs/math.md §7.2), the whole table repaired and verified", "hashes": seeds.tolist(),
            "prime": prime, "buckets": g, "uniform_mix": mix}
    if baselines:
        info["baselines"] = unary_baselines(prior, notion)
        if rr_optimum is not None:
            info["baselines"]["optimal RR table (LIP)"] = rr_optimum
    return TableMechanism(table, notion, prior, provenance=info)
