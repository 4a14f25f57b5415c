"""Benchmark: many attributes and many rounds (issue 28) on Adult, lipdesign beside multi-freq-ldpy 0.2.5
(Arcolezi et al.) in the same run, on the same users at the same epsilon — figures to read, never timed assertions.

Run: ``python benchmarks/many_rounds.py`` (``--quick`` for a smoke test: n = 10^5, 2 repetitions, a smaller
redraw table; ``--n N``, ``--repeats R``, ``--epsilons 0.5,1,2``, ``--ratio 0.5``, ``--protocols ...``,
``--redraw-users U``, ``--redraw-reports 1,10,30,100,300``, ``--redraw-k K``, ``--dbits D``, ``--seed S``).
multi-freq-ldpy is a benchmark-only dependency (``pip install multi-freq-ldpy==0.2.5``), never lipdesign's.

**Population.** Adult (``lipdesign.datasets.adult_path()``): the attributes sex, education, occupation, income,
and race and marital-status when the bundled file has them (the script uses those it finds and prints them). Each
attribute's values are coded 0..k-1 in sorted order. n users are drawn with replacement from the records (seeded,
once per run); every protocol and repetition perturbs the same users, each repetition with fresh noise. The truth is
the drawn sample's own frequencies.

**Protocols.** Multi-attribute (all the attributes, one report per user): SPL (the budget split, eps/d per
attribute) and SMP (one attribute sampled, full eps) with GRR and with OUE inside; RS+FD (one attribute sampled,
fake data for the others, amplified epsilon) with GRR, OUE on zero vectors (OUE-z) and OUE on a random value (OUE-r).
Longitudinal (one attribute, ``--long-attribute``, default education, k = 16; one round of reports): L-GRR, L-OUE,
L-OSUE, L-SUE, L-SOUE, L-OLH (ours with multi-freq-ldpy's g), each with multi-freq-ldpy's two budgets: eps_perm
(its "upper bound of privacy guarantee (infinity reports)", the permanent layer) = eps and eps_1 (its "lower bound
... (a single report)") = ``--ratio`` x eps (default 0.5); dBitFlipPM (Ding et al. 2017) at eps_perm = eps with
b = k buckets and ``--dbits`` bits (default 1).

**Figures**, per protocol and eps: MSE = mean over the attribute's k values of (estimated frequency - the drawn
sample's frequency)^2, averaged over the attributes (one attribute for the longitudinal ones), over R repetitions:
its mean and standard error (sd / sqrt(R)). Estimators: multi-freq-ldpy's ``*_Aggregator_MI`` (matrix inversion,
then negative estimates set to 0 and the rest renormalised to sum 1 — its only estimator for the multi-attribute
protocols); lipdesign's ``estimate(reports).values`` (unbiased) and, in the column "ours c+n", the same values
clipped at 0 and renormalised as multi-freq-ldpy does, so the two can be compared like for like. Client and server
microseconds per report, the median over the repetitions: client = perturbing the n users, server = aggregating and
estimating their n reports. multi-freq-ldpy's clients take one user per Python call (its API has no batch call):
they are timed over all n calls and divided by n; its servers take the list of the n reports. x: multi-freq-ldpy /
lipdesign; t/o: MSE theirs / ours unbiased; t/c: MSE theirs / ours c+n, and z: (theirs - ours c+n) /
sqrt(se_theirs^2 + se_c+n^2) (positive: ours lower; with R = 5 the standard errors are rough). "eps ours": our
certified epsilon (exact verification of the realised sampler; longitudinal: one report / any number of memoised
reports). "thrs eps_1" (longitudinal): the LDP level of one multi-freq-ldpy report as its client realises it,
measured from ``--realised-calls`` reports of one value (``their_realised_eps``), beside the eps_1 it is given.
lipdesign's longitudinal rows are one round of ``perturb_memoised`` with fresh device keys each repetition (made
untimed: a device makes its key once).

**Redrawn permanent layer.** multi-freq-ldpy's longitudinal clients take the user's value and return one report:
they draw the "permanent" first layer again on every call (nothing is memoised, and the API has no place for a
memo). A user who reports R times through them therefore sends R independent reports. For U users with values
uniform over K values (``--redraw-k``, default 4), each calling a client R times, the table gives the fraction of
users whose value the plurality of their R reports recovers (ties broken at random), with its binomial standard
error, beside two exact bounds under the uniform prior: "any eps_perm-LDP" = e^eps_perm / (e^eps_perm + K - 1), the
highest success probability of any guess from the output of any eps_perm-LDP mechanism over K values (attained by
GRR's memoised permanent value), and "memo" = the success of the best guess from this protocol's own permanent layer
if it were memoised (what infinitely many reports reveal at most). A recovered fraction above the first bound means
the R reports together are not eps_perm-LDP: the unbounded-reports guarantee the library states does not hold
through its API. R independent reports are R x eps_1-LDP by composition (printed). The last column runs lipdesign's
memoised reports the same way (one device key per user, R rounds of ``perturb_memoised``): they should stay within
"memo".
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gc
import gzip
import importlib
import importlib.util
import inspect
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # oracles.Encoded

from oracles import Encoded

import lipdesign
from lipdesign.datasets import adult_path

ATTRIBUTES = ("sex", "education", "occupation", "income", "race", "marital-status")
MULTI = ("SPL[GRR]", "SPL[OUE]", "SMP[GRR]", "SMP[OUE]", "RS+FD[GRR]", "RS+FD[OUE-z]", "RS+FD[OUE-r]")
LONG = ("L-GRR", "L-OUE", "L-OSUE", "L-SUE", "L-SOUE", "L-OLH", "dBitFlipPM")
NOT_BUILT = "lipdesign: not yet built"


# ------------------------------------------------------------------------------------------------- data

def load_adult(wanted=ATTRIBUTES):
    """(names, domain sizes, codes of shape (records, d), the categories of each) for the attributes of ``wanted``
    present in the bundled Adult file; each attribute coded 0..k-1 in sorted order of its values."""
    with gzip.open(adult_path(), "rt", encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        rows = list(reader)
    names = [name for name in wanted if name in header]
    columns, ks, categories = [], [], []
    for name in names:
        column = [row[header.index(name)] for row in rows]
        values = sorted(set(column))
        index = {value: code for code, value in enumerate(values)}
        columns.append(np.array([index[value] for value in column], dtype=np.int64))
        ks.append(len(values))
        categories.append(values)
    return names, ks, np.stack(columns, axis=1), categories


def draw_users(codes, n, seed):
    """n records drawn with replacement (seeded)."""
    return codes[np.random.default_rng([seed, 28]).integers(0, len(codes), size=n)]


def frequencies(column, k):
    return np.bincount(column, minlength=k) / len(column)


def mse_over(estimates, truths):
    """Mean over the attributes of the mean over each attribute's values of the squared error."""
    return float(np.mean([np.mean((np.asarray(estimate, dtype=float) - truth) ** 2)
                          for estimate, truth in zip(estimates, truths)]))


