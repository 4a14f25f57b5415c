"""Raw numeric ranges mapped to [-1, 1], where the numeric mechanisms take their inputs (docs/math.md §9)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.validation import float_array, fmt, real_number

if TYPE_CHECKING:
    import numpy.typing as npt


class Range:
    """Maps a raw numeric attribute on [low, high] to [-1, 1] and back.

    ``to_unit(x)`` raises on values outside [low, high] unless ``clip=True``; ``from_unit(mean)`` maps an
    estimated mean back; ``variance_from_unit(v)`` scales a variance by ((high - low) / 2)^2.
    """

    def __init__(self, low: float, high: float) -> None:
        self.low = real_number(low, "low")
        self.high = real_number(high, "high")
        if not self.high > self.low:
            raise ValidationError(f"high is {fmt(high)} and low is {fmt(low)}; a range needs high > low")
        self.half_width = (self.high - self.low) / 2.0
        if not np.isfinite(self.half_width):
            raise ValidationError(f"high - low is {self.high - self.low!r}; the width of a range must be finite")

    def to_unit(self, values: npt.ArrayLike, clip: bool = False) -> npt.NDArray[np.float64]:
        array = float_array(values, "values", np.ndim(values)) if np.ndim(values) else \
            float_array([values], "values", 1)[0]
        if clip:
            array = np.clip(array, self.low, self.high)
        else:
            outside = np.flatnonzero((array.ravel() < self.low) | (array.ravel() > self.high))
            if outside.size:
                raise ValidationError(
                    f"values[{outside[0]}] is {fmt(array.ravel()[outside[0]])}; raw values must lie in "
                    f"[{self.low:g}, {self.high:g}] (pass clip=True to clip them)")
        return np.clip((array - self.low) / self.half_width - 1.0, -1.0, 1.0)

    def from_unit(self, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return self.low + (np.asarray(values, dtype=float) + 1.0) * self.half_width

    def variance_from_unit(self, variance: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return np.asarray(variance, dtype=float) * self.half_width**2

    def __repr__(self):
        return f"Range({self.low:g}, {self.high:g})"
