"""Designed (or loaded) perturbation tables: the ``table`` family, and the estimators of a finite table.

Table convention (docs/math.md §1): ``Q`` has shape ``(k, n_out)``, ``Q[x, y] = Pr[Y=y | X=x]``, every row sums to
1. The estimators take the table and the report COUNTS (``counts[y]`` = number of reports equal to y; non-integer
expected counts are fine), in that order, and the design prior as a keyword: ``posterior(table, prior=...)``,
``mmse_frequencies(table, counts, prior=...)`` (docs/math.md §4), ``unbiased_frequencies(table, counts, prior=...)``
(GLS inversion, §4, §8), ``ibu_frequencies(table, counts)`` (maximum likelihood: EM, then Newton steps, §4). Numpy only.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.errors import ValidationError, VerificationError
from lipdesign.mechanisms.audit_plan import index_plan
from lipdesign.mechanisms.base import (
    EXACT_TABLE,
    Guarantee,
)
from lipdesign.mechanisms.designed import DesignedMechanism
from lipdesign.mechanisms.estimate import Estimate, shrinkage_note
from lipdesign.mechanisms.postprocess import CONSISTENCY, consistent
from lipdesign.mechanisms.sampling import TablePerturber, index_reports
from lipdesign.model import Prior
from lipdesign.notions import LDP, LIP, WorstCaseLIP, notion_from_dict
from lipdesign.objectives import as_objective, fisher_information, mean_quadratic
from lipdesign.validation import (
    MAX_EPSILON,
    choice,
    float_array,
    fmt,
    integer,
    non_negative,
    probability_vector,
    real_number,
)
from lipdesign.verification import check_table, verify_table

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.aggregate import Aggregate
    from lipdesign.mechanisms.audit_plan import AuditPlan
    from lipdesign.objectives import BayesHistogram, BayesSum, Frequencies, Mean

#: The estimate of a designed table: the histogram, or the mean or sum of f(X) over the users (Mean and BayesSum
#: designs).
WHAT = ("frequencies", "mean", "sum")

#: ``ibu_frequencies`` stops when the log-likelihood per report is within this of its maximum (bounded by the
#: gradient gap, or estimated by the Newton decrement, docs/math.md §4).
IBU_TOLERANCE = 1e-13



def _counts(counts, n_out, table=None):
    array = non_negative(float_array(counts, "counts", 1), "counts")
    if array.shape != (n_out,):
        raise ValidationError(f"counts has shape {array.shape}; it must have shape ({n_out},), one count per output "
                              "of the table")
    if not array.sum() > 0:
        raise ValidationError("counts sums to 0; at least one report is needed")
    if table is not None:
        impossible = (table.sum(axis=0) == 0) & (array > 0)
        if impossible.any():
            y = int(np.argmax(impossible))
            raise ValidationError(f"counts[{y}] is {fmt(array[y])} but column {y} of the table is all zero; a report "
                                  "the table can never produce must have count 0")
    return array


def posterior(table: npt.ArrayLike, *, prior: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The posterior of X given each output: ``post[y, x] = Pr[X=x | Y=y]``.

    ``post[y, x] = P_x Q[x, y] / (P.q_y)`` (docs/math.md §4), shape ``(n_out, k)``. An output with ``Pr[Y=y] = 0``
    gets the prior as its row, so every row is a distribution.

    Parameters
    ----------
    table : array_like of float
        The table ``Q``, shape ``(k, n_out)``, ``Q[x, y] = Pr[Y=y | X=x]``, every row summing to 1.
    prior : array_like of float
        The prior ``P`` of X, k probabilities summing to 1 (``Prior.probabilities``).

    Returns
    -------
    numpy.ndarray
        Shape ``(n_out, k)``: row y is the distribution of X given the report y.

    Raises
    ------
    ValidationError
        If ``table`` is not a non-negative table whose rows sum to 1, or ``prior`` is not a distribution with one
        entry per row.

    See Also
    --------
    mmse_frequencies : The histogram estimate built from these rows.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> from lipdesign.mechanisms import posterior
    >>> table = np.array([[0.75, 0.25], [0.25, 0.75]])  # randomized response, k = 2
    >>> np.round(posterior(table, prior=[0.2, 0.8]), 4)
    array([[0.4286, 0.5714],
           [0.0769, 0.9231]])
    """
    q = check_table(table)
    p = probability_vector(prior, "prior", length=q.shape[0])
    joint = p[:, None] * q
    evidence = joint.sum(axis=0)
    post = np.empty((q.shape[1], q.shape[0]))
    seen = evidence > 0
    post[seen] = joint[:, seen].T / evidence[seen, None]
    post[~seen] = p
    return post


def mmse_frequencies(table: npt.ArrayLike, counts: npt.ArrayLike, *, prior: npt.ArrayLike
                     ) -> npt.NDArray[np.float64]:
    """MMSE estimate of the histogram: ``sum_y (c_y / n) posterior[y]`` (docs/math.md §4).

    Each report is replaced by E[1[X=x] | Y=y]; the result is a distribution, biased toward the prior (on exact
    expected counts ``n * table.T @ prior`` it returns the prior).

    Parameters
    ----------
    table : array_like of float
        The table ``Q``, shape ``(k, n_out)``, every row summing to 1.
    counts : array_like of float
        The number of reports of each output, ``n_out`` non-negative numbers with a positive sum (expected,
        non-integer counts are fine).
    prior : array_like of float
        The prior of X the posterior is taken under (the design prior), k probabilities.

    Returns
    -------
    numpy.ndarray
        The k estimated frequencies, a distribution.

    Raises
    ------
    ValidationError
        If ``table`` or ``prior`` is malformed, or ``counts`` does not have one non-negative count per output, or
        sums to 0.

    See Also
    --------
    unbiased_frequencies : The unbiased estimate.
    posterior : The rows averaged here.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> from lipdesign.mechanisms import mmse_frequencies
    >>> table = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> np.round(mmse_frequencies(table, [400, 600], prior=[0.2, 0.8]), 4)  # truth (0.3, 0.7): pulled to the prior
    array([0.2176, 0.7824])
    >>> np.round(mmse_frequencies(table, [350, 650], prior=[0.2, 0.8]), 4)  # the prior's expected counts
    array([0.2, 0.8])
    """
    post = posterior(table, prior=prior)
    c = _counts(counts, post.shape[0])
    return (c / c.sum()) @ post


def _check_rank(q, what="table"):
    k, rank = q.shape[0], int(np.linalg.matrix_rank(q))
    if rank < k:
        raise ValidationError(f"{what} has rank {rank} < k = {k} (its {k} rows are linearly dependent), so no "
                              "unbiased estimate of the histogram exists; such a table can still estimate a mean in "
                              'its range (ld.Mean), or fit one histogram among many by method="mle"')


