"""Runtime estimators for a finite perturbation table (numpy only).

Convention: every estimator takes the report COUNTS ``counts`` (length ``n_out``; ``counts[y]`` = number of
reports equal to ``y``), not the reports themselves; ``lipdesign.runtime.counts(reports, n_out)`` converts.
Counts may be non-integer (e.g. expected counts ``n * table.T @ prior``) but must be finite, >= 0 and have a
positive total ``n``. Tables follow MATH §1: ``Q[x, y] = Pr[Y=y | X=x]``, shape ``(k, n_out)``.
Every estimate is of the histogram ``f`` (fraction of users with each input value, length ``k``).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.runtime.perturb import fmt, validate_table
from lipdesign.validation import float_array, non_negative, probability_vector


def _validate_counts(c, n_out: int, q: np.ndarray | None = None) -> np.ndarray:
    arr = non_negative(float_array(c, "counts", 1), "counts")
    if arr.shape != (n_out,):
        raise ValidationError(
            f"counts has shape {arr.shape}; must have shape ({n_out},), one count per output of the table "
            "(convert reports with lipdesign.runtime.counts(reports, n_out))"
        )
    if not arr.sum() > 0:
        raise ValidationError("counts sums to 0; at least one report is needed")
    if q is not None:
        impossible = (q.sum(axis=0) == 0) & (arr > 0)
        if impossible.any():
            y = int(np.argmax(impossible))
            raise ValidationError(
                f"counts[{y}] is {fmt(arr[y])} but column {y} of the table is all zero; "
                "a report the table can never produce must have count 0"
            )
    return arr


def posterior(table, prior) -> np.ndarray:
    """Posterior ``post[y, x] = Pr[X=x | Y=y] = P_x Q[x, y] / (P . q_y)`` (MATH §4), shape ``(n_out, k)``.

    An output with ``Pr[Y=y] = 0`` (never produced under ``prior``) gets the prior as its row, so every row
    is a distribution.
    """
    q = validate_table(table)
    p = probability_vector(prior, "prior", length=q.shape[0])
    joint = p[:, None] * q  # (k, n_out): Pr[X=x, Y=y]
    py = joint.sum(axis=0)
    post = np.empty((q.shape[1], q.shape[0]))
    seen = py > 0
    post[seen] = joint[:, seen].T / py[seen, None]
    post[~seen] = p
    return post


def mmse_frequencies(table, prior, counts) -> np.ndarray:
    """MMSE estimate of the histogram: ``sum_y (c_y / n) * posterior[y]`` (MATH §4).

    Each user's report is replaced by E[1[X=x] | Y=y]; the result is a distribution (non-negative, sums to 1)
    and is biased toward the prior. On exact expected counts ``n * table.T @ prior`` it returns ``prior``.
    """
    post = posterior(table, prior)
    c = _validate_counts(counts, post.shape[0])
    return (c / c.sum()) @ post


def _check_rank(q: np.ndarray, what: str = "table") -> None:
    k = q.shape[0]
    r = int(np.linalg.matrix_rank(q))
    if r < k:
        raise ValidationError(
            f"{what} has rank {r} < k = {k} (its {k} rows are linearly dependent), so no unbiased estimate "
            'exists; use ibu_frequencies or mmse_frequencies (method="ibu" or "mmse") instead'
        )


def unbiased_frequencies(table, counts, prior=None) -> np.ndarray:
    """Unbiased inversion of the report histogram (MATH §4, §8); entries may be negative, they sum to 1.

    Needs ``rank(table) == k`` (hence ``n_out >= k``), else ``ValidationError``. Solves the least-squares problem
    ``min (c/n - Q^T f)^T W (c/n - Q^T f)`` subject to ``sum(f) = 1``:
    with ``prior`` the GLS weights ``W = D^-1``, ``D = diag(table.T @ prior)``, i.e.
    ``f = (Q D^-1 Q^T)^-1 Q D^-1 (c/n)`` (outputs with D = 0 are dropped and their counts ignored; when none
    is dropped the GLS solution already sums to 1); without ``prior``, ordinary least squares (``W = I``; the exact solve
    ``Q^T f = c/n`` when the table is square). The constraint keeps the estimate unbiased because the true
    ``f`` meets it. For GRR this is ``(c_v/n - q) / (p - q)``.
    """
    q = validate_table(table)
    k, n_out = q.shape
    c = _validate_counts(counts, n_out)
    _check_rank(q)
    freq = c / c.sum()
    if prior is None:
        qk, w, fk = q, np.ones(n_out), freq
    else:
        p = probability_vector(prior, "prior", length=k)
        d = q.T @ p
        keep = d > 0
        qk, w, fk = q[:, keep], 1.0 / d[keep], freq[keep]
        if not keep.all():
            _check_rank(qk, "table restricted to the outputs with positive probability under prior")
    a = (qk * w) @ qk.T  # Q W Q^T, symmetric positive definite (rank k)
    f0 = np.linalg.solve(a, (qk * w) @ fk)
    ones_sol = np.linalg.solve(a, np.ones(k))
    return f0 + ones_sol * ((1.0 - f0.sum()) / ones_sol.sum())


def ibu_frequencies(table, counts, tol: float = 1e-10, max_iter: int = 10_000, init=None) -> np.ndarray:
    """Iterative Bayesian update (EM for the histogram, MATH §4); works for any table.

    ``f <- f * (Q @ ((c/n) / (Q^T f)))`` with ``0/0 = 0``, from the uniform distribution (or ``init``), until the
    largest absolute change is below ``tol`` (a ``RuntimeWarning`` if ``max_iter`` iterations do not get there;
    the last iterate is returned). Every iterate is a distribution. Counts on an output the table can never
    produce are rejected, and ``init`` must give positive probability to every output that was reported.
    """
    q = validate_table(table)
    k, n_out = q.shape
    c = _validate_counts(counts, n_out, q)
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (math.isfinite(tol) and tol > 0):
        raise ValidationError(f"tol is {fmt(tol)}; must be a finite number > 0")
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValidationError(f"max_iter is {fmt(max_iter)}; must be a positive int")
    if init is None:
        f = np.full(k, 1.0 / k)
    else:
        f = probability_vector(init, "init", length=k)
        unreachable = (q.T @ f == 0) & (c > 0)
        if unreachable.any():
            y = int(np.argmax(unreachable))
            raise ValidationError(
                f"init gives output {y} probability 0 but counts[{y}] is {fmt(c[y])}; "
                "init must give positive probability to every reported output"
            )
    freq = c / c.sum()
    for _ in range(int(max_iter)):
        py = q.T @ f
        ratio = np.divide(freq, py, out=np.zeros(n_out), where=py > 0)
        new = f * (q @ ratio)
        new /= new.sum()  # exact in exact arithmetic; removes rounding drift
        change = np.max(np.abs(new - f))
        f = new
        if change < tol:
            return f
    warnings.warn(
        f"ibu_frequencies did not converge in max_iter={max_iter} iterations "
        f"(last change {change:.3g} >= tol {tol:g}); returning the last iterate",
        RuntimeWarning,
        stacklevel=2,
    )
    return f


def norm_sub(freqs) -> np.ndarray:
    """Norm-Sub consistency (Wang et al., NDSS 2020; MATH §8): a non-negative estimate summing to 1.

    Repeat: set the negative entries to 0, then add the same amount to every remaining positive entry so the
    total is 1, until no entry is negative (at most ``len(freqs)`` rounds, each vectorised). If no entry is
    positive the result is uniform. Example: ``[0.6, 0.5, -0.1] -> [0.55, 0.45, 0.0]``.
    """
    est = float_array(freqs, "freqs", 1)
    est[est < 0] = 0.0
    if not (est > 0).any():
        return np.full(est.size, 1.0 / est.size)
    for _ in range(est.size + 1):
        mask = est > 0
        est[mask] += (1.0 - est[mask].sum()) / np.count_nonzero(mask)
        neg = est < 0
        if not neg.any():
            break
        est[neg] = 0.0
    return est


def grr_table(k: int, epsilon: float) -> np.ndarray:
    """Generalised randomised response (MATH §8): ``p = e^eps/(e^eps+k-1)`` on the diagonal, ``q = 1/(e^eps+k-1)``.

    Computed as ``p = 1/(1+(k-1)e^-eps)`` so a large ``epsilon`` does not overflow. ``k >= 1``, ``epsilon``
    finite and >= 0. The result is eps-LDP (MATH §2, §3).
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValidationError(f"k is {fmt(k)}; must be a positive int (the number of input values)")
    if (
        isinstance(epsilon, bool)
        or not isinstance(epsilon, numbers.Real)
        or not math.isfinite(epsilon)
        or epsilon < 0
    ):
        raise ValidationError(f"epsilon is {fmt(epsilon)}; must be a finite number >= 0")
    k = int(k)
    t = math.exp(-float(epsilon))
    denom = 1.0 + (k - 1) * t
    p, q = 1.0 / denom, t / denom
    out = np.full((k, k), q)
    np.fill_diagonal(out, p)
    return out
