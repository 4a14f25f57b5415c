"""Benchmark: randomized-response designs at large k (docs/math.md §11, §12), beside the fixed protocols, the
encodings and the certified bound at the same epsilon. Figures side by side in one run, never timed assertions.

Zipf(1.1) priors; every figure is n x the sum of the variances of the estimate's unbiased version at the design
prior, given the users' values (lower is better), each mechanism with its own estimator.
1. LIP, ld.Frequencies, eps in --epsilons: the design's figure, the best certified lower bound and the gap to it,
   rounds, outputs, why it stopped and its time (ld.design's defaults: target gap 1 %, time limit 600 s); beside
   the designed unary encoding and local hashing (eps-LIP too), and GRR, OUE, OLH and the best subset selection at
   the same eps (LDP, a stronger guarantee: eps-LIP is only 2 eps-LDP at worst, docs/math.md §2).
2. LDP, ld.Frequencies: the design (a table, or subset selection when column generation ends above it) beside
   GRR, OUE, OLH and subset selection at the same eps (all eps-LDP): never worse than subset selection.
3. Uniform prior, LIP and LDP: ld.design's time and figure (the optimal orbit, closed form) at k = 64..1024.
4. Bounded-prior LIP over the sets PriorSet.from_counts gives for a survey of n0 users (TV ball and box), designed
   and exactly verified, beside plain LIP at the survey's frequencies.
5. LIP, ld.BayesHistogram: the per-user MSE of the posterior mean under the prior, beside LB(P, eps) (docs/math.md
   §10) and the gap to it.
6. LIP for a binary latent secret (the polytope slice of docs/math.md §12), beside the LIP design for X itself.
7. Priors with a few classes of equally likely values (a head of known frequencies and a uniform tail; tiers):
   ld.design's class-symmetric design (docs/math.md §11), its gap and time, beside the encodings and LDP protocols.

Run: ``python benchmarks/large.py`` (``--frequencies 64,256,1024 --epsilons 0.5,1,2 --uniform 64,256,1024
--classes 256,1024 --prior-sets 64 --bayes 32,64,256 --secret 24,41 --sections
lip,ldp,uniform,classes,bp,bayes,secret``). Targets (issue 24):
LIP k = 64 within 1 % of a certified bound in under 60 s, k = 256 within 2 % in under 5 minutes, k = 1024 within
5 % in under 10 minutes; LDP never worse than subset selection; the uniform prior in under a second at every k.
"""

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lipdesign as ld
from lipdesign.designer.baselines import subset_selection_variance
from lipdesign.mechanisms import GRR, OLH, OUE


def zipf(k, s=1.1):
    weights = 1.0 / np.arange(1, k + 1) ** s
    return weights / weights.sum()


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def ks(text):
    return [int(part) for part in text.split(",") if part]


def ldp_protocols(prior, epsilon):
    """n x sum Var of each fixed protocol's unbiased estimate at the prior, given the users' values."""
    p = prior.probabilities
    ss, d = subset_selection_variance(prior, epsilon)
    return {"GRR": float(GRR(epsilon, prior.k).variance(p).sum()),
            "OUE": float(OUE(epsilon, prior.k).variance(p).sum()),
            "OLH": float(OLH(epsilon, prior.k).variance(p).sum()), f"SS d={d}": ss}


GAP = re.compile(r", gap (\d+\.\d+)% to the ")
MILESTONES = (0.05, 0.02, 0.01)


def design_row(prior, notion, objective, max_rounds):
    """(mechanism, seconds, optimality, {gap: seconds until a round first reached it}) of ld.design's defaults;
    the milestones come from its progress lines (the time ld.design has run when the round ended)."""
    start, reached = time.perf_counter(), {}

    def progress(line):
        match = GAP.search(line)
        if match:
            for milestone in MILESTONES:
                if float(match.group(1)) / 100 <= milestone and milestone not in reached:
                    reached[milestone] = time.perf_counter() - start

    mechanism, seconds = timed(ld.design, prior, notion, objective, baselines=False, max_rounds=max_rounds,
                               progress=progress)
    return mechanism, seconds, mechanism.optimality, reached


def milestones(reached):
    return " | ".join(f"{reached[gap]:.0f}" if gap in reached else "-" for gap in MILESTONES)


def outputs(mechanism):
    return str(mechanism.table.shape[1]) if hasattr(mechanism, "table") else mechanism.family


