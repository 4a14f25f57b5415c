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
    MAX_TUPLE_ENTRIES,
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
from lipdesign.validation import MAX_EPSILON

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy.typing as npt

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
                f"{self.mechanism.verify().epsilon:.6g}; LIP per attribute protects each attribute, not the tuple, so "
                f"this can exceed 2 eps, docs/math.md §20.7)\n"
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


def _tight(largest: Callable[[npt.NDArray[np.float64]], float], shares: npt.NDArray[np.float64], epsilon: float,
           top: float) -> npt.NDArray[np.float64]:
    """``shares`` scaled by the largest factor whose split keeps every attribute ``epsilon``-LIP (bisection; the LIP
    grows with every budget, docs/math.md §20.7), no budget above ``top``."""
    low, high = 0.0, top / float(shares.max())
    if largest(high * shares) <= epsilon:
        return high * shares
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2
        low, high = (middle, high) if largest(middle * shares) <= epsilon else (low, middle)
    return np.maximum(low * shares, SPL_FLOOR)


#: The smallest budget ``design_spl`` gives an attribute.
SPL_FLOOR = 1e-3


def design_spl(prior: JointPrior, epsilon: float) -> MultiAttributeDesign:
    """SPL's budget split minimising the total variance subject to every attribute's LIP through the tuple being at
    most ``epsilon`` at ``prior`` (docs/math.md §20.7), certified exactly.

    SLSQP on the logarithms of the budgets with the logarithm of the total variance as objective and one smooth
    constraint per attribute, value and joint report (the log posterior ratio within +-``epsilon``), from d + 1
    starts: the equal split and the d splits with one attribute's share doubled, each scaled up until the largest
    attribute LIP reaches ``epsilon``. The best feasible point (starts included) is certified exactly, and scaled
    down by 1 - 2^-20 at a time if rounding left a constraint above ``epsilon``.

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
    k, d = list(prior.k), prior.d
    top = min(2.0 * epsilon, MAX_EPSILON)  # eps-LIP of X_j bounds GRR_j's budget by 2 eps (docs/math.md §2)

    def make(budgets):
        budgets = np.maximum(np.asarray(budgets, dtype=float), SPL_FLOOR)
        total = math.fsum(budgets)
        if total > MAX_EPSILON:  # outside SPL's range: evaluated scaled into it (the constraint below excludes it)
            budgets = budgets * (MAX_EPSILON / total) * (1 - 2.0**-40)
            total = math.fsum(budgets)
        return SPL(total, k, budgets=list(budgets))

    def lips(budgets):
        return tuple_lip(make(budgets).tuple_table(), prior)

    def largest(budgets):
        return float(lips(budgets).max())

    conditionals = np.vstack([prior.secret(j).conditional for j in range(d)])  # (sum k, K)

    def ratios(x):  # per attribute, value and joint report, the log posterior ratio: smooth in x (docs/math.md §20.7)
        table = make(np.exp(x)).tuple_table()
        logs = np.log((conditionals @ table) / (prior.flat.probabilities @ table)).ravel()
        return np.concatenate([epsilon - logs, epsilon + logs])

    constraints = [{"type": "ineq", "fun": ratios},
                   {"type": "ineq", "fun": lambda x: MAX_EPSILON - np.exp(x).sum()}]
    starts = [_tight(largest, np.full(d, 1.0 / d), epsilon, top)]
    starts += [_tight(largest, np.where(np.arange(d) == j, 2.0, 1.0) / (d + 1), epsilon, top) for j in range(d)]
    best, best_variance = starts[0], make(starts[0]).total_variance(prior)
    for start in starts:
        result = minimize(lambda x: math.log(make(np.exp(x)).total_variance(prior)), np.log(start), method="SLSQP",
                          bounds=[(math.log(SPL_FLOOR), math.log(top))] * d, constraints=constraints,
                          options={"maxiter": 200, "ftol": 1e-12})
        for candidate in (start, np.exp(result.x)):
            variance = make(candidate).total_variance(prior)
            if largest(candidate) <= epsilon + 1e-9 and candidate.sum() <= MAX_EPSILON and variance < best_variance:
                best, best_variance = candidate, variance
    mechanism, leakage = _certified(make, [float(b) for b in np.maximum(best, SPL_FLOOR)], prior, epsilon)
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


#: Recalibration (``recalibrate``): floating-point bisection steps on the protocol's epsilon, then the bracket is
#: widened by this relative margin on each side and both ends are certified exactly.
RECALIBRATION_STEPS = 60
RECALIBRATION_MARGIN = 1e-9


@dataclass(frozen=True)
class Recalibration:
    """An LDP protocol run at the largest epsilon whose every attribute is at most ``target``-LIP through the tuple at
    a joint prior (``recalibrate``, docs/math.md §20.8).

    Parameters
    ----------
    mechanism : MultiAttribute
        The protocol at ``epsilon``.
    epsilon : float
        The protocol's own epsilon parameter (RS+FD: the paper's eps), the lower end of the certified bracket.
    target : float
        The per-attribute LIP level.
    leakage : list of AttributeLeakage
        Every attribute's certificates at ``epsilon`` against ``target`` (all pass).
    failing_epsilon : float or None
        The upper end of the bracket, at which some attribute's certificate fails (None: the top of the protocol's
        range passes).
    total_variance : float
        The per-user total variance at the prior's marginals.
    """

    mechanism: MultiAttribute
    epsilon: float
    target: float
    leakage: list[AttributeLeakage]
    failing_epsilon: float | None
    total_variance: float

    @property
    def exact(self) -> bool:
        """Whether every attribute's certificate is exact (not a valid bound)."""
        return all(row.method.startswith("exact") for row in self.leakage)


