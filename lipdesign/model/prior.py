"""The prior of the reported value X over a finite domain with value labels (docs/math.md §1). Numpy only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.domains import Categorical
from lipdesign.errors import ValidationError
from lipdesign.immutable import Immutable
from lipdesign.validation import float_array, labels_for, probability_vector, real_number

if TYPE_CHECKING:
    from typing import Self

    import numpy.typing as npt


def frozen(array):
    """A read-only float copy of ``array``."""
    array = np.array(array, dtype=float)
    array.setflags(write=False)
    return array


class Prior(Immutable):
    """Prior over a finite domain: ``Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"])``.

    Probabilities must be non-negative and sum to 1 within 1e-9 (``normalize=True`` rescales any
    positive vector). Probabilities are kept exactly as given, so exported numbers round-trip.
    """

    probabilities: npt.NDArray[np.float64]
    labels: tuple[str | int, ...]

    def __init__(self, probabilities: npt.ArrayLike, labels: Sequence[str | int] | None = None, *,
                 normalize: bool = False) -> None:
        self.probabilities = frozen(probability_vector(probabilities, "prior", normalize=normalize))
        self.labels = labels_for(labels, self.probabilities.size)

    @classmethod
    def from_counts(cls, counts: npt.ArrayLike, labels: Sequence[str | int] | None = None, *,
                    pseudocount: float = 0.0) -> Self:
        """Prior from observed counts, optionally smoothed by adding ``pseudocount`` to every value."""
        counts = float_array(counts, "counts", 1)
        pseudocount = real_number(pseudocount, "pseudocount", low=0.0)
        if (counts < 0).any():
            x = int(np.argmax(counts < 0))
            raise ValidationError(f"counts[{x}] is {counts[x]:g}; counts must be >= 0")
        return cls(counts + pseudocount, labels, normalize=True)

    @property
    def k(self) -> int:
        return self.probabilities.size

    @property
    def domain(self) -> Categorical:
        """The categorical input domain of X: these labels, sampled from these probabilities."""
        return Categorical(self.k, self.labels, self.probabilities)

    def indices(self, values: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Map values (labels or indices) to indices 0..k-1, vectorised (``Categorical.validate``)."""
        return self.domain.validate(values)

    def to_dict(self) -> dict[str, Any]:
        return {"probabilities": self.probabilities.tolist(), "labels": list(self.labels)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls(data["probabilities"], data.get("labels"))

    def __eq__(self, other):
        return isinstance(other, Prior) and self.labels == other.labels and \
            np.array_equal(self.probabilities, other.probabilities)

    def __hash__(self):
        return hash((self.labels, self.probabilities.tobytes()))

    def __repr__(self):
        return f"Prior({self.probabilities.tolist()}, labels={list(self.labels)})"