def frequencies(values, epsilons, max_rounds, notion_kind):
    print(f"\n{notion_kind}, ld.Frequencies, Zipf(1.1): n x sum Var given the users' values (lower is better)")
    header = ("k", "eps", "design", "bound", "gap", "bound used", "rounds", "outputs", "stopped", "s",
              *(f"s to {gap:.0%}" for gap in MILESTONES))
    print(" | ".join(header) + " | " + ("unary (LIP) | hashing (LIP) | " if notion_kind == "LIP" else "")
          + "GRR | OUE | OLH | SS (LDP)")
    for k in values:
        for epsilon in epsilons:
            prior = ld.Prior(zipf(k))
            notion = ld.LIP(epsilon) if notion_kind == "LIP" else ld.LDP(epsilon)
            mechanism, seconds, optimality, reached = design_row(prior, notion, ld.Frequencies(), max_rounds)
            row = [str(k), f"{epsilon:g}", f"{optimality['variance']:.4f}", f"{optimality['lower_bound']:.4f}",
                   f"{optimality['gap']:.2%}", optimality["bound"].split(" (")[0],
                   str(mechanism.provenance.get("rounds", "-")), outputs(mechanism),
                   mechanism.provenance.get("stopped", "exact"), f"{seconds:.1f}", milestones(reached)]
            if notion_kind == "LIP":
                unary = ld.design(prior, notion, family="unary", baselines=False)
                hashing = ld.design(prior, notion, family="hashing", baselines=False)
                row += [f"{unary.mse:.4f}", f"{hashing.mse:.4f}"]
            row += [f"{value:.4f}" for value in ldp_protocols(prior, epsilon).values()]
            print(" | ".join(row), flush=True)


def uniform(values, epsilons):
    print("\nUniform prior, ld.Frequencies: ld.design's figure (the optimal orbit, docs/math.md §11) and time, "
          "LIP beside LDP at the same eps")
    print("k | eps | LIP family | LIP figure | gap | s | LDP family | LDP figure | s")
    for k in values:
        for epsilon in epsilons:
            prior = np.full(k, 1.0 / k)
            lip, lip_s = timed(ld.design, prior, ld.LIP(epsilon))
            ldp, ldp_s = timed(ld.design, prior, ld.LDP(epsilon))
            print(f"{k} | {epsilon:g} | {lip.family} | {lip.mse:.4f} | {lip.optimality['gap']:.1e} | {lip_s:.3f} | "
                  f"{ldp.family} | {ldp.mse:.4f} | {ldp_s:.3f}", flush=True)


def head_and_tail(k, head):
    """``head`` known frequencies, the rest of the mass uniform over the other k - len(head) values."""
    head = np.asarray(head, dtype=float)
    return np.concatenate([head, np.full(k - head.size, (1 - head.sum()) / (k - head.size))])


#: Priors with a few classes of equally likely values: a head of known frequencies and a uniform tail, and tiers.
CLASS_PRIORS = {"5 + tail": [0.2, 0.1, 0.1, 0.05, 0.05], "3/10/40 tiers + tail": [0.1] * 3 + [0.02] * 10 + [0.005] * 40}


def classes(values, epsilons):
    print("\nLIP, ld.Frequencies, priors with a few classes of equally likely values (docs/math.md §11): ld.design's "
          "class-symmetric design beside the encodings (eps-LIP) and the LDP protocols at the same eps; n x sum Var "
          "given the users' values at the prior")
    print("prior | k | classes | eps | design | bound | gap | orbits | stopped | s | unary (LIP) | hashing (LIP) | "
          "GRR | OUE | OLH | SS (LDP)")
    for name, head in CLASS_PRIORS.items():
        for k in values:
            prior = ld.Prior(head_and_tail(k, head))
            for epsilon in epsilons:
                mechanism, seconds = timed(ld.design, prior, ld.LIP(epsilon), baselines=False)
                optimality = mechanism.optimality
                encodings = []
                for family in ("unary", "hashing"):
                    try:
                        encodings.append(f"{ld.design(prior, ld.LIP(epsilon), family=family, baselines=False).mse:.4f}")
                    except ld.SolverError as error:  # a baseline only: say so and go on
                        encodings.append(f"failed ({str(error).split(':')[0]})")
                row = [name, str(k), str(getattr(mechanism, "sizes", np.zeros(0)).size), f"{epsilon:g}",
                       f"{optimality['variance']:.4f}", f"{optimality['lower_bound']:.4f}", f"{optimality['gap']:.3%}",
                       str(len(getattr(mechanism, "orbits", ()))), mechanism.provenance.get("stopped", "-"),
                       f"{seconds:.1f}", *encodings,
                       *(f"{value:.4f}" for value in ldp_protocols(prior, epsilon).values())]
                print(" | ".join(row), flush=True)


def prior_sets(values, epsilon, survey=5000):
    print(f"\nBounded-prior LIP, eps = {epsilon:g}: the sets PriorSet.from_counts gives for a survey of {survey} users "
          "drawn from Zipf(1.1) (95 %), designed at the survey's frequencies and verified exactly over the set")
    print("k | set | design | bound | rounds | outputs | stopped | design s | verified eps (worst over the set) | "
          "plain LIP")
    for k in values:
        counts = np.random.default_rng(k).multinomial(survey, zipf(k)) + 1
        prior = ld.Prior.from_counts(counts)
        plain = ld.design(prior, ld.LIP(epsilon), baselines=False)
        for kind in ("tv", "box"):
            notion = ld.LIP(epsilon, prior_set=ld.PriorSet.from_counts(counts, kind=kind))
            mechanism, seconds, optimality, _ = design_row(prior, notion, ld.Frequencies(), 200)
            worst = ld.verify(mechanism, prior=notion.prior_set)
            print(f"{k} | {kind} | {mechanism.mse:.4f} | {optimality['lower_bound']:.4f} | "
                  f"{mechanism.provenance.get('rounds', '-')} | {outputs(mechanism)} | "
                  f"{mechanism.provenance.get('stopped', 'exact')} | {seconds:.1f} | {worst.epsilon:.6f} "
                  f"({'PASS' if worst.passed else 'FAIL'}) | {plain.mse:.4f}", flush=True)


