"""The JSON Schemas shipped in lipdesign/io/schemas, and validation against them with one-line messages."""

import json
from functools import cache
from importlib import resources

import jsonschema

from lipdesign.errors import FormatError

#: Schema files by format version: version 2 is written, both are read.
SCHEMA_FILES = {1: "lipdesign-v1.schema.json", 2: "lipdesign-v2.schema.json"}


@cache
def schema(definition, version=2):
    """The shipped JSON Schema for ``definition`` ("mechanism", "spec", or in version 1 "harmony")."""
    text = resources.files("lipdesign.io").joinpath("schemas", SCHEMA_FILES[version]).read_text()
    return {**json.loads(text), "$ref": f"#/$defs/{definition}"}


def validate_document(document, definition, source, version=2):
    """Raise FormatError naming the first schema violation (its JSON path and the rule)."""
    validator = jsonschema.Draft202012Validator(schema(definition, version))
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        path = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise FormatError(f"{source}: {path}: {error.message}")


def read_json(path):
    """The JSON document in ``path``, or FormatError saying why it cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as error:
        raise FormatError(f"{path}: cannot read ({error.strerror})") from None
    except RecursionError:
        raise FormatError(f"{path}: JSON nested too deeply") from None
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
