"""Benchmark: the open-domain frequency oracles on English words (issue 27), lipdesign beside pure-ldp 1.2.0 in the
same run, at the same certified epsilon and number of users — figures to read, never timed assertions
(docs/math.md §16, §8.4).

Run: ``python benchmarks/open_domain.py`` (``--quick`` for a fast run; ``--epsilons 1,2,4``, ``--users
100000,1000000``, ``--candidates K``, ``--repeats R``, ``--z-users N``, ``--decode K``, ``--pure-ldp-limit S``,
``--no-pure-ldp``, ``--seed S``).

**Population.** The words data (``lipdesign.datasets.words_path()``: 100,000 English words with frequencies). The
candidate list is the K most frequent words (default K = 1,000: pure-ldp's RAPPOR server switches to a Lasso
screen above 1,000 values, and its local-hashing server tests every report against every value). Each user draws
a word from those K words with their frequencies renormalised, so the list holds every value the users have: the
setting in which least-squares decoding is unbiased (docs/math.md §16.4). The population is drawn once per n
(seeded); the truth is the candidates' frequencies in that drawn sample.

**Families** (lipdesign beside pure-ldp's same protocol):
- RAPPOR: one-time RAPPOR (p = 0, q = 1, the permanent response only), m = 128 bits, h = 2, 32 cohorts, built by
  ``RAPPOR.for_epsilon(eps, h=2)`` (f/2 = 1/(1 + e^(eps/2h)), certified at or below eps). pure-ldp's RAPPOR is
  one-time with f only, and its ``convert_eps_to_f`` leaves h out (it would run at h eps): it is given our realised
  f = 2T/2^32 itself, so both run at the same epsilon; its own ``epsilon`` (2h ln((1 - f/2)/(f/2))) is printed.
  Decoders: ours least squares (``estimate``), and non-negative least squares (``method="nnls"``) on the same
  reports, printed under the table; pure-ldp's non-negative ridge regression (ElasticNet, alpha = 0.025 f), its
  default. pure-ldp's RAPPOR client never clears a bit set in the filter (a set bit is always
  reported 1, not with probability 1 - f/2), so its reports are not private at any f (printed under the table,
  measured on its own reports); the row RAPPOR* runs pure-ldp's RAPPOR with that one step written as the paper
  states it (``corrected_client``), the same protocol as ours at the same epsilon.
- CMS: the count-mean sketch, m = 256, d = 64 rows. Ours decodes by least squares, pure-ldp by [Apple17]'s
  count-mean estimate.
- HCMS: the Hadamard count-mean sketch, m = 256, d = 64 (one bit per report). Same estimators as CMS.
- OLH: optimised local hashing over the K candidates' indices (g = round(e^eps) + 1 on both sides), a hash per user.
- SS: subset selection over the K indices (lipdesign only: pure-ldp 1.2.0 has none).
The string families (RAPPOR, CMS, HCMS) hash the words themselves (pure-ldp's RAPPOR hashes the word's index as
text, which is how its server enumerates candidates); OLH and SS are closed-domain oracles over the K indices.

**Figures**, per family, epsilon and n: our certified epsilon (exact verification of the realised sampler,
``verify()``) beside pure-ldp's nominal one; MSE over the K candidates of the estimated frequencies (estimated
count / n) against the drawn sample's; the same for the 10 most frequent words ("head") and the head's estimated
mass over its true mass (1 = no shrinkage); E[MSE] from our closed-form variance given the users' values; max |z|
over the candidates of our mean estimate over R repetitions (fresh reports of the same users), z = (mean - truth) /
sqrt(Var / R) with Var our closed form (target |z| < 4); client and server microseconds per report and the ratios
pure-ldp / ours. Server = aggregate + estimate over the candidates, per report at that n; ours are the best of
two runs (the first also compiles the numba kernels OLH's server uses when numba is installed).

**pure-ldp runs**: one Python call per report on each side (``privatise``, ``aggregate``), streamed in chunks.
When a full run at n is predicted (from a pilot of 2,000 reports) to take longer than ``--pure-ldp-limit``
seconds, its client and aggregation are timed on a subsample and the per-report figures at n are computed as
aggregation per report + estimation time / n; its MSE is then not measured at that n, and the row's note gives
both libraries' MSE on the subsample's users instead. pure-ldp imports scikit-learn and statsmodels without
declaring them: statsmodels (unused by the code run here) is stubbed; its hashes pass ``str`` to xxhash, which
xxhash >= 4 refuses: they are wrapped to encode first (benchmarks/oracles.py ``load_pure_ldp``). Its CMS server
may fail on numpy 2: the error is caught and printed.

**Decoding 10^4 candidates**: our RAPPOR (m = 512, h = 2, 64 cohorts) decoding over the 10,000 most frequent words
(conjugate gradients, docs/math.md §16.4), users drawn from them; target under 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import gzip
import os
import platform
import random
import sys
import time
import types
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
from lipdesign.mechanisms import OLH, RAPPOR, CountMeanSketch, HadamardCountMeanSketch, SubsetSelection, parallel

RAPPOR_M, RAPPOR_H, RAPPOR_COHORTS = 128, 2, 32
SKETCH_M, SKETCH_D = 256, 64
DECODE_M, DECODE_COHORTS = 512, 64
HEAD = 10
PILOT = 2_000
CHUNK = 50_000
FAMILIES = ("RAPPOR", "CMS", "HCMS", "OLH", "SS")


# ------------------------------------------------------------------------------------------------- data

def load_words(count):
    """The ``count`` most frequent words and their frequencies renormalised over them."""
    with gzip.open(words_path(), "rt", encoding="utf-8") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle][1:count + 1]
    words = [row[1] for row in rows]
    weights = np.array([float(row[2]) for row in rows])
    return words, weights / weights.sum()


def population(n, probabilities, seed):
    """n users' word indices, drawn from ``probabilities`` (seeded)."""
    return np.random.default_rng([seed, n]).choice(probabilities.size, size=n, p=probabilities)


