"""JSON export of designed tables: the versioned envelope, its schema, and exact re-verification on load, for the
envelope written now (format_version 2) and for lipdesign 0.1.0's (format_version 1, tests/data/v1)."""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import rewrite

import lipdesign as ld
from lipdesign.errors import LipdesignError

#: The same design as the ``exported`` fixture, written by lipdesign 0.1.0.
LEGACY = Path(__file__).resolve().parent / "data" / "v1" / "bp-lip-tv-secret-weighted-sum.json"


def design():
    conditional = np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])
    secret = ld.SecretModel(conditional, [0.5, 0.5], secret_labels=["no", "yes"])
    prior = ld.Prior([0.35, 0.3, 0.35], labels=["low", "mid", "high"])
    notion = ld.LIP(0.5, secret=secret, prior_set=ld.PriorSet.tv_ball(prior.probabilities, 0.02))
    return ld.design(prior, notion, ld.BayesSum([0.0, 1.0, 2.0]))


@pytest.fixture
def exported(tmp_path):
    mechanism = design()
    path = tmp_path / "m.json"
    mechanism.to_json(path)
    return mechanism, path


@pytest.fixture
def legacy(tmp_path):
    path = tmp_path / "legacy.json"
    shutil.copy(LEGACY, path)
    return path


def test_round_trip_keeps_everything_and_reverifies(exported):
    mechanism, path = exported
    loaded = ld.load(path)
    assert np.array_equal(loaded.table, mechanism.table)
    assert loaded.mse == mechanism.mse
    assert loaded.notion.kind == "BP-LIP" and loaded.notion.epsilon == 0.5
    assert np.array_equal(loaded.notion.secret.conditional, mechanism.notion.secret.conditional)
    assert loaded.notion.prior_set.kind == "tv_ball"
    assert loaded.prior.labels == ("low", "mid", "high")
    assert loaded.objective == mechanism.objective
    assert loaded.epsilons == mechanism.epsilons
    # the design record stays in the file but is not trusted: load cannot recompute it without designing again
    assert mechanism.baselines and loaded.baselines == {} and dict(loaded.provenance) == {}
    assert json.loads(path.read_text())["provenance"] == json.loads(json.dumps(dict(mechanism.provenance)))
    assert ld.verify(loaded, exact=True).passed
    document = json.loads(path.read_text())
    assert document["format"] == "lipdesign.mechanism" and document["format_version"] == 2
    assert document["lipdesign_version"] == ld.__version__
    assert document["family"] == "table"
    assert document["guarantee"] == {"notion": "BP-LIP", "epsilon": 0.5, "basis": "exact table",
                                     "detail": "for a latent secret of 2 values, over a tv_ball prior set",
                                     "verified_epsilons": dict(mechanism.epsilons)}


def test_the_legacy_file_of_the_same_design_loads_as_the_same_mechanism(legacy):
    mechanism = design()
    loaded = ld.load(legacy)
    # the same prior, notion and objective; the table up to the uniform mix of the repair, which now starts from the
    # size of the smallest entry and checks the realised table (lipdesign 0.1.0 mixed 1.37e-15, this one 1e-15)
    assert {**loaded.parameters(), "table": None} == {**mechanism.parameters(), "table": None}
    np.testing.assert_allclose(loaded.table, mechanism.table, rtol=0, atol=1e-14)
    assert loaded.epsilons == pytest.approx(mechanism.epsilons, rel=1e-12)


def test_a_table_that_breaks_its_claim_is_refused(exported, legacy):
    _, path = exported
    # Releasing X itself leaks max |ln(T[g,x] / P_x)| >= ln(0.6 / 0.35) > 0.5 about the secret.
    rewrite(path, lambda d: d["parameters"].update(table=np.eye(3).tolist()))
    with pytest.raises(ld.VerificationError, match="tightest epsilon"):
        ld.load(path)
    rewrite(legacy, lambda d: d.update(table=np.eye(3).tolist()))
    with pytest.raises(ld.VerificationError, match="tightest epsilon"):
        ld.load(legacy)


def test_a_claim_tighter_than_the_table_is_refused(exported, legacy):
    _, path = exported
    rewrite(path, lambda d: d["parameters"]["notion"].update(epsilon=0.1))
    with pytest.raises(ld.VerificationError, match="not BP-LIP with eps=0.1"):
        ld.load(path)
    rewrite(legacy, lambda d: d["notion"].update(epsilon=0.1))
    with pytest.raises(ld.VerificationError, match="not BP-LIP with eps=0.1"):
        ld.load(legacy)


def test_a_guarantee_that_does_not_match_the_parameters_is_refused(exported):
    _, path = exported
    for field, value in (("epsilon", 0.1), ("notion", "LDP"), ("basis", "ideal-arithmetic closed form")):
        mechanism, _ = exported
        mechanism.to_json(path)
        rewrite(path, lambda d, field=field, value=value: d["guarantee"].update({field: value}))
        with pytest.raises(ld.FormatError, match=f"guarantee.{field}"):
            ld.load(path)


