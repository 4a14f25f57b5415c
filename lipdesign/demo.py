"""The built-in scenario of ``lipdesign demo``: phone telemetry, estimated for the population.

A phone reports its daily screen-time bucket X; last year's survey gives the prior. The server wants THIS year's
histogram of the buckets, so accuracy is the variance of the unbiased estimate the server computes (n x the sum of
the variances, given the users' values, docs/math.md §11), on the population it actually has. The demo sets the
LIP design for X beside the optimal LDP table, subset selection, GRR and OUE at the same epsilon, and beside the
optimal LDP table at 2 eps (an eps-LIP table is at worst 2 eps-LDP, docs/math.md §2); it then estimates a
population that drifted from the prior, designs over a prior set built from survey counts, and protects a latent
secret (the owner's age band G, with G -> raw hours -> X declared as a networkx DAG).
"""

import warnings
from typing import Any, cast

import numpy as np

from lipdesign.designer import design
from lipdesign.errors import ShrinkageWarning, require
from lipdesign.model import Prior, PriorSet, SecretModel
from lipdesign.notions import LIP
from lipdesign.objectives import BayesHistogram
from lipdesign.plot import accuracy_figure
from lipdesign.simulation import drifted, simulate

EPSILONS = (0.25, 0.5, 1.0, 2.0)
BUCKETS = ("<1h", "1-3h", "3-5h", ">5h")
#: Columns of ``run``'s rows, after epsilon: n x sum Var of each mechanism's own unbiased estimate.
COLUMNS = ("LIP for X", "optimal LDP", "subset selection", "GRR", "OUE", "optimal LDP at 2 eps")
#: Users of the simulated populations, and the survey behind the prior set.
USERS = 200_000
SURVEY = 200


def scenario():
    """(prior of X, secret model) of the demo: age band -> screen hours (0..7) -> bucket."""
    require("the demo's latent secret (a DAG)", "design", "networkx")
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_node("age", states=["18-29", "30-49", "50+"], cpt=[0.3, 0.45, 0.25])
    graph.add_node("hours", states=8, parents=["age"], cpt=[
        [0.01, 0.04, 0.10, 0.15, 0.20, 0.20, 0.15, 0.15],
        [0.05, 0.15, 0.20, 0.20, 0.17, 0.12, 0.07, 0.04],
        [0.30, 0.30, 0.18, 0.10, 0.06, 0.03, 0.02, 0.01],
    ])
    graph.add_node("bucket", states=list(BUCKETS), parents=["hours"], function=np.array([0, 1, 1, 2, 2, 3, 3, 3]))
    graph.add_edge("age", "hours")
    graph.add_edge("hours", "bucket")
    secret = SecretModel.from_dag(graph, secret="age", observed="bucket")
    prior = Prior(cast(np.ndarray, secret.secret_prior) @ secret.conditional, labels=BUCKETS)  # from_dag sets it
    return prior, secret


def run(epsilons=EPSILONS):
    """Rows (epsilon, *COLUMNS) of n x sum Var at the design prior, given the users' values, and the LIP designs
    for X by epsilon."""
    prior, _ = scenario()
    rows, mechanisms = [], {}
    for epsilon in epsilons:
        mechanism: Any = design(prior, LIP(epsilon))  # an RR design (table, orbit or classes): mse and baselines
        figures = mechanism.baselines
        subset = min(value for name, value in figures.items() if name.startswith("subset") and "2 eps" not in name)
        rows.append((epsilon, mechanism.mse, figures["optimal LDP"], subset, figures["GRR"], figures["OUE"],
                     figures["optimal LDP at 2 eps"]))
        mechanisms[epsilon] = mechanism
    return rows, mechanisms


def drift_story(mechanism, rng=0):
    """The LIP design estimating a population drifted by TV 0.2 from the prior: its unbiased estimate, and the
    Bayesian (MMSE) table of the LIP paper estimating it with posterior means (docs/math.md §4): (unbiased
    simulation, MMSE simulation), both on the same drawn population."""
    truth = drifted(mechanism.prior.probabilities, 0.2)
    unbiased = simulate(mechanism, USERS, rng=rng, truth=truth, repetitions=5, drift=False)
    bayes = design(mechanism.prior, mechanism.notion, BayesHistogram(), baselines=False)
    with warnings.catch_warnings():  # the shrinkage is what this run shows
        warnings.simplefilter("ignore", ShrinkageWarning)
        mmse = simulate(bayes, USERS, rng=rng, truth=truth, repetitions=5, drift=False, method="mmse")
    return unbiased, mmse


def prior_set_story(epsilon=1.0, rng=1):
    """A survey of SURVEY phones gives counts; the TV ball that holds the true prior with 95 % confidence; the
    bounded-prior design over it, and the plain LIP design at the survey's frequencies for comparison: (counts,
    prior set, bounded design, plain design)."""
    prior, _ = scenario()
    counts = np.random.default_rng(rng).multinomial(SURVEY, prior.probabilities)
    prior_set = PriorSet.from_counts(counts, confidence=0.95, kind="tv")
    centre = Prior(counts / counts.sum(), labels=BUCKETS)
    return counts, prior_set, design(centre, LIP(epsilon, prior_set=prior_set)), design(centre, LIP(epsilon))


def secret_story(epsilon=1.0):
    """LIP for the age band only: far less noise, and X itself may be released (the summary says so)."""
    prior, secret = scenario()
    return design(prior, LIP(epsilon, secret=secret))


def plot(rows, path):
    """PNG of n x sum Var against epsilon for the mechanisms of COLUMNS (log scale, ``lipdesign.plot``)."""
    data = np.array(rows)
    figure = accuracy_figure(data[:, 0], dict(zip(COLUMNS, data[:, 1:].T)),
                             title="Screen-time buckets: accuracy of this year's histogram",
                             ylabel="n x sum of variances (unbiased estimate)",
                             dashed=[label for label in COLUMNS if label.endswith("2 eps")])
    figure.savefig(path, dpi=120)
