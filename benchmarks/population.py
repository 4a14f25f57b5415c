"""Benchmark: designs for the population estimate (ld.Frequencies, docs/math.md §11), figures side by side.

For each k, on a Zipf(1.1) prior at one epsilon: the design time and figure of the A-optimal LIP and LDP tables
(n x the sum of the variances of the GLS estimate at the prior, given the users' values), the certified lower
bound and gap, and the same figure for GRR, OUE, OLH and the best subset selection at the same epsilon, and for the
A-optimal LDP table at 2 eps (every eps-LIP mechanism is 2 eps-LDP, docs/math.md §2). Then the uniform-prior closed
forms at large k. Never timed assertions.

Run: ``python benchmarks/population.py`` (``--max-k 12``, ``--epsilon 1``). Targets (issue 8): k = 8 under 1 s,
k = 10 under 2 s, k = 12 under 30 s.
"""

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lipdesign as ld
from lipdesign.designer import uniform_prior_optimum
from lipdesign.mechanisms import GRR, OLH, OUE


def zipf(k, s=1.1):
    weights = 1.0 / np.arange(1, k + 1) ** s
    return weights / weights.sum()


def subset_selection(prior, epsilon):
    """The best figure over d of subset selection: report a d-subset S with weight e^eps if it holds the value."""
    k, e, best = prior.size, math.exp(epsilon), math.inf
    for d in range(1, k):
        subsets = np.array([[x in s for x in range(k)] for s in itertools.combinations(range(k), d)]).T
        table = np.where(subsets, e, 1.0)
        table /= table.sum(axis=1, keepdims=True)
        best = min(best, ld.Frequencies().value(table, prior))
    return best


def timed(prior, notion):
    start = time.perf_counter()
    mechanism = ld.design(prior, notion, ld.Frequencies(), baselines=False)
    return time.perf_counter() - start, mechanism


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-k", type=int, default=12)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    eps = args.epsilon
    ld.design(zipf(3), ld.LIP(eps), ld.Frequencies(), baselines=False)  # imports cvxpy once, outside the timings
    print(f"A-optimal designs on Zipf(1.1), eps = {eps}: n x sum Var of the GLS estimate at the prior, given the "
          "users' values (lower is better)")
    header = (f"{'k':>3} {'LIP s':>7} {'LIP':>9} {'bound':>9} {'gap':>8} {'LDP s':>7} {'LDP':>9} {'LDP@2eps':>9} "
              f"{'GRR':>9} {'OUE':>9} {'OLH':>9} {'SS':>9}")
    print(header)
    print("-" * len(header))
    for k in range(4, args.max_k + 1, 2):
        prior = zipf(k)
        lip_time, lip = timed(prior, ld.LIP(eps))
        ldp_time, ldp = timed(prior, ld.LDP(eps))
        _, ldp2 = timed(prior, ld.LDP(2 * eps))
        grr = ld.Frequencies().value(GRR(eps, k).full_table(), prior)
        oue = OUE(eps, k).variance(prior).sum()
        olh = OLH(eps, k).variance(prior).sum()
        ss = subset_selection(prior, eps) if k <= 12 else math.nan
        print(f"{k:>3} {lip_time:7.2f} {lip.mse:9.4f} {lip.optimality['lower_bound']:9.4f} "
              f"{lip.optimality['gap']:8.1e} {ldp_time:7.2f} {ldp.mse:9.4f} {ldp2.mse:9.4f} {grr:9.4f} {oue:9.4f} "
              f"{olh:9.4f} {ss:9.4f}")
    print(f"\nUniform prior, closed forms (docs/math.md §11), eps = {eps}:")
    for k in (64, 256, 1024):
        start = time.perf_counter()
        lip, lip_form = uniform_prior_optimum(k, eps, "LIP")
        ldp, ldp_form = uniform_prior_optimum(k, eps, "LDP")
        ldp2, _ = uniform_prior_optimum(k, 2 * eps, "LDP")
        seconds = time.perf_counter() - start
        print(f"k = {k:>4}: LIP {lip:10.3f} ({lip_form}), LDP {ldp:10.3f} ({ldp_form}), LDP at 2 eps {ldp2:9.3f}, "
              f"{seconds * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
