"""Benchmark: throughput and accuracy of the lipdesign.mechanisms (Harmony's and the frequency oracles), and
GRR / OUE / OLH side by side with pure-ldp 1.2.0 — figures to read, never timed assertions.

Run: ``python benchmarks/harmony.py`` (10^6 users; ``--quick`` for 10^5, ``--users N``, ``--seed S``,
``--epsilon E``, ``--d D``, ``--k K``, ``--repeats R``, ``--no-pure-ldp``).

1. Every mechanism (numeric ones at d = 10, categorical ones at k = 64, HarmonyMixed on 3 numeric and 2
   categorical attributes): ``perturb`` time, then the server side in its two steps, ``aggregate(reports)``
   (counting, the part that grows with n) and ``estimate(aggregate)``, best of 3, and users/second; the
   largest error of the estimate against the population's true means or frequencies; and the theoretical
   standard deviation (``variance``) of the worst coordinate, so that a fast but wrong mechanism shows.
2. GRR, OUE and OLH against pure-ldp 1.2.0 on the same values, k and epsilon. pure-ldp privatises one user
   per Python call and aggregates one report per call; its times are those of the list comprehension over
   ``client.privatise`` and of ``server.aggregate_all`` + ``server.estimate_all`` (no normalisation), beside
   lipdesign's ``perturb`` and ``aggregate`` + ``estimate(aggregate)``. A
   pure-ldp run predicted (from a small pilot) to take longer than ``--pure-ldp-limit`` seconds is measured at
   a tenth of the users (10^5 for 10^6) and its times scaled linearly; the table says so. pure-ldp's FastLH
   (its fast, heuristic OLH with 1000 public hash functions) is shown as an extra row.

pure-ldp is not a dependency of lipdesign: install it beside lipdesign in a separate venv, e.g.

    python3 -m venv /tmp/bench-venv
    /tmp/bench-venv/bin/pip install -e . "pure-ldp==1.2.0" statsmodels "xxhash<4" scikit-learn
    /tmp/bench-venv/bin/python benchmarks/harmony.py

(pure-ldp 1.2.0 imports scikit-learn and statsmodels when it is imported, without declaring them). Without
pure-ldp the comparison columns are skipped with a note.
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

import lipdesign
from lipdesign.mechanisms.sampling import EXP_MARGIN

PURE_LDP_INSTALL = ('pip install "pure-ldp==1.2.0" statsmodels "xxhash<4" scikit-learn  '
                    "(in a separate venv beside lipdesign; see this file's docstring)")
#: pure-ldp's own choice for FastLH in its paper experiments (pure_ldp/simulations/paper_experiments.py).
FAST_LH_HASHES = 1000


# --------------------------------------------------------------------------------------------------- helpers

def best_of(fn, repeats):
    """(best wall time in seconds, result of the last call)."""
    best, result = math.inf, None
    for _ in range(repeats):
        result = None  # free the previous result before the next run
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def rate(n, seconds):
    return f"{n / seconds:9.3g}" if seconds > 0 else f"{'inf':>9}"


def flat(estimates):
    """An estimate (an array, or HarmonyMixed's list of floats and arrays) as one float vector."""
    if isinstance(estimates, list):
        return np.concatenate([np.atleast_1d(np.asarray(e, dtype=float)) for e in estimates])
    return np.asarray(estimates, dtype=float).ravel()


def max_error(estimate, truth):
    return float(np.max(np.abs(flat(estimate) - flat(truth))))


def max_sd(variance):
    return float(np.sqrt(np.max(flat(variance))))


def perturb_rng(seed):
    """The generator every perturb call gets: seeded from (seed, 1), a stream independent of the population's
    (seed, 0) — reusing the population's stream would correlate the noise with the values."""
    return np.random.default_rng([seed, 1])


def make_population(n, d, k, k_small, seed):
    """n users: d numeric attributes in [-1, 1] (2 Beta(a, b) - 1, a and b drawn per column), a categorical
    value in 0..k-1 (a permuted Zipf(1.1) distribution) and a second one in 0..k_small-1 (Dirichlet(1))."""
    rng = np.random.default_rng([seed, 0])
    a, b = rng.uniform(0.5, 5.0, d), rng.uniform(0.5, 5.0, d)
    numeric = 2.0 * rng.beta(a, b, size=(n, d)) - 1.0
    zipf = rng.permutation(1.0 / np.arange(1, k + 1) ** 1.1)
    categories = rng.choice(k, size=n, p=zipf / zipf.sum())
    small = rng.choice(k_small, size=n, p=rng.dirichlet(np.ones(k_small)))
    return numeric, categories, small


def timing_columns(n, *seconds, mark=" "):
    """Seconds and users/second of each timed step."""
    return " ".join(f"{value:9.4f}{mark} {rate(n, value)}" for value in seconds)


# ------------------------------------------------------------------------------------------- lipdesign runs

class Case:
    """One row of table 1: how to build the mechanism, its inputs, the truth, and its theoretical variance."""

    def __init__(self, name, shape, build, values, truth, variance, perturb_kwargs=None, estimate_kwargs=None,
                 note=None):
        self.name, self.shape, self.build, self.values, self.truth = name, shape, build, values, truth
        self.variance = variance  # mechanism -> variance of each estimated quantity
        self.perturb_kwargs = perturb_kwargs or {}
        self.estimate_kwargs = estimate_kwargs or {}
        self.note = note


def run_case(case, repeats, seed):
    """Time one mechanism: ``perturb`` (best of ``repeats``, the same seed each time), then ``aggregate`` of
    the last reports and ``estimate`` of that aggregate (each best of ``repeats``). The estimate from the
    reports themselves must be the same numbers (the contract); a difference is reported. An exception is
    caught and reported in the row."""
    try:
        mechanism = case.build()

        def perturb():
            return mechanism.perturb(case.values, rng=perturb_rng(seed), **case.perturb_kwargs)

        t_perturb, reports = best_of(perturb, repeats)
        t_aggregate, aggregate = best_of(lambda: mechanism.aggregate(reports), repeats)
        t_estimate, estimate = best_of(lambda: mechanism.estimate(aggregate, **case.estimate_kwargs), repeats)
        direct = mechanism.estimate(reports, **case.estimate_kwargs)
        return {"perturb": t_perturb, "aggregate": t_aggregate, "estimate": t_estimate,
                "error": max_error(estimate, case.truth), "sd": max_sd(case.variance(mechanism)),
                "mismatch": max_error(estimate, direct), "mechanism": mechanism}
    except Exception as error:  # noqa: BLE001 (a broken mechanism must not hide the other rows)
        return {"failure": f"{type(error).__name__}: {error}"}


def lipdesign_cases(args, numeric, categories, small):
    from lipdesign import mechanisms as M

    n, d, k, eps, seed = args.users, args.d, args.k, args.epsilon, args.seed
    means = numeric.mean(axis=0)
    f = np.bincount(categories, minlength=k) / n
    f_small = np.bincount(small, minlength=args.k_small) / n
    mixed_attributes = ["numeric"] * 3 + [args.k_small, k]
    mixed_values = np.column_stack([numeric[:, :3], small, categories]).astype(float)
    user_ids = np.arange(n, dtype=np.int64)

    def numeric_case(name, build, **options):
        return Case(name, f"d={d}", build, numeric, means,
                    options.pop("variance", lambda mechanism: mechanism.variance(numeric)), **options)

    def frequency_case(name, build, **options):
        return Case(name, f"k={k}", build, categories, f,
                    options.pop("variance", lambda mechanism: mechanism.variance(f, n)), **options)

    return [
        numeric_case("Laplace", lambda: M.Laplace(epsilon=eps, d=d)),
        numeric_case("Duchi", lambda: M.Duchi(epsilon=eps, d=d)),
        numeric_case("HarmonyNumeric", lambda: M.HarmonyNumeric(epsilon=eps, d=d)),
        numeric_case("HarmonyNumeric (public j)",
                     lambda: M.HarmonyNumeric(epsilon=eps, d=d, coordinates="public", seed=seed),
                     perturb_kwargs={"user_ids": user_ids},
                     variance=lambda mechanism: mechanism.variance(numeric, user_ids=user_ids),
                     note="j = hash(seed, user id); unbiased for the mean over each hashed bucket, so "
                          "against the population\n    mean max|err| also holds that bucket's sampling error "
                          "(not in sd)"),
        numeric_case("Piecewise", lambda: M.Piecewise(epsilon=eps, d=d)),
        numeric_case("Hybrid", lambda: M.Hybrid(epsilon=eps, d=d)),
        frequency_case("GRR", lambda: M.GRR(epsilon=eps, k=k)),
        frequency_case("OUE", lambda: M.OUE(epsilon=eps, k=k)),
        frequency_case("OLH", lambda: M.OLH(epsilon=eps, k=k)),
        frequency_case("HadamardResponse", lambda: M.HadamardResponse(epsilon=eps, k=k)),
        frequency_case("HarmonyCategorical", lambda: M.HarmonyCategorical(epsilon=eps, k=k, seed=seed),
                       note="default estimate(reports) (method='unbiased'): solves G f = projection"),
        frequency_case("HarmonyCategorical proj.",
                       lambda: M.HarmonyCategorical(epsilon=eps, k=k, seed=seed),
                       estimate_kwargs={"method": "projection"},
                       variance=lambda mechanism: mechanism.variance(f, n, method="projection"),
                       note="the same perturb; the paper's projection estimate: its mean is G f, not f, and "
                            "that cross-talk bias is in max|err| (not in sd)"),
        Case("HarmonyMixed", f"3 num + k={args.k_small},{k}",
             lambda: M.HarmonyMixed(epsilon=eps, attributes=mixed_attributes, seed=seed), mixed_values,
             [*means[:3], f_small, f], lambda mechanism: mechanism.variance(mixed_values),
             note=f"attributes {mixed_attributes}; max|err| over the 3 means and the {args.k_small} + {k} "
                  "frequencies"),
    ]


def print_table_1(args, cases, results):
    n = args.users
    print(f"\n1. lipdesign.mechanisms at n = {n:,} users, eps = {args.epsilon}, best of {args.repeats} "
          f"(seconds; users/s = n / seconds)")
    header = (f"{'mechanism':<28} {'shape':<20} {'perturb s':>10} {'users/s':>9} {'aggregate s':>11} "
              f"{'users/s':>9} {'estimate s':>10} {'max|err|':>9} {'sd':>8}")
    print(header)
    print("-" * len(header))
    for case, result in zip(cases, results):
        if "failure" in result:
            print(f"{case.name:<28} {case.shape:<20} FAILED: {result['failure'][:150]}")
            continue
        print(f"{case.name:<28} {case.shape:<20} {timing_columns(n, result['perturb'])}  "
              f"{timing_columns(n, result['aggregate'])} {result['estimate']:10.6f} "
              f"{result['error']:9.2e} {result['sd']:8.1e}")
    print("aggregate s: mechanism.aggregate(reports), the sufficient statistics (mergeable across files and "
          "machines);\nestimate s: mechanism.estimate(aggregate), which does not depend on n.")
    print("max|err|: largest |estimate - truth| over the d means or k frequencies (truth: the population's "
          "own means and histogram).\nsd: square root of the largest theoretical variance of one estimate "
          "(the mechanism's variance()); over d or k\ncoordinates, max|err| of an unbiased estimate is "
          "typically 2-3 sd.")
    for case, result in zip(cases, results):
        if case.note and "failure" not in result:
            print(f"  {case.name}: {case.note}")
    for case, result in zip(cases, results):
        if "failure" not in result and result["mismatch"] > 1e-12:
            print(f"  {case.name}: WARNING estimate(aggregate) and estimate(reports) differ by up to "
                  f"{result['mismatch']:.2e}")
    grr = next(c for c in cases if c.name == "GRR")
    for case, result in zip(cases, results):
        if case.name == "HarmonyCategorical proj." and "failure" not in result:
            mechanism = result["mechanism"]
            bias = np.abs(mechanism.expected_estimate(grr.truth, method="projection") - grr.truth).max()
            print(f"  HarmonyCategorical proj.: m = {mechanism.m}; its cross-talk bias max|G f - f| is {bias:.2e} "
                  "for this seed and population")


# -------------------------------------------------------------------------------------------- pure-ldp runs

def load_pure_ldp():
    """The pure-ldp modules, or None and the reason they cannot be imported."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            modules = {name: importlib.import_module(f"pure_ldp.frequency_oracles.{name}")
                       for name in ("direct_encoding", "unary_encoding", "local_hashing")}
    except ImportError as error:
        return None, f"{type(error).__name__}: {error}"
    return modules, None


def pure_ldp_oracles(modules, eps, k):
    """name -> (client factory, server factory, (p, q) of its estimator, description).

    Read from pure-ldp's source: DE, UE and LH clients/servers take (epsilon, d, ...); ``use_oue=True`` gives
    OUE, ``use_olh=True`` sets g = round(e^eps) + 1. ``index_mapper=lambda x: x``: our values are 0-based
    (pure-ldp's default maps x to x - 1)."""
    de = modules["direct_encoding"]
    ue = modules["unary_encoding"]
    lh = modules["local_hashing"]

    def identity(x):
        return x

    def pair(client_class, server_class, *args, **kwargs):
        return (lambda: client_class(eps, k, *args, index_mapper=identity, **kwargs),
                lambda: server_class(eps, k, *args, index_mapper=identity, **kwargs))

    oracles = {
        "GRR": (*pair(de.DEClient, de.DEServer), "DEClient / DEServer"),
        "OUE": (*pair(ue.UEClient, ue.UEServer, use_oue=True), "UEClient / UEServer, use_oue=True"),
        "OLH": (*pair(lh.LHClient, lh.LHServer, use_olh=True), "LHClient / LHServer, use_olh=True"),
        "FastLH": (*pair(lh.FastLHClient, lh.FastLHServer, FAST_LH_HASHES, use_olh=True),
                   f"FastLHClient / FastLHServer, {FAST_LH_HASHES} hash functions, use_olh=True"),
    }
    result = {}
    for name, (client, server, description) in oracles.items():
        instance = client()
        if name in ("OLH", "FastLH"):  # LHServer's estimator is (C_v/n - 1/g)/(p - 1/g)
            p, q, description = instance.p, 1.0 / instance.g, f"{description} (g = {instance.g})"
        else:
            p, q = instance.p, instance.q
        result[name] = (client, server, (p, q), description)
    return result


def pure_run(client_factory, server_factory, values, k, seed):
    """One pure-ldp run on ``values`` (a list of ints): (perturb seconds, estimate seconds, frequencies)."""
    random.seed(seed)
    np.random.seed(seed)  # pure-ldp draws from `random` and from numpy's legacy global state
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


def plan_pure_runs(oracles, values, args):
    """Per oracle: (users to measure, predicted seconds of one run at n), from a pilot on a few users."""
    n, pilot = args.users, min(args.users, 5000)
    plans = {}
    for name, (client, server, _, _) in oracles.items():
        t_perturb, t_estimate, _ = pure_run(client, server, values[:pilot], args.k, args.seed)
        per_user = (t_perturb + t_estimate) / pilot
        measured = n
        while measured > pilot and per_user * measured > args.pure_ldp_limit:
            measured = max(pilot, measured // 10)
        plans[name] = (measured, per_user * n)
    return plans, pilot


def compare_with_pure_ldp(args, categories, lipdesign_results):
    from lipdesign import mechanisms
    from lipdesign.mechanisms.oracle import pure_variance

    n, k, eps = args.users, args.k, args.epsilon
    print(f"\n2. GRR / OUE / OLH: lipdesign against pure-ldp, n = {n:,}, k = {k}, eps = {eps}, "
          f"best of {args.repeats}, the same values")
    if args.no_pure_ldp:
        print("   skipped (--no-pure-ldp)")
        return
    modules, reason = load_pure_ldp()
    if modules is None:
        print(f"   pure-ldp cannot be imported here ({reason}): its columns are skipped.\n"
              f"   To compare: {PURE_LDP_INSTALL}")
        return
    oracles = pure_ldp_oracles(modules, eps, k)
    values = categories.tolist()  # pure-ldp takes one Python value per call; converted outside the timing
    plans, pilot = plan_pure_runs(oracles, values, args)
    total = sum(predicted * measured / n for measured, predicted in plans.values()) * args.repeats
    print(f"   pure-ldp {metadata.version('pure-ldp')}; its runs take about {total:.0f} s (predicted from a "
          f"{pilot:,}-user pilot)")
    header = (f"{'oracle':<7} {'library':<10} {'users timed':>11} {'perturb s':>10} {'users/s':>9} "
              f"{'agg+est s':>10} {'users/s':>9} {'max|err|':>9} {'sd':>8}")
    print(header)
    print("-" * len(header))
    footnotes = []
    for name, (client, server, (p, q), description) in oracles.items():
        lip = lipdesign_results.get(name)
        if lip is not None and "failure" in lip:
            print(f"{name:<7} {'lipdesign':<10} FAILED: {lip['failure'][:120]}")
            lip = None
        elif lip is not None:
            columns = timing_columns(n, lip["perturb"], lip["aggregate"] + lip["estimate"])
            print(f"{name:<7} {'lipdesign':<10} {n:>11,} {columns} {lip['error']:9.2e} {lip['sd']:8.1e}")
        measured, predicted = plans[name]
        subset = values[:measured]
        f_subset = np.bincount(categories[:measured], minlength=k) / measured
        t_perturb = t_estimate = math.inf
        for _ in range(args.repeats):
            t_p, t_e, estimate = pure_run(client, server, subset, k, args.seed)
            t_perturb, t_estimate = min(t_perturb, t_p), min(t_estimate, t_e)
        scale = n / measured
        error = np.abs(estimate - f_subset).max()
        sd = math.sqrt(pure_variance(f_subset, measured, p, q).max())
        label = "" if name in lipdesign_results else name
        mark = "*" if measured < n else " "
        print(f"{label:<7} {'pure-ldp':<10} {measured:>11,} "
              f"{timing_columns(n, t_perturb * scale, t_estimate * scale, mark=mark)} "
              f"{error:9.2e} {sd:8.1e}")
        if lip is not None:
            print(f"{'':<7} {'speed-up':<10} {'':>11} {t_perturb * scale / lip['perturb']:9.1f}x {'':>9} "
                  f"{t_estimate * scale / (lip['aggregate'] + lip['estimate']):9.1f}x")
        if measured < n:
            line = (f"* {name}: pure-ldp measured at {measured:,} users (a {n:,}-user run was predicted at "
                    f"{predicted:.0f} s > {args.pure_ldp_limit:g} s) and its times scaled x{scale:g}; its "
                    f"max|err| and sd are at {measured:,} users")
            if lip is not None:
                mechanism = getattr(mechanisms, name)(epsilon=eps, k=k)
                reports = mechanism.perturb(categories[:measured], rng=perturb_rng(args.seed))
                small = mechanism.estimate(reports)
                line += f" (lipdesign's max|err| there: {np.abs(small - f_subset).max():.2e})"
            footnotes.append(line)
        del estimate
        gc.collect()
    for line in footnotes:
        print(line)
    print("   pure-ldp classes: " + "; ".join(f"{name} = {description}"
                                             for name, (_, _, _, description) in oracles.items()))
    print("   pure-ldp timing: perturb = [client.privatise(v) for v in values]; agg+est = "
          "server.aggregate_all(reports)\n   + server.estimate_all(range(k)) (no normalisation), counts / n; "
          "lipdesign's agg+est = aggregate(reports)\n   + estimate(aggregate).")
    print("   Both use the unbiased estimator (C_v/n - q)/(p - q). pure-ldp's OLH takes q = 1/g (xxhash "
          "as an ideal hash); lipdesign's\n   OLH the exact collision probability of its ((a x + b) mod P) "
          f"mod g family; lipdesign runs at e^eps (1 - {EXP_MARGIN:g}).")
    print("   FastLH (pure-ldp's heuristic OLH, no lipdesign counterpart): each user picks one of a fixed "
          "set of public hash\n   functions, so aggregation is O(1) per report, but the estimate keeps an "
          "error from that finite family\n   which does not shrink with n (not in sd).")


# -------------------------------------------------------------------------------------------------- driver

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=float, default=1e6, help="number of users (default 10^6)")
    parser.add_argument("--quick", action="store_true", help="10^5 users")
    parser.add_argument("--seed", type=int, default=2024,
                        help="seed of the population, of the perturbation and of the public randomness")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--d", type=int, default=10, help="dimension of the numeric mechanisms")
    parser.add_argument("--k", type=int, default=64, help="categories of the frequency oracles")
    parser.add_argument("--k-small", type=int, default=8,
                        help="categories of HarmonyMixed's second categorical attribute")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--pure-ldp-limit", type=float, default=120.0,
                        help="seconds above which a pure-ldp run is measured on a tenth of the users, scaled")
    parser.add_argument("--no-pure-ldp", action="store_true", help="skip the pure-ldp comparison")
    args = parser.parse_args(argv)
    args.users = 10**5 if args.quick else int(args.users)
    if args.users < 1 or args.repeats < 1 or args.seed < 0:
        parser.error("--users and --repeats must be positive, --seed non-negative")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        pure_version = metadata.version("pure-ldp")
    except metadata.PackageNotFoundError:
        pure_version = "not installed"
    print(f"lipdesign {lipdesign.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
          f"pure-ldp {pure_version}, {os.cpu_count()} cores")
    print(f"n = {args.users:,} users, eps = {args.epsilon}, d = {args.d}, k = {args.k}, seed = {args.seed}, "
          f"best of {args.repeats}")
    numeric, categories, small = make_population(args.users, args.d, args.k, args.k_small, args.seed)
    cases = lipdesign_cases(args, numeric, categories, small)
    results = [run_case(case, args.repeats, args.seed) for case in cases]
    print_table_1(args, cases, results)
    by_name = {case.name: result for case, result in zip(cases, results)}
    del numeric, small, results
    compare_with_pure_ldp(args, categories, {name: by_name[name] for name in ("GRR", "OUE", "OLH")})


if __name__ == "__main__":
    main()
