"""JSON export and import of mechanisms, and spec files for ``lipdesign design``.

Two versioned envelopes, both validated by the JSON Schema shipped in lipdesign/schemas:
- "lipdesign.mechanism" (a designed table): ``load`` rebuilds the declarations and RE-VERIFIES the claim
  exactly from the stored numbers; a table that does not satisfy what it claims, or claims a tighter epsilon
  than it has, is refused.
- "lipdesign.harmony" (a mechanism of lipdesign.harmony): its class name and constructor parameters, seeds of
  public randomness included; ``load`` rebuilds it and, where its output space is finite, re-verifies its
  privacy table exactly, refusing a stored epsilon below the verified one.
No pickle anywhere.
"""

import json
import math
from functools import cache
from importlib import resources

import jsonschema
import numpy as np

import lipdesign
from lipdesign.designer import Mechanism, verified_epsilons
from lipdesign.errors import FormatError, LipdesignError, VerificationError
from lipdesign.model import Prior
from lipdesign.notions import notion_from_dict
from lipdesign.utility import as_objective, mse
from lipdesign.verification import check_table, verify

FORMAT = "lipdesign.mechanism"
HARMONY_FORMAT = "lipdesign.harmony"
FORMAT_VERSION = 1
SCHEMA_FILE = "lipdesign-v1.schema.json"


@cache
def schema(definition):
    """The shipped JSON Schema for ``definition`` ("mechanism" or "spec")."""
    document = json.loads(resources.files("lipdesign.schemas").joinpath(SCHEMA_FILE).read_text())
    return {**document, "$ref": f"#/$defs/{definition}"}


def validate_document(document, definition, source):
    """Raise FormatError naming the first schema violation (its JSON path and the rule)."""
    validator = jsonschema.Draft202012Validator(schema(definition))
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        path = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise FormatError(f"{source}: {path}: {error.message}")


