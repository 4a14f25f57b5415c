"""JSON export: versioned envelope, schema, exact re-verification on load."""

import json
from pathlib import Path

import numpy as np
import pytest

import lipdesign as ld


@pytest.fixture
def exported(tmp_path):
    conditional = np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])
    secret = ld.SecretModel(conditional, [0.5, 0.5], secret_labels=["no", "yes"])
    prior = ld.Prior([0.35, 0.3, 0.35], labels=["low", "mid", "high"])
    notion = ld.LIP(0.5, secret=secret, prior_set=ld.PriorSet.tv_ball(prior.probabilities, 0.02))
    mechanism = ld.design(prior, notion, ld.WeightedSum([0.0, 1.0, 2.0]))
    path = tmp_path / "m.json"
    mechanism.to_json(path)
    return mechanism, path


def rewrite(path, change):
    document = json.loads(Path(path).read_text())
    change(document)
    Path(path).write_text(json.dumps(document))


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
    assert ld.verify(loaded, exact=True).passed
    document = json.loads(path.read_text())
    assert document["format"] == "lipdesign.mechanism" and document["format_version"] == 1
    assert document["lipdesign_version"] == ld.__version__


def test_a_table_that_breaks_its_claim_is_refused(exported):
    _, path = exported

    # Releasing X itself leaks max |ln(T[g,x] / P_x)| >= ln(0.6 / 0.35) > 0.5 about the secret.
    rewrite(path, lambda d: d.update(table=np.eye(3).tolist()))
    with pytest.raises(ld.VerificationError, match="tightest epsilon"):
        ld.load(path)


def test_a_claim_tighter_than_the_table_is_refused(exported):
    _, path = exported
    rewrite(path, lambda d: d["notion"].update(epsilon=0.1))
    with pytest.raises(ld.VerificationError, match="not BP-LIP with eps=0.1"):
        ld.load(path)


def test_understated_stored_epsilons_are_refused(exported):
    _, path = exported
    rewrite(path, lambda d: d["verified_epsilons"].update(LDP=0.01))
    with pytest.raises(ld.VerificationError, match="understates epsilon"):
        ld.load(path)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format_version=2), "format_version 2 is not supported"),
    (lambda d: d.update(format="something.else"), "not a lipdesign mechanism"),
    (lambda d: d.pop("table"), "'table' is a required property"),
    (lambda d: d["notion"].update(epsilon=-1), "notion/epsilon"),
    (lambda d: d["table"][0].append(0.0), "table must be a rectangular array of numbers"),
    (lambda d: d["prior"].update(probabilities=[0.5, 0.5, 0.5]), "prior must sum to 1"),
    (lambda d: d.update(pickle="gAN9cQAu"), "Additional properties"),
])
def test_malformed_documents_get_clear_errors(exported, change, message):
    _, path = exported
    rewrite(path, change)
    with pytest.raises(ld.LipdesignError, match=message):
        ld.load(path)


def test_not_json_and_missing_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ld.FormatError, match="not valid JSON"):
        ld.load(path)
    with pytest.raises(ld.FormatError, match="cannot read"):
        ld.load(tmp_path / "missing.json")


def test_no_pickle_anywhere_in_the_package():
    root = Path(ld.__file__).parent
    for source in root.rglob("*.py"):
        text = source.read_text()
        assert "import pickle" not in text and "pickle.load" not in text, source