def test_understated_stored_epsilons_are_refused(exported, legacy):
    _, path = exported
    rewrite(path, lambda d: d["guarantee"]["verified_epsilons"].update(LDP=0.01))
    with pytest.raises(ld.VerificationError, match="understates epsilon"):
        ld.load(path)
    rewrite(legacy, lambda d: d["verified_epsilons"].update(LDP=0.01))
    with pytest.raises(ld.VerificationError, match="understates epsilon"):
        ld.load(legacy)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format_version=3), "format_version 3 is not supported"),
    (lambda d: d.update(format="something.else"), "not a lipdesign mechanism"),
    (lambda d: d["parameters"].pop("table"), "'table' is a required property"),
    (lambda d: d["parameters"]["notion"].update(epsilon=-1), "notion/epsilon"),
    (lambda d: d["parameters"]["table"][0].append(0.0), "table is .*; it must be a rectangular array of numbers"),
    (lambda d: d["parameters"]["prior"].update(probabilities=[0.5, 0.5, 0.5]), "prior sums to 1.5; it must sum to 1"),
    (lambda d: d.update(pickle="gAN9cQAu"), "Additional properties"),
    (lambda d: d.update(family="gaussian"), "family is 'gaussian'; it must be one of the registered families"),
    (lambda d: d.update(provenance=[1]), "provenance"),
])
def test_malformed_documents_get_clear_errors(exported, change, message):
    _, path = exported
    rewrite(path, change)
    with pytest.raises(ld.LipdesignError, match=message):
        ld.load(path)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format_version=2), "'parameters' is a required property"),  # a version 1 body is not v2
    (lambda d: d.update(format_version=3), "format_version 3 is not supported"),
    (lambda d: d.update(format="something.else"), "not a lipdesign mechanism"),
    (lambda d: d.pop("table"), "'table' is a required property"),
    (lambda d: d["notion"].update(epsilon=-1), "notion/epsilon"),
    (lambda d: d["table"][0].append(0.0), "table is .*; it must be a rectangular array of numbers"),
    (lambda d: d["prior"].update(probabilities=[0.5, 0.5, 0.5]), "prior sums to 1.5; it must sum to 1"),
    (lambda d: d.update(pickle="gAN9cQAu"), "Additional properties"),
    (lambda d: d.update(mse=0.5), "mse is 0.5 but the stored table gives"),
])
def test_malformed_legacy_documents_get_clear_errors(legacy, change, message):
    rewrite(legacy, change)
    with pytest.raises(ld.LipdesignError, match=message):
        ld.load(legacy)


def test_not_json_and_missing_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ld.FormatError, match="not valid JSON"):
        ld.load(path)
    with pytest.raises(ld.FormatError, match="cannot read"):
        ld.load(tmp_path / "missing.json")


def test_save_is_to_json(exported, tmp_path):
    mechanism, path = exported
    ld.save(mechanism, tmp_path / "saved.json")
    assert (tmp_path / "saved.json").read_text() == path.read_text()


def test_no_pickle_anywhere_in_the_package():
    root = Path(ld.__file__).parent
    for source in root.rglob("*.py"):
        text = source.read_text()
        assert "import pickle" not in text and "pickle.load" not in text, source


def test_a_table_whose_sampler_breaks_its_claim_is_refused(tmp_path):
    """Stored numbers that pass exact LDP verification at eps = 1 (ratio of the first column e (1 - 1e-15)) but
    whose tiny entries the alias sampler realises as 71 and 26 uniforms out of 2^53 (ratio 2.73 > e): the
    realised table is the one verified, at construction and so at load."""
    low, high = 2.868983473629152e-15, 7.798705642515425e-15
    table = np.array([[high, 0.5, 0.5 - high], [low, 0.5, 0.5 - low]])
    assert high / low <= math.e * (1 - 1e-16)
    with pytest.raises(ld.VerificationError, match="as sampled"):
        ld.TableMechanism(table, ld.LDP(1.0), ld.Prior([0.5, 0.5]))
    safe = ld.TableMechanism(np.array([[0.6, 0.4], [0.4, 0.6]]), ld.LDP(1.0), ld.Prior([0.5, 0.5]))
    path = tmp_path / "m.json"
    ld.save(safe, path)
    rewrite(path, lambda d: d["parameters"].update(table=table.tolist()))
    with pytest.raises(ld.VerificationError, match="realises"):
        ld.load(path)


def test_a_mechanism_file_whose_ldp_notion_carries_a_secret_is_refused(exported, tmp_path):
    """A notion field the kind cannot use is refused in a mechanism file too, never dropped on loading."""
    mechanism, _ = exported
    ldp = ld.design(mechanism.prior, ld.LDP(1.0), baselines=False)
    ldp_path = tmp_path / "ldp.json"
    ldp.to_json(ldp_path)
    secret = mechanism.notion.secret.to_dict()
    rewrite(ldp_path, lambda document: document["parameters"]["notion"].update(secret=secret))
    with pytest.raises(LipdesignError, match="notion.secret is set; an LDP notion"):
        ld.load(ldp_path)


def test_every_family_of_ours_has_its_parameters_in_the_format_schema():
    """The v2 schema states each built-in family's parameters (a family added with ``register`` is validated by its
    ``from_parameters`` only: docs/adding-a-family.md), and each example's parameters satisfy it."""
    import jsonschema

    from lipdesign.io.schema import schema
    from lipdesign.mechanisms import families, family_class

    document = schema("mechanism")
    for family in families():
        definition = document["$defs"].get(f"parameters_{family}")
        assert definition is not None, family
        parameters = json.loads(json.dumps(family_class(family).example().parameters()))
        jsonschema.validate(parameters, {**document, "$ref": f"#/$defs/parameters_{family}"})
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**parameters, "no such parameter": 1},
                                {**document, "$ref": f"#/$defs/parameters_{family}"})
