"""What a file says about itself must hold together (issue 23, item 9 and the loader's mutation gaps): a current
file needs its fingerprint, a 0.1.0 file says that none can be checked, stored epsilons are refused under a name the
mechanism never verifies or a hair below the verified figure, and an aggregate that contradicts itself (its
mechanism, its family, its shapes) estimates nothing."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import lipdesign, one_line_error

import lipdesign as ld
from lipdesign.errors import LegacyFileWarning
from lipdesign.verification import verify_table

V1 = Path(__file__).resolve().parent / "data" / "v1"


@pytest.fixture
def grr_file(tmp_path):
    mechanism = ld.mechanisms.GRR(1.0, 4)
    path = tmp_path / "grr.json"
    ld.save(mechanism, path)
    return mechanism, path


def test_a_current_file_without_its_fingerprint_is_refused(grr_file, tmp_path):
    _, path = grr_file
    data = json.loads(path.read_text())
    del data["fingerprint"]
    edited = tmp_path / "no-fingerprint.json"
    edited.write_text(json.dumps(data))
    with pytest.raises(ld.FormatError, match="fingerprint is missing; a format_version 2 file must carry"):
        ld.load(edited)
    result = lipdesign("verify", edited, cwd=tmp_path)
    assert result.returncode == 2 and "fingerprint is missing" in one_line_error(result)


def test_a_harmony_file_whose_seed_was_changed_and_fingerprint_deleted_is_refused(tmp_path):
    mechanism = ld.mechanisms.HarmonyCategorical(1.0, 5, 16, seed=3)
    data = mechanism.to_dict()
    data["parameters"]["seed"] = 4
    del data["fingerprint"]
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ld.FormatError, match="fingerprint is missing"):
        ld.load(path)


def test_a_version_1_file_loads_with_a_warning_that_its_fingerprint_cannot_be_checked(tmp_path):
    data = json.loads((V1 / "harmony-categorical.json").read_text())
    data["parameters"]["seed"] += 1  # 0.1.0 recorded no fingerprint: the edit cannot be told from the original
    path = tmp_path / "seed-edited.json"
    path.write_text(json.dumps(data))
    with pytest.warns(LegacyFileWarning, match="lipdesign 0.1.0 file, which has no fingerprint"):
        mechanism = ld.load(path)
    assert mechanism.verify().passed
    result = lipdesign("verify", path, cwd=tmp_path)
    assert result.returncode == 0
    warning = [line for line in result.stderr.splitlines() if line]
    assert warning == [(f"lipdesign: warning: {path} is a lipdesign 0.1.0 file, which has no fingerprint: its claim "
                       "is re-verified, but an edit that keeps the claim (a public seed, a table entry) cannot be "
                       "detected; save it again (ld.save) and give the devices and the server that copy")]


def test_a_stored_epsilon_under_a_name_never_verified_is_refused(grr_file, tmp_path):
    _, path = grr_file
    data = json.loads(path.read_text())
    data["guarantee"]["verified_epsilons"]["LDP"] = 1.0  # GRR verifies only its claim; the schema allows any name
    edited = tmp_path / "named.json"
    edited.write_text(json.dumps(data))
    with pytest.raises(ld.FormatError, match=r"verified_epsilons.LDP is 1.0, but GRR verifies only \['claimed'\]"):
        ld.load(edited)


@pytest.mark.parametrize("ulps", [1, 2])
@pytest.mark.parametrize("name", ["claimed", "LIP for X", "LDP"])
def test_a_version_1_table_file_understating_by_an_ulp_or_two_is_refused(tmp_path, ulps, name):
    data = json.loads((V1 / "lip-histogram.json").read_text())
    notion = ld.LIP(data["notion"]["epsilon"])
    kinds = {"claimed": notion, "LIP for X": notion, "LDP": ld.LDP(notion.epsilon)}
    # the stored table's own figure (what 0.1.0 recorded), computed here from the file's numbers
    figure = verify_table(np.array(data["table"]), kinds[name], ld.Prior(data["prior"]["probabilities"])).epsilon
    data["verified_epsilons"][name] = figure
    for _ in range(ulps):
        data["verified_epsilons"][name] = math.nextafter(data["verified_epsilons"][name], -math.inf)
    path = tmp_path / "understated.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ld.VerificationError, match=f"verified_epsilons.{name} is .* the file understates epsilon"):
        ld.load(path)


@pytest.fixture
def grr_aggregate(grr_file):
    mechanism, path = grr_file
    reports = mechanism.perturb(np.random.default_rng(0).integers(0, 4, 1000), rng=1)
    return mechanism, path, mechanism.aggregate(reports)


def _edited(aggregate, edit):
    document = aggregate.to_dict()
    edit(document)
    return document


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(mechanism="0" * 64), "aggregate is of mechanism 0000"),
    (lambda d: d.update(mechanism=d["mechanism"].upper()), "aggregates only estimate with the mechanism"),
    (lambda d: d.update(family="oue"), r"\(oue\); this GRR is [0-9a-f]{64} \(grr\)"),
    (lambda d: d["statistics"]["support"].update(shape=[-1]), r"shape is \[-1\], which does not fit its 4 data"),
    (lambda d: d["statistics"]["support"].update(shape=[2, -1]), r"shape is \[2, -1\], which does not fit"),
    (lambda d: d["statistics"]["support"].update(shape=[4.0]), r"shape is \[4.0\], which does not fit"),
], ids=["other-mechanism", "mechanism-case", "family", "shape-infer", "shape-infer-2d", "shape-float"])
def test_an_aggregate_that_contradicts_itself_estimates_nothing(grr_aggregate, tmp_path, edit, message):
    mechanism, path, aggregate = grr_aggregate
    document = _edited(aggregate, edit)
    with pytest.raises(ld.ValidationError, match=message):
        mechanism.estimate(ld.Aggregate.from_dict(document))
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps(document))
    result = lipdesign("estimate", path, counts, cwd=tmp_path)
    assert result.returncode == 2 and "lipdesign: error:" in one_line_error(result)


def test_aggregates_of_one_fingerprint_and_two_families_do_not_merge(grr_aggregate):
    _, _, aggregate = grr_aggregate
    other = ld.Aggregate.from_dict(_edited(aggregate, lambda d: d.update(family="oue")))
    with pytest.raises(ld.ValidationError, match="cannot be merged"):
        aggregate + other
