"""JSON export / load of every fixed mechanism (the version-2 envelope ``to_json`` writes and the version-1
"lipdesign.harmony" files of lipdesign 0.1.0), and the CLI commands that handle them."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import rewrite, run_python

import lipdesign as ld
from lipdesign.cli import main
from lipdesign.io.envelope import LEGACY_CLASS_NAMES
from lipdesign.mechanisms import (
    GRR,
    OLH,
    OUE,
    Duchi,
    HadamardResponse,
    HarmonyCategorical,
    HarmonyMixed,
    HarmonyNumeric,
    Hybrid,
    Laplace,
    Piecewise,
)
from lipdesign.simulation import simulate

#: Files written by lipdesign 0.1.0 (format "lipdesign.harmony", version 1); never regenerated.
V1 = Path(__file__).resolve().parent / "data" / "v1"

MECHANISMS = [
    Laplace(1.0, d=3),
    Duchi(1.0, d=4),
    HarmonyNumeric(2.0, d=5),
    HarmonyNumeric(2.0, d=5, coordinates="public", seed=17),
    Piecewise(3.0, d=2),
    Hybrid(3.0, d=2),
    GRR(1.0, k=6),
    OUE(1.0, k=6),
    OLH(2.0, k=20),
    HadamardResponse(1.0, k=10),
    HarmonyCategorical(1.0, k=5, m=64, seed=3),
    HarmonyMixed(1.0, ["numeric", 4], m=32, seed=5),
]
FINITE = {"Laplace", "Duchi", "HarmonyNumeric", "Piecewise", "Hybrid", "GRR", "OUE", "OLH", "HadamardResponse",
          "HarmonyCategorical", "HarmonyMixed"}


def v1_copy(name, tmp_path):
    """A copy of the version-1 file ``tests/data/v1/<name>.json`` in tmp_path (to tamper with)."""
    path = tmp_path / f"{name}.json"
    shutil.copyfile(V1 / f"{name}.json", path)
    return path


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=repr)
def test_every_mechanism_round_trips_and_is_reverified(mechanism, tmp_path):
    path = tmp_path / "mechanism.json"
    mechanism.to_json(path)
    document = json.loads(path.read_text())
    assert document["format"] == "lipdesign.mechanism" and document["format_version"] == 2
    assert document["family"] == mechanism.family == LEGACY_CLASS_NAMES[type(mechanism).__name__]
    loaded = ld.load(path)
    assert loaded == mechanism and type(loaded) is type(mechanism)
    assert mechanism.finite == (type(mechanism).__name__ in FINITE)
    verified = document["guarantee"]["verified_epsilons"]
    if type(mechanism).__name__ in FINITE:
        assert verified["claimed"] <= mechanism.epsilon
        assert verified["claimed"] >= mechanism.epsilon - 1e-9
    else:
        assert verified == {}


def test_the_same_parameters_give_the_same_reports():
    mechanism = OLH(2.0, k=20)
    loaded = OLH(**json.loads(json.dumps(mechanism.parameters())))
    values = np.arange(20).repeat(5)
    assert np.array_equal(mechanism.perturb(values, rng=3), loaded.perturb(values, rng=3))


@pytest.mark.parametrize("change, error, message", [
    (lambda d: d.update(mechanism="Gaussian"), ld.FormatError, "not a lipdesign.harmony mechanism"),
    (lambda d: d["parameters"].update(epsilon=-1), ld.FormatError, "epsilon"),
    (lambda d: d["parameters"].update(k=1), ld.FormatError, "k"),
    (lambda d: d["parameters"].update(colour="red"), ld.FormatError, "colour"),
    (lambda d: d.update(verified_epsilon=0.5), ld.VerificationError, "understates"),
    (lambda d: d.update(verified_epsilon=None), ld.VerificationError, "understates"),
    (lambda d: d.pop("guarantee"), ld.FormatError, "guarantee"),
    (lambda d: d.update(format_version=2), ld.FormatError, "format_version"),
])
def test_tampered_documents_are_refused_with_a_clear_error(change, error, message, tmp_path):
    """Version 1 ("lipdesign.harmony", as lipdesign 0.1.0 wrote GRR(1.0, k=6)): the original messages."""
    path = v1_copy("grr", tmp_path)
    assert ld.load(path) == GRR(1.0, k=6)  # the untampered file loads
    rewrite(path, change)
    with pytest.raises(error, match=message):
        ld.load(path)


@pytest.mark.parametrize("change, error, message", [
    (lambda d: d.update(family="gaussian"), ld.FormatError, "family is 'gaussian'; it must be one of the registered"),
    (lambda d: d.update(family="GRR"), ld.FormatError, "family is 'GRR'; it must be one of the registered"),
    (lambda d: d["parameters"].update(epsilon=-1), ld.FormatError, "parameters/epsilon"),
    (lambda d: d["parameters"].update(k=1), ld.FormatError, "parameters/k"),
    (lambda d: d["parameters"].update(colour="red"), ld.FormatError, "colour"),
    (lambda d: d["guarantee"]["verified_epsilons"].update(claimed=0.5), ld.VerificationError,
     r"verified_epsilons.claimed is 0.5 .*understates"),
    (lambda d: d["guarantee"].update(verified_epsilons={}), ld.VerificationError,
     r"verified_epsilons.claimed is None .*understates"),
    (lambda d: d["guarantee"]["verified_epsilons"].pop("claimed"), ld.VerificationError,
     r"verified_epsilons.claimed is None .*understates"),
    (lambda d: d["guarantee"].update(epsilon=0.5), ld.FormatError, "guarantee.epsilon is 0.5"),
    (lambda d: d.pop("guarantee"), ld.FormatError, "'guarantee' is a required property"),
    (lambda d: d["guarantee"].pop("verified_epsilons"), ld.FormatError, "'verified_epsilons' is a required"),
    (lambda d: d.update(format_version=3), ld.FormatError, "format_version 3 is not supported"),
])
def test_tampered_v2_documents_are_refused_with_a_clear_error(change, error, message, tmp_path):
    """The same tampering of the version-2 envelope that ``to_json`` writes now (family, parameters, guarantee)."""
    path = tmp_path / "grr.json"
    GRR(1.0, k=6).to_json(path)
    assert ld.load(path) == GRR(1.0, k=6)
    rewrite(path, change)
    with pytest.raises(error, match=message):
        ld.load(path)


def test_cli_writes_verifies_and_simulates_a_harmony_mechanism(tmp_path, capsys):
    path = tmp_path / "duchi.json"
    assert main(["harmony", "Duchi", "--epsilon", "1", "-p", "d=3", "-o", str(path)]) == 0  # 0.1.0's spelling
    assert "PASS" in capsys.readouterr().out
    assert main(["verify", str(path)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["simulate", str(path), "-n", "20000", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "mean[2]" in out and "Bonferroni p-value" in out
    assert ld.load(path) == Duchi(1.0, d=3)


def test_cli_mechanism_command_takes_family_ids(tmp_path, capsys):
    path = tmp_path / "duchi.json"
    assert main(["mechanism", "duchi", "--epsilon", "1", "-p", "d=3", "-o", str(path)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert json.loads(path.read_text())["family"] == "duchi"
    assert ld.load(path) == Duchi(1.0, d=3)


def test_cli_simulates_frequency_oracles_and_mixed_tuples(tmp_path, capsys):
    for name, params in [("olh", ["-p", "k=8"]), ("harmony-mixed", ["-p", 'attributes=["numeric", 3]'])]:
        path = tmp_path / f"{name}.json"
        assert main(["mechanism", name, "--epsilon", "2", *params, "-o", str(path)]) == 0
        assert main(["simulate", str(path), "-n", "50000", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "frequency[7]" in out and "frequency[1][2]" in out


def test_simulation_z_scores_are_standard_normal():
    """Over many quantities the standardised errors of simulate have mean ~0 and variance ~1."""
    z = np.concatenate([simulate(HarmonyNumeric(1.0, d=40), 20_000, rng=seed).z_scores for seed in range(10)])
    assert abs(z.mean()) < 5 / np.sqrt(z.size)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / z.size)


@pytest.mark.parametrize("argv, message", [
    (["harmony", "Gaussian", "--epsilon", "1", "-o", "x.json"], "Gaussian"),
    (["mechanism", "gaussian", "--epsilon", "1", "-o", "x.json"], "gaussian"),
    (["harmony", "GRR", "--epsilon", "1", "-o", "x.json"], "k"),
    (["mechanism", "grr", "--epsilon", "1", "-o", "x.json"], "k"),
    (["harmony", "GRR", "--epsilon", "1", "-p", "k", "-o", "x.json"], "NAME=VALUE"),
    (["harmony", "GRR", "--epsilon", "50", "-p", "k=3", "-o", "x.json"], "epsilon"),
    (["mechanism", "grr", "--epsilon", "50", "-p", "k=3", "-o", "x.json"], "epsilon is 50.0; it must lie in (0, 30]"),
])
def test_cli_bad_harmony_arguments_exit_2_with_one_line(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_public_coordinates_simulation_compares_with_the_bucket_means():
    z = np.concatenate([simulate(HarmonyNumeric(1.0, d=40, coordinates="public", seed=seed),
                                 20_000, rng=seed).z_scores for seed in range(10)])
    assert abs(z.mean()) < 5 / np.sqrt(z.size)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / z.size)


#: Out of range for every fixed mechanism ([1e-6, 10]) and for GRR, whose range is (0, 30] since 0.2.0 (it is the
#: baseline of designed tables; 1e-7 is accepted there, see test_grr_takes_epsilon_in_0_30).
OUT_OF_RANGE = [1e-7, 0, -1, 31, 10.5, float("nan")]
GRR_OUT_OF_RANGE = [-1e-7, 0, -1, 31, 30.5, float("nan")]


@pytest.mark.parametrize("name, epsilon", [
    (name, epsilon)
    for name in ["Laplace", "Duchi", "HarmonyNumeric", "Piecewise", "Hybrid", "GRR", "OUE", "OLH", "HadamardResponse",
                 "HarmonyCategorical"]
    for epsilon in (GRR_OUT_OF_RANGE if name == "GRR" else OUT_OF_RANGE)])
def test_every_mechanism_refuses_an_epsilon_out_of_range(name, epsilon):
    with pytest.raises(ld.ValidationError, match="epsilon"):
        getattr(ld.mechanisms, name)(epsilon, 4)


def test_grr_takes_epsilon_in_0_30():
    """GRR's range is (0, 30] since 0.2.0: 1e-7 (refused by the other mechanisms) and 30 are accepted."""
    assert GRR(1e-7, 4).epsilon == 1e-7 and GRR(30, 4).epsilon == 30
    with pytest.raises(ld.ValidationError, match=r"epsilon is 1e-07; it must lie in \[1e-06, 10\]"):
        OUE(1e-7, 4)


