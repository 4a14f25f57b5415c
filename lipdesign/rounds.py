"""The server side of many rounds (docs/math.md §19.5): estimates of a combination of rounds of the same devices
(the change between two rounds, the average of several), with standard errors that account for a device's rounds
being dependent through its memoised permanent response.

A round's own estimate is the mechanism's ``estimate`` of that round's reports: within a round the devices are
independent. Across rounds they are not, so a difference or an average of round estimates is estimated here from
each device's combination of its per-round terms (``Memoised.user_terms``), whose sample variance gives the
standard error whatever the dependence, when the rounds' reports are aligned by device (row i is the same device
in every round). These standard errors treat the devices as a sample of the population, so they also count how
the devices' own values vary (f (1 - f) / n more than the variance given the values, for an average of unchanged
values). Unaligned rounds get the bound sum_r abs(c_r) SE_r, valid under any dependence (Cauchy-Schwarz). Numpy
only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.estimate import Estimate
from lipdesign.validation import fmt

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy.typing as npt


def _checked(mechanism: Any, rounds: Any, weights: Any) -> tuple[list[Any], npt.NDArray[np.float64]]:
    if not hasattr(mechanism, "user_terms"):
        raise ValidationError(f"mechanism is a {type(mechanism).__name__}; rounds are combined for the longitudinal "
                              "families (LongitudinalGRR, LongitudinalUE), which give each report's term")
    if isinstance(rounds, np.ndarray) or not isinstance(rounds, (list, tuple)) or len(rounds) < 2:
        raise ValidationError(f"rounds is {fmt(rounds)}; it must be a list of at least two rounds' reports")
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (len(rounds),) or not np.isfinite(weights).all():
        raise ValidationError(f"weights is {fmt(weights)}; it must be {len(rounds)} finite numbers, one per round")
    return list(rounds), weights


def _kind(weights):
    """An average (non-negative weights summing to 1) estimates frequencies, whose intervals lie in [0, 1]; any other
    combination, a change among them, is a "combination", its intervals not clipped."""
    return "frequencies" if np.all(weights >= 0) and np.isclose(weights.sum(), 1.0) else "combination"


def _names(mechanism, weights):
    """What each entry of the estimate is: the mechanism's estimand names (dBitFlipPM's buckets), else its labels;
    "change in ..." for the later round minus the earlier, "combination of ..." for any other signed combination."""
    if callable(getattr(mechanism, "estimand_names", None)):
        names = [str(name) for name in mechanism.estimand_names()]
    else:
        names = [str(label) for label in mechanism.input_domain.labels]
    if _kind(weights) == "frequencies":
        return names
    prefix = "change in" if weights.tolist() == [-1.0, 1.0] else "combination of"
    return [f"{prefix} {name}" for name in names]


def combine(mechanism: Any, rounds: Sequence[npt.ArrayLike], weights: npt.ArrayLike, *, aligned: bool = True
            ) -> Estimate:
    """The estimate of sum_r weights[r] f_r, with f_r round r's frequencies, and its standard errors (docs/math.md
    §19.5).

    Parameters
    ----------
    mechanism : LongitudinalGRR or LongitudinalUE
        The mechanism every round's reports come from.
    rounds : list of array_like
        Each round's reports.
    weights : array_like of float
        One weight per round: (-1, 1) for the change between two rounds, 1/R each for the average.
    aligned : bool, default True
        Row i of every round is the same device: the standard error is the sample standard deviation of the
        devices' combined terms over sqrt(n), which counts the dependence of a device's rounds. False: rounds of
        any devices, the bound sum_r abs(weights[r]) SE_r (valid whatever the dependence, and larger).

    Returns
    -------
    Estimate
        The combination per value, ``n`` the devices (aligned) or the smallest round.

    Raises
    ------
    ValidationError
        Fewer than two rounds, weights not one per round, aligned rounds of different lengths, or a mechanism
        without per-report terms.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=3)
    >>> keys = mechanism.device_keys(30_000, rng=0)
    >>> values = np.random.default_rng(1).choice(3, size=30_000, p=[0.5, 0.3, 0.2])
    >>> first = mechanism.perturb_memoised(values, keys, rng=2)
    >>> second = mechanism.perturb_memoised(values, keys, rng=3)
    >>> change = ld.rounds.combine(mechanism, [first, second], [-1, 1])
    >>> bool(np.all(np.abs(change.values) < 4 * change.standard_errors))
    True
    """
    rounds, weights = _checked(mechanism, rounds, weights)
    if not aligned:
        estimates = [mechanism.estimate(reports) for reports in rounds]
        values = sum(w * estimate.values for w, estimate in zip(weights, estimates))
        errors = sum(abs(w) * estimate.standard_errors for w, estimate in zip(weights, estimates))
        return Estimate(values, errors, n=min(estimate.n for estimate in estimates), method="unbiased",
                        kind=_kind(weights), names=_names(mechanism, weights),
                        note="rounds not aligned by device: standard errors are the bound sum abs(w) SE (docs/math.md "
                             "§19.5)")
    terms = [mechanism.user_terms(reports) for reports in rounds]
    sizes = {len(term) for term in terms}
    if len(sizes) != 1:
        raise ValidationError(f"rounds have {[len(term) for term in terms]} reports; aligned rounds have one report "
                              "per device each (pass aligned=False for rounds of different devices)")
    n = sizes.pop()
    if n < 2:
        raise ValidationError(f"rounds have {n} report each; a standard error needs at least two devices")
    combined = sum(w * term for w, term in zip(weights, terms))
    return Estimate(combined.mean(axis=0), combined.std(axis=0, ddof=1) / np.sqrt(n), n=n, method="unbiased",
                    kind=_kind(weights), names=_names(mechanism, weights),
                    note="rounds aligned by device: standard errors from each device's combination (docs/math.md "
                         "§19.5)")


def change(mechanism: Any, before: npt.ArrayLike, after: npt.ArrayLike, *, aligned: bool = True) -> Estimate:
    """The change f_after - f_before between two rounds, with its standard errors (``combine`` with weights -1, 1).

    Parameters
    ----------
    mechanism : LongitudinalGRR or LongitudinalUE
        The mechanism both rounds' reports come from.
    before, after : array_like
        The two rounds' reports.
    aligned : bool, default True
        Row i of both rounds is the same device (see ``combine``).

    Returns
    -------
    Estimate
        The change per value.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.LongitudinalUE(1.0, 2.0, k=3)
    >>> keys = mechanism.device_keys(40_000, rng=0)
    >>> before = np.zeros(40_000, dtype=int)
    >>> after = np.where(np.arange(40_000) < 10_000, 1, 0)  # a quarter of the devices move from 0 to 1
    >>> estimate = ld.rounds.change(mechanism, mechanism.perturb_memoised(before, keys, rng=1),
    ...                             mechanism.perturb_memoised(after, keys, rng=2))
    >>> bool(np.all(np.abs(estimate.values - [-0.25, 0.25, 0.0]) < 4 * estimate.standard_errors))
    True
    """
    return combine(mechanism, [before, after], [-1.0, 1.0], aligned=aligned)


def average(mechanism: Any, rounds: Sequence[npt.ArrayLike], *, aligned: bool = True) -> Estimate:
    """The average of the rounds' frequencies, with its standard errors (``combine`` with weights 1/R). With memoised
    reports of unchanged values its variance does not fall below the permanent stage's (docs/math.md §19.5,
    ``Memoised.rounds_variance``).

    Parameters
    ----------
    mechanism : LongitudinalGRR or LongitudinalUE
        The mechanism every round's reports come from.
    rounds : list of array_like
        Each round's reports.
    aligned : bool, default True
        Row i of every round is the same device (see ``combine``).

    Returns
    -------
    Estimate
        The average per value.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=3)
    >>> keys = mechanism.device_keys(20_000, rng=0)
    >>> values = np.random.default_rng(1).choice(3, size=20_000, p=[0.5, 0.3, 0.2])
    >>> rounds = [mechanism.perturb_memoised(values, keys, rng=seed) for seed in range(5)]
    >>> np.round(ld.rounds.average(mechanism, rounds).values, 2)
    array([0.5, 0.3, 0.2])
    """
    count = len(rounds) if isinstance(rounds, (list, tuple)) else 0
    return combine(mechanism, rounds, np.full(count, 1.0 / max(count, 1)), aligned=aligned)


__all__ = ["average", "change", "combine"]