def clip_normalise(values):
    """Negative estimates set to 0, the rest renormalised to sum 1 (multi-freq-ldpy's post-processing)."""
    clipped = np.clip(np.asarray(values, dtype=float), 0.0, None)
    total = clipped.sum()
    return clipped / total if total > 0 else clipped


def olh_g(eps_perm, eps_1):
    """g of the optimised longitudinal local hashing (L-OLH, Arcolezi et al., EDBT 2023), as multi-freq-ldpy 0.2.5
    chooses it (the rounded optimum, at least 2); the redraw table needs it to decode L-OLH reports."""
    a = eps_1 / eps_perm
    e = math.exp
    root = math.sqrt(e(4 * eps_perm) - 14 * e(2 * eps_perm) - 12 * e(2 * eps_perm * (a + 1))
                     + 12 * e(eps_perm * (a + 1)) + 12 * e(eps_perm * (a + 3)) + 1)
    g = (root - e(2 * eps_perm) + 6 * e(eps_perm) - 6 * e(eps_perm * a) + 1) / (6 * (e(eps_perm) - e(eps_perm * a)))
    return int(max(np.rint(g), 2))


# ------------------------------------------------------------------------------------------------- multi-freq-ldpy

@dataclass
class Theirs:
    """multi-freq-ldpy's modules, loaded by ``load_theirs``."""
    version: str
    modules: dict = field(default_factory=dict)
    seeder: object = None

    def seed(self, seed):
        """Seed numpy's global generator and numba's (its jitted clients draw from numba's own state)."""
        np.random.seed(seed % 2**32)
        if self.seeder is not None:
            self.seeder(seed % 2**32)


def load_theirs():
    """(Theirs, None) or (None, the reason). Its L-OLH passes ``str`` to xxhash, which xxhash >= 4 refuses: the
    module's xxhash is wrapped to encode the string first (benchmarks/oracles.py ``Encoded``)."""
    if importlib.util.find_spec("multi_freq_ldpy") is None:
        return None, "multi-freq-ldpy is not installed (pip install multi-freq-ldpy==0.2.5)"
    try:
        from multi_freq_ldpy.long_freq_est import L_GRR, L_LH, L_OSUE, L_OUE, L_SOUE, L_SUE, dBitFlipPM
        from multi_freq_ldpy.mdim_freq_est import RSpFD_solution, SMP_solution, SPL_solution
    except ImportError as error:
        return None, f"multi-freq-ldpy could not be imported ({error})"
    L_LH.xxhash = Encoded
    seeder = None
    try:
        from numba import njit

        @njit(cache=False)
        def seeder(seed):  # numba's np.random is its own generator, seeded only from jitted code
            np.random.seed(seed)
    except ImportError:
        pass
    modules = {"L_GRR": L_GRR, "L_LH": L_LH, "L_OSUE": L_OSUE, "L_OUE": L_OUE, "L_SOUE": L_SOUE, "L_SUE": L_SUE,
               "dBitFlipPM": dBitFlipPM, "RS": RSpFD_solution, "SMP": SMP_solution, "SPL": SPL_solution}
    return Theirs(metadata.version("multi-freq-ldpy"), modules, seeder), None


def their_multi(theirs, protocol, ks, eps):
    """(client(tuple) -> report, server(list of reports) -> estimates per attribute) of a multi-attribute protocol."""
    m, d, lk = theirs.modules, len(ks), list(ks)
    spl, smp, rs = m["SPL"], m["SMP"], m["RS"]
    return {
        "SPL[GRR]": (lambda t: spl.SPL_GRR_Client(t, lk, d, eps), lambda r: spl.SPL_GRR_Aggregator_MI(r, lk, d, eps)),
        "SPL[OUE]": (lambda t: spl.SPL_UE_Client(t, lk, d, eps, True),
                     lambda r: spl.SPL_UE_Aggregator_MI(r, d, eps, True)),
        "SMP[GRR]": (lambda t: smp.SMP_GRR_Client(t, lk, d, eps), lambda r: smp.SMP_GRR_Aggregator_MI(r, lk, d, eps)),
        "SMP[OUE]": (lambda t: smp.SMP_UE_Client(t, lk, d, eps, True),
                     lambda r: smp.SMP_UE_Aggregator_MI(r, d, eps, True)),
        "RS+FD[GRR]": (lambda t: rs.RSpFD_GRR_Client(t, lk, d, eps),
                       lambda r: rs.RSpFD_GRR_Aggregator_MI(r, lk, d, eps)),
        "RS+FD[OUE-z]": (lambda t: rs.RSpFD_UE_zero_Client(t, lk, d, eps, True),
                         lambda r: rs.RSpFD_UE_zero_Aggregator_MI(r, lk, d, eps, True)),
        "RS+FD[OUE-r]": (lambda t: rs.RSpFD_UE_rnd_Client(t, lk, d, eps, True),
                         lambda r: rs.RSpFD_UE_rnd_Aggregator_MI(r, lk, d, eps, True)),
    }[protocol]


