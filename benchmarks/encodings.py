"""Benchmark: unary encoding designed under LIP (docs/math.md §7.1) beside the fixed protocols, then its perturb and
aggregate throughput. Figures side by side, never timed assertions.

1. Zipf(1.1) priors at k = 16, 256, 4096 and eps = 0.5, 1, 2, 4: the design time and figure (n x the sum of the
   variances of the unbiased estimate at the prior, given the users' values) of the designed encoding, its barrier
   lower bound, the best symmetric LIP unary encoding, and OUE, OLH, GRR and the best subset selection, each with
   its own unbiased estimate at the same eps (LDP, which is stronger: an eps-LIP mechanism is only 2 eps-LDP at
   worst, docs/math.md §2), and the optimal RR table under the same LIP notion where it can be designed (k <= 10
   is not in this table; see benchmarks/design.py).
2. Perturbing and aggregating n users at k = 256 (packed reports: k/8 bytes each), against OUE's perturb (k bytes).

Run: ``python benchmarks/encodings.py`` (``--n 200000``). Local hashing (issue 9, part 2) is not built yet.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lipdesign as ld
from lipdesign.designer.design import subset_selection_variance
from lipdesign.mechanisms import GRR, OLH, OUE


def zipf(k, s=1.1):
    weights = 1.0 / np.arange(1, k + 1) ** s
    return weights / weights.sum()


def designs():
    print("1. Unary encoding designed under eps-LIP vs the LDP protocols at the same eps, Zipf(1.1) prior: "
          "n x sum Var of each one's unbiased estimate at the prior, given the users' values (lower is better)")
    header = (f"{'k':>5} {'eps':>4} {'design s':>8} {'LIP-UE':>10} {'bound':>10} {'gap':>8} {'sym LIP-UE':>10} "
              f"{'OUE':>10} {'OLH':>10} {'GRR':>10} {'SS':>10}")
    print(header)
    print("-" * len(header))
    for k in (16, 256, 4096):
        prior = ld.Prior(zipf(k))
        for eps in (0.5, 1.0, 2.0, 4.0):
            start = time.perf_counter()
            mechanism = ld.design(prior, ld.LIP(eps), family="unary")
            seconds = time.perf_counter() - start
            figures, p = mechanism.provenance["baselines"], prior.probabilities
            ss, _ = subset_selection_variance(prior, eps)
            print(f"{k:5d} {eps:4g} {seconds:8.2f} {mechanism.mse:10.4g} {mechanism.optimality['lower_bound']:10.4g} "
                  f"{mechanism.optimality['gap']:8.1e} {figures['symmetric LIP unary']:10.4g} "
                  f"{float(OUE(eps, k).variance(p).sum()):10.4g} {float(OLH(eps, k).variance(p).sum()):10.4g} "
                  f"{float(GRR(eps, k).variance(p).sum()):10.4g} {ss:10.4g}")
    print("(design s includes the baselines; OUE, OLH, GRR and SS are eps-LDP, a stronger guarantee than eps-LIP)")


def throughput(n):
    k = 256
    prior = zipf(k)
    mechanism = ld.design(prior, ld.LIP(1.0), family="unary", baselines=False)
    oue = OUE(1.0, k)
    values = np.random.default_rng(0).choice(k, size=n, p=prior)
    print(f"\n2. Throughput at k = {k}, n = {n:,} users (LIP-UE reports: k bits packed, k/8 bytes; OUE: k bytes), "
          "best of 3")
    for name, run in (("LIP-UE perturb", lambda: mechanism.perturb(values, rng=1)),
                      ("OUE perturb", lambda: oue.perturb(values, rng=1))):
        best = min(_timed(run) for _ in range(3))
        print(f"{name:>24} {best:7.3f} s  {n / best / 1e6:6.2f} M users/s")
    reports = mechanism.perturb(values, rng=1)
    best = min(_timed(lambda: mechanism.aggregate(reports)) for _ in range(3))
    print(f"{'LIP-UE aggregate':>24} {best:7.3f} s  {n / best / 1e6:6.2f} M users/s")
    best = min(_timed(lambda: mechanism.estimate(reports)) for _ in range(3))
    print(f"{'LIP-UE estimate (reports)':>24} {best:7.3f} s")


def _timed(run):
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    args = parser.parse_args()
    designs()
    throughput(args.n)


if __name__ == "__main__":
    main()
