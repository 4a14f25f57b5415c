"""JSON export / load of every lipdesign.harmony mechanism, and the CLI commands that handle them."""

import json

import numpy as np
import pytest

import lipdesign as ld
from lipdesign import harmony
from lipdesign.cli import main

MECHANISMS = [
    harmony.Laplace(1.0, d=3),
    harmony.Duchi(1.0, d=4),
    harmony.HarmonyNumeric(2.0, d=5),
    harmony.HarmonyNumeric(2.0, d=5, coordinates="public", seed=17),
    harmony.Piecewise(3.0, d=2),
    harmony.Hybrid(3.0, d=2),
    harmony.GRR(1.0, k=6),
    harmony.OUE(1.0, k=6),
    harmony.OLH(2.0, k=20),
    harmony.HadamardResponse(1.0, k=10),
    harmony.HarmonyCategorical(1.0, k=5, m=64, seed=3),
    harmony.HarmonyMixed(1.0, ["numeric", 4], m=32, seed=5),
]
FINITE = {"Duchi", "HarmonyNumeric", "Piecewise", "Hybrid", "GRR", "OUE", "OLH", "HadamardResponse", "HarmonyCategorical", "HarmonyMixed"}


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=repr)
def test_every_mechanism_round_trips_and_is_reverified(mechanism, tmp_path):
    path = tmp_path / "mechanism.json"
    mechanism.to_json(path)
    document = json.loads(path.read_text())
    assert document["format"] == "lipdesign.harmony"
    assert document["mechanism"] == type(mechanism).__name__
    loaded = ld.load(path)
    assert loaded == mechanism and type(loaded) is type(mechanism)
    if type(mechanism).__name__ in FINITE:
        assert document["verified_epsilon"] <= mechanism.epsilon
        assert document["verified_epsilon"] >= mechanism.epsilon - 1e-9
    else:
        assert document["verified_epsilon"] is None


def test_the_same_parameters_give_the_same_reports():
    mechanism = harmony.OLH(2.0, k=20)
    loaded = harmony.OLH(**json.loads(json.dumps(mechanism.parameters())))
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
    path = tmp_path / "grr.json"
    harmony.GRR(1.0, k=6).to_json(path)
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))
    with pytest.raises(error, match=message):
        ld.load(path)