# ------------------------------------------------------------------------------------------------- lipdesign

def our_mechanism(family, epsilon, k, seed):
    """(mechanism, True when it takes the words, False for indices)."""
    if family == "RAPPOR":
        return RAPPOR.for_epsilon(epsilon, m=RAPPOR_M, h=RAPPOR_H, cohorts=RAPPOR_COHORTS, seed=seed), True
    if family == "CMS":
        return CountMeanSketch(epsilon, m=SKETCH_M, d=SKETCH_D, seed=seed), True
    if family == "HCMS":
        return HadamardCountMeanSketch(epsilon, m=SKETCH_M, d=SKETCH_D, seed=seed), True
    if family == "OLH":
        return OLH(epsilon, k), False
    return SubsetSelection(epsilon, k), False


def our_run(mechanism, decoder, values, seed):
    """(frequencies, client s, aggregate s, estimate s) of one seeded run."""
    gc.collect()
    start = time.perf_counter()
    reports = mechanism.perturb(values, rng=np.random.default_rng(seed))
    client = time.perf_counter() - start
    start = time.perf_counter()
    aggregate = mechanism.aggregate(reports)
    aggregated = time.perf_counter() - start
    del reports
    start = time.perf_counter()
    estimate = decoder.estimate(aggregate)
    return np.asarray(estimate.values, dtype=float), client, aggregated, time.perf_counter() - start


def closed_variance(decoder, values, truth):
    """Our closed-form variance of each candidate's estimated frequency given the users' values (the words
    themselves for a string family, their frequencies for a closed-domain one)."""
    given = values if values.dtype == object else truth
    return np.asarray(decoder.variance(given, len(values)), dtype=float)


def z_scores(mechanism, decoder, values, truth, variance, repeats, seed):
    """(max |z| over the candidates, mean over them of the repetitions' variance / the closed form): ``repeats``
    fresh sets of reports of the same users, z from the closed-form ``variance`` given their values."""
    estimates = np.array([our_run(mechanism, decoder, values, [seed, 1000 + r])[0] for r in range(repeats)])
    z = (estimates.mean(axis=0) - truth) / np.sqrt(variance / repeats)
    spread = estimates.var(axis=0, ddof=1) / variance
    return float(np.abs(z).max()), float(spread.mean())


