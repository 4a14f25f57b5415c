"""Benchmark: heavy hitters on English words (issue 27), lipdesign's PEM and TreeHist beside pure-ldp 1.2.0's in the
same run, at the same epsilon and number of users: top-K recall and wall time — figures to read, never timed
assertions (docs/math.md §18).

Run: ``python benchmarks/heavy_hitters.py`` (``--quick`` for 10^5 users; ``--users N``, ``--epsilon E``, ``--top K``,
``--max-bytes L``, ``--pure-ldp-limit S``, ``--no-pure-ldp``, ``--seed S``).

**Population.** n users draw words from the words data (``lipdesign.datasets.words_path()``: 100,000 English words
with their frequencies); each word is cut to L bytes at a character boundary (``lipdesign.hitters.truncated``;
L = 8 by default keeps 93% of the mass whole). The truth is the K most frequent strings of the drawn sample; recall is
the share of them in a protocol's answer of K strings.

**lipdesign**: ``PEM`` and ``TreeHist`` at their defaults (L levels, one per byte; PEM keeps 2K prefixes per level,
TreeHist those above 3 standard errors of an absent prefix), each user reporting once at epsilon. Client = perturb,
server = aggregate + estimate (the whole search).

**pure-ldp** (``heavy_hitters.PEMServer``/``PEMClient`` and ``TreeHistServer``/``TreeHistClient``): over the
alphabet of the characters the population uses, strings padded to L characters, one character per level, keeping
the K best prefixes (PEM) or those above pure-ldp's default threshold (TreeHist, n/100 in counts). Its default
frequency oracle, OLH, aggregates a report by hashing every item of the level's domain (|alphabet|^length items,
27^8 = 2.8e11 at the last level), which no run can finish; the runs here give it its Hadamard count-mean sketch
(``CMSClient``/``CMSServer`` with ``is_hadamard=True``, d = 64 hash functions, m = 1024, one bit per report), as
its ``fo_client``/``fo_server`` arguments allow. Its TreeHist sends two reports per user (a prefix and the whole
word) at epsilon / 2 each, as the library does. One Python call per user on each side. When a run at n is
predicted (from a pilot of 2,000 users: client and aggregation per user, plus the search, whose cost does not grow
with n) to exceed ``--pure-ldp-limit`` seconds, it runs on a subsample that fits instead: its recall is then the
subsample's (fewer users: a lower bound on what n would give), its client and aggregation times are scaled to n
linearly and its search time is as measured. The table says which.

pure-ldp imports scikit-learn and statsmodels without declaring them (statsmodels, unused here, is stubbed), passes
``str`` to xxhash (wrapped to encode first, as benchmarks/oracles.py ``load_pure_ldp`` does), and its sketch server
calls ``np.zeros(None)``, which numpy 2 refuses (shimmed to numpy 1's 0-d array while it builds).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import gzip
import importlib.util
import os
import platform
import random
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # oracles.Encoded

from oracles import Encoded, stub_statsmodels

import lipdesign
from lipdesign.datasets import words_path
from lipdesign.hitters import truncated
from lipdesign.mechanisms import PEM, TreeHist

PILOT = 2_000
SKETCH_D, SKETCH_M = 64, 1024


def load_population(n, limit, seed):
    """n users' words (str), drawn from the words data's frequencies and cut to ``limit`` bytes."""
    with gzip.open(words_path(), "rt", encoding="utf-8") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle if not line.startswith("#")][1:]
    words = [truncated(row[1].encode(), limit).decode() for row in rows]
    weights = np.array([float(row[2]) for row in rows])
    draws = np.random.default_rng([seed, n]).choice(len(words), size=n, p=weights / weights.sum())
    return np.array(words, dtype=object)[draws]


def true_top(users, top):
    strings, counts = np.unique(users.astype(str), return_counts=True)
    return [str(s) for s in strings[np.argsort(-counts, kind="stable")[:top]]]


# ------------------------------------------------------------------------------------------------- lipdesign

def ours(cls, users, epsilon, top, limit, seed):
    """(strings found, client s, server s)."""
    mechanism = cls(epsilon, max_bytes=limit, seed=seed, top=top)
    gc.collect()
    start = time.perf_counter()
    reports = mechanism.perturb(users, rng=np.random.default_rng([seed, 1]))
    middle = time.perf_counter()
    found = mechanism.estimate(mechanism.aggregate(reports))
    return found.names, middle - start, time.perf_counter() - middle


# ------------------------------------------------------------------------------------------------- pure-ldp

def load_pure_ldp():
    """pure-ldp's heavy-hitter and sketch classes (see the module docstring), or None and the reason."""
    spec = importlib.util.find_spec("pure_ldp")
    if spec is None:
        return None, "pure-ldp is not installed (pip install pure-ldp==1.2.0 xxhash scikit-learn bitstring)"
    stub_statsmodels()
    try:
        import pure_ldp.core as core
        from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
        from pure_ldp.frequency_oracles.local_hashing import lh_client, lh_server
        from pure_ldp.heavy_hitters import PEMClient, PEMServer, TreeHistClient, TreeHistServer
    except ImportError as error:
        return None, f"pure-ldp could not be imported ({error})"
    core.xxhash = lh_client.xxhash = lh_server.xxhash = Encoded
    return {"PEMClient": PEMClient, "PEMServer": PEMServer, "TreeHistClient": TreeHistClient,
            "TreeHistServer": TreeHistServer, "CMSClient": CMSClient, "CMSServer": CMSServer}, None


