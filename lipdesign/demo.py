"""The built-in scenario of ``lipdesign demo``: phone telemetry with a latent secret.

A phone reports its daily screen-time bucket X. The secret is the owner's age band G, which the raw
screen time R depends on: G -> R -> X with X = f(R), declared as a networkx DAG. The demo designs LIP
tables that protect G (and, for comparison, X itself) and sets them beside the optimal LDP table and GRR.
"""

import networkx as nx
import numpy as np

from lipdesign.designer import design
from lipdesign.model import Prior, SecretModel
from lipdesign.notions import LIP
from lipdesign.objectives import Histogram

EPSILONS = (0.1, 0.25, 0.5, 1.0, 2.0)
BUCKETS = ("<1h", "1-3h", "3-5h", ">5h")


def scenario():
    """(prior of X, secret model) of the demo: age band -> screen hours (0..7) -> bucket."""
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
    prior = Prior(secret.secret_prior @ secret.conditional, labels=BUCKETS)
    return prior, secret


def run(epsilons=EPSILONS):
    """Rows (epsilon, LIP for the age band, LIP for X, optimal LDP, GRR) of histogram MSEs, and the
    mechanisms designed for the age band."""
    prior, secret = scenario()
    rows, mechanisms = [], {}
    for epsilon in epsilons:
        latent = design(prior, LIP(epsilon, secret=secret), Histogram())
        direct = design(prior, LIP(epsilon), Histogram(), baselines=False)
        rows.append((epsilon, latent.mse, direct.mse, latent.baselines["optimal LDP"], latent.baselines["GRR"]))
        mechanisms[epsilon] = latent
    return rows, mechanisms


def plot(rows, path):
    """PNG of MSE against epsilon for the four designs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = np.array(rows)
    figure, axes = plt.subplots(figsize=(6, 4))
    for column, label in enumerate(("LIP, secret = age band", "LIP, secret = X", "optimal LDP", "GRR"), 1):
        axes.plot(data[:, 0], data[:, column], marker="o", label=label)
    axes.set_xlabel("epsilon")
    axes.set_ylabel("histogram MSE per user (MMSE estimate)")
    axes.set_title("Screen-time buckets: the gain from the prior")
    axes.legend()
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
