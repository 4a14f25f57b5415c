"""Design spec files for ``lipdesign design`` (format: docs/manual.md, "Spec files", and examples/; schema
``$defs/spec``)."""

from lipdesign.errors import FormatError, LipdesignError
from lipdesign.io.schema import validate_document
from lipdesign.model import Prior
from lipdesign.notions import notion_from_dict
from lipdesign.objectives import as_objective


def spec_to_problem(spec, source="spec"):
    """(prior, notion, objective, options) of a design spec file; the objective defaults to "frequencies"."""
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