def gls_matrix(table: npt.ArrayLike, *, prior: npt.ArrayLike | None = None) -> npt.NDArray[np.float64]:
    """B with ``unbiased_frequencies(table, c, prior) = B @ (c / n)`` (k x n_out; docs/math.md §4, §11).

    The estimate minimises (c/n - Q^T f)^T W (c/n - Q^T f) subject to sum(f) = 1: W = D^-1, D = diag(Q^T prior)
    (GLS; outputs with D = 0 get weight 0), or W = I without ``prior``. With A = Q W Q^T, G = A^-1 Q W and
    u = A^-1 1, f = G c/n + u (1 - 1^T G c/n) / (1^T u), and since c/n sums to 1 this is B c/n with
    B = G + u (1^T - 1^T G) / (1^T u). Needs rank(Q) = k.
    """
    q = check_table(table)
    k, n_out = q.shape
    _check_rank(q)
    weights = np.ones(n_out)
    if prior is not None:
        mass = q.T @ probability_vector(prior, "prior", length=k)
        weights = np.divide(1.0, mass, out=np.zeros(n_out), where=mass > 0)
        if not (mass > 0).all():
            _check_rank(q[:, mass > 0], "table restricted to the outputs with positive probability under prior")
    weighted = q * weights
    inverse_gram = np.linalg.solve(weighted @ q.T, np.column_stack([weighted, np.ones(k)]))
    g, u = inverse_gram[:, :n_out], inverse_gram[:, n_out]
    return g + np.outer(u, 1.0 - g.sum(axis=0)) / u.sum()


def unbiased_frequencies(table: npt.ArrayLike, counts: npt.ArrayLike, *, prior: npt.ArrayLike | None = None
                         ) -> npt.NDArray[np.float64]:
    """Unbiased inversion of the report histogram (docs/math.md §4, §8): ``gls_matrix(table, prior) @ (c/n)``.

    Entries may be negative; they sum to 1. For GRR this is (C_v/n - q)/(p - q). With ``prior`` the inversion is
    generalised least squares weighted at the report distribution the prior gives, the smallest variance there
    (docs/math.md §11); without it, ordinary least squares. Either is unbiased at every true distribution.

    Parameters
    ----------
    table : array_like of float
        The table ``Q``, shape ``(k, n_out)``, every row summing to 1; it must have rank k.
    counts : array_like of float
        The number of reports of each output, ``n_out`` non-negative numbers with a positive sum.
    prior : array_like of float, optional
        The prior the weights are taken at (the design prior); by default None, equal weights.

    Returns
    -------
    numpy.ndarray
        The k estimated frequencies: they sum to 1, and may be negative (``norm_sub`` makes them a distribution).

    Raises
    ------
    ValidationError
        If the table has rank below k (no unbiased estimate exists; ``ibu_frequencies`` still fits one), or
        ``table``, ``counts`` or ``prior`` is malformed.

    See Also
    --------
    ibu_frequencies : The maximum-likelihood estimate, always a distribution.
    norm_sub : Projects an estimate onto the distributions.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> from lipdesign.mechanisms import unbiased_frequencies
    >>> table = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> np.round(unbiased_frequencies(table, [400, 600]), 4)  # the expected counts at the truth (0.3, 0.7)
    array([0.3, 0.7])
    >>> np.round(unbiased_frequencies(table, [200, 800], prior=[0.3, 0.7]), 4)  # outside [0, 1]
    array([-0.1,  1.1])
    >>> unbiased_frequencies([[0.5, 0.5], [0.5, 0.5]], [10, 10])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: table has rank 1 < k = 2 (its 2 rows are linearly dependent), so no unbiased
    estimate of the histogram exists; ...
    """
    matrix = gls_matrix(table, prior=prior)
    c = _counts(counts, matrix.shape[1])
    return matrix @ (c / c.sum())


def ibu_frequencies(table: npt.ArrayLike, counts: npt.ArrayLike, *, tol: float = IBU_TOLERANCE,
                    max_iter: int = 10_000, init: npt.ArrayLike | None = None) -> npt.NDArray[np.float64]:
    """Maximum-likelihood frequencies (docs/math.md §4); works for any table.

    The name is the iterative Bayesian update's, the EM algorithm that begins the fit.

    The log-likelihood per report, l(f) = sum_y (c_y/n) ln (Q^T f)_y, is concave, its gradient is
    g = Q @ ((c/n) / (Q^T f)) and sum_x f_x g_x = 1, so max_x g_x - 1 bounds l(f*) - l(f) (the Frank-Wolfe gap).
    The fit stops when that bound is below ``tol``, or when the Newton decrement (the second-order estimate of the
    same distance, far tighter near the maximum) is, with no value at 0 worth bringing back; a RuntimeWarning if
    ``max_iter`` steps, or rounding, stop it first (the last iterate is returned). From the uniform distribution (or
    ``init``), a few EM steps f <- f * g, then Newton steps on the values in use (EM alone crawls when the table hides
    much of X), dropping a value that a step takes to 0 and bringing back, by a line search, a value at 0 whose g_x
    exceeds 1. Every iterate is a distribution and every step raises l. Counts on an output the table can never produce
    are refused, and ``init`` must give positive probability to every output that was reported.

    Parameters
    ----------
    table : array_like of float
        The table ``Q``, shape ``(k, n_out)``, every row summing to 1 (any rank).
    counts : array_like of float
        The number of reports of each output, ``n_out`` non-negative numbers with a positive sum; 0 on every
        output the table never produces.
    tol : float, default 1e-13
        How close to its maximum the log-likelihood per report must be (``IBU_TOLERANCE``), > 0.
    max_iter : int, default 10000
        The most steps taken.
    init : array_like of float, optional
        The starting distribution; by default None, the uniform one.

    Returns
    -------
    numpy.ndarray
        The k frequencies that maximise the likelihood of the counts, a distribution (entries may be exactly 0).

    Raises
    ------
    ValidationError
        If ``counts`` has a positive count on an output the table never produces, or on one ``init`` gives
        probability 0, ``tol`` is not a finite number > 0, ``max_iter`` not an integer >= 1, or an input is
        malformed.

    Warns
    -----
    RuntimeWarning
        If ``max_iter`` steps, or rounding, stop the fit before ``tol`` is reached.

    See Also
    --------
    unbiased_frequencies : The unbiased estimate (entries may be negative).

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> from lipdesign.mechanisms import ibu_frequencies
    >>> table = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> np.round(ibu_frequencies(table, [400, 600]), 4)
    array([0.3, 0.7])
    >>> np.round(ibu_frequencies(table, [200, 800]), 4)  # the unbiased estimate is (-0.1, 1.1)
    array([0., 1.])

    A table of rank below k, which has no unbiased estimate, still gets a fit:

    >>> merged = np.array([[0.8, 0.2], [0.8, 0.2], [0.2, 0.8]])  # values 0 and 1 give the same reports
    >>> fit = ibu_frequencies(merged, [500, 500])
    >>> print(np.round(fit, 4), round(fit[0] + fit[1], 4))  # only the total of values 0 and 1 is determined
    [0.25 0.25 0.5 ] 0.5
    """
    q = check_table(table)
    k, n_out = q.shape
    c = _counts(counts, n_out, q)
    if not real_number(tol, "tol") > 0:
        raise ValidationError(f"tol is {fmt(tol)}; it must be a finite number > 0")
    max_iter = integer(max_iter, "max_iter")
    if init is None:
        f = np.full(k, 1.0 / k)
    else:
        f = probability_vector(init, "init", length=k)
        unreachable = (q.T @ f == 0) & (c > 0)
        if unreachable.any():
            y = int(np.argmax(unreachable))
            raise ValidationError(f"init gives output {y} probability 0 but counts[{y}] is {fmt(c[y])}; init must give "
                                  "positive probability to every reported output")
    fit = _Likelihood(q, c / c.sum())
    for step in range(max_iter):
        gradient = fit.gradient(f)
        gap = gradient.max() - 1.0
        if gap < tol:
            return f
        if step < EM_STEPS:
            new = f * gradient
            new /= new.sum()  # exact in exact arithmetic; removes rounding drift
        elif (revival := fit.revival_gains(f, gradient)).max() >= tol:
            new = fit.line_search(f, np.eye(k)[np.argmax(revival)] - f)
        else:
            new, decrement = fit.newton(f, gradient)
            if decrement < tol:
                return new
        if np.array_equal(new, f):
            break  # no step raises l measurably any more
        f = new
    warnings.warn(f"ibu_frequencies stopped after {step + 1} of max_iter={max_iter} steps with the log-likelihood "
                  f"within {gap:.3g} of its maximum, not {tol:g}; returning the last iterate", RuntimeWarning,
                  stacklevel=2)
    return f


