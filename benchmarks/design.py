"""Benchmark: design speed alone and beside a competing process, exact design time and accuracy for k = 4..12,
the prior-set and latent-secret cases, the uniform-prior closed forms at large k, then the table sampler. Figures
side by side, never timed assertions.

0. Design speed on a shared machine: ld.design (LIP eps, Zipf(1.1), no baselines) at k = 8, 12 and 64, alone and
   while another process spins on a core of its own (a pure-Python busy loop), with the designer's one BLAS thread
   (lipdesign/_solvers/threads.py) and, for k <= 12, with the libraries' default threads (the undecorated function),
   all in one run. Target (issue 24): k = 12 under 3 s alone, and under 3x its time alone beside the competing
   process.

1. ld.Frequencies (the default objective) on Zipf(1.1): the design time of the A-optimal LIP and LDP tables and
   their figure (n x the sum of the variances of the unbiased GLS estimate at the prior, given the users' values),
   the certified lower bound and gap, and the same figure for GRR, OUE, OLH and the best subset selection at the
   same epsilon (each with its own unbiased estimate) and for the optimal LDP table at 2 eps (every eps-LIP
   mechanism is 2 eps-LDP, docs/math.md §2).
2. A latent secret (double description) and prior sets (three-level rays): fixed boxes and TV balls, and the sets
   ``PriorSet.from_counts`` gives for a survey of 200, default objective.
3. The uniform-prior closed forms (docs/math.md §11) at k = 64, 256, 1024.
4. The sampler's throughput (``lipdesign.mechanisms.sampling.TablePerturber``, benchmarks/perturb.py).

Run: ``python benchmarks/design.py`` (``--max-k 12``, ``--epsilon 1``). Targets (issue 8): k = 8 under 1 s,
k = 10 under 2 s, k = 12 under 30 s on 2 cores; a survey prior set at k <= 10 under a minute; the closed forms in
under a second; perturbing 10^7 values at most 5x the cost of drawing 10^7 uniforms.
"""

import argparse
import multiprocessing
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import perturb

import lipdesign as ld
from lipdesign.designer import uniform_prior_optimum


def zipf(k, s=1.1):
    weights = 1.0 / np.arange(1, k + 1) ** s
    return weights / weights.sum()


def timed_design(prior, notion):
    start = time.perf_counter()
    mechanism = ld.design(prior, notion, baselines=False)
    return time.perf_counter() - start, mechanism


def _spin():
    while True:
        pass


def shared_machine(ks, eps, unlimited_max_k=12):
    ld.design(zipf(3), ld.LIP(eps), baselines=False)  # imports cvxpy once, outside the timings
    cores = multiprocessing.cpu_count()
    loads = sorted({1, cores})
    print(f"0. Design time (s) of ld.design(Zipf(1.1), LIP eps={eps:g}, baselines=False) on {cores} cores: alone, "
          f"and beside {' and '.join(map(str, loads))} competing CPU-bound process(es); with the designer's one BLAS "
          "thread, and (k <= 12) with the libraries' default thread counts; ratio: beside / alone")
    header = f"{'k':>4} {'threads':>8} {'alone':>8}" + "".join(f" {f'beside {n}':>9} {'ratio':>6}" for n in loads)
    print(header)
    print("-" * len(header))
    for k in ks:
        prior = zipf(k)
        runs = [("one", ld.design)] + ([("default", ld.design.__wrapped__)] if k <= unlimited_max_k else [])
        for name, function in runs:
            alone = _timed(function, prior, eps)
            row = f"{k:>4} {name:>8} {alone:8.2f}"
            for count in loads:
                competitors = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(count)]
                for competitor in competitors:
                    competitor.start()
                try:
                    beside = _timed(function, prior, eps)
                finally:
                    for competitor in competitors:
                        competitor.terminate()
                        competitor.join()
                row += f" {beside:9.2f} {beside / alone:6.2f}"
            print(row, flush=True)


def _timed(function, prior, eps):
    start = time.perf_counter()
    function(prior, ld.LIP(eps), baselines=False)
    return time.perf_counter() - start


