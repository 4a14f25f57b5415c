"""Benchmark: throughput and accuracy of the lipdesign.harmony mechanisms, and GRR / OUE / OLH side by side
with pure-ldp 1.2.0 — figures to read, never timed assertions.

Run: ``python benchmarks/harmony.py`` (10^6 users; ``--quick`` for 10^5, ``--users N``, ``--seed S``,
``--epsilon E``, ``--k K``, ``--d D``, ``--repeats R``, ``--no-pure-ldp``).

1. Every mechanism (numeric ones at d = 10, categorical ones at k = 64, HarmonyMixed on 3 numeric + 2
   categorical attributes): ``perturb`` and ``estimate`` time (best of 3) and users/second, the largest error
   of the estimate against the population's true means or frequencies, and the theoretical standard deviation
   (``variance``) of the worst coordinate, so that a fast but wrong mechanism shows.
2. GRR, OUE and OLH against pure-ldp 1.2.0 on the same values, k and epsilon. pure-ldp privatises one user per
   Python call and aggregates one report per call; its time is that of the list comprehension over
   ``client.privatise`` and of ``server.aggregate_all`` + ``server.estimate_all`` (no normalisation). A pure-ldp
   run predicted (from a small pilot) to take longer than ``--pure-ldp-limit`` seconds is measured at a tenth of
   the users (10^5 for 10^6) and its times scaled linearly; the table says so. pure-ldp's FastLH (its fast,
   heuristic OLH with 1000 public hash functions) is shown as an extra row.

pure-ldp is not a dependency of lipdesign: install it beside lipdesign in a separate venv, e.g.

    python3 -m venv /tmp/bench-venv
    /tmp/bench-venv/bin/pip install -e . "pure-ldp==1.2.0" statsmodels "xxhash<4" scikit-learn
    /tmp/bench-venv/bin/python benchmarks/harmony.py

(pure-ldp 1.2.0 imports scikit-learn and statsmodels at import time without declaring them). Without pure-ldp
the comparison columns are skipped with a note.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import math
import os
import platform
import random
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lipdesign  # noqa: E402

PURE_LDP_INSTALL = ('pip install "pure-ldp==1.2.0" statsmodels "xxhash<4" scikit-learn  '
                    "(in a separate venv beside lipdesign; see this file's docstring)")
FAST_LH_HASHES = 1000  # pure-ldp's own choice in its paper experiments (simulations/paper_experiments.py)


# --------------------------------------------------------------------------------------------------- helpers

def best_of(fn, repeats):
    """(best wall time in seconds, result of the last call)."""
    best, result = math.inf, None
    for _ in range(repeats):
        result = None
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def rate(n, seconds):
    return f"{n / seconds:9.3g}" if seconds > 0 else f"{'inf':>9}"


def flat(estimates):
    """A mechanism's estimate (array, or HarmonyMixed's list of floats and arrays) as one float vector."""
    if isinstance(estimates, list):
        return np.concatenate([np.atleast_1d(np.asarray(e, dtype=float)) for e in estimates])
    return np.asarray(estimates, dtype=float).ravel()


def max_error(estimate, truth):
    return float(np.max(np.abs(flat(estimate) - flat(truth))))


def max_sd(variance):
    return float(np.sqrt(np.max(flat(variance))))


def make_population(n, d, k, k_small, seed):
    """n users: d numeric attributes in [-1, 1] (2 Beta(a, b) - 1, a, b drawn per column), a categorical value
    in 0..k-1 (a permuted Zipf(1.1) distribution) and a second one in 0..k_small-1 (Dirichlet(1) weights)."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0.5, 5.0, d), rng.uniform(0.5, 5.0, d)
    numeric = 2.0 * rng.beta(a, b, size=(n, d)) - 1.0
    zipf = rng.permutation(1.0 / np.arange(1, k + 1) ** 1.1)
    categories = rng.choice(k, size=n, p=zipf / zipf.sum())
    small = rng.choice(k_small, size=n, p=rng.dirichlet(np.ones(k_small)))
    return numeric, categories, small


# ------------------------------------------------------------------------------------------- lipdesign runs

class Case:
    """One row of table 1: how to build the mechanism, perturb, estimate, and what the truth is."""

    def __init__(self, name, shape, build, values, truth, perturb_kwargs=None, estimate_kwargs=None,
                 variance=None, note=None):
        self.name, self.shape, self.build, self.values, self.truth = name, shape, build, values, truth
        self.perturb_kwargs = perturb_kwargs or {}
        self.estimate_kwargs = estimate_kwargs or {}
        self.variance = variance  # (mechanism, values) -> variance per estimated quantity
        self.note = note


