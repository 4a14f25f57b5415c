"""Bad input and tampering in files and parameters (docs/math.md §3.9): every class the audit found ends in one
clear error (a LipdesignError in Python; exit 2 and one line on the command line), nothing in a file is silently
defaulted, no figure is returned that load did not recompute, and a file whose mechanism is not the one its
fingerprint names is refused. The property tests at the end fuzz load, verify and spec reading."""

import copy
import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from helpers import lipdesign
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lipdesign as ld
from lipdesign.errors import LegacyFileWarning
from lipdesign.io import mechanism_from_dict, read_json, spec_to_problem
from lipdesign.mechanisms import (
    GRR,
    Duchi,
    HarmonyCategorical,
    HarmonyNumeric,
    Laplace,
    families,
    family_class,
)

V1 = Path(__file__).resolve().parent / "data" / "v1"

#: A number no double can hold, as an integer literal (Python reads it exactly; float() overflows).
HUGE = "1" + "0" * 400


def assert_one_line_error(result, *fragments):
    """Exit 2 (not verify's FAIL, which is 1), nothing on stdout, one line on stderr holding every fragment."""
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lipdesign: error: ") and not result.stdout, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def write(path, document):
    path.write_text(json.dumps(document, indent=1))
    return path


def grr_text():
    return json.dumps(GRR(1.0, 4).to_dict(), indent=1)


def with_literal(document, path, literal):
    """The JSON text of ``document`` with the value at ``path`` written as the number literal ``literal``."""
    document = copy.deepcopy(document)
    node = document
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = "@literal@"
    return json.dumps(document, indent=1).replace('"@literal@"', literal)


# -- numbers that are not finite doubles ----------------------------------------------------------------------
@pytest.mark.parametrize("document, path", [
    (GRR(1.0, 4).to_dict(), ("parameters", "epsilon")),
    (GRR(1.0, 4).to_dict(), ("parameters", "k")),
    (Duchi(1.0, d=3).to_dict(), ("parameters", "d")),
    (HarmonyCategorical(1.0, k=3, m=4, seed=7).to_dict(), ("parameters", "seed")),
    (ld.TableMechanism.example().to_dict(), ("parameters", "prior", "probabilities", 0)),
    (ld.TableMechanism.example().to_dict(), ("parameters", "table", 1, 0)),
    (json.loads((V1 / "laplace.json").read_text()), ("parameters", "d")),
], ids=lambda value: "/".join(map(str, value)) if isinstance(value, tuple) else value["format"])
def test_an_integer_literal_beyond_a_double_is_refused_naming_its_field(tmp_path, document, path):
    (tmp_path / "m.json").write_text(with_literal(document, path, HUGE))
    where = "/".join(map(str, path))
    with pytest.raises(ld.FormatError, match=f"{where}: 10000.*beyond the range of a double"):
        ld.load(tmp_path / "m.json")


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "1" * 5000])  # 5000 digits: past Python's int-text limit
def test_any_number_literal_beyond_a_double_is_refused(tmp_path, literal):
    (tmp_path / "m.json").write_text(with_literal(GRR(1.0, 4).to_dict(), ("parameters", "epsilon"), literal))
    with pytest.raises(ld.FormatError, match="parameters/epsilon: .*beyond the range of a double"):
        ld.load(tmp_path / "m.json")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_are_refused_in_verified_epsilons(tmp_path, literal):
    path = ("guarantee", "verified_epsilons", "claimed")
    (tmp_path / "m.json").write_text(with_literal(GRR(1.0, 4).to_dict(), path, literal))
    with pytest.raises(ld.FormatError, match=f"guarantee/verified_epsilons/claimed: {literal} is not a JSON number"):
        ld.load(tmp_path / "m.json")


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_verified_epsilon_is_refused_in_a_document_built_in_python(value):
    """23 of 23 such files passed before: NaN compares False with everything, so 'NaN < actual' never fired."""
    document = GRR(1.0, 4).to_dict()
    document["guarantee"]["verified_epsilons"]["claimed"] = value
    with pytest.raises(ld.FormatError, match="guarantee/verified_epsilons/claimed: (nan|inf) is not finite"):
        mechanism_from_dict(document, "doc")
    legacy = json.loads((V1 / "grr.json").read_text())
    legacy["verified_epsilon"] = value
    with pytest.raises(ld.FormatError, match="verified_epsilon: (nan|inf) is not finite"):
        mechanism_from_dict(legacy, "doc")


