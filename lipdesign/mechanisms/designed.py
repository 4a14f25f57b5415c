"""What the designed families share (docs/math.md §2, §11): ``DesignedMechanism``, the base of the mechanisms
``ld.design`` makes at a prior (tables, unary encoding, local hashing), with one summary skeleton whose sections
each family fills in, and the lines of those summaries."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.base import Mechanism, verify
from lipdesign.model import PriorSet
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.validation import upward

if TYPE_CHECKING:  # annotations only: nothing more is imported at run time
    from lipdesign.model import Prior
    from lipdesign.verification import Certificate

#: The TV distance from the design prior at which a summary shows the worst LIP.
SUMMARY_DRIFT = 0.1


class DesignedMechanism(Mechanism):
    """A mechanism designed at a prior under a notion (docs/math.md §2, §11): the base of what ``ld.design`` makes.

    It holds ``prior`` and ``notion``, the exactly verified claim and its ``epsilons`` by name, the design's
    ``provenance`` (its ``baselines`` and ``optimality``), and ``mse``, its figure at the design prior. A family
    verifies its claim in ``__init__`` and calls ``_record``; it computes its figure in ``_design_figure`` (on first
    use) and fills in the sections of ``summary``. The designed families are ``TableMechanism`` (family
    ``"table"``), ``UnaryEncoding`` (``"unary"``) and ``LocalHashing`` (``"hashing"``).

    See Also
    --------
    lipdesign.design : Design the optimal mechanism at a prior.
    lipdesign.mechanisms.Mechanism : The contract every mechanism keeps.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0))
    >>> isinstance(mechanism, ld.mechanisms.DesignedMechanism)
    True
    >>> mechanism.prior, mechanism.notion
    (Prior([0.5, 0.3, 0.2], labels=[0, 1, 2]), LIP(epsilon=1.0, secret=None, prior_set=None))
    >>> {name: round(value, 4) for name, value in mechanism.epsilons.items()}
    {'claimed': 1.0, 'LIP for X': 1.0, 'LDP': 2.0}
    >>> round(mechanism.mse, 3)
    1.284
    """

    #: What the summary says the guarantee was verified on.
    verified_on = "the realised sampler"
    #: What the family offers beside the optimal table, for the summary's baselines (docs/math.md §7.3).
    value_beside_baselines = ""
    #: Set by every designed family's constructor (annotations only).
    prior: Prior
    notion: LDP | LIP | WorstCaseLIP
    epsilons: Mapping[str, float]
    provenance: Mapping[str, Any]

    def _record(self, claimed: Certificate, epsilons: Mapping[str, float],
                provenance: Mapping[str, Any] | None) -> None:
        """Keep the verified ``claimed`` Certificate, the ``epsilons`` by name and the design ``provenance``."""
        self._claimed = claimed
        self.epsilons = MappingProxyType(dict(epsilons))
        self.provenance = MappingProxyType(dict(provenance or {}))

    # mypy: Mechanism declares ``epsilon`` as the attribute the fixed families' constructors set; a designed family
    # derives it, read-only, from its notion (a read-only property over a writeable attribute is refused by mypy)
    @property
    def epsilon(self) -> float:  # type: ignore[override]
        """The claimed epsilon: the notion's (``notion.epsilon``).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0)).epsilon
        1.0
        """
        return self.notion.epsilon

    @property
    def default_method(self) -> str:
        """"unbiased" for a population design, "mmse" (the posterior mean) for a Bayesian one.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.Prior([0.5, 0.3, 0.2])
        >>> ld.design(prior, ld.LIP(1.0)).default_method
        'unbiased'
        >>> ld.design(prior, ld.LIP(1.0), "histogram").default_method
        'mmse'
        """
        objective = getattr(self, "objective", None)
        return "unbiased" if objective is None or objective.population else "mmse"

    def _certify(self) -> Certificate:
        return self._claimed

    def verified_epsilons(self) -> dict[str, float]:
        return dict(self.epsilons)

    @property
    def baselines(self) -> dict[str, float]:
        """The figures of the alternatives the design evaluated at the same prior, by name (provenance).

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0))
        >>> round(mechanism.baselines["GRR"], 2), round(mechanism.mse, 2)
        (4.36, 1.28)
        """
        return dict(self.provenance.get("baselines", {}))

    @property
    def optimality(self) -> dict[str, Any] | None:
        """The design's figure beside the best valid lower bound, the relative gap and the bound's name (docs/math.md
        §11), as the design recorded it; None where it recorded none.

        Examples
        --------
        >>> import lipdesign as ld
        >>> optimality = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0)).optimality
        >>> sorted(optimality)
        ['bound', 'bounds', 'gap', 'lower_bound', 'variance']
        >>> optimality["gap"] < 1e-6
        True
        """
        return self.provenance.get("optimality")

    @cached_property
    def mse(self) -> float:
        """The figure the design minimised, at the design prior (``_design_figure``; docs/math.md §4, §11)."""
        return self._design_figure()

    def _design_figure(self) -> float:
        raise NotImplementedError

    # -- the summary: one skeleton, a section per hook -------------------------------------------------------------
    def summary(self) -> str:
        """What the design guarantees and where that was verified, how accurate it is beside its lower bound and the
        alternatives the design evaluated, and how the guarantee depends on the prior being right (docs/math.md §2,
        §11).

        Returns
        -------
        str
            The summary, one section per line or group of lines, as the CLI prints it.

        Examples
        --------
        >>> import lipdesign as ld
        >>> print(ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0)).summary())
        LIP eps=1, k=3, ... outputs, designed for Frequencies
          guarantee (exactly verified on the table the sampler realises, rounded up): LIP for X 1, LDP for X 2
          eps-LIP for X holds at the design prior; it implies at most 2 eps-LDP, whatever the prior (docs/math.md §2)
          accuracy: ...
          if X's prior is off by up to TV 0.1 from the design prior: LIP for X at worst ...
        """
        lines = [self._summary_title(),
                 f"  guarantee (exactly verified on {self.verified_on}, rounded up): " +
                 labelled_epsilons(self.epsilons, self.notion, upward),
                 *notion_lines(self.notion, self.epsilons), *self._summary_notes(), *self._summary_accuracy()]
        optimality = self.optimality
        if optimality and optimality.get("lower_bound") is not None:
            lines.append(f"    lower bound {optimality['lower_bound']:.6g} ({optimality['bound']}), gap "
                         f"{optimality['gap']:.2e}")
        lines += self._summary_baselines()
        lines += self._summary_details()
        lines += self._summary_drift()
        return "\n".join(lines)

    def _summary_title(self) -> str:
        raise NotImplementedError

    def _summary_notes(self) -> list[str]:
        """Warnings on what the guarantee covers (after the notion's lines)."""
        return []

    def _summary_accuracy(self) -> list[str]:
        raise NotImplementedError

    def _summary_baselines(self) -> list[str]:
        return baseline_lines(self.baselines, self.epsilon, self.value_beside_baselines, self.notion.kind)

    def _summary_details(self) -> list[str]:
        """Family-specific lines after the baselines."""
        return []

    def _summary_drift(self) -> list[str]:
        """Under LIP, the worst LIP over the TV ball of radius SUMMARY_DRIFT around the design prior, exactly
        (``drift_lines``), or where the ball is too large to list, a line that says how to compute it."""
        if not isinstance(self.notion, LIP):
            return []
        try:  # a ball's vertices are listed, which limits k (PriorSet's vertex budget)
            worst = verify(self, prior=PriorSet.tv_ball(self.prior.probabilities, SUMMARY_DRIFT)).epsilon
        except ValidationError:
            return [f"  at another prior LIP may be larger (never above the LDP level "
                    f"{upward(self.epsilons['LDP'], 4)}): ld.verify(mech, prior=...) computes it exactly"]
        secret = getattr(self.notion, "secret", None)
        return drift_lines("the secret" if secret is not None else "X", SUMMARY_DRIFT, worst, self.epsilon,
                           self.epsilons["LDP"])


def described(prior_set: PriorSet) -> str:
    """A prior set in words, for summaries."""
    if prior_set.kind == "tv_ball":
        return f"set, the TV ball of radius {prior_set.parameters['radius']:.3g} around its centre"
    if prior_set.kind == "box":
        return "set, a box of per-value intervals"
    return f"set ({prior_set.kind}, {len(prior_set.vertices)} vertices)"


def notion_lines(notion: LDP | LIP | WorstCaseLIP, epsilons: Mapping[str, float]) -> list[str]:
    """What the notion protects, in words (docs/math.md §2)."""
    secret = getattr(notion, "secret", None)
    if isinstance(notion, LDP):
        return ["  eps-LDP holds whatever the prior (and so does eps-LIP, docs/math.md §2)"]
    if isinstance(notion, WorstCaseLIP):
        if secret is None:
            return ["  WC-LIP for X holds at every prior of X: it is eps-LDP (docs/math.md §2)"]
        return [f"  WC-LIP protects the latent secret ({secret.m} values) at every prior of X, not X itself: X is "
                f"only LIP {upward(epsilons['LIP for X'], 4)} at the design prior (docs/math.md §2)"]
    if secret is not None:
        return [f"  {notion.kind} protects the latent secret ({secret.m} values) at the design prior, not X: X itself "
                f"is only LIP {upward(epsilons['LIP for X'], 4)} there (docs/math.md §2)"]
    prior_set = getattr(notion, "prior_set", None)
    if prior_set is not None:
        return [f"  eps-LIP for X holds at every prior of the {described(prior_set)} (bounded-prior LIP); it "
                "implies at most 2 eps-LDP, whatever the prior (docs/math.md §2)"]
    return ["  eps-LIP for X holds at the design prior; it implies at most 2 eps-LDP, whatever the prior "
            "(docs/math.md §2)"]


def labelled_epsilons(epsilons: Mapping[str, float], notion: LDP | LIP | WorstCaseLIP,
                      show: Callable[[float], Any]) -> str:
    """``name value, ...`` of a designed mechanism's verified ``epsilons``, each named by the variable it protects
    (the claim is the secret's under a latent secret, X's otherwise; LDP always protects X); ``show`` formats a
    value."""
    protected = "X" if getattr(notion, "secret", None) is None else "the secret"
    names = {"claimed": f"{notion.kind} for {protected} (claimed)", "LDP": "LDP for X"}
    shown = {names.get(name, name): value for name, value in epsilons.items()}
    if f"{notion.kind} for {protected}" in shown:  # the claim is there under its own name
        shown.pop(names["claimed"])
    return ", ".join(f"{name} {show(value)}" for name, value in shown.items())


def drift_lines(protected: str, drift: float, worst: float, epsilon: float, ldp: float) -> list[str]:
    """The summary's lines on a design prior that is off by up to TV ``drift``: the worst LIP for ``protected`` ("X"
    or "the secret") over that ball, exactly verified, and a warning when it reaches twice the designed ``epsilon``
    (docs/math.md §2: LIP rests on the prior; ``ldp`` is X's LDP level, above every prior's LIP)."""
    lines = [f"  if X's prior is off by up to TV {drift:g} from the design prior: LIP for {protected} at worst "
             + f"{upward(worst, 4)} (never above X's LDP level {upward(ldp, 4)}); "
             "ld.verify(mech, prior=...) for others"]
    if worst >= 2 * epsilon:
        lines.append(f"  WARNING: LIP for {protected} jumps from {epsilon:g} to {upward(worst, 4)} if X's prior is off "
                     f"by TV {drift:g}: the guarantee holds at the design prior; to hold it near there, design over a "
                     f"prior set (ld.LIP(eps, prior_set=ld.PriorSet.tv_ball(prior, {drift:g})); with a secret, "
                     "family 'rr')")
    return lines



def baseline_lines(baselines: Mapping[str, float], epsilon: float, value: str, kind: str = "LIP") -> list[str]:
    """Summary lines of an encoding's baselines (n x sum Var by name), grouped by guarantee: for an LIP design the
    same eps-LIP, eps-LDP (stronger), 2 eps-LDP (the level eps-LIP implies); for an LDP design all at the same
    eps-LDP; ``value`` says what the encoding offers instead (docs/math.md §7.3)."""
    groups: tuple[tuple[str, Callable[[str], bool]], ...] = (
        ("the same eps-LIP", lambda name: "LIP" in name),
        (f"eps={epsilon:g}-LDP (stronger)", lambda name: "LIP" not in name and "2 eps" not in name),
        (f"{2 * epsilon:g}-LDP (the LDP level eps-LIP implies)", lambda name: "2 eps" in name))
    if kind == "LDP":
        groups = ((f"the same eps={epsilon:g}-LDP", lambda name: True),)
    lines = []
    for heading, member in groups:
        row = sorted(((name.replace(" at 2 eps", ""), figure) for name, figure in baselines.items() if member(name)),
                     key=lambda item: item[1])
        if row:
            lines.append(f"    at {heading}: " + ", ".join(f"{name} {figure:.4g}" for name, figure in row))
    if baselines:
        lines.append("    (the optimal RR table does at least as well as any encoding under the same notion; "
                     f"{value}, docs/math.md §7.3)")
    return lines