def run_case(case, repeats, seed):
    """Time one mechanism: perturb (best of ``repeats``, the same seed each time) then estimate (best of
    ``repeats`` on the last reports). Returns a dict; an exception is caught and reported in the row."""
    try:
        mechanism = case.build()
        t_perturb, reports = best_of(lambda: mechanism.perturb(case.values, rng=seed, **case.perturb_kwargs),
                                     repeats)
        t_estimate, estimate = best_of(lambda: mechanism.estimate(reports, **case.estimate_kwargs), repeats)
        sd = max_sd(case.variance(mechanism, case.values)) if case.variance else float("nan")
        return {"perturb": t_perturb, "estimate": t_estimate, "error": max_error(estimate, case.truth),
                "sd": sd, "mechanism": mechanism, "reports_bytes": getattr(reports, "nbytes", 0)}
    except Exception as error:  # noqa: BLE001 (a broken mechanism must not hide the other rows)
        return {"failure": f"{type(error).__name__}: {error}"}


def lipdesign_cases(args, numeric, categories, small):
    from lipdesign import harmony as H

    n, d, k, eps, seed = args.users, args.d, args.k, args.epsilon, args.seed
    true_means = numeric.mean(axis=0)
    f = np.bincount(categories, minlength=k) / n
    f_small = np.bincount(small, minlength=args.k_small) / n
    mixed_attributes = ["numeric"] * 3 + [args.k_small, k]
    mixed_values = np.column_stack([numeric[:, :3], small, categories]).astype(float)
    mixed_truth = [*true_means[:3], f_small, f]
    user_ids = np.arange(n, dtype=np.int64)

    def numeric_variance(mechanism, values):
        return mechanism.variance(values)

    def frequency_variance(mechanism, values):
        return mechanism.variance(f, n)

    cases = [
        Case("Laplace", f"d={d}", lambda: H.Laplace(epsilon=eps, d=d), numeric, true_means,
             variance=numeric_variance),
        Case("Duchi", f"d={d}", lambda: H.Duchi(epsilon=eps, d=d), numeric, true_means,
             variance=numeric_variance),
        Case("HarmonyNumeric", f"d={d}", lambda: H.HarmonyNumeric(epsilon=eps, d=d), numeric, true_means,
             variance=numeric_variance),
        Case("HarmonyNumeric (public j)", f"d={d}",
             lambda: H.HarmonyNumeric(epsilon=eps, d=d, coordinates="public", seed=seed), numeric, true_means,
             perturb_kwargs={"user_ids": user_ids},
             variance=lambda mechanism, values: mechanism.variance(values, user_ids=user_ids)),
        Case("Piecewise", f"d={d}", lambda: H.Piecewise(epsilon=eps, d=d), numeric, true_means,
             variance=numeric_variance),
        Case("Hybrid", f"d={d}", lambda: H.Hybrid(epsilon=eps, d=d), numeric, true_means,
             variance=numeric_variance),
        Case("GRR", f"k={k}", lambda: H.GRR(epsilon=eps, k=k), categories, f, variance=frequency_variance),
        Case("OUE", f"k={k}", lambda: H.OUE(epsilon=eps, k=k), categories, f, variance=frequency_variance),
        Case("OLH", f"k={k}", lambda: H.OLH(epsilon=eps, k=k), categories, f, variance=frequency_variance),
        Case("HadamardResponse", f"k={k}", lambda: H.HadamardResponse(epsilon=eps, k=k), categories, f,
             variance=frequency_variance),
        Case("HarmonyCategorical", f"k={k}", lambda: H.HarmonyCategorical(epsilon=eps, k=k, seed=seed),
             categories, f, variance=frequency_variance,
             note="projection estimate (the paper's): mean G f, not f; the cross-talk bias is in max|err|"),
        Case("HarmonyCategorical unbiased", f"k={k}",
             lambda: H.HarmonyCategorical(epsilon=eps, k=k, seed=seed), categories, f,
             estimate_kwargs={"method": "unbiased"},
             variance=lambda mechanism, values: mechanism.variance(f, n, method="unbiased"),
             note="same perturb, estimate(reports, method='unbiased') (G^-1 of the projection)"),
        Case("HarmonyMixed", f"3 num + k={args.k_small},{k}",
             lambda: H.HarmonyMixed(epsilon=eps, attributes=mixed_attributes, seed=seed), mixed_values,
             mixed_truth, variance=numeric_variance,
             note="max|err| against means and the frequencies of both categorical attributes (projection "
                  "estimates, so the cross-talk bias counts)"),
    ]
    return cases