# ------------------------------------------------------------------------------------------------- pure-ldp

def load_pure_ldp():
    """pure-ldp's RAPPOR, CMS/HCMS and local-hashing classes under an empty parent package (see the docstring), or
    None and the reason."""
    import importlib.util

    spec = importlib.util.find_spec("pure_ldp")
    if spec is None:
        return None, "pure-ldp is not installed (pip install pure-ldp==1.2.0 xxhash scikit-learn)"
    parent = types.ModuleType("pure_ldp.frequency_oracles")
    parent.__path__ = [str(Path(spec.submodule_search_locations[0]) / "frequency_oracles")]
    sys.modules.setdefault("pure_ldp.frequency_oracles", parent)
    stub_statsmodels()
    try:
        import pure_ldp.core as core
        from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
        from pure_ldp.frequency_oracles.local_hashing import lh_client, lh_server
        from pure_ldp.frequency_oracles.rappor import RAPPORClient, RAPPORServer
    except ImportError as error:
        return None, f"pure-ldp could not be imported ({error})"
    core.xxhash = lh_client.xxhash = lh_server.xxhash = Encoded
    return {"RAPPORClient": RAPPORClient, "RAPPORServer": RAPPORServer, "CMSClient": CMSClient,
            "CMSServer": CMSServer, "LHClient": lh_client.LHClient, "LHServer": lh_server.LHServer}, None


#: pure-ldp failures met and worked around, by family (printed under the table).
CRASHES: dict[str, str] = {}


@contextlib.contextmanager
def numpy_one_zeros():
    """np.zeros(None) as numpy 1 read it (a 0-d array) inside pure-ldp's server base class, for its constructor and
    reset only: numpy 2 raises TypeError there, which makes pure-ldp's CMS and HCMS servers crash on creation."""
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


def corrected_client(base):
    """pure-ldp's RAPPOR client with its permanent response as [RAPPOR] states it: each bit reported 1 with
    probability 1 - f/2 when it is set in the filter and f/2 when it is not (pure-ldp's own ``_perturb`` never
    clears a set bit). Everything else, its hashing and cohorts included, is pure-ldp's."""

    class Corrected(base):
        def _perturb(self, data):
            half = 0.5 * self.f
            return [1 if random.random() < (1 - half if bit else half) else 0 for bit in data]

    return Corrected


def pure_pair(modules, family, mechanism, epsilon, k, variant=None):
    """(client, server, nominal epsilon, items are words) of pure-ldp's protocol matching ``mechanism``;
    ``variant="corrected"``: RAPPOR with ``corrected_client``."""
    if family == "RAPPOR":
        f = 2 * mechanism.permanent_threshold / 2**32  # our realised f: the same certified epsilon
        server = modules["RAPPORServer"](f, RAPPOR_M, RAPPOR_H, k, num_of_cohorts=RAPPOR_COHORTS)
        client_class = corrected_client(modules["RAPPORClient"]) if variant == "corrected" else modules["RAPPORClient"]
        client = client_class(f, RAPPOR_M, server.get_hash_funcs(), num_of_cohorts=RAPPOR_COHORTS)
        return client, server, server.epsilon, False
    if family in ("CMS", "HCMS"):
        hadamard = family == "HCMS"
        try:
            server = modules["CMSServer"](epsilon, SKETCH_D, SKETCH_M, is_hadamard=hadamard)
        except TypeError as error:  # numpy 2 refuses np.zeros(None) in FreqOracleServer.__init__
            CRASHES[family] = f"crashed: {type(error).__name__}: {error}"
            with numpy_one_zeros():
                server = modules["CMSServer"](epsilon, SKETCH_D, SKETCH_M, is_hadamard=hadamard)
        client = modules["CMSClient"](epsilon, server.get_hash_funcs(), SKETCH_M, is_hadamard=hadamard)
        return client, server, epsilon, True
    client = modules["LHClient"](epsilon, k, use_olh=True)
    server = modules["LHServer"](epsilon, k, use_olh=True)
    return client, server, epsilon, False


