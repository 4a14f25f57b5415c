"""Benchmark: the cost of the secure bit stream (docs/math.md §3.8) — figures to read, never timed assertions.

Run: ``python benchmarks/randomness.py`` (10^6 users; ``--quick`` for 10^5, ``--users N``, ``--words W``,
``--epsilon E``, ``--repeats R``, ``--seed S``).

1. The bit streams alone: ns per 64-bit word (``random_raw``) and per double (``Generator.random``, filled in
   chunks of 2^16 as ``TablePerturber`` draws them) for numpy's PCG64 (what an int seed gives), randomgen's
   ChaCha with 20 rounds (what ``rng=None`` gives) and with 8 rounds (a reduced-round variant, for scale), and
   AESCounter, each also on its portable code path (randomgen's ``use_simd`` / ``use_aesni`` switched off: ChaCha
   without SSE, AES in software as on a CPU without AES-NI). Also the time to key one secure generator from the OS.
2. ``perturb`` end to end at n users for GRR k = 16, OUE k = 64, OLH k = 1024, a designed LIP table at k = 8
   (Zipf(1.1) prior) and HarmonyNumeric d = 10: rng = an int seed (PCG64) against rng = None (ChaCha20 keyed from
   the OS) and against an AESCounter passed as the BitGenerator, side by side, with the 64-bit words each
   perturb draws per user (counted on the ChaCha stream).
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import randomgen
from randomgen import AESCounter, ChaCha

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lipdesign as ld
from lipdesign.mechanisms import GRR, OLH, OUE, HarmonyNumeric
from lipdesign.mechanisms.sampling import DEFAULT_CHUNK, secure_generator

#: Keys of the timed streams: any fixed values (the speed does not depend on them).
CHACHA_KEY = 2**255 + 12345
AES_KEY = 2**127 + 12345


def best_of(fn, repeats):
    """Best wall time in seconds over ``repeats`` calls."""
    best = math.inf
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def switched(factory, switch, value):
    """A factory of bit generators from ``factory`` with randomgen's code-path ``switch`` (``use_simd`` or
    ``use_aesni``) set to ``value`` on each; None when this CPU refuses that path."""
    def make():
        bit_generator = factory()
        setattr(bit_generator, switch, value)
        return bit_generator

    try:
        make()
    except ValueError:  # randomgen refuses a fast path the CPU lacks
        return None
    return make


def streams():
    """(name, factory of fresh bit generators or None when unavailable) for table 1."""
    def chacha(rounds):
        return lambda: ChaCha(key=CHACHA_KEY, rounds=rounds)

    def aes():
        return AESCounter(key=AES_KEY)

    return [("PCG64 (int seed)", lambda: np.random.PCG64(1)),
            ("ChaCha20 (rng=None)", switched(chacha(20), "use_simd", True)),
            ("ChaCha20, no SIMD", switched(chacha(20), "use_simd", False)),
            ("ChaCha8", switched(chacha(8), "use_simd", True)),
            ("ChaCha8, no SIMD", switched(chacha(8), "use_simd", False)),
            ("AESCounter (AES-NI)", switched(aes, "use_aesni", True)),
            ("AESCounter, software", switched(aes, "use_aesni", False))]


def fill_doubles(generator, words):
    """``words`` doubles drawn as TablePerturber draws them: ``random(out=...)`` in chunks of DEFAULT_CHUNK."""
    buffer = np.empty(DEFAULT_CHUNK)
    for _ in range(words // DEFAULT_CHUNK):
        generator.random(out=buffer)


def stream_costs(factory, words, repeats):
    """(ns per 64-bit word, ns per double) of fresh bit generators from ``factory``."""
    raw = best_of(lambda: factory().random_raw(words), repeats)
    double = best_of(lambda: fill_doubles(np.random.Generator(factory()), words), repeats)
    return raw / words * 1e9, double / words * 1e9


def perturb_seconds(mechanism, values, make_rng, repeats):
    """Best time of ``mechanism.perturb(values, rng=make_rng())``."""
    return best_of(lambda: mechanism.perturb(values, rng=make_rng()), repeats)


def bit_streams(args):
    words = args.words // DEFAULT_CHUNK * DEFAULT_CHUNK
    print(f"1. Bit streams alone: ns per 64-bit word and per double, {words:,} of each, best of {args.repeats}")
    header = f"{'stream':<24} {'ns/word':>8} {'ns/double':>10} {'x PCG64':>8}"
    print(header)
    print("-" * len(header))
    reference = None
    for name, factory in streams():
        if factory is None:
            print(f"{name:<24} {'-':>8} {'-':>10} {'-':>8}  (this CPU lacks that code path)")
            continue
        raw, double = stream_costs(factory, words, args.repeats)
        reference = reference or double
        print(f"{name:<24} {raw:8.2f} {double:10.2f} {double / reference:8.2f}")
    keyings = 10_000
    keying = best_of(lambda: [secure_generator() for _ in range(keyings)], args.repeats) / keyings * 1e6
    print(f"keying one secure_generator() from the OS (secrets.randbits(256) + ChaCha setup): {keying:.1f} us")


def words_per_user(mechanism, values):
    """64-bit words of the ChaCha stream one perturb of ``values`` consumes, per user (ChaCha counts 32-bit
    words; Generator methods that draw 32 bits take one of them)."""
    bit_generator = ChaCha(key=CHACHA_KEY, rounds=20)
    mechanism.perturb(values, rng=bit_generator)
    low, high = (int(word) for word in bit_generator.state["state"]["ctr"])
    return (low + 2**64 * high) / 2 / values.shape[0]


def perturb_costs(args):
    n, eps, seed = args.users, args.epsilon, args.seed
    population = np.random.default_rng([seed, 0])

    def zipf_values(k):
        weights = 1.0 / np.arange(1, k + 1) ** 1.1
        return weights / weights.sum(), population.choice(k, size=n, p=weights / weights.sum())

    prior8, values8 = zipf_values(8)
    start = time.perf_counter()
    designed = ld.design(ld.Prior(prior8), ld.LIP(eps), baselines=False)
    design_seconds = time.perf_counter() - start
    cases = [("GRR", "k=16", GRR(eps, 16), zipf_values(16)[1]),
             ("OUE", "k=64", OUE(eps, 64), zipf_values(64)[1]),
             ("OLH", "k=1024", OLH(eps, 1024), zipf_values(1024)[1]),
             ("designed LIP table", "k=8", designed, values8),
             ("HarmonyNumeric", "d=10", HarmonyNumeric(epsilon=eps, d=10),
              2.0 * population.beta(2.0, 5.0, size=(n, 10)) - 1.0)]
    print(f"\n2. perturb at n = {n:,} users, eps = {eps}, best of {args.repeats}: seconds, and the ratio to the "
          "int seed (PCG64)")
    header = (f"{'mechanism':<20} {'shape':<7} {'words/user':>10} {'int seed s':>11} {'rng=None s':>11} "
              f"{'x':>6} {'AESCounter s':>13} {'x':>6}")
    print(header)
    print("-" * len(header))
    for name, shape, mechanism, values in cases:
        seeded = perturb_seconds(mechanism, values, lambda: seed, args.repeats)
        secure = perturb_seconds(mechanism, values, lambda: None, args.repeats)
        aes = perturb_seconds(mechanism, values, lambda: AESCounter(key=AES_KEY), args.repeats)
        print(f"{name:<20} {shape:<7} {words_per_user(mechanism, values):10.2f} {seeded:11.3f} {secure:11.3f} "
              f"{secure / seeded:6.2f} {aes:13.3f} {aes / seeded:6.2f}")
    print(f"(the designed table took {design_seconds:.2f} s to design, not counted; rng=None keys a fresh ChaCha20 "
          "stream per call)")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=float, default=1e6, help="number of users (default 10^6)")
    parser.add_argument("--quick", action="store_true", help="10^5 users and 10^6 words")
    parser.add_argument("--words", type=float, default=1e7, help="words per bit-stream timing (default 10^7)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=2024, help="seed of the population and of the int-seed runs")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    args = parser.parse_args(argv)
    args.users = 10**5 if args.quick else int(args.users)
    args.words = 10**6 if args.quick else int(args.words)
    if args.users < 1 or args.words < DEFAULT_CHUNK or args.repeats < 1 or args.seed < 0:
        parser.error(f"--users and --repeats must be positive, --words at least {DEFAULT_CHUNK}, --seed "
                     "non-negative")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    print(f"lipdesign {ld.__version__}, numpy {np.__version__}, randomgen {randomgen.__version__}, Python "
          f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores")
    bit_streams(args)
    perturb_costs(args)


if __name__ == "__main__":
    main()
