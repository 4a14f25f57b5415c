"""The count-mean sketch ([Apple17]; docs/math.md §16.4): a string hashed into one of d rows of m buckets, sent as
the m signs of its row with each flipped. Numpy only.

A report has the layout of every hashed-bit family (``hashed_bits``): the row j (2 bytes, low byte first), then
the m bits, bit b being 1 for a +1 entry. The server decodes over a candidate list by least squares, which removes
the collisions between candidates that [Apple17]'s count-mean estimate carries as a bias for the hash functions in
use (docs/math.md §16.4).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.mechanisms.hashed_bits import MAX_BITS, MAX_COHORTS, WORD, HashedBitReports, chunk
from lipdesign.mechanisms.sampling import MAX_SEED, ONE_BIT_MAX_EPSILON, ONE_BIT_MIN_EPSILON
from lipdesign.strings import DEFAULT_MAX_BYTES

if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from typing import Self


class CountMeanSketch(HashedBitReports):
    """The count-mean sketch over strings, eps-LDP ([Apple17]; docs/math.md §16.4).

    A user draws a row j of d (each row its own public hash function) and sends (j, y): y in {-1, +1}^m is +1 at
    her string's bucket h_j(v) and -1 elsewhere, each entry flipped with probability 1/(1 + e^(eps/2)). Two strings
    differ in at most two entries of a row, so a report is eps-LDP, verified exactly on what the sampler realises:
    a flip is a 32-bit word below the threshold ceil(2^32 / (1 + e^(eps/2))), never less likely than stated.

    Parameters
    ----------
    epsilon : float
        The LDP level, in [1e-6, 10].
    m : int, default 1024
        Buckets per row (the width), 2 to 65536.
    d : int, default 64
        Rows (the depth), each with its own hash function, 1 to 65536.
    seed : int, optional
        The public seed of the hash functions, 0 to 2^63 - 1; by default drawn from the operating system and stored.
    max_bytes : int, default 64
        The longest value, in bytes of UTF-8.
    candidates : sequence of str, optional
        The strings ``estimate`` decodes over (not a parameter: see ``with_candidates``).

    Attributes
    ----------
    flip_threshold : int
        A sign is flipped when its 32-bit word is below this.
    q_star, p_star : fractions.Fraction
        Pr[bit = 1] at the user's bucket and at any other, as realised.

    Raises
    ------
    ValidationError
        epsilon outside [1e-6, 10], m below 2, or a parameter outside its range.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> words = ["the", "of", "and", "to", "in", "is"]
    >>> sketch = ld.mechanisms.CountMeanSketch(2.0, m=64, d=8, seed=3, candidates=words)
    >>> sketch.verify().passed, round(sketch.verify().epsilon, 6)
    (True, 2.0)
    >>> truth = np.array([0.4, 0.2, 0.15, 0.1, 0.1, 0.05])
    >>> users = np.array(words, dtype=object)[np.random.default_rng(0).choice(6, size=20_000, p=truth)]
    >>> estimate = sketch.estimate(sketch.perturb(users, rng=1))
    >>> np.round(estimate.values, 2)
    array([0.4 , 0.2 , 0.14, 0.12, 0.09, 0.05])
    >>> np.round(estimate.standard_errors, 3)
    array([0.008, 0.007, 0.007, 0.007, 0.007, 0.007])
    """

    family = "cms"
    epsilon_range = (ONE_BIT_MIN_EPSILON, ONE_BIT_MAX_EPSILON)
    parameter_rules = (("m", f"integer in 2..{MAX_BITS}"), ("d", f"integer in 1..{MAX_COHORTS}"),
                       ("seed", f"integer in 0..{MAX_SEED - 1}"), ("max_bytes", "integer in 1..4096"))
    client_cost = "O(m) per report (m signs)"

    def __init__(self, epsilon: float, m: int = 1024, d: int = 64, seed: int | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES, candidates: Sequence[str] | None = None) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self._sketch(m, 1, d, seed, max_bytes, candidates, cohort_field="d")
        if self.m < 2:
            from lipdesign.errors import ValidationError

            raise ValidationError(f"m is {self.m}; a row needs at least 2 buckets to tell strings apart")
        #: Flip when the 32-bit word is below this: ceil(2^32 / (1 + e^(eps/2))), so the realised flip probability
        #: is at least the stated one and the certified epsilon at most the claim (docs/math.md §16.4).
        self.flip_threshold = math.ceil(WORD / (1.0 + math.exp(self.epsilon / 2.0)))
        flip = Fraction(self.flip_threshold, WORD)
        self.q_star, self.p_star = 1 - flip, flip

    @property
    def d(self) -> int:
        """The rows of the sketch (its depth): the cohorts of the hashed-bit layout."""
        return self.cohorts

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "m": self.m, "d": self.d, "seed": self.seed, "max_bytes": self.max_bytes}

    @classmethod
    def example(cls) -> Self:
        words = ["the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for"]
        return cls(2.0, m=32, d=4, seed=7, max_bytes=16, candidates=words)

    def display_name(self) -> str:
        """The family's name in tables.

        Returns
        -------
        str
            "count-mean sketch".
        """
        return "count-mean sketch"

    def _perturb(self, values, rng, user_ids):
        """Per chunk of users: the rows (a bounded integer each), then m words per user; a single report draws its
        row, then m words."""
        chunks = []
        size = chunk(self.m)
        for start in range(0, len(values), size):
            data = values[start:start + size]
            rows = rng.integers(0, self.d, size=len(data)) if self.d > 1 else np.zeros(len(data), int)
            signs = self._filters(data, rows)
            flips = rng.integers(0, WORD, size=signs.shape, dtype=np.uint32) < np.uint32(self.flip_threshold)
            chunks.append(self._pack(rows, signs ^ flips))
        return np.concatenate(chunks)

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §12).

        Returns
        -------
        dict
            ``flip_threshold``: flip a sign when its 32-bit word is below it.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.CountMeanSketch(2.0, m=64, d=8, seed=3).device_numbers()
        {'flip_threshold': 1155094610}
        """
        return {"flip_threshold": self.flip_threshold}
