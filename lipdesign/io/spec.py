"""Design spec files for ``lipdesign design`` (format: README, examples/; schema ``$defs/spec``)."""

from lipdesign.errors import FormatError, LipdesignError
from lipdesign.io.schema import validate_document
from lipdesign.model import Prior
from lipdesign.notions import notion_from_dict
from lipdesign.objectives import as_objective


def spec_to_problem(spec, source="spec"):
    """(prior, notion, objective, options) of a design spec file."""
    validate_document(spec, "spec", source)
    try:
        prior_data = spec["prior"]
        if "counts" in prior_data:
            prior = Prior.from_counts(prior_data["counts"], prior_data.get("labels"),
                                      pseudocount=prior_data.get("pseudocount", 0.0))
        else:
            prior = Prior.from_dict(prior_data)
        notion = notion_from_dict(spec["notion"])
        objective = as_objective(spec.get("objective", "histogram"))
    except LipdesignError as error:
        raise FormatError(f"{source}: {error}") from None
    options = {key: spec[key] for key in ("family", "max_rays") if key in spec}
    return prior, notion, objective, options
