"""Benchmark: TablePerturber.perturb against the cost of drawing the uniforms alone.

Run: ``python benchmarks/perturb.py [n] [chunk_size ...]`` (defaults: n = 10**7, the default chunk size).
For n values drawn from a 12-value prior and a 12x12 table it times, best of 3 in one run:
  (a) ``rng.random(n)`` alone (the floor: one uniform per value),
  (b) ``TablePerturber.perturb`` (alias tables, one uniform per value),
  (c) a naive per-element CDF comparison: the cumulative table row is gathered for every value and the output
      is the number of CDF entries <= u (an O(n_out) scan per value; done in chunks of the same size as (b)
      so that it does not need n * 12 * 8 bytes of memory at once).
and prints seconds and the ratio to (a). The target is (b) <= 5x (a).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lipdesign.mechanisms.sampling import DEFAULT_CHUNK, TablePerturber


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def naive_cdf(table: np.ndarray, values: np.ndarray, rng: np.random.Generator, chunk: int) -> np.ndarray:
    cdf = np.cumsum(table, axis=1)
    cdf[:, -1] = np.inf  # rounding in the cumulative sum must not push u past the last entry
    out = np.empty(values.size, dtype=np.int64)
    for start in range(0, values.size, chunk):
        xs = values[start : start + chunk]
        u = rng.random(xs.size)
        out[start : start + chunk] = (u[:, None] >= cdf[xs]).sum(axis=1)
    return out


def main(argv: list[str]) -> None:
    n = int(float(argv[1])) if len(argv) > 1 else 10**7
    chunks = [int(c) for c in argv[2:]] or [DEFAULT_CHUNK]
    k = 12
    setup = np.random.default_rng(12345)
    prior = setup.dirichlet(np.ones(k))
    table = setup.uniform(0.0, 1.0, size=(k, k)) ** 3  # skewed rows
    table[setup.random((k, k)) < 0.2] = 0.0  # and some zeros
    np.fill_diagonal(table, table.diagonal() + 0.5)
    table /= table.sum(axis=1, keepdims=True)
    values = setup.choice(k, size=n, p=prior)

    print(f"n = {n:,} values, k = n_out = {k}, numpy {np.__version__}, best of 3")
    t_a = best_of(lambda: np.random.default_rng(1).random(n))
    print(f"(a) rng.random(n)                      {t_a:8.3f} s   1.00x")
    for chunk in chunks:
        tp = TablePerturber(table, chunk_size=chunk)
        t_b = best_of(lambda tp=tp: tp.perturb(values, rng=1))
        print(f"(b) TablePerturber.perturb chunk={chunk:<7d} {t_b:8.3f} s   {t_b / t_a:.2f}x")
    t_c = best_of(lambda: naive_cdf(table, values, np.random.default_rng(1), DEFAULT_CHUNK))
    print(f"(c) naive per-element CDF              {t_c:8.3f} s   {t_c / t_a:.2f}x")

    # sanity: (b) and (c) sample the same distribution (compare the output histograms loosely)
    hb = np.bincount(TablePerturber(table).perturb(values, rng=2), minlength=k) / n
    hc = np.bincount(naive_cdf(table, values, np.random.default_rng(3), DEFAULT_CHUNK), minlength=k) / n
    print(
        f"max |histogram(b) - histogram(c)| = {np.abs(hb - hc).max():.2e} (sampling noise ~ {1 / np.sqrt(n):.0e})"
    )


if __name__ == "__main__":
    main(sys.argv)