def their_long(theirs, protocol, k, eps_perm, eps_1, dbits):
    """(client(value) -> report, server(list of reports) -> [estimate]) of a longitudinal protocol."""
    m = theirs.modules
    table = {
        "L-GRR": (lambda v: m["L_GRR"].L_GRR_Client(v, k, eps_perm, eps_1),
                  lambda r: m["L_GRR"].L_GRR_Aggregator_MI(r, k, eps_perm, eps_1)),
        "L-OUE": (lambda v: m["L_OUE"].L_OUE_Client(v, k, eps_perm, eps_1),
                  lambda r: m["L_OUE"].L_OUE_Aggregator_MI(r, eps_perm, eps_1)),
        "L-OSUE": (lambda v: m["L_OSUE"].L_OSUE_Client(v, k, eps_perm, eps_1),
                   lambda r: m["L_OSUE"].L_OSUE_Aggregator_MI(r, eps_perm, eps_1)),
        "L-SUE": (lambda v: m["L_SUE"].L_SUE_Client(v, k, eps_perm, eps_1),
                  lambda r: m["L_SUE"].L_SUE_Aggregator_MI(r, eps_perm, eps_1)),
        "L-SOUE": (lambda v: m["L_SOUE"].L_SOUE_Client(v, k, eps_perm, eps_1),
                   lambda r: m["L_SOUE"].L_SOUE_Aggregator_MI(r, eps_perm, eps_1)),
        "L-OLH": (lambda v: m["L_LH"].L_LH_Client(v, k, eps_perm, eps_1, True),
                  lambda r: m["L_LH"].L_LH_Aggregator_MI(r, k, eps_perm, eps_1, True)),
        "dBitFlipPM": (lambda v: m["dBitFlipPM"].dBitFlipPM_Client(v, k, k, dbits, eps_perm),
                       lambda r: m["dBitFlipPM"].dBitFlipPM_Aggregator_MI(r, k, dbits, eps_perm)),
    }
    client, server = table[protocol]
    return client, lambda reports: [server(reports)]


def warm_up(client, server, items):
    """One untimed run on the first 500 users: numba compiles multi-freq-ldpy's jitted clients on their first call."""
    try:
        server([client(item) for item in items[:500]])
    except (ValueError, ZeroDivisionError):  # e.g. SMP with no report of some attribute among so few users
        pass


def their_run(client, server, items):
    """(estimates per attribute, client seconds, server seconds): one Python call per user, then the server on the
    list of the reports."""
    gc.collect()
    start = time.perf_counter()
    reports = [client(item) for item in items]
    middle = time.perf_counter()
    estimates = server(reports)
    end = time.perf_counter()
    del reports
    return [np.asarray(estimate, dtype=float) for estimate in estimates], middle - start, end - middle


# ------------------------------------------------------------------------------------------------- lipdesign
#
# THE PLUGGABLE PLACE FOR LIPDESIGN'S SIDE. One function per protocol, ``ours_<kind>(protocol, ...)``: when
# lipdesign.mechanisms.longitudinal / lipdesign.mechanisms.multi_attribute exists and has the protocol's class, it
# builds our mechanism at the same epsilon and returns an ``Ours`` that runs it on the same users; otherwise it
# raises NotBuilt, and the table prints "lipdesign: not yet built" in our columns.

class NotBuilt(Exception):
    """lipdesign has no mechanism for this protocol yet."""


@dataclass
class Ours:
    """One lipdesign mechanism ready to run: ``run(codes, seed)`` -> (estimates per attribute, client s, server s);
    ``certified``: the epsilon it is certified at (text)."""
    name: str
    certified: str
    run: object


def our_class(module_name, *class_names):
    """The first of ``class_names`` that ``lipdesign.mechanisms.<module_name>`` defines, or NotBuilt."""
    full = f"lipdesign.mechanisms.{module_name}"
    try:
        if importlib.util.find_spec(full) is None:
            raise NotBuilt(NOT_BUILT)
        module = importlib.import_module(full)
    except ImportError as error:
        raise NotBuilt(NOT_BUILT) from error
    for name in class_names:
        if hasattr(module, name):
            return getattr(module, name)
    raise NotBuilt(NOT_BUILT)


#: lipdesign's class names, tried in order, and the keyword arguments that pick the protocol, for each protocol.
OUR_CLASSES = {
    "SPL[GRR]": ("multi_attribute", ("SPL",), {}),
    "SPL[OUE]": ("multi_attribute", ("SPL",), {"variant": "oue"}),
    "SMP[GRR]": ("multi_attribute", ("SMP",), {}),
    "SMP[OUE]": ("multi_attribute", ("SMP",), {"variant": "oue"}),
    "RS+FD[GRR]": ("multi_attribute", ("RSFD",), {"variant": "grr"}),
    "RS+FD[OUE-z]": ("multi_attribute", ("RSFD",), {"variant": "ue-zero"}),
    "RS+FD[OUE-r]": ("multi_attribute", ("RSFD",), {"variant": "ue-random"}),
    "L-GRR": ("longitudinal", ("LongitudinalGRR",), {}),
    "L-OUE": ("longitudinal", ("LongitudinalUE",), {"variant": "oue"}),
    "L-OSUE": ("longitudinal", ("LongitudinalUE",), {"variant": "osue"}),
    "L-SUE": ("longitudinal", ("LongitudinalUE",), {"variant": "sue"}),
    "L-SOUE": ("longitudinal", ("LongitudinalUE",), {"variant": "soue"}),
    "L-OLH": ("longitudinal_hashed", ("LongitudinalOLH",), {}),
    "dBitFlipPM": ("longitudinal_hashed", ("DBitFlipPM",), {}),
}