def pure_rappor_bits(modules, mechanism, reports=2_000, seed=0):
    """pure-ldp's RAPPOR client at our realised f: the frequency of 1 on the reporting value's filter bits and off
    them over ``reports`` reports of one value (stated: 1 - f/2 and f/2)."""
    random.seed(seed)
    client, server, _, _ = pure_pair(modules, "RAPPOR", mechanism, None, 2)
    on = off = on_bits = off_bits = 0
    for _ in range(reports):
        bits, cohort = client.privatise(1)  # index 0
        filter_bits = {function("0") for function in server.get_hash_funcs()[cohort]}
        ones = sum(bits)
        on_ones = sum(bits[i] for i in filter_bits)
        on, on_bits = on + on_ones, on_bits + len(filter_bits)
        off, off_bits = off + ones - on_ones, off_bits + RAPPOR_M - len(filter_bits)
    return on / on_bits, off / off_bits, on_bits


def pure_stream(client, server, items, estimate_items):
    """(client s, aggregate s, estimate s, estimates or the error text) of one pure-ldp run over ``items``, in
    chunks (pure-ldp's reports are Python lists or arrays: 10^6 of them do not fit in memory)."""
    t_client = t_aggregate = 0.0
    for start in range(0, len(items), CHUNK):
        part = items[start:start + CHUNK]
        begin = time.perf_counter()
        reports = [client.privatise(item) for item in part]
        middle = time.perf_counter()
        server.aggregate_all(reports)
        t_client += middle - begin
        t_aggregate += time.perf_counter() - middle
        del reports
    begin = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimates = np.asarray(server.estimate_all(estimate_items, suppress_warnings=True), dtype=float)
    except Exception as error:  # noqa: BLE001 - pure-ldp's own failure is a result to print
        estimates = f"crashed: {type(error).__name__}: {error}"
    return t_client, t_aggregate, time.perf_counter() - begin, estimates


def pure_measure(modules, family, mechanism, epsilon, words, idx, limit, seed, variant=None):
    """pure-ldp at n = len(idx): dict with the per-report client and server figures at n, the frequencies when a
    full run was made (else None), where they were measured, and the nominal epsilon."""
    k = len(words)
    n = len(idx)

    def fresh(count):
        random.seed(seed)
        np.random.seed(seed % 2**32)
        client, server, nominal, by_word = pure_pair(modules, family, mechanism, epsilon, k, variant)
        items = [words[i] for i in idx[:count]] if by_word else (idx[:count] + 1).tolist()
        candidates = words if by_word else list(range(1, k + 1))
        return client, server, nominal, items, candidates

    client, server, nominal, items, candidates = fresh(PILOT)
    t_client, t_aggregate, _, _ = pure_stream(client, server, items, candidates[:1])
    predicted = (t_client + t_aggregate) / PILOT * n
    used = n if predicted <= limit else max(PILOT, min(n, int(limit / max(predicted / n, 1e-9))))
    client, server, nominal, items, candidates = fresh(used)
    t_client, t_aggregate, t_estimate, estimates = pure_stream(client, server, items, candidates)
    result = {"client": t_client / used, "server": t_aggregate / used + t_estimate / n, "used": used,
              "nominal": nominal, "frequencies": None, "error": None}
    if isinstance(estimates, str):
        result["error"] = estimates
    elif used == n:
        result["frequencies"] = estimates / n
    else:  # the subsample's estimate: compared with ours on the same users (``subsample_note``)
        result["subsample"] = estimates / used
    return result


def subsample_note(pure, mechanism, decoder, values, idx, k, seed):
    """For a pure-ldp run made on the first ``pure['used']`` users only: both libraries' MSE on those users."""
    used = pure["used"]
    truth = np.bincount(idx[:used], minlength=k) / used
    ours = our_run(mechanism, decoder, values[:used], [seed, 2])[0]
    return (f"pure-ldp timed on {used:,} users; MSE on those users: ours {mse(ours, truth):.3e}, pure-ldp "
            f"{mse(pure['subsample'], truth):.3e}; head ours {mse(ours, truth, HEAD):.3e}, pure-ldp "
            f"{mse(pure['subsample'], truth, HEAD):.3e}")


