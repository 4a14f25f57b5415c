"""The count-mean sketch designed for a prior over candidate strings (docs/math.md §16.6): under eps-LIP for X, each
row's bit probabilities are the unary design (docs/math.md §7.1) at the prior the candidates induce on its buckets,
rounded to 32-bit thresholds and verified for X (``CountMeanSketchLIP``); under eps-LDP, Apple's sketch."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign._solvers.unary_encoding import bit_probabilities
from lipdesign.designer.unary_encoding import SHRINK, TRY_INSTEAD, _barrier_design
from lipdesign.errors import SolverError, ValidationError, VerificationError
from lipdesign.mechanisms.count_mean import CountMeanSketch
from lipdesign.mechanisms.hashed_bits import MAX_BITS, MAX_COHORTS, WORD
from lipdesign.mechanisms.sampling import public_seed
from lipdesign.mechanisms.sketch_lip import CountMeanSketchLIP, induced_priors, word_thresholds
from lipdesign.model import Prior
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.objectives import Frequencies, as_objective
from lipdesign.strings import hash_key
from lipdesign.validation import fmt, integer, real_number

if TYPE_CHECKING:
    import numpy.typing as npt

#: The rows of a designed sketch (its depth d) and the public seed of its hash functions, unless given.
DEPTH = 16
SEED = 20261206

#: Added to every bucket's weight in the design's objective (the number of candidates it holds): an empty bucket
#: keeps this much, so that its bit stays informative for strings decoded later.
EMPTY_WEIGHT = 0.1

#: The largest epsilon the rows are designed at (the unary program's bits are then within about 1e-4 of certain).
MAX_DESIGN_EPSILON = 10.0

#: A row's design is accepted when its value is within this fraction of its lower bound: the rows' bucket objective
#: is a proxy for the candidates' variance (docs/math.md §16.6), which a closer optimum of the proxy does not
#: guarantee to lower, and empty buckets' small weights let the barrier stall near 1e-5.
ROW_GAP = 1e-3

#: A designed sketch's width m, unless given: the smallest power of two at least 2k, within these limits.
MIN_WIDTH, MAX_WIDTH = 16, 1024


def default_width(k: int) -> int:
    """The width of a sketch for k candidates: the smallest power of two >= 2k, clipped to MIN_WIDTH..MAX_WIDTH."""
    return int(min(MAX_WIDTH, max(MIN_WIDTH, 2 ** math.ceil(math.log2(2 * k)))))


def check_sketch(prior, notion, objective):
    """ValidationError unless the sketch design applies: eps-LIP for X or eps-LDP (WC-LIP for X is eps-LDP), the
    histogram."""
    plain_lip = isinstance(notion, LIP) and notion.secret is None and notion.prior_set is None
    if not (plain_lip or isinstance(notion, (LDP, WorstCaseLIP)) and getattr(notion, "secret", None) is None):
        raise ValidationError(f"notion is {notion!r}; family='cms' is designed under ld.LIP(eps) for X itself or "
                              "ld.LDP(eps) (a latent secret or a prior set is not built for it)")
    if objective.kind != "frequencies":
        raise ValidationError(f"objective is {objective!r}; family='cms' is designed for ld.Frequencies() (the "
                              "candidates' frequencies)")


def sketch_design(prior: Prior | npt.ArrayLike, notion: LDP | LIP | WorstCaseLIP, objective: Any = None, *,
                  m: int | None = None, d: int = DEPTH, seed: int = SEED, unlisted: float = 0.0,
                  baselines: bool = True, rr_optimum: float | None = None) -> CountMeanSketch | CountMeanSketchLIP:
    """The count-mean sketch for a prior over candidate strings, with the sketch's own options (docs/math.md §16.6);
    ``ld.design(prior, notion, family="cms")`` calls it with the defaults.

    Under eps-LIP for X, a ``CountMeanSketchLIP`` whose rows are each the unary design at the prior they induce on
    their buckets (weighted by the candidates each bucket holds), verified for every string; Apple's sketch with the
    same hash functions beside it (``baselines``). Under eps-LDP (or worst-case LIP for X, which is eps-LDP),
    Apple's ``CountMeanSketch`` at eps, decoding over the candidates.

    Parameters
    ----------
    prior : Prior or array_like
        The prior over the candidates: its labels are the candidate strings.
    notion : LIP, WorstCaseLIP or LDP
        ld.LIP(eps) for X itself (no secret, no prior set), or ld.LDP(eps).
    objective : Frequencies or str, optional
        ld.Frequencies() (the default, None): the candidates' frequencies.
    m : int, optional
        The width: buckets per row, 2 to 65536; by default the smallest power of two >= 2k within 16..1024.
    d : int, default 16
        The depth: rows, each with its own public hash function.
    seed : int, default 20261206
        The public seed of the hash functions.
    unlisted : float, default 0
        The prior mass of every string outside the candidates, in [0, 1): taken as spread evenly over each row's
        buckets, and part of the prior the claim is stated at.
    baselines : bool, default True
        Also evaluate Apple's sketch at the same LIP level, at LDP eps and at LDP 2 eps (``mechanism.baselines``).
    rr_optimum : float, optional
        The optimal randomized-response table's figure under the same notion, added to the baselines.

    Returns
    -------
    CountMeanSketchLIP or CountMeanSketch
        The sketch; its ``mse`` is n x the sum of the variances of the candidates' least-squares frequencies, users
        in the prior's proportions.

    Raises
    ------
    ValidationError
        A notion with a secret or a prior set, another objective, or an option out of its range.
    SolverError
        A row whose design does not come within 1e-3 of its lower bound, or whose rounded thresholds miss the claim.

    See Also
    --------
    lipdesign.design : ``family="cms"`` with the defaults.
    lipdesign.mechanisms.CountMeanSketchLIP : The mechanism it returns under LIP.

    Examples
    --------
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.4, 0.25, 0.15, 0.1, 0.06, 0.04], labels=["the", "of", "and", "to", "in", "is"])
    >>> sketch = ld.designer.sketch_design(prior, ld.LIP(1.0), m=32, d=8, unlisted=0.1, baselines=False)
    >>> sketch.verify().passed, sketch.m, sketch.d, sketch.unlisted
    (True, 32, 8, 0.1)
    """
    prior = prior if isinstance(prior, Prior) else Prior(prior)
    objective = Frequencies() if objective is None else as_objective(objective)
    check_sketch(prior, notion, objective)
    m = default_width(prior.k) if m is None else integer(m, "m (the buckets)", low=2, high=MAX_BITS)
    d = integer(d, "d", low=1, high=MAX_COHORTS)
    seed = public_seed(seed)
    labels = [str(label) for label in prior.labels]
    if not isinstance(notion, LIP):
        return CountMeanSketch(notion.epsilon, m=m, d=d, seed=seed, candidates=labels)
    epsilon = CountMeanSketchLIP.checked_epsilon(notion.epsilon)
    if epsilon > MAX_DESIGN_EPSILON:
        raise ValidationError(f"epsilon is {fmt(epsilon)}; the sketch's rows are designed at epsilon <= "
                              f"{MAX_DESIGN_EPSILON:g} (beyond it the bits are nearly certain and the barrier method "
                              "loses the precision it needs)")
    unlisted = real_number(unlisted, "unlisted", 0.0, 1.0)
    if unlisted >= 1:
        raise ValidationError(f"unlisted is {fmt(unlisted)}; the candidates need some prior mass (it must be below 1)")
    induced = induced_priors(prior, hash_key(seed, np.arange(d)), m, unlisted)  # the keys CountMeanSketchLIP uses
    on, off, bounds, gaps = np.empty((d, m), np.int64), np.empty((d, m), np.int64), [], []
    # a row's bucket enters the candidates' variance once per candidate it holds (docs/math.md §16.6), plus
    # EMPTY_WEIGHT
    uniform = Prior(np.ones(prior.k), labels=prior.labels, normalize=True)
    weights = np.rint(induced_priors(uniform, hash_key(seed, np.arange(d)), m, 0.0) * prior.k) + EMPTY_WEIGHT
    for row in range(d):
        result = _barrier_design(induced[row], epsilon, weights=weights[row])
        gap = (result.value - result.bound) / result.value
        if not gap <= ROW_GAP:
            raise SolverError(f"row {row} of the sketch: the unary design's barrier method ended {gap:.2g} above its "
                              f"lower bound (at most {ROW_GAP:g} is accepted); {TRY_INSTEAD}")
        gaps.append(gap)
        on[row], off[row] = _realised_row(result, induced[row], epsilon, row)
        bounds.append(result.bound)
    info: dict[str, Any] = {"method": f"each of d = {d} rows the unary design at its induced prior (docs/math.md "
                                      "§7.1, §16.6), rounded to 32-bit thresholds and verified for X",
                            "bucket_objective_bound": float(sum(bounds)), "largest_row_gap": max(gaps)}
    mechanism = CountMeanSketchLIP(epsilon, prior, on, off, m=m, d=d, seed=seed, unlisted=unlisted, provenance=info)
    if baselines:
        info["baselines"] = _baselines(mechanism, induced)
        if rr_optimum is not None:
            info["baselines"]["optimal RR table (LIP)"] = rr_optimum
        mechanism = CountMeanSketchLIP(epsilon, prior, on, off, m=m, d=d, seed=seed, unlisted=unlisted,
                                       provenance=info)
    return mechanism


def _realised_row(result, induced, epsilon, row):
    """The designed row as 32-bit thresholds, pulled toward the uninformative point (SHRINK) until the realised bits
    are eps-LIP at the row's induced prior (verified as ``CountMeanSketchLIP`` verifies a row)."""
    from lipdesign.mechanisms.unary_encoding import UnaryEncoding

    for shrink in (0.0, *SHRINK):
        a, b = bit_probabilities(result.alpha * (1 - shrink), result.beta * (1 - shrink))
        on, off = word_thresholds(a), word_thresholds(b)
        if (on == off).any():
            continue
        try:
            UnaryEncoding(on / WORD, off / WORD, LIP(epsilon), Prior(induced, normalize=True))
        except VerificationError:
            continue
        return on, off
    raise SolverError(f"row {row} of the sketch: the realised thresholds miss the claim even after shrinking; "
                      f"{TRY_INSTEAD}")


def _baselines(designed, induced):
    """n x sum Var of the candidates' estimate, users in the prior's proportions, for Apple's symmetric sketch
    (docs/math.md §16.4) with the same hashes: at the largest eps' whose sketch is eps-LIP at the induced priors
    (exactly LIP iff e^eps' <= (e^eps - p_min)/(1 - p_min), docs/math.md §7.1), and at LDP eps and 2 eps."""
    epsilon, p_min = designed.epsilon, float(induced.min())
    widest = math.log((math.exp(epsilon) - p_min) / (1 - p_min))
    figures = {}
    for name, level in (("count-mean sketch (LIP)", widest), ("count-mean sketch", epsilon),
                        ("count-mean sketch at 2 eps", 2 * epsilon)):
        if level > 10.0:  # beyond the sketch's range: no figure
            continue
        flip = math.ceil(WORD / (1.0 + math.exp(level / 2.0)))
        claim = epsilon if name.endswith("(LIP)") else level
        sketch = CountMeanSketchLIP(claim, designed.prior, np.full(designed.on.shape, WORD - flip),
                                    np.full(designed.on.shape, flip), m=designed.m, d=designed.d, seed=designed.seed,
                                    unlisted=designed.unlisted)
        figures[name] = sketch.mse
    return figures