def timed_estimates(mechanism, perturb, prepare):
    """A runner of one attribute: ``prepare(codes, rng)`` (untimed: the devices' keys, made once per device and
    kept), then ``perturb(codes, prepared, rng)`` timed as the client, then ``estimate`` from the reports timed as
    the server."""
    def run(codes, seed):
        prepared = prepare(codes, np.random.default_rng([seed, 2]))
        gc.collect()
        start = time.perf_counter()
        reports = perturb(codes, prepared, np.random.default_rng([seed, 1]))
        middle = time.perf_counter()
        estimate = mechanism.estimate(reports)
        end = time.perf_counter()
        return [np.asarray(estimate.values, dtype=float)], middle - start, end - middle
    return run


def ours_multi(protocol, ks, eps):
    """lipdesign's multi-attribute protocol at eps over attributes of sizes ``ks``, or NotBuilt (also when our class
    has no parameter for the protocol's inner oracle, e.g. SPL with OUE inside)."""
    module, names, options = OUR_CLASSES[protocol]
    cls = our_class(module, *names)
    accepted = inspect.signature(cls).parameters
    missing = [name for name in options if name not in accepted]
    if missing:
        raise NotBuilt(f"lipdesign: {cls.__name__} has GRR inside only (no {missing[0]!r} parameter)")
    mechanism = cls(eps, list(ks), **options)
    certified = f"{mechanism.verify().epsilon:.6f}"
    offsets = np.cumsum(ks)[:-1]

    def run(codes, seed):
        gc.collect()
        start = time.perf_counter()
        reports = mechanism.perturb(codes, rng=np.random.default_rng([seed, 1]))
        middle = time.perf_counter()
        estimate = mechanism.estimate(reports)
        end = time.perf_counter()
        return np.split(np.asarray(estimate.values, dtype=float), offsets), middle - start, end - middle

    return Ours(cls.__name__, certified, run)


def our_long_mechanism(protocol, k, eps_perm, eps_1, dbits):
    """lipdesign's longitudinal mechanism for ``protocol``: one report eps_1-LDP, any number of reports of one value
    eps_perm-LDP (its ``epsilon`` and ``epsilon_permanent``), or NotBuilt."""
    module, names, options = OUR_CLASSES[protocol]
    cls = our_class(module, *names)
    if protocol == "dBitFlipPM":
        return cls(eps_perm, k, buckets=k, d=dbits)
    if protocol == "L-OLH":  # multi-freq-ldpy's g (ours defaults to round(e^eps_perm) + 1)
        return cls(eps_1, eps_perm, k, g=olh_g(eps_perm, eps_1))
    return cls(eps_1, eps_perm, k, **options)


def certified_text(mechanism):
    """Our certified one-report epsilon and, when the mechanism has it, the unbounded one: "eps_1/eps_perm"."""
    one = mechanism.verify().epsilon
    if hasattr(mechanism, "permanent_certificate"):
        return f"{one:.4g}/{mechanism.permanent_certificate().epsilon:.4g}"
    return f"{one:.6f}"


def ours_long(protocol, k, eps_perm, eps_1, dbits):
    """lipdesign's longitudinal protocol, one round of memoised reports (``perturb_memoised`` with fresh device keys
    per repetition, made untimed: a device makes its key once), or NotBuilt."""
    mechanism = our_long_mechanism(protocol, k, eps_perm, eps_1, dbits)
    run = timed_estimates(mechanism,
                          lambda codes, keys, rng: mechanism.perturb_memoised(codes[:, 0], keys, rng=rng),
                          lambda codes, rng: mechanism.device_keys(len(codes), rng=rng))
    return Ours(type(mechanism).__name__, certified_text(mechanism), run)


def our_recovered(protocol, k, eps_perm, eps_1, dbits, values, reports_list, seed):
    """The redraw table's figure for lipdesign: the share of users whose value the plurality of R memoised reports
    (``perturb_memoised``, one key per user, R rounds) recovers, per R; or None when ours is not built or its
    reports are not decoded here."""
    try:
        mechanism = our_long_mechanism(protocol, k, eps_perm, eps_1, dbits)
    except NotBuilt:
        return None
    if protocol not in ("L-GRR", "L-OUE", "L-OSUE", "L-SUE", "L-SOUE"):
        return None
    rng = np.random.default_rng([seed, 4])
    keys = mechanism.device_keys(len(values), rng=rng)
    scores = np.zeros((len(values), k))
    shares = {}
    for r in range(1, max(reports_list) + 1):
        reports = mechanism.perturb_memoised(values, keys, rng=rng)
        if protocol == "L-GRR":
            scores[np.arange(len(values)), reports] += 1
        else:
            scores += np.unpackbits(reports, axis=1, count=k, bitorder="little")
        if r in reports_list:
            guess = np.argmax(scores + rng.random(scores.shape) * 1e-9, axis=1)
            shares[r] = float(np.mean(guess == values))
    return [shares[r] for r in reports_list]


