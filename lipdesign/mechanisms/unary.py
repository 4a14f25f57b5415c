"""Unary encoding: optimised unary encoding (OUE) under LDP (docs/math.md §7, §8). Numpy only."""

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.oracle import PureProtocol
from lipdesign.mechanisms.sampling import BLOCK
from lipdesign.validation import fmt

#: OUE.perturb returns n * k bytes (one uint8 bit per user and value); it refuses to build more than this
#: (2 GiB) in one call. Perturb fewer users per call, or use OLH / HadamardResponse, whose reports are O(1).
MAX_OUE_BYTES = 2**31


class OUE(PureProtocol):
    """Optimised unary encoding (docs/math.md §8): one bit per value; the bit of the true value is 1 with
    probability p = 1/2, every other bit with probability q = 1/(e^eps + 1). Reports: uint8 (n, k) of 0/1, n * k
    bytes, so ``perturb`` refuses n * k > ``MAX_OUE_BYTES`` (for large k prefer OLH or HadamardResponse);
    2 <= k <= ``oracle.MAX_K``; epsilon in [1e-6, 10] (``sampling.ONE_BIT_MIN_EPSILON``, ``ONE_BIT_MAX_EPSILON``)."""

    family = "oue"

    def __init__(self, epsilon, k):
        super().__init__(epsilon, k)
        self.p = 0.5
        self.q = 1.0 / (self.exp_epsilon + 1.0)

    @classmethod
    def example(cls):
        return cls(1.0, 6)

    def _perturb(self, values, rng, user_ids):
        """Chunks of about ``BLOCK`` uniforms: several users per chunk, or (k > BLOCK) one user's row in column
        blocks, which draws the same stream as the whole row at once."""
        if values.size * self.k > MAX_OUE_BYTES:
            raise ValidationError(f"values has {values.size} entries; OUE reports take n * k = {values.size} * "
                                  f"{self.k} bytes and perturb builds at most MAX_OUE_BYTES = {MAX_OUE_BYTES} per "
                                  "call (perturb fewer users per call, or use OLH / HadamardResponse for large k)")
        out = np.empty((values.size, self.k), dtype=np.uint8)
        step = max(1, BLOCK // self.k)
        for start in range(0, values.size, step):
            chunk = values[start:start + step]
            rows = out[start:start + chunk.size]
            for column in range(0, self.k, BLOCK):  # a single block unless k > BLOCK (then chunk.size == 1)
                width = min(BLOCK, self.k - column)
                rows[:, column:column + width] = rng.random((chunk.size, width)) < self.q
            rows[np.arange(chunk.size), chunk] = rng.random(chunk.size) < self.p
        return out

    def empty_reports(self):
        return np.zeros((0, self.k), dtype=np.uint8)

    def _support(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.k:
            raise ValidationError(f"reports has shape {reports.shape}; it must have shape (n, {self.k}), one row of "
                                  f"k = {self.k} bits per user")
        if not (np.issubdtype(reports.dtype, np.integer) or reports.dtype == np.bool_):
            raise ValidationError(f"reports has dtype {reports.dtype}; OUE reports are bits (uint8 0/1)")
        if reports.size and reports.dtype != np.bool_ and (reports.min() < 0 or reports.max() > 1):
            row, column = np.argwhere((reports < 0) | (reports > 1))[0]
            raise ValidationError(f"reports[{row}, {column}] is {fmt(reports[row, column])}; every OUE report "
                                  "entry must be a bit, 0 or 1")
        return reports.sum(axis=0, dtype=np.int64), reports.shape[0]

    def privacy_table(self):
        """Exact reduction to 2 rows x 4 outputs: two inputs x != x' differ only in the bits x and x' (the others
        are independent Bernoulli(q) under both and cancel from every likelihood ratio), so the rows are inputs
        x, x' and the columns the pairs (bit x, bit x') = 00, 01, 10, 11."""
        keep = 0.5 * self.exp_epsilon / (self.exp_epsilon + 1.0)  # (1/2) (1 - q)
        flip = 0.5 / (self.exp_epsilon + 1.0)  # (1/2) q
        return np.array([[keep, flip, keep, flip], [keep, keep, flip, flip]])
