"""Benchmark: exact verification with the interval prefilter against the pure-rational path (docs/math.md §3.7).

Run: ``python benchmarks/verify.py [k ...]`` (default k = 10, 50, 150, 300, 1024). For each k and notion it times,
in one run, ``tightest(table, notion, prior, exact=True)`` (float64 intervals, rational arithmetic only where an
interval reaches the largest lower end) beside the old path (every column in rational arithmetic, the corners of
the simplex listed as priors) and checks that both give the same ratio and place. Two tables per k:
  - "GRR": the k x k generalised randomized response table at eps = 1 (every column ties: the worst case of the
    prefilter, which must then evaluate every column exactly);
  - "random": k x k rows drawn from Dirichlet(50), stored as floats (rows that do not sum to 1 exactly, no ties).
Notions: LDP, LIP at a Zipf(1.1) prior, WC-LIP, and LIP for a 3-value latent secret. The old path is skipped
where it would take over OLD_LIMIT seconds by its measured growth (printed as "-"). Last, the construction of a
TableMechanism (the table its sampler realises, verified for the claim, LIP for X and LDP) at k = 150.
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lipdesign as ld
from lipdesign.mechanisms import TableMechanism
from lipdesign.verification.exact import MAX_VERIFY_ENTRIES, _rational_tightest, tightest

#: The old path is not run where its k^2 (k^3 for WC-LIP) growth from the last measured k predicts more than this.
OLD_LIMIT = 60.0


def zipf(k, s=1.1):
    weights = 1.0 / np.arange(1, k + 1) ** s
    return weights / weights.sum()


def grr(k, epsilon=1.0):
    e = np.exp(epsilon)
    table = np.full((k, k), 1.0 / (e + k - 1))
    np.fill_diagonal(table, e / (e + k - 1))
    return table


def secret_model(k, rng):
    return ld.SecretModel.from_conditional(rng.dirichlet(np.ones(k), size=3))


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def main(ks):
    rng = np.random.default_rng(0)
    print(f"MAX_VERIFY_ENTRIES = {MAX_VERIFY_ENTRIES}")
    print(f"{'table':>7} {'notion':>10} {'k':>5} {'old s':>9} {'new s':>9} {'speed-up':>9}  same")
    predicted = {}
    for k in ks:
        prior = ld.Prior(zipf(k))
        notions = {"LDP": ld.LDP(1.0), "LIP": ld.LIP(1.0), "WC-LIP": ld.WorstCaseLIP(1.0),
                   "LIP secret": ld.LIP(1.0, secret=secret_model(k, rng))}
        tables = {"GRR": grr(k), "random": rng.dirichlet(np.full(k, 50.0), size=k)}
        for table_name, table in tables.items():
            for notion_name, notion in notions.items():
                new, new_time = timed(tightest, table, notion, prior, exact=True)
                key = (table_name, notion_name)
                last = predicted.get(key)
                growth = 3 if notion_name == "WC-LIP" else 2
                if last is None or last[1] * (k / last[0]) ** growth <= OLD_LIMIT:
                    old, old_time = timed(_rational_tightest, table, notion, prior)
                    predicted[key] = (k, old_time)
                    same = "yes" if old == new else "NO"
                    row = f"{old_time:9.3f} {new_time:9.3f} {old_time / new_time:9.1f}  {same}"
                else:
                    row = f"{'-':>9} {new_time:9.3f} {'-':>9}  -"
                print(f"{table_name:>7} {notion_name:>10} {k:5d} {row}")
    k = 150
    prior = ld.Prior(zipf(k))
    for notion in (ld.LDP(5.0), ld.LIP(5.0), ld.WorstCaseLIP(5.0)):
        _, seconds = timed(TableMechanism, rng.dirichlet(np.full(k, 50.0), size=k), notion, prior)
        print(f"TableMechanism k = {k}, {notion.kind} eps = 5 (random rows): constructed in {seconds:.2f} s")


if __name__ == "__main__":
    main([int(k) for k in sys.argv[1:]] or [10, 50, 150, 300, 1024])