def test_cli_writes_verifies_and_simulates_a_harmony_mechanism(tmp_path, capsys):
    path = tmp_path / "duchi.json"
    assert main(["harmony", "Duchi", "--epsilon", "1", "-p", "d=3", "-o", str(path)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["verify", str(path)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["simulate", str(path), "-n", "20000", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "mean[2]" in out and "chi-square p-value" in out


def test_cli_simulates_frequency_oracles_and_mixed_tuples(tmp_path, capsys):
    for name, params in [("OLH", ["-p", "k=8"]), ("HarmonyMixed", ["-p", 'attributes=["numeric", 3]'])]:
        path = tmp_path / f"{name}.json"
        assert main(["harmony", name, "--epsilon", "2", *params, "-o", str(path)]) == 0
        assert main(["simulate", str(path), "-n", "50000", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "frequency[7]" in out and "frequency[1][2]" in out


def test_simulation_z_scores_are_standard_normal():
    """Over many quantities the standardised errors of simulate_harmony have mean ~0 and variance ~1."""
    from lipdesign.simulation import simulate_harmony

    z = np.concatenate([simulate_harmony(harmony.HarmonyNumeric(1.0, d=40), 20_000, rng=seed).z_scores
                        for seed in range(10)])
    assert abs(z.mean()) < 5 / np.sqrt(z.size)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / z.size)


@pytest.mark.parametrize("argv, message", [
    (["harmony", "Gaussian", "--epsilon", "1", "-o", "x.json"], "Gaussian"),
    (["harmony", "GRR", "--epsilon", "1", "-o", "x.json"], "k"),
    (["harmony", "GRR", "--epsilon", "1", "-p", "k", "-o", "x.json"], "NAME=VALUE"),
    (["harmony", "GRR", "--epsilon", "50", "-p", "k=3", "-o", "x.json"], "epsilon"),
])
def test_cli_bad_harmony_arguments_exit_2_with_one_line(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_public_coordinates_simulation_compares_with_the_bucket_means():
    from lipdesign.simulation import simulate_harmony

    z = np.concatenate([simulate_harmony(harmony.HarmonyNumeric(1.0, d=40, coordinates="public", seed=seed),
                                         20_000, rng=seed).z_scores for seed in range(10)])
    assert abs(z.mean()) < 5 / np.sqrt(z.size)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / z.size)


@pytest.mark.parametrize("name", ["Laplace", "Duchi", "HarmonyNumeric", "Piecewise", "Hybrid", "GRR", "OUE",
                                  "OLH", "HadamardResponse", "HarmonyCategorical"])
@pytest.mark.parametrize("epsilon", [1e-7, 0, -1, 31, float("nan")])
def test_every_mechanism_refuses_an_epsilon_out_of_range(name, epsilon):
    with pytest.raises(ld.ValidationError, match="epsilon"):
        getattr(harmony, name)(epsilon, 4)


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
    claim exactly; MATH §9. This would fail without the EXP_MARGIN at large epsilon."""
    from lipdesign.harmony._base import implemented_exp, one_bit
    from lipdesign.verification import exp_bounds

    e = implemented_exp(epsilon)
    plus = {t: realised_probability(lambda u, t=t: one_bit(np.array([t]), e, _Uniforms(u))[0] == 1)
            for t in (-1.0, 1.0)}
    bound = exp_bounds(epsilon)[0]
    assert plus[1.0] / plus[-1.0] <= bound
    assert (1 - plus[-1.0]) / (1 - plus[1.0]) <= bound
    assert plus[1.0] / plus[-1.0] >= bound * (1 - 1e-9)  # and the mechanism does spend its epsilon


@pytest.mark.parametrize("name", ["HarmonyNumeric", "HarmonyCategorical", "HarmonyMixed"])
def test_a_missing_seed_of_public_randomness_is_refused_on_load(name, tmp_path):
    mechanism = {"HarmonyNumeric": harmony.HarmonyNumeric(1.0, d=3, coordinates="public", seed=4),
                 "HarmonyCategorical": harmony.HarmonyCategorical(1.0, k=3, m=16, seed=4),
                 "HarmonyMixed": harmony.HarmonyMixed(1.0, ["numeric", 3], m=16, seed=4)}[name]
    path = tmp_path / "m.json"
    mechanism.to_json(path)
    for change in (lambda p: p.pop("seed"), lambda p: p.update(seed=None)):
        document = json.loads(path.read_text())
        change(document["parameters"])
        path.write_text(json.dumps(document))
        with pytest.raises(ld.FormatError, match="seed"):
            ld.load(path)
        mechanism.to_json(path)


def test_mixed_attributes_must_be_a_list_and_numpy_integers_export_cleanly(tmp_path):
    with pytest.raises(ld.ValidationError, match="attributes"):
        harmony.HarmonyMixed(1.0, {"numeric": 1})
    with pytest.raises(ld.ValidationError, match="attributes"):
        harmony.HarmonyMixed(1.0, {"numeric"})
    mechanism = harmony.HarmonyMixed(1.0, ["numeric", np.int64(3)], m=8, seed=1)
    assert mechanism.attributes == ("numeric", 3) and type(mechanism.attributes[1]) is int
    mechanism.to_json(tmp_path / "m.json")
    assert ld.load(tmp_path / "m.json") == mechanism


def test_epsilon_only_through_its_option_and_huge_simulations_refused(tmp_path, capsys):
    assert main(["harmony", "GRR", "--epsilon", "1", "-p", "epsilon=5", "-p", "k=3",
                 "-o", str(tmp_path / "g.json")]) == 2
    assert "--epsilon" in capsys.readouterr().err
    from lipdesign.simulation import simulate_harmony

    with pytest.raises(ld.ValidationError, match="n times the k"):
        simulate_harmony(harmony.OUE(1.0, k=200_000), 10**8)


def test_simulating_a_projection_with_fewer_rows_than_categories_uses_the_papers_estimate():
    from lipdesign.simulation import simulate_harmony

    result = simulate_harmony(harmony.HarmonyCategorical(1.0, k=8, m=4, seed=2), 20_000, rng=1)
    assert np.all(np.isfinite(result.z_scores)) and np.max(np.abs(result.z_scores)) < 5


def test_range_maps_raw_values_and_refuses_bad_ones():
    battery = harmony.Range(0, 100)
    assert np.allclose(battery.to_unit([0, 50, 100]), [-1, 0, 1])
    assert np.allclose(battery.from_unit([-1, 0, 1]), [0, 50, 100])
    assert np.isclose(battery.variance_from_unit(1.0), 2500)
    assert np.allclose(battery.to_unit([-5, 120], clip=True), [-1, 1])
    for bad, message in [([120], r"\[0, 100\]"), (["a"], "numbers"), ([None], "finite"), ([1j], "complex")]:
        with pytest.raises(ld.ValidationError, match=message):
            battery.to_unit(bad)
    for low, high in [(1, 1), (-1e308, 1e308), (0, float("nan"))]:
        with pytest.raises(ld.ValidationError):
            harmony.Range(low, high)


def test_harmony_runs_with_numpy_only():
    """Perturbing, estimating and learning import neither scipy, cvxpy, networkx, jsonschema nor matplotlib."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, numpy as np, lipdesign as ld; ld.harmony.load_all(); h = ld.harmony; "
        "m = h.HarmonyMixed(1.0, ['numeric', 3], m=8, seed=1); "
        "m.estimate(m.perturb(np.array([[0.5, 2.0]] * 50), rng=1)); "
        "g = h.OLH(1.0, k=5); g.estimate(g.perturb(np.arange(5), rng=1)); "
        "X = np.random.default_rng(0).uniform(-1, 1, (2000, 2)); "
        "h.LDPLinearRegression(epsilon=1.0, batch_size=100, random_state=0).fit(X, X[:, 0] / 2); "
        "print(sorted(m for m in ('scipy','cvxpy','networkx','jsonschema','matplotlib') if m in sys.modules))"
    )
    repository = Path(__file__).resolve().parents[1]
    environment = {**os.environ, "PYTHONPATH": str(repository) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=repository, env=environment,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_mixed_projections_share_one_memory_cap():
    from lipdesign.harmony.frequency import MAX_SIGNS

    with pytest.raises(ld.ValidationError, match="projection signs"):
        harmony.HarmonyMixed(1.0, [4096] * 3, m=MAX_SIGNS // 4096 // 2, seed=1)


def test_simulate_handles_few_rows_empty_buckets_and_huge_domains(tmp_path, capsys):
    from lipdesign.simulation import simulate_harmony

    mixed = simulate_harmony(harmony.HarmonyMixed(1.0, ["numeric", 3], m=1, seed=1), 20_000, rng=1)
    assert np.all(np.isfinite(mixed.z_scores))  # m < k: the paper's projection is simulated
    empty = simulate_harmony(harmony.HarmonyNumeric(1.0, d=8, coordinates="public", seed=1), 2, rng=1)
    assert np.isnan(empty.z_scores).any() and np.isfinite(empty.chi_square_p_value)
    with pytest.raises(ld.ValidationError, match="k is"):
        simulate_harmony(harmony.GRR(10.0, k=5 * 10**8), 2)
    path = tmp_path / "public.json"
    harmony.HarmonyNumeric(1.0, d=8, coordinates="public", seed=1).to_json(path)
    assert main(["simulate", str(path), "-n", "2", "--seed", "1"]) == 0
    assert "without reports skipped" in capsys.readouterr().out


def test_a_finite_mechanism_must_claim_exact_verification(tmp_path):
    path = tmp_path / "grr.json"
    harmony.GRR(1.0, k=4).to_json(path)
    document = json.loads(path.read_text())
    document["guarantee"] = "trust me"
    path.write_text(json.dumps(document))
    with pytest.raises(ld.FormatError, match="guarantee"):
        ld.load(path)


def test_cli_nan_epsilon_is_one_clear_line(tmp_path, capsys):
    assert main(["harmony", "GRR", "--epsilon", "nan", "-p", "k=3", "-o", str(tmp_path / "g.json")]) == 2
    err = capsys.readouterr().err
    assert "epsilon must be a finite number (got nan)" in err and "inf" not in err
