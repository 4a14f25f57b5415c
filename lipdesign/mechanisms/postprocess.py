"""Consistency post-processing of estimated frequencies (docs/math.md §8). Numpy only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lipdesign.validation import float_array

if TYPE_CHECKING:
    import numpy.typing as npt

#: The spellings of ``estimate(..., consistency=...)``.
CONSISTENCY = ("norm-sub",)


def norm_sub(frequencies: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Norm-Sub consistency (Wang et al., NDSS 2020; docs/math.md §8): a non-negative estimate summing to 1.

    Repeat: set the negative entries to 0, then add the same amount to every remaining positive entry so the
    total is 1, until no entry is negative (at most ``len(frequencies)`` rounds, each vectorised). If no entry is
    positive the result is uniform. Example: ``[0.6, 0.5, -0.1] -> [0.55, 0.45, 0.0]``. This is what
    ``estimate(..., consistency="norm-sub")`` applies (docs/math.md §8.6).

    Parameters
    ----------
    frequencies : array_like of float
        A vector of estimated frequencies (an unbiased estimate: entries may be negative or above 1); it is not
        modified.

    Returns
    -------
    numpy.ndarray
        A new float64 vector of the same length, non-negative and summing to 1.

    Raises
    ------
    ValidationError
        If ``frequencies`` is not a vector of finite numbers.

    See Also
    --------
    unbiased_frequencies : An estimate whose entries may be negative.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> from lipdesign.mechanisms import norm_sub
    >>> np.round(norm_sub([0.6, 0.5, -0.1]), 3)
    array([0.55, 0.45, 0.  ])
    >>> norm_sub([-0.2, -0.1])  # no positive entry: uniform
    array([0.5, 0.5])
    """
    estimate = float_array(frequencies, "frequencies", 1)
    estimate[estimate < 0] = 0.0
    if not (estimate > 0).any():
        return np.full(estimate.size, 1.0 / estimate.size)
    for _ in range(estimate.size + 1):
        positive = estimate > 0
        estimate[positive] += (1.0 - estimate[positive].sum()) / np.count_nonzero(positive)
        negative = estimate < 0
        if not negative.any():
            break
        estimate[negative] = 0.0
    return estimate


def consistent(frequencies: npt.NDArray[np.float64], consistency: str | None) -> npt.NDArray[np.float64]:
    """``frequencies`` after the consistency step ``consistency`` (one of CONSISTENCY, or None for none)."""
    return frequencies if consistency is None else norm_sub(frequencies)
