"""What ``ld.audit`` needs to know about a family (docs/math.md §14): each family's ``audit_plan()`` returns an
``AuditPlan`` beside its code; the helpers below build the shapes that several families share. Numpy only."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AuditPlan:
    """What the audit knows about a family: ``inputs`` (one value per row, as ``perturb`` takes it), ``table``
    (rows x classes, Pr[class | row]), ``classify`` (reports -> class index per report), ``members`` (rows x k:
    the input values each row stands for, for LIP notions; None for LDP-only plans), names of rows and classes."""

    inputs: np.ndarray
    table: np.ndarray
    classify: object
    row_names: list
    class_names: list
    members: np.ndarray | None = None

    def __post_init__(self):  # a realised table of exact rationals is read as the doubles nearest to it
        object.__setattr__(self, "table", np.asarray(self.table, dtype=float))


def index_plan(mechanism, classify, class_names=None):
    """Designed tables and local hashing: every input value a row, every column of the (realised) privacy table a
    class; ``classify`` maps a report to its column."""
    k, table = mechanism.prior.k, np.asarray(mechanism.privacy_table(), dtype=float)
    names = class_names or [f"y={y}" for y in range(table.shape[1])]
    return AuditPlan(np.arange(k), table, classify, [f"x={label}" for label in mechanism.prior.labels], names,
                     np.eye(k))


def sign_plan(inputs, row_classes, one_bit):
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


def row_classes(signs, first=0, second=1):
    """Per projection row s, r = 2 [signs[s, first] < 0] + [signs[s, second] < 0], and the frequency of each r."""
    classes = 2 * (signs[:, first] < 0) + (signs[:, second] < 0)
    return classes.astype(np.int64), np.bincount(classes, minlength=4) / signs.shape[0]


def extremes(d):
    return np.array([np.ones(d), -np.ones(d)])


def audited_values(mechanism, inputs):
    """The audited inputs as the mechanism takes them: category indices become its labels when it has named ones
    (integer labels other than the indices are read as labels, docs/math.md §1)."""
    labels = getattr(mechanism.input_domain, "labels", None)
    if labels is None or isinstance(labels, range) or inputs.dtype.kind not in "iu":
        return inputs
    return np.array(labels, dtype=object)[inputs]
