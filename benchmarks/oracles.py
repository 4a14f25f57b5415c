"""Benchmark: OUE and OLH per report at k = 1024, eps = 1, lipdesign beside pure-ldp 1.2.0 in the same run, the
client side (perturb) and the server side (aggregate + estimate) separately — figures to read, never timed
assertions (issue 12, docs/math.md §8.3, §8.4).

Run: ``python benchmarks/oracles.py`` (``--quick`` for fewer users, ``--k K``, ``--epsilon E``, ``--pool S``,
``--seed S``, ``--repeats R``).

- lipdesign OUE: bit-packed reports (k / 8 bytes each), one random byte per bit compared with an integer
  threshold; the server counts the bits over 64-bit words (``bitsums.column_sums``).
- lipdesign OLH, a hash per user (reports (a, b, y); the server tests every report against every value, O(n k)),
  and with a public pool of S hashes (reports (s, y); a bincount and one pass over the S x k hashes, O(n + S k)).
  The pooled estimator solves with the pool's k x k collision matrix, built once per mechanism in O(S k^2): that
  set-up is shown on its own row and is not part of the per-report figures.
- The server runs twice when numba is installed (``lipdesign[fast]``): with the compiled kernels on every core
  (``parallel.compiled_kernels``: OUE's Harley-Seal adder, per-user OLH's division-free count), as ``aggregate``
  does, and with numpy alone (the column "numpy us"), as it does without numba. The ratios are against the first.
- Every lipdesign client runs twice: with a seeded PCG64 (simulation) and with ``rng=None`` (ChaCha20 keyed from
  the OS, what a device uses).
- pure-ldp privatises one user per Python call and aggregates one report per call; its server time is
  ``aggregate_all`` + ``estimate_all`` over the k values. pure-ldp 1.2.0 imports scikit-learn and statsmodels from
  its package ``__init__`` (for RAPPOR) without declaring them, so only its unary-encoding and local-hashing
  subpackages are imported, under an empty parent package. Its local hashing passes ``str`` to xxhash, which
  xxhash >= 4 refuses: the run wraps ``xxhash.xxh32`` to encode the string first; the wrapper's cost per hash is
  measured and printed, and pure-ldp's OLH figures are shown without it too.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import math
import sys
import time
import types
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lipdesign.mechanisms import OLH, OUE, parallel


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


def population(n, k, seed):
    """n values in 0..k-1 from a permuted Zipf(1.1) distribution."""
    rng = np.random.default_rng([seed, 0])
    zipf = rng.permutation(1.0 / np.arange(1, k + 1) ** 1.1)
    return rng.choice(k, size=n, p=zipf / zipf.sum())


# ------------------------------------------------------------------------------------------------- pure-ldp

class Encoded:
    """xxhash with pure-ldp's ``str`` arguments encoded as UTF-8 (what xxhash < 4 did itself); the other benchmarks
    beside pure-ldp import it from here."""

    @staticmethod
    def xxh32(data, seed=0):
        import xxhash
        return xxhash.xxh32(data.encode() if isinstance(data, str) else data, seed=seed)

    @staticmethod
    def xxh64(data, seed=0):
        import xxhash
        return xxhash.xxh64(data.encode() if isinstance(data, str) else data, seed=seed)


def stub_statsmodels():
    """pure-ldp's RAPPOR server imports statsmodels without declaring it, and the benchmarks never call what needs
    it: an empty module stands in when it is not installed."""
    if importlib.util.find_spec("statsmodels") is None:
        stub = types.ModuleType("statsmodels")
        stub.api = types.ModuleType("statsmodels.api")
        sys.modules.setdefault("statsmodels", stub)
        sys.modules.setdefault("statsmodels.api", stub.api)


def load_pure_ldp():
    """pure-ldp's unary-encoding and local-hashing modules (see the module docstring), and the cost in seconds of
    the xxhash wrapper per call; or None and the reason."""
    spec = importlib.util.find_spec("pure_ldp")
    if spec is None:
        return None, "pure-ldp is not installed (pip install pure-ldp==1.2.0 xxhash)"
    parent = types.ModuleType("pure_ldp.frequency_oracles")
    parent.__path__ = [str(Path(spec.submodule_search_locations[0]) / "frequency_oracles")]
    sys.modules.setdefault("pure_ldp.frequency_oracles", parent)
    import xxhash
    from pure_ldp.frequency_oracles.local_hashing import lh_client, lh_server
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

    lh_client.xxhash = lh_server.xxhash = Encoded
    calls = 200_000
    start = time.perf_counter()
    for i in range(calls):
        Encoded.xxh32(str(i), seed=i)
    wrapped = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(calls):
        xxhash.xxh32(str(i).encode(), seed=i)
    direct = time.perf_counter() - start
    modules = {"UEClient": UEClient, "UEServer": UEServer, "LHClient": lh_client.LHClient,
               "LHServer": lh_server.LHServer}
    return (modules, max(0.0, (wrapped - direct) / calls)), None


def pure_run(client, server, values, k, seed):
    """(client seconds, server seconds) of one pure-ldp run; pure-ldp maps x to x - 1, so values are passed + 1."""
    import random

    random.seed(seed)
    np.random.seed(seed)
    items = [int(v) + 1 for v in values]
    start = time.perf_counter()
    reports = [client.privatise(item) for item in items]
    middle = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server.aggregate_all(reports)
        server.estimate_all(range(1, k + 1), suppress_warnings=True)
    return middle - start, time.perf_counter() - middle


# ------------------------------------------------------------------------------------------------- lipdesign

def lipdesign_run(mechanism, values, repeats, seed, work):
    """(PCG64 client, ChaCha20 client, server, numpy-only server or None) seconds: perturb with a seed and with
    rng=None, then aggregate + estimate of the seeded reports, as ``aggregate`` runs and with the compiled kernels
    off; the estimate from the reports must equal the one from the aggregate, and the two servers' estimates agree
    exactly. ``work``: what ``parallel.compiled_kernels`` is asked for these reports (None: the family has no
    compiled kernel)."""
    t_client, reports = best_of(lambda: mechanism.perturb(values, rng=np.random.default_rng([seed, 1])), repeats)
    t_secure, _ = best_of(lambda: mechanism.perturb(values, rng=None), repeats)
    t_server, estimate = best_of(lambda: mechanism.estimate(mechanism.aggregate(reports)), repeats)
    assert np.array_equal(estimate, mechanism.estimate(reports))
    if work is None or parallel.compiled_kernels(work) is None:
        return t_client, t_secure, t_server, None
    compiled_work, parallel.COMPILED_WORK = parallel.COMPILED_WORK, math.inf
    try:
        t_numpy, numpy_estimate = best_of(lambda: mechanism.estimate(mechanism.aggregate(reports)), repeats)
    finally:
        parallel.COMPILED_WORK = compiled_work
    assert np.array_equal(numpy_estimate, estimate)
    return t_client, t_secure, t_server, t_numpy


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--pool", type=int, default=1024,
                        help="S, the hashes of the pooled OLH (S k^2 <= MAX_POOL_PAIRS = 2^30, k <= MAX_POOL_K = 1024)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a tenth of the users")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    k, eps = args.k, args.epsilon
    users = {"lipdesign OUE": 1_000_000 // scale, "lipdesign OLH": 100_000 // scale,
             "lipdesign pooled OLH": 1_000_000 // scale, "pure-ldp OUE": 20_000 // scale,
             "pure-ldp OLH": 2_000 // scale}
    print(f"OUE and OLH per report, k = {k}, eps = {eps:g}; numpy {np.__version__}, best of {args.repeats} for "
          "lipdesign, one run for pure-ldp (each a stream of Python calls)")
    rows = {}
    oue, olh = OUE(eps, k), OLH(eps, k)
    pooled = OLH(eps, k, pool=args.pool, seed=args.seed)
    start = time.perf_counter()
    _ = pooled.collision_matrix, pooled._inverse_collisions
    setup = time.perf_counter() - start
    work = {"lipdesign OUE": lambda n: n * -(-oue.report_bytes // 8), "lipdesign OLH": lambda n: n * k,
            "lipdesign pooled OLH": lambda n: None}  # words of OUE reports, per-user OLH hash tests
    for name, mechanism in (("lipdesign OUE", oue), ("lipdesign OLH", olh), ("lipdesign pooled OLH", pooled)):
        n = users[name]
        seconds = lipdesign_run(mechanism, population(n, k, args.seed), args.repeats, args.seed, work[name](n))
        rows[name] = (n, *(None if s is None else s / n for s in seconds))
    loaded, reason = load_pure_ldp()
    overhead = 0.0
    if loaded is None:
        print(f"pure-ldp columns skipped: {reason}")
    else:
        modules, overhead = loaded
        for name, client, server in (
                ("pure-ldp OUE", modules["UEClient"](eps, k, use_oue=True), modules["UEServer"](eps, k, use_oue=True)),
                ("pure-ldp OLH", modules["LHClient"](eps, k, use_olh=True), modules["LHServer"](eps, k, use_olh=True))):
            n = users[name]
            t_client, t_server = pure_run(client, server, population(n, k, args.seed), k, args.seed)
            rows[name] = (n, t_client / n, None, t_server / n, None)
    compiled = parallel.compiled_kernels(parallel.COMPILED_WORK) is not None
    print("server: " + (f"compiled kernels (numba) on {parallel.threads()} threads for OUE and per-user OLH (batches "
                        f"of {parallel.COMPILED_WORK:,} words or hash tests and more), beside numpy alone" if compiled
                        else "numpy (numba is not installed)"))
    print(f"\n{'':<22} {'users':>9} {'client us':>10} {'ChaCha us':>10} {'server us':>10} {'numpy us':>10}   "
          f"{'client x':>9} {'ChaCha x':>9} {'server x':>9} {'numpy x':>9}  (x: pure-ldp time / lipdesign time)")
    for name, (n, client, secure, server, numpy_server) in rows.items():
        pure = rows.get("pure-ldp " + name.split()[-1]) if name.startswith("lipdesign") else None
        ratios = ("", "", "", "")
        if pure is not None:
            ratios = tuple(f"{pure[i] / value:9.1f}" if value else "" for i, value in ((1, client), (1, secure),
                                                                                        (3, server), (3, numpy_server)))
        secure_text = f"{secure * 1e6:10.3f}" if secure is not None else f"{'-':>10}"
        numpy_text = f"{numpy_server * 1e6:10.4f}" if numpy_server is not None else f"{'-':>10}"
        print(f"{name:<22} {n:>9,} {client * 1e6:10.3f} {secure_text} {server * 1e6:10.4f} {numpy_text}   "
              f"{ratios[0]:>9} {ratios[1]:>9} {ratios[2]:>9} {ratios[3]:>9}")
    print(f"{'pooled OLH set-up':<22} {'':>9} {'':>10} {'':>10} {setup:9.2f}s   (once per mechanism: the S x k "
          f"hashes, the {k} x {k} collision matrix and its inverse, S = {args.pool})")
    if "pure-ldp OLH" in rows:
        n, client, _, server, _ = rows["pure-ldp OLH"]
        print(f"pure-ldp OLH without its xxhash wrapper ({overhead * 1e9:.0f} ns per hash): client "
              f"{(client - overhead) * 1e6:.3f} us, server {(server - k * overhead) * 1e6:.3f} us per report")
        print(f"pure-ldp {metadata.version('pure-ldp')}")
    sd = (np.sqrt(pooled.variance(None, 1)).mean(), np.sqrt(olh.variance(None, 1)).mean())
    print(f"accuracy at uniform frequencies: sqrt(n Var) per value {sd[0]:.4g} pooled (S = {args.pool}) beside "
          f"{sd[1]:.4g} per-user OLH")


if __name__ == "__main__":
    main()
