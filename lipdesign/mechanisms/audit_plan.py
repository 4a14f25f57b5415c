"""What ``ld.audit`` needs to know about a family (docs/math.md §14): each family's ``audit_plan()`` returns an
``AuditPlan`` beside its code; the helpers below build the shapes that several families share. Numpy only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # annotations only: nothing more is imported at run time
    import numpy.typing as npt


@dataclass(frozen=True)
class AuditPlan:
    """What the audit knows about a family (docs/math.md §14): the inputs to audit, the classes of their reports and
    the probability of each class under each input, as the realised sampler draws them.

    Each family's ``audit_plan()`` returns one; ``ld.audit`` perturbs each row's input many times, classifies the
    reports and compares the counts with ``table``.

    Parameters
    ----------
    inputs : numpy.ndarray
        One input value per row, as ``perturb`` takes it.
    table : numpy.ndarray
        Rows x classes: Pr[class | row's input], floats or exact rationals (kept as the nearest doubles).
    classify : callable
        Reports -> the class index of each report.
    row_names : list of str
        A name per row.
    class_names : list of str
        A name per class.
    members : numpy.ndarray, optional
        Rows x k: the input values each row stands for, for LIP notions; None (the default) for LDP-only plans.

    See Also
    --------
    lipdesign.audit : The statistical audit that reads the plan.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> plan = ld.mechanisms.GRR(1.0, k=4).audit_plan()
    >>> plan.row_names, plan.class_names
    (['x=0', 'x=1'], ['y=0', 'y=1', 'other'])
    >>> np.round(plan.table, 4)
    array([[0.4754, 0.1749, 0.3498],
           [0.1749, 0.4754, 0.3498]])
    >>> plan.classify(np.array([0, 1, 2, 3]))
    array([0, 1, 2, 2])
    """

    inputs: npt.NDArray[Any]
    table: npt.NDArray[Any]
    classify: Callable[[Any], npt.NDArray[Any]]
    row_names: list[str]
    class_names: list[str]
    members: npt.NDArray[Any] | None = None

    def __post_init__(self) -> None:  # a realised table of exact rationals is read as the doubles nearest to it
        object.__setattr__(self, "table", np.asarray(self.table, dtype=float))


def index_plan(mechanism: Any, classify: Callable[[Any], npt.NDArray[Any]],
               class_names: list[str] | None = None) -> AuditPlan:
    """Designed tables and local hashing: every input value a row, every column of the (realised) privacy table a
    class; ``classify`` maps a report to its column."""
    k, table = mechanism.prior.k, np.asarray(mechanism.privacy_table(), dtype=float)
    names = class_names or [f"y={y}" for y in range(table.shape[1])]
    return AuditPlan(np.arange(k), table, classify, [f"x={label}" for label in mechanism.prior.labels], names,
                     np.eye(k))


def sign_plan(inputs: npt.NDArray[Any], row_classes: npt.NDArray[np.float64], one_bit: npt.NDArray[np.float64]
              ) -> tuple[npt.NDArray[Any], npt.NDArray[np.float64], list[str]]:
    """The one-bit families: a report is (attribute j, row class r, sign b), r = 2 [A's bit input is -1] + [B's is
    -1] for the two audited inputs A and B; ``row_classes[j, r]`` = Pr[attribute j, row class r] (the same under A
    and B). Pr[class | A] = row_classes[j, r] Pr[b | t_A(r)] from ``one_bit`` (rows t = +1, -1)."""
    attributes = row_classes.shape[0]
    table = np.zeros((2, attributes * 8))
    for j in range(attributes):
        for r in range(4):
            for b in range(2):
                table[0, 8 * j + 2 * r + b] = row_classes[j, r] * one_bit[r // 2, b]
                table[1, 8 * j + 2 * r + b] = row_classes[j, r] * one_bit[r % 2, b]
    names = [f"attribute {j}, inputs ({'+-'[r // 2]}1, {'+-'[r % 2]}1), sign {'+-'[b]}"
             for j in range(attributes) for r in range(4) for b in range(2)]
    return inputs, table, names


def row_classes(signs: npt.NDArray[Any], first: int = 0, second: int = 1
                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Per projection row s, r = 2 [signs[s, first] < 0] + [signs[s, second] < 0], and the frequency of each r."""
    classes = 2 * (signs[:, first] < 0) + (signs[:, second] < 0)
    return classes.astype(np.int64), np.bincount(classes, minlength=4) / signs.shape[0]


def extremes(d: int) -> npt.NDArray[np.float64]:
    return np.array([np.ones(d), -np.ones(d)])


def audited_values(mechanism: Any, inputs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The audited inputs as the mechanism takes them: category indices become its labels when it has named ones
    (integer labels other than the indices are read as labels, docs/math.md §1)."""
    labels = getattr(mechanism.input_domain, "labels", None)
    if labels is None or isinstance(labels, range) or inputs.dtype.kind not in "iu":
        return inputs
    return np.array(labels, dtype=object)[inputs]
