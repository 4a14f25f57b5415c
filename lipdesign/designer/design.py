"""``ld.design``: validates a design problem and dispatches it to its family's designer (docs/math.md §5, §7, §11,
§12): the randomized-response table (``designer.rr``), the unary encoding (``designer.unary_encoding``) or local hashing
(``designer.local_hashing``). Every designer runs with one BLAS thread (``_solvers.threads``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign._solvers.threads import one_thread
from lipdesign.designer.columns import MAX_ROUNDS, TARGET_GAP, TIME_LIMIT
from lipdesign.designer.local_hashing import check_hashing, hashing_design
from lipdesign.designer.rays import MAX_RAYS
from lipdesign.designer.rr import design_table
from lipdesign.designer.sketch import check_sketch, sketch_design
from lipdesign.designer.unary_encoding import MAX_RR_BASELINE_K, check_unary, unary_design
from lipdesign.errors import InfeasibleError, ProblemTooLargeError, SolverError, ValidationError
from lipdesign.mechanisms.class_lip import MAX_CLASS_K
from lipdesign.model import Prior
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.objectives import Frequencies, as_objective
from lipdesign.validation import choice, fmt, integer, real_number

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import numpy.typing as npt

    from lipdesign.mechanisms.base import Mechanism
    from lipdesign.objectives import BayesHistogram, BayesSum, Mean

#: Design families (``design(..., family=...)``): "rr" is the randomized-response type (any table), "unary" a
#: unary encoding with a pair of bit probabilities per value (docs/math.md §7.1), "hashing" local hashing into two
#: buckets with a channel per bucket mass (docs/math.md §7.2). What each returns, by mechanism family id (the id in
#: its JSON; ``mechanism.design_family`` maps back):
#:
#: ============ ================================================================================================
#: ``family=``  returns
#: ============ ================================================================================================
#: "rr"         "table" (TableMechanism); at a uniform prior "subset-lip" (SubsetLIP, LIP) or "subset"
#:              (SubsetSelection, LDP); "class-lip" (ClassSymmetricLIP) by ``method="classes"`` or "auto"
#: "unary"      "unary" (UnaryEncoding)
#: "hashing"    "hashing" (LocalHashing) under LIP, "olh" (OLH) under LDP; with ``buckets`` > 2 a pooled "table"
#: "cms"        "cms-lip" (CountMeanSketchLIP) under LIP, "cms" (CountMeanSketch) under LDP: the labels are strings
#: ============ ================================================================================================
FAMILIES = ("rr", "unary", "hashing", "cms")

#: Design methods of the randomized-response family (``design(..., method=...)``).
METHODS = ("auto", "exact", "columns", "classes")

#: Smallest epsilon ``design`` solves for (every notion and family). In a sweep of 6 notions x 3 random priors at
#: k = 4, every design from 1e-3 to 30 succeeded with a finite figure, while at 1e-4 and 1e-6 14 of 36 failed or gave
#: a table the unbiased estimate cannot invert (the programs' entries differ from uniform by about eps).
DESIGN_MIN_EPSILON = 1e-3


def _fraction(value, field):
    """A number strictly between 0 and 1 (a relative gap)."""
    number = real_number(value, field)
    if not 0 < number < 1:
        raise ValidationError(f"{field} is {fmt(value)}; it must be a number strictly between 0 and 1")
    return number


@one_thread
def design(prior: Prior | npt.ArrayLike, notion: LDP | LIP | WorstCaseLIP,
           objective: Frequencies | Mean | BayesHistogram | BayesSum | str | Mapping[str, Any] | None = None, *,
           family: str = "rr", max_rays: int = MAX_RAYS, baselines: bool = True,
           progress: Callable[[str], object] | None = None, buckets: int = 2, method: str = "auto",
           target_gap: float = TARGET_GAP, max_rounds: int = MAX_ROUNDS, time_limit: float = TIME_LIMIT) -> Mechanism:
    """The optimal mechanism for ``prior`` under ``notion`` for ``objective``.

    By default (``family="rr"``) the optimal mechanism of the randomized-response family (docs/math.md §5, §11): a
    TableMechanism, or at a uniform prior (LIP for X or LDP, ld.Frequencies) the optimal orbit at any k,
    ``SubsetLIP`` or ``SubsetSelection``; under LDP a column-generation table that ends above subset selection gives
    way to it. ``family="unary"`` designs a unary encoding instead (docs/math.md §7.1), ``family="hashing"`` local
    hashing (docs/math.md §7.2); ``ld.compare`` designs every family side by side (docs/math.md §7.3). A design's
    ``verify()`` is the certificate of its claim: the tightest epsilon of the numbers its sampler realises
    (docs/math.md §3).

    Parameters
    ----------
    prior : Prior or array_like
        The design prior: a Prior, or probabilities (one per value, summing to 1). Under LIP every value needs a
        positive probability (docs/math.md §1).
    notion : LIP, WorstCaseLIP or LDP
        The privacy notion and its epsilon: ld.LIP (optionally with ``secret`` and ``prior_set``), ld.WorstCaseLIP or
        ld.LDP. Designs are made at epsilon >= 1e-3 (``DESIGN_MIN_EPSILON``).
    objective : Frequencies, Mean, BayesHistogram, BayesSum, str or dict, optional
        What the design minimises: ld.Frequencies() (the default, None: the variance of the unbiased estimate of the
        population histogram), ld.Mean(values), or the Bayesian ld.BayesHistogram() / ld.BayesSum(values) (right
        only when the prior is the truth); a name ("frequencies") or a dict as in a spec file is read by
        ``as_objective``.
    family : {"rr", "unary", "hashing", "cms"}, default "rr"
        The mechanism family (``FAMILIES``). "rr": a randomized-response table (any notion and objective). "unary":
        a unary encoding (docs/math.md §7.1: ld.LIP for X and ld.Frequencies only; a ``UnaryEncoding``, with the
        optimal RR table's figure among its baselines for k <= 10). "hashing": local hashing (docs/math.md §7.2: a
        ``LocalHashing`` under ld.LIP for X, ld.mechanisms.OLH under ld.LDP, for ld.Frequencies). "cms": the
        count-mean sketch over the labels as strings (docs/math.md §16.6: a ``CountMeanSketchLIP`` under ld.LIP for X,
        each row designed at the prior the labels induce on its buckets; ld.mechanisms.CountMeanSketch under ld.LDP;
        d = 16 rows with the public seed 20261206).
    max_rays : int, default MAX_RAYS
        The most extreme rays the exact method enumerates (200,000): past it "auto" designs by classes or column
        generation and "exact" raises ProblemTooLargeError.
    baselines : bool, default True
        Also evaluate the optimal LDP table, GRR, OUE, OLH and subset selection at the same epsilon and prior, and at
        2 eps for an LIP design (``mechanism.baselines``). False designs faster.
    progress : callable, optional
        None (the default), or a callable that receives a line of text now and then during long work (the
        extreme-ray enumeration of a latent secret or a prior set, the rounds of column generation, the baselines):
        each line a ``lipdesign.progress.ProgressLine``, a str that also says how far its phase has come (for a
        progress bar).
    buckets : int, default 2
        The buckets g of ``family="hashing"``; with g in 3..8, pooled local hashing (a TableMechanism over a public
        pool of hashes, one ray LP per hash) under ld.LIP, OLH with g buckets under ld.LDP. With ``family="cms"``,
        the width m of each row (2, the default, takes the smallest power of two >= 2k within 16..1024).
    method : {"auto", "exact", "columns", "classes"}, default "auto"
        How ``family="rr"`` is designed. "exact" enumerates the extreme rays (optimal, certified; small k).
        "columns" runs column generation over the cone's slice (docs/math.md §12: every notion at any k).
        "classes" makes a class-symmetric design (docs/math.md §11: ld.LIP for X, ld.Frequencies, k <= 2048; a
        ``ClassSymmetricLIP``), at the prior's own classes of equally likely values or, where it has none, at the
        prior grouped into classes of nearly equal values and certified eps-LIP at the prior itself. "auto" the
        exact method where enumeration fits in ``max_rays``, past it a class-symmetric design at a prior with at
        most 32 classes or with k >= 512 (grouped), and column generation otherwise.
    target_gap : float, default 0.01
        Column generation stops once its figure is within this relative gap of the best certified lower bound
        (``TARGET_GAP``; strictly between 0 and 1).
    max_rounds : int, default 200
        Column generation stops after this many rounds (``MAX_ROUNDS``), its gap and the bound that limits it
        reported.
    time_limit : float or None, default 600
        Column generation stops at the first round that ends past this many seconds (``TIME_LIMIT``; None: no
        limit), the design found so far returned with its certified gap. ``target_gap``, ``max_rounds`` and
        ``time_limit`` apply to ``family="rr"`` with method "auto" or "columns" only.

    Returns
    -------
    Mechanism
        The designed mechanism: a TableMechanism, SubsetLIP, SubsetSelection, ClassSymmetricLIP, UnaryEncoding,
        LocalHashing or OLH (``FAMILIES`` says which family gives which). Its ``mse`` is its figure of the objective
        at the design prior and, for a designed table, ``optimality`` sets it beside the best certified lower
        bound.

    Raises
    ------
    ValidationError
        An input out of its range: an unknown family or method, epsilon below 1e-3, a value of probability 0 under
        LIP, a single value, an objective or notion the family is not designed for, ``buckets`` without
        ``family="hashing"``, column-generation options with another method.
    ProblemTooLargeError
        ``method="exact"`` where enumeration does not fit in ``max_rays`` (raised before the expensive work), or a
        latent secret or prior set past what enumeration handles.
    InfeasibleError
        The ray LP finds no table for the notion at this epsilon.
    SolverError
        A numerical back-end fails to converge or to certify its result.

    See Also
    --------
    compare : every family side by side.
    lipdesign.verify : the tightest epsilon of any table.

    Notes
    -----
    The exact method is the LP over the extreme rays of the notion's column cone (docs/math.md §5); the bounds a
    design is set beside are those of docs/math.md §10 and §11; column generation and its certified gap are
    docs/math.md §12. Every designer runs with one BLAS thread.

    Examples
    --------
    An LIP design and its certified epsilon:

    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> mechanism = ld.design(prior, ld.LIP(1.0))
    >>> mechanism
    TableMechanism(LIP eps=1, frequencies, k=3, ... outputs)
    >>> certificate = mechanism.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 1.0)
    >>> round(mechanism.mse, 4)
    1.2843

    A unary encoding instead, for the same prior and notion (a larger figure here):

    >>> unary = ld.design(prior, ld.LIP(1.0), family="unary", baselines=False)
    >>> type(unary).__name__, round(unary.mse, 3)
    ('UnaryEncoding', 6.606)

    A value of probability 0 cannot be protected under LIP:

    >>> ld.design([0.5, 0.5, 0.0], ld.LIP(1.0))
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: prior[2] is 0; LIP design needs every value to have positive probability ...
    """
    prior = prior if isinstance(prior, Prior) else Prior(prior)
    objective = Frequencies() if objective is None else as_objective(objective)
    max_rays = integer(max_rays, "max_rays")
    objective.check(prior.k)
    choice(family, "family", FAMILIES)
    choice(method, "method", METHODS)
    target_gap = _fraction(target_gap, "target_gap")
    max_rounds = integer(max_rounds, "max_rounds")
    if time_limit is not None and not real_number(time_limit, "time_limit") > 0:
        raise ValidationError(f"time_limit is {fmt(time_limit)}; it must be a positive number of seconds, or None")
    if family != "rr" and method != "auto":
        raise ValidationError(f"method is {method!r}; it chooses how family='rr' is designed (family is {family!r})")
    if (family != "rr" or method == "exact") and (target_gap != TARGET_GAP or max_rounds != MAX_ROUNDS or
                                                   time_limit != TIME_LIMIT):
        raise ValidationError(f"target_gap, max_rounds and time_limit set column generation (family='rr', method "
                              f"'auto' or 'columns'); here family is {family!r} and method {method!r}")
    if method == "classes" and not (isinstance(notion, LIP) and notion.secret is None and notion.prior_set is None
                                    and isinstance(objective, Frequencies) and prior.k <= MAX_CLASS_K):
        raise ValidationError(f"method is 'classes'; class-symmetric designs are made for ld.LIP for X itself "
                              f"(no secret, no prior set) and ld.Frequencies at k <= {MAX_CLASS_K} (here {notion!r}, "
                              f"{type(objective).__name__}, k = {prior.k})")
    if family not in ("hashing", "cms") and buckets != 2:
        raise ValidationError(f"buckets is {fmt(buckets)}; it sets the buckets of family='hashing' or 'cms' (family "
                              f"is {family!r})")
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
        label = "" if prior.labels[x] == x else f" (the value {prior.labels[x]!r})"
        raise ValidationError(
            f"prior[{x}]{label} is 0; LIP design needs every value to have positive probability "
            "(docs/math.md §1): drop the value, or build the prior with Prior.from_counts(..., pseudocount=...)")
    if prior.k < 2:
        raise ValidationError("prior has a single value; there is nothing to perturb")
    if family != "rr":
        {"unary": check_unary, "hashing": check_hashing, "cms": check_sketch}[family](prior, notion, objective)
        rr = None
        if baselines and prior.k <= MAX_RR_BASELINE_K and isinstance(notion, (LIP, LDP)):
            try:  # a baseline only: the encoding's design does not depend on it
                rr = design_table(prior, notion, objective, max_rays=max_rays, baselines=False).mse
            except (ProblemTooLargeError, SolverError, InfeasibleError):
                rr = None
        if family == "hashing" and buckets != 2:
            return hashing_design(prior, notion, objective, baselines=baselines, rr_optimum=rr, buckets=buckets)
        if family == "cms":
            return sketch_design(prior, notion, objective, m=None if buckets == 2 else buckets, baselines=baselines,
                                 rr_optimum=rr)
        encoding_design = unary_design if family == "unary" else hashing_design
        return encoding_design(prior, notion, objective, baselines=baselines, rr_optimum=rr)

    return design_table(prior, notion, objective, max_rays=max_rays, baselines=baselines, progress=progress,
                        method=method, target_gap=target_gap, max_rounds=max_rounds, time_limit=time_limit)