#: An MLE frequency at most this is at the edge of the simplex (the estimate's note says what that means).
EDGE = 1e-12

#: EM steps before Newton's: enough to leave the uniform start and find which values are in use.
EM_STEPS = 20



class _Likelihood:
    """l(f) = sum_y w_y ln (Q^T f)_y with w the report frequencies: gradient, Newton step on the support, line
    search (docs/math.md §4)."""

    def __init__(self, table, frequencies):
        used = frequencies > 0
        self.q, self.w = table[:, used], frequencies[used]  # outputs never reported do not enter l

    def value(self, f):
        return float(self.w @ np.log(self.q.T @ f))

    def gradient(self, f):
        return self.q @ (self.w / (self.q.T @ f))

    def revival_gains(self, f, gradient):
        """For each value at 0, the rise of l along f + t (e_x - f) by its quadratic model, (g_x - 1)^2 / (2 curv)
        when g_x > 1; 0 for the others."""
        gains = np.zeros_like(f)
        rising = (f == 0) & (gradient > 1)
        if rising.any():
            predicted = self.q.T @ f
            curvature = ((self.q[rising] - predicted) ** 2 * (self.w / predicted**2)).sum(axis=1)
            gains[rising] = (gradient[rising] - 1) ** 2 / (2 * curvature)
        return gains

    def newton(self, f, gradient):
        """(f', decrement): one Newton step for l on {f_x > 0, sum f = 1}, cut where a value reaches 0 (which is then
        set to exactly 0 and leaves the support) and halved until l does not fall; decrement = d^T (-H) d, twice the
        rise of l's quadratic model (on the support it estimates l(f*) - l(f) to second order, where the gradient gap
        is only its square root)."""
        support = f > 0
        weights = np.sqrt(self.w) / (self.q.T @ f)
        part = self.q[support] * weights
        size = int(support.sum())
        system = np.block([[part @ part.T, np.ones((size, 1))], [np.ones((1, size)), np.zeros((1, 1))]])
        solution = np.linalg.lstsq(system, np.r_[gradient[support], 0.0], rcond=None)[0]
        direction = np.zeros_like(f)
        direction[support] = solution[:size]
        decrement = float(np.sum((part.T @ solution[:size]) ** 2))
        falling = np.flatnonzero(direction < 0)
        ratios = f[falling] / -direction[falling]
        limit = min(1.0, float(ratios.min())) if falling.size else 1.0
        base, t = self.value(f), limit
        floor = base - 4 * np.finfo(float).eps * abs(base)  # l "does not fall": within its rounding
        for _ in range(30):
            trial = np.maximum(f + t * direction, 0.0)
            if t == limit < 1.0:
                trial[falling[ratios <= limit]] = 0.0  # the blocking value leaves the support exactly
            trial /= trial.sum()
            if self.value(trial) >= floor:
                return trial, decrement
            t /= 2
        return f, decrement

    def line_search(self, f, direction):
        """f + t direction at the t in [0, 1] that maximises l (concave in t: bisection on its slope)."""
        low, high = 0.0, 1.0
        predicted, change = self.q.T @ f, self.q.T @ direction
        for _ in range(60):
            t = 0.5 * (low + high)
            low, high = (t, high) if self.w @ (change / (predicted + t * change)) > 0 else (low, t)
        trial = np.maximum(f + low * direction, 0.0)
        return trial / trial.sum()


def linear_covariance(table: npt.NDArray[np.float64], matrix: npt.NDArray[np.float64],
                      frequencies: npt.NDArray[np.float64], n: int) -> npt.NDArray[np.float64]:
    """Cov of ``matrix`` @ (report frequencies) for n users with true ``frequencies`` reporting through ``table``,
    given their values: the counts are sums of independent draws from the rows, so Cov(c/n) = (diag(Q^T f) -
    Q^T diag(f) Q)/n (docs/math.md §11)."""
    reports = (np.diag(table.T @ frequencies) - table.T @ (frequencies[:, None] * table)) / n
    return matrix @ reports @ matrix.T


