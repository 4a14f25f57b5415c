"""Design a memoised pair of tables under LIP at a prior (docs/math.md §19.8): the permanent table Q1 and the
instantaneous keep-or-refill stage, minimising one report's variance subject to an unbounded-reports budget and a
one-report budget, both certified exactly on the realised tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, cast

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.longitudinal_table import LongitudinalTable, on_grid
from lipdesign.mechanisms.memo import WORD
from lipdesign.model import Prior
from lipdesign.notions import LIP
from lipdesign.objectives import Frequencies
from lipdesign.validation import epsilon as checked_epsilon
from lipdesign.validation import fmt, integer
from lipdesign.verification import verify_table

if TYPE_CHECKING:
    import numpy.typing as npt

    from lipdesign.mechanisms.table import TableMechanism

#: The permanent levels tried, as shares of epsilon_permanent (those at least epsilon).
SPLITS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)

#: Design margins tried in turn when the table rounded to 32-bit words exceeds its level.
MARGINS = (1e-7, 1e-5, 1e-3)


def _on_grid_within(tables: Callable[[float], npt.NDArray[np.float64]], prior: Prior, level: float, what: str
                    ) -> npt.NDArray[np.float64]:
    """``tables(margin)`` rounded to the 2^-32 grid, for the first margin whose rounded table is ``level``-LIP at the
    prior exactly."""
    for margin in MARGINS:
        table = on_grid(tables(margin))
        if verify_table(np.vectorize(Fraction, otypes=[object])(table), LIP(level), prior).passed:
            return table
    raise ValidationError(f"epsilon_permanent share {fmt(level)}: the {what} rounded to 32-bit words exceeds it even "
                          f"with a margin of {MARGINS[-1]:g}")


def _permanents(prior: Prior, level: float) -> dict[str, npt.NDArray[np.float64]]:
    """The permanent tables tried at ``level``: ``ld.design``'s LIP-optimal table for the population histogram, and
    randomized response at LDP ``level`` (LIP at most ``level`` at every prior), both on the 2^-32 grid."""
    from lipdesign.designer.design import design

    def rr(margin):
        keep = np.exp(level * (1 - margin))
        return (np.eye(prior.k) * (keep - 1) + 1) / (keep + prior.k - 1)

    def designed(margin):  # family "rr": a TableMechanism, whose table is Q
        return cast("TableMechanism", design(prior, LIP(level * (1 - margin)), Frequencies(), baselines=False)).table

    tables = {}
    for name, make in (("designed table", designed), ("randomized response", rr)):
        try:
            tables[name] = _on_grid_within(make, prior, level, name)
        except ValidationError:  # on 32-bit words this candidate cannot meet the level: the others are tried
            continue
    return tables


def _keep(permanent: npt.NDArray[np.float64], refill: npt.NDArray[np.float64], prior: Prior, epsilon: float) -> int:
    """The largest keep threshold whose one-report table a Q1 + (1 - a) r is epsilon-LIP at the prior, exactly."""
    q1 = np.vectorize(Fraction, otypes=[object])(permanent)
    r = np.vectorize(Fraction, otypes=[object])(refill)

    def passes(threshold: int) -> bool:
        keep = Fraction(threshold, WORD)
        return bool(verify_table(keep * q1 + (1 - keep) * r[None, :], LIP(epsilon), prior).passed)

    low, high = 0, WORD  # passes(0): every row is r
    if passes(high):
        return high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if passes(middle) else (low, middle)
    return low


def design_longitudinal(prior: Prior | npt.ArrayLike, epsilon: float, epsilon_permanent: float, *,
                        rounds: int = 1, splits: Sequence[float] = SPLITS,
                        progress: Callable[[str], object] | None = None) -> LongitudinalTable:
    """The memoised pair designed under LIP at ``prior`` (docs/math.md §19.8): one report ``epsilon``-LIP, any
    number of reports of one value ``epsilon_permanent``-LIP, minimising the sum over values of the variance of the
    unbiased (GLS) estimate averaged over ``rounds`` rounds of unchanged values, at the prior
    (``LongitudinalTable.rounds_variance``; one round: ``ld.Frequencies``'s figure).

    For each permanent level L, epsilon itself and s epsilon_permanent for s in ``splits`` (L >= epsilon), Q1 is
    ``ld.design``'s LIP-optimal table at L or randomized response at LDP L, rounded to 32-bit words and verified;
    the instantaneous stage keeps Q1's output with the largest probability a whose one-report table
    a Q1 + (1 - a) r is epsilon-LIP, exactly, with r either P Q1 (refilling from the permanent output's own
    distribution leaves Pr[y] unchanged, so every posterior ratio moves toward 1 by the factor a) or uniform (as
    L-GRR does). The candidate with the smallest figure wins; randomized response refilled uniformly is L-GRR with
    its stages set by LIP at the prior, so the design is never worse than that.

    For one round the optimum is the level epsilon with a = 1: every epsilon-LIP one-report table is a feasible
    pair (Q1 itself, Q2 the identity), so no pair beats the best epsilon-LIP table, and that pair's unbounded
    guarantee is epsilon itself. Its reports repeat exactly across rounds, which lets rounds be linked and shows
    when a value changes; more rounds (``rounds``) reward a more informative permanent table and fresh noise.

    Parameters
    ----------
    prior : Prior or array_like
        The prior of both claims (every value with positive probability).
    epsilon : float
        One report's LIP budget.
    epsilon_permanent : float
        The unbounded-reports LIP budget, at least ``epsilon``.
    rounds : int, default 1
        The rounds whose average's variance is minimised (1: one report's).
    splits : sequence of float, default SPLITS
        The shares of ``epsilon_permanent`` tried for the permanent table, beside epsilon itself.
    progress : callable, optional
        Called with a line per level tried.

    Returns
    -------
    LongitudinalTable
        The pair, both claims verified exactly.

    Raises
    ------
    ValidationError
        An epsilon out of range, ``epsilon`` above ``epsilon_permanent``, or ``rounds`` not a positive integer.

    Examples
    --------
    >>> import lipdesign as ld
    >>> pair = ld.designer.design_longitudinal([0.5, 0.3, 0.2], epsilon=0.5, epsilon_permanent=1.0)
    >>> pair.k, pair.verify().passed, pair.permanent_certificate().passed
    (3, True, True)
    """
    prior = prior if isinstance(prior, Prior) else Prior(prior)
    epsilon = checked_epsilon(epsilon)
    epsilon_permanent = checked_epsilon(epsilon_permanent, field="epsilon_permanent")
    if epsilon > epsilon_permanent:
        raise ValidationError(f"epsilon is {fmt(epsilon)}; one report's budget is at most the unbounded one's, "
                              f"epsilon_permanent = {fmt(epsilon_permanent)}")
    rounds = integer(rounds, "rounds", low=1)
    levels = sorted({epsilon, *(share * epsilon_permanent for share in splits if epsilon <= share * epsilon_permanent)},
                    reverse=True)
    best: tuple[float, LongitudinalTable] | None = None
    for level in levels:
        for name, permanent in _permanents(prior, level).items():
            refills = {"its output distribution": on_grid(prior.probabilities @ permanent)[0],
                       "uniform": on_grid(np.full((1, permanent.shape[1]), 1.0 / permanent.shape[1]))[0]}
            for refill_name, refill in refills.items():
                pair = LongitudinalTable(epsilon, epsilon_permanent, permanent,
                                         _keep(permanent, refill, prior, epsilon), refill, prior)
                figure = float(pair.rounds_variance(prior.probabilities, 1, rounds).sum())
                if progress is not None:
                    progress(f"permanent level {level:.6g}, {name}, refilled from {refill_name}: keep "
                             f"{pair.keep / WORD:.6f}, n x variance of the {rounds}-round average {figure:.6g}")
                if best is None or figure < best[0]:
                    best = (figure, pair)
    if best is None:
        raise ValidationError(f"epsilon_permanent is {fmt(epsilon_permanent)}; no permanent table rounded to 32-bit "
                              "words meets any level tried (every one exceeds it even with a margin of "
                              f"{MARGINS[-1]:g}): use smaller epsilons")
    return best[1]


__all__ = ["SPLITS", "design_longitudinal"]