# ------------------------------------------------------------------------------------------------- figures

def mse(estimate, truth, top=None):
    difference = (estimate - truth)[:top]
    return float(np.mean(difference ** 2))


def shrink(estimate, truth):
    return float(estimate[:HEAD].sum() / truth[:HEAD].sum())


def decode_many(count, epsilon, n, seed):
    """Our RAPPOR decoding over the ``count`` most frequent words: (seconds, MSE, max |z| of the 20 standard errors
    given, n)."""
    words, probabilities = load_words(count)
    idx = population(n, probabilities, seed)
    values = np.array(words, dtype=object)[idx]
    mechanism = RAPPOR.for_epsilon(epsilon, m=DECODE_M, h=RAPPOR_H, cohorts=DECODE_COHORTS, seed=seed)
    decoder = mechanism.with_candidates(words)
    rng = np.random.default_rng(seed)
    aggregate = sum(mechanism.aggregate(mechanism.perturb(values[start:start + 100_000], rng=rng))
                    for start in range(0, n, 100_000))  # merged by blocks: 10^6 reports of 512 bits unpack to 512 MB
    start = time.perf_counter()
    estimate = decoder.estimate(aggregate)
    seconds = time.perf_counter() - start
    truth = np.bincount(idx, minlength=count) / n
    errors = np.asarray(estimate.standard_errors)
    given = np.isfinite(errors)
    z = np.abs(estimate.values[given] - truth[given]) / errors[given]
    return seconds, mse(estimate.values, truth), float(z.max()), int(given.sum()), mechanism.verify().epsilon


