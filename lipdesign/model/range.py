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

    The numeric mechanisms (Duchi, Piecewise, Hybrid, Laplace, Harmony) take values in [-1, 1] (docs/math.md §9):
    ``to_unit(x)`` maps raw values there and raises on values outside [low, high] unless ``clip=True``;
    ``from_unit(mean)`` maps an estimated mean back; ``variance_from_unit(v)`` scales a variance by
    ((high - low) / 2)^2.

    Parameters
    ----------
    low : float
        The smallest raw value (finite).
    high : float
        The largest raw value (finite, > ``low``).

    Attributes
    ----------
    low, high : float
        The bounds.
    half_width : float
        (high - low) / 2, the factor between a raw width and a unit width.

    Raises
    ------
    ValidationError
        When a bound is not a finite number, when ``high <= low``, or when ``high - low`` overflows.

    Examples
    --------
    >>> import lipdesign as ld
    >>> ages = ld.Range(0, 100)
    >>> ages.to_unit([0, 25, 100])
    array([-1. , -0.5,  1. ])
    >>> round(float(ages.from_unit(0.1)), 4)
    55.0
    >>> ld.Range(5, 5)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: high is 5 and low is 5; a range needs high > low
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
        """Map raw values on [low, high] to [-1, 1] (affinely: low to -1, high to 1).

        Parameters
        ----------
        values : float or array_like of float
            Raw values, a number or an array of any shape.
        clip : bool, default False
            Clip values outside [low, high] to the nearest bound instead of refusing them.

        Returns
        -------
        numpy.ndarray or float
            The values on [-1, 1], of the shape of ``values`` (a number for a number).

        Raises
        ------
        ValidationError
            When a value is not finite, or lies outside [low, high] without ``clip``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ages = ld.Range(0, 100)
        >>> ages.to_unit([-5, 50, 120], clip=True)
        array([-1.,  0.,  1.])
        >>> ages.to_unit([10, 120])
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: values[1] is 120.0; raw values must lie in [0, 100] (pass clip=True to
        clip them)
        """
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
        """Map values on [-1, 1] (an estimated mean, for instance) back to the raw scale.

        Parameters
        ----------
        values : float or array_like of float
            Values on the unit scale; not checked or clipped (an estimate may leave [-1, 1]).

        Returns
        -------
        numpy.ndarray or float
            ``low + (values + 1) * half_width``, of the shape of ``values``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ages = ld.Range(0, 100)
        >>> ages.from_unit([-1.0, -0.5, 1.0])
        array([  0.,  25., 100.])
        """
        return self.low + (np.asarray(values, dtype=float) + 1.0) * self.half_width

    def variance_from_unit(self, variance: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Scale a variance on the unit scale to the raw scale.

        Parameters
        ----------
        variance : float or array_like of float
            A variance (or an array of variances) of values on [-1, 1].

        Returns
        -------
        numpy.ndarray or float
            ``variance * half_width**2``, of the shape of ``variance``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> round(float(ld.Range(0, 100).variance_from_unit(0.01)), 4)
        25.0
        """
        return np.asarray(variance, dtype=float) * self.half_width**2

    def __repr__(self) -> str:
        return f"Range({self.low:g}, {self.high:g})"
