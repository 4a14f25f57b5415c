"""Generate notebooks/01-lip-vs-ldp.ipynb (stored without outputs).

Run from anywhere: ``python notebooks/make_01_lip_vs_ldp.py``. Cell ids are fixed so that regenerating
the notebook gives a byte-identical file when the cells do not change.
"""

from pathlib import Path

from _notebook import write

TARGET = Path(__file__).with_name("01-lip-vs-ldp.ipynb")

CELLS = [
    ("md", r"""# The gain from using the prior: LIP versus LDP

Local differential privacy (LDP) bounds how much a report $Y$ can change with the input $X$, for *any*
prior: $Q[x,y] \le e^\varepsilon Q[x',y]$. Local information privacy (LIP) bounds what the report teaches an
adversary who knows the prior $P$: $e^{-\varepsilon} \le \Pr[X=x \mid Y=y] / P_x \le e^{\varepsilon}$
(docs/math.md §2). Every $\varepsilon$-LDP table is $\varepsilon$-LIP for every prior, so designing for LIP can only
help. This notebook measures *how much*.

Utility throughout is the per-user MSE of the MMSE estimate of the histogram (docs/math.md §4; lower is better).
Every table is the exact optimum of its notion, from the LP over extreme rays (docs/math.md §5). The baselines are
the optimal $\varepsilon$-LDP table and generalized randomized response (GRR), both scored with the same
MMSE estimate under the same prior. The last cell checks the key facts and fails if any stops holding."""),
    ("code", r"""%matplotlib inline
import itertools

import matplotlib.pyplot as plt
import numpy as np

import lipdesign as ld
from lipdesign import demo

TOL = 1e-9  # slack for comparing MSEs of exactly repaired tables (docs/math.md §3)
designed = []  # every table designed below; the last cell verifies each one exactly


def run(prior, notion, objective="histogram"):
    # Design, remember for the final checks, return the Mechanism.
    mechanism = ld.design(prior, notion, objective)
    designed.append(mechanism)
    return mechanism


def prior_only_mse(p):
    # Histogram MSE with no report at all: the curator guesses the prior.
    p = np.asarray(p, dtype=float)
    return 1.0 - float(p @ p)"""),
    ("md", r"""## 1. MSE against $\varepsilon$

Five values with a skewed prior. For each $\varepsilon$: the optimal LIP table, the optimal LDP table, and GRR."""),
    ("code", r"""prior1 = ld.Prior([0.45, 0.25, 0.15, 0.10, 0.05], labels=["a", "b", "c", "d", "e"])
eps_grid = np.round(np.linspace(0.25, 4.0, 16), 4)

rows1 = []
for eps in eps_grid:
    lip = run(prior1, ld.LIP(eps))
    ldp = run(prior1, ld.LDP(eps))
    assert abs(ldp.mse - lip.baselines["optimal LDP"]) < 1e-12
    rows1.append((eps, lip.mse, ldp.mse, lip.baselines["GRR"]))
rows1 = np.array(rows1)

print(f"prior {prior1.probabilities.tolist()}, prior-only MSE {prior_only_mse(prior1.probabilities):.4f}")
print(f"{'eps':>5} {'LIP':>8} {'LDP':>8} {'GRR':>8} {'LDP-LIP':>8} {'LDP/LIP':>8}")
for eps, lip_mse, ldp_mse, grr_mse in rows1:
    print(f"{eps:5.2f} {lip_mse:8.4f} {ldp_mse:8.4f} {grr_mse:8.4f} {ldp_mse - lip_mse:8.4f} {ldp_mse / lip_mse:8.2f}")
peak = rows1[np.argmax(rows1[:, 2] - rows1[:, 1]), 0]
print(f"largest absolute gap at eps = {peak:g}")

figure, axes = plt.subplots(figsize=(6.5, 4))
for column, label in enumerate(("optimal LIP", "optimal LDP", "GRR"), 1):
    axes.plot(rows1[:, 0], rows1[:, column], marker="o", label=label)
axes.axhline(prior_only_mse(prior1.probabilities), color="grey", linestyle=":", label="no report (prior only)")
axes.set_xlabel("epsilon")
axes.set_ylabel("histogram MSE per user")
axes.set_title("k = 5, skewed prior")
axes.legend()
axes.grid(alpha=0.3)
plt.show()"""),
    ("md", r"""LIP $\le$ LDP $\le$ GRR at every $\varepsilon$: the LDP-feasible tables are a subset of the LIP-feasible
ones (docs/math.md §2), and GRR is one particular LDP table (here it coincides with the optimal LDP table from
$\varepsilon \approx 3$ on). At small $\varepsilon$ all three stay close to the prior-only MSE. The absolute gap peaks at a
moderate $\varepsilon$ and then shrinks, since every MSE goes to 0; the ratio LDP/LIP keeps growing, because
the LIP MSE decays faster."""),
    ("md", r"""## 2. MSE against the skew of the prior ($\varepsilon = 1$)

Four values with $P_x \propto r^x$: $r = 1$ is uniform, small $r$ puts almost all the mass on the first value.
The skew is measured by $P_{\max}/P_{\min} = r^{-3}$."""),
    ("code", r"""ratios = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05]
rows2 = []
for r in ratios:
    p = r ** np.arange(4.0)
    p /= p.sum()
    lip = run(ld.Prior(p), ld.LIP(1.0))
    rows2.append((p.max() / p.min(), prior_only_mse(p), lip.mse, lip.baselines["optimal LDP"], lip.baselines["GRR"]))
rows2 = np.array(rows2)

print(f"{'r':>5} {'Pmax/Pmin':>9} {'prior':>7} {'LIP':>7} {'LDP':>7} {'GRR':>7} {'LDP/LIP':>8}")
for r, (skew, none, lip_mse, ldp_mse, grr_mse) in zip(ratios, rows2):
    print(f"{r:5.2f} {skew:9.1f} {none:7.4f} {lip_mse:7.4f} {ldp_mse:7.4f} {grr_mse:7.4f} {ldp_mse / lip_mse:8.3f}")

figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
for column, label in ((2, "optimal LIP"), (3, "optimal LDP"), (4, "GRR"), (1, "no report (prior only)")):
    left.plot(rows2[:, 0], rows2[:, column], marker="o", label=label, linestyle=":" if column == 1 else "-")
right.plot(rows2[:, 0], rows2[:, 3] / rows2[:, 2], marker="o", label="optimal LDP / optimal LIP")
right.plot(rows2[:, 0], rows2[:, 4] / rows2[:, 2], marker="s", label="GRR / optimal LIP")
right.axhline(1.0, color="grey", linewidth=0.8)
for axes, ylabel in ((left, "histogram MSE per user"), (right, "MSE ratio (gain of LIP)")):
    axes.set_xscale("log")
    axes.set_xlabel("prior skew  P_max / P_min")
    axes.set_ylabel(ylabel)
    axes.legend()
    axes.grid(alpha=0.3)
figure.suptitle("k = 4, P_x proportional to r^x, epsilon = 1")
figure.tight_layout()
plt.show()"""),
    ("md", r"""At $\varepsilon = 1$ the gain is largest near the uniform prior and fades as the prior becomes very
skewed (not quite monotonically). The LIP constraint compares each $Q[x,y]$ with the prior average
$P \cdot q_y$. Under a uniform prior that average leaves room for ratios near $e^{2\varepsilon}$ between
inputs (docs/math.md §2). When one value dominates, the average is essentially that value's entry, so LIP
behaves much like LDP. In the limit the prior alone says nearly everything, and both MSEs approach the
prior-only MSE."""),
    ("md", r"""## 3. A latent secret

The demo scenario (`lipdesign.demo`): a phone reports its daily screen-time bucket $X$ (4 buckets), and
the secret is the owner's age band $G$ (3 values), correlated with $X$ via $T[g,x] = \Pr[X=x \mid G=g]$.
LIP for $G$ only asks that the report reveal little about the age band. That is weaker than LIP for
$X$ (docs/math.md §2), so the MSE drops further."""),
    ("code", r"""prior3, secret = demo.scenario()
P, T = prior3.probabilities, secret.conditional
print("buckets", prior3.labels, "prior", np.round(P, 4).tolist())
print("age bands", secret.secret_labels)

# No-noise release (docs/math.md §2): Y = X is eps-LIP for G iff max_g T[g,x] <= e^eps P_x and
# P_x <= e^eps min_g T[g,x].
def no_noise_threshold(P, T):
    return float(max(np.log(T.max(axis=0) / P).max(), np.log(P / T.min(axis=0)).max()))


eps_star = no_noise_threshold(P, T)
print(f"Y = X itself is eps-LIP for the age band once eps >= {eps_star:.4f}")

eps_grid3 = np.round(np.r_[np.linspace(0.1, 2.2, 8), eps_star + 1e-3, 2.75, 3.0], 4)
rows3 = []
for eps in eps_grid3:
    latent = run(prior3, ld.LIP(eps, secret=secret))
    direct = run(prior3, ld.LIP(eps))
    rows3.append((eps, latent.mse, direct.mse, latent.baselines["optimal LDP"], latent.baselines["GRR"]))
rows3 = np.array(rows3)
print(f"{'eps':>6} {'LIP(age)':>9} {'LIP(X)':>8} {'LDP':>8} {'GRR':>8}")
for eps, latent_mse, direct_mse, ldp_mse, grr_mse in rows3:
    print(f"{eps:6.3f} {latent_mse:9.5f} {direct_mse:8.5f} {ldp_mse:8.5f} {grr_mse:8.5f}")

figure, axes = plt.subplots(figsize=(9, 4))
for column, label in enumerate(("LIP, secret = age band", "LIP, secret = X", "optimal LDP", "GRR"), 1):
    axes.plot(rows3[:, 0], rows3[:, column], marker="o", label=label)
axes.axvline(eps_star, color="grey", linestyle="--", label="no-noise threshold (age band)")
axes.set_xlabel("epsilon")
axes.set_ylabel("histogram MSE per user")
axes.set_title("Screen-time buckets, secret = age band")
axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))  # outside: the curves fill the axes
axes.grid(alpha=0.3)
figure.tight_layout()
plt.show()"""),
    ("md", r"""Above the threshold the buckets themselves leak less than $\varepsilon$ about the age band, so the
optimal table for the age band reports $X$ exactly: no noise, MSE 0. LIP for $X$
never reaches 0, because with $G = X$ the no-noise condition never holds. The weaker the correlation,
the lower the threshold. Below, each row $T[g]$ is mixed toward the marginal $P$ (strength $\lambda$;
$\lambda = 0$ means $G$ is independent of $X$), which keeps the prior of $X$ unchanged."""),
    ("code", r"""print(f"{'lambda':>6} {'threshold':>9} {'MSE at eps=1 (age band)':>24}")
weak = {}
for lam in (1.0, 0.5, 0.25, 0.1):
    mixed = ld.SecretModel.from_conditional((1 - lam) * P[None, :] + lam * T, secret.secret_prior,
                                            secret.secret_labels)
    mechanism = run(prior3, ld.LIP(1.0, secret=mixed))
    weak[lam] = (no_noise_threshold(P, mixed.conditional), mechanism.mse)
    print(f"{lam:6.2f} {weak[lam][0]:9.4f} {mechanism.mse:24.6f}")"""),
    ("md", r"""## 4. Uncertainty about the prior

The prior is usually estimated, not known. Bounded-prior LIP enforces the LIP constraints for every
prior in a set (docs/math.md §2). Here the set is a total-variation ball of radius $\rho$ around the prior of
section 1, at $\varepsilon = 1$. A larger ball means a stronger guarantee and a higher MSE. When the ball
covers the whole simplex, the notion is worst-case LIP, which for $G = X$ is exactly LDP."""),
    ("code", r"""radii = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0]
fixed = run(prior1, ld.LIP(1.0))
ldp_mse1 = fixed.baselines["optimal LDP"]
bp_mse = []
print(f"{'radius':>6} {'vertices':>8} {'MSE':>8}   share of the LIP gain kept")
for radius in radii:
    prior_set = ld.PriorSet.tv_ball(prior1.probabilities, radius)
    mechanism = run(prior1, ld.LIP(1.0, prior_set=prior_set))
    bp_mse.append(mechanism.mse)
    kept = (ldp_mse1 - mechanism.mse) / (ldp_mse1 - fixed.mse)
    print(f"{radius:6.2f} {len(prior_set.vertices):8d} {mechanism.mse:8.4f}   {kept:6.1%}")

worst_case = run(prior1, ld.WorstCaseLIP(1.0))
ldp1 = run(prior1, ld.LDP(1.0))
print(f"\nfixed-prior LIP {fixed.mse:.6f}")
print(f"WorstCaseLIP    {worst_case.mse:.6f}")
print(f"optimal LDP     {ldp1.mse:.6f}")

figure, axes = plt.subplots(figsize=(6.5, 4))
axes.plot(radii, bp_mse, marker="o", label="bounded-prior LIP (TV ball)")
axes.axhline(fixed.mse, color="C2", linestyle="--", label="LIP, prior known exactly")
axes.axhline(ldp_mse1, color="C1", linestyle="--", label="optimal LDP = worst-case LIP")
axes.set_xlabel("TV radius of the set of plausible priors")
axes.set_ylabel("histogram MSE per user")
axes.set_title("k = 5, epsilon = 1")
axes.legend()
axes.grid(alpha=0.3)
plt.show()"""),
    ("md", r"""Prior uncertainty eats the gain gradually. A small radius keeps most of it, and well before the ball
reaches the whole simplex the design is as constrained as LDP."""),
    ("md", r"""## 5. Checks

This cell fails if any of the facts above stops holding."""),
    ("code", r"""# Reference values of docs/math.md §5.
reference = run(ld.Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"]), ld.LIP(2.0))
assert round(reference.mse, 5) == 0.15646, reference.mse
assert round(reference.baselines["optimal LDP"], 5) == 0.34207, reference.baselines

# Every designed table passes EXACT verification of its claim (docs/math.md §3).
failed = [m.summary() for m in designed if not ld.verify(m, exact=True).passed]
assert not failed, failed

# LIP (any variant) <= optimal LDP <= GRR.
for m in designed:
    if m.baselines:
        assert m.mse <= m.baselines["optimal LDP"] + TOL, m.summary()
        assert m.baselines["optimal LDP"] <= m.baselines["GRR"] + TOL, m.summary()

# Section 1: the gain is non-negative and GRR is never better than the optimal LDP table.
assert (rows1[:, 1] <= rows1[:, 2] + TOL).all() and (rows1[:, 2] <= rows1[:, 3] + TOL).all()

# Section 3: a latent secret only helps; no noise above the threshold, noise below it.
assert (rows3[:, 1] <= rows3[:, 2] + TOL).all()
above = rows3[:, 0] >= eps_star
assert (rows3[above, 1] < 1e-9).all() and (rows3[~above, 1] > 1e-6).all() and (rows3[:, 2] > 1e-3).all()
assert all((threshold <= 1.0) == (mse < 1e-9) for threshold, mse in weak.values())

# Section 4: radius 0 is fixed-prior LIP; MSE grows with the radius; worst-case LIP equals LDP.
assert abs(bp_mse[0] - fixed.mse) < TOL
assert all(a <= b + TOL for a, b in itertools.pairwise(bp_mse))
assert fixed.mse - TOL <= min(bp_mse) and max(bp_mse) <= ldp_mse1 + TOL
assert abs(bp_mse[-1] - ldp_mse1) < TOL and abs(worst_case.mse - ldp1.mse) < TOL

print(f"all checks passed; {len(designed)} tables verified exactly")
print(f"docs/math.md §5 reference: LIP {reference.mse:.5f}, "
      f"optimal LDP {reference.baselines['optimal LDP']:.5f}")"""),
]


if __name__ == "__main__":
    write(CELLS, TARGET)