def table_row(label, epsilon, n, certified, pure, frequencies, truth, expected, z_text, spread_text, ours_client,
              ours_server):
    """One line of the table: ours beside ``pure`` (pure_measure's dict, or None)."""
    row = (f"{label:<7} {epsilon:>3g} {n:>9,} {certified:>9.6f} "
           f"{(format(pure['nominal'], '.6f') if pure else '-'):>9} {mse(frequencies, truth):>9.3e} ")
    note = ""
    if pure and pure["frequencies"] is not None:
        pf = pure["frequencies"]
        row += (f"{mse(pf, truth):>9.3e} {expected:>9.3e} {mse(frequencies, truth, HEAD):>9.3e} "
                f"{mse(pf, truth, HEAD):>9.3e} {shrink(frequencies, truth):>7.3f} {shrink(pf, truth):>7.3f} ")
    else:
        row += (f"{'-':>9} {expected:>9.3e} {mse(frequencies, truth, HEAD):>9.3e} {'-':>9} "
                f"{shrink(frequencies, truth):>7.3f} {'-':>7} ")
        if pure and pure["error"]:
            note = f"pure-ldp estimate {pure['error'][:90]}"
        elif pure:
            note = pure.get("note", f"pure-ldp timed on {pure['used']:,} users, MSE not run at this n")
    row += f"{z_text:>6} {spread_text:>7} {ours_client * 1e6:7.3f} "
    if pure:
        row += (f"{pure['client'] * 1e6:8.2f} {pure['client'] / ours_client:6.1f} {ours_server * 1e6:7.3f} "
                f"{pure['server'] * 1e6:8.2f} {pure['server'] / ours_server:6.1f}")
    else:
        row += f"{'-':>8} {'-':>6} {ours_server * 1e6:7.3f} {'-':>8} {'-':>6}"
    return row + ("  " + note if note else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epsilons", default="1,2,4")
    parser.add_argument("--users", default="100000,1000000")
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=20, help="R, repetitions for the z scores")
    parser.add_argument("--z-users", type=int, default=100_000, help="users of the z-score repetitions")
    parser.add_argument("--decode", type=int, default=10_000, help="candidates of the RAPPOR decoding timing")
    parser.add_argument("--pure-ldp-limit", type=float, default=120.0,
                        help="seconds a full pure-ldp run may take before it is timed on a subsample")
    parser.add_argument("--no-pure-ldp", action="store_true")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="n = 10^4 and 10^5, eps = 1, 4, K = 200, R = 5, 2,000 decoded candidates")
    args = parser.parse_args(argv)
    if args.quick:
        args.epsilons, args.users, args.candidates, args.repeats = "1,4", "10000,100000", 200, 5
        args.z_users, args.decode, args.pure_ldp_limit = 10_000, 2_000, 10.0
    epsilons = [float(part) for part in args.epsilons.split(",")]
    ns = [int(part) for part in args.users.split(",")]
    families = [part for part in args.families.split(",") if part]
    k = args.candidates
    words, probabilities = load_words(k)
    threadpool_limits(limits=1)  # one BLAS thread: the machine's 2 cores are shared

    loaded, reason = (None, "--no-pure-ldp") if args.no_pure_ldp else load_pure_ldp()
    pure_version = metadata.version("pure-ldp") if loaded is not None else "-"
    print(f"Open-domain frequency oracles on English words: lipdesign {lipdesign.__version__} beside pure-ldp "
          f"{pure_version}; numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, one BLAS thread; "
          + ("numba kernels on " + str(parallel.threads()) + " threads where a family has them"
             if parallel.compiled_kernels(parallel.COMPILED_WORK) is not None else "numpy only (numba not installed)")
          + f"; {datetime.datetime.now():%Y-%m-%d %H:%M}")
    if loaded is None:
        print(f"pure-ldp columns skipped: {reason}")
    print(f"Population: users draw from the K = {k} most frequent words of the words data (frequencies renormalised "
          f"over them; they hold {probabilities[:HEAD].sum():.3f} of the mass in the top {HEAD}); candidates: the same "
          f"K words. MSE: mean over the K candidates of (estimated frequency - frequency in the drawn sample)^2; "
          f"head: the top {HEAD}; head mass: estimated / true mass of the top {HEAD}. max |z|: our mean over "
          f"R = {args.repeats} repetitions at n = {args.z_users:,} against our closed-form variance (target < 4); "
          "var ratio: the repetitions' variance / the closed form (mean over candidates). E[MSE]: closed form, ours. "
          "x: pure-ldp / lipdesign per report.")
    print(f"RAPPOR one-time (p = 0, q = 1), m = {RAPPOR_M}, h = {RAPPOR_H}, {RAPPOR_COHORTS} cohorts (pure-ldp given "
          f"our realised f); CMS and HCMS m = {SKETCH_M}, d = {SKETCH_D}; OLH g = round(e^eps) + 1; SS lipdesign "
          "only (no pure-ldp counterpart)")
    header = (f"{'family':<7} {'eps':>3} {'n':>9} {'eps ours':>9} {'eps pure':>9} {'MSE ours':>9} {'MSE pure':>9} "
              f"{'E[MSE]':>9} {'head ours':>9} {'head pure':>9} {'hmass o':>7} {'hmass p':>7} {'max|z|':>6} "
              f"{'var rat':>7} {'cli us':>7} {'cli pure':>8} {'x':>6} {'srv us':>7} {'srv pure':>8} {'x':>6}  note")
    print("\n" + header)
    notes = []
    for epsilon in epsilons:
        for family in families:
            mechanism, by_word = our_mechanism(family, epsilon, k, args.seed)
            decoder = mechanism.with_candidates(words) if by_word else mechanism
            certified = mechanism.verify().epsilon
            for n in ns:
                idx = population(n, probabilities, args.seed)
                values = np.array(words, dtype=object)[idx] if by_word else idx
                truth = np.bincount(idx, minlength=k) / n
                # best of two runs (the first also compiles what numba compiles), the second's estimate
                runs = [our_run(mechanism, decoder, values, [args.seed, 1]) for _ in range(2)]
                frequencies = runs[-1][0]
                client, aggregated, estimated = (min(run[i] for run in runs) for i in (1, 2, 3))
                variance = closed_variance(decoder, values, truth)
                expected = float(variance.mean())
                z_text = spread_text = "-"
                if n == args.z_users or (args.z_users not in ns and n == ns[0]):
                    z_n = args.z_users
                    z_idx = idx if z_n == n else population(z_n, probabilities, args.seed)
                    z_values = np.array(words, dtype=object)[z_idx] if by_word else z_idx
                    z_truth = np.bincount(z_idx, minlength=k) / z_n
                    z_variance = variance if z_n == n else closed_variance(decoder, z_values, z_truth)
                    z_max, spread = z_scores(mechanism, decoder, z_values, z_truth, z_variance, args.repeats,
                                             args.seed)
                    z_text, spread_text = f"{z_max:6.2f}", f"{spread:7.3f}"
                variants = [(family, None)]
                if loaded is not None and family == "RAPPOR":
                    variants.append(("RAPPOR*", "corrected"))
                for label, variant in variants:
                    pure = None
                    if loaded is not None and family != "SS":
                        pure = pure_measure(loaded, family, mechanism, epsilon, words, idx, args.pure_ldp_limit,
                                            args.seed, variant)
                        if "subsample" in pure:
                            pure["note"] = subsample_note(pure, mechanism, decoder, values, idx, k, args.seed)
                    print(table_row(label, epsilon, n, certified, pure, frequencies, truth, expected, z_text,
                                    spread_text, client / n, (aggregated + estimated) / n), flush=True)
                if family == "RAPPOR" and n == ns[-1] and loaded is not None:
                    half = mechanism.permanent_threshold / 2**32
                    on, off, bits = pure_rappor_bits(loaded, mechanism, seed=args.seed)
                    verdict = ("a 1 is never cleared, so a report with a 0 on a bit of v rules v out: realised "
                               "epsilon unbounded" if on == 1 else "as stated")
                    notes.append(f"pure-ldp RAPPOR client, eps = {epsilon:g}: Pr[bit = 1] on the value's filter bits "
                                 f"{on:.4f} over {bits:,} bits (its server assumes 1 - f/2 = {1 - half:.4f}), off them "
                                 f"{off:.4f} (f/2 = {half:.4f}): {verdict}")
                if family == "RAPPOR":  # the same reports, decoded by non-negative least squares
                    reports = mechanism.perturb(values, rng=np.random.default_rng([args.seed, 1]))
                    aggregate = mechanism.aggregate(reports)
                    del reports
                    start = time.perf_counter()
                    nnls = decoder.estimate(aggregate, method="nnls").values
                    notes.append(f"RAPPOR eps = {epsilon:g}, n = {n:,}: our non-negative least squares "
                                 f"(method='nnls', the same reports): MSE {mse(nnls, truth):.3e}, head "
                                 f"{mse(nnls, truth, 10):.3e}, head mass {shrink(nnls, truth):.3f}; decoded in "
                                 f"{time.perf_counter() - start:.2f} s")
                if family == "RAPPOR" and n == ns[-1]:
                    notes.append(f"RAPPOR eps = {epsilon:g}: our decoding (least squares over {k}) took "
                                 f"{estimated:.2f} s of the server's {aggregated + estimated:.2f} s at n = {n:,}")
    for line in notes:
        print(line)
    for family, text in CRASHES.items():
        print(f"pure-ldp {family} server {text}; run with np.zeros(None) read as numpy 1 did (a 0-d array) inside "
              "its server base class")
    if args.decode:
        n = ns[-1]
        seconds, error, z_max, given, certified = decode_many(args.decode, 2.0, n, args.seed)
        print(f"\nRAPPOR decoding over the {args.decode:,} most frequent words (users drawn from them, n = {n:,}, "
              f"eps = {certified:.6f} certified, m = {DECODE_M}, h = {RAPPOR_H}, {DECODE_COHORTS} cohorts): "
              f"{seconds:.2f} s (target < 10 s); MSE {error:.3e}; max |z| {z_max:.2f} over the {given} estimates "
              "given standard errors (their own errors, one run)")


if __name__ == "__main__":
    main()