def _largest_lip(mechanism: MultiAttribute, prior: JointPrior) -> float:
    """The largest attribute LIP through the tuple: in floating point on the product table where it fits, else the
    family's certificate (exact for SMP, a valid bound otherwise)."""
    if math.prod(mechanism.k) * mechanism._outputs() <= MAX_TUPLE_ENTRIES:
        return float(mechanism.attribute_lip(prior).max())
    return max(row.through_tuple.epsilon for row in mechanism.attribute_leakage(prior))


def recalibrate(build: Callable[[float], MultiAttribute], prior: JointPrior, target: float,
                high: float) -> Recalibration:
    """The largest epsilon in (0, ``high``] at which ``build(epsilon)`` keeps every attribute ``target``-LIP through
    the tuple at ``prior`` (docs/math.md §20.8): bisection in floating point on the product table (or the family's
    certificate past ``MAX_TUPLE_ENTRIES``), then the bracket [lo (1 - 1e-9), hi (1 + 1e-9)] certified exactly at
    both ends, the lower end stepped down until its certificates pass.

    Parameters
    ----------
    build : callable
        Epsilon -> the protocol (e.g. ``lambda eps: SPL(eps, k)``); every attribute's LIP must grow with epsilon.
    prior : JointPrior
        The joint prior.
    target : float
        The per-attribute LIP level.
    high : float
        The largest epsilon tried (the protocol's range, or a bound from eps-LIP implying 2 eps-LDP).

    Returns
    -------
    Recalibration
        The protocol at the lower end, its certificates, the failing upper end and the total variance.

    Raises
    ------
    InfeasibleError
        No epsilon passed exact certification.

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.designer.multi_attribute import recalibrate
    >>> prior = ld.JointPrior([[0.4, 0.1], [0.1, 0.4]], names=["a", "b"])
    >>> result = recalibrate(lambda eps: ld.mechanisms.SPL(eps, [2, 2]), prior, 1.0, 4.0)
    >>> round(result.epsilon, 6), round(max(row.through_tuple.epsilon for row in result.leakage), 6)
    (1.894992, 1.0)
    >>> result.failing_epsilon > result.epsilon, result.exact
    (True, True)
    """
    target = _checked(prior, target)
    high = float(high)
    low, top = 0.0, high
    if _largest_lip(build(high), prior) <= target:
        low = high
    else:
        for _ in range(RECALIBRATION_STEPS):
            middle = (low + top) / 2
            low, top = (middle, top) if _largest_lip(build(middle), prior) <= target else (low, middle)
            if low > 0 and top - low <= RECALIBRATION_MARGIN * low:
                break
        if low == 0.0:
            raise InfeasibleError(f"target is {target:g}; no epsilon down to {top:.3g} keeps every attribute "
                                  f"{target:g}-LIP")
    epsilon = low if low == high else low * (1 - RECALIBRATION_MARGIN)
    for _ in range(REPAIR_STEPS):  # the lower end: stepped down until every exact certificate passes
        mechanism = build(epsilon)
        leakage = mechanism.attribute_leakage(prior, target)
        if all(row.through_tuple.passed for row in leakage):
            break
        top, epsilon = epsilon, epsilon * REPAIR_FACTOR
    else:
        raise InfeasibleError(f"target is {target:g}; no epsilon passed exact verification after {REPAIR_STEPS} "
                              "steps")
    failing = None
    while epsilon < high:  # the upper end: certified to fail (the float bracket is wider than rounding)
        upper = min(high, max(top, epsilon) * (1 + RECALIBRATION_MARGIN))
        upper_leakage = build(upper).attribute_leakage(prior, target)
        if not all(row.through_tuple.passed for row in upper_leakage):
            failing = upper
            break
        mechanism, epsilon, leakage, top = build(upper), upper, upper_leakage, upper * (1 + 2.0**-20)
    return Recalibration(mechanism, epsilon, target, leakage, failing, mechanism.total_variance(prior))


