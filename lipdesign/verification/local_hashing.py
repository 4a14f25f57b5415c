"""Exact certificate arithmetic of local hashing (docs/math.md §7.2): every cell's binary channel, at both ends of
its widened cell of the bucket-0 mass, in rational arithmetic. Standard library and numpy only."""

from fractions import Fraction

from lipdesign.verification.exact import Certificate, exp_bounds, log_upper


def cell_certificate(epsilon, flip0, flip1, widen):
    """The exact Certificate that each cell j of ``len(flip0)`` cells of the bucket-0 mass, whose channel flips
    bucket z with probability flip_z[j] (floats, taken exactly), is eps-LIP at every mass of [j/cells - widen,
    (j+1)/cells + widen] clipped to [0, 1]: the posterior ratios are linear-fractional in the mass, so the two ends
    of the cell are the extremes (docs/math.md §7.2). A zero-mass bucket's row is kept (the limit of small masses,
    conservative)."""
    cells, bound, widen = len(flip0), exp_bounds(epsilon)[0], Fraction(widen)
    best, worst = Fraction(0), {}
    for j in range(cells):
        f0, f1 = Fraction(float(flip0[j])), Fraction(float(flip1[j]))
        rows = ((1 - f0, f0), (f1, 1 - f1))
        for mass in (max(Fraction(j, cells) - widen, Fraction(0)), min(Fraction(j + 1, cells) + widen, Fraction(1))):
            for y in (0, 1):
                output = mass * rows[0][y] + (1 - mass) * rows[1][y]
                for z in (0, 1):
                    ratio = max(rows[z][y] / output, output / rows[z][y])
                    if ratio > best:
                        best, worst = ratio, {"cell": j, "bucket_mass": float(mass), "bucket": z, "bit": y}
    return Certificate("LIP", epsilon, log_upper(best), bool(best <= bound), True, worst,
                       arithmetic=f"exact rational, every one of the {cells} cell channels at both ends of its "
                                  "widened cell: covers every hash")
