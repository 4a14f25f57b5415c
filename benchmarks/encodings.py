"""Benchmark: unary encoding and local hashing designed under LIP (docs/math.md §7.1, §7.2) beside the fixed
protocols, then their perturb and aggregate throughput. Figures side by side, never timed assertions.

1. Zipf(1.1) priors at k = 16, 256, 4096 and eps = 0.5, 1, 2, 4: the design time and figure (n x the sum of the
   variances of the unbiased estimate at the prior, given the users' values) of the designed unary encoding (with
   its barrier lower bound) and of the designed local hashing (g = 2; beyond 2^17 hashes its figure averages
   2^14 sampled hashes, standard error shown), the per-bin lower bound over every eps-LIP mechanism, the best
   symmetric LIP unary encoding, and OUE, OLH, GRR and the best subset selection, each with its own unbiased
   estimate at the same eps (LDP, which is stronger: an eps-LIP mechanism is only 2 eps-LDP at worst,
   docs/math.md §2). Pooled local hashing with g = 8 (GLS) at k = 16 only: its verified table grows as k x 256 g.
   The optimal RR table under the same LIP notion is not in this table (k <= 10 only; see benchmarks/design.py).
2. Perturbing and aggregating n users at k = 256: LIP-UE (k bits packed, k/8 bytes per report) against OUE
   (k bytes), and LIP-LH (a seed and a bit) against OLH (two seeds and a bucket).

Run: ``python benchmarks/encodings.py`` (``--n 200000``).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lipdesign as ld
from lipdesign.designer.baselines import subset_selection_variance, symmetric_unary_variance
from lipdesign.designer.bounds import per_bin_bound
from lipdesign.mechanisms import GRR, OLH, OUE

#: Pooled local hashing (a table of k x about 256 g columns, verified exactly) is designed up to this k here.
POOLED_MAX_K = 16


def zipf(k, s=1.1):
    weights = 1.0 / np.arange(1, k + 1) ** s
    return weights / weights.sum()


def _designed(prior, eps, family, buckets=2):
    start = time.perf_counter()
    mechanism = ld.design(prior, ld.LIP(eps), family=family, baselines=False, buckets=buckets)
    _ = mechanism.mse  # local hashing computes its figure on first use: part of the design time here
    return mechanism, time.perf_counter() - start


def designs():
    print("1. Unary encoding and local hashing designed under eps-LIP vs the LDP protocols at the same eps, Zipf(1.1) "
          "prior: n x sum Var of each one's unbiased estimate at the prior, given the users' values (lower is better)")
    header = (f"{'k':>5} {'eps':>4} {'UE s':>6} {'LIP-UE':>9} {'UE gap':>7} {'LH s':>6} {'LIP-LH':>9} {'+-':>6} "
              f"{'LH8 s':>6} {'LH g=8':>9} {'per-bin':>9} {'sym UE':>9} {'OUE':>9} {'OLH':>9} {'GRR':>9} {'SS':>9}")
    print(header)
    print("-" * len(header))
    for k in (16, 256, 4096):
        prior = ld.Prior(zipf(k))
        p = prior.probabilities
        for eps in (0.5, 1.0, 2.0, 4.0):
            unary, unary_seconds = _designed(prior, eps, "unary")
            hashing, hashing_seconds = _designed(prior, eps, "hashing")
            symmetric = symmetric_unary_variance(prior, eps)[0]
            if k <= POOLED_MAX_K:
                pooled, pooled_seconds = _designed(prior, eps, "hashing", buckets=8)
                pooled_text = f"{pooled_seconds:6.2f} {pooled.mse:9.4g}"
            else:
                pooled_text = f"{'-':>6} {'-':>9}"
            ss, _ = subset_selection_variance(prior, eps)
            print(f"{k:5d} {eps:4g} {unary_seconds:6.2f} {unary.mse:9.4g} {unary.optimality['gap']:7.1e} "
                  f"{hashing_seconds:6.2f} {hashing.mse:9.4g} {hashing.mse_error:6.2g} {pooled_text} "
                  f"{per_bin_bound(prior, ld.LIP(eps)):9.4g} {symmetric:9.4g} "
                  f"{float(OUE(eps, k).variance(p).sum()):9.4g} {float(OLH(eps, k).variance(p).sum()):9.4g} "
                  f"{float(GRR(eps, k).variance(p).sum()):9.4g} {ss:9.4g}")
    print("(UE gap: to the barrier bound of its own family; LH g=8: pooled local hashing, GLS, designed up to k = "
          f"{POOLED_MAX_K} here; per-bin: a bound over every eps-LIP mechanism; OUE, OLH, GRR and SS are eps-LDP, a "
          "stronger guarantee than eps-LIP)")


def throughput(n):
    k = 256
    prior = zipf(k)
    unary = ld.design(prior, ld.LIP(1.0), family="unary", baselines=False)
    hashing = ld.design(prior, ld.LIP(1.0), family="hashing", baselines=False)
    oue, olh = OUE(1.0, k), OLH(1.0, k)
    values = np.random.default_rng(0).choice(k, size=n, p=prior)
    print(f"\n2. Throughput at k = {k}, n = {n:,} users, best of 3 (reports: LIP-UE k/8 bytes, OUE k bytes; LIP-LH "
          "a seed of 17 bits and 1 bit, OLH two 31-bit seeds and a bucket)")
    for name, mechanism in (("LIP-UE", unary), ("OUE", oue), ("LIP-LH", hashing), ("OLH", olh)):
        best = min(_timed(lambda m=mechanism: m.perturb(values, rng=1)) for _ in range(3))
        reports = mechanism.perturb(values, rng=1)
        aggregate = min(_timed(lambda m=mechanism, r=reports: m.aggregate(r)) for _ in range(3))
        print(f"{name:>8} perturb {best:7.3f} s ({n / best / 1e6:6.2f} M users/s)   aggregate {aggregate:7.3f} s "
              f"({n / aggregate / 1e6:6.2f} M users/s)")


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
