"""Choosing a family: ``compare(prior, notion, objective)`` designs every family that applies and sets their figures,
bounds, report sizes, client costs and design times side by side (docs/math.md §7.3)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign._solvers.threads import one_thread
from lipdesign.designer.bounds import bayes_histogram_bound, per_bin_bound, relaxation_dual_bound
from lipdesign.designer.columns import MAX_ROUNDS, TARGET_GAP, TIME_LIMIT
from lipdesign.designer.design import FAMILIES, design
from lipdesign.designer.rays import MAX_RAYS
from lipdesign.errors import LipdesignError, ValidationError
from lipdesign.mechanisms.base import Mechanism
from lipdesign.model import Prior
from lipdesign.notions import LIP
from lipdesign.objectives import Frequencies, as_objective
from lipdesign.progress import ProgressLine

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    import numpy.typing as npt

    from lipdesign.notions import LDP, WorstCaseLIP
    from lipdesign.objectives import BayesHistogram, BayesSum, Mean

#: What each family is, in the table.
NAMES = {"rr": "randomized response (optimal table)", "unary": "unary encoding", "hashing": "local hashing (g = 2)",
         "cms": "count-mean sketch"}


@dataclass(frozen=True)
class Row:
    """One family in a comparison: the mechanism designed (None when the family does not apply or could not be
    designed, ``note`` then says why), its figure of the objective at the design prior, its own lower bound (the
    best valid one its design certifies), the report size, the client's cost and the design time."""

    family: str
    mechanism: Mechanism | None
    figure: float | None
    lower_bound: float | None
    report_bits: int | None
    client_cost: str
    seconds: float
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-ready data (the mechanism by its family id).

        Returns
        -------
        dict
            family, mechanism, figure, lower_bound, report_bits, client_cost, seconds and note.
        """
        return {"family": self.family, "mechanism": None if self.mechanism is None else self.mechanism.family,
                "figure": self.figure, "lower_bound": self.lower_bound, "report_bits": self.report_bits,
                "client_cost": self.client_cost, "seconds": self.seconds, "note": self.note}


class Comparison:
    """Every family designed for one problem, side by side: what ``compare`` returns (docs/math.md §7.3).

    The rows of ``compare`` (one per family, in FAMILIES order), the notion and objective they were designed
    for, and ``bound``: the best lower bound valid for EVERY mechanism of the notion (docs/math.md §10, §11).
    ``print(comparison)`` shows the table; ``best`` is the row with the lowest figure. Each row has ``family``,
    ``mechanism`` (None when the family does not apply or could not be designed, ``note`` then says why),
    ``figure``, ``lower_bound`` (the best bound its own design certifies), ``report_bits``, ``client_cost``,
    ``seconds`` (the design time) and ``note``.

    Parameters
    ----------
    rows : iterable of Row
        One row per family, in the order shown.
    prior : Prior
        The design prior.
    notion : LIP, WorstCaseLIP or LDP
        The notion every row was designed under.
    objective : Frequencies, Mean, BayesHistogram or BayesSum
        The objective whose figure the rows show.
    bound : float or None
        A lower bound on the figure of every mechanism of the notion at the prior, or None when none applies.
    bound_name : str
        Where ``bound`` comes from ("" without one).

    See Also
    --------
    compare : designs the rows.

    Examples
    --------
    >>> import lipdesign as ld
    >>> comparison = ld.compare(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0), families=["rr", "unary"])
    >>> comparison.best.family
    'rr'
    >>> [(row.family, round(row.figure, 3)) for row in comparison.rows]
    [('rr', 1.284), ('unary', 6.606)]
    >>> round(comparison.bound, 4), comparison.bound_name
    (1.2843, "the RR design's certificate")
    """

    def __init__(self, rows: Iterable[Row], prior: Prior, notion: LDP | LIP | WorstCaseLIP,
                 objective: Frequencies | Mean | BayesHistogram | BayesSum, bound: float | None,
                 bound_name: str) -> None:
        self.rows, self.prior, self.notion, self.objective = tuple(rows), prior, notion, objective
        self.bound, self.bound_name = bound, bound_name

    @property
    def best(self) -> Row | None:
        """The row with the lowest figure (None when no family was designed)."""
        designed = [row for row in self.rows if row.figure is not None]
        return min(designed, key=lambda row: cast(float, row.figure)) if designed else None

    def summary(self) -> str:
        """The comparison as a table (what ``print(comparison)`` shows).

        One line per family: its figure, the ratio to the best, the gap to ``bound``, the report size in bits, the
        design time and the client's cost (or why the family was not designed); then the bound and the guarantee
        every row shares.

        Returns
        -------
        str
            The table, one line per row.
        """
        figure = ("n x sum Var of the unbiased estimate, at the design prior, given the users' values"
                  if self.objective.population else f"the MSE of the posterior mean ({self.objective.kind})")
        lines = [(f"{self.notion.kind} eps={self.notion.epsilon:g}, k={self.prior.k}: every family under the same "
                  f"notion; figure = {figure} (lower is better)")]
        header = f"{'family':<46} {'figure':>10} {'vs best':>8} {'gap':>7} {'bits':>5} {'design s':>8}  client"
        lines += [header, "-" * (len(header) + 30)]
        best = self.best
        for row in self.rows:
            name = NAMES[row.family] if row.mechanism is None else row.mechanism.display_name()
            if row.figure is None:
                lines.append(f"{name:<46} {'-':>10} {'':>8} {'':>7} {'':>5} {row.seconds:8.2f}  {row.note}")
                continue
            assert best is not None and best.figure is not None  # a row with a figure makes a best row
            ratio = f"{row.figure / best.figure:7.2f}x" if best.figure > 0 else ("1.00x" if row.figure == 0 else "inf")
            gap = ("" if self.bound is None or row.figure == 0
                   else f"{max(0.0, (row.figure - self.bound) / row.figure):7.1%}")
            bits = "" if row.report_bits is None else str(row.report_bits)
            lines.append(f"{name:<46} {row.figure:10.4g} {ratio:>8} {gap:>7} {bits:>5} {row.seconds:8.2f}  "
                         f"{row.client_cost}" + (f"; {row.note}" if row.note else ""))
        if self.bound is not None:
            lines.append(f"gap: to {self.bound:.6g}, a lower bound over every {self.notion.kind} "
                         f"eps={self.notion.epsilon:g} mechanism ({self.bound_name})")
        if isinstance(self.notion, LIP) and self.notion.secret is not None:
            lines.append("eps-LIP holds for the latent secret at the design prior; X itself may be released more "
                         "freely (docs/math.md §2); every row here has the same guarantee")
        elif isinstance(self.notion, LIP):
            lines.append("eps-LIP holds at the design prior and implies at most 2 eps-LDP (docs/math.md §2); every "
                         "row here has the same guarantee")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return f"Comparison({', '.join(f'{row.family}={row.figure}' for row in self.rows)})"

    def to_dict(self) -> dict[str, Any]:
        """The comparison as JSON-ready data (the CLI's ``compare --json``).

        Returns
        -------
        dict
            notion, objective (its kind), k, bound, bound_name and rows (each row's ``to_dict``).

        Examples
        --------
        >>> import json
        >>> import lipdesign as ld
        >>> comparison = ld.compare([0.5, 0.3, 0.2], ld.LDP(1.0), families=["rr"])
        >>> data = comparison.to_dict()
        >>> data["objective"], data["k"], data["rows"][0]["mechanism"]
        ('frequencies', 3, 'table')
        >>> text = json.dumps(data)
        """
        return {"notion": self.notion.to_dict(), "objective": self.objective.kind, "k": self.prior.k,
                "bound": self.bound, "bound_name": self.bound_name, "rows": [row.to_dict() for row in self.rows]}


def _figure(mechanism, prior, objective):
    """The figure of ``objective`` at the design prior: the designed families' own ``mse``, or the variance of a
    fixed protocol's unbiased estimate given the users' values (docs/math.md §8)."""
    if hasattr(mechanism, "mse"):
        return float(mechanism.mse)
    if objective.kind != "frequencies":
        return None
    if hasattr(mechanism, "variance_at"):  # a sketch over the labels as strings (docs/math.md §16.4)
        return float(np.sum(mechanism.variance_at(prior)))
    return float(np.sum(mechanism.variance(prior.probabilities)))


def _own_bound(mechanism):
    optimality = getattr(mechanism, "optimality", None)
    return None if not optimality else optimality.get("lower_bound")


@one_thread
def compare(prior: Prior | npt.ArrayLike, notion: LDP | LIP | WorstCaseLIP,
            objective: Frequencies | Mean | BayesHistogram | BayesSum | str | Mapping[str, Any] | None = None, *,
            families: Iterable[str] = FAMILIES, max_rays: int = MAX_RAYS,
            progress: Callable[[str], object] | None = None, buckets: int = 2, method: str = "auto",
            target_gap: float = TARGET_GAP, max_rounds: int = MAX_ROUNDS,
            time_limit: float = TIME_LIMIT) -> Comparison:
    """Design every family for one problem and set them side by side: what to deploy (docs/math.md §7.3).

    Designs every family of ``families`` (default all: "rr", "unary", "hashing", "cms") for ``prior`` under
    ``notion`` for ``objective`` (default ld.Frequencies()), as ``ld.design`` would, and returns a ``Comparison``:
    each family's figure, its gap to the best lower bound valid for every mechanism of the notion, its report size,
    its client's cost and its design time. A family that does not apply, or cannot be designed at this k, keeps its
    row with the reason. Under ld.LDP unary encoding is designed symmetric (OUE-like), local hashing is OLH and the
    count-mean sketch is Apple's.

    Parameters
    ----------
    prior : Prior or array_like
        The design prior: a Prior, or probabilities (one per value, summing to 1).
    notion : LIP, WorstCaseLIP or LDP
        The privacy notion every family is designed under.
    objective : Frequencies, Mean, BayesHistogram, BayesSum, str or dict, optional
        What the designs minimise (default None: ld.Frequencies()), as in ``ld.design``.
    families : iterable of str, default FAMILIES
        The families to design, in the order of the rows: any of "rr", "unary", "hashing", "cms" (the count-mean
        sketch over the labels as strings, docs/math.md §16.6).
    max_rays : int, default MAX_RAYS
        The most extreme rays the randomized-response table's exact method enumerates (as in ``ld.design``).
    progress : callable, optional
        None (the default), or a callable that receives a line per family (a ``ProgressLine`` of phase "compare":
        the families done before it, of all), and the design's own lines.
    buckets : int, default 2
        Local hashing's g (3..8: the pooled design).
    method : {"auto", "exact", "columns", "classes"}, default "auto"
        How the randomized-response table is designed (as in ``ld.design``).
    target_gap : float, default 0.01
        Column generation's relative gap to the best certified bound at which it stops (docs/math.md §12).
    max_rounds : int, default 200
        Column generation's budget of rounds.
    time_limit : float or None, default 600
        Column generation's budget of seconds (None: no limit).

    Returns
    -------
    Comparison
        One row per family, in the order of ``families``, with ``best`` (the lowest figure), ``bound`` (valid for
        every mechanism of the notion) and ``bound_name``; ``print`` shows the table.

    Raises
    ------
    ValidationError
        An unknown family in ``families``, or inputs that the randomized-response design refuses (a prior, notion,
        objective or option out of its range, as in ``ld.design``). A family that refuses the problem only keeps its
        row with the reason.

    See Also
    --------
    design : one family's design.
    Comparison : the table.

    Notes
    -----
    The figure is n x the sum of the variances of the unbiased estimate given the users' values for the population
    objectives (docs/math.md §11), the posterior mean's MSE for the Bayesian ones (docs/math.md §4). The common
    bound is the per-bin bound or the relaxation dual (docs/math.md §11), the per-bin binary optimum for the
    Bayesian histogram (docs/math.md §10), or the randomized-response design's certified bound, which docs/math.md
    §7.3 makes valid for every finite-output mechanism.

    Examples
    --------
    Every family under LIP at a skewed prior:

    >>> import lipdesign as ld
    >>> comparison = ld.compare(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0))
    >>> print(comparison)
    LIP eps=1, k=3: every family under the same notion; figure = n x sum Var of the unbiased estimate, at the
    design prior, given the users' values (lower is better)
    family                                       figure  vs best     gap  bits design s  client
    ---...
    randomized response (optimal table), ... outputs   1.284    1.00x    0.0%     2 ...
    unary encoding                                  6.606    5.14x   80.6%     3 ...
    local hashing (g = 2)                           3.522    2.74x   63.5%     4 ...
    count-mean sketch designed for LIP                  8.739    6.80x   85.3%    32 ...
    gap: to 1.28429, a lower bound over every LIP eps=1 mechanism (the RR design's certificate)
    eps-LIP holds at the design prior and implies at most 2 eps-LDP (docs/math.md §2); every row here has the
    same guarantee
    >>> comparison.best.family
    'rr'

    A family that does not apply keeps its row, with the reason:

    >>> comparison = ld.compare([0.5, 0.3, 0.2], ld.LIP(1.0), ld.Mean([1, 2, 3]), families=["rr", "unary"])
    >>> print(comparison.rows[1].note)
    does not apply: objective is Mean(values=(1.0, 2.0, 3.0)); family='unary' is designed for the histogram: ...

    An unknown family is refused:

    >>> ld.compare([0.5, 0.3, 0.2], ld.LIP(1.0), families=["rr", "oue"])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: families has 'oue'; each must be one of rr, unary, hashing, cms
    """
    prior = prior if isinstance(prior, Prior) else Prior(prior)
    objective = Frequencies() if objective is None else as_objective(objective)
    families = tuple(families)
    for family in families:
        if family not in FAMILIES:
            raise ValidationError(f"families has {family!r}; each must be one of {', '.join(FAMILIES)}")
    rows = []
    for index, family in enumerate(families):
        if progress is not None:
            progress(ProgressLine(f"compare: designing {NAMES[family]}", phase="compare", done=index,
                                  total=len(families), unit="families", detail=NAMES[family]))
        start = time.perf_counter()
        try:
            rr: dict[str, Any] = {"method": method, "target_gap": target_gap, "max_rounds": max_rounds,
                  "time_limit": time_limit} if family == "rr" else {}
            mechanism = design(prior, notion, objective, family=family, max_rays=max_rays, baselines=False,
                               progress=progress, buckets=buckets if family == "hashing" else 2, **rr)
        except ValidationError as error:
            if family == "rr":
                raise  # the inputs themselves are wrong: say so, as ld.design does
            rows.append(Row(family, None, None, None, None, "", time.perf_counter() - start,
                            f"does not apply: {error}"))
            continue
        except LipdesignError as error:
            rows.append(Row(family, None, None, None, None, "", time.perf_counter() - start, f"not designed: {error}"))
            continue
        figure = _figure(mechanism, prior, objective)  # timed too: local hashing computes it on first use
        rows.append(Row(family, mechanism, figure, _own_bound(mechanism), mechanism.report_bits,
                        mechanism.client_cost, time.perf_counter() - start, _note(mechanism)))
    bound, name = _common_bound(prior, notion, objective, rows)
    return Comparison(rows, prior, notion, objective, bound, name)


def _note(mechanism):
    error = getattr(mechanism, "mse_error", 0.0)
    return f"figure +- {error:.2g} (sampled hashes)" if error else ""


def _common_bound(prior, notion, objective, rows):
    """The best bound valid for every mechanism of the notion: the per-bin bound or the relaxation dual
    (docs/math.md §11; §10's per-bin bound for the posterior mean), or the RR table's certified bound, which §7.3
    makes valid for every finite-output mechanism."""
    candidates: dict[str, float | None] = {}
    plain = getattr(notion, "secret", None) is None
    if objective.kind == "frequencies" and plain:
        candidates["per-bin, docs/math.md §11"] = per_bin_bound(prior, notion)
        candidates["relaxation dual, docs/math.md §11"] = relaxation_dual_bound(prior, notion, objective)
    if objective.kind == "histogram" and plain:
        candidates["per-bin binary optimum, docs/math.md §10"] = bayes_histogram_bound(prior, notion.epsilon)
    for row in rows:
        if row.family == "rr" and row.lower_bound is not None:
            candidates["the RR design's certificate"] = row.lower_bound
    finite = {key: value for key, value in candidates.items() if value is not None and math.isfinite(value)}
    if not finite:
        return None, ""
    name = max(finite, key=finite.__getitem__)
    return max(0.0, finite[name]), name  # a bound computed in floating point may dip below 0 by rounding