def bayes(values, epsilon, max_rounds):
    print(f"\nLIP, ld.BayesHistogram, Zipf(1.1), eps = {epsilon:g}: per-user MSE of the posterior mean under the "
          "prior, beside LB(P, eps) (docs/math.md §10)")
    print("k | design | LB | gap | rounds | outputs | stopped | s")
    for k in values:
        prior = ld.Prior(zipf(k))
        mechanism, seconds, optimality, _ = design_row(prior, ld.LIP(epsilon), ld.BayesHistogram(), max_rounds)
        print(f"{k} | {mechanism.mse:.6f} | {optimality['lower_bound']:.6f} | {optimality['gap']:.3%} | "
              f"{mechanism.provenance.get('rounds', '-')} | {outputs(mechanism)} | "
              f"{mechanism.provenance.get('stopped', 'exact')} | {seconds:.1f}", flush=True)


def binary_secret(prior, seed=2):
    """G in {0, 1} with Pr[G | X = x] tilted by e^(+-u_x), u_x uniform on [-3, 3]: releasing X itself is not allowed."""
    tilt = np.exp(np.random.default_rng(seed).uniform(-3, 3, size=prior.k))
    joint = np.stack([prior.probabilities * tilt, prior.probabilities / tilt])
    return ld.SecretModel.from_joint(joint / joint.sum(axis=0) * prior.probabilities)


def secret(values, epsilon, max_rounds):
    print(f"\nLIP for a binary latent secret, ld.Frequencies, Zipf(1.1), eps = {epsilon:g}: n x sum Var given the "
          "users' values; the last columns protect X itself (a stronger guarantee)")
    print("k | design | bound | gap | rounds | outputs | stopped | s | LIP for X | GRR | OUE | OLH | SS (LDP)")
    for k in values:
        prior = ld.Prior(zipf(k))
        notion = ld.LIP(epsilon, secret=binary_secret(prior))
        mechanism, seconds, optimality, _ = design_row(prior, notion, ld.Frequencies(), max_rounds)
        bound = optimality["lower_bound"]
        row = [str(k), f"{optimality['variance']:.4f}", "-" if bound is None else f"{bound:.4f}",
               "-" if bound is None else f"{optimality['gap']:.2%}", str(mechanism.provenance.get("rounds", "-")),
               outputs(mechanism), mechanism.provenance.get("stopped", "exact"), f"{seconds:.1f}"]
        plain = ld.design(prior, ld.LIP(epsilon), baselines=False, max_rounds=max_rounds)
        row += [f"{plain.optimality['variance']:.4f}"]
        row += [f"{value:.4f}" for value in ldp_protocols(prior, epsilon).values()]
        print(" | ".join(row), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=lambda text: [float(part) for part in text.split(",")],
                        default=[0.5, 1.0, 2.0])
    parser.add_argument("--frequencies", type=ks, default=ks("64,256,1024"), help="k values, LIP and LDP")
    parser.add_argument("--uniform", type=ks, default=ks("64,256,1024"), help="k values, uniform prior")
    parser.add_argument("--prior-sets", type=ks, default=ks("64"), help="k values, bounded-prior LIP")
    parser.add_argument("--bayes", type=ks, default=ks("32,64,256"), help="k values, Bayesian histogram")
    parser.add_argument("--secret", type=ks, default=ks("24,41"), help="k values, LIP for a latent secret")
    parser.add_argument("--classes", type=ks, default=ks("256,1024"), help="k values, priors with a few classes")
    parser.add_argument("--max-rounds", type=int, default=200)
    parser.add_argument("--sections", default="lip,ldp,uniform,classes,bp,bayes,secret", help="which tables to print")
    args = parser.parse_args()
    sections = args.sections.split(",")
    if "lip" in sections:
        frequencies(args.frequencies, args.epsilons, args.max_rounds, "LIP")
    if "ldp" in sections:
        frequencies(args.frequencies, args.epsilons, args.max_rounds, "LDP")
    if "uniform" in sections:
        uniform(args.uniform, args.epsilons)
    if "classes" in sections:
        classes(args.classes, args.epsilons)
    if "bp" in sections:
        prior_sets(args.prior_sets, 1.0)
    if "bayes" in sections:
        bayes(args.bayes, 1.0, args.max_rounds)
    if "secret" in sections:
        secret(args.secret, 1.0, args.max_rounds)


if __name__ == "__main__":
    main()
