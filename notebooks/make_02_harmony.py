"""Generate notebooks/02-harmony.ipynb, executed, with its outputs stored.

Run from anywhere: ``python notebooks/make_02_harmony.py``. Cell ids are fixed; every random draw is seeded.
"""

from pathlib import Path

from _notebook import write

TARGET = Path(__file__).with_name("02-harmony.ipynb")

CELLS = [
    ("md", r"""# Harmony mechanisms: variance, frequency error and learning accuracy

`lipdesign.mechanisms` implements the mechanisms of the Harmony system (docs/math.md §9) and the LDP
frequency oracles (docs/math.md §8), and `lipdesign.learn` Harmony's learners. Each mechanism has a
closed-form variance; this notebook measures the mechanisms by simulation and puts the measurements next to
those closed forms, which are recomputed here from the formulas of docs/math.md §8–§9 rather than taken from
the library.

1. Mean estimation on $[-1, 1]^d$: empirical variance of Laplace, Duchi, HarmonyNumeric, Piecewise (PM)
   and Hybrid (HM) against the closed forms, over $\varepsilon$ and $d$; then the comparisons the Harmony
   paper makes (one bit per user against Laplace as $d$ grows; PM/HM against Duchi at $d = 1$). lipdesign's
   Laplace is the finite-output version of docs/math.md §9.9, whose variance is below the textbook
   $8 d^2/\varepsilon^2$; the textbook line is drawn for reference.
2. Frequency estimation: mean squared error of GRR, OUE, OLH, Hadamard response and HarmonyCategorical.
3. Learning: the three LDP learners against non-private models, as $\varepsilon$ and $n$ vary.

Every random draw has a fixed seed. The last cell checks the key facts and fails if any stops holding; its
tolerances are multiples of the standard errors printed along the way, with the multiple $z$ chosen so that
each group of checks has a false-alarm probability of at most $10^{-5}$ (two-sided normal quantile,
Bonferroni over the group)."""),
    ("code", r"""%matplotlib inline
import functools
import math
from statistics import NormalDist

import matplotlib.pyplot as plt
import numpy as np

from lipdesign import learn, mechanisms

ALPHA = 1e-5  # false-alarm probability of each group of checks in the last cell (a CI check must not flake)


def z_bound(tests, alpha=ALPHA):
    # Two-sided normal quantile for `tests` comparisons sharing the false-alarm probability alpha (Bonferroni).
    return NormalDist().inv_cdf(1.0 - alpha / (2.0 * tests))


def c_of(eps):
    # c = (e^eps + 1)/(e^eps - 1): a one-bit report times c is unbiased (docs/math.md §9).
    return (math.exp(eps) + 1.0) / (math.exp(eps) - 1.0)


def bisect(function, low, high, steps=200):
    # The root of a function that changes sign once on [low, high].
    for _ in range(steps):
        middle = (low + high) / 2.0
        if (function(middle) > 0) == (function(low) > 0):
            low = middle
        else:
            high = middle
    return (low + high) / 2.0"""),
    ("md", r"""## 1. Mean estimation: empirical variance against the closed form

Each user holds $t_i \in [-1,1]^d$ and reports once; every mechanism's estimate of the mean is the average
of $n$ independent per-user terms (the reports themselves, or for HarmonyNumeric $d\,c\,b$ in the reported
coordinate, with $b = \pm 1$ its bit), each unbiased for $t_i$. So the variance of the estimate is
$\frac{1}{n^2}\sum_i \mathrm{Var}_i$, and $(r_{ij} - t_{ij})^2$ is an unbiased measurement of user $i$'s
$\mathrm{Var}_{ij}$. One run with $N = 50\,000$ users per cell therefore gives the per-user variance
averaged over users and coordinates, with a standard error from the spread of the per-user squares
(independent across users, so the CLT applies even though coordinates within a user are correlated). This
is far more precise than repeating whole estimates: one run gives 50 000 measurements instead of one.

Closed forms per user and coordinate (docs/math.md §9), with $c = \frac{e^\varepsilon+1}{e^\varepsilon-1}$ and
$s = e^{\varepsilon/2}$: Duchi $B^2 - t^2$; HarmonyNumeric $d c^2 - t^2$;
PM at $d = 1$: $\frac{t^2}{s-1} + \frac{s+3}{3(s-1)^2}$; HM: PM with probability $1 - e^{-\varepsilon/2}$,
else the one-bit mechanism (variance $c^2 - t^2$), when $\varepsilon > \varepsilon^* \approx 0.61$. For
$d > 1$, PM and HM perturb $k = \max(1, \min(d, \lfloor \varepsilon/2.5 \rfloor))$ sampled attributes with
$\varepsilon/k$ each, scaled by $d/k$, giving $\frac{d}{k}(\mathrm{Var}_1 + t^2) - t^2$.
The population: $t$ drawn once from a normal with mean 0.3 and sd 0.4, clipped to $[-1, 1]$.

**Laplace.** The textbook mechanism adds continuous Laplace noise of scale $2d/\varepsilon$ to every
coordinate, variance $2(2d/\varepsilon)^2 = 8d^2/\varepsilon^2$. It is not deployable: the set of doubles
its floating-point sampler can output depends on the input, so a single report can rule inputs out
(Mironov, CCS 2012). lipdesign's `Laplace` is the finite-output version (docs/math.md §9.9): with
$\varepsilon_c = \varepsilon/d$ per coordinate, $t$ is rounded at random to the grid $g_i = -1 + 2i/M$
($M = 64$ by default, the mechanism's `grid`; $E[g] = t$), moved by $Z$ grid steps with
$\Pr[Z = z] = \frac{1-a}{1+a} a^{|z|}$ ($a$ = the mechanism's `decay` $\approx e^{-\varepsilon_c/M}$), and
clamped to the ends, where the report is the mean of the unclamped position beyond that end. The notebook
computes $m_i = E[\mathrm{report}^2 \mid g_i]$ by summing the unclamped law over a window of
$\pm(M + 40/\ln(1/a))$ steps (it leaves out less than $e^{-40}$ of either clamped tail), the clamped values
included as tail means of that sum, and mixes over the rounding: $\mathrm{Var} = (1-f)\,m_i + f\,m_{i+1} - t^2$ for
$t = (1-f)\,g_i + f\,g_{i+1}$. This is below the textbook $8d^2/\varepsilon^2$: replacing each clamped tail
by its mean removes the spread within the tail (law of total variance), which more than pays for the
rounding's at most $1/M^2$ (in every case computed here). Its worst case over $t$ is 5.55 instead of 8 at
$\varepsilon = 1$, $d = 1$, and it approaches half the textbook value as $d/\varepsilon$ grows (most reports
are then clamped; 0.504 of it at $\varepsilon = 1$, $d = 64$). It also depends on $t$, and it is not affine
in $t^2$."""),
    ("code", r"""EPS_STAR = bisect(lambda e: (math.exp(e / 2) + 3) / (3 * (math.exp(e / 2) - 1) ** 2) - c_of(e) ** 2,
                  0.1, 2.0)


def pm_variance(t, eps):
    # Piecewise mechanism, one attribute (docs/math.md §9).
    s = math.exp(eps / 2)
    return t**2 / (s - 1) + (s + 3) / (3 * (s - 1) ** 2)


def rounding(t, grid):
    # The randomized rounding of t to g_i = -1 + 2i/grid: the index i of the grid point below t and the
    # probability f of rounding up instead (E[g] = t).
    position = (t + 1) * grid / 2
    low = np.minimum(np.floor(position), grid - 1)
    return low.astype(int), position - low


def rounding_variance(t, grid):
    # Var of the randomized rounding (Piecewise and Hybrid): (g_high - t)(t - g_low).
    fraction = rounding(t, grid)[1]
    return fraction * (1 - fraction) * (2 / grid) ** 2


def textbook_laplace(eps, d):
    # Continuous Lap(2d/eps) noise, the textbook baseline (not deployable: docs/math.md §9.9).
    return 2 * (2 * d / eps) ** 2


@functools.cache
def laplace_moments(eps, d):
    # lipdesign's Laplace(eps, d) given the grid input g_i, i = 0..M (docs/math.md §9.9), by summing the
    # unclamped two-sided geometric law of the steps Z over a window of +-reach steps: total probability, mean
    # and second moment of the report, and the two clamped reports, computed as the unclamped position's mean
    # beyond each end. Vectorised over i with cumulative sums over Z: the report is clamped low when Z <= -i,
    # high when Z >= M - i.
    mechanism = mechanisms.Laplace(eps, d)
    a, grid = mechanism.decay, mechanism.grid
    step = 2 / grid
    reach = grid + math.ceil(40 / -math.log(a))  # leaves out at most a^(reach - M) < e^-40 of either tail
    steps = np.arange(-reach, reach + 1)
    law = (1 - a) / (1 + a) * a ** np.abs(steps)
    inputs = np.arange(grid + 1)

    def below(x):  # sum of x over Z <= -i, for every i
        return np.cumsum(x)[reach - inputs]

    def above(x):  # sum of x over Z >= M - i
        return np.cumsum(x[::-1])[::-1][reach + grid - inputs]

    low_mass, high_mass = below(law), above(law)
    low = -1 + step * (inputs + below(law * steps) / low_mass)
    high = -1 + step * (inputs + above(law * steps) / high_mass)
    inner = law[reach + inputs[None, 1:-1] - inputs[:, None]]  # Pr[report g_j | g_i], 0 < j < M
    points = -1 + step * inputs[1:-1]
    return {
        "total": low_mass + high_mass + inner.sum(axis=1),
        "mean": low_mass * low + high_mass * high + inner @ points,
        "second": low_mass * low**2 + high_mass * high**2 + inner @ points**2,
        "low": low, "high": high, "outputs": mechanism.outputs,
    }


def duchi_bound(eps, d):
    # B of Duchi et al. with the even-d fix (docs/math.md §9); Python integers keep 2^d and the binomials
    # exact.
    e = math.exp(eps)
    plus = 2 ** (d - 1) - (math.comb(d, d // 2) // 2 if d % 2 == 0 else 0)
    return (2**d + plus * (e - 1)) / (math.comb(d - 1, (d - 1) // 2) * (e - 1))


def closed_form(name, t, eps, d):
    # Variance of one user's report in one coordinate whose true value is t (docs/math.md §9).
    t = np.asarray(t, dtype=float)
    if name == "Laplace":  # E[report^2 | g] mixed over the rounding to the two grid points around t
        second = laplace_moments(eps, d)["second"]
        low, fraction = rounding(t, second.size - 1)
        return (1 - fraction) * second[low] + fraction * second[low + 1] - t**2
    if name == "Duchi":
        return duchi_bound(eps, d) ** 2 - t**2
    if name == "HarmonyNumeric":
        return d * c_of(eps) ** 2 - t**2
    k = max(1, min(d, math.floor(eps / 2.5)))  # attributes perturbed per user (Wang et al.)
    eps_k = eps / k
    # Piecewise part on the grid -1 + 2i/M (M = 256 raised until no two bin edges nearly coincide; the mechanism
    # says which M it uses): t is rounded at random to a neighbour g (E[g] = t), which adds
    # Var(g) = (g_high - t)(t - g_low) to E[Var_PM(g)] = Var_PM(t) + Var(g) / (s - 1).
    s = math.exp(eps_k / 2)
    grid = mechanisms.Piecewise(eps, d).piecewise.grid
    grid_pm = pm_variance(t, eps_k) + rounding_variance(t, grid) * s / (s - 1)
    if name == "Piecewise":
        one = grid_pm
    else:  # Hybrid
        alpha = 1 - math.exp(-eps_k / 2) if eps_k > EPS_STAR else 0.0
        one = alpha * grid_pm + (1 - alpha) * (c_of(eps_k) ** 2 - t**2)
    return (d / k) * (one + t**2) - t**2


def per_user_terms(mechanism, reports, eps, d):
    # Each user's term of the estimate (the estimate is their mean; checked against estimate() below).
    if isinstance(mechanism, mechanisms.HarmonyNumeric):
        terms = np.zeros((reports.size, d))
        terms[np.arange(reports.size), reports["coordinate"]] = d * c_of(eps) * reports["sign"]
        return terms
    return np.asarray(reports, dtype=float).reshape(-1, d)


def measure(name, t, eps, seed):
    # Per-user squared noise of one run: (mean, standard error) of the users' mean over coordinates of
    # (r_ij - t_ij)^2, the closed form averaged the same way, and the per-coordinate bias z-scores.
    n, d = t.shape
    mechanism = getattr(mechanisms, name)(eps, d)
    reports = mechanism.perturb(t, rng=np.random.default_rng(seed))
    terms = per_user_terms(mechanism, reports, eps, d)
    assert np.allclose(terms.mean(axis=0), mechanism.estimate(reports), rtol=1e-9, atol=1e-12)
    noise = terms - t
    squares = (noise**2).mean(axis=1)
    return {
        "empirical": squares.mean(),
        "se": squares.std(ddof=1) / math.sqrt(n),
        "closed": closed_form(name, t, eps, d).mean(),
        "library": mechanism.variance(t).mean() * n,  # n * Var(estimate), averaged over coordinates
        "bias_z": np.abs(noise.mean(axis=0)) / (noise.std(axis=0, ddof=1) / math.sqrt(n)),
    }


NUMERIC = ["Laplace", "Duchi", "HarmonyNumeric", "Piecewise", "Hybrid"]
EPS1 = [0.5, 1.0, 2.0, 4.0]
DIMS = [1, 4, 16]
N1 = 50_000
population = {d: np.clip(np.random.default_rng(d).normal(0.3, 0.4, (N1, d)), -1.0, 1.0) for d in DIMS}
grid = {(name, eps, d): measure(name, population[d], eps, seed=[1, a, b, d])
        for a, name in enumerate(NUMERIC) for b, eps in enumerate(EPS1) for d in DIMS}

print(f"eps* of the Hybrid mechanism: {EPS_STAR:.6f}")
print("per-user variance n Var (closed form, mean over users and coordinates) and empirical / closed +- 1 se")
print(f"{'mechanism':>15} {'d':>3} " + " ".join(f"{'eps = ' + format(eps, 'g'):>22}" for eps in EPS1))
for name in NUMERIC:
    for d in DIMS:
        cells = [grid[name, eps, d] for eps in EPS1]
        print(f"{name:>15} {d:3d} " + " ".join(
            f"{g['closed']:8.4g} {g['empirical'] / g['closed']:6.4f}+-{g['se'] / g['closed']:.4f}" for g in cells))
for d in DIMS:
    print(f"{'textbook Laplace':>15} {d:3d} "
          + " ".join(f"{textbook_laplace(eps, d):8.4g}{'':14}" for eps in EPS1)
          + "  (continuous, not deployable; for comparison)")

figure, axes = plt.subplots(1, len(DIMS), figsize=(13, 4), sharey=True)
for panel, d in zip(axes, DIMS):
    for number, name in enumerate(NUMERIC):
        color = f"C{number}"
        panel.plot(EPS1, [grid[name, eps, d]["closed"] for eps in EPS1], color=color, label=f"{name} closed form")
        panel.plot(EPS1, [grid[name, eps, d]["empirical"] for eps in EPS1], "o", color=color, fillstyle="none",
                   markersize=8)
    panel.plot(EPS1, [textbook_laplace(eps, d) for eps in EPS1], "--", color="C0",
               label="textbook Laplace (continuous, not deployable)")
    panel.set_yscale("log")
    panel.set_xlabel("epsilon")
    panel.set_title(f"d = {d}")
    panel.grid(alpha=0.3, which="both")
axes[0].set_ylabel("per-user variance  n Var(estimate)")
axes[0].legend(fontsize=8, title="lines: closed form, circles: empirical", title_fontsize=8)
figure.tight_layout()
plt.show()"""),
    ("md", r"""Lines are the closed forms, circles the measurements (they sit on the lines; the table gives the ratios,
all within a few standard errors of 1). At $d = 1$ Duchi, HarmonyNumeric and Hybrid below $\varepsilon^*$
are the same one-bit mechanism. Laplace's variance grows like $d^2$, the others like $d$. The dashed blue
line is the textbook continuous Laplace, $8d^2/\varepsilon^2$: lipdesign's finite Laplace is below it in
every panel, at 0.89 ($\varepsilon = 4$, $d = 1$) down to 0.51 ($\varepsilon = 0.5$, $d = 16$) times the
textbook variance for this population. The y axis is the variance of one user's report: the estimate's
variance is this divided by $n$."""),
    ("md", r"""### The Harmony paper's comparisons (worst case over the inputs)

Each closed form except Laplace's is affine in $t^2$, so its worst case over $t \in [-1, 1]$ is at $t = 0$
or $|t| = 1$. Laplace's is, on each grid cell $[g_i, g_{i+1}]$ (width $h = 2/M$), the concave quadratic
$m_i + (m_{i+1} - m_i)(t - g_i)/h - t^2$, largest at $t = (m_{i+1} - m_i)/(2h)$ clipped to the cell; its
worst case is the largest of these $M$ cell maxima (the last cell checks it against a fine $t$ grid). It
lies in the two cells next to $t = 0$ (mirror images, $\pm t$), at $|t|$ between 0.007 and 0.016 in every
case computed here: inside the cell, because the rounding's variance vanishes at the grid points.

Left and middle: worst-case per-user variance against $d$ at $\varepsilon = 1$ and $4$ (closed forms, with
the textbook Laplace dashed). HarmonyNumeric reports one bit for one coordinate ($d c^2$), Laplace splits
the budget over $d$ coordinates. Against the textbook $8 d^2/\varepsilon^2$ one bit would win once
$d > c^2 \varepsilon^2 / 8$; lipdesign's Laplace is better than that, so its crossover, computed from the
closed forms and printed below, comes at the same $d$ or later. Duchi's $B^2$ is
also linear in $d$ but with a larger constant: for odd $d$, $B = c\,2^{d-1}/\binom{d-1}{(d-1)/2}$, so
$B^2/(d c^2) \to \pi/2$ (Wallis). Right: $d = 1$ against $\varepsilon$, closed forms with measured worst
cases ($N = 50\,000$ users all with the worst input of the closed form: $t = 0$ or $t = 1$, or Laplace's
vertex near 0).
PM's worst case $\frac{4 e^{\varepsilon/2}}{3(e^{\varepsilon/2}-1)^2}$ drops below Duchi's $c^2$ above a
threshold $\varepsilon$; HM is below both above $\varepsilon^*$."""),
    ("code", r"""def laplace_worst_input(eps, d):
    # Laplace's worst t: on the cell [g_i, g_i+1] its variance m_i + (m_i+1 - m_i)(t - g_i)/h - t^2 is
    # concave, largest at t = (m_i+1 - m_i)/(2h) clipped to the cell; the largest of the M cell maxima (the
    # variance is symmetric in t, so the worst t and -t tie and rounding picks either).
    second = laplace_moments(eps, d)["second"]
    step = 2 / (second.size - 1)
    points = -1 + step * np.arange(second.size)
    vertices = np.clip((second[1:] - second[:-1]) / (2 * step), points[:-1], points[1:])
    return float(vertices[np.argmax(closed_form("Laplace", vertices, eps, d))])


def worst_input(name, eps, d=1):
    # The t in [-1, 1] where the per-coordinate variance is largest: t = 0 or 1 for the forms affine in t^2.
    if name == "Laplace":
        return laplace_worst_input(eps, d)
    return 0.0 if closed_form(name, 0.0, eps, d) >= closed_form(name, 1.0, eps, d) else 1.0


def worst_case(name, eps, d):
    return float(closed_form(name, worst_input(name, eps, d), eps, d))


def crossover(laplace, eps):
    # The smallest d in dims from which HarmonyNumeric's worst case d c^2 is below laplace(eps, d).
    return next(int(d) for d in dims if worst_case("HarmonyNumeric", eps, d) < laplace(eps, d))


dims = np.arange(1, 65)
EPS_X = [0.5, 1.0, 2.0, 4.0, 8.0]
CROSSOVER = {eps: crossover(functools.partial(worst_case, "Laplace"), eps) for eps in EPS_X}
TEXTBOOK_CROSSOVER = {eps: crossover(textbook_laplace, eps) for eps in EPS_X}
print("HarmonyNumeric's worst case is below Laplace's from d = (closed forms, d in 1..64)")
print(f"{'eps':>4} {'lipdesign Laplace':>18} {'textbook Laplace':>17} {'c^2 eps^2 / 8':>14}"
      f" {'worst case at d = 1: Laplace, textbook, HarmonyNumeric':>56}")
for eps in EPS_X:
    print(f"{eps:4g} {CROSSOVER[eps]:18d} {TEXTBOOK_CROSSOVER[eps]:17d} {c_of(eps) ** 2 * eps**2 / 8:14.3f}"
          f" {worst_case('Laplace', eps, 1):26.4f} {textbook_laplace(eps, 1):10.4f}"
          f" {worst_case('HarmonyNumeric', eps, 1):18.4f}")
print("Duchi / HarmonyNumeric worst case at eps = 1:",
      ", ".join(f"d={d}: {worst_case('Duchi', 1.0, d) / worst_case('HarmonyNumeric', 1.0, d):.4f}"
                for d in (1, 2, 3, 4, 16, 63, 64)), f"(pi/2 = {math.pi / 2:.4f})")

EPS_PM = bisect(lambda e: worst_case("Piecewise", e, 1) - worst_case("Duchi", e, 1), 0.2, 6.0)
print(f"PM's worst case is below Duchi's for eps > {EPS_PM:.4f} (d = 1)")

EPS_W = [0.5, 1.0, 2.0, 3.0, 4.0, 6.0]
N_W = 50_000
worst = {}
for a, name in enumerate(["Laplace", "Duchi", "Piecewise", "Hybrid"]):
    for b, eps in enumerate(EPS_W):
        t = np.full((N_W, 1), worst_input(name, eps))
        worst[name, eps] = measure(name, t, eps, seed=[2, a, b])
print("measured at t =", ", ".join(f"{name} {sorted({round(worst_input(name, eps), 4) for eps in EPS_W})}"
                                  for name in ("Laplace", "Duchi", "Piecewise", "Hybrid")),
      "(closed form, empirical +- se)")
print(f"{'eps':>4} " + " ".join(f"{name:>24}" for name in ("Laplace", "Duchi", "Piecewise", "Hybrid")))
for eps in EPS_W:
    print(f"{eps:4g} " + " ".join(f"{worst[name, eps]['closed']:10.4g} {worst[name, eps]['empirical']:7.4g}"
                                  f"+-{worst[name, eps]['se']:5.3f}" for name in ("Laplace", "Duchi", "Piecewise",
                                                                                   "Hybrid")))

figure, axes = plt.subplots(1, 3, figsize=(14, 4))
for panel, eps in zip(axes[:2], (1.0, 4.0)):
    for number, name in enumerate(NUMERIC):
        panel.plot(dims, [worst_case(name, eps, int(d)) for d in dims], color=f"C{number}", label=name)
    panel.plot(dims, textbook_laplace(eps, dims), "--", color="C0",
               label="textbook Laplace (continuous, not deployable)")
    panel.set_xscale("log")
    panel.set_yscale("log")
    panel.set_xlabel("dimension d")
    panel.set_title(f"worst case, epsilon = {eps:g}")
    panel.grid(alpha=0.3, which="both")
axes[0].set_ylabel("worst-case per-user variance")
axes[0].legend(fontsize=8)
eps_line = np.linspace(0.3, 6.0, 120)
for number, name in enumerate(NUMERIC):
    if name == "HarmonyNumeric":  # identical to Duchi at d = 1
        continue
    axes[2].plot(eps_line, [worst_case(name, e, 1) for e in eps_line], color=f"C{number}", label=name)
    if (name, EPS_W[0]) in worst:
        axes[2].plot(EPS_W, [worst[name, e]["empirical"] for e in EPS_W], "o", color=f"C{number}",
                     fillstyle="none", markersize=8)
axes[2].plot(eps_line, textbook_laplace(eps_line, 1), "--", color="C0",
             label="textbook Laplace (continuous, not deployable)")
axes[2].axvline(EPS_PM, color="grey", linestyle="--", label=f"PM = Duchi at eps = {EPS_PM:.2f}")
axes[2].axvline(EPS_STAR, color="grey", linestyle=":", label=f"eps* = {EPS_STAR:.2f}")
axes[2].set_yscale("log")
axes[2].set_xlabel("epsilon")
axes[2].set_title("worst case, d = 1 (circles: measured)")
axes[2].legend(fontsize=8)
axes[2].grid(alpha=0.3, which="both")
figure.tight_layout()
plt.show()"""),
    ("md", r"""At $\varepsilon = 1$ one bit (HarmonyNumeric) beats Laplace at every $d$; at $\varepsilon = 4$ Laplace is
better for $d \le 2$ and HarmonyNumeric from $d = 3$: the same crossovers as against the textbook Laplace.
At larger $\varepsilon$ the finite Laplace's lower variance moves the crossover later (table above): from
$d = 1$ to $d = 2$ at $\varepsilon = 2$ (at $d = 1$ its worst case 1.63 is below one bit's 1.72, the
textbook's 2 is not) and from $d = 9$ to $d = 13$ at $\varepsilon = 8$. For the population of section 1 at
$\varepsilon = 2$, $d = 1$ one bit is still the better of the two (1.49 against 1.58: both are below their
worst cases, Laplace's by less), a gap too small for those measurements to resolve. Duchi matches
HarmonyNumeric at $d = 1$ and is worse by a factor approaching $\pi/2$ as $d$ grows. PM and HM pay the factor $d$ of
attribute sampling on the second moment $\mathrm{Var}_1 + t^2$, so at $|t| = 1$ their worst case is comparable to the
one-bit mechanisms for $d > 1$. At $d = 1$: PM is worse than Duchi for small $\varepsilon$ and better above the dashed
line; HM, whose variance does not depend on $t$ above $\varepsilon^*$, is the best of the three there."""),
    ("md", r"""## 2. Frequency estimation error

$n = 1000$ users with fixed values from a Zipf-like distribution ($f_v \propto 1/(v+1)$) over $k = 4$ and
$k = 64$ categories; each mechanism perturbs them $R$ times (1000 and 250 repetitions) and estimates the
frequencies. Measured: the squared error averaged over the $k$ values, averaged over the repetitions (with
the standard error of that average across repetitions). Closed form: for the pure protocols GRR, OUE, OLH
and Hadamard response, $\mathrm{Var} f_v = \frac{f_v p(1-p) + (1-f_v) q(1-q)}{n(p-q)^2}$ with the $p, q$
of docs/math.md §8 (OLH's $q = 1/g$; Hadamard response $p = \frac{e^\varepsilon}{e^\varepsilon+1}$, $q = 1/2$).
HarmonyCategorical: the paper's projection estimate (`method="projection"`) averages the terms
$c\,b\,\mathrm{signs}[s, \cdot]$, whose squares are $c^2$ and whose means are the rows $G[v, \cdot]$ of the
Gram matrix $G$ of the public $m \times k$ sign matrix ($m = 4096$). So it has mean $G f$ (the cross-talk
of docs/math.md §9, a bias whose square is added) and covariance $(c^2 G - G\,\mathrm{diag}(f)\,G)/n$, i.e.
$\mathrm{Var} f_l = \frac{c^2 - \sum_v f_v G[v,l]^2}{n}$. The library's default (`method="unbiased"`)
solves $G \hat f = $ projection: unbiased, with covariance $(c^2 G^{-1} - \mathrm{diag}(f))/n$. Both are
measured; $G$ is computed here from the public signs."""),
    ("code", r"""def pure_pq(name, eps, k):
    # Support probabilities p, q of a pure protocol (docs/math.md §8).
    e = math.exp(eps)
    if name == "GRR":
        return e / (e + k - 1), 1 / (e + k - 1)
    if name == "OUE":
        return 0.5, 1 / (e + 1)
    if name == "OLH":
        g = round(e) + 1
        return e / (e + g - 1), 1 / g
    return e / (e + 1), 0.5  # HadamardResponse


def frequency_closed_form(name, mechanism, f, eps, n):
    # (variance, bias) of each value's estimate for true frequencies f and n users.
    if name.startswith("HarmonyCategorical"):
        signs = mechanism.signs.astype(float)
        gram = signs.T @ signs / mechanism.m
        if name == "HarmonyCategorical":  # method="unbiased": G^-1 times the projection estimate
            return (c_of(eps) ** 2 * np.diag(np.linalg.inv(gram)) - f) / n, np.zeros_like(f)
        return (c_of(eps) ** 2 - f @ gram**2) / n, gram @ f - f
    p, q = pure_pq(name, eps, f.size)
    return (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2), np.zeros_like(f)


def oracle(name, eps, k):
    # The mechanism, and the keyword arguments of its estimate() and variance().
    if name.startswith("HarmonyCategorical"):
        method = "projection" if name.endswith("(projection)") else "unbiased"
        return mechanisms.HarmonyCategorical(eps, k, seed=7), {"method": method}
    return getattr(mechanisms, name)(eps, k), {}


ORACLES = ["GRR", "OUE", "OLH", "HadamardResponse", "HarmonyCategorical", "HarmonyCategorical (projection)"]
EPS2 = [0.5, 1.0, 2.0, 4.0]
KS = [4, 64]
N2 = 1000
REPS = {4: 1000, 64: 250}
freq = {}
for k in KS:
    weights = 1.0 / np.arange(1, k + 1)
    values = np.random.default_rng(k).choice(k, size=N2, p=weights / weights.sum())
    f = np.bincount(values, minlength=k) / N2  # the population's true frequencies
    for a, name in enumerate(ORACLES):
        for b, eps in enumerate(EPS2):
            mechanism, method = oracle(name, eps, k)
            R = REPS[k]
            reports = mechanism.perturb(np.tile(values, R), rng=np.random.default_rng([3, k, a, b]))
            estimates = np.array([mechanism.estimate(reports[r * N2:(r + 1) * N2], **method) for r in range(R)])
            squares = ((estimates - f) ** 2).mean(axis=1)
            variance, bias = frequency_closed_form(name, mechanism, f, eps, N2)
            freq[name, eps, k] = {"empirical": squares.mean(), "se": squares.std(ddof=1) / math.sqrt(R),
                                  "closed": float(np.mean(variance + bias**2)), "variance": variance,
                                  "library": mechanism.variance(f, N2, **method)}
    signs = mechanism.signs.astype(float)
    inverse = np.diag(np.linalg.inv(signs.T @ signs / mechanism.m))
    print(f"k = {k}: diagonal of G^-1 (variance factor of the unbiased method) from {inverse.min():.4f} to "
          f"{inverse.max():.4f}; largest cross-talk |Gf - f| = "
          f"{np.abs(signs.T @ signs / mechanism.m @ f - f).max():.5f}")

print("n * mean squared error over values: closed form, and empirical / closed +- 1 se")
for k in KS:
    print(f"k = {k}, {REPS[k]} repetitions of n = {N2}")
    for name in ORACLES:
        print(f"  {name:>31} " + " ".join(
            f"eps={eps:g}: {N2 * freq[name, eps, k]['closed']:8.4g} "
            f"{freq[name, eps, k]['empirical'] / freq[name, eps, k]['closed']:6.4f}"
            f"+-{freq[name, eps, k]['se'] / freq[name, eps, k]['closed']:.4f}" for eps in EPS2))

figure, axes = plt.subplots(1, len(KS), figsize=(11, 4), sharey=True)
for panel, k in zip(axes, KS):
    for number, name in enumerate(ORACLES):
        panel.plot(EPS2, [N2 * freq[name, eps, k]["closed"] for eps in EPS2], color=f"C{number}", label=name,
                   linestyle="--" if name.endswith("(projection)") else "-")
        panel.plot(EPS2, [N2 * freq[name, eps, k]["empirical"] for eps in EPS2], "o", color=f"C{number}",
                   fillstyle="none", markersize=8)
    panel.set_yscale("log")
    panel.set_xlabel("epsilon")
    panel.set_title(f"k = {k}")
    panel.grid(alpha=0.3, which="both")
axes[0].set_ylabel("n x mean squared error of the frequencies")
axes[0].legend(fontsize=8, title="lines: closed form, circles: empirical", title_fontsize=8)
figure.tight_layout()
plt.show()"""),
    ("md", r"""OUE and OLH nearly coincide, as do Hadamard response and both HarmonyCategorical estimates. GRR's error
grows with $k$ (for small $f$, $n\,\mathrm{Var} \approx (e^\varepsilon + k - 2)/(e^\varepsilon - 1)^2$);
OUE and OLH do not ($\approx 4e^\varepsilon/(e^\varepsilon-1)^2$). As $f \to 0$, GRR beats OUE exactly when
$k < 3e^\varepsilon + 2$: always at $k = 4$, only at $\varepsilon = 4$ for $k = 64$. Hadamard response and
HarmonyCategorical send one bit per user and stay near $c^2$, which approaches 1 instead of 0 as
$\varepsilon$ grows: they trade accuracy at large $\varepsilon$ for a one-bit report. The projection's
cross-talk is of order $1/\sqrt{m} = 1/64$ per value (the largest is printed above the table), and its
square is far below the variance $c^2/n$ unless $n > c^2 m$; the unbiased method removes it for a variance
factor $(G^{-1})_{ll}$, on average about $m/(m-k) \approx 1.016$ at $k = 64$. At $n = 1000$ the two are
indistinguishable."""),
    ("md", r"""## 3. LDP learning against non-private models

Synthetic data, $d = 5$ features uniform on $[-1, 1]$, $z = \beta^\top x + 0.1$ with
$\beta = (0.8, -0.6, 0.4, 0.3, -0.2)$. Regression target $y = \mathrm{clip}(0.4 z + N(0, 0.1^2), -1, 1)$;
classes $\pm 1$ with $\Pr[y = 1 \mid x] = 1/(1 + e^{-4z})$ (Bayes error about 0.174). Training sets are
the first $n$ rows of a pool of 100 000; test set 50 000 independent rows. Each LDP learner is fitted with
three seeds at $n = 100\,000$ for $\varepsilon \in \{0.5, 1, 2, 4, 8\}$ and at $\varepsilon = 1$ for
$n \in \{3000, 10\,000, 30\,000\}$; learning rates 0.1 (squared loss) and 0.5 (logistic, hinge) are
passed explicitly.

Non-private models, fitted here with numpy on the same training rows: least squares (regression, with
intercept), and for all three losses the *same objective without noise*: Algorithm 4 with the fitted
model's projection, batch size, step sizes and clipping, but stepping along each batch's exact mean
clipped gradient instead of the average of the users' one-bit reports. The difference between the two
is then only the privacy noise, whose effect on the loss can be predicted: near the optimum, SGD with
step $\gamma$ and gradient noise covariance $S$ fluctuates with excess loss
$\tfrac12 \mathbb{E}[\delta^\top H \delta] \approx \gamma\,\mathrm{tr}(S)/4$ whatever the curvature $H$
(stationary solution of $HV + VH = \gamma S$). Algorithm 4's batch mean has per-coordinate noise variance at
most $m c^2/|G|$ ($m$ reported entries, $|G|$ users per batch), so the prediction is
$\gamma_T\, m^2 c^2 / (4|G|)$ with $\gamma_T$ the last step size."""),
    ("code", r"""BETA = np.array([0.8, -0.6, 0.4, 0.3, -0.2])


def make_data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, BETA.size))
    z = X @ BETA + 0.1
    y_regression = np.clip(0.4 * z + rng.normal(0.0, 0.1, n), -1.0, 1.0)
    p = 1.0 / (1.0 + np.exp(-4.0 * z))
    y_class = np.where(rng.random(n) < p, 1, -1)
    return X, y_regression, y_class, p


X_pool, yr_pool, yc_pool, _ = make_data(100_000, 30)
X_test, yr_test, yc_test, p_test = make_data(50_000, 31)

LEARNERS = {  # class, regression?, learning rate, d loss / d margin, loss
    "LDPLinearRegression": (learn.LDPLinearRegression, True, 0.1,
                            lambda z, y: 2.0 * (z - y), lambda z, y: (z - y) ** 2),
    "LDPLogisticRegression": (learn.LDPLogisticRegression, False, 0.5,
                              lambda z, y: -y * np.exp(-np.logaddexp(0.0, y * z)),
                              lambda z, y: np.logaddexp(0.0, -y * z)),
    "LDPLinearSVC": (learn.LDPLinearSVC, False, 0.5,
                     lambda z, y: np.where(y * z < 1.0, -y, 0.0), lambda z, y: np.maximum(0.0, 1.0 - y * z)),
}
CONFIGS = [(100_000, eps) for eps in (0.5, 1.0, 2.0, 4.0, 8.0)] + [(n, 1.0) for n in (3_000, 10_000, 30_000)]
SEEDS = (0, 1, 2)
REGULARIZATION = 1e-4  # the learners' default, used by the noise-free runs too


def noise_free(model, X, y, derivative, learning_rate, seed):
    # Algorithm 4 with the fitted model's projection, batch size, steps and clipping, exact batch gradients.
    projection, batch, steps = model.projection_, model.batch_size_, model.n_iter_
    r = projection.shape[0]
    order = np.random.default_rng(seed).permutation(len(y))[:steps * batch]
    features = np.c_[X[order] @ projection.T, np.ones(order.size)]
    targets = y[order]
    penalty = np.r_[np.full(r, REGULARIZATION), 0.0]
    alpha = np.zeros(r + 1)
    for t in range(1, steps + 1):
        x, target = features[(t - 1) * batch:t * batch], targets[(t - 1) * batch:t * batch]
        gradient = np.clip(derivative(x @ alpha, target)[:, None] * x + penalty * alpha, -1.0, 1.0)
        alpha -= learning_rate / math.sqrt(t) * gradient.mean(axis=0)
    return projection.T @ alpha[:r], alpha[r]


def test_scores(coef, intercept, regression, loss):
    # (test error, test loss, per-row error for paired comparisons): MSE or misclassification.
    z = X_test @ coef + intercept
    y = yr_test if regression else yc_test
    rows = (z - y) ** 2 if regression else (np.where(z > 0, 1, -1) != y).astype(float)
    return rows.mean(), loss(z, y).mean(), rows


# Constant predictors (the "chance" level) and the Bayes error of the generating model.
constant_rows = {True: (yr_test - yr_pool.mean()) ** 2,
                 False: (yc_test != (1 if (yc_pool == 1).mean() >= 0.5 else -1)).astype(float)}
bayes_error = float(np.mean(np.minimum(p_test, 1 - p_test)))

learning = {}
for name, (cls, regression, rate, derivative, loss) in LEARNERS.items():
    for n, eps in CONFIGS:
        X, y = X_pool[:n], (yr_pool if regression else yc_pool)[:n]
        runs = []
        for seed in SEEDS:
            model = cls(epsilon=eps, learning_rate=rate, random_state=seed).fit(X, y)
            runs.append((model, *test_scores(model.coef_, model.intercept_, regression, loss)))
        model = runs[0][0]
        reference = test_scores(*noise_free(model, X, y, derivative, rate, seed=100), regression, loss)
        m = model.reduced_dim_ + 1
        entry = {
            "error": np.array([run[1] for run in runs]), "loss": np.array([run[2] for run in runs]),
            "rows": [run[3] for run in runs], "noise_free_error": reference[0], "noise_free_loss": reference[1],
            "predicted": rate / math.sqrt(model.n_iter_) * m**2 * c_of(eps) ** 2 / (4 * model.batch_size_),
            "r": model.reduced_dim_, "batch": model.batch_size_, "steps": model.n_iter_,
        }
        # The seeds' mean excess test loss over the noise-free run, its ratio to the prediction, and the ratio's
        # standard error from the seeds' spread (the noise-free run's own randomness is not in it).
        entry["excess"] = entry["loss"].mean() - entry["noise_free_loss"]
        entry["ratio"] = entry["excess"] / entry["predicted"]
        entry["ratio_se"] = entry["loss"].std(ddof=1) / math.sqrt(len(SEEDS)) / entry["predicted"]
        if regression:
            design = np.c_[X, np.ones(n)]
            solution = np.linalg.lstsq(design, y, rcond=None)[0]
            entry["least_squares"] = test_scores(solution[:-1], solution[-1], True, loss)[0]
        learning[name, n, eps] = entry

print(f"test set: {len(yc_test)} rows; Bayes error {bayes_error:.4f}; majority class error "
      f"{constant_rows[False].mean():.4f}; constant-predictor MSE {constant_rows[True].mean():.5f}")
for name, (cls, regression, *_) in LEARNERS.items():
    metric = "test MSE" if regression else "misclassification"
    print(f"\n{name} ({metric}; LDP: mean +- sd over {len(SEEDS)} seeds)")
    print(f"{'n':>7} {'eps':>4} {'r':>2} {'|G|':>4} {'T':>5} {'LDP':>17} {'noise-free':>10}"
          + (f" {'lstsq':>8}" if regression else "") + f" {'excess loss':>11} {'predicted':>9} {'ratio +- se':>12}")
    for n, eps in CONFIGS:
        e = learning[name, n, eps]
        print(f"{n:7d} {eps:4g} {e['r']:2d} {e['batch']:4d} {e['steps']:5d} {e['error'].mean():9.4f}"
              f"+-{e['error'].std():6.4f} {e['noise_free_error']:10.4f}"
              + (f" {e['least_squares']:8.5f}" if regression else "")
              + f" {e['excess']:11.5f} {e['predicted']:9.5f} {e['ratio']:6.2f}+-{e['ratio_se']:4.2f}")

figure, axes = plt.subplots(2, 3, figsize=(14, 7.5))
for column, (name, (cls, regression, *_)) in enumerate(LEARNERS.items()):
    for row, (configs, x, xlabel) in enumerate((
            (CONFIGS[:5], [eps for _, eps in CONFIGS[:5]], "epsilon  (n = 100 000)"),
            (CONFIGS[5:] + [CONFIGS[1]], [n for n, _ in CONFIGS[5:] + [CONFIGS[1]]], "n  (epsilon = 1)"))):
        panel = axes[row, column]
        entries = [learning[name, n, eps] for n, eps in configs]
        panel.errorbar(x, [e["error"].mean() for e in entries], yerr=[e["error"].std() for e in entries],
                       marker="o", capsize=3, label="LDP (mean +- sd, 3 seeds)")
        panel.plot(x, [e["noise_free_error"] for e in entries], marker="s", label="same objective, no noise")
        if regression:
            panel.plot(x, [e["least_squares"] for e in entries], "--", color="C2", label="least squares")
        else:
            panel.axhline(bayes_error, color="C2", linestyle="--", label="Bayes error")
        chance = constant_rows[regression].mean()
        panel.set_xscale("log")
        panel.set_xticks(x, [f"{value:g}" for value in x])
        panel.minorticks_off()
        panel.set_xlabel(xlabel)
        panel.set_ylabel("test MSE" if regression else "misclassification")
        panel.set_title(f"{name}\n({'constant predictor' if regression else 'majority class'}: {chance:.3g})",
                        fontsize=10)
        panel.grid(alpha=0.3)
        if row == 0:
            panel.legend(fontsize=7)
figure.tight_layout()
plt.show()"""),
    ("md", r"""Top row ($n = 100\,000$): more privacy budget helps. The mean error falls from $\varepsilon = 0.5$ to 1
to 2 for all three learners, and from $\varepsilon = 2$ on it is at most 10% above the noise-free run's
(2.7% for the two classifiers). The learners' batch size shrinks with $c^2$, so larger $\varepsilon$ means
more, smaller steps. Bottom row ($\varepsilon = 1$): the error falls with $n$. The default reduced
dimension is $r = d = 5$ in every row of the table (no projection), so there are always $m = 6$ reported
entries, and $|G| = 101$ at $\varepsilon = 1$. At $n = 3000$ that leaves only $T = 29$ mini-batches. That
is too few steps even without noise: the noise-free run's test MSE there is 0.0300, while least squares on
the same 3000 rows gets 0.0101. From $n = 10\,000$ on every seed beats the constant predictor (checked in
the last cell); at $n = 3000$ one logistic-regression seed does not, significantly (test accuracy 0.553
against the majority class's 0.548). With enough steps ($n = 100\,000$, $\varepsilon \ge 1$) the noise-free run is
within 0.3% of the least-squares or Bayes error (at $\varepsilon = 0.5$ its 278 steps leave the regression 10% above
least squares), so there the gap that remains is the privacy noise. The titles give the error of the best constant
prediction, for scale.

The table's last three columns measure that gap in the loss being minimised (squared, logistic or hinge, on
the test set) and compare it with the prediction from the report variance. *excess loss* is the LDP models'
test loss averaged over the three seeds minus the noise-free run's; *predicted* is
$\gamma_T m^2 c^2/(4|G|)$; *ratio* is excess / predicted, with its standard error from the spread of the
three seeds (the noise-free run's own randomness is not included). With the default batch size
$|G| \approx 2 m \ln m\, c^2$ the prediction is $\gamma_T m / (8 \ln m)$, so it depends on $\varepsilon$ only
through the number of steps. The ratios run from $-0.14$ to 3.95. They are this noisy because what they
measure is itself a fluctuation, for two reasons.

* The excess loss of one run is a random quadratic form in its final iterate's noise. Its spread from seed to
  seed is of the same order as the prediction itself, so three seeds pin the ratio only to within ±0.07 to
  ±1.97 (the ± column).
* The reference is a single noise-free run with its own shuffle, and where the descent is short that run is
  not at the optimum either. There the loss is still steep, so a perturbed iterate's loss differs from the
  reference's at first order, and the difference can have either sign. The one negative ratio is
  logistic regression at $\varepsilon = 2$ ($T = 2631$); for comparison, logistic regression's noise-free test loss at
  $n = 100\,000$ is 0.454 after 278 steps and 0.388 after 4545.

So the prediction gives the size of the gap, not its value. It takes each report's variance at its upper
bound $m c^2$ and treats the descent as stationary, and averaged over the 24 rows the ratio is 1.22. At
$n = 100\,000$ every excess is at most about twice the prediction (2.01 at most, logistic regression at
$\varepsilon = 4$; checked in the last cell)."""),
    ("md", r"""## 4. Checks

This cell fails if any of the facts above stops holding. Each group of statistical checks uses
$z$ = `z_bound(number of checks in the group)`."""),
    ("code", r"""# --- Section 1: the notebook's closed forms are the library's variance(), to rounding (the library
# uses e^eps (1 - EXP_MARGIN), see lipdesign.mechanisms.sampling).
for g in list(grid.values()) + list(worst.values()):
    assert abs(g["library"] / g["closed"] - 1) < 1e-9, g
assert abs(EPS_STAR - 0.6094) < 5e-5, EPS_STAR  # docs/math.md §9

# Empirical / closed-form per-user variance within its sampling error; every coordinate unbiased.
cells = list(grid.values()) + list(worst.values())
z = z_bound(len(cells))
bad = [(key, g["empirical"] / g["closed"]) for key, g in list(grid.items()) + list(worst.items())
       if abs(g["empirical"] - g["closed"]) > z * g["se"] + 1e-9 * g["closed"]]
assert not bad, (z, bad)
coordinates = sum(g["bias_z"].size for g in cells)
assert max(g["bias_z"].max() for g in cells) < z_bound(coordinates), z_bound(coordinates)


def ordered(a, b, z):
    # a < b, as the closed forms say, is also what was measured: checked whenever the closed-form gap is at
    # least 2 z combined standard errors (a smaller gap cannot be resolved reliably; each measurement is still
    # checked against its own closed form above). Returns whether the measured order was checked.
    assert a["closed"] < b["closed"], (a, b)
    se = math.hypot(a["se"], b["se"])
    if b["closed"] - a["closed"] < 2 * z * se:
        return False
    assert b["empirical"] - a["empirical"] > z * se, (a, b)
    return True


# Laplace's closed form (docs/math.md §9.9) in every case computed: the summed law has total probability 1,
# the report is unbiased at every grid point (Lemma 9.9a), the clamped reports summed here are the library's
# two end outputs whatever the input (memoryless tails), the worst case is below the textbook 8 d^2 / eps^2,
# and it is at a vertex in one of the two cells next to t = 0.
LAPLACE_CASES = sorted({(eps, int(d)) for eps in EPS_X for d in dims}
                       | {(eps, d) for eps in EPS1 for d in DIMS}
                       | {(eps, 1) for eps in list(EPS_W) + list(eps_line)})
for eps, d in LAPLACE_CASES:
    moments = laplace_moments(eps, d)
    outputs = moments["outputs"]
    points = -1 + 2 * np.arange(outputs.size) / (outputs.size - 1)
    assert np.abs(moments["total"] - 1).max() < 1e-12, (eps, d)
    assert np.abs(moments["mean"] - points).max() < 1e-12 * outputs[-1], (eps, d)
    assert np.allclose(moments["low"], outputs[0], rtol=1e-12, atol=0), (eps, d)
    assert np.allclose(moments["high"], outputs[-1], rtol=1e-12, atol=0), (eps, d)
    assert worst_case("Laplace", eps, d) < textbook_laplace(eps, d), (eps, d)
    assert 0.007 < abs(worst_input("Laplace", eps, d)) < 0.016, (eps, d)
# The vertex is the worst case: no t of a fine grid (step 1e-5) does better, and the best of them is within
# the grid's resolution (curvature 2: at most (5e-6)^2 below).
fine = np.linspace(-1.0, 1.0, 200_001)
for eps, d in [(eps, 1) for eps in EPS_W] + [(1.0, 64), (4.0, 16), (0.5, 16)]:
    w, best = worst_case("Laplace", eps, d), closed_form("Laplace", fine, eps, d).max()
    assert -1e-12 * w <= w - best <= 1e-10 + 1e-12 * w, (eps, d, w, best)

# HarmonyNumeric against Laplace, worst cases over d = 1..64: one crossover, at or after the textbook one
# (which is d > c^2 eps^2 / 8), at the d the text gives.
for eps in EPS_X:
    wins = [worst_case("HarmonyNumeric", eps, d) < worst_case("Laplace", eps, d) for d in dims]
    assert wins == [d >= CROSSOVER[eps] for d in dims], eps
    assert TEXTBOOK_CROSSOVER[eps] == math.floor(c_of(eps) ** 2 * eps**2 / 8) + 1 <= CROSSOVER[eps], eps
assert CROSSOVER == {0.5: 1, 1.0: 1, 2.0: 2, 4.0: 3, 8.0: 13}, CROSSOVER
# The figures the text gives: Laplace's worst case at eps = 1, d = 1 and against the textbook at d = 64; the
# population's ratio to the textbook, largest at (4, 1) and smallest at (0.5, 16); the two cases at (2, 1).
assert round(worst_case("Laplace", 1.0, 1), 2) == 5.55
assert round(worst_case("Laplace", 1.0, 64) / textbook_laplace(1.0, 64), 3) == 0.504
ratios = {(eps, d): grid["Laplace", eps, d]["closed"] / textbook_laplace(eps, d)
          for eps in EPS1 for d in DIMS}
assert max(ratios, key=ratios.get) == (4.0, 1) and min(ratios, key=ratios.get) == (0.5, 16), ratios
assert (round(ratios[4.0, 1], 2), round(ratios[0.5, 16], 2)) == (0.89, 0.51), ratios
assert [round(worst_case(name, 2.0, 1), 2) for name in ("Laplace", "HarmonyNumeric")] == [1.63, 1.72]
assert [round(grid[name, 2.0, 1]["closed"], 2) for name in ("HarmonyNumeric", "Laplace")] == [1.49, 1.58]

# HarmonyNumeric against Laplace on the population grid: the population closed forms order them as the
# worst-case crossover does except at eps = 2, d = 1 (the worst cases favour Laplace, the population one bit),
# and the measurements agree wherever the gap is resolvable: in every cell but that one.
z = z_bound(len(EPS1) * len(DIMS))
against_worst_case, unresolved = [], []
for eps in EPS1:
    for d in DIMS:
        a, b = grid["HarmonyNumeric", eps, d], grid["Laplace", eps, d]
        if (a["closed"] < b["closed"]) != (d >= CROSSOVER[eps]):
            against_worst_case.append((eps, d))
        if not (ordered(a, b, z) if a["closed"] < b["closed"] else ordered(b, a, z)):
            unresolved.append((eps, d))
assert against_worst_case == unresolved == [(2.0, 1)], (against_worst_case, unresolved)

# Duchi's bound: B^2 / (d c^2) is 1 at d = 1 and, for odd d = 2j + 1, between pi j / (2j + 1) and pi / 2
# (Wallis); the library's B agrees with docs/math.md §9's formula.
for eps in EPS1:
    for d in range(1, 65):
        assert abs(mechanisms.Duchi(eps, d).bound / duchi_bound(eps, d) - 1) < 1e-9, (eps, d)
        ratio = duchi_bound(eps, d) ** 2 / (d * c_of(eps) ** 2)
        j = (d - 1) // 2
        assert (abs(ratio - 1) < 1e-12) if d == 1 else (d % 2 == 0 or math.pi * j / d <= ratio <= math.pi / 2)

# PM against Duchi at d = 1: the closed forms cross once, near 1.29; the measured worst cases order the same way.
dense = np.linspace(0.05, 10, 400)
below = [worst_case("Piecewise", e, 1) < worst_case("Duchi", e, 1) for e in dense]
assert below == [e > EPS_PM for e in dense] and 1.2 < EPS_PM < 1.4, EPS_PM
z = z_bound(3 * len(EPS_W))
checked = 0
for eps in EPS_W:
    pm, duchi, hm = worst["Piecewise", eps], worst["Duchi", eps], worst["Hybrid", eps]
    checked += ordered(pm, duchi, z) if eps > EPS_PM else ordered(duchi, pm, z)
    if eps > EPS_STAR:  # HM's worst case is below both (closed form on a dense grid, measured on EPS_W)
        checked += ordered(hm, duchi, z) + ordered(hm, pm, z)
assert checked >= 2 * len(EPS_W), checked
assert all(worst_case("Hybrid", e, 1) < min(worst_case("Duchi", e, 1), worst_case("Piecewise", e, 1))
           for e in dense if e > EPS_STAR + 1e-3)
# Above eps*, HM's variance at d = 1 does not depend on t on the grid points (no rounding term there): the t^2
# coefficients alpha/(s - 1) and -(1 - alpha) cancel for alpha = 1 - 1/s.
def middle_grid_point(e):
    grid = mechanisms.Piecewise(e, 1).piecewise.grid
    return -1 + 2 * (grid // 2) / grid


assert all(abs(closed_form("Hybrid", 1.0, e, 1) / closed_form("Hybrid", middle_grid_point(e), e, 1) - 1) < 1e-9
           for e in dense if e > EPS_STAR)

# --- Section 2: the library's variance() matches docs/math.md §8 (OLH: exact hash collisions instead of
# q = 1/g); empirical MSE within its sampling error of the closed form.
for (name, eps, k), g in freq.items():
    assert np.allclose(g["library"], g["variance"], rtol=1e-6, atol=0), (name, eps, k)
z = z_bound(len(freq))
bad = [(key, g["empirical"] / g["closed"]) for key, g in freq.items()
       if abs(g["empirical"] - g["closed"]) > z * g["se"]]
assert not bad, (z, bad)
# GRR beats OUE exactly when k < 3 e^eps + 2 (the f -> 0 limit of docs/math.md §8); the measurements agree.
z = z_bound(len(KS) * len(EPS2))
for k in KS:
    for eps in EPS2:
        grr, oue = freq["GRR", eps, k], freq["OUE", eps, k]
        assert ordered(grr, oue, z) if k < 3 * math.exp(eps) + 2 else ordered(oue, grr, z), (k, eps)

# --- Section 3: from n = 10 000 on every LDP model beats the constant predictor on the test set (paired difference
# of the per-row errors, z standard errors); at n = 3000 (29 mini-batches) all but one logistic-regression seed do.
fits = [(name, n, eps, rows) for (name, n, eps), e in learning.items() for rows in e["rows"]]
z = z_bound(len(fits))
weak = []
for name, n, eps, rows in fits:
    difference = constant_rows[LEARNERS[name][1]] - rows
    if not difference.mean() > z * difference.std(ddof=1) / math.sqrt(difference.size):
        weak.append((name, n, eps, round(1 - rows.mean(), 3)))
assert weak == [("LDPLogisticRegression", 3_000, 1.0, 0.553)], weak
# At n = 100 000 the excess test loss over the same objective without noise, averaged over the seeds, is at most
# about twice the stationary prediction gamma_T m^2 c^2 / (4 |G|) from the report variance (a seeded figure, not a
# statistical bound: the seeds' spread is in the ratio column).
top_ratio = max((learning[name, n, eps]["ratio"], name, eps) for name in LEARNERS for n, eps in CONFIGS[:5])
assert (round(top_ratio[0], 2), *top_ratio[1:]) == (2.01, "LDPLogisticRegression", 4.0), top_ratio

# The figures section 3's text quotes, from the values computed above (so that the text cannot drift from them).
assert round(bayes_error, 3) == 0.174, bayes_error
assert {e["r"] for e in learning.values()} == {BETA.size}  # r = d: no projection anywhere
assert {e["batch"] for (_, _, eps), e in learning.items() if eps == 1.0} == {101}
assert {learning[name, 3_000, 1.0]["steps"] for name in LEARNERS} == {29}
small = learning["LDPLinearRegression", 3_000, 1.0]
assert (round(small["noise_free_error"], 4), round(small["least_squares"], 4)) == (0.0300, 0.0101), small
top = {name: [learning[name, n, eps] for n, eps in CONFIGS[:5]] for name in LEARNERS}
bottom = {name: [learning[name, n, eps] for n, eps in CONFIGS[5:] + [CONFIGS[1]]] for name in LEARNERS}
for name in LEARNERS:  # the mean error falls from eps = 0.5 to 1 to 2, and with n at eps = 1
    assert np.all(np.diff([e["error"].mean() for e in top[name][:3]]) < 0), name
    assert np.all(np.diff([e["error"].mean() for e in bottom[name]]) < 0), name
above = {name: max(e["error"].mean() / e["noise_free_error"] - 1 for e in top[name][2:]) for name in LEARNERS}
assert round(100 * above["LDPLinearRegression"]) == 10, above  # "at most 10% above" from eps = 2 on
assert round(100 * max(above["LDPLogisticRegression"], above["LDPLinearSVC"]), 1) == 2.7, above
level = {name: [e["noise_free_error"] / (e["least_squares"] if LEARNERS[name][1] else bayes_error) - 1
                for e in top[name]] for name in LEARNERS}
assert max(abs(x) for name in LEARNERS for x in level[name][1:]) < 0.003, level  # within 0.3% for eps >= 1
assert round(level["LDPLinearRegression"][0], 2) == 0.10, level  # 10% above least squares at eps = 0.5
assert {(top[name][0]["steps"], top[name][4]["steps"]) for name in LEARNERS} == {(278, 4545)}
ratios = {key: e["ratio"] for key, e in learning.items()}
assert (round(min(ratios.values()), 2), round(max(ratios.values()), 2)) == (-0.14, 3.95), ratios
assert round(float(np.mean(list(ratios.values()))), 2) == 1.22, ratios
standard_errors = [e["ratio_se"] for e in learning.values()]
assert (round(min(standard_errors), 2), round(max(standard_errors), 2)) == (0.07, 1.97), standard_errors
negative = [key for key, ratio in ratios.items() if ratio < 0]
assert negative == [("LDPLogisticRegression", 100_000, 2.0)], negative
assert learning[negative[0]]["steps"] == 2631, negative
assert [round(e["noise_free_loss"], 3) for e in top["LDPLogisticRegression"]][::4] == [0.454, 0.388]

print("all checks passed")
print(f"largest |empirical/closed - 1| in section 1: "
      f"{max(abs(g['empirical'] / g['closed'] - 1) for g in cells):.4f}; "
      f"section 2: {max(abs(g['empirical'] / g['closed'] - 1) for g in freq.values()):.4f}")"""),
]


if __name__ == "__main__":
    write(CELLS, TARGET, execute=True)