@pytest.mark.parametrize("call, message", [
    (lambda: ld.Prior([10**400, 1]), r"prior\[0\] is an integer of about 401 digits; every entry must be finite"),
    (lambda: ld.Prior.from_counts([3, 10**5000]), r"counts\[1\] is an integer of about 5001 digits"),
    (lambda: ld.LIP(10**400), "epsilon is an integer of about 401 digits; it must be a finite number"),
    (lambda: ld.LDP(-(10**400)), "epsilon is a negative integer of about 401 digits"),
    (lambda: Laplace(1.0, d=10**400), "d is an integer of about 401 digits; it must be an integer in 1.."),
    (lambda: GRR(1.0, 10**400), "k is an integer of about 401 digits"),
    (lambda: ld.verify([[1, 10**400], [1, 1]], ld.LDP(1.0)), r"\[0, 1\] is an integer of about 401 digits"),
])
def test_python_inputs_beyond_a_double_are_validation_errors(call, message):
    with pytest.raises(ld.ValidationError, match=message):
        call()


def test_a_spec_with_numbers_beyond_a_double_is_refused(tmp_path):
    spec = {"prior": {"counts": [1, 2, 3]}, "notion": {"kind": "LIP", "epsilon": 1.0}}
    text = json.dumps(spec).replace("[1, 2, 3]", f"[1, {HUGE}, 3]")
    (tmp_path / "spec.json").write_text(text)
    with pytest.raises(ld.FormatError, match="prior/counts/1: 10000.*beyond the range of a double"):
        spec_to_problem(read_json(tmp_path / "spec.json"), "spec.json")
    with pytest.raises(ld.FormatError, match="notion/epsilon: nan is not finite"):
        spec_to_problem({**spec, "notion": {"kind": "LIP", "epsilon": float("nan")}})
    with pytest.raises(ld.FormatError, match="prior/counts/0: an integer of about 401 digits"):
        spec_to_problem({**spec, "prior": {"counts": [10**400, 1]}})


# -- text that is not UTF-8 JSON, and duplicate keys ----------------------------------------------------------
def test_a_file_that_is_not_utf8_is_refused_with_its_path(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(grr_text().encode().replace(b'"grr"', b'"gr\xe9"'))
    offset = grr_text().encode().index(b'"grr"') + 3
    with pytest.raises(ld.FormatError, match=rf"latin1.json: not UTF-8 text \(byte 0xe9 at offset {offset}\)"):
        ld.load(path)


def test_a_byte_order_mark_is_ignored(tmp_path):
    """RFC 8259 §8.1 lets a parser ignore a leading BOM (editors on Windows write one); the content is unchanged."""
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + grr_text().encode())
    assert ld.load(path) == GRR(1.0, 4)


def test_a_duplicate_key_is_refused_whichever_copy_a_parser_keeps(tmp_path):
    """The first table breaks the claim, the last is the exported one: json keeps the last, others the first."""
    mechanism = ld.TableMechanism.example()
    document = mechanism.to_dict()
    text = json.dumps(document)
    good = json.dumps(document["parameters"]["table"])
    assert text.count(f'"table": {good}') == 1
    text = text.replace(f'"table": {good}', f'"table": [[1.0, 0.0], [0.0, 1.0]], "table": {good}')
    path = tmp_path / "twice.json"
    path.write_text(text)
    assert json.loads(text)["parameters"]["table"] == document["parameters"]["table"]  # what json alone read
    with pytest.raises(ld.FormatError, match="twice.json: key 'table' appears twice in one object"):
        ld.load(path)
    path.write_text(grr_text().replace('"family": "grr"', '"family": "oue", "family": "grr"'))
    with pytest.raises(ld.FormatError, match="key 'family' appears twice"):
        ld.load(path)


