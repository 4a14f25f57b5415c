"""Design spec files for ``lipdesign design`` (format: docs/manual.md, "Spec files", and examples/; schema
``$defs/spec``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lipdesign.errors import FormatError, LipdesignError
from lipdesign.io.schema import validate_document
from lipdesign.model import Prior
from lipdesign.notions import notion_from_dict
from lipdesign.objectives import as_objective

if TYPE_CHECKING:
    from collections.abc import Mapping

    from lipdesign.notions import LDP, LIP, WorstCaseLIP
    from lipdesign.objectives import BayesHistogram, BayesSum, Frequencies, Mean


def spec_to_problem(spec: Mapping[str, Any], source: str = "spec") -> tuple[
        Prior, LDP | LIP | WorstCaseLIP, Frequencies | Mean | BayesHistogram | BayesSum, dict[str, Any]]:
    """(prior, notion, objective, options) of a design spec file; the objective defaults to "frequencies".

    A spec file is what ``lipdesign design SPEC`` reads (docs/manual.md, "Spec files"; the schema's
    ``$defs/spec``): a ``prior`` (``probabilities`` or ``counts`` with an optional ``pseudocount``, and
    ``labels``), a ``notion``, an optional ``objective`` and the options of ``ld.design``. The spec is validated
    against its schema first.

    Parameters
    ----------
    spec : dict
        The parsed spec (``read_json``).
    source : str, default "spec"
        What the spec is called in error messages (a file name).

    Returns
    -------
    prior : Prior
        The design prior (from probabilities, or from counts with their pseudocount).
    notion : LIP, WorstCaseLIP or LDP
        The notion.
    objective : Frequencies, Mean, BayesHistogram or BayesSum
        The objective (ld.Frequencies() when the spec has none).
    options : dict
        The keyword arguments of ``ld.design`` the spec sets (``family``, ``max_rays``, ``buckets``, ``method``,
        ``target_gap``, ``max_rounds``, ``time_limit``).

    Raises
    ------
    FormatError
        The spec breaks its schema, an objective "mean" or "weighted_sum" has no values, or the prior, notion or
        objective is refused (the message names the spec).

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.io import spec_to_problem
    >>> spec = {"prior": {"counts": [50, 30, 20]}, "notion": {"kind": "LIP", "epsilon": 1.0}, "family": "unary"}
    >>> prior, notion, objective, options = spec_to_problem(spec, "spec.json")
    >>> prior, notion, objective, options
    (Prior([0.5, 0.3, 0.2], labels=[0, 1, 2]), LIP(epsilon=1.0, secret=None, prior_set=None), Frequencies(),
     {'family': 'unary'})
    >>> mechanism = ld.design(prior, notion, objective, baselines=False, **options)
    >>> type(mechanism).__name__
    'UnaryEncoding'
    >>> spec_to_problem({"prior": {"counts": [50, 30, 20]}, "notion": {"kind": "LDP", "epsilon": 1.0},
    ...                  "objective": "mean"}, "spec.json")
    Traceback (most recent call last):
    ...
    lipdesign.errors.FormatError: spec.json: objective: 'mean' needs its values: {"kind": "mean", "values": [...]}, ...
    """
    objective = spec.get("objective") if isinstance(spec, dict) else None
    if objective in ("mean", "weighted_sum") or isinstance(objective, dict) and objective.get("kind") in (
            "mean", "weighted_sum") and "values" not in objective:
        kind = objective if isinstance(objective, str) else objective["kind"]
        raise FormatError(f'{source}: objective: {kind!r} needs its values: {{"kind": "{kind}", "values": [...]}}, '
                          "one per value of the prior")
    validate_document(spec, "spec", source)
    try:
        prior_data = spec["prior"]
        if "counts" in prior_data:
            prior = Prior.from_counts(prior_data["counts"], prior_data.get("labels"),
                                      pseudocount=prior_data.get("pseudocount", 0.0))
        else:
            prior = Prior.from_dict(prior_data)
        notion = notion_from_dict(spec["notion"])
        objective = as_objective(spec.get("objective", "frequencies"))
    except LipdesignError as error:
        raise FormatError(f"{source}: {error}") from None
    options = {key: spec[key] for key in ("family", "max_rays", "buckets", "method", "target_gap", "max_rounds",
                                               "time_limit")
               if key in spec}
    return prior, notion, objective, options