def their_realised_eps(theirs, protocol, k, eps_perm, eps_1, dbits, calls, seed):
    """multi-freq-ldpy's one report's LDP level as its client realises it, "eps +- se": ``calls`` reports of the value
    0, the report probabilities estimated from them and the ratio that decides the level computed from those
    (GRR and L-OLH: log(P (g - 1) / (1 - P)) with P the probability of reporting the value, g the report's range;
    unary encodings: logit P - logit Q, P and Q the probabilities of a 1 on the value's bit and on another bit;
    dBitFlipPM with d = 1: the larger of log(P / Q) and log((1 - Q) / (1 - P)), on the sampled bits)."""
    client, _ = their_long(theirs, protocol, k, eps_perm, eps_1, dbits)
    theirs.seed(seed)
    reports = [client(0) for _ in range(calls)]
    if protocol in ("L-GRR", "L-OLH"):
        if protocol == "L-GRR":
            hits, g = np.asarray(reports) == 0, k
        else:
            g = olh_g(eps_perm, eps_1)
            hits = np.array([value == Encoded.xxh32("0", seed=int(s)).intdigest() % g for value, s in reports])
        share = float(hits.mean())
        return math.log(share * (g - 1) / (1 - share)), 1 / math.sqrt(calls * share * (1 - share))
    bits = np.asarray(reports, dtype=float)
    if protocol == "dBitFlipPM":
        on, off = bits[:, 0], bits[:, 1:]
        share_on, share_off = float(on[on >= 0].mean()), float(off[off >= 0].mean())
        seen_on, seen_off = int((on >= 0).sum()), int((off >= 0).sum())
    else:
        share_on, share_off = float(bits[:, 0].mean()), float(bits[:, 1:].mean())
        seen_on, seen_off = calls, calls * (k - 1)
    se = math.sqrt(1 / (seen_on * share_on * (1 - share_on)) + 1 / (seen_off * share_off * (1 - share_off)))
    if protocol == "dBitFlipPM" and dbits == 1:
        return max(math.log(share_on / share_off), math.log((1 - share_off) / (1 - share_on))), se
    logit = lambda x: math.log(x / (1 - x))  # noqa: E731
    return logit(share_on) - logit(share_off), se


# ------------------------------------------------------------------------------------------------- the runs

@dataclass
class Row:
    protocol: str
    eps: float
    eps_1: float | None
    theirs: list = field(default_factory=list)  # (mse, client s, server s) per repetition
    ours: list = field(default_factory=list)  # (mse, mse clipped + normalised, client s, server s)
    ours_note: str = NOT_BUILT
    certified: str = "-"
    realised: str = "-"  # multi-freq-ldpy's one report's realised epsilon (longitudinal), "eps +- se"


def mean_se(values):
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return math.nan, math.nan
    se = values.std(ddof=1) / math.sqrt(values.size) if values.size > 1 else math.nan
    return float(values.mean()), float(se)


def measure(row, theirs_pair, ours, items, codes, truths, n, repeats, theirs, seed):
    if theirs_pair is not None:
        warm_up(*theirs_pair, items)
    for r in range(repeats):
        if theirs_pair is not None:
            theirs.seed(seed * 1000 + r)
            estimates, t_client, t_server = their_run(*theirs_pair, items)
            row.theirs.append((mse_over(estimates, truths), t_client / n, t_server / n))
        if ours is not None:
            estimates, t_client, t_server = ours.run(codes, [seed, r])
            row.ours.append((mse_over(estimates, truths), mse_over([clip_normalise(e) for e in estimates], truths),
                             t_client / n, t_server / n))


def fmt(value, spec=".3e"):
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def ratio_z(theirs, ours):
    """(theirs / ours, (theirs - ours) / sqrt(se_theirs^2 + se_ours^2)) of two (mean, se) pairs."""
    (t, t_se), (o, o_se) = theirs, ours
    spread = math.sqrt(t_se ** 2 + o_se ** 2) if not math.isnan(t_se + o_se) else math.nan
    return (t / o if o else math.nan), ((t - o) / spread if spread and not math.isnan(spread) else math.nan)


def summarise(row):
    """The figures of one row: MSE (mean, se) and median times per report, theirs and ours."""
    def median(values):
        return float(np.median(values)) if values else math.nan
    figures = {"theirs": mean_se([x[0] for x in row.theirs]), "t_cli": median([x[1] for x in row.theirs]),
               "t_srv": median([x[2] for x in row.theirs])}
    if row.ours:
        figures.update(ours=mean_se([x[0] for x in row.ours]), clipped=mean_se([x[1] for x in row.ours]),
                       o_cli=median([x[2] for x in row.ours]), o_srv=median([x[3] for x in row.ours]))
        figures["raw"] = ratio_z(figures["theirs"], figures["ours"])
        figures["like"] = ratio_z(figures["theirs"], figures["clipped"])
    return figures


def print_row(row):
    f = summarise(row)
    eps_1 = fmt(row.eps_1, "g") if row.eps_1 is not None else "-"
    (t_mse, t_se), t_cli, t_srv = f["theirs"], f["t_cli"], f["t_srv"]
    line = (f"{row.protocol:<13} {row.eps:>4g} {eps_1:>5} {row.realised:>11} {fmt(t_mse):>9} {fmt(t_se, '.1e'):>7} ")
    if row.ours:
        (o_mse, o_se), (c_mse, c_se), o_cli, o_srv = f["ours"], f["clipped"], f["o_cli"], f["o_srv"]
        line += (f"{fmt(o_mse):>9} {fmt(o_se, '.1e'):>7} {fmt(f['raw'][0], '.2f'):>5} {fmt(c_mse):>9} "
                 f"{fmt(c_se, '.1e'):>7} {fmt(f['like'][0], '.2f'):>5} {fmt(f['like'][1], '.1f'):>5} "
                 f"{row.certified:>9} {t_cli * 1e6:8.2f} {o_cli * 1e6:8.3f} {fmt(t_cli / o_cli, '.1f'):>6} "
                 f"{t_srv * 1e6:8.2f} {o_srv * 1e6:8.3f} {fmt(t_srv / o_srv, '.1f'):>6}")
    else:
        line += (f"{'-':>9} {'-':>7} {'-':>5} {'-':>9} {'-':>7} {'-':>5} {'-':>5} {'-':>9} "
                 f"{fmt(t_cli * 1e6, '8.2f'):>8} {'-':>8} {'-':>6} {fmt(t_srv * 1e6, '8.2f'):>8} {'-':>8} {'-':>6}  "
                 f"{row.ours_note}")
    print(line, flush=True)