# -- figures that load did not compute ------------------------------------------------------------------------
def test_forged_design_figures_are_not_returned_by_load(tmp_path):
    mechanism = ld.design([0.2, 0.3, 0.5], ld.LIP(1.0))
    assert mechanism.baselines["GRR"] > 0 and mechanism.optimality["lower_bound"] > 0
    document = mechanism.to_dict()
    document["provenance"]["baselines"]["GRR"] = 0.0
    document["provenance"]["optimality"]["lower_bound"] = mechanism.mse
    loaded = ld.load(write(tmp_path / "forged.json", document))
    assert loaded == mechanism and dict(loaded.provenance) == {} and loaded.baselines == {}
    assert loaded.optimality is None
    assert "GRR" not in loaded.summary() and "lower bound" not in loaded.summary()
    assert loaded.mse == mechanism.mse  # recomputed from the stored table


def test_forged_figures_of_a_version_1_file_are_not_returned(tmp_path):
    document = json.loads((V1 / "lip-histogram.json").read_text())
    assert document["baselines"] and document["certificate"]
    document["baselines"] = {"GRR": 0.0, "optimal LDP": 0.0}
    loaded = ld.load(write(tmp_path / "v1.json", document))
    assert dict(loaded.provenance) == {} and "GRR" not in loaded.summary()


def test_a_fixed_mechanism_with_provenance_is_refused(tmp_path):
    document = GRR(1.0, 4).to_dict()
    document["provenance"] = {"baselines": {"GRR": 0.0}}
    with pytest.raises(ld.FormatError, match="provenance is given, but GRR records no design provenance"):
        ld.load(write(tmp_path / "m.json", document))


# -- parameters left out --------------------------------------------------------------------------------------
def without(document, *path):
    document = copy.deepcopy(document)
    *parents, name = path
    node = document
    for part in parents:
        node = node[part]
    del node[name]
    return document


TABLE = ld.TableMechanism.example().to_dict()


@pytest.mark.parametrize("document, path, message", [
    (Duchi(1.0, d=3).to_dict(), ("parameters", "d"), "'d' is a required property"),
    (TABLE, ("parameters", "prior", "labels"), "parameters.prior.labels is missing"),
    (TABLE, ("parameters", "notion", "secret"), "parameters.notion.secret is missing"),
    (HarmonyNumeric(1.0, d=3).to_dict(), ("parameters", "seed"), "'seed' is a required property"),
])
def test_a_parameter_left_out_of_a_current_file_is_refused(document, path, message):
    with pytest.raises(ld.FormatError, match=message):
        mechanism_from_dict(without(document, *path), "doc")


@pytest.mark.parametrize("name, parameter", [("duchi", "d"), ("piecewise", "grid"), ("harmony-numeric", "coordinates"),
                                             ("olh", "g"), ("harmony-mixed", "m")])
def test_a_parameter_left_out_of_a_version_1_file_is_refused(name, parameter):
    """lipdesign 0.1.0's schema required only epsilon: a file without d loaded as d = 1."""
    document = without(json.loads((V1 / f"{name}.json").read_text()), "parameters", parameter)
    with pytest.raises(ld.FormatError, match=f"parameters.{parameter} is missing; lipdesign 0.1.0's"):
        mechanism_from_dict(document, "doc")


def test_from_parameters_defaults_nothing():
    with pytest.raises(ld.ValidationError, match="parameters.grid is missing; Piecewise writes d, epsilon, grid"):
        family_class("piecewise").from_parameters({"epsilon": 1.0, "d": 2})


def test_a_version_1_table_without_labels_is_refused():
    document = without(json.loads((V1 / "lip-binary.json").read_text()), "prior", "labels")
    with pytest.raises(ld.FormatError, match="parameters.prior.labels is missing"):
        mechanism_from_dict(document, "doc")


# -- the fingerprint ------------------------------------------------------------------------------------------
def test_the_fingerprint_is_the_sha256_of_the_canonical_json():
    canonical = '{"family":"grr","parameters":{"epsilon":1.0,"k":4}}'  # sorted keys, no whitespace, repr floats
    expected = hashlib.sha256(canonical.encode("ascii")).hexdigest()
    assert GRR(1.0, 4).fingerprint == expected and GRR(1.0, 4).to_dict()["fingerprint"] == expected
    labelled = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.2), ld.Prior([0.5, 0.5], labels=["é", 2]))
    text = ('{"family":"table","parameters":{"notion":{"epsilon":1.2,"kind":"LDP"},"objective":{"kind":'
            '"frequencies"},"prior":{"labels":["\\u00e9",2],"probabilities":[0.5,0.5]},"table":[[0.75,0.25],'
            '[0.25,0.75]]}}')
    assert labelled.fingerprint == hashlib.sha256(text.encode("ascii")).hexdigest()


