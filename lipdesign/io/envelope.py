"""Reading and writing mechanisms: ONE versioned envelope for every family (docs/math.md §3).

Written (``save``, ``Mechanism.to_json``): ``format: "lipdesign.mechanism"``, ``format_version: 2``, the ``family``
id, the constructor ``parameters`` (seeds of public randomness included), the ``guarantee`` (notion, epsilon, what
it rests on, the exactly verified epsilons) and, for designed tables, the design ``provenance``.

Read (``load``): that envelope, and the two of lipdesign 0.1.0 (``"lipdesign.mechanism"`` version 1 for designed
tables, ``"lipdesign.harmony"`` version 1 for the fixed mechanisms, whose Python class names map to family ids
here). Every document is read strictly (UTF-8, no duplicate key, every number a finite double), validated against
its schema, rebuilt, and its guarantee RE-VERIFIED exactly wherever the output space is finite; a table that breaks
its claim, a stored epsilon below the verified one, a claim that does not match the family, a parameter left out
(it is never defaulted) and a missing seed of public randomness are refused, and so is a ``fingerprint`` that does
not name the rebuilt mechanism (the file was changed after export). What ``load`` returns holds only figures
recomputed from the rebuilt mechanism: the design ``provenance`` (lipdesign 0.1.0's ``baselines`` and
``certificate``) is a record of the design step that load cannot recompute without designing again, so it is
checked for form and left out (docs/math.md §3.9). No pickle anywhere.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import FormatError, LegacyFileWarning, LipdesignError, VerificationError
from lipdesign.io.schema import read_json, validate_document
from lipdesign.mechanisms.base import FORMAT, FORMAT_VERSION, check_parameter_names
from lipdesign.mechanisms.registry import family_class
from lipdesign.mechanisms.table import TableMechanism
from lipdesign.model import Prior
from lipdesign.notions import LDP, LIP, notion_from_dict
from lipdesign.objectives import as_objective
from lipdesign.verification import verify_table

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping

    from lipdesign.mechanisms.base import Mechanism

#: The envelope of lipdesign 0.1.0's fixed mechanisms (read only).
LEGACY_HARMONY_FORMAT = "lipdesign.harmony"

#: lipdesign 0.1.0 named a fixed mechanism by its Python class in ``lipdesign.harmony``; these are their families.
LEGACY_CLASS_NAMES = {"Laplace": "laplace", "Duchi": "duchi", "HarmonyNumeric": "harmony-numeric",
                      "Piecewise": "piecewise", "Hybrid": "hybrid", "GRR": "grr", "OUE": "oue", "OLH": "olh",
                      "HadamardResponse": "hadamard", "HarmonyCategorical": "harmony-categorical",
                      "HarmonyMixed": "harmony-mixed"}

#: The parameters lipdesign 0.1.0 wrote for each of them (all required on load: none is defaulted; a parameter
#: added since, like Laplace's ``grid``, takes the value that keeps the 0.1.0 mechanism's meaning).
LEGACY_PARAMETERS = {"Laplace": ("d", "epsilon"), "Duchi": ("d", "epsilon"),
                     "HarmonyNumeric": ("coordinates", "d", "epsilon", "seed"), "Piecewise": ("d", "epsilon", "grid"),
                     "Hybrid": ("d", "epsilon", "grid"), "GRR": ("epsilon", "k"), "OUE": ("epsilon", "k"),
                     "OLH": ("epsilon", "g", "k"), "HadamardResponse": ("epsilon", "k"),
                     "HarmonyCategorical": ("epsilon", "k", "m", "seed"),
                     "HarmonyMixed": ("attributes", "epsilon", "m", "seed")}

#: The ``guarantee`` string of a finite mechanism in a "lipdesign.harmony" document.
LEGACY_EXACT_GUARANTEE = "exact verification of the privacy table"

#: The ``guarantee`` string lipdesign 0.1.0 wrote for its continuous Laplace mechanism, whose file (parameters
#: epsilon and d) now loads as the finite-output Laplace with the same claim, verified exactly (docs/math.md §9.9).
LEGACY_LAPLACE_GUARANTEE = "closed form, ideal real arithmetic (floating-point sampler not hardened)"

#: A stored MSE must match the one recomputed from the stored table within these tolerances.
MSE_RTOL, MSE_ATOL = 1e-9, 1e-12


def save(mechanism: Mechanism, path: str | os.PathLike[str]) -> None:
    """Write ``mechanism``'s envelope to ``path`` (the same as ``mechanism.to_json(path)``).

    The one versioned envelope of every family (docs/math.md §3.9): ``format: "lipdesign.mechanism"``,
    ``format_version: 2``, the ``family`` id, the constructor ``parameters`` (seeds of public randomness included),
    the ``guarantee`` (notion, epsilon, what it rests on, the exactly verified epsilons), the ``fingerprint`` and,
    for designed tables, the design ``provenance``. Give the devices and the server the same file: ``ld.load``
    rebuilds and re-verifies it.

    Parameters
    ----------
    mechanism : Mechanism
        Any mechanism of lipdesign (designed or fixed).
    path : str or os.PathLike
        The JSON file to write (replaced if it exists).

    See Also
    --------
    load : read it back, re-verified.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0), baselines=False)
    >>> ld.save(mechanism, "mechanism.json")
    >>> document = ld.io.read_json("mechanism.json")
    >>> document["format"], document["format_version"], document["family"]
    ('lipdesign.mechanism', 2, 'table')
    >>> ld.load("mechanism.json").fingerprint == mechanism.fingerprint
    True
    """
    mechanism.to_json(path)


def load(path: str | os.PathLike[str]) -> Mechanism:
    """The mechanism in ``path`` (any envelope this version reads), rebuilt and re-verified.

    Reads the current envelope (``format_version`` 2) and lipdesign 0.1.0's two (with a ``LegacyFileWarning``: they
    have no fingerprint). The file is read strictly (UTF-8, no duplicate key, every number a finite double),
    validated against its schema, rebuilt, and its guarantee RE-VERIFIED exactly wherever the output space is
    finite (docs/math.md §3.9). What it returns holds only figures recomputed from the rebuilt mechanism: the design
    ``provenance`` is checked for form and left out.

    Parameters
    ----------
    path : str or os.PathLike
        The JSON file, as ``save`` (or ``mechanism.to_json``) wrote it.

    Returns
    -------
    Mechanism
        The rebuilt mechanism, of the class its ``family`` names.

    Raises
    ------
    FormatError
        The file cannot be read, is not strict JSON, is not a lipdesign mechanism of a version this lipdesign reads,
        breaks its schema, leaves out a parameter (none is defaulted) or a seed of public randomness, claims what
        its family does not, or carries a ``fingerprint`` that does not name the rebuilt mechanism (the file was
        changed after export).
    VerificationError
        The rebuilt mechanism breaks its claim, or a stored verified epsilon is below the one exact verification
        gives (the file understates epsilon).

    See Also
    --------
    save : write a mechanism.
    mechanism_from_dict : the same for a document already parsed.

    Examples
    --------
    >>> import lipdesign as ld
    >>> ld.save(ld.mechanisms.GRR(1.0, 3), "grr.json")
    >>> mechanism = ld.load("grr.json")
    >>> mechanism
    GRR(epsilon=1.0, k=3)
    >>> mechanism.verify().passed
    True

    A file whose stored epsilon was lowered after export is refused:

    >>> from pathlib import Path
    >>> text = Path("grr.json").read_text().replace('"claimed": 0.99', '"claimed": 0.5')
    >>> _ = Path("edited.json").write_text(text)
    >>> ld.load("edited.json")
    Traceback (most recent call last):
    ...
    lipdesign.errors.VerificationError: edited.json: verified_epsilons.claimed is 0.5... the file understates epsilon
    """
    return mechanism_from_dict(read_json(path), str(path))


def mechanism_from_dict(document: Mapping[str, Any], source: str = "document") -> Mechanism:
    """Rebuild and re-verify the mechanism of an envelope (``load`` for a document already parsed).

    The same checks as ``load`` (docs/math.md §3.9) on a document that is already a Python structure (read by
    ``read_json``, received over a network, built in code): the numbers, the schema, the parameters, the claim
    re-verified exactly, the fingerprint.

    Parameters
    ----------
    document : dict
        The envelope: ``format``, ``format_version``, ``family``, ``parameters``, ``guarantee``, ``fingerprint``
        (and ``provenance`` for a designed table), or one of lipdesign 0.1.0's two envelopes.
    source : str, default "document"
        What the document is called in error messages (``load`` passes the file's path).

    Returns
    -------
    Mechanism
        The rebuilt mechanism.

    Raises
    ------
    FormatError
        The document is not a lipdesign mechanism of a version this lipdesign reads, or breaks its schema, its
        family's parameters or its fingerprint (as in ``load``).
    VerificationError
        The rebuilt mechanism breaks its claim, or the document understates epsilon.

    See Also
    --------
    load : read and rebuild a file.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0), baselines=False)
    >>> ld.save(mechanism, "mechanism.json")
    >>> document = ld.io.read_json("mechanism.json")
    >>> ld.io.mechanism_from_dict(document)
    TableMechanism(LIP eps=1, frequencies, k=3, ... outputs)

    A table entry changed after export no longer makes a table (its row does not sum to 1):

    >>> document["parameters"]["table"][0][0] += 0.01
    >>> ld.io.mechanism_from_dict(document, "edited.json")
    Traceback (most recent call last):
    ...
    lipdesign.errors.FormatError: edited.json: parameters: table row 0 sums to 1.01; each row must sum to 1 ...
    """
    kind = document.get("format") if isinstance(document, dict) else None
    if kind not in (FORMAT, LEGACY_HARMONY_FORMAT):
        raise FormatError(f"{source}: not a lipdesign mechanism (format must be {FORMAT!r} or, from lipdesign "
                          f"0.1.0, {LEGACY_HARMONY_FORMAT!r})")
    version = document.get("format_version")
    if kind == FORMAT and version == FORMAT_VERSION:
        return _current(document, source)
    if version == 1:
        mechanism = _legacy_table(document, source) if kind == FORMAT else _legacy_fixed(document, source)
        warnings.warn(LegacyFileWarning(
            f"{source} is a lipdesign 0.1.0 file, which has no fingerprint: its claim is re-verified, but an edit "
            "that keeps the claim (a public seed, a table entry) cannot be detected; save it again (ld.save) and "
            "give the devices and the server that copy"), stacklevel=2)
        return mechanism
    readable = f"{FORMAT_VERSION} and 1" if kind == FORMAT else "1"
    raise FormatError(f"{source}: format_version {version!r} is not supported (this lipdesign reads {kind!r} "
                      f"version {readable})")


def _rebuilt(build, source, parameters=None):
    """Run ``build`` and check that ``parameters`` (when given) names all the rebuilt mechanism writes: a broken
    claim stays a VerificationError, any other refusal becomes a FormatError."""
    try:
        mechanism = build()
        if parameters is not None:
            check_parameter_names(parameters, mechanism.parameters(), type(mechanism).__name__)
    except VerificationError as error:
        raise VerificationError(f"{source}: {error}") from None
    except LipdesignError as error:
        raise FormatError(f"{source}: parameters: {error}") from None
    except TypeError as error:
        raise FormatError(f"{source}: parameters do not fit: {error}") from None
    return mechanism


def _check_fingerprint(mechanism, document, source):
    """A stored fingerprint must be the rebuilt mechanism's (docs/math.md §3.9): the hash of its canonical content,
    so a file re-serialised by another tool (1.0 written as 1, keys reordered) keeps it, and any edit that changes
    the mechanism does not."""
    stored = document["fingerprint"]  # present (``_current``)
    if stored != mechanism.fingerprint:
        raise FormatError(f"{source}: fingerprint is {stored}, but the mechanism these parameters rebuild is "
                          f"{mechanism.fingerprint}: the file was changed after export, or does not hold the "
                          "mechanism its fingerprint names")


def _check_no_provenance(mechanism, document, source):
    if "provenance" in document and mechanism.provenance is None and not mechanism.records_provenance:
        raise FormatError(f"{source}: provenance is given, but {type(mechanism).__name__} records no design "
                          "provenance")


def _check_public_seed(mechanism, parameters, source):
    if mechanism.parameters().get("seed") is not None and parameters.get("seed") is None:
        raise FormatError(f"{source}: parameters.seed is missing; {type(mechanism).__name__} uses public randomness "
                          "and the server needs the exported seed (a fresh one would silently change the projection "
                          "or hash)")


def _check_epsilons(mechanism, stored, source, actual=None):
    """Refuse a finite mechanism whose claim fails, and any stored epsilon below the verified one (``actual``: the
    verified epsilons to compare with, the mechanism's own by default)."""
    if mechanism.finite and not mechanism.verify().passed:
        certificate = mechanism.verify()
        raise VerificationError(f"{source}: {type(mechanism).__name__} is not {certificate.notion} with "
                                f"eps={certificate.claimed_epsilon:g}: its tightest epsilon is "
                                f"{certificate.epsilon:.12g} (exact verification)")
    actual = mechanism.verified_epsilons() if actual is None else actual
    for name, value in stored.items():
        if name not in actual:
            raise FormatError(f"{source}: verified_epsilons.{name} is {value!r}, but {type(mechanism).__name__} "
                              f"verifies only {sorted(actual) or 'nothing (continuous output)'}")
    for name, value in actual.items():
        written = stored.get(name, 0.0)
        written = math.inf if written is None else written
        if written < value:
            raise VerificationError(f"{source}: verified_epsilons.{name} is {stored.get(name)!r} but exact "
                                    f"verification gives {value!r}; the file understates epsilon")


def _current(document, source):
    validate_document(document, "mechanism", source)
    if "fingerprint" not in document:  # checked here, not by the schema, to say why
        raise FormatError(f"{source}: fingerprint is missing; a format_version {FORMAT_VERSION} file must carry the "
                          "fingerprint lipdesign writes (docs/math.md §3.9): without it a changed public seed would "
                          "load unnoticed and the server's estimates go wrong; export the mechanism again")
    try:
        cls = family_class(document["family"])
    except LipdesignError as error:
        raise FormatError(f"{source}: {error}") from None
    parameters = document["parameters"]
    mechanism = _rebuilt(lambda: cls.from_parameters(parameters), source, parameters)
    _check_no_provenance(mechanism, document, source)
    _check_public_seed(mechanism, parameters, source)
    stored, actual = document["guarantee"], mechanism.guarantee.to_dict()
    for field in ("notion", "epsilon", "basis"):
        if stored[field] != actual[field]:
            raise FormatError(f"{source}: guarantee.{field} is {stored[field]!r}; {cls.__name__} with these "
                              f"parameters has {actual[field]!r}")
    _check_epsilons(mechanism, stored["verified_epsilons"], source)
    _check_fingerprint(mechanism, document, source)
    return mechanism


def _legacy_table(document, source):
    """A designed table written by lipdesign 0.1.0 (``family: "rr"``, design provenance under ``certificate``)."""
    validate_document(document, "mechanism", source, version=1)
    try:
        prior = Prior.from_dict(document["prior"])
        notion = notion_from_dict(document["notion"])
        objective = as_objective(document["objective"])
    except LipdesignError as error:
        raise FormatError(f"{source}: {error}") from None
    parameters = {name: document[name] for name in ("prior", "notion", "objective", "table")}
    mechanism = _rebuilt(lambda: TableMechanism(document["table"], notion, prior, objective), source, parameters)
    # lipdesign 0.1.0 recorded the epsilons of the stored numbers; the constructor has checked the claim on the
    # table the sampler realises (docs/math.md §3.2)
    numbers = {"claimed": verify_table(mechanism.table, notion, prior).epsilon,
               "LIP for X": verify_table(mechanism.table, LIP(notion.epsilon), prior).epsilon,
               "LDP": verify_table(mechanism.table, LDP(notion.epsilon), prior).epsilon}
    _check_epsilons(mechanism, document["verified_epsilons"], source, actual=numbers)
    if not np.isclose(mechanism.mse, document["mse"], rtol=MSE_RTOL, atol=MSE_ATOL):
        raise FormatError(f"{source}: mse is {document['mse']!r} but the stored table gives {mechanism.mse!r}")
    return mechanism


def _legacy_fixed(document, source):
    """A mechanism of lipdesign 0.1.0's ``lipdesign.harmony`` (class name, parameters, guarantee string)."""
    validate_document(document, "harmony", source, version=1)
    name = document["mechanism"]
    if name not in LEGACY_CLASS_NAMES:
        raise FormatError(f"{source}: mechanism: {name!r} is not a lipdesign.harmony mechanism "
                          f"(known: {', '.join(sorted(LEGACY_CLASS_NAMES))})")
    cls = family_class(LEGACY_CLASS_NAMES[name])
    parameters = document["parameters"]
    written = dict.fromkeys(LEGACY_PARAMETERS[name])
    def build():
        check_parameter_names(parameters, written, f"lipdesign 0.1.0's {name}")
        return cls(**parameters)

    mechanism = _rebuilt(build, source)
    _check_public_seed(mechanism, parameters, source)
    continuous = name == "Laplace"  # continuous in 0.1.0, which wrote no verified epsilon for it
    expected = LEGACY_LAPLACE_GUARANTEE if continuous else LEGACY_EXACT_GUARANTEE
    if document["guarantee"] != expected:
        raise FormatError(f"{source}: guarantee is {document['guarantee']!r}; lipdesign 0.1.0 wrote {expected!r} "
                          f"for {name}")
    stored = document["verified_epsilon"]
    if continuous:
        if stored is not None:
            raise FormatError(f"{source}: verified_epsilon must be null for {name} (lipdesign 0.1.0's Laplace had a "
                              "continuous output space)")
        _check_epsilons(mechanism, mechanism.verified_epsilons(), source)  # the claim only: no figure was written
        return mechanism
    if stored is None:  # version 1 wrote null only for a continuous output space
        raise VerificationError(f"{source}: verified_epsilon is None but exact verification gives "
                                f"{mechanism.verify().epsilon!r}; the file understates epsilon")
    _check_epsilons(mechanism, {"claimed": stored}, source)
    return mechanism
