"""Multi-attribute designs under LIP at a joint prior (docs/math.md §20.7): SPL's budget split and SMP's budgets and
sampling probabilities that minimise the total variance subject to every attribute's LIP through the tuple, and the
comparison with the LDP protocols at the same per-attribute guarantee. Needs scipy (the design extra)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import InfeasibleError, ValidationError
from lipdesign.mechanisms.multi_attribute import (
    RSFD,
    SMP,
    SPL,
    MultiAttribute,
    grr_full,
    leakage_summary,
    pair_certificate,
    tuple_lip,
)
from lipdesign.mechanisms.rr import grr_mixing_probability
from lipdesign.mechanisms.sampling import implemented_exp
from lipdesign.notions import LIP

if TYPE_CHECKING:
    from lipdesign.mechanisms.multi_attribute import AttributeLeakage
    from lipdesign.model import JointPrior

#: Each step of the exact repair scales every budget by this (docs/math.md §20.7), at most REPAIR_STEPS times.
REPAIR_FACTOR = 1.0 - 2.0**-20
REPAIR_STEPS = 64

#: Bisection steps of SMP's budgets (the interval [eps, 2 eps] shrinks to eps 2^-40).
BISECTION_STEPS = 40


@dataclass(frozen=True)
class MultiAttributeDesign:
    """A multi-attribute mechanism designed under LIP at a joint prior (docs/math.md §20.7).

    Parameters
    ----------
    mechanism : MultiAttribute
        The designed SPL or SMP; its own guarantee is the LDP epsilon of its budgets.
    epsilon : float
        The LIP claim for every attribute at ``prior``.
    prior : JointPrior
        The joint prior the design is for.
    leakage : list of AttributeLeakage
        Every attribute's certificates at ``prior`` against ``epsilon``.
    total_variance : float
        The per-user total variance at the prior's marginals.
    """

    mechanism: MultiAttribute
    epsilon: float
    prior: JointPrior
    leakage: list[AttributeLeakage]
    total_variance: float

    def summary(self) -> str:
        """The design in a few lines: the mechanism, its LDP epsilon, the total variance and every attribute's LIP.

        Returns
        -------
        str
            The lines.
        """
        return (f"{self.mechanism!r}\nLIP claim {self.epsilon:g} per attribute at the joint prior (LDP of the tuple: "
                f"{self.mechanism.verify().epsilon:.6g}; eps-LIP implies at most 2 eps-LDP, docs/math.md §2)\n"
                f"total variance per user {self.total_variance:.6g}\n{leakage_summary(self.leakage)}")


def _checked(prior: Any, epsilon: float) -> float:
    from lipdesign.model import JointPrior

    if not isinstance(prior, JointPrior):
        raise ValidationError(f"prior is {prior!r}; a multi-attribute design needs an ld.JointPrior")
    return LIP(epsilon).epsilon


def _certified(make, budgets, prior, epsilon):
    """The mechanism of ``budgets`` scaled down until every attribute's exact certificate passes."""
    for _ in range(REPAIR_STEPS):
        mechanism = make(budgets)
        leakage = mechanism.attribute_leakage(prior, epsilon)
        if all(row.through_tuple.passed for row in leakage):
            return mechanism, leakage
        budgets = [budget * REPAIR_FACTOR for budget in budgets]
    raise InfeasibleError(f"epsilon is {epsilon:g}; no design passed exact verification after {REPAIR_STEPS} repairs")


def design_spl(prior: JointPrior, epsilon: float) -> MultiAttributeDesign:
    """SPL's budget split minimising the total variance subject to every attribute's LIP through the tuple being at
    most ``epsilon`` at ``prior`` (docs/math.md §20.7), certified exactly.

    Parameters
    ----------
    prior : JointPrior
        The joint prior; its product table must fit ``MAX_TUPLE_ENTRIES`` (the LIP is computed on it).
    epsilon : float
        The LIP claim of every attribute.

    Returns
    -------
    MultiAttributeDesign
        The SPL, its exact certificates and its total variance.

    Raises
    ------
    ValidationError
        ``prior`` is not a JointPrior, or ``epsilon`` is not an epsilon.

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.designer.multi_attribute import design_spl
    >>> prior = ld.JointPrior([[0.4, 0.1], [0.1, 0.4]], names=["a", "b"])
    >>> design = design_spl(prior, 1.0)
    >>> all(row.through_tuple.passed for row in design.leakage)
    True
    >>> design.total_variance < ld.mechanisms.SPL(1.0, [2, 2]).total_variance(prior)
    True
    """
    from scipy.optimize import minimize

    epsilon = _checked(prior, epsilon)
    k = list(prior.k)
    total = 2.0 * epsilon * prior.d  # eps-LIP per attribute bounds no budget above 2 eps (docs/math.md §2)

    def make(budgets):
        return SPL(math.fsum(budgets), k, budgets=list(budgets))

    def variance(budgets):
        return make(np.maximum(budgets, 1e-3)).total_variance(prior)

    def slack(budgets):
        return epsilon - tuple_lip(make(np.maximum(budgets, 1e-3)).tuple_table(), prior)

    start = np.full(prior.d, epsilon / prior.d)
    result = minimize(variance, start, method="SLSQP", bounds=[(1e-3, min(total, 30.0))] * prior.d,
                      constraints=[{"type": "ineq", "fun": slack}], options={"maxiter": 200, "ftol": 1e-10})
    budgets = result.x if result.success and (slack(result.x) >= -1e-9).all() else start
    mechanism, leakage = _certified(make, [float(b) for b in np.maximum(budgets, 1e-3)], prior, epsilon)
    return MultiAttributeDesign(mechanism, epsilon, prior, leakage, mechanism.total_variance(prior))