@pytest.mark.parametrize("mechanism", [HarmonyCategorical(1.0, k=3, m=4, seed=7),
                                       HarmonyNumeric(1.0, d=3, coordinates="public", seed=5)], ids=repr)
def test_a_changed_public_seed_is_refused(tmp_path, mechanism):
    document = mechanism.to_dict()
    document["parameters"]["seed"] += 1  # privacy holds for any seed; the server's estimate does not
    result = lipdesign("verify", write(tmp_path / "m.json", document))
    assert_one_line_error(result, "fingerprint is", "the file was changed after export")


def test_a_fingerprint_of_another_mechanism_is_refused():
    document = GRR(1.0, 4).to_dict()
    document["fingerprint"] = GRR(1.0, 5).fingerprint
    with pytest.raises(ld.FormatError, match="the file was changed after export"):
        mechanism_from_dict(document, "doc")
    document["fingerprint"] = "00" * 31  # not a sha256
    with pytest.raises(ld.FormatError, match="fingerprint: '0+' does not match"):
        mechanism_from_dict(document, "doc")


def test_a_harmless_re_serialisation_keeps_the_fingerprint():
    """Another tool writing 1.0 as 1 (JavaScript's JSON.stringify) or reordering keys changes no mechanism, so the
    fingerprint, a hash of the rebuilt mechanism's canonical content, still matches (found in review)."""
    document = GRR(1.0, 4).to_dict()
    document["parameters"] = {"k": 4, "epsilon": 1}
    assert mechanism_from_dict(document, "doc") == GRR(1.0, 4)


def test_a_current_file_needs_its_fingerprint_and_a_version_1_file_gets_one(tmp_path):
    document = HarmonyCategorical(1.0, k=3, m=4, seed=7).to_dict()
    document.pop("fingerprint")  # issue 23: deleting the key loaded a changed seed unnoticed
    with pytest.raises(ld.FormatError, match="fingerprint is missing"):
        ld.load(write(tmp_path / "m.json", document))
    with pytest.warns(LegacyFileWarning, match="has no fingerprint"):
        legacy = ld.load(V1 / "harmony-categorical.json")  # version 1: no fingerprint; re-exported with one
    assert mechanism_from_dict(legacy.to_dict()) == legacy


def test_aggregates_of_another_mechanism_neither_merge_nor_estimate(tmp_path):
    server = ld.load(write(tmp_path / "m.json", HarmonyCategorical(1.0, k=3, m=4, seed=7).to_dict()))
    device = HarmonyCategorical(1.0, k=3, m=4, seed=8)  # the same family and sizes, another projection
    values = np.arange(300) % 3
    ours, theirs = server.aggregate(server.perturb(values, rng=1)), device.aggregate(device.perturb(values, rng=1))
    assert ours.mechanism == server.fingerprint != theirs.mechanism == device.fingerprint
    with pytest.raises(ld.ValidationError, match="it cannot be merged with one of"):
        ours + theirs
    with pytest.raises(ld.ValidationError, match="aggregates only estimate with the mechanism whose reports"):
        server.estimate(theirs)
    same = HarmonyCategorical(1.0, k=3, m=4, seed=7)
    merged = ours + same.aggregate(same.perturb(values, rng=2))
    assert merged.n == 600 and ld.Aggregate.from_dict(json.loads(json.dumps(merged.to_dict()))) == merged


