"""Generate notebooks/03-adult.ipynb, executed, with its outputs stored.

Run from anywhere: ``python notebooks/make_03_adult.py``; the stored outputs are those of the full run
(``LIPDESIGN_FULL=1``, the default here; ``LIPDESIGN_FULL=0`` stores the small run). The tests execute the
notebook with its smaller default. Cell ids are fixed; every
random draw is seeded.
"""

import os
from pathlib import Path

from _notebook import write

TARGET = Path(__file__).with_name("03-adult.ipynb")

CELLS = [
    ("md", r"""# The LIP paper's evaluation on Adult: priors from the training split, reports from the test split

The UCI Adult census data (Becker and Kohavi 1996, doi:10.24432/C5XW20, CC BY 4.0; the compact file
`lipdesign.datasets.adult_path()`, and how it was derived, are described in `lipdesign/datasets/README.md`) has a
training split (30,162 complete records) and a test split (15,060). As the LIP paper does, the prior of each attribute
is taken from the training split; unlike a Bayesian evaluation, the reports here come from the **test** records, a
population that differs from the prior, and the figure of merit is the error of the estimate the collector
actually computes, on that population:

- **population error**: n x the sum over values of the squared error of each mechanism's default unbiased
  estimate of the test histogram (n = 15,060 reports, one per test record), averaged over seeded repetitions,
  beside its theoretical value (the sum of the estimate's variances given the users' values, docs/math.md §11);
- every family of lipdesign designed under LIP (the optimal randomized-response table, unary encoding, local
  hashing), the optimal randomized-response table under LDP, and the fixed LDP protocols GRR, OUE and OLH at the
  same epsilon. **An eps-LIP mechanism is eps-LIP for X at the prior but only 2 eps-LDP at worst**
  (docs/math.md §2): the LDP rows have the stronger guarantee.

Then a latent secret taken from the data (income class), prior uncertainty (a prior set from the training
counts), and the drift between the two splits. The default run is small so that the test suite can execute it;
`LIPDESIGN_FULL=1` runs every attribute at every epsilon (the stored outputs are from that run)."""),
    ("code", r"""%matplotlib inline
import csv
import gzip
import itertools
import math
import os
import time

import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

import lipdesign as ld
from lipdesign.datasets import adult_path

FULL = os.environ.get("LIPDESIGN_FULL") == "1"
ATTRIBUTES = ["age", "occupation", "education", "native-country"] if FULL else ["age", "occupation"]
EPSILONS = [0.5, 1.0, 2.0, 4.0] if FULL else [1.0]
REPETITIONS = 200 if FULL else 60
ALPHA = 1e-5  # false-alarm probability of the checks in the last cell (a CI check must not flake)

with gzip.open(adult_path(), "rt", newline="") as handle:
    records = list(csv.DictReader(handle))
AGE_BANDS = [17, 25, 35, 45, 55, 65, 75]  # lower edges: 17-24, 25-34, ..., 65-74, 75+


def age_band(age):
    return sum(int(age) >= edge for edge in AGE_BANDS) - 1


def column(name):
    values = [age_band(r["age"]) if name == "age" else r[name] for r in records]
    labels = ([f"{lo}-{hi - 1}" for lo, hi in itertools.pairwise(AGE_BANDS)] + ["75+"] if name == "age"
              else sorted(set(values)))
    index = {label: i for i, label in enumerate(labels)}
    codes = np.array([v if name == "age" else index[v] for v in values])
    return codes, labels


split = np.array([r["split"] for r in records])
train, test = split == "train", split == "test"
print(f"{train.sum()} training and {test.sum()} test records; attributes {ATTRIBUTES}; eps {EPSILONS}; "
      f"{REPETITIONS} repetitions; full run: {FULL}")"""),
    ("md", r"""## Priors, test histograms and their drift

The prior is the training histogram with a pseudocount of 1/2 per value (LIP needs every value to have positive
probability, docs/math.md §1); the truth is the test histogram. The drift between them is the total-variation
distance."""),
    ("code", r"""data = {}
for name in ATTRIBUTES:
    codes, labels = column(name)
    k = len(labels)
    counts = np.bincount(codes[train], minlength=k)
    prior = ld.Prior.from_counts(counts, labels, pseudocount=0.5)
    truth = np.bincount(codes[test], minlength=k) / test.sum()
    data[name] = {"codes": codes[test], "labels": labels, "counts": counts, "prior": prior, "truth": truth}
    tv = 0.5 * np.abs(prior.probabilities - truth).sum()
    print(f"{name:15s} k = {k:2d}   TV(train prior, test histogram) = {tv:.4f}   largest value "
          f"{labels[int(np.argmax(truth))]!r} ({truth.max():.3f})")"""),
    ("md", r"""## Histogram estimation on the test records, every family, LIP and LDP

For each attribute and epsilon: each mechanism perturbs the 15,060 test records `REPETITIONS` times (seeded), the
default unbiased estimate of the histogram is computed from the reports, and its squared error against the test
histogram is summed over values and multiplied by n. The theoretical figure is the sum of the estimate's variances
at the test histogram, given the users' values (the mechanism's `variance(truth, n)`), times n. The randomized-
response tables are designed by `ld.design` (exactly where the extreme rays fit, by column generation past that,
docs/math.md §12); `bound` is the best certified lower bound on the design's figure at the training prior."""),
    ("code", r"""def families(prior, epsilon):
    lip, ldp = ld.LIP(epsilon), ld.LDP(epsilon)
    k = prior.k
    built = {}
    for name, make in [
        ("RR (LIP)", lambda: ld.design(prior, lip, baselines=False)),
        ("unary (LIP)", lambda: ld.design(prior, lip, family="unary", baselines=False)),
        ("hashing (LIP)", lambda: ld.design(prior, lip, family="hashing", baselines=False)),
        ("RR (LDP)", lambda: ld.design(prior, ldp, baselines=False)),
        ("GRR (LDP)", lambda: ld.mechanisms.GRR(epsilon, k)),
        ("OUE (LDP)", lambda: ld.mechanisms.OUE(epsilon, k)),
        ("OLH (LDP)", lambda: ld.mechanisms.OLH(epsilon, k)),
    ]:
        start = time.perf_counter()
        built[name] = (make(), time.perf_counter() - start)
    return built


def population_error(mechanism, values, truth, repetitions, seed):
    rng = np.random.default_rng(seed)
    errors = []
    for _ in range(repetitions):
        estimate = mechanism.estimate(mechanism.perturb(values, rng=rng))
        estimate = getattr(estimate, "values", estimate)  # the fixed LDP oracles return the array itself
        errors.append(values.size * float(((np.asarray(estimate) - truth) ** 2).sum()))
    errors = np.array(errors)
    return errors.mean(), errors.std(ddof=1) / math.sqrt(repetitions)


rows = []
for a, name in enumerate(ATTRIBUTES):
    d = data[name]
    n = d["codes"].size
    for e, epsilon in enumerate(EPSILONS):
        for f, (family, (mechanism, seconds)) in enumerate(families(d["prior"], epsilon).items()):
            theory = n * float(mechanism.variance(d["truth"], n).sum())
            measured, se = population_error(mechanism, d["codes"], d["truth"], REPETITIONS, seed=1000 * a + 10 * e + f)
            optimality = getattr(mechanism, "optimality", None)
            bound = optimality["lower_bound"] if optimality else None
            rows.append({"attribute": name, "k": len(d["labels"]), "eps": epsilon, "family": family,
                         "measured": measured, "se": se, "theory": theory, "bound": bound, "seconds": seconds,
                         "mechanism": mechanism})
        print(f"{name} (k = {len(d['labels'])}), eps = {epsilon:g}")
        print(f"  {'family':14s} {'measured':>10s} {'+- se':>8s} {'theory':>10s} {'at prior':>10s} {'bound':>10s}"
              f" {'design s':>9s}")
        for row in rows[-7:]:
            mechanism = row["mechanism"]
            at_prior = mechanism.mse if isinstance(mechanism, (ld.TableMechanism, ld.mechanisms.UnaryEncoding,
                                                               ld.mechanisms.LocalHashing)) else float("nan")
            bound = f"{row['bound']:10.3f}" if row["bound"] is not None else f"{'':>10s}"
            print(f"  {row['family']:14s} {row['measured']:10.3f} {row['se']:8.3f} {row['theory']:10.3f} "
                  f"{at_prior:10.3f} {bound} {row['seconds']:9.2f}")"""),
    ("md", r"""`measured` and `theory` are at the test population; `at prior` is the design's own figure at the training
prior (what the design optimised). They differ by the drift only: the unbiased estimates do not shrink toward the
prior, so the drift moves their variance a little and adds no bias. The plot shows the measured population error
against epsilon, one panel per attribute."""),
    ("code", r"""fig, axes = plt.subplots(1, len(ATTRIBUTES), figsize=(4.2 * len(ATTRIBUTES), 3.6), squeeze=False)
for ax, name in zip(axes[0], ATTRIBUTES):
    for family in dict.fromkeys(r["family"] for r in rows):
        points = [(r["eps"], r["measured"], r["se"]) for r in rows if r["attribute"] == name and r["family"] == family]
        eps, measured, se = map(np.array, zip(*points))
        ax.errorbar(eps, measured, yerr=2 * se, marker="o", ms=3, capsize=2, label=family,
                    linestyle="-" if "LIP" in family else "--")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_title(f"{name} (k = {len(data[name]['labels'])})")
axes[0][0].set_ylabel("n x sum of squared errors (test records)")
axes[0][-1].legend(fontsize=7)
fig.suptitle("Population error of each unbiased estimate (LIP rows: eps-LIP, at worst 2 eps-LDP)")
fig.tight_layout()"""),
    ("md", r"""## Gain from the prior, and the gap to the bound

The ratio of each LDP protocol's measured error to the LIP randomized-response design's, at the same epsilon (the
gain LIP buys by using the prior, at a weaker worst-case guarantee), and the design's figure at the prior beside
its certified lower bound."""),
    ("code", r"""fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
for name in ATTRIBUTES:
    lip = {r["eps"]: r for r in rows if r["attribute"] == name and r["family"] == "RR (LIP)"}
    best_ldp = {eps: min(r["measured"] for r in rows if r["attribute"] == name and r["eps"] == eps
                         and "LDP" in r["family"]) for eps in EPSILONS}
    left.plot(EPSILONS, [best_ldp[eps] / lip[eps]["measured"] for eps in EPSILONS], marker="o", label=name)
    gaps = [(lip[eps]["mechanism"].mse - lip[eps]["bound"]) / lip[eps]["mechanism"].mse for eps in EPSILONS]
    right.plot(EPSILONS, gaps, marker="o", label=name)
    print(f"{name}: best LDP / LIP design = " + ", ".join(f"{best_ldp[eps] / lip[eps]['measured']:.2f} (eps {eps:g})"
                                                         for eps in EPSILONS))
    for eps in EPSILONS:
        m = lip[eps]["mechanism"]
        print(f"    eps {eps:g}: design {m.mse:.4f}, bound {lip[eps]['bound']:.4f} ({m.optimality['bound']}), "
              f"method: {m.provenance['method']}")
left.set_xscale("log", base=2)
left.set_xlabel("epsilon")
left.set_ylabel("best LDP error / LIP RR error")
left.legend()
right.set_xscale("log", base=2)
right.set_xlabel("epsilon")
right.set_ylabel("relative gap to the certified bound")
fig.tight_layout()"""),
    ("md", r"""## A latent secret from the data: protect the income class, not the occupation

With the secret G = income class (<=50K, >50K) and T[g, x] = Pr[occupation = x | income = g] estimated from the
training split, LIP for the secret constrains only what a report says about income. The unary encoding
(docs/math.md §7.1) is designed both ways, and the randomized-response table for the secret (exactly over the
double description's rays at this k; by column generation over the cone's polytope past k = 16, docs/math.md §12).
The gain is in the variance; the price is what the report says about the occupation itself: its LIP for X and its
LDP level, verified exactly."""),
    ("code", r"""codes, labels = column("occupation")
income = np.array([r["income"] == ">50K" for r in records], dtype=int)
k = len(labels)
joint = np.zeros((2, k))
np.add.at(joint, (income[train], codes[train]), 1.0)
joint += 0.5  # the same pseudocount as the prior
secret = ld.SecretModel(joint / joint.sum(axis=1, keepdims=True), joint.sum(axis=1) / joint.sum(),
                        secret_labels=["<=50K", ">50K"])
occupation_prior = ld.Prior(joint.sum(axis=0) / joint.sum(), labels)
truth = np.bincount(codes[test], minlength=k) / test.sum()
secret_rows = []
for epsilon in EPSILONS:
    for_x = ld.design(occupation_prior, ld.LIP(epsilon), family="unary", baselines=False)
    for_g = ld.design(occupation_prior, ld.LIP(epsilon, secret=secret), family="unary", baselines=False)
    rr_for_g = ld.design(occupation_prior, ld.LIP(epsilon, secret=secret), baselines=False)
    for mechanism, protects in ((for_x, "occupation, unary"), (for_g, "income, unary"), (rr_for_g, "income, RR")):
        n = codes[test].size
        theory = n * float(mechanism.variance(truth, n).sum())
        measured, se = population_error(mechanism, codes[test], truth, REPETITIONS, seed=int(7000 + 10 * epsilon))
        epsilons = mechanism.verified_epsilons()
        secret_rows.append((epsilon, protects, measured, se, theory, epsilons.get("LIP for X"), epsilons.get("LDP")))
print(f"{'eps':>4s} {'protects, family':>18s} {'measured':>10s} {'+- se':>7s} {'theory':>9s} {'LIP for X':>10s} "
      f"{'LDP':>7s}")
for epsilon, protects, measured, se, theory, lip_x, ldp in secret_rows:
    print(f"{epsilon:4g} {protects:>18s} {measured:10.4f} {se:7.4f} {theory:9.4f} {lip_x:10.3f} {ldp:7.3f}")"""),
    ("md", r"""Protecting only the income class buys a smaller error, paid for in what the reports say about the
occupation: its LIP for X (at the prior) and its LDP level are larger than eps, as the table above shows. That is
the intended trade when only the secret is sensitive, and the wrong one when the occupation is sensitive too.

## Prior uncertainty: a prior set from the training counts

`PriorSet.from_counts` turns the training counts into a set that holds the true prior with 95 % confidence (a TV
ball, docs/math.md §11). A design that is eps-LIP over the whole set (BP-LIP) costs variance; the plain design is
eps-LIP only at the training prior, and its LIP at the test histogram is computed exactly here."""),
    ("code", r"""d = data["age"]
prior_set = ld.PriorSet.from_counts(d["counts"], confidence=0.95)
print(f"age: TV ball of radius {prior_set.parameters['radius']:.4f} around the training frequencies; the test "
      f"histogram is {0.5 * np.abs(prior_set.parameters['center'] - d['truth']).sum():.4f} away")
center = ld.Prior(prior_set.parameters["center"], d["labels"])
for epsilon in EPSILONS:
    plain = ld.design(center, ld.LIP(epsilon), baselines=False)
    bounded = ld.design(center, ld.LIP(epsilon, prior_set=prior_set), baselines=False)
    for name, mechanism in (("plain LIP", plain), ("BP-LIP", bounded)):
        at_test = ld.verify(mechanism, prior=ld.Prior(d["truth"])).epsilon
        over_set = ld.verify(mechanism, prior=prior_set).epsilon
        print(f"eps {epsilon:g} {name:9s}: n x sum Var at the prior {mechanism.mse:8.3f}; LIP at the test histogram "
              f"{at_test:.3f}, worst over the set {over_set:.3f}")"""),
    ("md", r"""## Checks

Each measured population error must agree with its theoretical value within t standard errors of the mean over
the `REPETITIONS` repetitions, t the two-sided Student quantile (REPETITIONS - 1 degrees of freedom) that gives the
whole group a false-alarm probability of at most 1e-5 (Bonferroni). Every designed table is exactly verified at
its claim, and every design's certified bound is below its figure."""),
    ("code", r"""checks = [(r["measured"], r["se"], r["theory"], f"{r['attribute']} eps {r['eps']:g} {r['family']}")
          for r in rows]
checks += [(measured, se, theory, f"secret eps {epsilon:g} {protects}")
           for epsilon, protects, measured, se, theory, *_ in secret_rows]
z = stats.t.ppf(1 - ALPHA / (2 * len(checks)), REPETITIONS - 1)
for measured, se, theory, what in checks:
    assert abs(measured - theory) <= z * se, (what, measured, theory, se, z)
for r in rows:
    if isinstance(r["mechanism"], ld.TableMechanism):
        assert ld.verify(r["mechanism"]).epsilon <= r["eps"], r["family"]
for name in ATTRIBUTES:
    for eps in EPSILONS:
        lip = next(r for r in rows if r["attribute"] == name and r["eps"] == eps and r["family"] == "RR (LIP)")
        assert lip["bound"] <= lip["mechanism"].mse * (1 + 1e-9)
print(f"{len(checks)} population errors within {z:.2f} standard errors of their theory; every table verified")"""),
]

if __name__ == "__main__":
    os.environ.setdefault("LIPDESIGN_FULL", "1")  # LIPDESIGN_FULL=0 stores the small default run instead
    write(CELLS, TARGET)
