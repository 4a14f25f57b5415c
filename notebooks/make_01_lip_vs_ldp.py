"""Generate notebooks/01-lip-vs-ldp.ipynb, executed, with its outputs stored.

Run from anywhere: ``python notebooks/make_01_lip_vs_ldp.py``. Cell ids are fixed; every random draw is seeded.
"""

from pathlib import Path

from _notebook import write

TARGET = Path(__file__).with_name("01-lip-vs-ldp.ipynb")

CELLS = [
    ("md", r"""# LIP versus LDP, for the estimate you compute

Local differential privacy (LDP) bounds how much a report $Y$ can change with the input $X$, whatever the prior:
$Q[x,y] \le e^\varepsilon Q[x',y]$. Local information privacy (LIP) bounds what the report teaches an adversary
who knows the prior $P$: $e^{-\varepsilon} \le \Pr[X=x \mid Y=y] / P_x \le e^{\varepsilon}$ (docs/math.md §2).
Every $\varepsilon$-LDP table is $\varepsilon$-LIP, so designing for LIP can only help at the same $\varepsilon$;
but an $\varepsilon$-LIP table is only $2\varepsilon$-LDP in the worst case, and its guarantee holds at the prior.

**Accuracy** here is the error of the estimate the server actually computes from the reports (the unbiased GLS
estimate, docs/math.md §11), on the population it actually has: $n \times$ the sum of the variances of the
estimated frequencies, given the users' values. Every design below is the exact optimum of that figure for its
notion (`ld.Frequencies()`, the default objective). The last cell checks the key facts and fails if any stops
holding."""),
    ("code", r"""%matplotlib inline
import warnings

import matplotlib.pyplot as plt
import numpy as np

import lipdesign as ld
from lipdesign import demo
from lipdesign.simulation import drifted

designed = []  # every table designed below; the last cell verifies each one exactly


def run(prior, notion, objective=None, baselines=True):
    mechanism = ld.design(prior, notion, objective, baselines=baselines)
    designed.append(mechanism)
    return mechanism"""),
    ("md", r"""## 1. Variance against $\varepsilon$

Six app-usage buckets with a skewed prior. For each $\varepsilon$: the optimal LIP table, and, at the same
$\varepsilon$, the optimal LDP table, subset selection (the best subset size), GRR and OUE, each with its own
unbiased estimate; dashed, the optimal LDP table at $2\varepsilon$, the LDP level an $\varepsilon$-LIP table
reaches at worst."""),
    ("code", r"""prior1 = ld.Prior([0.4, 0.22, 0.14, 0.1, 0.08, 0.06], labels=["a", "b", "c", "d", "e", "f"])
eps_grid = [0.25, 0.5, 1.0, 1.5, 2.0, 3.0]
rows1 = []
for eps in eps_grid:
    lip = run(prior1, ld.LIP(eps))
    b = lip.baselines
    subset = min(v for name, v in b.items() if name.startswith("subset") and "2 eps" not in name)
    rows1.append((eps, lip.mse, b["optimal LDP"], subset, b["GRR"], b["OUE"], b["optimal LDP at 2 eps"]))
rows1 = np.array(rows1)
names = ["LIP", "opt LDP", "subset", "GRR", "OUE", "LDP@2eps"]
print(f"{'eps':>5} " + " ".join(f"{n:>9}" for n in names))
for row in rows1:
    print(f"{row[0]:5.2f} " + " ".join(f"{v:9.3f}" for v in row[1:]))

figure, axes = plt.subplots(figsize=(6.5, 4))
for column, label in enumerate(names, 1):
    axes.plot(rows1[:, 0], rows1[:, column], "--" if label == "LDP@2eps" else "-", marker="o", label=label)
axes.set_yscale("log")
axes.set_xlabel("epsilon")
axes.set_ylabel("n x sum Var (unbiased estimate)")
axes.set_title("k = 6, skewed prior")
axes.legend(fontsize=8)
axes.grid(alpha=0.3)
plt.show()
print(lip.summary())"""),
    ("md", r"""At every $\varepsilon$ the LIP design needs a fraction of the users that LDP needs for the same accuracy;
against LDP at $2\varepsilon$ (the guarantee LIP implies for an adversary who does not know the prior) it is not
better. Which comparison matters depends on whether the prior is public knowledge that the threat model may
assume."""),
    ("md", r"""## 2. This year's population is not last year's prior

The design uses last year's histogram as its prior. This year the population drifted (total variation 0.2). The
GLS estimate is unbiased at *every* true distribution, so it follows the drift; its plug-in intervals cover. The
per-user Bayesian design of the LIP paper, estimated by posterior means (MMSE), shrinks toward the prior."""),
    ("code", r"""mechanism = run(prior1, ld.LIP(1.0))
truth = drifted(prior1.probabilities, 0.2)
unbiased = ld.simulate(mechanism, 200_000, rng=1, truth=truth, repetitions=20, drift=False)
bayes = run(prior1, ld.LIP(1.0), ld.BayesHistogram(), baselines=False)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ld.errors.ShrinkageWarning)
    mmse = ld.simulate(bayes, 200_000, rng=1, truth=truth, repetitions=20, drift=False, method="mmse")
print(unbiased.summary())
print()
print("MMSE estimate of the Bayesian design:", np.round(mmse.estimate, 4))
print(f"squared error: unbiased {unbiased.squared_error:.2e}, MMSE {mmse.squared_error:.2e}")

x = np.arange(prior1.k)
figure, axes = plt.subplots(figsize=(6.5, 3.5))
axes.bar(x - 0.3, prior1.probabilities, 0.2, label="design prior (last year)")
axes.bar(x - 0.1, unbiased.truth, 0.2, label="this year (truth)")
axes.bar(x + 0.1, unbiased.estimate, 0.2, yerr=1.96 * unbiased.std, label="unbiased estimate")
axes.bar(x + 0.3, mmse.estimate, 0.2, label="MMSE estimate")
axes.set_xticks(x, prior1.labels)
axes.legend(fontsize=8)
plt.show()"""),
    ("md", r"""## 3. The guarantee when the prior is off

LIP is a statement at the prior. If the true prior differs, the table is still LIP, with a larger
$\varepsilon$: `ld.verify(mech, prior=...)` computes it exactly, at one prior or as the worst case over a TV ball
(its vertices suffice, docs/math.md §2). It never exceeds the table's LDP level, at most $2\varepsilon$."""),
    ("code", r"""radii = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3]
worst = [ld.verify(mechanism, prior=ld.PriorSet.tv_ball(prior1.probabilities, r)).epsilon if r else
         mechanism.epsilons["LIP for X"] for r in radii]
for r, w in zip(radii, worst):
    print(f"TV radius {r:4.2f}: LIP at worst {w:.3f}")
print(f"LDP level of the table: {mechanism.epsilons['LDP']:.3f}")"""),
    ("md", r"""## 4. A prior set from survey counts

A survey of phones gives counts. `PriorSet.from_counts` returns a TV ball (Weissman's bound) that holds the true
prior with 95 % confidence; the bounded-prior design is LIP for *every* prior in it, at some cost in variance."""),
    ("code", r"""counts = np.random.default_rng(7).multinomial(200, prior1.probabilities)
ball = ld.PriorSet.from_counts(counts, confidence=0.95, kind="tv")
centre = ld.Prior(counts / counts.sum(), labels=prior1.labels)
bounded = run(centre, ld.LIP(1.0, prior_set=ball))
plain = run(centre, ld.LIP(1.0))
print(f"counts {counts.tolist()}, TV radius {ball.parameters['radius']:.4f}")
print(f"n x sum Var: BP-LIP {bounded.mse:.3f}, plain LIP {plain.mse:.3f}, "
      f"optimal LDP {plain.baselines['optimal LDP']:.3f}")
print("worst LIP over the ball: BP-LIP", round(ld.verify(bounded, prior=ball).epsilon, 4),
      "| plain LIP", round(ld.verify(plain, prior=ball).epsilon, 4))"""),
    ("md", r"""## 5. A latent secret

The demo's scenario: the reported value is a screen-time bucket, the secret is the owner's age band, linked by a
networkx DAG. Protecting only the secret needs far less noise, and may release the bucket itself almost in the
clear; the summary says so."""),
    ("code", r"""prior_x, secret = demo.scenario()
latent = run(prior_x, ld.LIP(1.0, secret=secret))
for_x = run(prior_x, ld.LIP(1.0))
print(f"n x sum Var: LIP for the age band {latent.mse:.4f}, LIP for X {for_x.mse:.4f}")
print("chance that a report pins down each bucket:", np.round(latent.revealed(), 3))
print(latent.summary())"""),
    ("md", r"""## 6. The Bayesian view of the LIP paper

The LIP paper scores a table by the per-user MSE of the posterior mean under the design prior
(`ld.BayesHistogram()`, docs/math.md §4-§5). That is the right figure only if the prior *is* the truth: section 2
showed what its estimates do when it is not. Under that figure, LIP against LDP:"""),
    ("code", r"""rows6 = []
for eps in [0.5, 1.0, 2.0]:
    lip_b = run(prior1, ld.LIP(eps), ld.BayesHistogram())
    rows6.append((eps, lip_b.mse, lip_b.baselines["optimal LDP"], lip_b.baselines["GRR"]))
print(f"{'eps':>5} {'LIP':>8} {'LDP':>8} {'GRR':>8}   (per-user MSE of the MMSE estimate, prior = truth)")
for eps, a, b, c in rows6:
    print(f"{eps:5.2f} {a:8.4f} {b:8.4f} {c:8.4f}")"""),
    ("md", r"""## 7. Checks

Every design verifies exactly; LIP is at least as good as LDP, which is at least as good as subset selection, GRR
and OUE at the same $\varepsilon$; the unbiased estimate covers under drift while the MMSE estimate misses;
the worst LIP over a growing ball grows and stays below the LDP level; the bounded-prior design is LIP over its
ball and costs variance."""),
    ("code", r"""for m in designed:
    assert m.verify().passed and m.verify().exact
assert (rows1[:, 1] <= rows1[:, 2] * (1 + 1e-9)).all() and (rows1[:, 2:3] <= rows1[:, 3:6] * (1 + 1e-9)).all()
assert unbiased.largest_z < 4 and unbiased.coverage.min() >= 0.8
assert mmse.squared_error > 10 * unbiased.squared_error
assert (np.diff(worst) >= -1e-12).all() and worst[-1] <= mechanism.epsilons["LDP"]
assert ld.verify(bounded, prior=ball).epsilon <= 1.0 and bounded.mse >= plain.mse
assert latent.mse <= for_x.mse
print("all checks passed")"""),
]


if __name__ == "__main__":
    write(CELLS, TARGET, execute=True)