@contextlib.contextmanager
def numpy_one_zeros():
    """np.zeros(None) as numpy 1 read it (a 0-d array) inside pure-ldp's server base class while it builds."""
    from pure_ldp.core import _freq_oracle_server as base

    class Shim:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def zeros(shape, *args, **kwargs):
            return np.zeros(() if shape is None else shape, *args, **kwargs)

    base.np = Shim()
    try:
        yield
    finally:
        base.np = np


def pure_run(modules, protocol, users, epsilon, top, length, alphabet, seed):
    """(strings found, client s, aggregation s, search s) of one pure-ldp run over ``users``."""
    random.seed(seed)
    np.random.seed(seed)
    pad, end = "\x00", "\x01"  # pure-ldp's padding never shows (the words are padded with ``end`` first)
    alphabet = [*alphabet, end]
    users = [str(user) + end * (length - len(str(user))) for user in users]
    oracle_epsilon = epsilon / 2 if protocol == "TreeHist" else epsilon  # its TreeHist client halves it itself
    with numpy_one_zeros():
        sketch = modules["CMSServer"](oracle_epsilon, SKETCH_D, SKETCH_M, is_hadamard=True)
        fo_client = modules["CMSClient"](oracle_epsilon, sketch.get_hash_funcs(), SKETCH_M, is_hadamard=True)
        if protocol == "PEM":
            server = modules["PEMServer"](epsilon, 0, length, 1, alphabet=alphabet, fo_server=sketch, padding_char=pad)
            client = modules["PEMClient"](epsilon, 0, length, 1, alphabet=alphabet, fo_client=fo_client,
                                          padding_char=pad)
        else:
            server = modules["TreeHistServer"](epsilon, length, 1, alphabet=alphabet, fo_server=sketch,
                                               padding_char=pad)
            client = modules["TreeHistClient"](epsilon, 1, length, alphabet=alphabet, fo_client=fo_client,
                                               padding_char=pad)
    gc.collect()
    start = time.perf_counter()
    reports = [client.privatise(str(user)) for user in users]
    middle = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for report in reports:
            server.aggregate(report)
        aggregated = time.perf_counter()
        found, _ = server.find_heavy_hitters(k=top)
    return ([str(s).split(pad)[0].rstrip(end) for s in found], middle - start, aggregated - middle,
            time.perf_counter() - aggregated)


