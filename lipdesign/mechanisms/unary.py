"""Unary encoding: optimised unary encoding (OUE) under LDP, and unary encoding with per-value bit probabilities
designed for a prior under LIP (docs/math.md §7.1, §8). Numpy and the standard library only."""

import decimal
from decimal import Decimal
from fractions import Fraction
from functools import cached_property
from types import MappingProxyType

import numpy as np

from lipdesign.errors import ValidationError, VerificationError
from lipdesign.mechanisms.base import (
    EXACT_TABLE,
    Guarantee,
    drift_lines,
    labelled_epsilons,
    worst_over_vertices,
)
from lipdesign.mechanisms.bitsums import packed_column_sums
from lipdesign.mechanisms.estimate import Estimate, shrinkage_note
from lipdesign.mechanisms.oracle import MAX_K, PureProtocol, pure_variance
from lipdesign.mechanisms.postprocess import CONSISTENCY
from lipdesign.mechanisms.sampling import BLOCK, realized_probability
from lipdesign.model import Prior, PriorSet
from lipdesign.notions import LDP, LIP, notion_from_dict
from lipdesign.objectives import as_objective
from lipdesign.validation import choice, float_array, fmt, probability_vector, upward
from lipdesign.verification import exp_bounds
from lipdesign.verification.exact import Certificate, log_upper

#: Unary reports are bit-packed, n * ceil(k / 8) bytes; ``perturb`` refuses to build more than this (2 GiB) in one
#: call. Perturb fewer users per call, or use OLH / HadamardResponse, whose reports are O(1).
MAX_OUE_BYTES = 2**31

#: ``OUE.perturb`` draws the random bytes of at most this many bits per segment (several users, or a column range of
#: one user when k is larger; a multiple of 64), then the refinement words of that segment's ties.
OUE_SEGMENT = 2**22

#: A threshold T of OUE's sampler is split as T = hi 2^56 + lo: one random byte decides unless it equals hi.
LOW_BITS = 56

#: OUE and ``UnaryEncoding`` perturb, and ``UnaryEncoding`` aggregates, in blocks of about this many unpacked bits.
PACK_BLOCK = 2**22

#: The MMSE estimate's expectation and variance given the users' values (k x k moments) are built up to this k.
MAX_MOMENTS_K = 256

#: ``UnaryEncoding.privacy_table`` is built for k <= this by default (k x (2k + 1) floats, 64 MiB).
MAX_REDUCED_K = 2048


