"""Optimised unary encoding (OUE) under LDP (docs/math.md §8.3). Numpy only."""


from __future__ import annotations

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.bit_reports import PackedBitReports, check_spare_bits, packed_bernoulli
from lipdesign.mechanisms.bitsums import packed_column_sums
from lipdesign.mechanisms.oracle import MAX_K, PureProtocol
from lipdesign.mechanisms.sampling import realized_probability
from lipdesign.validation import fmt


class OUE(PackedBitReports, PureProtocol):
    """Optimised unary encoding (docs/math.md §8.3): one bit per value; the bit of the true value is 1 with
    probability p = 1/2, every other bit with q = ceil(2^53 fl(1/(e^eps + 1))) / 2^53 (the double rounded up to the
    2^-53 grid), both exactly as the sampler realises them (``packed_bernoulli``: a random byte per bit compared
    with the integer threshold q 2^64, refined by a word on a tie). Reports: bit-packed uint8 (n, ceil(k / 8)), bit
    j of a report being bit j % 8 of its byte j // 8 (``bits`` unpacks them), so ``perturb`` refuses n * ceil(k / 8)
    > ``MAX_OUE_BYTES``; ``aggregate``
    also takes the unpacked (n, k) 0/1 reports of earlier versions. 2 <= k <= ``oracle.MAX_K``; epsilon in
    [1e-6, 10] (``sampling.ONE_BIT_MIN_EPSILON``, ``ONE_BIT_MAX_EPSILON``)."""

    family = "oue"
    parameter_rules = (("k", f"integer in 2..{MAX_K}"),)
    client_cost = "O(k) per report (k bits)"

    def __init__(self, epsilon: float, k: int) -> None:
        super().__init__(epsilon, k)
        self.p = 0.5
        self.q = float(realized_probability(1.0 / (self.exp_epsilon + 1.0)))
        #: Pr[bit = 1] = threshold / 2^64 for a bit other than the user's (an integer: q is on the 2^-53 grid).
        self.threshold = int(self.q * 2.0**64)

    @classmethod
    def example(cls):
        return cls(1.0, 6)

    def _perturb(self, values, rng, user_ids):
        return packed_bernoulli(values, self.k, self.threshold, rng)

    def empty_reports(self):
        return np.zeros((0, self.report_bytes), dtype=np.uint8)

    def _checked(self, reports):
        """(reports, packed): bit-packed (n, ceil(k / 8)) uint8, or the unpacked (n, k) bits of earlier versions."""
        reports = np.asarray(reports)
        if reports.ndim == 2 and reports.shape[1] == self.report_bytes and reports.dtype == np.uint8:
            check_spare_bits(reports, self.k)
            return reports, True
        if reports.ndim != 2 or reports.shape[1] != self.k:
            raise ValidationError(f"reports has shape {reports.shape}; it must have shape (n, {self.report_bytes}) "
                                  f"uint8, k = {self.k} bits packed 8 to a byte (or the unpacked (n, {self.k}) bits)")
        if not (np.issubdtype(reports.dtype, np.integer) or reports.dtype == np.bool_):
            raise ValidationError(f"reports has dtype {reports.dtype}; OUE reports are bits (packed uint8)")
        if reports.size and reports.dtype != np.bool_ and (reports.min() < 0 or reports.max() > 1):
            row, column = np.argwhere((reports < 0) | (reports > 1))[0]
            raise ValidationError(f"reports[{row}, {column}] is {fmt(reports[row, column])}; every entry of unpacked "
                                  "OUE reports must be a bit, 0 or 1")
        return reports, False

    def bits(self, reports, columns=None):
        """The uint8 0/1 bits of ``reports`` (packed or unpacked, checked): (n, k), or (n, len(columns)) for the
        given bit indices (audits read two)."""
        reports, packed = self._checked(reports)
        columns = np.arange(self.k) if columns is None else np.asarray(columns, dtype=np.int64)
        if not packed:
            return reports[:, columns].astype(np.uint8)
        return (reports[:, columns // 8] >> (columns % 8).astype(np.uint8)) & np.uint8(1)

    def _support(self, reports):
        """Bit sums: over packed reports by ``bitsums.packed_column_sums`` (64-bit words, no unpacking), O(k) per
        report."""
        reports, packed = self._checked(reports)
        if not packed:
            return reports.sum(axis=0, dtype=np.int64), reports.shape[0]
        return packed_column_sums(reports, self.k), reports.shape[0]

    def privacy_table(self):
        """Exact reduction to 2 rows x 4 outputs (docs/math.md §8.3): two inputs x != x' differ only in the bits x
        and x' (the others are independent Bernoulli(q) under both and cancel from every likelihood ratio), so the
        rows are inputs x, x' and the columns the pairs (bit x, bit x') = 00, 01, 10, 11. The entries (1 - q)/2 and
        q/2 are exact doubles of the realised probabilities (q on the 2^-53 grid), so verification is about what
        is sampled."""
        keep, flip = (1.0 - self.q) / 2.0, self.q / 2.0
        return np.array([[keep, flip, keep, flip], [keep, keep, flip, flip]])

    def audit_plan(self):
        """OUE: inputs 0 and 1; classes the pair (bit 0, bit 1) (the exact 2 x 4 reduction)."""
        def classify(reports):
            bits = self.bits(reports, [0, 1]).astype(np.int64)  # packed reports, or unpacked ones
            return 2 * bits[:, 0] + bits[:, 1]

        return AuditPlan(np.array([0, 1]), self.privacy_table(), classify, ["x=0", "x=1"],
                     ["bits 00", "bits 01", "bits 10", "bits 11"])

    def device_numbers(self):
        """docs/runtime.md §5: the integer threshold of a bit."""
        return {"k": self.k, "threshold": self.threshold}