HEADER = (f"{'protocol':<13} {'eps':>4} {'eps_1':>5} {'thrs eps_1':>11} {'MSE thrs':>9} {'se':>7} {'MSE ours':>9} "
          f"{'se':>7} {'t/o':>5} {'ours c+n':>9} {'se':>7} {'t/c':>5} {'z':>5} {'eps ours':>9} {'cli thrs':>8} "
          f"{'cli ours':>8} {'x':>6} {'srv thrs':>8} {'srv ours':>8} {'x':>6}")


def print_summary(rows):
    print("\nSummary (per protocol and eps): MSE mean +- se over the repetitions, theirs beside ours clipped and "
          "renormalised as theirs is (t/c, z: like for like) and ours unbiased (t/o); microseconds per report, "
          "x = theirs / ours")
    print(f"{'protocol':<13} {'eps':>4} {'MSE theirs':>20} {'MSE ours c+n':>20} {'t/c':>5} {'z':>5} "
          f"{'MSE ours unbiased':>20} {'t/o':>5} {'cli t':>7} {'cli o':>7} {'x':>6} {'srv t':>7} {'srv o':>7} "
          f"{'x':>6}")
    for row in rows:
        f = summarise(row)
        pair = lambda mean, se: f"{fmt(mean)} +- {fmt(se, '.1e')}"  # noqa: E731
        head = f"{row.protocol:<13} {row.eps:>4g} {pair(*f['theirs']):>20} "
        if row.ours:
            print(head + f"{pair(*f['clipped']):>20} {fmt(f['like'][0], '.2f'):>5} {fmt(f['like'][1], '.1f'):>5} "
                  f"{pair(*f['ours']):>20} {fmt(f['raw'][0], '.2f'):>5} {f['t_cli'] * 1e6:7.2f} "
                  f"{f['o_cli'] * 1e6:7.3f} {fmt(f['t_cli'] / f['o_cli'], '.1f'):>6} {f['t_srv'] * 1e6:7.2f} "
                  f"{f['o_srv'] * 1e6:7.3f} {fmt(f['t_srv'] / f['o_srv'], '.1f'):>6}")
        else:
            print(head + f"{row.ours_note:>20} {'-':>5} {'-':>5} {'-':>20} {'-':>5} {f['t_cli'] * 1e6:7.2f} "
                  f"{'-':>7} {'-':>6} {f['t_srv'] * 1e6:7.2f} {'-':>7} {'-':>6}")


# ------------------------------------------------------------------------------------------------- redraw

def bound_any_ldp(eps, k):
    """The highest success probability of any guess of a value uniform over k from any eps-LDP output."""
    return math.exp(eps) / (math.exp(eps) + k - 1)


def _inverse_one_plus_binomial(m, q):
    """E[1 / (1 + M)] for M ~ Binomial(m, q)."""
    return 1.0 / (m + 1) if q == 0 else (1 - (1 - q) ** (m + 1)) / ((m + 1) * q)


def bound_memoised(protocol, eps_perm, eps_1, k, dbits):
    """The success probability of the best guess (uniform prior over k values) from the protocol's permanent layer
    alone, as memoisation would leave it: what infinitely many reports of one memo reveal at most."""
    if protocol == "L-GRR":
        return bound_any_ldp(eps_perm, k)
    if protocol in ("L-OUE", "L-OSUE", "L-SUE", "L-SOUE"):  # first layer OUE or SUE: guess a set bit, else any
        if protocol in ("L-OUE", "L-OSUE"):
            p, q = 0.5, 1 / (math.exp(eps_perm) + 1)
        else:
            p = math.exp(eps_perm / 2) / (math.exp(eps_perm / 2) + 1)
            q = 1 - p
        return p * _inverse_one_plus_binomial(k - 1, q) + (1 - p) * (1 - q) ** (k - 1) / k
    if protocol == "L-OLH":  # a memoised hash into g cells and a GRR value over them
        g = olh_g(eps_perm, eps_1)
        p1 = math.exp(eps_perm) / (math.exp(eps_perm) + g - 1)
        return p1 * _inverse_one_plus_binomial(k - 1, 1 / g) + (1 - p1) * (1 - 1 / g) ** (k - 1) / k
    # dBitFlipPM, b = k buckets, d bits sampled once: a sampled 1 first, then an unsampled bucket, then a sampled 0
    b, d = k, dbits
    p = math.exp(eps_perm / 2) / (math.exp(eps_perm / 2) + 1)
    q = 1 - p
    sampled = p * _inverse_one_plus_binomial(d - 1, q) + ((1 - p) * (1 - q) ** (d - 1) / b if d == b else 0.0)
    unsampled = (1 - q) ** d / (b - d) if d < b else 0.0
    return d / b * sampled + (1 - d / b) * unsampled


def decode_scores(protocol, reports, k, eps_perm, eps_1):
    """Per-value scores of one user's reports (higher = more likely), cumulative over the reports: array (R, k)."""
    if protocol == "L-GRR":
        return np.cumsum(np.eye(k)[np.asarray(reports, dtype=np.int64)], axis=0)
    if protocol == "L-OLH":
        g = olh_g(eps_perm, eps_1)
        support = np.array([[Encoded.xxh32(str(v), seed=int(seed)).intdigest() % g == value for v in range(k)]
                            for value, seed in reports], dtype=float)
        return np.cumsum(support, axis=0)
    bits = np.asarray(reports, dtype=float)
    if protocol == "dBitFlipPM":  # the share of 1s among the reports that sampled each bucket (0.5 when none did)
        ones = np.cumsum(bits == 1, axis=0)
        seen = np.cumsum(bits >= 0, axis=0)
        return np.where(seen > 0, ones / np.maximum(seen, 1), 0.5)
    return np.cumsum(bits, axis=0)


