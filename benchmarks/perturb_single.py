"""Benchmark: the cost of one single-value ``perturb`` call per family, beside numpy's own call overhead.

Run: ``python benchmarks/perturb_single.py [calls]`` (default 20000 calls per row, best of 3).
For every registered family's ``example()`` and a designed 3-value LIP table it prints the microseconds per
``mechanism.perturb([value], rng=generator)`` call (one report), beside:
  - ``rng.random()`` and ``rng.random(1)``: numpy's call overhead for one uniform (scalar and array);
  - the designed table's sampler alone (``TablePerturber.sample``), i.e. ``perturb`` without the input check
    that every family shares (``input_domain.validate``, timed on its own too).
The generator is PCG64 (``numpy.random.default_rng``); a device uses ChaCha20 (``rng=None`` draws a fresh key
per call, which is timed separately: OS entropy plus key setup).
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lipdesign as ld
from lipdesign.mechanisms.registry import families, family_class


def per_call(function, calls, repeats=3):
    """Best of ``repeats`` mean microseconds per call over ``calls`` calls."""
    function()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def one_value(mechanism):
    """A single valid input of ``mechanism``: the first label, or a row of zeros."""
    domain = mechanism.input_domain
    if domain.kind == "categorical":
        return [domain.labels[0]]
    return np.zeros((1, domain.d))


def main(argv):
    calls = int(float(argv[1])) if len(argv) > 1 else 20000
    rng = np.random.default_rng(1)
    table = ld.design(ld.Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"]), ld.LIP(1.0))
    print(f"one value per call, {calls} calls, best of 3; numpy {np.__version__}, PCG64")
    rows = [("rng.random()  (numpy's call overhead)", lambda: rng.random()),
            ("rng.random(1)", lambda: rng.random(1)),
            ("designed table: sampler alone", lambda: table.sampler.sample(np.array([0]), rng)),
            ("designed table: input check alone", lambda: table.input_domain.validate(["low"])),
            ("designed table: perturb(['low'])", lambda: table.perturb(["low"], rng=rng)),
            ("designed table: perturb([0]) unlabelled",
             lambda: unlabelled.perturb([0], rng=rng)),
            ("designed table: perturb(['low'], rng=None) (ChaCha20, fresh key)",
             lambda: table.perturb(["low"], rng=None))]
    unlabelled = ld.design(ld.Prior([0.2, 0.3, 0.5]), ld.LIP(1.0))
    for family in families():
        mechanism = family_class(family).example()
        value = one_value(mechanism)
        rows.append((f"{family}: perturb (example)", lambda m=mechanism, v=value: m.perturb(v, rng=rng)))
    base = per_call(rows[0][1], calls)
    print(f"{'call':66s} {'us/call':>9s} {'x rng.random()':>15s}")
    for name, function in rows:
        cost = per_call(function, calls)
        print(f"{name:66s} {cost:9.2f} {cost / base:15.1f}")


if __name__ == "__main__":
    main(sys.argv)
