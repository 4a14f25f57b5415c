"""Design spec files for ``lipdesign design`` (format: README, examples/; schema ``$defs/spec``)."""

from lipdesign.errors import FormatError, LipdesignError
from lipdesign.io.schema import validate_document
from lipdesign.model import Prior
from lipdesign.notions import notion_from_dict
from lipdesign.objectives import as_objective

#: The notion fields each kind cannot use, and why: a spec carrying one is refused, never stripped on the way.
UNUSABLE_FIELDS = {
    "LDP": {"secret": "an LDP notion protects X itself under every prior and takes no secret (a latent secret is "
                      "kind LIP's)",
            "prior_set": "an LDP notion holds under every prior and takes no prior_set (a set of priors is kind "
                         "BP-LIP's)"},
    "WC-LIP": {"prior_set": "a WC-LIP notion holds under every prior and takes no prior_set (a set of priors is kind "
                            "BP-LIP's)"},
    "LIP": {},
    "BP-LIP": {},
}


def spec_to_problem(spec, source="spec"):
    """(prior, notion, objective, options) of a design spec file; the objective defaults to "frequencies"."""
    objective = spec.get("objective") if isinstance(spec, dict) else None
    if objective in ("mean", "weighted_sum") or isinstance(objective, dict) and objective.get("kind") in (
            "mean", "weighted_sum") and "values" not in objective:
        kind = objective if isinstance(objective, str) else objective["kind"]
        raise FormatError(f'{source}: objective: {kind!r} needs its values: {{"kind": "{kind}", "values": [...]}}, '
                          "one per value of the prior")
    validate_document(spec, "spec", source)
    kind = spec["notion"]["kind"]
    for field, rule in UNUSABLE_FIELDS[kind].items():
        if spec["notion"].get(field) is not None:
            raise FormatError(f"{source}: notion.{field} is set; {rule}")
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
    options = {key: spec[key] for key in ("family", "max_rays", "buckets", "method", "target_gap", "max_rounds")
               if key in spec}
    return prior, notion, objective, options
