"""The JSON Schemas shipped in lipdesign/io/schemas, and reading and validating documents with one-line messages.

Every document is read strictly (docs/math.md §3.9): UTF-8 text (a leading byte-order mark is ignored), no key twice
in one object (the Python json module keeps the last, another parser may keep the first: the two would read
different mechanisms), and every number a finite double (no NaN or Infinity literal, no literal beyond about
1.8e308, which Python reads as an infinite float or as an integer no double can hold).
"""

from __future__ import annotations

import json
import math
import sys
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import jsonschema

from lipdesign.errors import FormatError

if TYPE_CHECKING:
    import os

#: Schema files by format version: version 2 is written, both are read.
SCHEMA_FILES = {1: "lipdesign-v1.schema.json", 2: "lipdesign-v2.schema.json"}

#: An integer literal with more digits than this is beyond the range of a double (its largest finite value has 309).
MAX_INTEGER_DIGITS = 309


@cache
def schema(definition: str, version: int = 2) -> dict[str, Any]:
    """The shipped JSON Schema for ``definition`` ("mechanism", "spec", or in version 1 "harmony")."""
    text = resources.files("lipdesign.io").joinpath("schemas", SCHEMA_FILES[version]).read_text()
    return {**json.loads(text), "$ref": f"#/$defs/{definition}"}


def validate_document(document: Any, definition: str, source: str, version: int = 2) -> None:
    """Check a parsed document against lipdesign's JSON Schema, with a one-line message (docs/math.md §3.9).

    Raise FormatError naming the first number that is not a finite double (``check_numbers``), then the first
    schema violation (its JSON path and the rule). The schemas are shipped in lipdesign/io/schemas: version 2 is
    written, version 1 (lipdesign 0.1.0) is read.

    Parameters
    ----------
    document : dict
        The parsed JSON document (``read_json``), or the same structure built in Python.
    definition : {"mechanism", "spec", "harmony"}
        The schema's definition to check against: a mechanism envelope, a design spec file, or (version 1 only)
        lipdesign 0.1.0's fixed-mechanism envelope.
    source : str
        What the document is called in the message (a file name).
    version : {2, 1}, default 2
        The format version of the schema.

    Raises
    ------
    FormatError
        A number that is not a finite double, or the first schema violation: "<source>: <JSON path>: <rule>".

    See Also
    --------
    read_json : read a file strictly.

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.io import validate_document
    >>> ld.save(ld.mechanisms.GRR(1.0, 3), "grr.json")
    >>> validate_document(ld.io.read_json("grr.json"), "mechanism", "grr.json")
    >>> spec = {"prior": {"probabilities": [0.5, 0.3, 0.2]}, "notion": {"kind": "LIP", "epsilon": "one"}}
    >>> validate_document(spec, "spec", "spec.json")
    Traceback (most recent call last):
    ...
    lipdesign.errors.FormatError: spec.json: notion/epsilon: 'one' is not of type 'number'
    """
    check_numbers(document, source)
    validator = jsonschema.Draft202012Validator(schema(definition, version))
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        raise FormatError(f"{source}: {_path(error.absolute_path)}: {error.message}")


#: Why a literal is refused (``_Literal.problem``).
NOT_JSON = "is not a JSON number (JSON has no NaN or Infinity)"
BEYOND_DOUBLE = "is beyond the range of a double (about 1.8e308)"


class _Literal:
    """A number literal that is not a finite double, kept as written so that ``check_numbers`` can name it."""

    __slots__ = ("problem", "text")

    def __init__(self, text, problem=NOT_JSON):
        self.text, self.problem = text, problem

    def __repr__(self):
        return self.text


class _DuplicateKey(Exception):
    pass


def _integer(text):
    digits = len(text.lstrip("-"))
    return _Literal(text, BEYOND_DOUBLE) if digits > MAX_INTEGER_DIGITS else int(text)


def _float(text):
    value = float(text)
    return value if math.isfinite(value) else _Literal(text, BEYOND_DOUBLE)