class _Uniforms:
    """A stand-in generator whose random() returns one fixed value (to probe a sampler's threshold)."""

    def __init__(self, u):
        self.u = u

    def random(self, shape=None):
        return np.full(shape, self.u)


def realised_probability(sampler):
    """Pr[sampler(U) is True] for U uniform on the grid k / 2^53 that numpy's random() draws from: the sampler is
    a threshold test U < p, so this is (number of grid points below p) / 2^53, found by bisection."""
    from fractions import Fraction

    low, high = 0, 2**53  # sampler(low / 2^53) is True unless p <= 0; sampler(1) would be False
    if not sampler(0.0):
        return Fraction(0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if sampler(middle / 2**53) else (low, middle)
    return Fraction(high, 2**53)


@pytest.mark.parametrize("epsilon", [0.01, 1.0, 5.0, 10.0])
def test_the_one_bit_sampler_as_realised_in_floating_point_is_eps_ldp(epsilon):
    """The probabilities the sampler REALISES (numpy's 2^-53 grid included), read back by probing, satisfy the
    claim exactly; docs/math.md §9. This would fail without the EXP_MARGIN at large epsilon."""
    from lipdesign.mechanisms.rr import one_bit
    from lipdesign.mechanisms.sampling import implemented_exp
    from lipdesign.verification import exp_bounds

    e = implemented_exp(epsilon)
    plus = {t: realised_probability(lambda u, t=t: one_bit(np.array([t]), e, _Uniforms(u))[0] == 1)
            for t in (-1.0, 1.0)}
    bound = exp_bounds(epsilon)[0]
    assert plus[1.0] / plus[-1.0] <= bound
    assert (1 - plus[-1.0]) / (1 - plus[1.0]) <= bound
    assert plus[1.0] / plus[-1.0] >= bound * (1 - 1e-9)  # and the mechanism does spend its epsilon


PUBLIC_RANDOMNESS = {"HarmonyNumeric": ("harmony-numeric-public",
                                         HarmonyNumeric(2.0, d=5, coordinates="public", seed=17)),
                     "HarmonyCategorical": ("harmony-categorical", HarmonyCategorical(1.0, k=5, m=64, seed=3)),
                     "HarmonyMixed": ("harmony-mixed", HarmonyMixed(1.0, ["numeric", 4], m=32, seed=5))}
SEED_CHANGES = (lambda p: p.pop("seed"), lambda p: p.update(seed=None))


@pytest.mark.parametrize("name", ["HarmonyNumeric", "HarmonyCategorical", "HarmonyMixed"])
def test_a_missing_seed_of_public_randomness_is_refused_on_load(name, tmp_path):
    """Version 1: the files lipdesign 0.1.0 wrote, without their seed."""
    file, mechanism = PUBLIC_RANDOMNESS[name]
    assert ld.load(V1 / f"{file}.json") == mechanism
    for change in SEED_CHANGES:
        path = v1_copy(file, tmp_path)
        rewrite(path, lambda d, change=change: change(d["parameters"]))
        with pytest.raises(ld.FormatError, match="seed"):
            ld.load(path)


@pytest.mark.parametrize("name", ["HarmonyNumeric", "HarmonyCategorical", "HarmonyMixed"])
def test_a_missing_seed_of_public_randomness_is_refused_on_load_v2(name, tmp_path):
    """Version 2: the envelope ``to_json`` writes, without its ``parameters.seed``."""
    mechanism = {"HarmonyNumeric": HarmonyNumeric(1.0, d=3, coordinates="public", seed=4),
                 "HarmonyCategorical": HarmonyCategorical(1.0, k=3, m=16, seed=4),
                 "HarmonyMixed": HarmonyMixed(1.0, ["numeric", 3], m=16, seed=4)}[name]
    path = tmp_path / "m.json"
    for change in SEED_CHANGES:
        mechanism.to_json(path)
        assert ld.load(path) == mechanism
        rewrite(path, lambda d, change=change: change(d["parameters"]))
        with pytest.raises(ld.FormatError, match="seed"):
            ld.load(path)


def test_mixed_attributes_must_be_a_list_and_numpy_integers_export_cleanly(tmp_path):
    with pytest.raises(ld.ValidationError, match="attributes"):
        HarmonyMixed(1.0, {"numeric": 1})
    with pytest.raises(ld.ValidationError, match="attributes"):
        HarmonyMixed(1.0, {"numeric"})
    mechanism = HarmonyMixed(1.0, ["numeric", np.int64(3)], m=8, seed=1)
    assert mechanism.attributes == ("numeric", 3) and type(mechanism.attributes[1]) is int
    mechanism.to_json(tmp_path / "m.json")
    assert ld.load(tmp_path / "m.json") == mechanism


def test_epsilon_only_through_its_option_and_huge_simulations_refused(tmp_path, capsys):
    assert main(["harmony", "GRR", "--epsilon", "1", "-p", "epsilon=5", "-p", "k=3",
                 "-o", str(tmp_path / "g.json")]) == 2
    assert "--epsilon" in capsys.readouterr().err
    with pytest.raises(ld.ValidationError, match="n times the k"):
        simulate(OUE(1.0, k=200_000), 10**8)


def test_simulating_a_projection_with_fewer_rows_than_categories_uses_the_papers_estimate():
    result = simulate(HarmonyCategorical(1.0, k=8, m=4, seed=2), 20_000, rng=1)
    assert np.all(np.isfinite(result.z_scores)) and np.max(np.abs(result.z_scores)) < 5


def test_range_maps_raw_values_and_refuses_bad_ones():
    battery = ld.Range(0, 100)
    assert np.allclose(battery.to_unit([0, 50, 100]), [-1, 0, 1])
    assert np.allclose(battery.from_unit([-1, 0, 1]), [0, 50, 100])
    assert np.isclose(battery.variance_from_unit(1.0), 2500)
    assert np.allclose(battery.to_unit([-5, 120], clip=True), [-1, 1])
    for bad, message in [([120], r"\[0, 100\]"), (["a"], "numbers"), ([None], "finite"), ([1j], "complex")]:
        with pytest.raises(ld.ValidationError, match=message):
            battery.to_unit(bad)
    for low, high in [(1, 1), (-1e308, 1e308), (0, float("nan"))]:
        with pytest.raises(ld.ValidationError):
            ld.Range(low, high)


def test_harmony_runs_with_numpy_only():
    """Perturbing, estimating and learning import neither scipy, cvxpy, networkx, jsonschema nor matplotlib."""
    code = (
        "import sys, numpy as np, lipdesign as ld, lipdesign.mechanisms as h, lipdesign.learn as learn; "
        "assert 'harmony-mixed' in h.families(); "
        "m = h.HarmonyMixed(1.0, ['numeric', 3], m=8, seed=1); "
        "m.estimate(m.perturb(np.array([[0.5, 2.0]] * 50), rng=1)); "
        "g = h.OLH(1.0, k=5); g.estimate(g.perturb(np.arange(5), rng=1)); "
        "X = np.random.default_rng(0).uniform(-1, 1, (2000, 2)); "
        "learn.LDPLinearRegression(epsilon=1.0, batch_size=100, random_state=0).fit(X, X[:, 0] / 2); "
        "print(sorted(m for m in ('scipy','cvxpy','networkx','jsonschema','matplotlib') if m in sys.modules))"
    )
    assert run_python(code) == "[]"


def test_mixed_projections_share_one_memory_cap():
    from lipdesign.mechanisms.harmony_categorical import MAX_SIGNS

    with pytest.raises(ld.ValidationError, match="projection signs"):
        HarmonyMixed(1.0, [4096] * 3, m=MAX_SIGNS // 4096 // 2, seed=1)


def test_simulate_handles_few_rows_empty_buckets_and_huge_domains(tmp_path, capsys):
    mixed = simulate(HarmonyMixed(1.0, ["numeric", 3], m=1, seed=1), 20_000, rng=1)
    assert np.all(np.isfinite(mixed.z_scores))  # m < k: the paper's projection is simulated
    empty = simulate(HarmonyNumeric(1.0, d=8, coordinates="public", seed=1), 2, rng=1)
    assert np.isnan(empty.z_scores).any() and np.isfinite(empty.p_value)
    with pytest.raises(ld.ValidationError, match="k is"):
        simulate(GRR(10.0, k=5 * 10**8), 2)
    path = tmp_path / "public.json"
    HarmonyNumeric(1.0, d=8, coordinates="public", seed=1).to_json(path)
    assert main(["simulate", str(path), "-n", "2", "--seed", "1"]) == 0
    assert "without reports skipped" in capsys.readouterr().out


def test_a_finite_mechanism_must_claim_exact_verification(tmp_path):
    """Version 1: the guarantee string of a finite mechanism must be the exact verification's."""
    path = v1_copy("grr", tmp_path)
    rewrite(path, lambda d: d.update(guarantee="trust me"))
    with pytest.raises(ld.FormatError, match="guarantee"):
        ld.load(path)


@pytest.mark.parametrize("change, message", [
    (lambda g: g.update(basis="ideal-arithmetic closed form"),
     "guarantee.basis is 'ideal-arithmetic closed form'; GRR with these parameters has 'exact table'"),
    (lambda g: g.update(basis="composition of exact tables"),
     "guarantee.basis is 'composition of exact tables'; GRR with these parameters has 'exact table'"),
    (lambda g: g.update(basis="trust me"), "guarantee/basis: 'trust me' is not one of"),
])
def test_a_finite_mechanism_must_claim_exact_verification_v2(change, message, tmp_path):
    """Version 2: ``guarantee.basis`` of a finite mechanism must be the exact verification's."""
    path = tmp_path / "grr.json"
    GRR(1.0, k=4).to_json(path)
    rewrite(path, lambda d: change(d["guarantee"]))
    with pytest.raises(ld.FormatError, match="guarantee"):
        ld.load(path)
    with pytest.raises(ld.FormatError, match=message):
        ld.load(path)


def test_a_v2_document_whose_guarantee_is_not_an_object_is_refused(tmp_path):
    path = tmp_path / "grr.json"
    GRR(1.0, k=4).to_json(path)
    rewrite(path, lambda d: d.update(guarantee="trust me"))
    with pytest.raises(ld.FormatError, match="guarantee"):
        ld.load(path)


def test_cli_nan_epsilon_is_one_clear_line(tmp_path, capsys):
    assert main(["harmony", "GRR", "--epsilon", "nan", "-p", "k=3", "-o", str(tmp_path / "g.json")]) == 2
    err = capsys.readouterr().err
    assert "epsilon is nan; it must be a finite number" in err and "inf" not in err