# ------------------------------------------------------------------------------------------------- main

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--epsilon", type=float, default=4.0)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--max-bytes", type=int, default=8, dest="max_bytes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pure-ldp-limit", type=float, default=900.0, dest="limit",
                        help="seconds a pure-ldp run may take before it runs on a subsample (default 900)")
    parser.add_argument("--no-pure-ldp", action="store_true", help="lipdesign only")
    parser.add_argument("--quick", action="store_true", help="10^5 users, pure-ldp limited to 30 s")
    args = parser.parse_args(argv)
    if args.quick:
        args.users, args.limit = 100_000, 30.0
    threadpool_limits(limits=1)  # one BLAS thread: the machine's 2 cores are shared
    loaded, reason = (None, "--no-pure-ldp") if args.no_pure_ldp else load_pure_ldp()
    pure_version = metadata.version("pure-ldp") if loaded is not None else "-"
    n, eps, top, limit = args.users, args.epsilon, args.top, args.max_bytes
    print(f"Heavy hitters on English words: lipdesign {lipdesign.__version__} beside pure-ldp {pure_version}; numpy "
          f"{np.__version__}, Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, one "
          f"BLAS thread; {datetime.datetime.now():%Y-%m-%d %H:%M}")
    users = load_population(n, limit, args.seed)
    truth = true_top(users, top)
    alphabet = sorted({character for word in set(users.tolist()) for character in word})
    print(f"n = {n:,} users, eps = {eps:g}, top K = {top}, L = {limit} bytes (words cut at a character boundary); "
          f"alphabet of {len(alphabet)} characters for pure-ldp; the true top {top}: {', '.join(truth)}")
    if loaded is None:
        print(f"pure-ldp rows skipped: {reason}")
    rows = []
    for protocol, cls in (("PEM", PEM), ("TreeHist", TreeHist)):
        found, client, server = ours(cls, users, eps, top, limit, args.seed)
        rows.append((protocol, "lipdesign", n, found, client, server, "measured"))
        if loaded is None:
            continue
        _, pilot_client, pilot_aggregate, search = pure_run(loaded, protocol, users[:PILOT], eps, top, limit,
                                                            alphabet, args.seed)
        predicted = (pilot_client + pilot_aggregate) * n / PILOT + search
        size = n if predicted <= args.limit else max(PILOT, int(n * (args.limit - search) / (predicted - search)))
        found, client, aggregate, search = pure_run(loaded, protocol, users[:size], eps, top, limit, alphabet,
                                                    args.seed)
        how = "measured" if size == n else (f"recall from {size:,} users; client and aggregation times x "
                                            f"{n / size:.1f}, the search's as measured")
        rows.append((protocol, "pure-ldp (HCMS oracle)", size, found, client * n / size,
                     aggregate * n / size + search, how))
    print(f"\n{'protocol':<9} {'implementation':<24} {'users run':>10} {'recall':>7} {'client s':>9} {'server s':>9} "
          f"{'total s':>8} {'time x':>7}  note")
    totals = {}
    for protocol, who, size, found, client, server, how in rows:
        recall = len(set(found[:top]) & set(truth)) / top
        total = client + server
        totals[(protocol, who)] = total
        ours_total = totals.get((protocol, "lipdesign"))
        ratio = f"{total / ours_total:7.1f}" if who != "lipdesign" and ours_total else f"{'1':>7}"
        print(f"{protocol:<9} {who:<24} {size:>10,} {recall:7.2f} {client:9.2f} {server:9.2f} {total:8.2f} {ratio}  "
              f"{how}")
    print(f"\ntime x: the row's total time over lipdesign's for the same protocol, at n = {n:,}")
    for protocol, who, _, found, *_ in rows:
        missed = [s for s in truth if s not in found[:top]]
        print(f"{protocol} {who}: missed {missed if missed else 'none'}")


if __name__ == "__main__":
    main()