def design_smp(prior: JointPrior, epsilon: float) -> MultiAttributeDesign:
    """SMP's budgets (each attribute's GRR at the largest epsilon keeping every attribute's LIP at most ``epsilon``)
    and sampling probabilities (proportional to sqrt(A_l), the closed-form optimum) at ``prior`` (docs/math.md
    §20.7), certified exactly at any size.

    Parameters
    ----------
    prior : JointPrior
        The joint prior.
    epsilon : float
        The LIP claim of every attribute.

    Returns
    -------
    MultiAttributeDesign
        The SMP, its exact certificates and its total variance.

    Raises
    ------
    ValidationError
        ``prior`` is not a JointPrior, or ``epsilon`` is not an epsilon.

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.designer.multi_attribute import design_smp
    >>> prior = ld.JointPrior([[0.4, 0.1], [0.1, 0.4]], names=["a", "b"])
    >>> design = design_smp(prior, 1.0)
    >>> all(row.through_tuple.passed for row in design.leakage)
    True
    >>> design.total_variance < ld.mechanisms.SMP(1.0, [2, 2]).total_variance(prior)
    True
    """
    epsilon = _checked(prior, epsilon)
    k = list(prior.k)
    budgets = []
    for reported, size in enumerate(k):
        low, high = epsilon, min(2.0 * epsilon, 30.0)
        for _ in range(BISECTION_STEPS):  # the LIP grows with the budget (docs/math.md §20.7)
            middle = (low + high) / 2
            table = grr_full(grr_mixing_probability(middle, implemented_exp(middle), size), size, True)
            worst = max(pair_certificate(table, prior, j, reported, epsilon).epsilon for j in range(prior.d))
            low, high = (middle, high) if worst <= epsilon else (low, middle)
        budgets.append(low)
    weights = []  # pi_l proportional to sqrt(A_l), A_l = sum_v s_v / (p_l - q_l)^2 = 1 / (p_l - q_l)^2 for GRR
    for size, budget in zip(k, budgets):
        e = math.exp(budget)
        weights.append((e + size - 1) / (e - 1))
    probabilities = [weight / math.fsum(weights) for weight in weights]

    def make(trial):
        return SMP(max(trial), k, budgets=list(trial), probabilities=probabilities)

    mechanism, leakage = _certified(make, budgets, prior, epsilon)
    return MultiAttributeDesign(mechanism, epsilon, prior, leakage, mechanism.total_variance(prior))


def compare_multi_attribute(prior: JointPrior, epsilon: float) -> list[dict[str, Any]]:
    """The total variance of SPL, SMP and RS+FD (GRR, UE-zero, UE-random) at ``epsilon`` beside the LIP designs,
    with every attribute's LIP at ``prior`` (largest over attributes, exact or a valid bound), docs/math.md §20.7.

    Parameters
    ----------
    prior : JointPrior
        The joint prior.
    epsilon : float
        The LDP epsilon of the protocols (RS+FD: the paper's) and the LIP claim of the designs.

    Returns
    -------
    list of dict
        Per mechanism: ``name``, ``mechanism``, ``total_variance`` (per user), ``max_lip`` (the largest attribute
        LIP through the tuple) and ``exact`` (whether every figure is exact).

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.designer.multi_attribute import compare_multi_attribute
    >>> prior = ld.JointPrior([[0.4, 0.1], [0.1, 0.4]], names=["a", "b"])
    >>> rows = compare_multi_attribute(prior, 1.0)
    >>> [row["name"] for row in rows]
    ['SPL', 'SMP', 'RS+FD[GRR]', 'RS+FD[OUE-z]', 'RS+FD[OUE-r]', 'LIP-SPL', 'LIP-SMP']
    """
    epsilon = _checked(prior, epsilon)
    k = list(prior.k)
    mechanisms: list[tuple[str, MultiAttribute]] = [
        ("SPL", SPL(epsilon, k)), ("SMP", SMP(epsilon, k)), ("RS+FD[GRR]", RSFD(epsilon, k)),
        ("RS+FD[OUE-z]", RSFD(epsilon, k, "ue-zero")), ("RS+FD[OUE-r]", RSFD(epsilon, k, "ue-random")),
        ("LIP-SPL", design_spl(prior, epsilon).mechanism), ("LIP-SMP", design_smp(prior, epsilon).mechanism)]
    rows = []
    for name, mechanism in mechanisms:
        leakage = mechanism.attribute_leakage(prior, epsilon)
        rows.append({"name": name, "mechanism": mechanism, "total_variance": mechanism.total_variance(prior),
                     "max_lip": max(row.through_tuple.epsilon for row in leakage),
                     "exact": all(row.method.startswith("exact") for row in leakage)})
    return rows


__all__ = ["MultiAttributeDesign", "compare_multi_attribute", "design_smp", "design_spl"]
