"""Generate notebooks/05-large-domains.ipynb, executed, with its outputs stored.

Run from anywhere: ``python notebooks/make_05_large_domains.py``; the stored outputs are those of the full run
(``LIPDESIGN_FULL=1``, the default here: k = 50 and 200, about four minutes). The tests execute the notebook with its
smaller default (k = 50 with a 30 s time limit). Cell ids are fixed; every random draw is seeded.
"""

import os
from pathlib import Path

from _notebook import write

TARGET = Path(__file__).with_name("05-large-domains.ipynb")

CELLS = [
    ("md", r"""# 50 and 200 values: a newcomer's run

App categories number about 50, languages about 100, countries about 200. This notebook designs the
$\varepsilon$-LIP mechanism for such domains as a new user would (a Zipf(1.1) prior from last year's survey,
$\varepsilon = 1$, `ld.design`'s defaults with a time limit), and sets it beside every encoding and LDP protocol the
library has, on a population that has **drifted** from the prior (total variation 0.1).

**Figures.** Every figure is $n \times$ the sum of the variances of each mechanism's own unbiased estimate of the
histogram, given the users' values (docs/math.md §8, §11), at the drifted population unless it says "at the
prior". The lower bound is the best certified one (the relaxation dual in $2k$ numbers, docs/math.md §11), valid for
every $\varepsilon$-LIP mechanism at the prior; the gap is the design's distance to it. GRR, OUE, OLH and subset
selection are $\varepsilon$-LDP, a stronger guarantee: an $\varepsilon$-LIP design is only $2\varepsilon$-LDP in the
worst case, so they appear at $2\varepsilon$ too. The last cell checks the key facts and fails if any stops
holding. The default run designs k = 50 only, so that the test suite can execute it; `LIPDESIGN_FULL=1` adds
k = 200 (the stored outputs are from that run)."""),
    ("code", r"""%matplotlib inline
import os
import time

import matplotlib.pyplot as plt
import numpy as np

import lipdesign as ld
from lipdesign.designer import subset_selection_variance
from lipdesign.mechanisms import GRR, OLH, OUE, SubsetSelection
from lipdesign.simulation import drifted

EPSILON, USERS, DRIFT = 1.0, 200_000, 0.1
FULL = os.environ.get("LIPDESIGN_FULL") == "1"
DOMAINS = ((50, 60), (200, 120)) if FULL else ((50, 30),)  # (k, time limit in seconds)


def zipf(k, s=1.1):
    weights = 1.0 / np.arange(1, k + 1) ** s
    return weights / weights.sum()


results = {}
for k, seconds in DOMAINS:
    prior = ld.Prior(zipf(k))
    lines = []
    start = time.perf_counter()
    design = ld.design(prior, ld.LIP(EPSILON), time_limit=seconds, progress=lines.append)
    elapsed = time.perf_counter() - start
    optimality = design.optimality
    print(f"k = {k}: designed in {elapsed:.0f} s, {design.provenance['rounds']} rounds, "
          f"{design.table.shape[1]} outputs; stopped: {design.provenance['stopped']}")
    print(f"  at the prior: n x sum Var {optimality['variance']:.2f}, certified bound {optimality['lower_bound']:.2f} "
          f"({optimality['bound']}), gap {optimality['gap']:.2%}")
    print(f"  last round: {[line for line in lines if line.phase == 'column generation'][-1]}")
    results[k] = {"prior": prior, "design": design, "seconds": elapsed}"""),
    ("md", r"""## Every family on the drifted population

The population is the prior moved by total variation 0.1 toward its rarest values (`simulate.drifted`). Each
mechanism's variance there is its exact closed form (`variance(frequencies)`), and one simulated collection of
200,000 users checks the designed table's estimate and its 95 % intervals."""),
    ("code", r"""def figures(k, epsilon_ldp):
    entry = results[k]
    prior, design = entry["prior"], entry["design"]
    truth = drifted(prior.probabilities, DRIFT)
    unary = ld.design(prior, ld.LIP(EPSILON), family="unary", baselines=False)
    hashing = ld.design(prior, ld.LIP(EPSILON), family="hashing", baselines=False)
    rows = {"LIP design (rr)": design, "LIP unary encoding": unary, "LIP local hashing": hashing}
    for epsilon in (EPSILON, epsilon_ldp):
        suffix = "" if epsilon == EPSILON else f" at {epsilon:g} (LDP {epsilon:g})"
        d = subset_selection_variance(prior, epsilon)[1]
        rows.update({"GRR" + suffix: GRR(epsilon, k), "OUE" + suffix: OUE(epsilon, k), "OLH" + suffix: OLH(epsilon, k),
                     f"subset selection (d={d})" + suffix: SubsetSelection(epsilon, k, d)})
    return truth, {name: float(np.sum(mechanism.variance(truth))) for name, mechanism in rows.items()}


for k in results:
    truth, table = figures(k, 2 * EPSILON)
    results[k]["truth"], results[k]["figures"] = truth, table
    print(f"k = {k}: n x sum Var at the drifted population (lower is better)")
    best_ldp = min(value for name, value in table.items() if name.startswith(("GRR", "OUE", "OLH", "subset"))
                   and "at 2" not in name)
    for name, value in sorted(table.items(), key=lambda item: item[1]):
        print(f"  {name:<42} {value:10.2f}   {value / table['LIP design (rr)']:5.2f}x the design")
    print(f"  the design is {best_ldp / table['LIP design (rr)']:.2f}x below the best eps-LDP protocol "
          "at the same eps")"""),
    ("code", r"""rng = np.random.default_rng(2026)
for k in results:
    design, truth = results[k]["design"], results[k]["truth"]
    values = rng.choice(k, size=USERS, p=truth)
    estimate = design.estimate(design.perturb(values, rng=rng))
    counts = np.bincount(values, minlength=k) / USERS
    low, high = estimate.confidence_interval(0.95)
    covered = np.mean((low <= counts) & (counts <= high))
    error = float(np.sum((np.asarray(estimate) - counts) ** 2) * USERS)
    results[k]["covered"], results[k]["error"] = covered, error
    print(f"k = {k}: one collection of {USERS} users: n x squared error {error:.1f} (expected "
          f"{results[k]['figures']['LIP design (rr)']:.1f}); 95 % intervals cover {covered:.0%} of the values; LIP "
          f"at the drifted prior {ld.verify(design, prior=truth).epsilon:.3f} (the design's eps at its own prior: "
          f"{EPSILON:g}; never above its LDP level {design.epsilons['LDP']:.3f})")"""),
    ("code", r"""fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.5), squeeze=False)
for axis, k in zip(axes[0], results):
    table = results[k]["figures"]
    names = sorted(table, key=table.get)
    colours = ["tab:green" if name.startswith("LIP") else "tab:grey" if "at 2" in name else "tab:blue"
               for name in names]
    axis.barh(names, [table[name] for name in names], color=colours)
    axis.axvline(results[k]["design"].optimality["lower_bound"], color="black", linestyle="--",
                 label="certified bound at the prior")
    axis.set_xscale("log")
    axis.set_title(f"k = {k}, eps = {EPSILON:g}: n x sum Var at the drifted population", fontsize=10)
    axis.tick_params(axis="y", labelsize=7)
    axis.legend(fontsize=8)
fig.tight_layout()"""),
    ("md", r"""## What the run shows

- At 50 values the design is certified within 1 % of optimal in seconds, at 200 values within 2 % in two minutes
  (the gaps printed above, to the relaxation dual; the per-bin bound alone would have shown gaps several times
  larger).
- On the drifted population the design keeps its advantage over every $\varepsilon$-LDP protocol at the same
  $\varepsilon$, and over the LIP encodings; the LDP protocols at $2\varepsilon$ (grey), the guarantee an
  $\varepsilon$-LIP design implies at worst, are the honest comparison when LDP is what must be promised.
- LIP rests on the prior: at the drifted population the table's LIP is the larger value printed above, never more
  than its LDP level. To hold the guarantee near the survey, design over a prior set
  (`ld.PriorSet.from_counts`, docs/math.md §11, §12)."""),
    ("code", r"""for k, entry in results.items():
    table, design = entry["figures"], entry["design"]
    assert design.verify().passed and design.optimality["gap"] < 0.05, (k, design.optimality)
    ldp_same = [value for name, value in table.items()
                if name.startswith(("GRR", "OUE", "OLH", "subset")) and "at 2" not in name]
    assert table["LIP design (rr)"] < min(ldp_same) / 2, k
    assert table["LIP design (rr)"] < min(table["LIP unary encoding"], table["LIP local hashing"]), k
    assert entry["covered"] >= 0.85, (k, entry["covered"])
    assert abs(entry["error"] / table["LIP design (rr)"] - 1) < 0.5, (k, entry["error"])
print("checks passed")"""),
]

if __name__ == "__main__":
    os.environ.setdefault("LIPDESIGN_FULL", "1")  # LIPDESIGN_FULL=0 stores the small default run instead
    write(CELLS, TARGET)