def redraw_table(theirs, protocols, epsilons, ratio, users, reports_list, k, dbits, seed):
    """The fraction of users whose value the plurality of their R reports recovers (see the docstring)."""
    rmax = max(reports_list)
    rng = np.random.default_rng([seed, 3])
    values = rng.integers(0, k, size=users)
    print(f"\nRedrawn permanent layer: U = {users:,} users, values uniform over K = {k}; each user calls the client "
          f"{rmax} times (R reports); recovered = share of users whose value has the top score of their first R "
          f"reports (ties at random), +- its binomial standard error. 'any LDP' = e^eps_perm / (e^eps_perm + K - 1), "
          "the most any eps_perm-LDP output allows; 'memo' = the best guess from the protocol's own permanent layer "
          f"memoised (infinitely many reports). dBitFlipPM: b = K, d = {dbits}, eps_perm only (its eps_1 column: -).")
    columns = " ".join(f"{'R=' + str(r):>13}" for r in reports_list)
    print("'ours R=...': lipdesign's memoised reports (perturb_memoised, one device key per user, R rounds) "
          "decoded the same way, or '-' when ours is not built.")
    print(f"{'protocol':<11} {'eps_perm':>8} {'eps_1':>5} {columns} {'any LDP':>7} {'memo':>6} {'chance':>6} "
          f"{'R eps_1 at R=' + str(rmax):>16} {'ours R=' + str(rmax):>12}")
    evidence = []
    for protocol in protocols:
        for eps in epsilons:
            eps_1 = ratio * eps
            client, _ = their_long(theirs, protocol, k, eps, eps_1, dbits)
            theirs.seed(seed * 7919 + int(eps * 100))
            recovered = np.zeros(len(reports_list))
            for value in values.tolist():
                scores = decode_scores(protocol, [client(value) for _ in range(rmax)], k, eps, eps_1)
                for i, r in enumerate(reports_list):
                    row = scores[r - 1] + rng.random(k) * 1e-9
                    recovered[i] += int(np.argmax(row) == value)
            share = recovered / users
            any_ldp = bound_any_ldp(eps, k)
            memo = bound_memoised(protocol, eps, eps_1, k, dbits)
            cells = " ".join(f"{s:.3f}+-{math.sqrt(s * (1 - s) / users):.3f}".rjust(13) for s in share)
            spent = rmax * (eps if protocol == "dBitFlipPM" else eps_1)
            ours = our_recovered(protocol, k, eps, eps_1, dbits, values, reports_list, seed)
            ours_text = "-" if ours is None else f"{ours[-1]:.3f}+-{math.sqrt(ours[-1] * (1 - ours[-1]) / users):.3f}"
            print(f"{protocol:<11} {eps:>8g} {('-' if protocol == 'dBitFlipPM' else format(eps_1, 'g')):>5} {cells} "
                  f"{any_ldp:>7.3f} {memo:>6.3f} {1 / k:>6.3f} {spent:>16g} {ours_text:>12}", flush=True)
            top = share[-1]
            z = (top - any_ldp) / max(math.sqrt(top * (1 - top) / users), 1e-12)
            evidence.append((protocol, eps, top, any_ldp, z))
    beaten = [e for e in evidence if e[4] > 4]
    print(f"At R = {rmax}, {len(beaten)} of {len(evidence)} (protocol, eps) recover more users than any eps_perm-LDP "
          "output allows (z > 4 above 'any LDP'): " + ", ".join(f"{p} eps {e:g}: {t:.3f} > {b:.3f}"
                                                                 for p, e, t, b, _ in beaten))


def one_user(theirs, eps, ratio, k, reports, seed):
    """One user with value 0 calling L-GRR, L-OUE and L-OSUE ``reports`` times each: the share of reports on each
    value (L-GRR) or of 1s on each bit (the unary ones)."""
    eps_1 = ratio * eps
    print(f"\nOne user with value 0 (K = {k}, eps_perm = {eps:g}, eps_1 = {eps_1:g}), {reports:,} calls of each "
          "client; the share of the reports on each value (L-GRR) or of 1s on each bit (L-OUE, L-OSUE):")
    for protocol in ("L-GRR", "L-OUE", "L-OSUE"):
        client, _ = their_long(theirs, protocol, k, eps, eps_1, 1)
        theirs.seed(seed)
        sent = [client(0) for _ in range(reports)]
        shares = (np.bincount(sent, minlength=k) if protocol == "L-GRR" else np.sum(sent, axis=0)) / reports
        se = math.sqrt(0.25 / reports)
        print(f"  {protocol:<7} " + ", ".join(f"{s:.3f}" for s in shares)
              + f" (se <= {se:.3f}); the top is {int(np.argmax(shares))}, the user's value")
    print(f"  A memoised permanent layer would put the top on the memo, which is the user's value with probability "
          f"at most {bound_any_ldp(eps, k):.3f} (any eps_perm-LDP, uniform prior) however many reports are sent.")