# -- the command line ---------------------------------------------------------------------------------------------
def test_every_class_ends_in_exit_2_and_one_line(tmp_path):
    text = grr_text()
    cases = {
        "huge.json": (text.replace('"k": 4', f'"k": {HUGE}').encode(), "parameters/k"),
        "latin1.json": (text.encode().replace(b'"grr"', b'"gr\xe9"'), "not UTF-8"),
        "nan.json": (text.replace('"epsilon": 1.0', '"epsilon": NaN', 1).encode(), "not a JSON number"),
        "twice.json": (text.replace('"family": "grr"', '"family": "oue", "family": "grr"').encode(), "twice"),
        "no-d.json": (json.dumps(without(json.loads((V1 / "duchi.json").read_text()), "parameters", "d")).encode(),
                      "parameters.d is missing"),
    }
    for name, (content, fragment) in cases.items():
        (tmp_path / name).write_bytes(content)
        assert_one_line_error(lipdesign("verify", tmp_path / name), name, fragment)
    spec = tmp_path / "spec.json"
    spec.write_text(f'{{"prior": {{"probabilities": [0.5, 0.5]}}, "notion": {{"kind": "LIP", "epsilon": {HUGE}}}}}')
    assert_one_line_error(lipdesign("design", spec, "-o", tmp_path / "out.json"), "notion/epsilon")
    assert_one_line_error(lipdesign("mechanism", "laplace", "--epsilon", "1", "-p", f"d={HUGE}", "-o",
                                    tmp_path / "l.json"), "d is an integer of about 401 digits")


# -- property tests ---------------------------------------------------------------------------------------------
#: Deterministic and database-free: the same examples on every run and machine.
FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Names that occur in lipdesign documents, so that arbitrary trees reach past the first checks.
NAMES = ["format", "format_version", "family", "fingerprint", "parameters", "guarantee", "provenance", "epsilon",
         "k", "d", "m", "g", "seed", "grid", "coordinates", "attributes", "table", "prior", "notion", "objective",
         "probabilities", "labels", "counts", "kind", "secret", "prior_set", "verified_epsilons", "claimed",
         "basis", "notion", "detail", "mechanism", "verified_epsilon", "mse", "baselines", "certificate", "values",
         "conditional", "joint", "radius", "center", "lower", "upper", "vertices", "priors"]

numbers = (st.integers(-3, 10) | st.sampled_from([0, -1, 2**31, 2**63, 2**64, 10**400, -(10**400)])
           | st.floats(allow_nan=True, allow_infinity=True) | st.floats(0, 1) | st.sampled_from([0.5, 1.0, 1e-7]))
leaves = (st.none() | st.booleans() | numbers | st.text(max_size=6)
          | st.sampled_from(["lipdesign.mechanism", "lipdesign.harmony", "grr", "table", "LIP", "LDP", "BP-LIP",
                             "frequencies", "exact table", "public", "numeric", *families()]))
trees = st.recursive(leaves, lambda children: st.lists(children, max_size=4)
                     | st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=4), children, max_size=5),
                     max_leaves=24)

#: Real exports of several families (fingerprint kept and dropped), and lipdesign 0.1.0 files.
EXPORTS = [family_class(name).example().to_dict() for name in ("grr", "oue", "olh", "hadamard", "harmony-categorical",
                                                               "harmony-numeric", "harmony-mixed", "duchi", "table",
                                                               "unary", "piecewise")]
EXPORTS += [{name: value for name, value in document.items() if name != "fingerprint"} for document in EXPORTS]
EXPORTS += [json.loads((V1 / f"{name}.json").read_text()) for name in ("grr", "harmony-numeric-public",
                                                                         "lip-binary", "ldp-weighted-sum")]

def outcome(document):
    """Load ``document``: a mechanism that verifies and round-trips, or a LipdesignError (anything else fails)."""
    try:
        mechanism = mechanism_from_dict(document, "fuzzed")
    except ld.LipdesignError:
        return None
    if mechanism.finite:
        assert mechanism.verify().passed
    again = mechanism_from_dict(json.loads(json.dumps(mechanism.to_dict(), allow_nan=False)), "again")
    assert again == mechanism and again.fingerprint == mechanism.fingerprint
    return mechanism


def locations(node, path=()):
    """Every (path, value) in a JSON tree."""
    yield path, node
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from locations(value, (*path, key))


@st.composite
def mutated(draw):
    """A real export with one to three random edits: a value replaced, a number nudged, a key deleted or added."""
    document = copy.deepcopy(draw(st.sampled_from(EXPORTS)))
    for _ in range(draw(st.integers(1, 3))):
        places = list(locations(document))
        path, value = draw(st.sampled_from(places[1:]))
        *parents, last = path
        parent = document
        for part in parents:
            parent = parent[part]
        edit = draw(st.sampled_from(["replace", "nudge", "nudge", "nudge", "delete", "add"]))
        if edit == "nudge" and isinstance(value, (int, float)) and not isinstance(value, bool):
            nudged = [value * 2, -value, value + 1, 0, 10**400, float("nan")]
            if abs(value) < 1e300:
                nudged += [value - 1e-9, value * (1 + 1e-12)]
            parent[last] = draw(st.sampled_from(nudged))
        elif edit == "delete" and isinstance(parent, dict):
            del parent[last]
        elif edit == "add" and isinstance(value, dict):
            value[draw(st.sampled_from(NAMES))] = draw(trees)
        else:
            parent[last] = draw(trees)
    return document


