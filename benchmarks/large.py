"""Benchmark: randomized-response designs past enumeration, by column generation (docs/math.md §12), beside the
fixed protocols and the encodings at the same epsilon. Figures side by side in one run, never timed assertions.

Zipf(1.1) priors, eps = 1 unless --epsilon says otherwise.
1. LIP, ld.Frequencies: the design's figure (n x the sum of the variances of the unbiased estimate at the prior,
   given the users' values), the best certified lower bound and the gap to it, rounds, outputs, design time; beside
   the designed unary encoding and local hashing (eps-LIP too), and GRR, OUE, OLH and the best subset selection at
   the same eps (LDP, a stronger guarantee: eps-LIP is only 2 eps-LDP at worst, docs/math.md §2).
2. LDP, ld.Frequencies: the design beside GRR, OUE, OLH and subset selection at the same eps (all eps-LDP).
3. LIP, ld.BayesHistogram: the per-user MSE of the posterior mean under the prior, beside the closed-form bound
   LB(P, eps) of docs/math.md §10 and the gap to it.
4. LIP for a binary latent secret (ld.Frequencies; the polytope slice of docs/math.md §12), beside the LIP design
   for X itself and the LDP protocols: these protect X, a stronger guarantee than protecting the secret only.

Run: ``python benchmarks/large.py`` (``--frequencies 32,64,128,256 --bayes 32,64,256,1024 --secret 24,41,64
--max-rounds 60 --sections lip,ldp,bayes,secret``).
"""

import argparse
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


def design_row(prior, notion, objective, max_rounds):
    mechanism, seconds = timed(ld.design, prior, notion, objective, baselines=False, max_rounds=max_rounds)
    optimality = mechanism.optimality
    return mechanism, seconds, optimality


def frequencies(values, epsilon, max_rounds, notion_kind):
    print(f"\n{notion_kind}, ld.Frequencies, Zipf(1.1), eps = {epsilon:g}: n x sum Var given the users' values "
          "(lower is better)")
    header = ("k", "design", "bound", "gap", "bound used", "rounds", "outputs", "stopped", "s")
    print(" | ".join(header) + " | " + ("unary (LIP) | hashing (LIP) | " if notion_kind == "LIP" else "")
          + "GRR | OUE | OLH | SS (LDP)")
    for k in values:
        prior = ld.Prior(zipf(k))
        notion = ld.LIP(epsilon) if notion_kind == "LIP" else ld.LDP(epsilon)
        mechanism, seconds, optimality = design_row(prior, notion, ld.Frequencies(), max_rounds)
        row = [str(k), f"{optimality['variance']:.4f}", f"{optimality['lower_bound']:.4f}",
               f"{optimality['gap']:.2%}", optimality["bound"].split(" (")[0],
               str(mechanism.provenance.get("rounds", "-")), str(mechanism.table.shape[1]),
               mechanism.provenance.get("stopped", "exact"), f"{seconds:.1f}"]
        if notion_kind == "LIP":
            unary = ld.design(prior, notion, family="unary", baselines=False)
            hashing = ld.design(prior, notion, family="hashing", baselines=False)
            row += [f"{unary.mse:.4f}", f"{hashing.mse:.4f}"]
        row += [f"{value:.4f}" for value in ldp_protocols(prior, epsilon).values()]
        print(" | ".join(row), flush=True)


def bayes(values, epsilon, max_rounds):
    print(f"\nLIP, ld.BayesHistogram, Zipf(1.1), eps = {epsilon:g}: per-user MSE of the posterior mean under the "
          "prior, beside LB(P, eps) (docs/math.md §10)")
    print("k | design | LB | gap | rounds | outputs | stopped | s")
    for k in values:
        prior = ld.Prior(zipf(k))
        mechanism, seconds, optimality = design_row(prior, ld.LIP(epsilon), ld.BayesHistogram(), max_rounds)
        print(f"{k} | {mechanism.mse:.6f} | {optimality['lower_bound']:.6f} | {optimality['gap']:.3%} | "
              f"{mechanism.provenance.get('rounds', '-')} | {mechanism.table.shape[1]} | "
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
        mechanism, seconds, optimality = design_row(prior, notion, ld.Frequencies(), max_rounds)
        bound = optimality["lower_bound"]
        row = [str(k), f"{optimality['variance']:.4f}", "-" if bound is None else f"{bound:.4f}",
               "-" if bound is None else f"{optimality['gap']:.2%}", str(mechanism.provenance.get("rounds", "-")),
               str(mechanism.table.shape[1]), mechanism.provenance.get("stopped", "exact"), f"{seconds:.1f}"]
        plain = ld.design(prior, ld.LIP(epsilon), baselines=False, max_rounds=max_rounds)
        row += [f"{plain.optimality['variance']:.4f}"]
        row += [f"{value:.4f}" for value in ldp_protocols(prior, epsilon).values()]
        print(" | ".join(row), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--frequencies", type=ks, default=ks("32,64,128,256"), help="k values, LIP and LDP")
    parser.add_argument("--bayes", type=ks, default=ks("32,64,256,1024"), help="k values, Bayesian histogram")
    parser.add_argument("--secret", type=ks, default=ks("24,41,64"), help="k values, LIP for a latent secret")
    parser.add_argument("--max-rounds", type=int, default=60)
    parser.add_argument("--sections", default="lip,ldp,bayes,secret", help="which of the four tables to print")
    args = parser.parse_args()
    sections = args.sections.split(",")
    if "lip" in sections:
        frequencies(args.frequencies, args.epsilon, args.max_rounds, "LIP")
    if "ldp" in sections:
        frequencies(args.frequencies, args.epsilon, args.max_rounds, "LDP")
    if "bayes" in sections:
        bayes(args.bayes, args.epsilon, args.max_rounds)
    if "secret" in sections:
        secret(args.secret, args.epsilon, args.max_rounds)


if __name__ == "__main__":
    main()
