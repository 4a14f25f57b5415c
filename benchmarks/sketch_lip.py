"""Benchmark: the count-mean sketch designed under LIP (docs/math.md §16.6) beside Apple's sketch with the same hash
functions and decoder. Figures side by side, never timed assertions.

Priors: the K most frequent words of the bundled words data (lipdesign.datasets.words_path(), CC BY-SA 4.0), their
frequencies renormalised, K = 200 and 1000 (words that spell an integer left out: a Prior's labels may not); d = 16
rows, m the default width (the smallest power of two >= 2K, at most 1024); eps = 1, 2, 4.

The figure of every column is n x the sum of the variances of the candidates' least-squares frequencies, the users
holding the candidates in the prior's proportions (``variance_at``, docs/math.md §16.4; checked against simulation
in tests/test_sketch_lip.py). Columns:
- designed: ``ld.design(prior, ld.LIP(eps), family="cms")``, eps-LIP for X certified exactly; its LDP level (which
  eps-LIP bounds by 2 eps whatever the prior, docs/math.md §2) and its design time beside it;
- Apple LIP: Apple's sketch at the largest eps' whose sketch is eps-LIP at the same prior (the same guarantee);
- Apple eps: at LDP eps (stronger: eps-LDP implies eps-LIP at every prior);
- Apple 2eps: at LDP 2 eps (what eps-LIP allows at worst, so a weaker guarantee than the design's);
- factor: Apple LIP / designed, the variance saved at the same LIP guarantee.
A one-time RAPPOR with one hash per cohort (``perturb_memoised``) has the same reports, hence the same figures.

Run: ``python benchmarks/sketch_lip.py`` (``--quick``: K = 200 and eps = 1 only).
"""

import argparse
import gzip
import platform
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lipdesign as ld
from lipdesign.datasets import words_path


def word_prior(k):
    """The k most frequent words (not spelling an integer) with their renormalised frequencies."""
    with gzip.open(words_path(), "rt", encoding="utf-8") as lines:
        next(lines)
        rows = [line.rstrip("\n").split("\t") for line in lines]
    kept = [(word, float(frequency)) for _, word, frequency in rows if not word.lstrip("+-").isdigit()][:k]
    weights = np.array([frequency for _, frequency in kept])
    return ld.Prior(weights / weights.sum(), labels=[word for word, _ in kept])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="K = 200 and eps = 1 only")
    arguments = parser.parse_args()
    sizes, epsilons = ((200,), (1.0,)) if arguments.quick else ((200, 1000), (1.0, 2.0, 4.0))
    print(f"machine: {platform.machine()}, {platform.system()}, Python {platform.python_version()}; "
          f"{date.today().isoformat()}")
    print("The count-mean sketch designed under eps-LIP vs Apple's sketch (same hashes, d = 16 rows): n x sum Var of "
          "the candidates' least-squares frequencies, users in the prior's proportions (lower is better)")
    header = (f"{'K':>5} {'m':>5} {'eps':>4} {'designed':>10} {'LDP level':>9} {'design s':>8} {'Apple LIP':>10} "
              f"{'Apple eps':>10} {'Apple 2eps':>10} {'factor':>7}")
    print(header)
    print("-" * len(header))
    for k in sizes:
        prior = word_prior(k)
        for eps in epsilons:
            start = time.perf_counter()
            sketch = ld.design(prior, ld.LIP(eps), family="cms")
            figure = sketch.mse
            seconds = time.perf_counter() - start
            assert sketch.verify().passed  # the claim, certified exactly (docs/math.md §16.6)
            apple = sketch.baselines
            print(f"{k:>5} {sketch.m:>5} {eps:>4g} {figure:>10.4g} {sketch.epsilons['LDP']:>9.4f} {seconds:>8.1f} "
                  f"{apple['count-mean sketch (LIP)']:>10.4g} {apple['count-mean sketch']:>10.4g} "
                  f"{apple.get('count-mean sketch at 2 eps', float('nan')):>10.4g} "
                  f"{apple['count-mean sketch (LIP)'] / figure:>6.2f}x")
    print("Guarantees: 'designed' and 'Apple LIP' are eps-LIP for X at the prior; 'Apple eps' is eps-LDP (stronger); "
          "'Apple 2eps' is 2 eps-LDP, the level eps-LIP implies at worst (docs/math.md §2). Apple's sketch at 2 eps "
          "above 10 is out of its range (nan).")


if __name__ == "__main__":
    main()
