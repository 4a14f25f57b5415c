"""A latent secret with a declared Pr[G] (issue 23, item 2): the adversary holding the joint sees Pr[Y = y] =
(Pr[G] T) . q_y, so every claim for the secret must hold there as well as at the design prior, which may differ
from that marginal within MARGINAL_ATOL (docs/math.md §1). The ratios are recomputed here in Fractions."""

import json
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.mechanisms.base import content_fingerprint
from lipdesign.model.secret import MARGINAL_ATOL


def _declared_marginal(secret_prior, conditional):
    """sum_g Pr[G=g] T[g, x] in Fractions, Pr[G] and each row of T normalised."""
    weights = [Fraction(float(p)) for p in secret_prior]
    total = sum(weights)
    rows = [[Fraction(float(t)) for t in row] for row in conditional]
    return [sum(w / total * row[x] / sum(row) for w, row in zip(weights, rows)) for x in range(len(rows[0]))]


def _secret_ratio(table, conditional, prior):
    """The largest Pr[G=g | Y=y] / Pr[G=g] and its inverse over y and g, exactly, with Pr[X] = ``prior``."""
    rows = [[Fraction(float(v)) for v in row] for row in np.asarray(table, dtype=float)]
    rows = [[v / sum(row) for v in row] for row in rows]
    secret_rows = [[Fraction(float(t)) for t in row] for row in conditional]
    secret_rows = [[t / sum(row) for t in row] for row in secret_rows]
    worst = Fraction(0)
    for y in range(len(rows[0])):
        column = [row[y] for row in rows]
        mass = sum(p * q for p, q in zip(prior, column))
        if mass == 0:
            continue
        for row in secret_rows:
            secret_mass = sum(t * q for t, q in zip(row, column))
            worst = max(worst, secret_mass / mass, mass / secret_mass)
    return worst


def _moved_problem(seed):
    """k = 4, a binary secret, and a design prior moved 9.9e-7 off the declared marginal (the audit's case)."""
    rng = np.random.default_rng(seed)
    conditional = rng.dirichlet(np.ones(4), size=2)
    secret_prior = rng.dirichlet(np.ones(2))
    marginal = secret_prior @ conditional
    step = np.zeros(4)
    step[rng.permutation(4)[:2]] = [0.99 * MARGINAL_ATOL, -0.99 * MARGINAL_ATOL]
    return ld.SecretModel(conditional, secret_prior), ld.Prior(marginal + step)


def test_the_declared_marginal_is_exact_with_rows_normalised():
    conditional = [[0.2, 0.3, 0.5 - 4e-10], [0.6, 0.1, 0.3]]  # a row 4e-10 short of 1: within the tolerance
    secret = ld.SecretModel(conditional, [0.25, 0.75])
    assert list(secret.marginal) == _declared_marginal([0.25, 0.75], conditional)


@pytest.mark.parametrize("family", ["rr", "unary"])
def test_the_claim_for_the_secret_holds_at_the_declared_joint(family):
    broken = []
    for seed in range(10):
        secret, prior = _moved_problem(seed)
        mechanism = ld.design(prior, ld.LIP(0.5, secret=secret), ld.Frequencies(), family=family, baselines=False)
        declared = _declared_marginal(secret.secret_prior, secret.conditional)
        ratio = _secret_ratio(mechanism.privacy_table(), secret.conditional, declared)
        printed = mechanism.epsilons["claimed"]
        assert printed <= 0.5
        if ratio > Fraction(np.exp(printed)) * (1 + Fraction(1, 10**12)):  # exp's own rounding is far below this
            broken.append((seed, float(np.log(float(ratio))), printed))
    assert not broken, f"the secret's LIP at the declared joint exceeds the printed epsilon: {broken}"


def test_a_file_whose_declared_joint_breaks_the_claim_is_refused(tmp_path):
    """A file as an older lipdesign wrote it (certified at the design prior only; fingerprint over its content):
    loading checks the claim at the declared joint too."""
    secret, prior = _moved_problem(0)
    mechanism = ld.design(prior, ld.LIP(0.5, secret=secret), ld.Frequencies(), baselines=False)
    data = mechanism.to_dict()
    # Pr[G] moved by 1e-8: the marginal stays within MARGINAL_ATOL of the design prior but moves off the joint the
    # table was certified for.
    stored = data["parameters"]["notion"]["secret"]["secret_prior"]
    breaking = [moved for moved in ([stored[0] + 1e-8, stored[1] - 1e-8], [stored[0] - 1e-8, stored[1] + 1e-8])
                if _secret_ratio(mechanism.privacy_table(), secret.conditional,
                                 _declared_marginal(moved, secret.conditional))
                > Fraction(np.exp(0.5)) * (1 + Fraction(1, 10**12))]
    assert breaking, "one of the two edits must break the claim at the joint"
    data["parameters"]["notion"]["secret"]["secret_prior"] = breaking[0]
    data["fingerprint"] = content_fingerprint(data["family"], data["parameters"])
    path = tmp_path / "secret.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ld.VerificationError, match="not LIP with eps=0.5"):
        ld.load(path)
    data["parameters"]["notion"]["secret"]["secret_prior"] = stored  # the file as written loads
    data["fingerprint"] = content_fingerprint(data["family"], data["parameters"])
    path.write_text(json.dumps(data))
    assert ld.load(path).epsilons["claimed"] <= 0.5
