"""Generate notebooks/06-open-domains.ipynb, executed, with its outputs stored.

Run from anywhere: ``python notebooks/make_06_open_domains.py``; the stored outputs are those of the full run
(``LIPDESIGN_FULL=1``, the default here: 10^6 users, the LIP designs at eps = 1, 2 and 4, about four minutes on 2
cores). The tests execute the notebook with its smaller default (10^5 users, the LIP design at eps = 4 only).
Cell ids are fixed; every random draw is seeded.
"""

import os
from pathlib import Path

from _notebook import write

TARGET = Path(__file__).with_name("06-open-domains.ipynb")

CELLS = [
    ("md", r"""# Words nobody listed: heavy hitters, RAPPOR and count-mean sketches on English words

Users type words; nobody lists them in advance. This notebook collects one word per user under local privacy and
recovers the most frequent words at $\varepsilon$ = 1, 2 and 4, beside the truth, as a user of lipdesign would (the
public API only):

1. **Heavy hitters nobody listed** (`ld.heavy_hitters`, PEM and TreeHist, docs/math.md §18): the server finds the
   top 20 strings from the reports alone.
2. **Frequencies over a candidate list** (RAPPOR and Apple's count-mean sketch, docs/math.md §16): the server decodes
   the reports over the 1,000 most frequent words, chosen after the collection.
3. **Designed under LIP** (`ld.design(..., family="cms")`, docs/math.md §16.6): a count-mean sketch optimised for
   last year's word frequencies, beside Apple's sketch at the same LIP level, run on this year's users.

**Data.** `lipdesign.datasets.words_path()`: the 100,000 most frequent English words with their frequencies per word
of running text, from wordfreq 3.1.1 (Speer 2022, doi:10.5281/zenodo.7199437), licensed **CC BY-SA 4.0**
(https://creativecommons.org/licenses/by-sa/4.0/); `lipdesign/datasets/README.md` says how the file was made. The
frequencies sum to 0.964 (the rest of the language lies beyond rank 100,000); users draw from them renormalised.

**Population and truth.** n users each hold one word drawn from those frequencies with a seeded generator; the truth
is each word's share of **these n users** (not the data's frequency), so that an estimate's error is its own.
**Guarantees.** Every mechanism of sections 1 and 2 is $\varepsilon$-LDP for one report, certified exactly on the
probabilities its sampler realises; section 3's designs are $\varepsilon$-LIP at their prior, and the text says so
wherever two guarantees differ. The last cell checks the key facts and fails if any stops holding. The default run
has 10^5 users and designs at $\varepsilon$ = 4 only, so that the test suite can execute it; `LIPDESIGN_FULL=1` has
10^6 users and designs at 1, 2 and 4 (the stored outputs are from that run)."""),
    ("code", r"""%matplotlib inline
import gzip
import os
import time

import matplotlib.pyplot as plt
import numpy as np
from threadpoolctl import threadpool_limits

import lipdesign as ld
from lipdesign.datasets import words_path

threadpool_limits(1)  # one BLAS thread: on a busy 2-core machine, threads fighting for the cores made each decoding
#                       over 1,000 candidates about 10x slower (3 s instead of 0.3 s at n = 10^5)
FULL = os.environ.get("LIPDESIGN_FULL") == "1"
USERS = 1_000_000 if FULL else 100_000
EPSILONS = (1.0, 2.0, 4.0)
DESIGN_EPSILONS = (1.0, 2.0, 4.0) if FULL else (4.0,)
TOP, HH_BYTES, CANDIDATES, PRIOR_WORDS = 20, 8, 1_000, 200

with gzip.open(words_path(), "rt", encoding="utf-8") as handle:
    header = next(handle).rstrip("\n").split("\t")
    rows = [line.rstrip("\n").split("\t") for line in handle]
words = np.array([word for _, word, _ in rows], dtype=object)
frequency = np.array([float(value) for _, _, value in rows])
print(f"{header}: {len(words):,} words, frequencies summing to {frequency.sum():.3f}; first {list(words[:8])}")

drawn = np.random.default_rng(2026).choice(len(words), size=USERS, p=frequency / frequency.sum())
users = words[drawn]                                   # one word per user (str)
share = np.bincount(drawn, minlength=len(words)) / USERS  # the truth: each word's share of these users
print(f"n = {USERS:,} users, {np.count_nonzero(share):,} distinct words among them; the 1,000 most frequent words "
      f"of the data hold {share[:CANDIDATES].sum():.3f} of the users, the 20 most frequent "
      f"{share[:TOP].sum():.3f}")"""),
    ("md", r"""## 1. Heavy hitters nobody listed: PEM and TreeHist

`ld.heavy_hitters(values, epsilon=..., top=20, protocol=...)` runs one simulated round: each user reports once,
$\varepsilon$-LDP, at one of L levels (the prefix of her word of that many bytes) through a frequency oracle (GRR over
hashed buckets for PEM, one Hadamard coefficient's sign for TreeHist); the server extends the prefixes it keeps byte
by byte and returns the top strings with their estimated frequencies (from the last level's users, about n / L of
them) and 95 % intervals. L = 8 bytes here (`max_bytes=8`): each word is cut to 8 bytes at a character boundary
(`truncate=True`), which leaves 93 % of the mass whole and every one of the top 20 intact (L levels split the users,
so the smallest L that holds the strings sought is the most accurate). The truth is the top 20 of the cut strings
among these n users. PEM keeps the 40 best prefixes per level and always returns 20 strings; TreeHist keeps only
prefixes 3 standard errors above an absent one, so it may return fewer.

A string's estimate and interval are those of a string fixed in advance. The strings returned were **selected** as
the largest of many estimates, so for those near the noise (at small $\varepsilon$) the estimate is biased upward and
the interval can miss: the tables count how often it covers the true share, separately for the true top 20 and for
the other strings returned."""),
    ("code", r"""def cut(word, limit=HH_BYTES):
    # what truncate=True does: at most `limit` bytes of UTF-8, a character that does not fit dropped whole
    return word.encode("utf-8")[:limit].decode("utf-8", "ignore")


cut_strings, cut_index = np.unique(np.array([cut(word) for word in words], dtype=object), return_inverse=True)
cut_share = np.bincount(cut_index[drawn], minlength=len(cut_strings)) / USERS
true_top = [str(s) for s in cut_strings[np.argsort(-cut_share, kind="stable")[:TOP]]]
share_of = dict(zip(cut_strings, cut_share))


def shown(string, width=9):
    text = string if string.isprintable() else string.encode("unicode_escape").decode("ascii")  # random bytes
    return text if len(text) <= width else text[:width - 1] + "~"


def interval(found):
    # 95% intervals; an empty list has none (its confidence_interval raises, so it is not asked)
    return found.confidence_interval(0.95) if len(found) else (np.empty(0), np.empty(0))


def segment(entry, rank):
    found = entry["found"]
    if rank >= len(found.names):
        return f"{'-':<9} {'':>8} {'':>18} {'':>6}"
    low, high = interval(found)
    name = found.names[rank]
    mark = "*" if entry["hits"][rank] else f"{share_of.get(name, 0.0):.4f}"
    return f"{shown(name):<9} {found.values[rank]:>8.4f} [{low[rank]:>7.4f},{high[rank]:>7.4f}] {mark:>6}"


hitters = {}
for eps in EPSILONS:
    for number, protocol in enumerate(("pem", "treehist")):
        start = time.perf_counter()
        found = ld.heavy_hitters(users, epsilon=eps, top=TOP, protocol=protocol, max_bytes=HH_BYTES, truncate=True,
                                 seed=int(100 * eps) + number)
        seconds = time.perf_counter() - start
        low, high = interval(found)
        found_share = np.array([share_of.get(name, 0.0) for name in found.names])
        hits = [name in true_top for name in found.names]
        hitters[eps, protocol] = {"found": found, "seconds": seconds, "recall": sum(hits) / TOP,
                                  "covered": (low <= found_share) & (found_share <= high),
                                  "hits": np.array(hits, dtype=bool)}

print(f"{found.note}\n")
for eps in EPSILONS:
    pem, tree = hitters[eps, "pem"], hitters[eps, "treehist"]
    print(f"eps = {eps:g}-LDP, one report per user, n = {USERS:,} users (words cut to {HH_BYTES} bytes). Truth: the "
          f"top {TOP} among the users. PEM's and TreeHist's top {TOP}: estimate [95% interval]; '*' = in the true "
          f"top {TOP}, else the string's true share")
    print(f"{'':>3} {'truth':<9} {'share':>7} | {'PEM':<9} {'estimate':>8} {'95% interval':>18} {'':>6} | "
          f"{'TreeHist':<9} {'estimate':>8} {'95% interval':>18}")
    for rank in range(TOP):
        print(f"{rank + 1:>3} {shown(true_top[rank]):<9} {share_of[true_top[rank]]:>7.4f} | {segment(pem, rank)} | "
              f"{segment(tree, rank)}")
    print(f"recall: PEM {pem['recall']:.0%} in {pem['seconds']:.1f} s, TreeHist {tree['recall']:.0%} "
          f"({len(tree['found'].names)} strings returned) in {tree['seconds']:.1f} s. The 95% intervals cover the "
          f"true share of the true top-{TOP} strings found for {pem['covered'][pem['hits']].sum()} of "
          f"{pem['hits'].sum()} (PEM) and {tree['covered'][tree['hits']].sum()} of {tree['hits'].sum()} (TreeHist); "
          f"the intervals of the {(~pem['hits']).sum()} other strings PEM returned cover their true share for "
          f"{pem['covered'][~pem['hits']].sum()}\n")"""),
    ("code", r"""fig, axes = plt.subplots(1, len(EPSILONS), figsize=(5 * len(EPSILONS), 6), sharey=True)
positions = np.arange(TOP)
for axis, eps in zip(axes, EPSILONS):
    axis.barh(positions, [share_of[word] for word in true_top], color="lightgrey", label="truth (share of the users)")
    for offset, protocol, colour, marker in ((-0.2, "pem", "tab:blue", "o"), (0.2, "treehist", "tab:orange", "D")):
        entry = hitters[eps, protocol]
        found = entry["found"]
        low, high = interval(found)
        rows = [(true_top.index(name), value, lo, hi) for name, value, lo, hi in
                zip(found.names, found.values, low, high) if name in true_top]
        if rows:
            where, value, lo, hi = map(np.array, zip(*rows))
            axis.errorbar(value, where + offset, xerr=[value - lo, hi - value], fmt=marker, color=colour, ms=4,
                          capsize=2, label=f"{protocol.upper() if protocol == 'pem' else 'TreeHist'} estimate, 95% "
                          f"interval: {entry['recall']:.0%} found")
    axis.set_yticks(positions, true_top, fontsize=8)
    axis.invert_yaxis()
    axis.set_xlabel("share of the users")
    axis.set_title(f"eps = {eps:g}-LDP, one report per user", fontsize=10)
    axis.legend(fontsize=7, loc="lower right")
fig.suptitle(f"The true top {TOP} of n = {USERS:,} users' words (cut to {HH_BYTES} bytes) and the estimates of those "
             "ld.heavy_hitters found (one simulated round each)", fontsize=10)
fig.tight_layout()"""),
    ("md", r"""## 2. Frequencies over a candidate list: RAPPOR and the count-mean sketch

Here the server has a list: the 1,000 most frequent words of the data (chosen after the collection; the reports do
not depend on it, `with_candidates`). It decodes the reports by least squares over the list (docs/math.md §16.4),
with standard errors. Three mechanisms, each $\varepsilon$-LDP for **one report** (certified exactly):

- **one-time RAPPOR** (`RAPPOR.for_epsilon(eps)`: the permanent response only; m = 128 bits, h = 2 hashes, 32
  cohorts, so that 4,096 (cohort, bit) cells determine the 1,000 candidates): any number of memoised reports of one
  value are $\varepsilon$-LDP too;
- **RAPPOR with an instantaneous response** (`RAPPOR.for_epsilon(2 * eps, eps)`, same filters): one report
  $\varepsilon$, any number of reports of one value $2\varepsilon$ (a weaker guarantee for repeated reports, in
  exchange for fresh noise in every report so that successive reports are not identical). For one report both
  RAPPORs have the same bit probabilities, so their accuracy is the same;
- **Apple's count-mean sketch** (`CountMeanSketch(eps)`, its defaults m = 1,024 buckets, d = 64 rows): repeated
  reports are not memoised, so k reports of one value are $k\varepsilon$-LDP.

The users hold any of the 100,000 words: the list leaves out part of them. The least squares is unbiased only when
the list holds every value the users have; it spreads the unlisted words over the candidates whose bits they share,
so the candidates' estimates do not sum to the listed share. `unlisted_mass` estimates the share of users outside
the list from the (cohort, bit) cells no candidate uses (the estimate's note prints it too), printed below beside
the truth and beside the candidates' sum."""),
    ("code", r"""candidates = [str(word) for word in words[:CANDIDATES]]
listed = share[:CANDIDATES]  # the truth over the list
head = np.argsort(-listed, kind="stable")[:TOP]


def oracles(eps):
    return {"one-time RAPPOR": ld.mechanisms.RAPPOR.for_epsilon(eps, m=128, h=2, cohorts=32, seed=61),
            "RAPPOR + IRR": ld.mechanisms.RAPPOR.for_epsilon(2 * eps, eps, m=128, h=2, cohorts=32, seed=61),
            "count-mean sketch": ld.mechanisms.CountMeanSketch(eps, m=1024, d=64, seed=62)}


decoded = {}
for eps in EPSILONS:
    for number, (name, mechanism) in enumerate(oracles(eps).items()):
        start = time.perf_counter()
        reports = mechanism.perturb(users, rng=np.random.default_rng([int(10 * eps), number]))  # on the devices
        decoder = mechanism.with_candidates(candidates)  # on the server
        aggregate = mechanism.aggregate(reports)
        estimate = decoder.estimate(aggregate)
        z = (estimate.values - listed) / estimate.standard_errors
        decoded[eps, name] = {"mechanism": mechanism, "estimate": estimate, "seconds": time.perf_counter() - start,
                              "z": z, "mse": float(np.mean((estimate.values - listed) ** 2)),
                              "outside": decoder.unlisted_mass(aggregate)}

print(f"{decoded[EPSILONS[0], 'one-time RAPPOR']['estimate'].note}\n")
names = list(oracles(1.0))
for eps in EPSILONS:
    print(f"eps = {eps:g}-LDP per report, n = {USERS:,} users holding any of the 100,000 words; least squares over "
          f"the {CANDIDATES:,} most frequent words. The {TOP} most frequent among the users: share, and each "
          "mechanism's estimate +- standard error")
    print(f"{'word':<6} {'share':>7} | " + " | ".join(f"{name:>19}" for name in names))
    for k in head:
        cells = [(decoded[eps, name]["estimate"].values[k], decoded[eps, name]["estimate"].standard_errors[k])
                 for name in names]
        print(f"{candidates[k]:<6} {listed[k]:>7.4f} | " + " | ".join(f"{value:>8.4f} +- {error:.4f}"
                                                                     for value, error in cells))
    for name in names:
        entry = decoded[eps, name]
        outside, error = entry["outside"]
        found = ("cannot be estimated (the candidates use every cell)" if np.isnan(outside) else
                 f"{outside:.3f} +- {error:.3f}")
        print(f"  {name:<17} certified eps {entry['mechanism'].verify().epsilon:.6f}; top {TOP}: max |z| "
              f"{np.abs(entry['z'][head]).max():.2f}; all {CANDIDATES:,}: mean z {entry['z'].mean():+.2f}, mean "
              f"squared error {entry['mse']:.2e}; users outside the list: {found} (truth {1 - listed.sum():.3f}; the "
              f"candidates' estimates sum to {entry['estimate'].values.sum():.3f}); {entry['seconds']:.1f} s")
    print()"""),
    ("code", r"""fig, axes = plt.subplots(1, len(EPSILONS), figsize=(5 * len(EPSILONS), 6), sharey=True)
for axis, eps in zip(axes, EPSILONS):
    for offset, name, colour in zip((-0.25, 0.0, 0.25), names, ("tab:blue", "tab:cyan", "tab:red")):
        estimate = decoded[eps, name]["estimate"]
        error = (estimate.values[head] - listed[head]) * 1e3
        axis.errorbar(error, np.arange(TOP) + offset, xerr=1.96e3 * estimate.standard_errors[head], fmt="o", ms=3,
                      capsize=2, color=colour, label=name)
    axis.axvline(0, color="black", lw=0.8)
    axis.axvline((1 - listed.sum()) / CANDIDATES * 1e3, color="grey", ls=":", lw=1,
                 label="unlisted mass / 1,000")
    axis.set_yticks(np.arange(TOP), [candidates[k] for k in head], fontsize=8)
    axis.invert_yaxis()
    axis.set_xlabel("estimate - share of the users (x 10^-3), 95% interval")
    axis.set_title(f"eps = {eps:g}-LDP per report", fontsize=10)
    axis.legend(fontsize=7)
fig.suptitle(f"Least squares over the {CANDIDATES:,} most frequent words, n = {USERS:,} users holding any of "
             f"100,000 words: error of the top {TOP} (one simulated collection each)", fontsize=10)
fig.tight_layout()"""),
    ("md", r"""## 3. Designed under LIP: last year's frequencies as the prior

If the collector knows roughly how often each word is typed (last year's collection), Local Information Privacy
lets it spend the privacy budget where the prior says the users are. `ld.design(prior, ld.LIP(eps), family="cms")`
designs a count-mean sketch (d = 16 rows, m = 512 buckets for 200 candidates) whose every row is the optimal unary
encoding over its buckets at the prior the candidates induce on them, and certifies it exactly
(docs/math.md §16.6). The prior: the 200 most frequent words of the data, renormalised (words that spell an integer,
such as "1" or "2", are left out, since a Prior's labels may not spell an index).

**What is compared.** Figures are n x the sum of the variances of the candidates' least-squares frequencies (the
`mse` the design reports), at the prior unless they say otherwise. Beside the design, from its `baselines`: Apple's
symmetric sketch with the same hashes and decoder **at the same LIP level** (the largest LDP epsilon whose sketch is
$\varepsilon$-LIP at this prior; here many buckets hold no candidate, so that is $\varepsilon$ itself), and Apple's
sketch at LDP $2\varepsilon$, which is a **weaker** guarantee: an $\varepsilon$-LIP mechanism is $\varepsilon$-LIP at
its declared prior only, and at most $2\varepsilon$-LDP whatever the prior (docs/math.md §2). Each design prints its
own LDP level, which holds whatever the prior."""),
    ("code", r"""def spells_integer(word):
    return word.lstrip("+-").isdigit()


kept = np.array([k for k in range(len(words)) if not spells_integer(words[k])][:PRIOR_WORDS])
prior = ld.Prior(frequency[kept] / frequency[kept].sum(), labels=[str(word) for word in words[kept]])  # last year
print(f"prior: the {PRIOR_WORDS} most frequent words that do not spell an integer (down to rank {kept[-1] + 1} of the "
      f"data; {sum(spells_integer(word) for word in words[:kept[-1] + 1])} left out), renormalised\n")

designs = {}
for eps in DESIGN_EPSILONS:
    start = time.perf_counter()
    design = ld.design(prior, ld.LIP(eps), family="cms")
    seconds = time.perf_counter() - start
    # Apple's sketch at the same LIP level, as a sketch with symmetric thresholds, so that its LIP at the prior is
    # certified by the same exact check: eps' = ln((e^eps - p) / (1 - p)), p the smallest bucket prior (§7.1)
    p_min = float(design.induced_priors.min())
    eps_apple = float(np.log((np.exp(eps) - p_min) / (1 - p_min)))
    flip = int(np.ceil(2**32 / (1 + np.exp(eps_apple / 2))))
    apple = ld.mechanisms.CountMeanSketchLIP(eps, prior, np.full((design.d, design.m), 2**32 - flip),
                                             np.full((design.d, design.m), flip), m=design.m, d=design.d,
                                             seed=design.seed)
    designs[eps] = {"design": design, "apple": apple, "eps_apple": eps_apple, "seconds": seconds}
    print(design.summary())
    print(f"  designed in {seconds:.1f} s; Apple's sketch at LIP eps = {eps:g} is its LDP eps' = {eps_apple:.6f} "
          f"(certified LIP {apple.epsilons['LIP for X']:.6f} at the prior, n x sum Var {apple.mse:.4g})\n")

print(f"n x sum Var of the {PRIOR_WORDS} candidates' least-squares frequencies, users in the prior's proportions "
      "(lower is better)")
print(f"{'eps':>4} {'designed (eps-LIP)':>19} {'its LDP level':>14} {'Apple, same LIP':>16} {'factor':>7} "
      f"{'Apple at LDP 2 eps (weaker)':>28}")
for eps, entry in designs.items():
    design, baselines = entry["design"], entry["design"].baselines
    entry["factor"] = baselines["count-mean sketch (LIP)"] / design.mse
    apple_lip, apple_2eps = baselines["count-mean sketch (LIP)"], baselines.get("count-mean sketch at 2 eps", np.nan)
    print(f"{eps:>4g} {design.mse:>19.4g} {design.epsilons['LDP']:>14.4f} {apple_lip:>16.4g} {entry['factor']:>6.2f}x "
          f"{apple_2eps:>28.4g}")"""),
    ("md", r"""### This year's users, not last year's

The design is made for the prior, but its estimate is the least squares over the candidates, which stays unbiased
for any population the list holds: the prior only decides where the variance is low. This year's frequencies are
last year's, each multiplied by a seeded log-normal factor (sigma 0.5) and renormalised. One simulated collection
of n users drawn from this year's frequencies (over the 200 candidates, so the list holds every value) runs through
the designed sketch and through Apple's at the same LIP level. Expected figures are n x the sum of the variances at
**this year's** frequencies (`variance_at`).

The LIP guarantee is stated at the **declared** prior (last year's). At this year's frequencies the design is
$\varepsilon'$-LIP for another $\varepsilon'$ (`ld.verify(sketch, prior=this_year)`, exact),
which can exceed $\varepsilon$; what holds whatever the prior is the LDP level each design prints (at most
$2\varepsilon$). To keep the claim when the prior is uncertain, declare that uncertainty (docs/math.md §12)."""),
    ("code", r"""this_year = prior.probabilities * np.random.default_rng(7).lognormal(0.0, 0.5, size=PRIOR_WORDS)
this_year = ld.Prior(this_year / this_year.sum(), labels=prior.labels)
distance = 0.5 * np.abs(this_year.probabilities - prior.probabilities).sum()
chosen = np.random.default_rng(8).choice(PRIOR_WORDS, size=USERS, p=this_year.probabilities)
values = np.array(prior.labels, dtype=object)[chosen]  # this year's users
truth = np.bincount(chosen, minlength=PRIOR_WORDS) / USERS  # each candidate's share of them


print(f"this year's frequencies: total variation {distance:.3f} from the prior; n = {USERS:,} users drawn from them")
print("One collection each, least squares over the 200 candidates: n x squared error (expected: n x sum Var at this "
      "year's frequencies), the share of 95% intervals that cover the truth, the mean z-score")
for eps, entry in designs.items():
    for number, which in enumerate(("design", "apple")):
        sketch = entry[which]
        estimate = sketch.estimate(sketch.perturb(values, rng=np.random.default_rng([int(10 * eps), number])))
        low, high = estimate.confidence_interval(0.95)
        z = (estimate.values - truth) / estimate.standard_errors
        entry[which + " run"] = {
            "error": float(USERS * np.sum((estimate.values - truth) ** 2)),
            "expected": float(sketch.variance_at(this_year).sum()), "covered": float(np.mean((low <= truth) &
                                                                                              (truth <= high))),
            "mean z": float(z.mean()), "lip now": ld.verify(sketch, prior=this_year).epsilon}
        run = entry[which + " run"]
        label = "designed for last year" if which == "design" else "Apple's, same LIP level"
        print(f"  eps = {eps:g} {label:<24}: n x squared error {run['error']:8.1f} (expected {run['expected']:8.1f}); "
              f"intervals cover {run['covered']:.0%}; mean z {run['mean z']:+.2f}; LIP {eps:g} at last year's prior, "
              f"{run['lip now']:.3f} at this year's; LDP {sketch.epsilons['LDP']:.3f} whatever the prior")"""),
    ("code", r"""fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
where = np.arange(len(designs))
for offset, key, colour, label in ((-0.27, "design", "tab:green", "designed for last year's prior (eps-LIP)"),
                                   (0.0, "apple", "tab:blue", "Apple's sketch, same LIP level"),
                                   (0.27, "2eps", "tab:grey", "Apple's sketch at LDP 2 eps (weaker guarantee)")):
    heights = [entry["design"].baselines.get("count-mean sketch at 2 eps", np.nan) if key == "2eps"
               else entry[key].mse for entry in designs.values()]
    left.bar(where + offset, heights, width=0.27, color=colour, label=label)
    if key != "2eps":
        runs = [entry[key + " run"] for entry in designs.values()]
        right.scatter(where + offset / 2, [run["error"] for run in runs], color=colour, s=40, label=label)
        right.scatter(where + offset / 2, [run["expected"] for run in runs], color="black", marker="_", s=300,
                      label="expected: n x sum Var at this year's frequencies" if key == "design" else None)
for axis in (left, right):
    axis.set_xticks(where, [f"eps = {eps:g}" for eps in designs])
    axis.set_xlim(-0.6, len(designs) - 0.4)
    axis.set_yscale("log")
    axis.legend(fontsize=7)
left.set_ylabel("n x sum Var at the prior")
left.set_title(f"At last year's prior ({PRIOR_WORDS} words), least squares over them", fontsize=9)
right.set_ylabel("n x squared error")
right.set_title(f"Least squares, one collection of n = {USERS:,} users at this year's frequencies (TV {distance:.2f} "
                "from the prior)", fontsize=9)
fig.tight_layout()"""),
    ("md", r"""## What the run shows

The figures quoted are those of the stored run (10^6 users; the default run's are smaller and noisier).

- **Heavy hitters.** At $\varepsilon$ = 4 PEM returns 19 of the true top 20 (the 20th string, "he", is the 21st
  word) and its 95 % intervals cover the true share of 18 of them. At $\varepsilon$ = 1 only the head survives: each
  level has about n / 8 = 125,000 users, the standard error of an estimate (0.005) is near the 20th word's share,
  and the rest of PEM's list is strings of random bytes whose true share is 0 but whose intervals, selected as the
  largest of many, exclude it. TreeHist returns only prefixes significantly above zero: fewer strings (2, 6 and 8),
  none spurious, their intervals also subject to the selection.
- **Over a candidate list** all three oracles estimate the top 20 without visible bias at every $\varepsilon$ (their
  largest |z| is printed); at the same one-report $\varepsilon$ the count-mean sketch's mean squared error is about a
  third of RAPPOR's. The two RAPPORs have the same accuracy: they differ only in what repeated reports reveal.
- **The list leaves out 29 % of the users, and least squares does not see it**: it spreads the unlisted words over
  the candidates whose bits they share, about 0.29 / 1,000 = 2.9e-4 each (the dotted line of the second figure;
  the mean z over all 1,000 candidates, +0.35 at $\varepsilon$ = 4), so the candidates' estimates sum to 0.99
  (RAPPOR) or 0.86 (the sketch), not 0.71. That is small beside the head's standard errors at this n but not beside
  the tail's shares. Where the unlisted words do show is the cells no candidate uses: `unlisted_mass` finds
  0.106 +- 0.103, 0.240 +- 0.050 and 0.269 +- 0.022 of the users outside the list with the sketch (truth 0.286;
  1,000 candidates leave about a third of its 1,024 buckets per row unused). RAPPOR's 128 bits are all used by
  1,000 candidates, so it cannot tell: a list that large needs a wider filter to see what it misses.
- **Designed under LIP**, the sketch's variance at the prior is 1.17x, 1.39x and 2.49x below Apple's at the same LIP
  level ($\varepsilon$ = 1, 2, 4). Apple's at LDP $2\varepsilon$ is lower still, but it only promises what
  $\varepsilon$-LIP implies at worst. On this year's users both stay unbiased: their squared errors are within
  noise of the variances at this year's frequencies and their intervals cover. The design's LIP level at this
  year's frequencies is 1.016, 2.047 and 4.164, not $\varepsilon$: the guarantee is stated at the declared prior;
  the LDP level (1.148, 2.306, 4.669) holds at any."""),
    ("code", r"""least_recall = {1.0: 0.25, 2.0: 0.4, 4.0: 0.9} if FULL else {1.0: 0.0, 2.0: 0.1, 4.0: 0.45}
covered = hits = 0
for eps in EPSILONS:  # heavy hitters: PEM's recall; TreeHist returns nothing spurious; intervals of the hits cover
    pem, tree = hitters[eps, "pem"], hitters[eps, "treehist"]
    assert pem["recall"] >= least_recall[eps], (eps, pem["recall"])
    assert tree["hits"].all(), (eps, tree["found"].names)
    for entry in (pem, tree):
        covered, hits = covered + entry["covered"][entry["hits"]].sum(), hits + entry["hits"].sum()
assert covered >= 0.85 * hits, (covered, hits)
assert hitters[4.0, "pem"]["recall"] > hitters[2.0, "pem"]["recall"] >= hitters[1.0, "pem"]["recall"]
assert hitters[4.0, "pem"]["found"].names[0] == "the"
noise = hitters[1.0, "pem"]  # at eps = 1 the strings PEM selects from noise: intervals that miss their share of 0
assert not FULL or noise["covered"][~noise["hits"]].sum() <= 0.5 * (~noise["hits"]).sum()

for (eps, name), entry in decoded.items():  # every certified epsilon at most its claim; the head unbiased
    mechanism = entry["mechanism"]
    assert mechanism.verify().passed and mechanism.epsilon <= eps, (eps, name, mechanism.epsilon)
    if name != "count-mean sketch":
        assert mechanism.epsilon_permanent <= (eps if name == "one-time RAPPOR" else 2 * eps), (eps, name)
    assert np.abs(entry["z"][head]).max() < 4, (eps, name)
    # least squares spreads the unlisted users over the candidates; unlisted_mass finds them (the text says so)
    outside, error = entry["outside"]
    if name == "count-mean sketch":  # 1,000 candidates leave about a third of its 1,024 buckets per row unused
        assert abs(outside - (1 - listed.sum())) < 4 * error + 0.02, (eps, name, outside)
    else:  # and use every one of RAPPOR's 128 bits in every cohort: there is nowhere to see the unlisted mass
        assert np.isnan(outside), (eps, name, outside)
    assert entry["estimate"].values.sum() > listed.sum() + 0.05, (eps, name)
for eps in EPSILONS:
    assert decoded[eps, "count-mean sketch"]["mse"] < decoded[eps, "one-time RAPPOR"]["mse"], eps

for eps, entry in designs.items():  # designed under LIP: certified, below Apple at the same LIP, unbiased off-prior
    design, apple = entry["design"], entry["apple"]
    assert design.verify().passed and design.epsilons["LIP for X"] <= eps, eps
    assert apple.verify().passed and apple.epsilons["LIP for X"] <= eps, eps
    assert design.epsilons["LDP"] <= 2 * eps, eps
    assert abs(apple.mse / design.baselines["count-mean sketch (LIP)"] - 1) < 1e-9, eps
    assert entry["factor"] > {1.0: 1.1, 2.0: 1.3, 4.0: 2.3}[eps], (eps, entry["factor"])
    for which in ("design", "apple"):
        run = entry[which + " run"]
        assert run["covered"] >= 0.88 and abs(run["mean z"]) < 0.3, (eps, which, run)
        assert abs(run["error"] / run["expected"] - 1) < 0.4, (eps, which, run)
        assert run["lip now"] <= entry[which].epsilons["LDP"] + 1e-3, (eps, which, run)
print("checks passed")"""),
]

if __name__ == "__main__":
    os.environ.setdefault("LIPDESIGN_FULL", "1")  # LIPDESIGN_FULL=0 stores the small default run instead
    write(CELLS, TARGET)