# ------------------------------------------------------------------------------------------------- main

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=None, help="users (default 10^6; --quick: 10^5)")
    parser.add_argument("--repeats", type=int, default=None, help="R, repetitions (default 5; --quick: 2)")
    parser.add_argument("--epsilons", default="0.5,1,2")
    parser.add_argument("--ratio", type=float, default=0.5, help="eps_1 / eps_perm of the longitudinal protocols")
    parser.add_argument("--protocols", default=",".join(MULTI + LONG))
    parser.add_argument("--long-attribute", default="education")
    parser.add_argument("--dbits", type=int, default=1, help="d, bits of dBitFlipPM (b = k buckets)")
    parser.add_argument("--redraw-users", type=int, default=None, help="U of the redraw table (default 2,000)")
    parser.add_argument("--redraw-reports", default=None, help="R of the redraw table (default 1,10,30,100,300)")
    parser.add_argument("--redraw-k", type=int, default=4)
    parser.add_argument("--no-redraw", action="store_true")
    parser.add_argument("--realised-calls", type=int, default=None,
                        help="client calls that measure multi-freq-ldpy's realised one-report epsilon (default "
                             "200,000; --quick: 20,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="n = 10^5, R = 2, U = 300 reporting up to 100 times")
    args = parser.parse_args(argv)
    n = args.n or (100_000 if args.quick else 1_000_000)
    repeats = args.repeats or (2 if args.quick else 5)
    redraw_users = args.redraw_users or (300 if args.quick else 2_000)
    redraw_reports = [int(r) for r in (args.redraw_reports or ("1,10,100" if args.quick else "1,10,30,100,300"))
                      .split(",")]
    args.realised_calls = args.realised_calls or (20_000 if args.quick else 200_000)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    protocols = [p for p in args.protocols.split(",") if p]
    unknown = sorted(set(protocols) - set(MULTI + LONG))
    if unknown:
        parser.error(f"unknown protocols {unknown}; choose from {', '.join(MULTI + LONG)}")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=1)  # one BLAS thread: the machine's 2 cores are shared
    except ImportError:
        pass

    names, ks, codes, _ = load_adult()
    if args.long_attribute not in names:
        parser.error(f"--long-attribute {args.long_attribute!r} is not among {names}")
    users = draw_users(codes, n, args.seed)
    truths = [frequencies(users[:, j], k) for j, k in enumerate(ks)]
    long_j = names.index(args.long_attribute)
    long_k = ks[long_j]
    theirs, reason = load_theirs()
    missing = [name for name in ATTRIBUTES if name not in names]
    print(f"Many attributes and many rounds on Adult: lipdesign {lipdesign.__version__} beside multi-freq-ldpy "
          f"{theirs.version if theirs else '-'}; numpy {np.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()}, {os.cpu_count()} cores, one BLAS thread; {datetime.datetime.now():%Y-%m-%d %H:%M}")
    if theirs is None:
        print(f"multi-freq-ldpy columns skipped: {reason}")
    print(f"Population: n = {n:,} users drawn with replacement from the {len(codes):,} Adult records (seed "
          f"{args.seed}); attributes (k): " + ", ".join(f"{a} ({k})" for a, k in zip(names, ks))
          + (f"; not in the bundled file: {', '.join(missing)}" if missing else "")
          + f". Longitudinal protocols: {args.long_attribute} (k = {long_k}), eps_1 = {args.ratio:g} x eps_perm; "
          f"dBitFlipPM b = {long_k}, d = {args.dbits}.")
    print(f"MSE: mean over each attribute's values of (estimate - the sample's frequency)^2, averaged over the "
          f"attributes; mean over R = {repeats} repetitions (fresh noise, the same users) and its standard error. "
          "Theirs: *_Aggregator_MI (clipped at 0, renormalised); ours: estimate(reports).values (unbiased), 'ours "
          "c+n' the same clipped and renormalised. t/o: MSE theirs / ours unbiased; t/c: theirs / ours c+n (like for "
          "like) and z: (theirs - ours c+n) / sqrt(se_t^2 + se_c^2). "
          "Times: microseconds per report (client: perturbing the n users, one Python call per user on their side; "
          "server: aggregating + estimating), the median over the repetitions; x: theirs / ours.")

    rows = []
    for kind, group in (("multi", MULTI), ("long", LONG)):
        chosen = [p for p in group if p in protocols]
        if not chosen:
            continue
        title = (f"Multi-attribute: d = {len(ks)} attributes, one report per user" if kind == "multi" else
                 f"Longitudinal: {args.long_attribute} (k = {long_k}), one round of reports")
        print(f"\n{title}\n{HEADER}", flush=True)
        items = users.tolist() if kind == "multi" else users[:, long_j].tolist()
        our_codes = users if kind == "multi" else users[:, [long_j]]
        our_truths = truths if kind == "multi" else [truths[long_j]]
        for eps in epsilons:
            for protocol in chosen:
                eps_1 = None if kind == "multi" or protocol == "dBitFlipPM" else args.ratio * eps
                row = Row(protocol, eps, eps_1)
                pair = None
                if theirs is not None:
                    pair = (their_multi(theirs, protocol, ks, eps) if kind == "multi"
                            else their_long(theirs, protocol, long_k, eps, eps_1, args.dbits))
                ours = None
                try:
                    ours = (ours_multi(protocol, ks, eps) if kind == "multi"
                            else ours_long(protocol, long_k, eps, eps_1, args.dbits))
                    row.certified = ours.certified
                except NotBuilt as why:
                    row.ours_note = str(why)
                except Exception as error:  # noqa: BLE001 - our adapter's failure is printed, theirs still runs
                    row.ours_note = f"lipdesign failed: {type(error).__name__}: {error}"[:160]
                if theirs is not None and kind == "long":
                    realised, se = their_realised_eps(theirs, protocol, long_k, eps, eps_1, args.dbits,
                                                      args.realised_calls, args.seed)
                    row.realised = f"{realised:.3f}+-{se:.3f}"
                measure(row, pair, ours, items, our_codes, our_truths, n, repeats, theirs, args.seed)
                print_row(row)
                rows.append(row)

    if theirs is not None and not args.no_redraw:
        one_user(theirs, 1.0, args.ratio, args.redraw_k, 2_000, args.seed)
        redraw_table(theirs, [p for p in LONG if p in protocols], epsilons, args.ratio, redraw_users, redraw_reports,
                     args.redraw_k, args.dbits, args.seed)

    print_summary(rows)


if __name__ == "__main__":
    main()
