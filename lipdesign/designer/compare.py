"""Choosing a family: ``compare(prior, notion, objective)`` designs every family that applies and sets their figures,
bounds, report sizes, client costs and design times side by side (docs/math.md §7.3)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
NAMES = {"rr": "randomized response (optimal table)", "unary": "unary encoding", "hashing": "local hashing (g = 2)"}


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

    def to_dict(self):
        return {"family": self.family, "mechanism": None if self.mechanism is None else self.mechanism.family,
                "figure": self.figure, "lower_bound": self.lower_bound, "report_bits": self.report_bits,
                "client_cost": self.client_cost, "seconds": self.seconds, "note": self.note}


class Comparison:
    """The rows of ``compare`` (one per family, in FAMILIES order), the notion and objective they were designed
    for, and ``bound``: the best lower bound valid for EVERY mechanism of the notion (docs/math.md §10, §11).
    ``print(comparison)`` shows the table; ``best`` is the row with the lowest figure."""

    def __init__(self, rows, prior, notion, objective, bound, bound_name):
        self.rows, self.prior, self.notion, self.objective = tuple(rows), prior, notion, objective
        self.bound, self.bound_name = bound, bound_name

    @property
    def best(self):
        designed = [row for row in self.rows if row.figure is not None]
        return min(designed, key=lambda row: row.figure) if designed else None

    def summary(self):
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

    def __str__(self):
        return self.summary()

    def __repr__(self):
        return f"Comparison({', '.join(f'{row.family}={row.figure}' for row in self.rows)})"

    def to_dict(self):
        return {"notion": self.notion.to_dict(), "objective": self.objective.kind, "k": self.prior.k,
                "bound": self.bound, "bound_name": self.bound_name, "rows": [row.to_dict() for row in self.rows]}


def _figure(mechanism, prior, objective):
    """The figure of ``objective`` at the design prior: the designed families' own ``mse``, or the variance of a
    fixed protocol's unbiased estimate given the users' values (docs/math.md §8)."""
    if hasattr(mechanism, "mse"):
        return float(mechanism.mse)
    if objective.kind != "frequencies":
        return None
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
    """Design every family of ``families`` (default all: "rr", "unary", "hashing") for ``prior`` under ``notion``
    for ``objective`` (default ld.Frequencies()), as ``ld.design`` would, and return a ``Comparison`` (docs/math.md
    §7.3). A family that does not apply, or cannot be designed at this k, keeps its row with the reason. Under
    ld.LDP unary encoding is designed symmetric (OUE-like) and local hashing is OLH. ``buckets`` is local hashing's
    g (3..8: the pooled design); ``method``, ``target_gap``, ``max_rounds`` and ``time_limit`` choose how the
    randomized-response table is designed (exactly, or by column generation past enumeration: docs/math.md §12).
    ``progress`` receives a line per family (a ``ProgressLine`` of phase "compare": the families done before it, of
    all), and the design's own lines."""
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
    candidates = {}
    plain = getattr(notion, "secret", None) is None
    if objective.kind == "frequencies" and plain:
        candidates["per-bin, docs/math.md §11"] = per_bin_bound(prior, notion)
        candidates["relaxation dual, docs/math.md §11"] = relaxation_dual_bound(prior, notion, objective)
    if objective.kind == "histogram" and plain:
        candidates["per-bin binary optimum, docs/math.md §10"] = bayes_histogram_bound(prior, notion.epsilon)
    for row in rows:
        if row.family == "rr" and row.lower_bound is not None:
            candidates["the RR design's certificate"] = row.lower_bound
    candidates = {key: value for key, value in candidates.items() if value is not None and math.isfinite(value)}
    if not candidates:
        return None, ""
    name = max(candidates, key=candidates.get)
    return max(0.0, candidates[name]), name  # a bound computed in floating point may dip below 0 by rounding
