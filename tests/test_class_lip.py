"""Class-symmetric LIP designs (docs/math.md §11): every output enumerated at small k from the definition, against
which the sampler, the exact certificate, the estimate and its variance are checked; the designs against the exact
table optimum; ld.design at a large k with a few classes."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import lipdesign as ld
from lipdesign.designer.classes import class_symmetric_design, grouped_design
from lipdesign.errors import ValidationError
from lipdesign.mechanisms import unbiased_frequencies
from lipdesign.mechanisms.class_lip import ClassSymmetricLIP, balanced_orbits
from lipdesign.testing import check_mechanism
from lipdesign.verification import verify_table


def unpack(reports, k):
    orbit = reports[:, 0].astype(int) + 256 * reports[:, 1].astype(int)
    bits = np.unpackbits(reports[:, 2:], axis=1, count=2 * k, bitorder="little").astype(bool)
    return orbit, bits


def outputs_of(mechanism):
    """Every output (o, z, H) written out: z any value of the orbit's free class, H any choice of the orbit's count
    of values of each class among those other than z."""
    k, classes = mechanism.k, np.asarray(mechanism.classes)
    outputs = []
    for o, orbit in enumerate(mechanism.orbits):
        for z in np.flatnonzero(classes == orbit["free"]):
            choices = [itertools.combinations([v for v in np.flatnonzero(classes == c) if v != z], h)
                       for c, h in enumerate(orbit["high"])]
            for parts in itertools.product(*choices):
                outputs.append((o, int(z), tuple(sorted(int(v) for part in parts for v in part))))
    assert all(len(set(o)) == 1 for o in [[k]])
    return outputs


def realised_table(mechanism, outputs):
    """Pr[(o, z, H) | x] as the sampler realises it (Fractions): Pr[o | x's class] from the class's orbit
    thresholds, Pr[x's case | o, class] from the case thresholds, divided by the number of outputs of o in which x
    has that case (counted here in the list of outputs)."""
    classes = np.asarray(mechanism.classes)

    def case(x, output):
        return 0 if output[1] == x else 1 if x in output[2] else 2

    table = []
    for x in range(mechanism.k):
        c = classes[x]
        thresholds, ends = mechanism._draws[c]
        tally = {}
        for output in outputs:
            key = (output[0], case(x, output))
            tally[key] = tally.get(key, 0) + 1
        row = []
        for output in outputs:
            o, kind = output[0], case(x, output)
            orbit = Fraction(float(thresholds[o])) - (Fraction(float(thresholds[o - 1])) if o else 0)
            free_end, high_end = Fraction(float(ends[o][0])), Fraction(float(ends[o][1]))
            chance = [free_end, high_end - free_end, 1 - high_end][kind]
            row.append(orbit * chance / tally[(o, kind)])
        table.append(row)
    return np.array(table, dtype=object)


def index_of(mechanism, reports, outputs):
    keys = {output: i for i, output in enumerate(outputs)}
    orbit, bits = unpack(reports, mechanism.k)
    k = mechanism.k
    return np.array([keys[(int(o), int(np.flatnonzero(row[k:])[0]), tuple(np.flatnonzero(row[:k]).tolist()))]
                     for o, row in zip(orbit, bits)])


def designed(probabilities, epsilon):
    return class_symmetric_design(ld.Prior(probabilities), epsilon)[0]


SMALL = [ClassSymmetricLIP.example(), designed([0.3, 0.2, 0.2, 0.1, 0.1, 0.1], 1.0),
         designed([0.4, 0.15, 0.15, 0.15, 0.15], 0.5), designed([0.25, 0.25, 0.125, 0.125, 0.125, 0.125], 2.0),
         # a prior without classes, grouped ({0.11, 0.1} and {0.2, 0.19}) and certified at the prior itself
         grouped_design(ld.Prior([0.3, 0.2, 0.19, 0.11, 0.1, 0.1]), ld.LIP(1.0))[0]]


@pytest.mark.parametrize("mechanism", SMALL, ids=lambda m: f"k={m.k},eps={m.epsilon},orbits={len(m.orbits)}")
def test_the_sampler_draws_the_enumerated_table(mechanism):
    outputs = outputs_of(mechanism)
    table = np.array(realised_table(mechanism, outputs), dtype=float)
    np.testing.assert_allclose(table.sum(axis=1), 1.0, atol=1e-12)
    rng = np.random.default_rng(11)
    n = 40_000
    for x in range(mechanism.k):
        counts = np.bincount(index_of(mechanism, mechanism.perturb(np.full(n, x), rng=rng), outputs),
                             minlength=len(outputs))
        expected = n * table[x]
        assert counts[expected == 0].sum() == 0
        keep = expected > 0
        assert stats.chisquare(counts[keep], expected[keep] * counts.sum() / expected[keep].sum()).pvalue > 1e-4


@pytest.mark.parametrize("mechanism", SMALL, ids=lambda m: f"k={m.k},eps={m.epsilon},orbits={len(m.orbits)}")
def test_the_certificate_is_the_enumerated_tables_exact_epsilon(mechanism):
    table = realised_table(mechanism, outputs_of(mechanism))
    lip = verify_table(table, ld.LIP(mechanism.epsilon), mechanism.prior)
    assert mechanism.verify().epsilon == lip.epsilon and lip.passed and mechanism.verify().passed
    assert mechanism.verified_epsilons()["LDP"] == verify_table(table, ld.LDP(2 * mechanism.epsilon)).epsilon
    for seed in range(3):
        other = np.random.default_rng(seed).dirichlet(np.ones(mechanism.k))
        assert mechanism.certificate_at(other).epsilon == verify_table(table, ld.LIP(mechanism.epsilon),
                                                                       ld.Prior(other)).epsilon


@pytest.mark.parametrize("mechanism", SMALL, ids=lambda m: f"k={m.k},eps={m.epsilon},orbits={len(m.orbits)}")
def test_the_estimate_and_its_variance_are_those_of_the_enumerated_table(mechanism):
    """The estimate equals the GLS estimate of the enumerated table at the design prior; the variance formula equals
    diag(B (diag(pi) - Q^T diag(f) Q) B^T) with B the estimate's matrix read off one report of each output; mse is
    tr(M^-1) - 1 of the enumerated table; the estimate is unbiased at a truth that is not the design prior."""
    outputs = outputs_of(mechanism)
    q = np.array(realised_table(mechanism, outputs), dtype=float)
    rng = np.random.default_rng(5)
    reports = mechanism.perturb(rng.integers(0, mechanism.k, size=3000), rng=rng)
    counts = np.bincount(index_of(mechanism, reports, outputs), minlength=len(outputs))
    estimate = np.asarray(mechanism.estimate(reports))
    np.testing.assert_allclose(estimate, unbiased_frequencies(q, counts, prior=mechanism.class_prior.probabilities),
                               atol=1e-9)
    b = np.column_stack([np.asarray(mechanism.estimate(report_of(mechanism, output))) for output in outputs])
    np.testing.assert_allclose(b @ (counts / counts.sum()), estimate, atol=1e-9)
    f = rng.dirichlet(np.ones(mechanism.k))
    covariance = b @ (np.diag(q.T @ f) - q.T @ (f[:, None] * q)) @ b.T
    np.testing.assert_allclose(mechanism.variance(f, n=1), np.diag(covariance), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(b @ (q.T @ f), f, atol=1e-9)
    p = mechanism.prior.probabilities  # the prior of the claim: mse is the variance there, given the values
    assert mechanism.mse == pytest.approx(np.trace(b @ (np.diag(q.T @ p) - q.T @ (p[:, None] * q)) @ b.T), rel=1e-9)
    if mechanism.claim_prior is None:  # at the class prior the GLS estimate's figure is tr(M^-1) - 1
        information = q @ np.diag(1 / (q.T @ p)) @ q.T
        assert mechanism.mse == pytest.approx(np.trace(np.linalg.inv(information)) - 1, rel=1e-9)
    # the ratios are the realised Pr[y | x] / Pr[y] at the class prior, output by output
    class_p = mechanism.class_prior.probabilities
    for index, (o, z, high) in enumerate(outputs):
        for x in range(mechanism.k):
            case = "free" if x == z else "high" if x in high else "low"
            assert mechanism.ratios()[(o, mechanism.classes[x], case)] == pytest.approx(
                q[x, index] / (class_p @ q[:, index]), rel=1e-9)


def report_of(mechanism, output):
    o, z, high = output
    k = mechanism.k
    bits = np.zeros(2 * k, dtype=bool)
    bits[list(high)] = True
    bits[k + z] = True
    return np.concatenate([[o % 256, o // 256], np.packbits(bits, bitorder="little")]).astype(np.uint8)[None, :]


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_the_design_is_the_exact_table_optimum(epsilon):
    """Three classes at k = 11: the class-symmetric design equals the optimum over every extreme ray (the exact
    method, no symmetry assumed) up to the margins on e^eps (1e-8 for the orbits, 1e-10 for tables); both are
    certified exactly."""
    prior = ld.Prior([0.3] + [0.1] * 4 + [0.05] * 6)
    mechanism = designed(prior.probabilities, epsilon)
    table = ld.design(prior, ld.LIP(epsilon), baselines=False, method="exact")
    assert mechanism.mse == pytest.approx(table.mse, rel=1e-7) and mechanism.verify().passed  # levels 1e-8 inside
    assert mechanism.mse >= table.mse * (1 - 1e-12)


def test_ld_design_returns_the_class_design_at_a_head_and_a_uniform_tail():
    """A prior of 5 known frequencies and 395 equally likely others (k = 400): ld.design returns the class design,
    certified by the relaxation dual bound within 1 %, far below local hashing and unary encoding."""
    head = np.array([0.2, 0.1, 0.1, 0.05, 0.05])
    p = np.concatenate([head, np.full(395, (1 - head.sum()) / 395)])
    mechanism = ld.design(p, ld.LIP(1.0), baselines=False)
    assert mechanism.family == "class-lip" and mechanism.verify().passed
    assert mechanism.optimality["gap"] < 0.01
    assert mechanism.mse == pytest.approx(mechanism.optimality["variance"], rel=1e-9)
    assert mechanism.mse < 0.5 * ld.design(p, ld.LIP(1.0), family="hashing", baselines=False).mse
    truth = np.random.default_rng(2).dirichlet(np.ones(400))
    values = np.random.default_rng(3).choice(400, size=20_000, p=truth)
    estimate = mechanism.estimate(mechanism.perturb(values, rng=4))
    z = (np.asarray(estimate) - np.bincount(values, minlength=400) / values.size) / estimate.standard_errors
    assert np.abs(z).max() < 5 and 0.8 < z.std() < 1.2


@pytest.mark.parametrize("mechanism", [SMALL[1], SMALL[-1]], ids=["classes", "grouped"])
def test_check_mechanism_and_a_json_file(tmp_path, mechanism):
    check_mechanism(mechanism)
    mechanism.to_json(tmp_path / "design.json")
    loaded = ld.load(tmp_path / "design.json")
    assert loaded == mechanism and loaded.verify().epsilon == mechanism.verify().epsilon


@pytest.mark.parametrize("change, field", [
    (lambda p: p.update(orbits=[{**o, "weight": o["weight"] * 1.01} for o in p["orbits"]]), "orbits"),
    (lambda p: p.update(orbits=[{**p["orbits"][0], "high": [1, 3]}]), "orbits[0]"),
    (lambda p: p.update(classes=[0, 2, 2, 2, 2]), "classes"),
    (lambda p: p.update(probabilities=[0.5, 0.15]), "probabilities"),
    (lambda p: p.update(orbits=[{**p["orbits"][0], "high": 3}]), "orbits[0].high"),
    (lambda p: p.update(orbits=[{**p["orbits"][0], "weight": "heavy"}]), "orbits[0].weight"),
])
def test_bad_parameters_are_refused_with_the_field_and_the_rule(change, field):
    parameters = ClassSymmetricLIP.example().parameters()
    change(parameters)
    with pytest.raises(ValidationError, match=field.replace("[", r"\[").replace("]", r"\]")):
        ClassSymmetricLIP(**parameters)


def test_balanced_orbits_solve_the_row_sums():
    orbits = balanced_orbits(1.0, [0, 1, 1, 1, 1], [0.4, 0.15], [(0, [0, 0]), (1, [0, 1])])
    assert sum(o["weight"] for o in orbits) == pytest.approx(1.0, abs=1e-12)
    assert math.isclose(ClassSymmetricLIP(1.0, [0, 1, 1, 1, 1], [0.4, 0.15], orbits).epsilon, 1.0)


@pytest.mark.parametrize("mechanism", SMALL, ids=lambda m: f"k={m.k},eps={m.epsilon},orbits={len(m.orbits)}")
def test_the_privacy_table_is_an_exact_ldp_reduction(mechanism):
    """Its two rows are two inputs' rows of the enumerated table summed over groups of outputs: equal exact LDP to
    the full table's."""
    full = verify_table(realised_table(mechanism, outputs_of(mechanism)), ld.LDP(2 * mechanism.epsilon))
    reduced = verify_table(mechanism.privacy_table(exact=True), ld.LDP(2 * mechanism.epsilon))
    assert reduced.epsilon == full.epsilon == mechanism.verified_epsilons()["LDP"]
    table = mechanism.privacy_table()
    np.testing.assert_allclose(table.sum(axis=1), 1.0, atol=1e-12)
    # every row is the row of each value it stands for, summed over the outputs of each group (from the enumeration)
    outputs = outputs_of(mechanism)
    full = np.array(realised_table(mechanism, outputs), dtype=float)
    u, v = mechanism.pair()
    cases = [[0 if z == x else 1 if x in high else 2 for (_, z, high) in outputs] for x in (u, v)]
    column = {group: index for index, group in enumerate(mechanism.groups())}
    members = mechanism.classes_of_rows()
    for row, stands in enumerate(members):
        for x in np.flatnonzero(stands):
            grouped = np.zeros(table.shape[1])
            for index, (o, _, _) in enumerate(outputs):
                grouped[column[(o, cases[0][index], cases[1][index])]] += full[x, index]
            np.testing.assert_allclose(grouped, table[row], atol=1e-12)


def test_a_prior_without_classes_is_grouped_and_certified_at_itself():
    """method='classes' at Zipf(1.1), k = 60: the design at the grouped prior, with its vertices at eps' < eps, holds
    eps-LIP at the Zipf prior itself (exact certificate), within 5 % of the relaxation dual bound there."""
    weights = 1 / np.arange(1, 61) ** 1.1
    prior = ld.Prior(weights / weights.sum())
    mechanism = ld.design(prior, ld.LIP(1.0), method="classes", baselines=False)
    assert mechanism.family == "class-lip" and mechanism.level_epsilon < 1.0
    np.testing.assert_allclose(mechanism.prior.probabilities, prior.probabilities)
    assert mechanism.verify().passed and mechanism.verify().epsilon <= 1.0
    assert mechanism.verify().epsilon == mechanism.certificate_at(prior).epsilon
    assert mechanism.certificate_at(mechanism.class_prior).epsilon < mechanism.verify().epsilon + 0.05
    assert mechanism.optimality["gap"] < 0.05 and "grouped" in mechanism.provenance["method"]


def test_method_classes_is_refused_where_it_does_not_apply():
    with pytest.raises(ValidationError, match="method is 'classes'"):
        ld.design(np.full(8, 1 / 8), ld.LDP(1.0), method="classes")


def test_designed_subset_and_class_mechanisms_load_from_their_files(tmp_path):
    """ld.design's subset orbit and class design carry a provenance in their files; load checks it for form and
    rebuilds the mechanism (it refused them before: 'records no design provenance')."""
    head = np.array([0.2, 0.1, 0.1, 0.05, 0.05])
    for prior in (np.full(64, 1 / 64), np.concatenate([head, np.full(95, 0.5 / 95)])):
        mechanism = ld.design(prior, ld.LIP(1.0), baselines=False)
        assert mechanism.provenance is not None
        mechanism.to_json(tmp_path / "design.json")
        loaded = ld.load(tmp_path / "design.json")
        assert loaded == mechanism and loaded.provenance is None and loaded.verify().passed