def read_json(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as error:
        raise FormatError(f"{path}: cannot read ({error.strerror})") from None
    except RecursionError:
        raise FormatError(f"{path}: JSON nested too deeply") from None
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None


def _finite_or_none(value):
    return value if math.isfinite(value) else None


def mechanism_to_dict(mechanism):
    """The export envelope of a Mechanism."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "lipdesign_version": lipdesign.__version__,
        "family": mechanism.family,
        "notion": mechanism.notion.to_dict(),
        "prior": mechanism.prior.to_dict(),
        "objective": mechanism.objective.to_dict(),
        "table": mechanism.table.tolist(),
        "mse": mechanism.mse,
        "verified_epsilons": {name: _finite_or_none(value) for name, value in mechanism.epsilons.items()},
        "baselines": dict(mechanism.baselines),
        "certificate": json.loads(json.dumps(mechanism.certificate, default=float)),
    }


def save(mechanism, path):
    _write_json(mechanism_to_dict(mechanism), path)


def mechanism_from_dict(document, source="document"):
    """Rebuild and exactly re-verify a Mechanism from its envelope (see ``load``)."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise FormatError(f"{source}: not a lipdesign mechanism (format must be {FORMAT!r} or {HARMONY_FORMAT!r})")
    if document.get("format_version") != FORMAT_VERSION:
        raise FormatError(f"{source}: format_version {document.get('format_version')!r} is not supported "
                          f"(this lipdesign {lipdesign.__version__} reads version {FORMAT_VERSION})")
    validate_document(document, "mechanism", source)
    try:
        prior = Prior.from_dict(document["prior"])
        notion = notion_from_dict(document["notion"])
        objective = as_objective(document["objective"])
        table = check_table(document["table"], prior.k)
    except LipdesignError as error:
        raise FormatError(f"{source}: {error}") from None
    certificate = verify(table, notion, prior, exact=True)
    if not certificate.passed:
        raise VerificationError(
            f"{source}: the stored table is not {notion.kind} with eps={notion.epsilon:g}: its tightest epsilon "
            f"is {certificate.epsilon:.12g} (exact verification), attained at {certificate.worst}")
    mechanism = Mechanism(prior, notion, objective, table, document["family"], mse(table, prior, objective),
                          verified_epsilons(table, notion, prior), document.get("certificate", {}),
                          document.get("baselines", {}))
    for name, stored in document["verified_epsilons"].items():
        actual = mechanism.epsilons.get(name)
        stored = math.inf if stored is None else stored
        if actual is None or actual > stored:
            raise VerificationError(f"{source}: verified_epsilons.{name} is {stored!r} but the stored table "
                                    f"gives {actual!r}; the file understates epsilon")
    if not np.isclose(mechanism.mse, document["mse"], rtol=1e-9, atol=1e-12):
        raise FormatError(f"{source}: mse is {document['mse']!r} but the stored table gives {mechanism.mse!r}")
    return mechanism


#: The ``guarantee`` of an exported harmony mechanism: exact verification of its finite privacy table, or
#: the closed form of a continuous mechanism (its class's ``guarantee`` says on what terms).
EXACT_GUARANTEE = "exact verification of the privacy table"


def _write_json(document, path):
    """Serialise first, then write: a document that cannot be serialised leaves no truncated file behind."""
    text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def harmony_to_dict(mechanism):
    """The export envelope of a lipdesign.harmony mechanism (verified exactly when its output is finite)."""
    finite = mechanism.privacy_table() is not None
    return {
        "format": HARMONY_FORMAT,
        "format_version": FORMAT_VERSION,
        "lipdesign_version": lipdesign.__version__,
        "mechanism": type(mechanism).__name__,
        "parameters": mechanism.parameters(),
        "guarantee": EXACT_GUARANTEE if finite else mechanism.guarantee,
        "verified_epsilon": mechanism.verify().epsilon if finite else None,
    }


def save_harmony(mechanism, path):
    _write_json(harmony_to_dict(mechanism), path)


def harmony_from_dict(document, source="document"):
    """Rebuild a lipdesign.harmony mechanism from its envelope and re-verify it (see ``load``)."""
    from lipdesign.harmony import HarmonyMechanism, load_all

    if document.get("format_version") != FORMAT_VERSION:
        raise FormatError(f"{source}: format_version {document.get('format_version')!r} is not supported "
                          f"(this lipdesign {lipdesign.__version__} reads version {FORMAT_VERSION})")
    validate_document(document, "harmony", source)
    load_all()
    name = document["mechanism"]
    cls = HarmonyMechanism.registry.get(name)
    if cls is None:
        raise FormatError(f"{source}: mechanism: {name!r} is not a lipdesign.harmony mechanism "
                          f"(known: {', '.join(sorted(HarmonyMechanism.registry))})")
    try:
        mechanism = cls.from_parameters(document["parameters"])
    except LipdesignError as error:
        raise FormatError(f"{source}: parameters: {error}") from None
    except TypeError as error:
        raise FormatError(f"{source}: parameters do not fit {name}: {error}") from None
    public_seed = mechanism.parameters().get("seed")
    if public_seed is not None and document["parameters"].get("seed") is None:
        raise FormatError(f"{source}: parameters.seed is missing; {name} uses public randomness and the server "
                          "needs the exported seed (a fresh one would silently change the projection or hash)")
    if mechanism.privacy_table() is None:
        if document["guarantee"] != mechanism.guarantee:
            raise FormatError(f"{source}: guarantee is {document['guarantee']!r}; {name} has a continuous "
                              f"output space, its guarantee is {mechanism.guarantee!r}")
        if document["verified_epsilon"] is not None:
            raise FormatError(f"{source}: verified_epsilon must be null for {name} (continuous output space)")
        return mechanism
    if document["guarantee"] != EXACT_GUARANTEE:
        raise FormatError(f"{source}: guarantee is {document['guarantee']!r}; {name} has a finite output space, "
                          f"its guarantee is {EXACT_GUARANTEE!r}")
    certificate = mechanism.verify()
    if not certificate.passed:
        raise VerificationError(f"{source}: {name} is not LDP with eps={mechanism.epsilon:g}: its tightest "
                                f"epsilon is {certificate.epsilon:.12g} (exact verification)")
    stored = document["verified_epsilon"]
    if stored is None or stored < certificate.epsilon:
        raise VerificationError(f"{source}: verified_epsilon is {stored!r} but exact verification gives "
                                f"{certificate.epsilon!r}; the file understates epsilon")
    return mechanism


def load(path):
    """Load a mechanism exported with ``to_json``: validate against the schema, rebuild, and re-verify the
    guarantee exactly from the stored numbers (a designed table, or a lipdesign.harmony mechanism's privacy
    table when its output space is finite)."""
    document = read_json(path)
    if isinstance(document, dict) and document.get("format") == HARMONY_FORMAT:
        return harmony_from_dict(document, str(path))
    return mechanism_from_dict(document, str(path))


def spec_to_problem(spec, source="spec"):
    """(prior, notion, objective, options) of a design spec file (format: README, examples/)."""
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