@settings(FUZZ, max_examples=250)
@given(trees)
def test_load_of_an_arbitrary_tree_is_a_mechanism_or_a_lipdesign_error(tree):
    outcome(tree)


@settings(FUZZ, max_examples=250)
@given(st.fixed_dictionaries({"format": st.sampled_from(["lipdesign.mechanism", "lipdesign.harmony"]),
                              "format_version": st.sampled_from([1, 2]),
                              "family": st.sampled_from(families())}).flatmap(
    lambda head: st.dictionaries(st.sampled_from(NAMES), trees, max_size=6).map(lambda rest: {**rest, **head})))
def test_load_of_an_arbitrary_envelope_is_a_mechanism_or_a_lipdesign_error(tree):
    outcome(tree)


@settings(FUZZ, max_examples=1500)
@given(mutated())
def test_load_of_a_mutated_export_is_a_mechanism_or_a_lipdesign_error(document):
    outcome(document)


@settings(FUZZ, max_examples=600)
@given(st.sampled_from(EXPORTS[:11]), st.data())
def test_load_of_a_file_with_mutated_bytes_is_a_mechanism_or_a_lipdesign_error(document, data):
    content = bytearray(json.dumps(document, indent=1).encode())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(content) - 1))
        content[at:at + data.draw(st.integers(0, 3))] = data.draw(st.binary(max_size=3) | st.sampled_from(
            [b"NaN", b"1e400", HUGE.encode(), b'"k": 2, "k": 3, ', b"\xff", b"{", b"]", b"-"]))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.json"
        path.write_bytes(bytes(content))
        try:
            mechanism = ld.load(path)
        except ld.LipdesignError:
            return
    outcome(mechanism.to_dict())


arrays = st.one_of(
    st.lists(st.lists(numbers, min_size=0, max_size=4), min_size=0, max_size=4),
    st.lists(numbers, max_size=5),
    trees,
)


@settings(FUZZ, max_examples=300)
@given(arrays, st.sampled_from([ld.LDP(1.0), ld.LIP(1.0), ld.WorstCaseLIP(0.5)]), trees | st.just([0.5, 0.5]),
       st.booleans())
def test_verify_of_an_arbitrary_array_is_a_certificate_or_a_lipdesign_error(table, notion, prior, exact):
    try:
        certificate = ld.verify(table, notion, None if isinstance(notion, ld.LDP) else prior, exact=exact)
    except ld.LipdesignError:
        return
    matrix = np.asarray(table, dtype=float)
    assert matrix.ndim == 2 and np.isfinite(matrix).all() and (matrix >= 0).all()
    if certificate.passed:  # exact: the tightest epsilon, rounded up; quick: within 1e-9 of the claim
        assert certificate.epsilon <= notion.epsilon * (1 + 1e-9)
    else:
        assert certificate.epsilon >= notion.epsilon * (1 - 1e-9)


SPEC = {"prior": {"probabilities": [0.3, 0.7]}, "notion": {"kind": "LIP", "epsilon": 1.0}}


@settings(FUZZ, max_examples=800)
@given(trees | st.dictionaries(st.sampled_from(["prior", "notion", "objective", "family", "max_rays", "buckets",
                                                "method", "target_gap", "max_rounds"]), trees, max_size=5).map(
    lambda extra: {**SPEC, **extra}))
def test_spec_to_problem_of_an_arbitrary_tree_is_a_problem_or_a_lipdesign_error(spec):
    try:
        prior, notion, objective, options = spec_to_problem(spec, "fuzzed")
    except ld.LipdesignError:
        return
    assert isinstance(prior, ld.Prior) and np.isfinite(prior.probabilities).all() and notion.epsilon > 0
    assert set(options) <= set(spec) and objective.kind in ("frequencies", "histogram", "weighted_sum", "mean")
