"""Accuracy against epsilon: the figure of ``lipdesign plot`` (a spec's design or a mechanism file beside its LDP
counterparts and the lower bound) and of ``lipdesign demo``, drawn by ``accuracy_figure``."""

import math
from dataclasses import replace
from typing import Any, cast

import numpy as np

#: The figure a design minimises, by objective kind (docs/math.md §4, §11), for the axis label.
FIGURES = {"frequencies": "n x sum of variances of the unbiased estimate",
           "mean": "n x variance of the unbiased estimate of the mean",
           "histogram": "per-user MSE of the MMSE estimate, summed over the bins",
           "weighted_sum": "per-user MSE of the MMSE estimate of the sum"}

#: Epsilons of a plot by default: these multiples of the spec's or the mechanism's own epsilon.
EPSILON_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)

#: The LDP frequency oracles a fixed categorical mechanism is drawn beside.
ORACLES = ("grr", "oue", "olh")


def accuracy_figure(epsilons, curves, *, title, ylabel, dashed=()):
    """A matplotlib Figure of each curve (label -> figures at ``epsilons``, nan where a mechanism has none) against
    epsilon, log scale; the labels in ``dashed`` (bounds, comparisons at 2 eps) are drawn dashed. No pyplot: the
    Figure saves a PNG through Agg, with no display and no global state."""
    from lipdesign.errors import require

    require("a plot", "design", "matplotlib")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.5))
    axes = figure.subplots()
    for label, values in curves.items():
        axes.plot(epsilons, values, "--" if label in dashed else "-", marker="o", label=label)
    axes.set_xlabel("epsilon")
    axes.set_yscale("log")
    axes.set_ylabel(ylabel, fontsize=8)
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def default_epsilons(epsilon, high):
    """``EPSILON_FACTORS`` times ``epsilon``, those up to ``high``."""
    return [epsilon * factor for factor in EPSILON_FACTORS if epsilon * factor <= high]


def design_figure(prior, notion, objective, options, name, epsilons=None, progress=None):
    """The design of (prior, notion, objective) (``ld.design`` with the spec's ``options``) at each epsilon (default:
    ``default_epsilons`` of the notion's) beside its baselines at the same epsilon, the optimal LDP table at 2 eps
    (dashed: an eps-LIP design is only 2 eps-LDP in the worst case) and its lower bound, titled ``name``."""
    from lipdesign.designer import design
    from lipdesign.objectives import as_objective
    from lipdesign.validation import MAX_EPSILON

    objective = as_objective("frequencies" if objective is None else objective)
    epsilons = default_epsilons(notion.epsilon, MAX_EPSILON) if epsilons is None else epsilons
    first = design(prior, notion, objective, progress=progress, **options)
    if not hasattr(first, "mse"):  # local hashing under LDP is OLH, a fixed protocol: no design curve or bound
        return fixed_figure(first, name, epsilons)
    designs = cast("list[Any]", [  # designed families: their mse, baselines and optimality
        first if epsilon == notion.epsilon else design(prior, replace(notion, epsilon=epsilon), objective,
                                                       progress=progress, **options) for epsilon in epsilons])
    curves = {f"{notion.kind} design": [mechanism.mse for mechanism in designs]}
    baselines = [_same_epsilon(mechanism.baselines) for mechanism in designs]
    for label in dict.fromkeys(label for figures in baselines for label in figures):
        curves[label] = [figures.get(label, math.nan) for figures in baselines]
    twice = [mechanism.baselines.get("optimal LDP at 2 eps", math.nan) for mechanism in designs]
    if not np.isnan(twice).all():  # eps-LIP implies only 2 eps-LDP: the LDP optimum at that guarantee too
        curves["optimal LDP at 2 eps"] = twice
    bounds = [mechanism.optimality["lower_bound"] if mechanism.optimality else math.nan for mechanism in designs]
    if not np.isnan(bounds).all():
        curves["lower bound"] = bounds
    secret = " for a latent secret" if getattr(notion, "secret", None) is not None else ""
    return accuracy_figure(epsilons, curves, dashed=("lower bound", "optimal LDP at 2 eps"),
                           title=f"{name}: k = {prior.k}, {notion.kind}{secret}, objective {objective.kind}",
                           ylabel=f"{FIGURES[objective.kind]} at the design prior")


def _same_epsilon(baselines):
    """The baselines at the design's epsilon (not at 2 eps), subset selection's best d as one curve."""
    figures: dict[str, float] = {}
    for label, value in baselines.items():
        if not label.endswith("at 2 eps"):
            label = "subset selection" if label.startswith("subset selection") else label
            figures[label] = min(value, figures.get(label, math.inf))
    return figures


def mechanism_figure(mechanism, name, epsilons=None, progress=None):
    """A mechanism file's figure: a design (``design_family``, with its provenance) redesigned at each epsilon from
    its stored prior, notion and objective (``design_figure``); a fixed categorical one beside GRR, OUE and OLH over
    its k (``fixed_figure``), and so one built by hand, unless its numbers hold at its own epsilon only (a
    class-symmetric or LIP orbit), which is redesigned."""
    from lipdesign.errors import ValidationError

    def redesigned():
        return design_figure(mechanism.prior, mechanism.notion, getattr(mechanism, "objective", None),
                             {"family": mechanism.design_family}, name, epsilons, progress)

    if mechanism.design_family is not None and mechanism.provenance is not None:
        return redesigned()
    try:  # a mechanism built by hand keeps its parameters, where they hold at every epsilon
        return fixed_figure(mechanism, name, epsilons)
    except ValidationError:
        if mechanism.design_family is None:
            raise
        return redesigned()  # numbers that hold at their own epsilon only (an orbit's levels): redesigned


def fixed_figure(mechanism, name, epsilons=None):
    """n x sum Var at the uniform distribution of a fixed categorical mechanism's family (its other parameters
    kept) and of GRR, OUE and OLH over the same k, at each epsilon (default: ``default_epsilons`` of its own)."""
    from lipdesign.errors import ValidationError
    from lipdesign.mechanisms import family_class

    if mechanism.input_domain.kind != "categorical":
        raise ValidationError(f"mechanism is {mechanism.family}; plot compares categorical mechanisms (a numeric "
                              "family has no frequency oracle to set beside it)")
    families = [mechanism.family, *(family for family in ORACLES if family != mechanism.family)]
    if epsilons is None:
        high = min(family_class(family).epsilon_range[1] for family in families)
        epsilons = default_epsilons(mechanism.epsilon, high)
    parameters = {family: {"k": mechanism.input_domain.k} for family in families}
    parameters[mechanism.family] = mechanism.parameters()
    curves = {family_class(family).__name__: [
        float(np.sum(family_class(family)(**{**parameters[family], "epsilon": epsilon}).variance()))
        for epsilon in epsilons] for family in families}
    return accuracy_figure(epsilons, curves, title=f"{name}: {mechanism.family}, k = {mechanism.input_domain.k}",
                           ylabel=f"{FIGURES['frequencies']} at the uniform distribution")