def _object(pairs):
    document = dict(pairs)
    if len(document) != len(pairs):
        keys = [key for key, _ in pairs]
        raise _DuplicateKey(next(key for key in keys if keys.count(key) > 1))
    return document


def _path(parts):
    return "/".join(str(part) for part in parts) or "(top level)"


def _shown(text):
    return text if len(text) <= 40 else f"{text[:20]}...{text[-8:]} ({len(text)} characters)"


def check_numbers(document: Any, source: str | os.PathLike[str]) -> None:
    """Raise FormatError at the first number of ``document`` (parsed JSON, or the same structure built in Python)
    that is not a finite double: NaN, an infinity, or a literal or an integer beyond about 1.8e308."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), document)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            stack.extend(((*path, key), value) for key, value in reversed(node.items()))
        elif isinstance(node, (list, tuple)):
            stack.extend(((*path, at), value) for at, value in reversed(list(enumerate(node))))
        elif isinstance(node, _Literal):
            raise FormatError(f"{source}: {_path(path)}: {_shown(node.text)} {node.problem}; every number must be "
                              "finite")
        elif isinstance(node, float) and not math.isfinite(node):
            raise FormatError(f"{source}: {_path(path)}: {node!r} is not finite; every number must be finite")
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > sys.float_info.max:
            digits = int(node.bit_length() * math.log10(2)) + 1
            raise FormatError(f"{source}: {_path(path)}: an integer of about {digits} digits {BEYOND_DOUBLE}; every "
                              "number must be finite")


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON document in ``path``, read strictly, or FormatError saying why not (docs/math.md §3.9).

    UTF-8 text (a leading byte-order mark is ignored), no key twice in one object (the Python json module keeps the
    last, another parser may keep the first: the two would read different mechanisms), and every number a finite
    double (no NaN or Infinity literal, no literal beyond about 1.8e308). ``load`` reads every file with it.

    Parameters
    ----------
    path : str or os.PathLike
        The JSON file.

    Returns
    -------
    object
        The parsed document (a dict for a lipdesign file).

    Raises
    ------
    FormatError
        The file cannot be read, is not UTF-8, is not valid JSON, repeats a key in one object, nests too deeply, or
        holds a number that is not a finite double.

    See Also
    --------
    validate_document : check the document against its schema.

    Examples
    --------
    >>> import lipdesign as ld
    >>> from pathlib import Path
    >>> ld.save(ld.mechanisms.GRR(1.0, 3), "grr.json")
    >>> document = ld.io.read_json("grr.json")
    >>> document["family"], document["parameters"]
    ('grr', {'epsilon': 1.0, 'k': 3})
    >>> _ = Path("twice.json").write_text('{"epsilon": 1.0, "epsilon": 0.5}')
    >>> ld.io.read_json("twice.json")
    Traceback (most recent call last):
    ...
    lipdesign.errors.FormatError: twice.json: key 'epsilon' appears twice in one object; a key may appear once ...
    >>> _ = Path("nan.json").write_text('{"epsilon": NaN}')
    >>> ld.io.read_json("nan.json")
    Traceback (most recent call last):
    ...
    lipdesign.errors.FormatError: nan.json: epsilon: NaN is not a JSON number (JSON has no NaN or Infinity); ...
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise FormatError(f"{path}: cannot read ({error.strerror})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FormatError(f"{path}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}); "
                          "lipdesign documents are JSON in UTF-8") from None
    try:
        document = json.loads(text, object_pairs_hook=_object, parse_int=_integer, parse_float=_float,
                              parse_constant=_Literal)
    except RecursionError:
        raise FormatError(f"{path}: JSON nested too deeply") from None
    except _DuplicateKey as error:
        raise FormatError(f"{path}: key {error.args[0]!r} appears twice in one object; a key may appear once (JSON "
                          "parsers disagree on which one counts)") from None
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
    check_numbers(document, path)
    return document