def unary_reports(values, k, keep, other, rng, name):
    """Unary-encoding reports, uint8 (n, k): bit j is 1 with probability ``keep`` (a scalar, or one per value) when
    j is the user's value and ``other`` (scalar or one per bit) otherwise, realised exactly as ceil(p 2^53) / 2^53
    (``sampling.realized_probability``): one 64-bit word w per bit (``random_raw``), the bit being 1 iff w >> 11 <
    ceil(p 2^53), the integer form of ``rng.random() < p`` (which draws the same bits from the same words).
    Chunks of about ``BLOCK`` words: several users per chunk (first every user's k words in order, then one word per
    user for her own bit), or (k > BLOCK) one user's row in column blocks, which draws the same stream as the whole
    row at once."""
    check_report_bytes(values.size, k, name, per_report="k")
    keep, other = _grid_thresholds(keep), _grid_thresholds(other)
    out = np.empty((values.size, k), dtype=np.bool_)
    step = max(1, BLOCK // k)
    shift = np.uint64(11)
    for start in range(0, values.size, step):
        chunk = values[start:start + step]
        rows = out[start:start + chunk.size]
        for column in range(0, k, BLOCK):  # a single block unless k > BLOCK (then chunk.size == 1)
            width = min(BLOCK, k - column)
            words = rng.bit_generator.random_raw(chunk.size * width).reshape(chunk.size, width)
            np.right_shift(words, shift, out=words)
            np.less(words, other[column:column + width] if other.ndim else other, out=rows[:, column:column + width])
        rows[np.arange(chunk.size), chunk] = (rng.bit_generator.random_raw(chunk.size) >> shift) < \
            (keep[chunk] if keep.ndim else keep)
    return out.view(np.uint8)


def check_report_bytes(n, width, name, per_report="ceil(k / 8)"):
    """Refuse building n reports of ``width`` bytes (``per_report`` says how they are counted) beyond MAX_OUE_BYTES,
    before allocating."""
    if n * width > MAX_OUE_BYTES:
        raise ValidationError(f"values has {n} entries; {name} reports take n * {per_report} = {n} * {width} bytes and "
                              f"perturb builds at most MAX_OUE_BYTES = {MAX_OUE_BYTES} per call (perturb fewer users "
                              "per call, or use OLH / HadamardResponse for large k)")


def check_spare_bits(reports, k):
    """Refuse packed (n, ceil(k / 8)) reports that set any of the 8 ceil(k / 8) - k spare bits of their last byte."""
    spare = 8 * reports.shape[1] - k
    if spare and reports.size and (reports[:, -1] >> (8 - spare)).any():
        row = int(np.argmax((reports[:, -1] >> (8 - spare)) != 0))
        raise ValidationError(f"reports[{row}] sets bits beyond k = {k} in its last byte; it is not a report of this "
                              "mechanism")


def _grid_thresholds(probability):
    """ceil(p 2^53) as uint64: the number of 53-bit words below which ``unary_reports`` sets a bit."""
    return np.ceil(np.asarray(probability, dtype=float) * 2.0**53).astype(np.uint64)


def packed_unary_reports(values, k, keep, other, rng, name):
    """``unary_reports`` packed 8 bits to a byte: uint8 (n, ceil(k / 8)), bit j of a report is bit j % 8 of byte
    j // 8 (``np.packbits(..., bitorder="little")``), drawn in blocks of users so that the unpacked bits never take
    more than about PACK_BLOCK bytes (the same stream as unpacked reports). Refuses n * ceil(k / 8) >
    ``MAX_OUE_BYTES``."""
    width = (k + 7) // 8
    check_report_bytes(values.size, width, name)
    step = max(1, PACK_BLOCK // k)
    out = np.empty((values.size, width), dtype=np.uint8)
    for start in range(0, values.size, step):
        bits = unary_reports(values[start:start + step], k, keep, other, rng, name)
        out[start:start + step] = np.packbits(bits, axis=1, bitorder="little")
    return out


def packed_bernoulli(values, k, threshold, rng):
    """OUE reports, bit-packed (docs/math.md §8.3): uint8 (n, ceil(k / 8)), bit j of a report is bit j % 8 of byte
    j // 8. Bit j != x is 1 with probability ``threshold`` / 2^64 exactly, bit x (the user's value) with 1/2.

    Per user, ceil(k / 8) 64-bit words are drawn (``random_raw``) and read as little-endian bytes, byte j deciding
    bit j: with threshold = hi 2^56 + lo, bit j is 1 if byte < hi, 0 if byte > hi, and on a tie (byte = hi) 1 iff
    (w >> 8) < lo for one further word w; bit x is 1 iff its byte < 128. Users are drawn in segments of about
    OUE_SEGMENT bits (several users, or 64-aligned column ranges of one user): first the bytes of the segment, then
    one word per tie, in row-major order. Checks n * ceil(k / 8) <= ``MAX_OUE_BYTES``."""
    width = (k + 7) // 8
    check_report_bytes(values.size, width, "OUE")
    high, low = divmod(int(threshold), 2**LOW_BITS)
    out = np.empty((values.size, width), dtype=np.uint8)
    users = max(1, OUE_SEGMENT // (8 * width))  # a user draws 8 ceil(k / 8) bytes
    columns = min(k, OUE_SEGMENT)
    for start in range(0, values.size, users):
        chunk = values[start:start + users]
        for first in range(0, k, columns):  # one range unless k > OUE_SEGMENT (then chunk.size == 1)
            last = min(first + columns, k)
            draws = rng.bit_generator.random_raw(chunk.size * -(-(last - first) // 8)).astype("<u8", copy=False)
            byte = draws.view(np.uint8).reshape(chunk.size, -1)[:, :last - first]
            bits = byte < high
            ties = byte == high
            rows = np.flatnonzero((chunk >= first) & (chunk < last))
            own = chunk[rows] - first
            bits[rows, own] = byte[rows, own] < 128
            ties[rows, own] = False
            tied = np.flatnonzero(ties)
            if tied.size:
                bits.flat[tied] = (rng.bit_generator.random_raw(tied.size) >> np.uint64(64 - LOW_BITS)) < low
            out[start:start + chunk.size, first // 8:(last + 7) // 8] = np.packbits(bits, axis=1, bitorder="little")
    return out


class OUE(PureProtocol):
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

    @property
    def report_bits(self):
        return self.k

    @property
    def report_bytes(self):
        """Bytes per report: the k bits packed, ceil(k / 8)."""
        return (self.k + 7) // 8

    def __init__(self, epsilon, k):
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


#: The TV distance from the design prior at which ``UnaryEncoding.summary`` shows the worst LIP.
SUMMARY_DRIFT = 0.1

#: Digits of the decimal arithmetic of the joint LIP condition; its rounding is bounded and added (outward).
DIGITS = 50


def baseline_lines(baselines, epsilon, value, kind="LIP"):
    """Summary lines of an encoding's baselines (n x sum Var by name), grouped by guarantee: for an LIP design the
    same eps-LIP, eps-LDP (stronger), 2 eps-LDP (the level eps-LIP implies); for an LDP design all at the same
    eps-LDP; ``value`` says what the encoding offers instead (docs/math.md §7.3)."""
    groups = (("the same eps-LIP", lambda name: "LIP" in name),
              (f"eps={epsilon:g}-LDP (stronger)", lambda name: "LIP" not in name and "2 eps" not in name),
              (f"{2 * epsilon:g}-LDP (the LDP level eps-LIP implies)", lambda name: "2 eps" in name))
    if kind == "LDP":
        groups = ((f"the same eps={epsilon:g}-LDP", lambda name: True),)
    lines = []
    for heading, member in groups:
        row = sorted(((name.replace(" at 2 eps", ""), figure) for name, figure in baselines.items() if member(name)),
                     key=lambda item: item[1])
        if row:
            lines.append(f"    at {heading}: " + ", ".join(f"{name} {figure:.4g}" for name, figure in row))
    if baselines:
        lines.append("    (the optimal RR table does at least as well as any encoding under the same notion; "
                     f"{value}, docs/math.md §7.3)")
    return lines


def _guarantee_line(notion, epsilons):
    secret = getattr(notion, "secret", None)
    if isinstance(notion, LDP):
        return "  eps-LDP holds whatever the prior (and so does eps-LIP, docs/math.md §2)"
    if notion.prior_set is not None:
        return (f"  eps-LIP for X holds at every prior of the set ({notion.prior_set.kind}, "
                f"{len(notion.prior_set.vertices)} vertices; docs/math.md §2)")
    if secret is not None:
        return (f"  eps-LIP holds for the latent secret at the design prior; X itself is only LIP "
                f"{upward(epsilons['LIP for X'], 4)} there (docs/math.md §2)")
    return "  eps-LIP for X holds at the design prior; it implies at most 2 eps-LDP, whatever the prior (docs/math.md §2)"


def joint_lip_bound(a, b, prior):
    """(ratio, side, x): a number >= the largest of Pr[X = x | Y] / P_x and its inverse over all 2^k reports of unary
    encoding with bit probabilities a (bit x when X = x) and b (bit x otherwise), floats taken exactly, and where
    it is attained (docs/math.md §7.1): upper[x] = Hi_x / (P_x Hi_x + sum_{x' != x} P_x' Lo_x') and lower[x] =
    Lo_x / (P_x Lo_x + sum_{x' != x} P_x' Hi_x'), u = a/b, v = (1-a)/(1-b), Hi = max(u, v), Lo = min(u, v).

    Exact rationals would need the common denominator of k sums (O(k^2) digits), so the arithmetic is decimal at
    DIGITS digits, each rounding off by at most delta = 10^(1 - DIGITS) relatively. Every quantity is built from
    positive terms by at most 2k + 20 roundings (the sums over x' != x from prefix and suffix sums, never by
    subtraction), so each ratio is within (2k + 20) delta of the truth and is enlarged by that before the maximum
    is taken. ``prior`` must be a distribution (checked by the caller)."""
    k = len(a)
    with decimal.localcontext() as context:
        context.prec = DIGITS
        delta = Decimal(10) ** (1 - DIGITS)
        weights = [Decimal(float(x)) for x in prior]
        total = sum(weights)
        prior = [w / total for w in weights]
        high, low = _decimal_extremes(a, b)
        rest_low, rest_high = _others([p * x for p, x in zip(prior, low)]), _others([p * x for p, x in zip(prior, high)])
        margin = 1 + (2 * k + 20) * delta
        best = (Decimal(0), "upper", 0)
        for x in range(k):
            upper = high[x] / (prior[x] * high[x] + rest_low[x]) * margin
            inverse = (prior[x] * low[x] + rest_high[x]) / low[x] * margin
            best = max(best, (upper, "upper", x), (inverse, "lower", x))
    return Fraction(best[0]), best[1], best[2]


def secret_lip_bound(a, b, prior, conditional):
    """(ratio, side, g): a number >= the largest of Pr[G = g | Y] / Pr[G = g] and its inverse over all 2^k reports
    (docs/math.md §7.1), for the latent secret with T[g, x] = Pr[X = x | G = g] (``conditional``, m x k) at
    ``prior``, floats (or Fractions: a declared marginal) taken exactly. The ratio for g is
    sum_x T[g, x] rho_x / sum_x P_x rho_x with each rho_x in {u_x, v_x} chosen freely; its maximum puts
    rho_x = Hi_x on the values with the largest T[g, x]/P_x and Lo_x on the
    rest (at the optimum lambda, rho maximises sum_x (T[g, x] - lambda P_x) rho_x), so the k + 1 thresholds of that
    order (sorted exactly) are all that is examined; the inverse side likewise with P_x/T[g, x]. Decimal arithmetic
    as in ``joint_lip_bound``: each sum of at most k positive terms, each term from at most 3 roundings, and the
    ratio's division make at most 4k + 10 roundings of relative size delta/2 (half an ulp at DIGITS digits), and a
    Fraction prior one more per entry (its conversion): at most 5k + 10, below the (3k + 20) delta by which each
    ratio is enlarged."""
    k = len(a)
    with decimal.localcontext() as context:
        context.prec = DIGITS
        delta = Decimal(10) ** (1 - DIGITS)
        high, low = _decimal_extremes(a, b)
        margin = 1 + (3 * k + 20) * delta
        p_values = [x if isinstance(x, Fraction) else float(x) for x in prior]
        p_decimals = [Decimal(x.numerator) / x.denominator if isinstance(x, Fraction) else Decimal(x)
                      for x in p_values]
        p_total = sum(p_decimals)
        weights = [x / p_total for x in p_decimals]
        best = (Decimal(0), "upper", 0)
        for g, row in enumerate(conditional):
            t_floats = [float(x) for x in row]
            t_total = sum(Decimal(x) for x in t_floats)
            t = [Decimal(x) / t_total for x in t_floats]
            for side, top, bottom, top_values, bottom_values in (("upper", t, weights, t_floats, p_values),
                                                                 ("lower", weights, t, p_values, t_floats)):
                order = sorted(range(k), reverse=True, key=lambda x: (bottom_values[x] == 0, Fraction(top_values[x]) /
                                                                      Fraction(bottom_values[x] or 1)))
                ratio = _best_threshold([top[x] for x in order], [bottom[x] for x in order],
                                        [high[x] for x in order], [low[x] for x in order])
                best = max(best, (ratio * margin, side, g))
    return Fraction(best[0]), best[1], best[2]


def _best_threshold(top, bottom, high, low):
    """max over j of (sum_{i<j} top_i high_i + sum_{i>=j} top_i low_i) / (the same with bottom), by prefix and
    suffix sums (positive terms only)."""
    prefix_top, prefix_bottom = [Decimal(0)], [Decimal(0)]
    for x, y, h in zip(top, bottom, high):
        prefix_top.append(prefix_top[-1] + x * h)
        prefix_bottom.append(prefix_bottom[-1] + y * h)
    suffix_top, suffix_bottom = [Decimal(0)], [Decimal(0)]
    for x, y, lo in zip(reversed(top), reversed(bottom), reversed(low)):
        suffix_top.append(suffix_top[-1] + x * lo)
        suffix_bottom.append(suffix_bottom[-1] + y * lo)
    size = len(top)
    return max((prefix_top[j] + suffix_top[size - j]) / (prefix_bottom[j] + suffix_bottom[size - j])
               for j in range(size + 1))


def _decimal_extremes(a, b):
    """(Hi, Lo) per bit in the current decimal context: the larger and smaller of u = a/b and v = (1-a)/(1-b), the
    floats a and b taken exactly (one rounding each)."""
    a, b = [Decimal(float(x)) for x in a], [Decimal(float(x)) for x in b]
    u = [x / y for x, y in zip(a, b)]
    v = [(1 - x) / (1 - y) for x, y in zip(a, b)]
    return [max(x, y) for x, y in zip(u, v)], [min(x, y) for x, y in zip(u, v)]


def _others(terms):
    """sum_{x' != x} terms[x'] for every x, from prefix and suffix sums (no subtraction, so no cancellation)."""
    prefix, suffix = [Decimal(0)], [Decimal(0)]
    for term in terms:
        prefix.append(prefix[-1] + term)
    for term in reversed(terms):
        suffix.append(suffix[-1] + term)
    suffix.reverse()
    return [prefix[x] + suffix[x + 1] for x in range(len(terms))]


def joint_ldp_ratio(a, b, where=False):
    """max over x != x' of Pr[y | x] / Pr[y | x'] = Hi_x / Lo_x' (the other bits cancel), exactly (Fractions) for the
    floats a, b; with ``where``, also the pair (x, x') that attains it. Only values whose float Hi is within 1e-12 of
    the second largest (Lo: of the second smallest) can be in the worst pair (a float u or v is within 1e-15 of the
    exact one), so only those, merged by equal (a, b), are computed exactly."""
    pairs, first, counts = np.unique(np.column_stack([a, b]), axis=0, return_index=True, return_counts=True)
    u, v = pairs[:, 0] / pairs[:, 1], (1 - pairs[:, 0]) / (1 - pairs[:, 1])
    high, low = np.maximum(u, v), np.minimum(u, v)
    second_high = np.sort(high)[::-1][min(1, high.size - 1)]
    second_low = np.sort(low)[min(1, low.size - 1)]
    exact = {}

    def extremes(i):  # exact (Hi, Lo) of the i-th distinct (a, b)
        if i not in exact:
            x, y = Fraction(float(pairs[i, 0])), Fraction(float(pairs[i, 1]))
            ratios = (x / y, (1 - x) / (1 - y))
            exact[i] = (max(ratios), min(ratios))
        return exact[i]

    best = None
    for i in np.flatnonzero(high >= second_high * (1 - 1e-12)):
        for j in np.flatnonzero(low <= second_low * (1 + 1e-12)):
            if i == j and counts[i] < 2:
                continue  # a value against itself: ratio 1
            ratio = extremes(i)[0] / extremes(j)[1]
            if best is None or ratio > best[0]:
                best = (ratio, int(i), int(j))
    ratio, i, j = best
    same = np.flatnonzero((np.asarray(a) == pairs[j, 0]) & (np.asarray(b) == pairs[j, 1]))
    partner = int(first[j]) if i != j else int(same[same != first[i]][0])
    return (ratio, (int(first[i]), partner)) if where else ratio


class UnaryEncoding(PureProtocol):
    """Unary encoding with one pair of bit probabilities per value, designed for a prior (docs/math.md §7.1;
    ``ld.design(prior, notion, family="unary")``): bit j of the report is 1 with probability ``a[j]`` when j is the
    user's value and ``b[j]`` otherwise. Reports: the k bits packed 8 to a byte, uint8 (n, ceil(k / 8))
    (``bits(reports)`` unpacks them). The notion: eps-LIP for X, for a latent secret, or for X over a prior set, or
    eps-LDP; the objective: "frequencies" (every bit informative) or "histogram" (Bayesian; a = b is allowed).

    The guarantee is verified EXACTLY on the realised probabilities (``rng.random() < p`` realises
    ceil(p 2^53)/2^53): the joint condition of docs/math.md §7.1 over all 2^k reports, rounded outward; a
    claim it fails raises VerificationError. Estimates (``ld.Estimate``): "unbiased" per bit, (C_j/n - b_j)/(a_j -
    b_j), with standard errors given the users' values; "mmse", the joint posterior mean (no errors: biased toward
    the prior). ``bit_probabilities`` gives (a, b) as realised. Its weights, like an RR table's, are designed at the
    prior; what unary encoding adds is a design whose cost grows linearly in k.
    """

    family = "unary"
    client_cost = "O(k) per report (k bits)"
    methods = ("unbiased", "mmse")

    def __init__(self, a, b, notion, prior, *, objective="frequencies", provenance=None):
        self.prior = prior if isinstance(prior, Prior) else Prior(prior)
        self.objective = as_objective(objective)
        if self.objective.kind not in ("frequencies", "histogram"):
            raise ValidationError(f"objective is {self.objective!r}; a unary encoding estimates the histogram: "
                                  "ld.Frequencies() or ld.BayesHistogram()")
        if not isinstance(notion, (LIP, LDP)) or getattr(notion, "secret", None) and notion.prior_set is not None:
            raise ValidationError(f"notion is {notion!r}; unary encoding is verified under ld.LIP(eps) (for X, a "
                                  "latent secret, or X over a prior set) or ld.LDP(eps) (a secret and a prior set "
                                  "together are not built for it)")
        notion.check(self.prior)  # a secret's size and marginal, the design prior inside a prior set
        self.notion = notion
        self.k = self.prior.k
        self.epsilon = notion.epsilon
        self.input_domain = self.prior.domain
        requested = {}
        for name, values in (("a", a), ("b", b)):
            values = float_array(values, name, 1)
            if values.size != self.k:
                raise ValidationError(f"{name} has {values.size} entries; it must have one per value ({self.k})")
            bad = ~((values > 0) & (values < 1))
            if bad.any():
                x = int(np.argmax(bad))
                raise ValidationError(f"{name}[{x}] is {fmt(values[x])}; it must lie strictly between 0 and 1 (a bit "
                                      "that is certain has an infinite epsilon)")
            requested[name] = values
        self.a, self.b = (np.array(requested[name]) for name in ("a", "b"))
        self.p, self.q = realized_probability(self.a), realized_probability(self.b)
        same = self.p == self.q
        if same.any() and self.objective.population:
            x = int(np.argmax(same))
            raise ValidationError(f"a[{x}] and b[{x}] ({self.a[x]:.17g}, {self.b[x]:.17g}) are realised as the same "
                                  "probability on the sampler's 2^-53 grid; such a bit says nothing about its value "
                                  "and has no unbiased estimate")
        self._weights = self.prior.probabilities / self.prior.probabilities.sum()
        for array in (self.a, self.b, self.p, self.q, self._weights):
            array.setflags(write=False)
        self.provenance = MappingProxyType(dict(provenance or {}))
        lip = self._lip_for_x(self.prior.probabilities)
        ldp_ratio, (high, low) = joint_ldp_ratio(self.p, self.q, where=True)
        ldp = Certificate("LDP", self.epsilon, log_upper(ldp_ratio), bool(ldp_ratio <= exp_bounds(self.epsilon)[0]),
                          True, {"inputs": [high, low]})
        if isinstance(notion, LDP):
            self._claimed = ldp
        elif notion.prior_set is not None:  # the worst over the set's vertices, where the ratios peak
            self._claimed = self.certificate_at(notion.prior_set)
        else:
            self._claimed = self._secret_claim() if self.secret else lip
        if not self._claimed.passed:
            where = ", ".join(f"{name} {value}" for name, value in self._claimed.worst.items() if name != "prior")
            raise VerificationError(f"the bit probabilities are not {notion.kind} with eps={notion.epsilon:g}: the "
                                    f"joint epsilon of the realised bits is {self._claimed.epsilon:.12g} (exact, "
                                    f"docs/math.md §7.1), at {where}")
        epsilons = {"claimed": self._claimed.epsilon}
        if self.secret:
            epsilons["LIP for the secret"] = self._claimed.epsilon
        self.epsilons = MappingProxyType({**epsilons, "LIP for X": lip.epsilon, "LDP": ldp.epsilon})
        self.mse = (float(pure_variance(self.prior.probabilities, 1, self.p, self.q).sum()) if self.objective.population
                    else self.bayes_risk)

    @property
    def secret(self):
        """The latent secret the design protects (a SecretModel), or None for X itself."""
        return getattr(self.notion, "secret", None)

    def certificate_at(self, prior):
        """The exact Certificate of eps-LIP, for the secret the design protects (X itself without one), at ``prior``
        (a Prior, probabilities, or a PriorSet: the worst over its vertices, where a linear-fractional ratio peaks),
        from the joint condition of docs/math.md §7.1 on the realised bit probabilities (decimal arithmetic with its
        rounding bounded and added: ``joint_lip_bound``, ``secret_lip_bound``)."""
        if isinstance(prior, PriorSet):
            return worst_over_vertices(self, prior)
        probabilities = probability_vector(getattr(prior, "probabilities", prior), "prior", length=self.k)
        return self._lip_for_x(probabilities) if self.secret is None else self._secret_certificate(probabilities)

    def _secret_certificate(self, probabilities):
        ratio, side, value = secret_lip_bound(self.p, self.q, probabilities, self.notion.conditional(self.k))
        return self._lip_certificate(ratio, {"side": side, "secret": value,
                                             "prior": [float(p) for p in probabilities]})

    def _secret_claim(self):
        """The claim for the secret at the design prior and at the declared joint's marginal, if any (docs/math.md
        §1): the larger certificate."""
        declared = self.notion.declared_prior()
        return max([self.certificate_at(self.prior)] + ([] if declared is None else
                                                         [self._secret_certificate(declared)]),
                   key=lambda certificate: certificate.epsilon)

    def _lip_for_x(self, probabilities):
        ratio, side, value = joint_lip_bound(self.p, self.q, probabilities)
        return self._lip_certificate(ratio, {"side": side, "value": value, "prior": probabilities.tolist()})

    def _lip_certificate(self, ratio, worst):
        return Certificate("LIP", self.epsilon, log_upper(ratio), bool(ratio <= exp_bounds(self.epsilon)[0]), True,
                           worst, arithmetic="50-digit decimal, rounding bounded")

    def privacy_table(self, max_k=MAX_REDUCED_K):
        """The reports that decide every posterior ratio, for audits (floats): for each value x, the report with bit
        x at its more likely side for x and every other bit at its less likely one, and the reverse (docs/math.md
        §7.1: the worst ratios at ANY prior come from these 2k reports), then one column for all other reports.
        Each entry multiplies k floats, so it may differ from the realised probability in the last digit: the
        certificates come from the exact joint condition (``certificate_at``), not from this table."""
        if self.k > max_k:
            raise ValidationError(f"k is {self.k}; the reduced table has k (2k + 1) entries, built for k <= {max_k}")
        likely_one = self.p > self.q  # for bit x, is 1 the report that favours X = x?
        patterns = []
        for x in range(self.k):
            high = ~likely_one.copy()
            high[x] = likely_one[x]
            patterns += [high, ~high]
        patterns = np.unique(np.array(patterns), axis=0)
        # Pr[pattern | x']: bit j is 1 with p_j if j = x' else q_j
        logs = np.where(patterns, np.log(self.q), np.log1p(-self.q)).sum(axis=1)  # every bit at its "other" law
        own = np.where(patterns, np.log(self.p / self.q), np.log1p(-self.p) - np.log1p(-self.q))  # (patterns, k)
        columns = np.exp(logs[:, None] + own).T  # (k, patterns)
        return np.column_stack([columns, np.maximum(1.0 - columns.sum(axis=1), 0.0)])

    @property
    def bit_probabilities(self):
        """(a, b) as the sampler realises them: Pr[bit j = 1 | X = j] and Pr[bit j = 1 | X != j]."""
        return self.p, self.q

    @property
    def guarantee(self):
        return Guarantee(self.notion.kind, self.epsilon, EXACT_TABLE,
                         "joint condition over all 2^k reports on the realised bit probabilities (docs/math.md §7.1)")

    @property
    def default_method(self):
        """"unbiased" for a population design, "mmse" (the joint posterior mean) for a Bayesian one."""
        return "unbiased" if self.objective.population else "mmse"

    def _method(self, method):
        method = super()._method(method)
        same = self.p == self.q
        if method == "unbiased" and same.any():
            x = int(np.argmax(same))
            raise ValidationError(f"method is 'unbiased'; bit {x} of this Bayesian design says nothing about its value "
                                  "(a = b), so there is no unbiased estimate: use method='mmse'")
        return method

    def _certify(self):
        return self._claimed

    def verified_epsilons(self):
        return dict(self.epsilons)

    @property
    def optimality(self):
        return self.provenance.get("optimality")

    def summary(self):
        """The guarantee, n x sum Var of the unbiased estimate beside the baselines the design recorded, and the
        bound (docs/math.md §7.1, §11)."""
        kind = self.notion.kind
        lines = [f"unary encoding, {kind} eps={self.epsilon:g}, k={self.k}: bit j is 1 with a[j] if X = j, b[j] otherwise",
                 "  guarantee (exactly verified on the realised bits, rounded up): " +
                 labelled_epsilons(self.epsilons, self.notion, upward),
                 _guarantee_line(self.notion, self.epsilons)]
        if self.objective.population:
            lines.append("  accuracy: n x sum of the variances of the unbiased estimate, at the design prior, given the "
                         f"users' values: {self.mse:.6g}")
        else:
            lines.append("  accuracy: histogram MSE per user of the joint posterior mean at the design prior (right only "
                         f"when the prior is the truth, docs/math.md §11): {self.mse:.6g}")
        if self.optimality:
            lines.append(f"    lower bound {self.optimality['lower_bound']:.6g} ({self.optimality['bound']}), gap "
                         f"{self.optimality['gap']:.2e}")
        informative = np.flatnonzero(self.p != self.q)
        if self.provenance.get("informative_bits") == 1 and informative.size == 1:  # a design of _one_bit's form
            label = self.prior.labels[int(informative[0])]
            lines.append(f"  the design degenerates to ONE informative bit, for value {label!r}: the binary channel of "
                         f"docs/math.md §6 on 1[X = {label!r}]; the other bits are coin flips (docs/math.md §7.1)")
        if self.objective.population:
            lines.append("  the joint posterior mean (method='mmse', biased toward the prior): histogram MSE per user "
                         f"at the design prior {self.bayes_risk:.6g}")
        lines += baseline_lines(self.provenance.get("baselines", {}), self.epsilon,
                                "unary encoding's value is a design whose cost grows linearly in k", kind)
        if kind == "LDP":
            return "\n".join(lines)
        try:  # the ball's vertices are listed, which limits k (PriorSet's vertex budget)
            worst = self.certificate_at(PriorSet.tv_ball(self.prior.probabilities, SUMMARY_DRIFT)).epsilon
        except ValidationError:
            lines.append(f"  at another prior LIP may be larger (never above the LDP level "
                         f"{upward(self.epsilons['LDP'], 4)}): ld.verify(mech, prior=...) computes it exactly")
            return "\n".join(lines)
        lines += drift_lines("the secret" if self.secret is not None else "X", SUMMARY_DRIFT, worst, self.epsilon,
                             self.epsilons["LDP"])
        return "\n".join(lines)

    def parameters(self):
        parameters = {"prior": self.prior.to_dict(), "notion": self.notion.to_dict(), "a": self.a.tolist(),
                      "b": self.b.tolist()}
        if not self.objective.population:  # files of population designs keep their form
            parameters["objective"] = self.objective.to_dict()
        return parameters

    @classmethod
    def from_parameters(cls, parameters, provenance=None):
        return cls(parameters["a"], parameters["b"], notion_from_dict(parameters["notion"]),
                   Prior.from_dict(parameters["prior"]), objective=parameters.get("objective", "frequencies"),
                   provenance=provenance)

    @classmethod
    def example(cls):
        """Symmetric UE at P = (0.2, 0.3, 0.5), eps = 1: a = 1/2 and u/v = 0.9 (e - p_min)/(1 - p_min), inside the
        exact condition of docs/math.md §7.1 (u/v <= (e^eps - p_min)/(1 - p_min))."""
        prior, e = np.array([0.2, 0.3, 0.5]), np.exp(1.0)
        ratio = 0.9 * (e - 0.2) / 0.8  # u / v with a = 1/2: (1/2 / b) / (1/2 / (1 - b)) = (1 - b)/b
        b = 1.0 / (1.0 + ratio)
        return cls(np.full(3, 0.5), np.full(3, b), LIP(1.0), Prior(prior))

    @property
    def report_bits(self):
        return self.k

    @property
    def report_bytes(self):
        """Bytes per report: the k bits packed, ceil(k / 8)."""
        return (self.k + 7) // 8

    def _perturb(self, values, rng, user_ids):
        """Reports packed 8 bits to a byte (``packed_unary_reports``; ``bits`` unpacks them), with a and b as
        requested: the sampler realises ``bit_probabilities``, which are what is verified."""
        return packed_unary_reports(values, self.k, self.a, self.b, rng, "unary")

    def empty_reports(self):
        return np.zeros((0, self.report_bytes), dtype=np.uint8)

    def bits(self, reports):
        """The (n, k) uint8 bits of packed ``reports``, checked (for audits; aggregation never unpacks all of them)."""
        return np.unpackbits(self._packed(reports), axis=1, count=self.k, bitorder="little")

    def _packed(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.report_bytes or reports.dtype != np.uint8:
            raise ValidationError(f"reports has shape {reports.shape} and dtype {reports.dtype}; unary reports are "
                                  f"uint8 of shape (n, {self.report_bytes}): k = {self.k} bits packed 8 to a byte")
        check_spare_bits(reports, self.k)
        return reports

    def _statistics(self, reports):
        """The support counts (bit sums) and the sums of the joint posteriors Pr[X = . | y] ∝ P_x rho_x(y_x)
        (docs/math.md §7.1), O(k) per report, in blocks of unpacked bits."""
        reports = self._packed(reports)
        counts, posteriors = np.zeros(self.k, dtype=np.int64), np.zeros(self.k)
        # P_x rho_x(y_x) = base_x + y_x change_x: the normaliser S = sum_x base_x + y . change is one product per
        # block, and so is the sum over reports of the posteriors, base sum(1/S) + change * (y^T (1/S))
        base = self._weights * (1 - self.p) / (1 - self.q)
        change = self._weights * self.p / self.q - base
        step = max(1, PACK_BLOCK // self.k)
        for start in range(0, reports.shape[0], step):
            chunk = np.unpackbits(reports[start:start + step], axis=1, count=self.k, bitorder="little")
            counts += chunk.sum(axis=0, dtype=np.int64)
            bits = chunk.astype(float)
            inverse = 1.0 / (base.sum() + bits @ change)
            posteriors += base * inverse.sum() + change * (inverse @ bits)
        return reports.shape[0], {"support": counts, "posterior_sums": posteriors}

    def _estimate(self, aggregate, method):
        if method == "mmse":
            return aggregate["posterior_sums"] / aggregate.n
        return super()._estimate(aggregate, method)

    def estimate(self, reports, *, method=None, consistency=None):
        """The unbiased frequencies (C_j/n - b_j)/(a_j - b_j) as an ``ld.Estimate`` with plug-in standard errors given
        the users' values: ``variance`` at the estimate clipped to [0, 1] (docs/math.md §7.1, §11);
        ``method="mmse"``: the mean of the joint posteriors (biased toward the design prior, no standard errors);
        ``consistency="norm-sub"`` projects the frequencies onto the simplex (the errors stay those of ``raw``)."""
        aggregate = self._aggregate_of(reports)
        method = self._method(method)
        consistency = None if consistency is None else choice(consistency, "consistency", CONSISTENCY)
        raw = self._estimate(aggregate, method)
        if method == "mmse":
            errors, note = np.full(self.k, np.nan), shrinkage_note()
        else:
            errors, note = np.sqrt(pure_variance(np.clip(raw, 0.0, 1.0), aggregate.n, self.p, self.q)), ""
        return Estimate(self._consistent(raw, consistency), errors, n=aggregate.n, method=method,
                        names=self.input_domain.names(), raw=raw, note=note)

    @cached_property
    def bayes_risk(self):
        """The histogram MSE per user of the joint posterior mean at the design prior (docs/math.md §7.1: one
        integral in t, O(k) per node)."""
        from solvers.unary_posterior import joint_mmse_risk

        return joint_mmse_risk(self._weights, self.p, self.q)

    @cached_property
    def _posterior_moments(self):
        if self.k > MAX_MOMENTS_K:
            raise ValidationError(f"method is 'mmse'; its expectation and variance given the users' values need "
                                  f"E[posterior | X = x] for every x, O(k^2) per quadrature node, built for k <= "
                                  f"{MAX_MOMENTS_K} (k is {self.k}): the MMSE estimate is biased toward the prior "
                                  "anyway; use method='unbiased' or mech.bayes_risk")
        from solvers.unary_posterior import joint_mmse_moments

        return joint_mmse_moments(self._weights, self.p, self.q)

    def _expected(self, frequencies, method, user_ids):
        if method == "mmse":
            return frequencies @ self._posterior_moments[0]
        return frequencies

    def _variance(self, frequencies, n, method, user_ids):
        if method == "mmse":
            first, second = self._posterior_moments
            return frequencies @ (second - first**2) / n
        return pure_variance(frequencies, n, self.p, self.q)