def protocols(k: Sequence[int]) -> list[tuple[str, Callable[[float], MultiAttribute], float]]:
    """The LDP protocols compared (docs/math.md §20.7): name, epsilon -> mechanism, and the top of its epsilon range."""
    return [("SPL", lambda eps: SPL(eps, k), 30.0), ("SMP", lambda eps: SMP(eps, k), 30.0),
            ("RS+FD[GRR]", lambda eps: RSFD(eps, k), 10.0),
            ("RS+FD[OUE-z]", lambda eps: RSFD(eps, k, "ue-zero"), 10.0),
            ("RS+FD[OUE-r]", lambda eps: RSFD(eps, k, "ue-random"), 10.0)]


def compare_multi_attribute(prior: JointPrior, epsilon: float, recalibrated: bool = True) -> list[dict[str, Any]]:
    """The total variance of SPL, SMP and RS+FD (GRR, UE-zero, UE-random) beside the LIP designs at ``epsilon``, with
    every attribute's LIP at ``prior`` (largest over attributes, exact or a valid bound), docs/math.md §20.7-§20.8.

    Each protocol appears at its nominal epsilon (``epsilon`` as its own parameter: its per-attribute LIP may be
    above ``epsilon``, RS+FD[GRR], or below, SPL and SMP) and, with ``recalibrated``, at the largest epsilon whose
    every attribute is ``epsilon``-LIP at the prior (``recalibrate``): the same per-attribute guarantee as the
    designs.

    Parameters
    ----------
    prior : JointPrior
        The joint prior.
    epsilon : float
        The nominal epsilon of the protocols (RS+FD: the paper's) and the per-attribute LIP level of the designs and
        the recalibrated protocols.
    recalibrated : bool, default True
        Add the recalibrated rows.

    Returns
    -------
    list of dict
        Per row: ``name``, ``setting`` ("nominal", "recalibrated" or "LIP design"), ``mechanism``,
        ``parameter`` (the protocol's epsilon parameter; None for a design), ``ldp_epsilon`` (the exact LDP
        certificate of the tuple), ``total_variance`` (per user), ``max_lip`` (the largest attribute LIP through the
        tuple) and ``exact`` (whether every LIP figure is exact, not a valid bound).

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.designer.multi_attribute import compare_multi_attribute
    >>> prior = ld.JointPrior([[0.4, 0.1], [0.1, 0.4]], names=["a", "b"])
    >>> rows = compare_multi_attribute(prior, 1.0)
    >>> [(row["name"], row["setting"]) for row in rows][:3]
    [('SPL', 'nominal'), ('SPL', 'recalibrated'), ('SMP', 'nominal')]
    >>> [row["name"] for row in rows if row["setting"] == "LIP design"]
    ['LIP-SPL', 'LIP-SMP']
    >>> all(row["max_lip"] <= 1.0 for row in rows if row["setting"] != "nominal")
    True
    """
    epsilon = _checked(prior, epsilon)
    k = list(prior.k)
    rows = []

    def row(name, setting, mechanism, parameter, leakage):
        return {"name": name, "setting": setting, "mechanism": mechanism, "parameter": parameter,
                "ldp_epsilon": mechanism.verify().epsilon, "total_variance": mechanism.total_variance(prior),
                "max_lip": max(line.through_tuple.epsilon for line in leakage),
                "exact": all(line.method.startswith("exact") for line in leakage)}

    for name, build, high in protocols(k):
        mechanism = build(epsilon)
        rows.append(row(name, "nominal", mechanism, epsilon, mechanism.attribute_leakage(prior, epsilon)))
        if recalibrated:
            result = recalibrate(build, prior, epsilon, high)
            rows.append(row(name, "recalibrated", result.mechanism, result.epsilon, result.leakage))
    for name, design in (("LIP-SPL", design_spl(prior, epsilon)), ("LIP-SMP", design_smp(prior, epsilon))):
        rows.append(row(name, "LIP design", design.mechanism, None, design.leakage))
    return rows


__all__ = ["MultiAttributeDesign", "Recalibration", "compare_multi_attribute", "design_smp", "design_spl", "protocols",
           "recalibrate"]