def print_table_1(args, cases, results):
    n = args.users
    print(f"\n1. lipdesign.harmony at n = {n:,} users, eps = {args.epsilon}, best of {args.repeats} "
          f"(seconds; users/s = n / seconds)")
    header = (f"{'mechanism':<28} {'shape':<20} {'perturb s':>10} {'users/s':>9} {'estimate s':>10} "
              f"{'users/s':>9} {'max|err|':>9} {'sd':>8}")
    print(header)
    print("-" * len(header))
    for case, result in zip(cases, results):
        if "failure" in result:
            print(f"{case.name:<28} {case.shape:<20} FAILED: {result['failure'][:150]}")
            continue
        print(f"{case.name:<28} {case.shape:<20} {result['perturb']:10.4f} {rate(n, result['perturb'])} "
              f"{result['estimate']:10.4f} {rate(n, result['estimate'])} {result['error']:9.2e} "
              f"{result['sd']:8.1e}")
    print("max|err|: largest |estimate - truth| over the d means or k frequencies (truth: the population's own "
          "means / histogram);\nsd: sqrt of the largest theoretical variance of one estimate (the mechanism's "
          "variance()), for scale: max|err| of an unbiased\nestimate over d or k coordinates is typically 2-3 sd.")
    for case, result in zip(cases, results):
        if case.note and "failure" not in result:
            print(f"  {case.name}: {case.note}")
    categorical = next((r for c, r in zip(cases, results) if c.name == "HarmonyCategorical"
                        and "failure" not in r), None)
    if categorical is not None:
        mechanism = categorical["mechanism"]
        f = np.bincount(case_categories(cases), minlength=args.k) / n
        bias = np.abs(mechanism.expected_estimate(f) - f).max()
        print(f"  HarmonyCategorical: m = {mechanism.m}; cross-talk bias max|G f - f| = {bias:.2e} for this "
              "seed and population")


def case_categories(cases):
    return next(c.values for c in cases if c.name == "GRR")


# -------------------------------------------------------------------------------------------- pure-ldp runs

