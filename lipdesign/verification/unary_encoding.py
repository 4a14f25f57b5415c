"""Exact certificate arithmetic of unary encoding (docs/math.md §7.1): the joint LIP bound over all 2^k reports, for X
and for a latent secret, and the joint LDP ratio, on the floats taken exactly and rounded outward. Standard library
and numpy only."""

import decimal
from decimal import Decimal
from fractions import Fraction

import numpy as np

#: Digits of the decimal arithmetic of the joint LIP condition; its rounding is bounded and added (outward).
DIGITS = 50


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
        rest_low, rest_high = (_others([p * x for p, x in zip(prior, low)]),
                               _others([p * x for p, x in zip(prior, high)]))
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

    best: tuple[Fraction, int, int] | None = None
    for i in np.flatnonzero(high >= second_high * (1 - 1e-12)):
        for j in np.flatnonzero(low <= second_low * (1 + 1e-12)):
            if i == j and counts[i] < 2:
                continue  # a value against itself: ratio 1
            ratio = extremes(i)[0] / extremes(j)[1]
            if best is None or ratio > best[0]:
                best = (ratio, int(i), int(j))
    if best is None:  # a single value: no x' != x, so no ratio above 1 (as a table mechanism of one row)
        return (Fraction(1), (int(first[0]), int(first[0]))) if where else Fraction(1)
    ratio, worst, other = best
    same = np.flatnonzero((np.asarray(a) == pairs[other, 0]) & (np.asarray(b) == pairs[other, 1]))
    partner = int(first[other]) if worst != other else int(same[same != first[worst]][0])
    return (ratio, (int(first[worst]), partner)) if where else ratio

