"""Unbiasedness and interval coverage of the many-rounds and many-attributes estimates on Adult (issue 28's target
"estimates unbiased with correct coverage, Adult as the population, users drawn with replacement").

For each mechanism: R repetitions of n users drawn with replacement from Adult's 45,222 records (fresh users and
fresh noise each time); the estimate's 95% intervals (its own standard errors) against the drawn users' frequencies:
the share of (repetition, value) pairs covered, and the largest |mean z| over the values (mean of R z-scores, sd
1 / sqrt(R) when unbiased). The longitudinal mechanisms report memoised (one device key per user) on marital-status;
ld.rounds.change is checked over two memoised rounds of the same devices in which a fifth of them change value.

    python benchmarks/many_rounds_coverage.py [--n 100000] [--repetitions 200]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import time

import numpy as np

import lipdesign as ld
from lipdesign.datasets import adult_path
from lipdesign.designer.longitudinal import design_longitudinal

ATTRIBUTES = ("sex", "race", "income", "marital-status")
Z = 1.959963984540054


def adult():
    with gzip.open(adult_path(), "rt", newline="") as handle:
        rows = list(csv.DictReader(handle))
    labels = [sorted({row[name] for row in rows}) for name in ATTRIBUTES]
    codes = np.array([[labels[j].index(row[name]) for j, name in enumerate(ATTRIBUTES)] for row in rows])
    return codes, [len(values) for values in labels]


def summary(name, z, covered, seconds):
    z = np.asarray(z)
    print(f"{name:<34}{np.mean(covered):>10.4f}{np.abs(z.mean(axis=0)).max():>14.3f}{z.std(axis=0).mean():>12.3f}"
          f"{seconds:>10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repetitions", type=int, default=200)
    args = parser.parse_args()
    codes, k = adult()
    marital = ATTRIBUTES.index("marital-status")
    prior = np.bincount(codes[:, marital], minlength=k[marital]) / len(codes)
    rng = np.random.default_rng(0)
    print(f"Adult, n = {args.n:,} users drawn with replacement per repetition, R = {args.repetitions}; 95% intervals "
          f"from each estimate's standard errors; max |mean z| has sd {1 / np.sqrt(args.repetitions):.3f} when "
          "unbiased")
    print(f"{'mechanism':<34}{'coverage':>10}{'max|mean z|':>14}{'mean sd z':>12}{'seconds':>10}")
    single = {"L-GRR (1, 2)": ld.mechanisms.LongitudinalGRR(1.0, 2.0, k[marital]),
              "L-OSUE (1, 2)": ld.mechanisms.LongitudinalUE(1.0, 2.0, k[marital]),
              "L-OLH (1, 2)": ld.mechanisms.LongitudinalOLH(1.0, 2.0, k[marital]),
              "l-table (LIP 1, 2; R = 30)": design_longitudinal(prior, 1.0, 2.0, rounds=30)}
    for name, mechanism in single.items():
        start, z, covered = time.perf_counter(), [], []
        for _ in range(args.repetitions):
            values = codes[rng.integers(0, len(codes), args.n), marital]
            truth = np.bincount(values, minlength=k[marital]) / args.n
            estimate = mechanism.estimate(mechanism.perturb_memoised(values, mechanism.device_keys(args.n, rng=rng),
                                                                     rng=rng))
            z.append((estimate.values - truth) / estimate.standard_errors)
            covered.append(np.abs(estimate.values - truth) <= Z * estimate.standard_errors)
        summary(name, z, covered, time.perf_counter() - start)
    for name, mechanism in {"SPL (eps 1)": ld.mechanisms.SPL(1.0, k), "SMP (eps 1)": ld.mechanisms.SMP(1.0, k),
                            "RS+FD[GRR] (eps 1)": ld.mechanisms.RSFD(1.0, k, "grr")}.items():
        start, z, covered = time.perf_counter(), [], []
        for _ in range(args.repetitions):
            values = codes[rng.integers(0, len(codes), args.n)]
            truth = np.concatenate([np.bincount(values[:, j], minlength=size) / args.n for j, size in enumerate(k)])
            estimate = mechanism.estimate(mechanism.perturb(values, rng=rng))
            z.append((estimate.values - truth) / estimate.standard_errors)
            covered.append(np.abs(estimate.values - truth) <= Z * estimate.standard_errors)
        summary(name, z, covered, time.perf_counter() - start)
    mechanism = single["L-OSUE (1, 2)"]
    start, z, covered = time.perf_counter(), [], []
    for _ in range(args.repetitions):
        before = codes[rng.integers(0, len(codes), args.n), marital]
        after = np.where(rng.random(args.n) < 0.2, rng.integers(0, k[marital], args.n), before)
        keys = mechanism.device_keys(args.n, rng=rng)
        truth = (np.bincount(after, minlength=k[marital]) - np.bincount(before, minlength=k[marital])) / args.n
        change = ld.rounds.change(mechanism, mechanism.perturb_memoised(before, keys, rng=rng),
                                  mechanism.perturb_memoised(after, keys, rng=rng))
        z.append((change.values - truth) / change.standard_errors)
        covered.append(np.abs(change.values - truth) <= Z * change.standard_errors)
    summary("L-OSUE change, 2 rounds (aligned)", z, covered, time.perf_counter() - start)


if __name__ == "__main__":
    main()