def load_pure_ldp():
    """The pure-ldp classes, or the reason they are not there."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            de = importlib.import_module("pure_ldp.frequency_oracles.direct_encoding")
            ue = importlib.import_module("pure_ldp.frequency_oracles.unary_encoding")
            lh = importlib.import_module("pure_ldp.frequency_oracles.local_hashing")
    except ImportError as error:
        return None, f"{type(error).__name__}: {error}"
    version = metadata.version("pure-ldp")
    return {"version": version, "de": de, "ue": ue, "lh": lh}, None


def pure_ldp_oracles(pure, eps, k):
    """name -> (client factory, server factory, (p, q) of its pure-protocol estimator, note).

    ``index_mapper=lambda x: x``: our values are already 0-based (pure-ldp's default maps x to x - 1)."""
    de, ue, lh = pure["de"], pure["ue"], pure["lh"]

    def identity(x):
        return x

    def de_client():
        return de.DEClient(eps, k, index_mapper=identity)

    def de_server():
        return de.DEServer(eps, k, index_mapper=identity)

    def ue_client():
        return ue.UEClient(eps, k, use_oue=True, index_mapper=identity)

    def ue_server():
        return ue.UEServer(eps, k, use_oue=True, index_mapper=identity)

    def lh_client():
        return lh.LHClient(eps, k, use_olh=True, index_mapper=identity)

    def lh_server():
        return lh.LHServer(eps, k, use_olh=True, index_mapper=identity)

    def flh_client():
        return lh.FastLHClient(eps, k, FAST_LH_HASHES, use_olh=True, index_mapper=identity)

    def flh_server():
        return lh.FastLHServer(eps, k, FAST_LH_HASHES, use_olh=True, index_mapper=identity)

    grr, oue, olh = de_client(), ue_client(), lh_client()
    return {
        "GRR": (de_client, de_server, (grr.p, grr.q), "DEClient / DEServer"),
        "OUE": (ue_client, ue_server, (oue.p, oue.q), "UEClient / UEServer, use_oue=True"),
        "OLH": (lh_client, lh_server, (olh.p, 1.0 / olh.g), f"LHClient / LHServer, use_olh=True (g = {olh.g})"),
        "FastLH": (flh_client, flh_server, (olh.p, 1.0 / olh.g),
                   f"FastLHClient / FastLHServer, {FAST_LH_HASHES} hash functions, use_olh=True"),
    }


def pure_run(client_factory, server_factory, values, k, seed):
    """One pure-ldp run on ``values`` (a list of ints): (perturb seconds, estimate seconds, frequencies)."""
    random.seed(seed)
    np.random.seed(seed)  # pure-ldp draws from numpy's legacy global state and from `random`
    client = client_factory()
    server = server_factory()  # built outside the timing, as lipdesign's mechanisms are (FastLH hashes here)
    gc.collect()
    start = time.perf_counter()
    reports = [client.privatise(v) for v in values]
    t_perturb = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pure-ldp warns when n < 10^4 or eps < 1
        start = time.perf_counter()
        server.aggregate_all(reports)
        counts = server.estimate_all(range(k), suppress_warnings=True)
        t_estimate = time.perf_counter() - start
    return t_perturb, t_estimate, np.asarray(counts, dtype=float) / len(values)


def compare_with_pure_ldp(args, categories, results_by_name):
    from lipdesign import harmony as H
    from lipdesign.harmony.frequency import pure_variance

    n, k, eps = args.users, args.k, args.epsilon
    print(f"\n2. GRR / OUE / OLH: lipdesign against pure-ldp, n = {n:,}, k = {k}, eps = {eps}, "
          f"best of {args.repeats}, same values")
    pure, reason = load_pure_ldp()
    if pure is None:
        print(f"   pure-ldp is not importable here ({reason}); its columns are skipped.\n"
              f"   To compare: {PURE_LDP_INSTALL}")
        return
    if args.no_pure_ldp:
        print("   skipped (--no-pure-ldp)")
        return
    oracles = pure_ldp_oracles(pure, eps, k)
    values = categories.tolist()  # pure-ldp takes one Python value per call; converted outside the timing
    f = np.bincount(categories, minlength=k) / n

    # Pilot: predict each run's time from a small sample, so that slow ones are measured on fewer users.
    pilot_n = min(n, 5000)
    plans = {}
    for name, (client, server, _, _) in oracles.items():
        t_p, t_e, _ = pure_run(client, server, values[:pilot_n], k, args.seed)
        predicted = (t_p + t_e) * n / pilot_n
        measured = n
        while measured > pilot_n and (t_p + t_e) * measured / pilot_n > args.pure_ldp_limit:
            measured = max(pilot_n, measured // 10)
        plans[name] = (measured, predicted)
    total = sum((p * m / n) * args.repeats for m, p in plans.values())
    print(f"   pure-ldp {pure['version']} (predicted from a {pilot_n:,}-user pilot: about {total:.0f} s for "
          "its runs)")

    header = (f"{'oracle':<7} {'library':<10} {'users timed':>11} {'perturb s':>10} {'users/s':>9} "
              f"{'estimate s':>10} {'users/s':>9} {'max|err|':>9} {'sd':>8}")
    print(header)
    print("-" * len(header))
    footnotes = []
    for name, (client, server, (p, q), note) in oracles.items():
        lip = results_by_name.get(name)
        if lip is not None:
            if "failure" in lip:
                print(f"{name:<7} {'lipdesign':<10} FAILED: {lip['failure'][:120]}")
            else:
                print(f"{name:<7} {'lipdesign':<10} {n:>11,} {lip['perturb']:10.4f} {rate(n, lip['perturb'])} "
                      f"{lip['estimate']:10.4f} {rate(n, lip['estimate'])} {lip['error']:9.2e} {lip['sd']:8.1e}")
        measured, predicted = plans[name]
        subset = values[:measured]
        f_subset = np.bincount(categories[:measured], minlength=k) / measured
        t_perturb, t_estimate = math.inf, math.inf
        for _ in range(args.repeats):
            t_p, t_e, estimate = pure_run(client, server, subset, k, args.seed)
            t_perturb, t_estimate = min(t_perturb, t_p), min(t_estimate, t_e)
        scale = n / measured
        mark = "*" if measured < n else " "
        error = np.abs(estimate - f_subset).max()
        sd = math.sqrt(pure_variance(f_subset, measured, p, q).max())
        label = name if lip is None else ""
        print(f"{label:<7} {'pure-ldp':<10} {measured:>11,} {t_perturb * scale:9.4f}{mark} "
              f"{rate(n, t_perturb * scale)} {t_estimate * scale:9.4f}{mark} {rate(n, t_estimate * scale)} "
              f"{error:9.2e} {sd:8.1e}")
        if lip is not None and "failure" not in lip:
            print(f"{'':<7} {'speed-up':<10} {'':>11} {t_perturb * scale / lip['perturb']:9.1f}x {'':>9} "
                  f"{t_estimate * scale / lip['estimate']:9.1f}x")
        else:
            print(f"{'':<7} (no lipdesign counterpart: {note})")
        if measured < n:
            line = (f"* {name}: pure-ldp measured at {measured:,} users (a {n:,}-user run was predicted at "
                    f"{predicted:.0f} s > {args.pure_ldp_limit:.0f} s) and its times scaled x{scale:g}; its "
                    f"max|err| and sd are at {measured:,} users")
            if lip is not None and "failure" not in lip:
                mechanism = {"GRR": H.GRR, "OUE": H.OUE, "OLH": H.OLH}[name](epsilon=eps, k=k)
                small = mechanism.estimate(mechanism.perturb(categories[:measured], rng=args.seed))
                line += f" (lipdesign at {measured:,} users: max|err| {np.abs(small - f_subset).max():.2e})"
            footnotes.append(line)
        del estimate
        gc.collect()
    for line in footnotes:
        print(line)
    print("   pure-ldp classes: " + "; ".join(f"{name} = {note}" for name, (_, _, _, note) in oracles.items()))
    print("   pure-ldp timing: perturb = [client.privatise(v) for v in values]; estimate = "
          "server.aggregate_all(reports) + server.estimate_all(range(k)) (no normalisation), counts / n.")
    print("   Both libraries use the same unbiased estimator (C_v/n - q)/(p - q); pure-ldp's OLH uses q = 1/g "
          "(xxhash treated as ideal),\n   lipdesign's OLH the exact collision probability of its (a x + b) mod P "
          "mod g family; lipdesign runs at e^eps (1 - 1e-12).")
    print("   FastLH is pure-ldp's heuristic OLH: each user picks one of a fixed set of public hash functions, so "
          "its aggregation is O(1) per report.")
    del f


# -------------------------------------------------------------------------------------------------- driver

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=float, default=1e6, help="number of users (default 10^6)")
    parser.add_argument("--quick", action="store_true", help="10^5 users")
    parser.add_argument("--seed", type=int, default=2024, help="seed of the population, rngs and public seeds")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--d", type=int, default=10, help="dimension of the numeric mechanisms")
    parser.add_argument("--k", type=int, default=64, help="categories of the frequency oracles")
    parser.add_argument("--k-small", type=int, default=8, help="categories of HarmonyMixed's second categorical "
                        "attribute")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--pure-ldp-limit", type=float, default=120.0,
                        help="seconds above which a pure-ldp run is measured at a tenth of the users and scaled")
    parser.add_argument("--no-pure-ldp", action="store_true", help="skip the pure-ldp comparison")
    args = parser.parse_args(argv)
    args.users = 10**5 if args.quick else int(args.users)
    if args.users < 1 or args.repeats < 1:
        parser.error("--users and --repeats must be positive")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        pure_version = metadata.version("pure-ldp")
    except metadata.PackageNotFoundError:
        pure_version = "not installed"
    print(f"lipdesign {lipdesign.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
          f"pure-ldp {pure_version}, {os.cpu_count()} cores")
    print(f"users n = {args.users:,}, eps = {args.epsilon}, d = {args.d}, k = {args.k}, seed = {args.seed}, "
          f"best of {args.repeats}")
    numeric, categories, small = make_population(args.users, args.d, args.k, args.k_small, args.seed)
    cases = lipdesign_cases(args, numeric, categories, small)
    results = [run_case(case, args.repeats, args.seed) for case in cases]
    print_table_1(args, cases, results)
    by_name = {case.name: result for case, result in zip(cases, results)}
    del results
    compare_with_pure_ldp(args, categories, {name: by_name[name] for name in ("GRR", "OUE", "OLH")})


if __name__ == "__main__":
    main()
