"""Benchmark: exact design time and MSE for k = 2..12 under LIP (G = X) and LDP, then the table sampler.

The sampler's throughput (``lipdesign.mechanisms.sampling.TablePerturber``, benchmarks/perturb.py) follows the
design figures; figures side by side, never timed assertions.

Run: ``python benchmarks/design.py`` (add ``--max-k 14`` for more). Targets on a 2-core machine: exact LIP
design at k = 12 under 2 s, LDP under 5 s, peak memory under 2 GB; perturbing 10^7 values at most 5x the
cost of drawing 10^7 uniforms.
"""

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import perturb

import lipdesign as ld
from lipdesign.mechanisms import GRR


def timed_design(prior, notion):
    start = time.perf_counter()
    mechanism = ld.design(prior, notion, baselines=False)
    return time.perf_counter() - start, mechanism


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-k", type=int, default=12)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--perturb-n", type=float, default=1e7)
    args = parser.parse_args()

    print(f"exact design, histogram objective, eps = {args.epsilon}, prior ~ Dirichlet(1) (seeded), "
          "GRR MSE for comparison")
    print(f"{'k':>3} {'LIP s':>8} {'LIP rays':>9} {'LIP MSE':>9} {'LDP s':>8} {'LDP rays':>9} {'LDP MSE':>9} "
          f"{'GRR MSE':>9} {'LDP/LIP':>8}")
    for k in range(2, args.max_k + 1):
        prior = ld.Prior(np.random.default_rng(k).dirichlet(np.ones(k)), normalize=True)
        lip_time, lip = timed_design(prior, ld.LIP(args.epsilon))
        ldp_time, ldp = timed_design(prior, ld.LDP(args.epsilon))
        grr = ld.mse(GRR(args.epsilon, k).full_table(), prior)
        print(f"{k:3d} {lip_time:8.3f} {lip.provenance.get('rays', '-')!s:>9} {lip.mse:9.5f} {ldp_time:8.3f} "
              f"{ldp.provenance['rays']:9d} {ldp.mse:9.5f} {grr:9.5f} {ldp.mse / max(lip.mse, 1e-300):8.3f}")
    print("\nexact design through double description (latent secret of m values, or a prior set around P)")
    print(f"{'k':>3} {'case':>22} {'seconds':>8} {'rays':>7} {'MSE':>9} {'LIP(X) MSE':>11} {'LDP MSE':>9}")
    for k in range(3, min(args.max_k, 10) + 1):
        rng = np.random.default_rng(100 + k)
        prior = ld.Prior(rng.dirichlet(3 * np.ones(k)), normalize=True)
        cases = {
            "secret m=3": ld.LIP(args.epsilon, secret=ld.SecretModel(rng.dirichlet(np.ones(k), size=3))),
            "TV ball r=0.05": ld.LIP(args.epsilon, prior_set=ld.PriorSet.tv_ball(prior.probabilities, 0.05)),
            "box +-20%": ld.LIP(args.epsilon, prior_set=ld.PriorSet.box(
                0.8 * prior.probabilities, np.minimum(1, 1.2 * prior.probabilities))),
        }
        reference_lip = ld.design(prior, ld.LIP(args.epsilon))
        for name, notion in cases.items():
            try:
                seconds, mechanism = timed_design(prior, notion)
            except ld.ProblemTooLargeError as error:
                print(f"{k:3d} {name:>22} refused: {str(error)[:70]}...")
                continue
            print(f"{k:3d} {name:>22} {seconds:8.3f} {mechanism.provenance['rays']:7d} {mechanism.mse:9.5f} "
                  f"{reference_lip.mse:11.5f} {reference_lip.baselines['optimal LDP']:9.5f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory so far: {peak:.0f} MB\n")
    perturb.main(["perturb.py", str(int(args.perturb_n))])


if __name__ == "__main__":
    main()