def population_table(max_k, eps):
    ld.design(zipf(3), ld.LIP(eps), baselines=False)  # imports cvxpy once, outside the timings
    print(f"1. A-optimal designs (ld.Frequencies) on Zipf(1.1), eps = {eps}: n x sum Var of the unbiased estimate at "
          "the prior, given the users' values (lower is better); times without the baselines")
    header = (f"{'k':>3} {'LIP s':>7} {'LIP':>8} {'bound':>8} {'gap':>8} {'LDP s':>7} {'LDP':>8} {'gap':>8} "
              f"{'GRR':>8} {'OUE':>8} {'OLH':>8} {'SS':>8} {'LDP@2eps':>8} {'all s':>6}")
    print(header)
    print("-" * len(header))
    for k in range(4, max_k + 1, 2):
        prior = zipf(k)
        lip_time, lip = timed_design(prior, ld.LIP(eps))
        ldp_time, ldp = timed_design(prior, ld.LDP(eps))
        start = time.perf_counter()
        figures = ld.design(prior, ld.LIP(eps)).baselines
        everything = time.perf_counter() - start
        ss = next(value for name, value in figures.items() if name.startswith("subset") and "2 eps" not in name)
        print(f"{k:>3} {lip_time:7.2f} {lip.mse:8.4f} {lip.optimality['lower_bound']:8.4f} "
              f"{lip.optimality['gap']:8.1e} {ldp_time:7.2f} {ldp.mse:8.4f} {ldp.optimality['gap']:8.1e} "
              f"{figures['GRR']:8.4f} {figures['OUE']:8.4f} {figures['OLH']:8.4f} {ss:8.4f} "
              f"{figures['optimal LDP at 2 eps']:8.4f} {everything:6.2f}")
    print("(all s: the LIP design with every baseline, including the optimal LDP tables at eps and 2 eps)")


def secrets_and_prior_sets(max_k, eps):
    print("\n2. A latent secret of m values (double description), and prior sets around P (three-level rays, "
          "docs/math.md §5): fixed ones, and the sets PriorSet.from_counts gives for a survey of n = 200 at 95 %, "
          "with P the survey's frequencies; default objective. gap: to the dual bound over the rays")
    header = (f"{'k':>3} {'case':>16} {'seconds':>8} {'rays':>7} {'figure':>9} {'gap':>8} {'LIP at P':>9} "
              f"{'LDP':>9}")
    print(header)
    print("-" * len(header))
    for k in range(4, min(max_k, 10) + 1, 2):
        rng = np.random.default_rng(100 + k)
        prior = ld.Prior(rng.dirichlet(3 * np.ones(k)), normalize=True)
        counts = np.maximum(rng.multinomial(200, zipf(k)), 1)
        survey = ld.Prior(counts / counts.sum())
        cases = [
            ("secret m=3", prior, ld.LIP(eps, secret=ld.SecretModel(rng.dirichlet(np.ones(k), size=3)))),
            ("TV ball r=0.05", prior, ld.LIP(eps, prior_set=ld.PriorSet.tv_ball(prior.probabilities, 0.05))),
            ("box +-20%", prior, ld.LIP(eps, prior_set=ld.PriorSet.box(
                0.8 * prior.probabilities, np.minimum(1, 1.2 * prior.probabilities)))),
            ("survey TV ball", survey, ld.LIP(eps, prior_set=ld.PriorSet.from_counts(counts, kind="tv"))),
            ("survey box", survey, ld.LIP(eps, prior_set=ld.PriorSet.from_counts(counts, kind="box"))),
        ]
        references = {}
        for name, design_prior, notion in cases:
            if id(design_prior) not in references:
                references[id(design_prior)] = ld.design(design_prior, ld.LIP(eps))
            reference = references[id(design_prior)]
            try:
                seconds, mechanism = timed_design(design_prior, notion)
            except ld.ProblemTooLargeError as error:
                print(f"{k:3d} {name:>16} refused: {str(error)[:70]}...")
                continue
            print(f"{k:3d} {name:>16} {seconds:8.3f} {mechanism.provenance['rays']:7d} {mechanism.mse:9.5f} "
                  f"{mechanism.optimality['gap']:8.1e} {reference.mse:9.5f} {reference.baselines['optimal LDP']:9.5f}")
    print("(LIP at P: the plain eps-LIP optimum at the same prior; LDP: the optimal eps-LDP table; the TV ball of a "
          "survey of 200 has radius 0.13-0.16 at k = 6-10)")


def uniform_closed_forms(eps):
    print(f"\n3. Uniform prior, closed forms (docs/math.md §11), eps = {eps}:")
    for k in (64, 256, 1024):
        start = time.perf_counter()
        lip, lip_form = uniform_prior_optimum(k, eps, "LIP")
        ldp, ldp_form = uniform_prior_optimum(k, eps, "LDP")
        ldp2, _ = uniform_prior_optimum(k, 2 * eps, "LDP")
        seconds = time.perf_counter() - start
        print(f"k = {k:>4}: LIP {lip:10.3f} ({lip_form}), LDP {ldp:10.3f} ({ldp_form}), LDP at 2 eps {ldp2:9.3f}, "
              f"{seconds * 1e3:.2f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-k", type=int, default=12)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--perturb-n", type=float, default=1e7)
    parser.add_argument("--shared-k", default="8,12,64", help="k values of section 0 (empty: skip it)")
    args = parser.parse_args()

    shared = [int(part) for part in args.shared_k.split(",") if part]
    if shared:
        shared_machine(shared, args.epsilon)

    population_table(args.max_k, args.epsilon)
    secrets_and_prior_sets(args.max_k, args.epsilon)
    uniform_closed_forms(args.epsilon)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory so far: {peak:.0f} MB\n")
    perturb.main(["perturb.py", str(int(args.perturb_n))])


if __name__ == "__main__":
    main()