class TableMechanism(DesignedMechanism):
    """A finite table with the notion it is verified against, the design prior and the design objective.

    ``TableMechanism(table, notion, prior, objective="frequencies", provenance=None)`` verifies the claim EXACTLY
    (rational arithmetic on the table its alias sampler realises, ``realized``, docs/math.md §3.2, §3.6) and
    refuses a table that breaks it (VerificationError); ``ld.design`` builds one, ``ld.load`` rebuilds one.
    Read-only afterwards.

    - ``table[x, y] = Pr[Y=y | X=x]`` as stored; ``realized``, what ``perturb`` draws from (counts over 2^53);
      ``prior``, ``notion``, ``objective``; ``labels`` of the values.
    - ``epsilons``: the exactly verified tightest epsilons under the claimed notion ("claimed"), plain LIP for X
      under the design prior ("LIP for X") and LDP ("LDP").
    - ``mse``: the figure of the design objective at the design prior (``objective.value``): n x the variance of
      the unbiased estimate for Frequencies and Mean, the per-user MSE of the MMSE estimate for the Bayesian
      objectives (docs/math.md §4, §11); ``optimality``: that figure beside the best lower bound and the gap;
      ``provenance``: what the design step recorded (method, solver, mix, ``baselines`` at the same epsilon).
    - ``estimate(reports, method=..., what=...)``: an ``ld.Estimate`` (see ``estimate``).

    Parameters
    ----------
    table : array_like of float
        The table, shape ``(k, n_out)``: ``table[x, y] = Pr[Y=y | X=x]``, non-negative, every row summing to 1
        (within 1e-9); k is the prior's.
    notion : LIP, WorstCaseLIP or LDP
        The claim, verified exactly on the table the sampler realises.
    prior : Prior or array_like of float
        The design prior of X (an array is made a ``Prior``, with labels 0..k-1).
    objective : Frequencies, Mean, BayesHistogram, BayesSum, str or dict, default "frequencies"
        The design objective (``ld.as_objective`` reads a name or its ``to_dict()``); it sets the default estimate
        and the figure ``mse``.
    provenance : dict, optional
        What the design step recorded (method, solver, ``baselines``, ...); by default None, a table built by hand.

    Raises
    ------
    ValidationError
        If ``notion`` is not LIP, WorstCaseLIP or LDP, does not fit the prior (sizes, a design prior outside its
        prior set), the objective does not fit k, or ``table`` is not a stochastic table with k rows.
    VerificationError
        If the table, as sampled, breaks the claim: its exact tightest epsilon exceeds the notion's.

    See Also
    --------
    lipdesign.design : Designs the optimal table.
    TablePerturber : The sampler, and the table it realises.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> prior = ld.Prior([0.5, 0.3, 0.2], labels=["a", "b", "c"])
    >>> table = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]  # randomized response: ln 3 = 1.0986-LDP
    >>> mech = ld.TableMechanism(table, ld.LDP(1.1), prior)
    >>> mech
    TableMechanism(LDP eps=1.1, frequencies, k=3, 3 outputs)
    >>> {name: round(eps, 4) for name, eps in mech.epsilons.items()}
    {'claimed': 1.0986, 'LIP for X': 0.7621, 'LDP': 1.0986}

    Reports of 1000 users, and the estimate beside the truth (0.5, 0.3, 0.2):

    >>> values = np.repeat([0, 1, 2], [500, 300, 200])
    >>> est = mech.estimate(mech.perturb(values, rng=0))
    >>> np.round(est.values, 3), np.round(est.standard_errors, 3)
    (array([0.46, 0.29, 0.25]), array([0.035, 0.034, 0.034]))

    A claim the table breaks is refused:

    >>> ld.TableMechanism(table, ld.LDP(1.0), prior)
    Traceback (most recent call last):
    ...
    lipdesign.errors.VerificationError: the table is not LDP with eps=1 as sampled: the tightest epsilon of the table
    its sampler realises is 1.09861228867 (exact verification), attained at ...

    ``ld.design`` returns one too:

    >>> designed = ld.design(prior, ld.LIP(1.0), baselines=False)
    >>> type(designed).__name__, round(designed.epsilons["claimed"], 6)
    ('TableMechanism', 1.0)
    """

    family = "table"
    design_family = "rr"
    methods = ("unbiased", "mle", "mmse", "ibu")
    epsilon_range = (0.0, MAX_EPSILON)  # the notions' range (lipdesign.validation.MAX_EPSILON)

    def __init__(self, table: npt.ArrayLike, notion: LDP | LIP | WorstCaseLIP, prior: Prior | npt.ArrayLike,
                 objective: Frequencies | Mean | BayesHistogram | BayesSum | str | Mapping[str, Any] = "frequencies",
                 *, provenance: Mapping[str, Any] | None = None) -> None:
        self.prior = prior if isinstance(prior, Prior) else Prior(prior)
        if not isinstance(notion, (LDP, LIP, WorstCaseLIP)):
            raise ValidationError(f"notion is {notion!r}; it must be ld.LIP, ld.WorstCaseLIP or ld.LDP")
        notion.check(self.prior)  # sizes, and the design prior inside a prior set (scipy for a general polytope)
        self.notion = notion
        self.objective = as_objective(objective)
        self.objective.check(self.prior.k)
        table = np.array(check_table(table, self.prior.k), dtype=float)
        table.setflags(write=False)
        self.table = table
        self.input_domain = self.prior.domain
        self.sampler = TablePerturber(table)
        realized = self.sampler.realized_table()  # what perturb draws from: the guarantee is checked on it
        realized.setflags(write=False)
        self.realized = realized
        claimed = verify_table(realized, notion, self.prior, exact=True)
        if not claimed.passed:
            raise VerificationError(f"the table is not {notion.kind} with eps={notion.epsilon:g} as sampled: the "
                                    f"tightest epsilon of the table its sampler realises is {claimed.epsilon:.12g} "
                                    f"(exact verification), attained at {claimed.worst}")
        self._record(claimed, {"claimed": claimed.epsilon,
                               "LIP for X": verify_table(realized, LIP(notion.epsilon), self.prior, exact=True).epsilon,
                               "LDP": verify_table(realized, LDP(notion.epsilon), self.prior, exact=True).epsilon},
                     provenance)

    def _design_figure(self):
        return self.objective.value(self.table, self.prior)

    def parameters(self) -> dict[str, Any]:
        return {"prior": self.prior.to_dict(), "notion": self.notion.to_dict(), "objective": self.objective.to_dict(),
                "table": self.table.tolist()}

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> Self:
        return cls(parameters["table"], notion_from_dict(parameters["notion"]), Prior.from_dict(parameters["prior"]),
                   parameters["objective"], provenance=provenance)

    @classmethod
    def example(cls) -> Self:
        """The exactly eps-LIP binary channel of docs/math.md §6 at P = (0.2, 0.8), eps = 0.6.

        Flip the rare value with 1/(1+e^eps), the common one with (1 - p e^eps)/((1+e^eps)(1-p)), as designed
        tables store it (mixed with 1e-9 of the uniform table).

        Returns
        -------
        TableMechanism
            The channel, with the labels "rare" and "common".

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> mech = ld.TableMechanism.example()
        >>> mech, mech.labels
        (TableMechanism(LIP eps=0.6, frequencies, k=2, 2 outputs), ('rare', 'common'))
        >>> np.round(mech.table, 4)
        array([[0.6457, 0.3543],
               [0.2815, 0.7185]])
        """
        e, p = math.exp(0.6), 0.2
        rare, common = 1.0 / (1.0 + e), (1.0 - p * e) / ((1.0 + e) * (1.0 - p))
        mix = 1e-9  # mixed with the uniform table: every ratio moves off the boundary (docs/math.md §3.4)
        table = np.array([[1.0 - rare, rare], [common, 1.0 - common]]) * (1.0 - mix) + mix / 2
        return cls(table, LIP(0.6), Prior([p, 1.0 - p], labels=["rare", "common"]))

    @property
    def labels(self) -> tuple[str | int, ...]:
        """The labels of the values of X, the design prior's (``prior.labels``)."""
        return self.prior.labels

    @property
    def guarantee(self) -> Guarantee:
        detail = []
        secret, prior_set = getattr(self.notion, "secret", None), getattr(self.notion, "prior_set", None)
        if secret is not None:
            detail.append(f"for a latent secret of {secret.m} values")
        if prior_set is not None:
            detail.append(f"over a {prior_set.kind} prior set")
        return Guarantee(self.notion.kind, self.notion.epsilon, EXACT_TABLE, ", ".join(detail))

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The table the sampler realises (``TablePerturber.realized_table``), on which the guarantee is verified.

        Returns
        -------
        numpy.ndarray
            ``realized``: shape ``(k, n_out)``, read-only, each entry a multiple of 2^-53 within about 1e-16 of
            ``table``.
        """
        return self.realized

    def __repr__(self) -> str:
        return (f"TableMechanism({self.notion.kind} eps={self.notion.epsilon:g}, {self.objective.kind}, "
                f"k={self.prior.k}, {self.table.shape[1]} outputs)")

    def revealed(self, confidence: float = 0.99) -> npt.NDArray[np.float64]:
        """Per value x, the probability that its report all but reveals it.

        The probability that a user with X = x sends a report whose posterior (under the design prior) puts at
        least ``confidence`` on x: 1 means the value is released in the clear. LIP for a latent secret allows this
        wherever X says little about the secret (docs/math.md §2, release without noise).

        Parameters
        ----------
        confidence : float, default 0.99
            The posterior probability from which a report counts as revealing its value.

        Returns
        -------
        numpy.ndarray
            One probability per value of X.

        Examples
        --------
        >>> import lipdesign as ld
        >>> table = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
        >>> mech = ld.TableMechanism(table, ld.LDP(1.1), ld.Prior([0.5, 0.3, 0.2]))
        >>> mech.revealed()  # no report is that telling
        array([0., 0., 0.])
        >>> mech.revealed(confidence=0.5)  # reports 0 and 1 make their values more likely than not
        array([0.6, 0.6, 0. ])
        """
        post = posterior(self.table, prior=self.prior.probabilities)  # (n_out, k)
        return (self.table * (post.T >= confidence)).sum(axis=1)

    #: The population size at which ``summary`` states standard errors, and how many it lists.
    SUMMARY_N = 10**6
    SUMMARY_VALUES = 20
    verified_on = "the table the sampler realises"

    def _summary_title(self):
        return (f"{self.notion.kind} eps={self.notion.epsilon:g}, k={self.prior.k}, {self.table.shape[1]} outputs, "
                f"designed for {type(self.objective).__name__}" +
                (" (per-user Bayesian MSE)" if not self.objective.population else ""))

    def _summary_notes(self):
        """A latent secret allows X to be released in the clear where X says little about the secret: say so."""
        revealed = self.revealed()
        if getattr(self.notion, "secret", None) is None or not (revealed >= 0.5).any():
            return []
        names = [str(self.labels[x]) for x in np.flatnonzero(revealed >= 0.5)]
        return [f"  WARNING: the table protects the secret, not X: {len(names)} of {self.prior.k} values "
                f"({', '.join(names)}) are revealed (posterior >= 0.99) in at least half of their reports; "
                f"LIP for X is {self.epsilons['LIP for X']:.3g}"]

    def _summary_accuracy(self):
        objective = self.objective
        if objective.population:
            estimate = f"the unbiased estimate of the {'histogram' if objective.kind == 'frequencies' else 'mean'}"
            heading = (f"  accuracy: n x {'sum of the variances' if objective.kind == 'frequencies' else 'variance'}"
                       f" of {estimate}, at the design prior, given the users' values (docs/math.md §11)")
        else:
            heading = ("  accuracy: per-user MSE of the MMSE estimate under the design prior (right only if the prior "
                       "is the truth; docs/math.md §4)")
        return [heading, f"    this table: {self.mse:.6g}"]

    def _summary_baselines(self):
        """The alternatives at the same epsilon and at twice it (the LDP level eps-LIP implies)."""
        lines, secret = [], getattr(self.notion, "secret", None)
        for suffix, level in (("", self.notion.epsilon), (" at 2 eps", 2 * self.notion.epsilon)):
            row = {name[: len(name) - len(suffix)] if suffix else name: value for name, value in self.baselines.items()
                   if name.endswith(" at 2 eps") == bool(suffix)}
            if row:
                heading = f"at eps={level:g}" + (" (the LDP level eps-LIP implies)" if suffix else "")
                heading += " (LDP protects X itself)" if secret is not None else ""
                lines.append(f"    {heading}: " + ", ".join(f"{name} {value:.4g}" for name, value in
                                                            sorted(row.items(), key=lambda item: item[1])))
        return lines

    def _summary_details(self):
        """The standard errors of the default estimate at SUMMARY_N users from the design prior."""
        if not self.objective.population:
            return []
        if not np.isfinite(self.mse):
            return ["  no unbiased estimate: the table cannot see every value (its information matrix is singular "
                    "for this objective)"]
        errors = np.atleast_1d(np.sqrt(np.maximum(self.variance(n=self.SUMMARY_N), 0.0)))
        shown = ", ".join(f"{value:.2g}" for value in errors[:self.SUMMARY_VALUES])
        if errors.size > self.SUMMARY_VALUES:
            shown += (f", ... (the first {self.SUMMARY_VALUES} of {errors.size}: smallest {errors.min():.2g}, median "
                      f"{np.median(errors):.2g}, largest {errors.max():.2g}; mech.variance(n=...) gives them all)")
        return [f"  standard error{'s of the frequencies' if errors.size > 1 else ''} at n = {self.SUMMARY_N:.0e} "
                f"(design prior): {shown}"]

    # -- perturb, aggregate, estimate ------------------------------------------------------------------------
    client_cost = "O(1) per report (an alias table per value)"

    @property
    def report_bits(self) -> int:
        return max(1, math.ceil(math.log2(self.table.shape[1])))

    def _perturb(self, values, rng, user_ids):
        return self.sampler.sample(values, rng)

    def _statistics(self, reports):
        reports = index_reports(reports, self.table.shape[1])
        return reports.size, {"counts": np.bincount(reports, minlength=self.table.shape[1])}

    def _what(self, what):
        values = getattr(self.objective, "values", None)
        if what is None:
            return {"mean": "mean", "weighted_sum": "sum"}.get(self.objective.kind, "frequencies")
        if what == "histogram":
            warnings.warn('what="histogram" is deprecated since 0.3.0 and will be removed in 0.4.0: say '
                          'what="frequencies" (ld.Histogram names the Bayesian objective, not this)',
                          DeprecationWarning, stacklevel=3)
            what = "frequencies"
        what = choice(what, "what", WHAT)
        if what != "frequencies" and values is None:
            raise ValidationError(f"what is {what!r}; it needs a mechanism designed for ld.Mean(values) or "
                                  "ld.BayesSum(values)")
        return what

    def _values(self):  # for a mean or a sum only, whose objective has values (_what refuses any other)
        return np.asarray(cast("Mean | BayesSum", self.objective).values, dtype=float)

    def _mean_weights(self, prior):
        """g with c . f^ = g . (c/n) unbiased at every truth (docs/math.md §11): g = D^-1 Q^T M^+ c at ``prior``
        (D = diag(Q^T prior)); needs c in the range of M, not rank(Q) = k."""
        q, c = self.table, self._values()
        information = fisher_information(q, prior)
        if not np.isfinite(mean_quadratic(information, c)):
            raise ValidationError("objective.values lie partly outside what the table can estimate (the range of its "
                                  "information matrix): no unbiased estimate of their mean exists from its reports")
        mass = q.T @ prior
        return np.divide(q.T @ (np.linalg.pinv(information, rcond=1e-10, hermitian=True) @ c), mass,
                         out=np.zeros(q.shape[1]), where=mass > 0)

    def _linear(self, method, what, frequencies=None):
        """The vector or matrix E with estimate = E (c/n) for the linear methods (mmse, unbiased), weighted at the
        design prior (or at ``frequencies`` for the plug-in errors of the MLE)."""
        weights = self.prior.probabilities if frequencies is None else frequencies
        if what == "frequencies":
            if method == "mmse":
                return posterior(self.table, prior=weights).T
            return gls_matrix(self.table, prior=weights)
        if method == "mmse":
            return self._values() @ posterior(self.table, prior=weights).T
        return self._mean_weights(weights)

    def estimate(self, reports: npt.ArrayLike | Aggregate, *, method: str | None = None,
                 consistency: str | None = None, what: str | None = None) -> Estimate:
        """The estimate from reports or their Aggregate, as an ``ld.Estimate``.

        An array with standard errors and confidence intervals (docs/math.md §11): the histogram
        (``what="frequencies"``), or the mean or sum of the objective's values over the users (``"mean"``,
        ``"sum"``; the default for Mean and BayesSum designs).

        ``method``: "unbiased" (GLS weighted at the design prior: unbiased at every true distribution; the default
        for the population objectives), "mle" (maximum likelihood: EM, then Newton steps to the maximum,
        ``ibu_frequencies``; "ibu" is its old name), "mmse" (posterior means under the design prior: biased toward it,
        so it warns; the default of the Bayesian objectives). Standard errors are plug-in, given the users' values (the
        convention of ``variance`` and ``mse``): the covariance of the report frequencies at the estimated
        frequencies, (diag(Q^T f^) - Q^T diag(f^) Q)/n, through the linear estimator (for the MLE, the GLS estimator
        weighted at the MLE). ``consistency="norm-sub"`` projects the frequencies onto the simplex (Euclidean,
        which never increases the total squared error); the errors and intervals then refer to ``raw``.

        Parameters
        ----------
        reports : array_like of int or Aggregate
            The reports (output indices in 0..n_out-1, as ``perturb`` returns them), or their Aggregate (the same
            estimate).
        method : {"unbiased", "mle", "mmse", "ibu"}, optional
            The estimator; by default None, ``default_method`` ("unbiased" for the population objectives, "mmse"
            for the Bayesian ones).
        consistency : {"norm-sub"}, optional
            Make the frequencies a distribution; by default None, the raw estimate.
        what : {"frequencies", "mean", "sum"}, optional
            What to estimate; by default None, the mean for a Mean design, the sum for a BayesSum one, else the
            frequencies. "mean" and "sum" need an objective with values (Mean or BayesSum).

        Returns
        -------
        Estimate
            The values with their standard errors (nan for "mmse") and ``n``, ``method``, ``note``.

        Raises
        ------
        ValidationError
            If the reports are not output indices of this table (or the aggregate is another mechanism's, or
            holds no report), ``method``, ``consistency`` or ``what`` is not one of its spellings, ``consistency``
            is asked of a mean or sum, "unbiased" is asked of a table of rank below k (use "mle"), or the
            objective's values lie partly outside what the table can estimate.

        Warns
        -----
        ShrinkageWarning
            For ``method="mmse"``: the estimate is pulled toward the design prior.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> table = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
        >>> mech = ld.TableMechanism(table, ld.LDP(1.1), ld.Prior([0.5, 0.3, 0.2], labels=["a", "b", "c"]))
        >>> reports = mech.perturb(np.repeat([0, 1, 2], [500, 300, 200]), rng=0)
        >>> print(mech.estimate(reports))
        frequencies from n = 1000 reports, method 'unbiased'
          frequency[a]: 0.46 +- 0.035 (95% interval 0.391261 .. 0.528739)
          frequency[b]: 0.29 +- 0.034 (95% interval 0.223679 .. 0.356321)
          frequency[c]: 0.25 +- 0.034 (95% interval 0.184261 .. 0.315739)
        >>> np.round(mech.estimate(reports, method="mle").values, 3)
        array([0.46, 0.29, 0.25])

        The mean of values 0, 1, 2 over the users (the truth is 0.7), with a Mean design:

        >>> mean = ld.TableMechanism(table, ld.LDP(1.1), ld.Prior([0.5, 0.3, 0.2]), ld.Mean([0.0, 1.0, 2.0]))
        >>> est = mean.estimate(mean.perturb(np.repeat([0, 1, 2], [500, 300, 200]), rng=0))
        >>> print(round(float(est), 3), np.round(est.standard_errors, 3))
        0.79 [0.06]
        """
        what = self._what(what)
        method = self._method(method)
        consistency = None if consistency is None else choice(consistency, "consistency", CONSISTENCY)
        if consistency is not None and what != "frequencies":
            raise ValidationError(f"consistency is {consistency!r}; it applies to frequencies, not to a {what}")
        aggregate = self._aggregate_of(reports)
        note = ""
        if method == "mmse":
            note = shrinkage_note("'unbiased' or 'mle'")
        n, observed = aggregate.n, aggregate["counts"] / aggregate.n
        report_covariance: Any = None if method == "mmse" else self._plug_in_covariance(aggregate, n)
        linear = (self._linear("mmse" if method == "mmse" else "unbiased", what)
                  if method not in ("mle", "ibu") else None)
        if linear is None:
            mle = ibu_frequencies(self.table, aggregate["counts"])
            raw = mle if what == "frequencies" else np.atleast_1d(self._values() @ mle)
            try:  # the large-sample errors of the MLE: those of the GLS estimate weighted at the MLE
                linear = self._linear("unbiased", what, mle)
            except ValidationError as error:
                note = f"no standard errors: {error}"
            else:
                at_zero = [name for name, value in zip(self.input_domain.names(), mle) if value <= EDGE]
                if at_zero:
                    note = (f"the MLE puts {', '.join(map(str, at_zero))} at 0, the edge of the simplex, where it is "
                            "not normal: if a true frequency is 0, its MLE is on average about 0.4 of its standard "
                            "error too high and spreads about 0.6 times as much as that error says (docs/math.md "
                            "§11)" + (f"; the {what} computed from it is affected too" if what != "frequencies" else "")
                            + "; method='unbiased' is exactly unbiased")
        else:
            raw = np.atleast_1d(linear @ observed)
        if linear is None or method == "mmse":
            errors = np.full(raw.shape, np.nan)
        elif what == "frequencies":
            errors = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", linear, report_covariance, linear), 0.0))
        else:
            errors = np.atleast_1d(np.sqrt(max(float(linear @ report_covariance @ linear), 0.0)))
        values = consistent(raw, consistency) if consistency is not None else raw
        names = self.input_domain.names() if what == "frequencies" else [what]
        if what == "sum":
            values, raw, errors = values * n, raw * n, errors * n
        return Estimate(values, errors, n=n, method=method, kind="frequencies" if what == "frequencies" else what,
                        names=names, raw=raw, note=note)

    def _plug_in_covariance(self, aggregate, n):
        """Cov(c/n) given the users' values, (diag(Q^T f) - Q^T diag(f) Q)/n, at a plug-in f: the unbiased estimate
        projected onto the simplex (Norm-Sub) when the table has rank k, else the maximum-likelihood fit
        (docs/math.md §11)."""
        counts = aggregate["counts"]
        if np.linalg.matrix_rank(self.table) == self.prior.k:
            plug_in = consistent(unbiased_frequencies(self.table, counts, prior=self.prior.probabilities), "norm-sub")
        else:
            with warnings.catch_warnings():  # a plug-in needs no more than a close fit
                warnings.simplefilter("ignore", RuntimeWarning)
                plug_in = ibu_frequencies(self.table, counts, tol=1e-8)
        return self._covariance_with(np.eye(self.table.shape[1]), plug_in, n)

    def _estimator_matrix(self, method, what="frequencies", frequencies=None):
        """The linear estimator (mmse, unbiased); for the MLE its large-sample equivalent, the GLS estimator weighted
        at the true ``frequencies``."""
        if method in ("mle", "ibu"):
            return self._linear("unbiased", what, frequencies)
        return self._linear(method, what)

    def _expected(self, frequencies, method, user_ids):
        if method != "mmse":
            return frequencies  # unbiased; for the MLE, asymptotically
        return self._estimator_matrix(method) @ (self.table.T @ frequencies)

    def covariance(self, frequencies: npt.ArrayLike | None = None, n: int | None = 1, *,
                   method: str | None = None) -> npt.NDArray[np.float64]:
        """Cov of the estimated histogram for n users with true ``frequencies``, given their values.

        The counts are sums of independent draws from the rows of Q, so Cov(c/n) = (diag(Q^T f) - Q^T diag(f) Q)/n
        and Cov = E Cov(c/n) E^T (E: the linear estimator; for the MLE, the large-sample covariance: E the GLS
        estimator weighted at f; docs/math.md §11).

        Parameters
        ----------
        frequencies : array_like of float, optional
            The true frequencies of the n users; by default None, the design prior.
        n : int, default 1
            The number of users (None: 1).
        method : {"unbiased", "mle", "mmse", "ibu"}, optional
            The estimator; by default None, ``default_method``.

        Returns
        -------
        numpy.ndarray
            Shape ``(k, k)``: the covariance of the estimated frequencies (its diagonal is ``variance``).

        Raises
        ------
        ValidationError
            If ``frequencies`` is not a distribution over the k values, ``n`` not an integer >= 1, ``method`` not
            one of ``methods``, or the unbiased estimate does not exist (a table of rank below k).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> table = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
        >>> mech = ld.TableMechanism(table, ld.LDP(1.1), ld.Prior([0.5, 0.3, 0.2]))
        >>> np.round(mech.covariance(n=100), 5)
        array([[ 0.0125, -0.0065, -0.006 ],
               [-0.0065,  0.0115, -0.005 ],
               [-0.006 , -0.005 ,  0.011 ]])
        """
        frequencies, n = self._population(frequencies, n)
        return self._covariance_with(self._estimator_matrix(self._method(method), "frequencies", frequencies),
                                     frequencies, n)

    def _covariance_with(self, matrix, frequencies, n):
        return linear_covariance(self.table, matrix, frequencies, n)

    def _variance(self, frequencies, n, method, user_ids):
        return np.diag(self.covariance(frequencies, n, method=method)).copy()

    def expected_estimate(self, frequencies: npt.ArrayLike | None = None, n: int | None = 1, *,
                          method: str | None = None, user_ids: npt.ArrayLike | None = None,
                          what: str | None = None) -> Any:
        """E[estimate] for true ``frequencies`` (default: the design prior) and n users (the sum scales with n).

        The truth for the unbiased estimate (and, in large samples, the MLE); the MMSE estimate's is pulled toward
        the design prior.

        Parameters
        ----------
        frequencies : array_like of float, optional
            The true frequencies of the users; by default None, the design prior.
        n : int, default 1
            The number of users (None: 1); only the sum depends on it.
        method : {"unbiased", "mle", "mmse", "ibu"}, optional
            The estimator; by default None, ``default_method``.
        user_ids : array_like of int, optional
            Not used by a table, which keys no public randomness by user id: must be None for the frequencies.
        what : {"frequencies", "mean", "sum"}, optional
            What is estimated, as for ``estimate``.

        Returns
        -------
        numpy.ndarray or float
            The expected frequencies (k values), or the expected mean or sum.

        Raises
        ------
        ValidationError
            If an argument is not one its rule allows (as for ``variance``).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> table = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
        >>> mech = ld.TableMechanism(table, ld.LDP(1.1), ld.Prior([0.5, 0.3, 0.2]))
        >>> np.round(mech.expected_estimate([0.2, 0.3, 0.5]), 4)
        array([0.2, 0.3, 0.5])
        >>> np.round(mech.expected_estimate([0.2, 0.3, 0.5], method="mmse"), 4)  # toward the prior
        array([0.4529, 0.3077, 0.2394])
        """
        what = self._what(what)
        if what == "frequencies":
            return super().expected_estimate(frequencies, n, method=method, user_ids=user_ids)
        frequencies, n = self._population(frequencies, n)
        vector = self._estimator_matrix(self._method(method), what, frequencies)
        mean = float(vector @ (self.table.T @ frequencies))
        return mean * n if what == "sum" else mean

    def variance(self, frequencies: npt.ArrayLike | None = None, n: int | None = 1, *, method: str | None = None,
                 user_ids: npt.ArrayLike | None = None, what: str | None = None) -> Any:
        """The variance of each estimated frequency, or of the estimated mean or sum, given the users' values.

        For true ``frequencies`` (default: the design prior) and n users (default 1: n x the variance is the figure
        of docs/math.md §11).

        Parameters
        ----------
        frequencies : array_like of float, optional
            The true frequencies of the users; by default None, the design prior.
        n : int, default 1
            The number of users (None: 1).
        method : {"unbiased", "mle", "mmse", "ibu"}, optional
            The estimator; by default None, ``default_method`` (for the MLE, its large-sample variance).
        user_ids : array_like of int, optional
            Not used by a table, which keys no public randomness by user id: must be None for the frequencies.
        what : {"frequencies", "mean", "sum"}, optional
            What is estimated, as for ``estimate``.

        Returns
        -------
        numpy.ndarray or float
            The variance of each of the k estimated frequencies, or that of the estimated mean or sum.

        Raises
        ------
        ValidationError
            If ``frequencies`` is not a distribution over the k values, ``n`` not an integer >= 1, ``method`` or
            ``what`` not one of its spellings, ``user_ids`` given for the frequencies, or the estimate has no
            finite variance (a table of rank below k, values outside what the table can estimate).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> table = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
        >>> mech = ld.TableMechanism(table, ld.LDP(1.1), ld.Prior([0.5, 0.3, 0.2]))
        >>> np.round(mech.variance(n=100), 5)
        array([0.0125, 0.0115, 0.011 ])
        >>> print(f"{mech.variance().sum():.4f}")  # n x the sum of the variances: the design figure
        3.5000
        """
        what = self._what(what)
        if what == "frequencies":
            return super().variance(frequencies, n, method=method, user_ids=user_ids)
        frequencies, n = self._population(frequencies, n)
        vector = self._estimator_matrix(self._method(method), what, frequencies)
        variance = float(self._covariance_with(vector[None, :], frequencies, n)[0, 0])
        return variance * n**2 if what == "sum" else variance

    def estimand(self, values: Any, what: str | None = None) -> Any:
        """What the estimate estimates, computed from the users' values: their frequencies, mean or sum.

        Parameters
        ----------
        values : array_like of int or str
            The users' values (labels or indices, as ``perturb`` takes them).
        what : {"frequencies", "mean", "sum"}, optional
            As for ``estimate``; by default None, the design's default.

        Returns
        -------
        numpy.ndarray or float
            The k frequencies of the values, or the mean or sum of the objective's values over the users.

        Raises
        ------
        ValidationError
            If a value is not in the input domain, or ``what`` is not one the objective allows.

        Examples
        --------
        >>> import lipdesign as ld
        >>> table = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
        >>> mech = ld.TableMechanism(table, ld.LDP(1.1), ld.Prior([0.5, 0.3, 0.2]), ld.Mean([0.0, 1.0, 2.0]))
        >>> print(mech.estimand([0, 1, 2, 2]), mech.estimand([0, 1, 2, 2], what="sum"))
        1.25 5.0
        """
        frequencies = self.input_domain.truth(values)
        what = self._what(what)
        if what == "frequencies":
            return frequencies
        mean = float(frequencies @ self._values())
        return mean * len(values) if what == "sum" else mean

    def estimand_names(self, what: str | None = None) -> list[str]:
        """The names of the entries of the estimate (``Estimate.names``).

        Parameters
        ----------
        what : {"frequencies", "mean", "sum"}, optional
            As for ``estimate``; by default None, the design's default.

        Returns
        -------
        list of str
            A name per value of X for the frequencies, else ``[what]``.

        Raises
        ------
        ValidationError
            If ``what`` is not one the objective allows.
        """
        what = self._what(what)
        return [what] if what != "frequencies" else self.input_domain.names()

    def audit_plan(self) -> AuditPlan:
        return index_plan(self, np.asarray)

    def device_numbers(self) -> dict[str, Any]:
        """The alias tables a device samples the rows with (docs/runtime.md §4).

        Returns
        -------
        dict
            ``k``, ``n_out`` and the integer alias tables of ``TablePerturber.device_numbers``.
        """
        return {"k": self.table.shape[0], "n_out": self.table.shape[1], **self.sampler.device_numbers()}

    def display_name(self) -> str:
        """What the table is, in words, for summaries and the CLI.

        Returns
        -------
        str
            "randomized response (optimal table), N outputs" for a design; local hashing's table names its g and
            pool; "table mechanism, N outputs" for a table built by hand.
        """
        provenance = self.provenance or {}
        if "buckets" in provenance:
            return f"local hashing (g = {provenance['buckets']}, pool of {len(provenance['hashes'])})"
        if not self.provenance:  # a table built by hand records no design
            return f"table mechanism, {self.table.shape[1]} outputs"
        return f"randomized response (optimal table), {self.table.shape[1]} outputs"
