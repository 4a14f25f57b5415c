"""ld.compare and `lipdesign compare`: every family designed under the same notion, side by side (docs/math.md
§7.3), against the families designed one by one and the closed forms of the fixed protocols."""

import json

import numpy as np
import pytest
from helpers import lipdesign, zipf

import lipdesign as ld
from lipdesign.designer.bounds import per_bin_bound
from lipdesign.mechanisms.oracle import pure_variance


def test_every_family_under_lip_with_the_rr_optimum_first():
    """k = 6: the rows are the three families as ld.design builds them; the optimal RR table is the best (no
    encoding beats it under the same notion, docs/math.md §7.3) and its certified bound is the common bound."""
    prior = zipf(6)
    comparison = ld.compare(prior, ld.LIP(1.0))
    rows = {row.family: row for row in comparison.rows}
    assert list(rows) == ["rr", "unary", "hashing", "cms"]
    for family, row in rows.items():
        alone = ld.design(prior, ld.LIP(1.0), family=family, baselines=False)
        assert row.mechanism == alone and row.figure == pytest.approx(alone.mse, rel=1e-12)
    assert comparison.best is rows["rr"]
    assert rows["rr"].figure <= min(rows["unary"].figure, rows["hashing"].figure)
    assert comparison.bound_name == "the RR design's certificate"
    assert comparison.bound <= rows["rr"].figure and comparison.bound >= per_bin_bound(ld.Prior(prior), ld.LIP(1.0))
    assert rows["unary"].report_bits == 6 and rows["hashing"].report_bits == 7  # 2 x 7 x 6 = 84 reports
    assert rows["cms"].report_bits == 16 + 16 and rows["cms"].mechanism.family == "cms-lip"  # row, then m = 16 bits
    assert rows["rr"].report_bits == int(np.ceil(np.log2(rows["rr"].mechanism.table.shape[1])))
    text = str(comparison)
    assert "LIP eps=1, k=6" in text and "implies at most 2 eps-LDP" in text and "local hashing (g = 2)" in text


def test_under_ldp_the_encodings_are_the_ldp_unary_design_and_olh_with_their_closed_form_variances():
    prior = zipf(5)
    comparison = ld.compare(prior, ld.LDP(2.0))
    rows = {row.family: row for row in comparison.rows}
    unary, olh = rows["unary"].mechanism, rows["hashing"].mechanism
    assert unary.family == "unary" and unary.notion == ld.LDP(2.0) and isinstance(olh, ld.mechanisms.OLH)
    p, q = unary.bit_probabilities
    assert rows["unary"].figure == pytest.approx(pure_variance(prior, 1, p, q).sum(), rel=1e-12)
    assert rows["hashing"].figure == pytest.approx(pure_variance(prior, 1, olh.p, olh.q).sum(), rel=1e-12)
    assert rows["unary"].figure < float(ld.mechanisms.OUE(2.0, 5).variance(prior).sum())
    assert comparison.best is rows["rr"]
    assert "local hashing: OLH, g = 8 (LDP)" in str(comparison)
    sketch = rows["cms"].mechanism
    assert isinstance(sketch, ld.mechanisms.CountMeanSketch) and sketch.epsilon == 2.0
    assert rows["cms"].figure == pytest.approx(float(sketch.variance_at(ld.Prior(prior)).sum()), rel=1e-12)


def test_a_family_that_cannot_be_designed_keeps_its_row_with_the_reason():
    """k = 20 with a latent secret and method='exact': no RR design (past enumeration), no local hashing (it
    protects X only); the unary encoding still comes. By default column generation designs the RR row."""
    secret = ld.SecretModel(np.random.default_rng(4).dirichlet(np.ones(20), size=2))
    comparison = ld.compare(zipf(20), ld.LIP(1.0, secret=secret), method="exact")
    rows = {row.family: row for row in comparison.rows}
    assert rows["rr"].figure is None and "not designed: k is 20" in rows["rr"].note
    assert rows["hashing"].figure is None and rows["hashing"].note.startswith("does not apply")
    assert rows["unary"].figure is not None
    rr = ld.compare(zipf(20), ld.LIP(1.0, secret=secret), families=("rr",)).rows[0]
    assert "column generation" in rr.mechanism.provenance["method"] and rr.mechanism.verify().passed
    encodings = ld.compare(zipf(40), ld.LIP(1.0), families=("unary", "hashing"))
    assert all(row.figure is not None for row in encodings.rows)
    assert encodings.bound_name == "relaxation dual, docs/math.md §11"  # above the per-bin bound (s = 0)
    assert encodings.bound >= ld.designer.per_bin_bound(ld.Prior(zipf(40)), ld.LIP(1.0))
    bounded = ld.compare(zipf(4), ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball(zipf(4), 0.05)))
    unary, hashing, sketch = bounded.rows[1:]
    assert unary.figure is not None and unary.mechanism.verify().passed
    assert hashing.figure is None and hashing.note.startswith("does not apply: notion is LIP"), hashing.note
    assert sketch.figure is None and sketch.note.startswith("does not apply: notion is LIP"), sketch.note
    with pytest.raises(ld.ValidationError, match="families has 'tables'"):
        ld.compare(zipf(4), ld.LIP(1.0), families=("rr", "tables"))
    with pytest.raises(ld.ValidationError, match="prior"):
        ld.compare([0.5, 0.5, 0.0], ld.LIP(1.0))


def test_the_compare_command_prints_the_table(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"prior": {"probabilities": zipf(6).tolist()},
                                "notion": {"kind": "LIP", "epsilon": 1.0}, "family": "hashing"}))
    result = lipdesign("compare", spec, "-q")
    assert result.returncode == 0, result.stderr
    assert "randomized response (optimal table)" in result.stdout and "unary encoding" in result.stdout
    assert "the spec names family 'hashing'" in result.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"prior": {"probabilities": [0.5, 0.5]}, "notion": {"kind": "LIP", "epsilon": -1}}))
    result = lipdesign("compare", bad)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "epsilon" in result.stderr


def test_the_posterior_mean_objective_compares_rr_and_unary_with_the_section_10_bound():
    from lipdesign.designer.bounds import bayes_histogram_bound

    prior = zipf(6)
    comparison = ld.compare(prior, ld.LIP(1.0), ld.BayesHistogram())
    rows = {row.family: row for row in comparison.rows}
    assert rows["rr"].figure <= rows["unary"].figure and rows["hashing"].figure is None
    assert rows["unary"].figure == pytest.approx(rows["unary"].mechanism.bayes_risk)
    assert comparison.bound == bayes_histogram_bound(ld.Prior(prior), 1.0) <= rows["rr"].figure * (1 + 1e-9)


def test_compare_takes_local_hashing_buckets():
    comparison = ld.compare(zipf(6), ld.LIP(2.0), buckets=4)
    hashing = comparison.rows[2]
    assert hashing.mechanism.family == "table" and hashing.mechanism.provenance["buckets"] == 4
    assert (hashing.figure == pytest.approx(hashing.mechanism.mse)
            and "local hashing (g = 4, pool of 42)" in str(comparison))
