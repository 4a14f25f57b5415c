"""Making the stored numbers of a designed table pass EXACT verification of their claim (docs/math.md §3)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import VerificationError
from lipdesign.mechanisms.sampling import TablePerturber
from lipdesign.verification import exp_bounds, log_upper, tightest

if TYPE_CHECKING:
    import numpy.typing as npt

    from lipdesign.model import Prior
    from lipdesign.notions import LDP, LIP, WorstCaseLIP

#: Columns whose probability under the design prior is below this fraction of the largest are merged: a sum of
#: cone members stays in the cone, and tiny columns can hide huge ratios.
EMPTY_COLUMN = 1e-9

#: The first uniform mix tried when the float excess calls for less (about the resolution of doubles near 1).
SMALLEST_MIX = 1e-15

#: Attempts of the uniform mix before giving up (the mix grows fourfold per attempt).
REPAIR_ATTEMPTS = 60


def polished(weights: npt.NDArray[np.float64], rays: npt.NDArray[np.float64]) -> npt.NDArray[np.floating[Any]]:
    """The weights moved by the least change (minimum-norm least squares, relative to each weight when there are more
    columns than rows) that makes the columns w_r r sum to exactly 1 in every row (solvers meet the row sums only to
    ~1e-9), so that normalising the rows barely moves the columns off their rays; the given weights if that turns one
    negative or does not reduce the error."""
    if len(weights) <= rays.shape[1]:  # at most k columns (the MMSE basis): the least-squares solution is unique
        moved = np.linalg.lstsq(rays.T, np.ones(rays.shape[1]), rcond=None)[0]
    else:  # more columns than rows (an A-optimal support): the least relative change w (1 + d) of the solver's
        # weights, which keeps tiny weights tiny and positive
        scaled = rays.T * weights
        moved = weights * (1.0 + np.linalg.lstsq(scaled, 1.0 - rays.T @ weights, rcond=None)[0])
    if (moved > 0).all() and np.abs(rays.T @ moved - 1).max() < np.abs(rays.T @ weights - 1).max():
        return moved
    return weights


def exact_repair(table: npt.ArrayLike, notion: LDP | LIP | WorstCaseLIP,
                 prior: Prior) -> tuple[npt.NDArray[np.float64], float]:
    """Make a designed table pass EXACT verification of its claim, moving it as little as needed (docs/math.md §3.4).

    Merge near-empty columns into the heaviest one, normalise the rows, and while exact verification of the
    table the sampler realises fails (``TablePerturber.realized_table``: the alias tables on numpy's grid of
    uniforms, docs/math.md §3), mix with the uniform table (every ratio moves toward 1), starting from the mix that
    the float excess calls for and growing it fourfold. A solver's table meets its constraints only to about 1e-9;
    the designers call this on every table they return.

    Parameters
    ----------
    table : array_like of float, shape (k, outputs)
        The table: ``table[x, y]`` = Pr[output y | input x], each row summing to 1 (up to the solver's tolerance).
    notion : LIP, WorstCaseLIP or LDP
        The claim to meet, with its epsilon.
    prior : Prior
        The design prior (the LIP notions are verified at it; near-empty columns are judged by it).

    Returns
    -------
    table : numpy.ndarray
        The repaired table (fewer columns if some were merged), which passes exact verification.
    mix : float
        The weight of the uniform table mixed in (0.0 when none was needed).

    Raises
    ------
    VerificationError
        When 60 attempts (``REPAIR_ATTEMPTS``) of a growing mix do not make the table pass.

    Examples
    --------
    GRR's table with one entry 1e-9 too large breaks eps-LDP by a hair; a mix of a few 1e-9 repairs it:

    >>> import lipdesign as ld
    >>> import numpy as np
    >>> from lipdesign.designer import exact_repair
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> table = np.array([[np.e * (1 + 1e-9), 1, 1], [1, np.e, 1], [1, 1, np.e]])
    >>> table /= table.sum(axis=1, keepdims=True)
    >>> ld.verify(table, ld.LDP(1.0), prior).passed
    False
    >>> repaired, mix = exact_repair(table, ld.LDP(1.0), prior)
    >>> ld.verify(repaired, ld.LDP(1.0), prior).passed, 0 < mix < 1e-8
    (True, True)
    """
    table = np.array(table, dtype=float)
    mass = prior.probabilities @ table
    empty = mass < EMPTY_COLUMN * mass.max()
    if empty.any():
        heaviest = int(np.argmax(mass))
        table[:, heaviest] += table[:, empty].sum(axis=1)
        table = table[:, ~empty]
    n_out, e = table.shape[1], math.exp(notion.epsilon)
    bound = exp_bounds(notion.epsilon)[0]
    mix = 0.0
    for _ in range(REPAIR_ATTEMPTS):
        candidate = (1 - mix) * table + mix / n_out
        candidate /= candidate.sum(axis=1, keepdims=True)
        ratio, _ = tightest(TablePerturber(candidate).realized_table(), notion, prior, exact=True)
        if ratio <= bound and log_upper(ratio) <= notion.epsilon:  # the printed epsilon within the claim too
            return candidate, mix
        # a ratio a/b = e (1 + d) needs a mix of about n_out b e d/(e - 1): the excess scaled by the size of the
        # entries, of which the smallest positive one is the likeliest culprit (the sampler's resolution is
        # absolute, so tiny entries carry the largest relative errors)
        excess = max(float(ratio) - e, 0.0)
        if not math.isfinite(excess):  # a tiny entry realised as 0: grow from the sampler's resolution instead
            excess = 0.0
        size = min(1.0, n_out * float(candidate[candidate > 0].min()))
        mix = min(1.0, max(4 * mix, 2 * n_out * excess * size / (e - 1), SMALLEST_MIX))
    raise VerificationError(f"could not repair the table to pass exact {notion.kind} verification")
