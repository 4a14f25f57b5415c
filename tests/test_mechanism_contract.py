"""The one mechanism contract: the conformance suite on every registered family (generated from the registry, so a
new family cannot skip it), the registry, aggregates, immutability, and the layering rules of the package."""

import ast
import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import run_python as _run

import lipdesign as ld
from lipdesign import mechanisms
from lipdesign.mechanisms import registry
from lipdesign.testing import CHECKS, check_mechanism, checks, run_check

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------ conformance suite
@pytest.mark.parametrize("family", registry.families())
def test_every_check_applies_to_every_registered_family(family):
    """Every family of ours states its audit plan; the design-family check applies to the designed ones."""
    example = registry.family_class(family).example()
    assert example.audit_plan() is not None
    assert checks(example) == [check for check in CHECKS
                               if check.__name__ != "check_design_family" or example.design_family is not None]


@pytest.mark.parametrize("family, check", [(family, check.__name__) for family in registry.families()
                                           for check in CHECKS])
def test_every_registered_family_passes_the_conformance_suite(family, check):
    assert run_check(registry.family_class(family).example(), check) == check  # raises AssertionError on failure


def test_run_check_refuses_a_name_that_is_no_check():
    with pytest.raises(ld.ValidationError, match="check is 'check_nothing'; it must be one of .*check_verification"):
        run_check(ld.mechanisms.GRR(1.0, 3), "check_nothing")


def designed():
    secret = ld.SecretModel([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]], [0.5, 0.5])
    prior = ld.Prior([0.35, 0.3, 0.35], labels=["low", "mid", "high"])
    return {
        "LIP histogram": ld.design(prior, ld.LIP(1.0), baselines=False),
        "LDP weighted sum": ld.design(ld.Prior([0.1, 0.2, 0.3, 0.4]), ld.LDP(1.0), ld.BayesSum([0, 1, 2, 3]),
                                      baselines=False),
        "latent secret": ld.design(prior, ld.LIP(0.5, secret=secret), baselines=False),
        "BP-LIP box": ld.design(prior, ld.LIP(1.0, prior_set=ld.PriorSet.box([0.3, 0.25, 0.3], [0.4, 0.35, 0.4])),
                                baselines=False),
        "WC-LIP secret": ld.design(prior, ld.WorstCaseLIP(1.0, secret=secret), baselines=False),
    }


MORE = {
    "GRR k=2": lambda: mechanisms.GRR(0.5, 2),
    "GRR eps=8": lambda: mechanisms.GRR(8.0, 50),  # a lie in 1.6% of the reports, 6.6 expected per value
    "OLH g=2": lambda: mechanisms.OLH(1.0, 9, g=2),
    "Hadamard k=3": lambda: mechanisms.HadamardResponse(2.0, 3),
    "HarmonyCategorical m<k": lambda: mechanisms.HarmonyCategorical(1.0, 8, m=4, seed=2),
    "HarmonyNumeric public": lambda: mechanisms.HarmonyNumeric(1.0, 6, coordinates="public", seed=4),
    "Duchi even d": lambda: mechanisms.Duchi(0.5, 6),
    "Piecewise 3 attributes": lambda: mechanisms.Piecewise(10.0, 3, grid=8),
    "Hybrid below eps*": lambda: mechanisms.Hybrid(0.5, 2),
    "HarmonyMixed two categorical": lambda: mechanisms.HarmonyMixed(2.0, [3, "numeric", 5], m=16, seed=1),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_the_conformance_suite_on_more_instances(name):
    check_mechanism(MORE[name]())


@pytest.mark.parametrize("name", sorted(designed()))
def test_the_conformance_suite_on_designed_tables(name):
    check_mechanism(designed()[name])


class _LyingVariance(mechanisms.GRR):
    family = "test-lying-variance"

    def _variance(self, frequencies, n, method, user_ids):
        return super()._variance(frequencies, n, method, user_ids) / 100  # claims a tenth of the real sd


class _IgnoresSeed(mechanisms.GRR):
    family = "test-ignores-seed"

    def _perturb(self, values, rng, user_ids):
        return super()._perturb(values, np.random.default_rng(), user_ids)


class _StaleEstimate(mechanisms.GRR):
    family = "test-stale-estimate"

    def estimate(self, reports, *, method=None, consistency=None):
        if isinstance(reports, ld.Aggregate):
            return np.full(self.k, 1.0 / self.k)
        return super().estimate(reports, method=method, consistency=consistency)


class _SwappedAuditPlan(mechanisms.GRR):
    family = "test-swapped-audit-plan"

    def audit_plan(self):  # the rows of inputs 0 and 1 exchanged: the reports do not follow the plan
        plan = super().audit_plan()
        return type(plan)(plan.inputs, plan.table[::-1], plan.classify, plan.row_names, plan.class_names)


class _StaleDeviceNumbers(mechanisms.GRR):
    family = "test-stale-device-numbers"

    def device_numbers(self):
        return {"k": self.k, "alpha": float("nan")}


@pytest.mark.parametrize("cls, message", [(_LyingVariance, "statistics"),
                                          (_IgnoresSeed, "perturbs differently|reproducible"),
                                          (_StaleEstimate, "aggregate"), (_SwappedAuditPlan, "audit plan: x=0 gave"),
                                          (_StaleDeviceNumbers, "device numbers: not JSON")])
def test_the_conformance_suite_catches_broken_mechanisms(cls, message, monkeypatch):
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))
    registry.register(cls)
    with pytest.raises(AssertionError, match=message):
        check_mechanism(cls(1.0, 4))


def test_the_conformance_suite_reports_every_failing_check(monkeypatch):
    class _TwoFaults(_LyingVariance, _SwappedAuditPlan):
        family = "test-two-faults"

    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))
    registry.register(_TwoFaults)
    with pytest.raises(AssertionError) as caught:
        check_mechanism(_TwoFaults(1.0, 4))
    message = str(caught.value)
    assert message.startswith("2 of 11 checks failed:")
    assert "check_estimate_statistics: statistics:" in message and "check_audit_plan: audit plan:" in message


# ------------------------------------------------------------------------------------------------- registry
def test_the_registry_holds_every_family_under_a_stable_id():
    assert registry.families() == ["class-lip", "cms", "cms-lip", "dbitflip", "duchi", "grr", "hadamard",
                                   "harmony-categorical", "harmony-mixed", "harmony-numeric", "hashing", "hcms",
                                   "hybrid", "l-grr", "l-olh", "l-table", "l-ue", "laplace", "olh",
                                   "oue", "pem", "piecewise", "rappor", "rsfd", "she", "smp", "spl", "subset",
                                   "subset-lip", "table", "the",
                                   "treehist", "unary"]
    for family in registry.families():
        assert registry.family_class(family).family == family


def test_the_registry_refuses_duplicates_and_strangers(monkeypatch):
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))

    class GRR(mechanisms.GRR):  # a user class that happens to share our class name
        pass

    with pytest.raises(ld.ValidationError, match="family id"):
        registry.register(GRR)  # it inherits family "grr" but has no id of its own
    GRR.family = "grr"
    with pytest.raises(ld.ValidationError, match="family is 'grr'; it is already registered"):
        registry.register(GRR)
    with pytest.raises(ld.ValidationError, match="only subclasses"):
        registry.register(dict)
    assert registry.family_class("grr") is mechanisms.GRR
    with pytest.raises(ld.ValidationError, match="family is 'nope'; it must be one of the registered families"):
        registry.family_class("nope")


def test_a_user_family_registers_and_round_trips(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))

    @registry.register
    class Binary(mechanisms.GRR):
        family = "my-binary-rr"

        @classmethod
        def example(cls):
            return cls(1.0, 2)

    mechanism = Binary.example()
    check_mechanism(mechanism)
    mechanism.to_json(tmp_path / "m.json")
    assert type(ld.load(tmp_path / "m.json")) is Binary


# --------------------------------------------------------------------------------------------- immutability
def test_a_designed_table_cannot_be_changed_after_verification():
    mechanism = ld.design([0.2, 0.3, 0.5], ld.LIP(1.0), baselines=False)
    with pytest.raises(ValueError, match="read-only"):
        mechanism.table[0, 0] = 1.0  # the defect of 0.1.0: perturb changed while epsilons stayed stale
    with pytest.raises(AttributeError, match="immutable"):
        mechanism.table = np.eye(3)
    with pytest.raises(TypeError):
        mechanism.epsilons["claimed"] = 0.0
    with pytest.raises(TypeError):
        mechanism.provenance["uniform_mix"] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        mechanism.prior.probabilities[0] = 1.0


def test_an_aggregate_is_immutable_and_refuses_other_mechanisms():
    grr, other = mechanisms.GRR(1.0, 4), mechanisms.GRR(2.0, 4)
    aggregate = grr.aggregate(grr.perturb([0, 1, 2, 3], rng=0))
    with pytest.raises(AttributeError, match="immutable"):
        aggregate.n = 5
    with pytest.raises(ValueError, match="read-only"):
        aggregate["support"][0] = 7
    foreign = other.aggregate(other.perturb([0, 1], rng=0))
    with pytest.raises(ld.ValidationError, match="cannot be merged"):
        aggregate + foreign
    with pytest.raises(ld.ValidationError, match="only estimate with the mechanism whose reports they count"):
        grr.estimate(foreign)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="x"), "format is 'x'"),
    (lambda d: d.update(format_version=9), "format_version is 9"),
    (lambda d: d.update(n=-1), "n is -1"),
    (lambda d: d.update(n=True), "n is True"),
    (lambda d: d["statistics"].update(support={"dtype": "int64", "shape": [4], "data": [1.5, 0, 0, 0]}),
     "must be integers"),
    (lambda d: d["statistics"].update(support={"dtype": "complex", "shape": [4], "data": [0, 0, 0, 0]}),
     r"statistics\['support'\]"),
    (lambda d: d["statistics"].update(support={"dtype": "int64", "shape": [3], "data": [0, 0, 0, 0]}),
     "does not fit"),
    (lambda d: d.update(mechanism=""), "mechanism is ''"),
])
def test_aggregate_documents_are_checked(change, message):
    grr = mechanisms.GRR(1.0, 4)
    document = json.loads(json.dumps(grr.aggregate(grr.perturb([0, 1, 2, 3], rng=0)).to_dict()))
    change(document)
    with pytest.raises(ld.ValidationError, match=message):
        ld.Aggregate.from_dict(document)


def test_counting_in_pieces_on_many_machines_gives_the_same_estimate():
    """The use the aggregate exists for: reports counted per file and summed (docs/math.md §15)."""
    oracle = mechanisms.OLH(2.0, 30)
    values = np.random.default_rng(3).integers(0, 30, 30_000)
    files = [oracle.perturb(part, rng=seed) for seed, part in enumerate(np.array_split(values, 7))]
    total = sum(oracle.aggregate(reports) for reports in files)
    assert total.n == values.size
    np.testing.assert_array_equal(oracle.estimate(total), oracle.estimate(np.concatenate(files)))


# ------------------------------------------------------------------------------------------------ layering
HEAVY = "('scipy', 'cvxpy', 'networkx', 'jsonschema', 'matplotlib', 'randomgen', 'pyarrow', 'numba')"


def test_perturbing_aggregating_estimating_and_learning_need_numpy_only():
    code = (
        "import sys, numpy as np\n"
        "from lipdesign import mechanisms, learn\n"
        "for family in mechanisms.families():\n"
        "    m = mechanisms.family_class(family).example()\n"
        "    v = m.input_domain.sample(100, np.random.default_rng(0))\n"
        "    ids = np.arange(100) if m.uses_user_ids else None\n"
        "    a = m.aggregate(m.perturb(v, rng=1, user_ids=ids)); m.estimate(a + a)\n"
        "X = np.random.default_rng(0).uniform(-1, 1, (2000, 2))\n"
        "learn.LDPLinearRegression(epsilon=1.0, batch_size=100, random_state=0).fit(X, X[:, 0] / 2)\n"
        f"print(sorted(name for name in {HEAVY} if name in sys.modules))\n"
    )
    assert _run(code) == "[]"


def test_exact_verification_imports_neither_scipy_nor_networkx():
    code = (
        "import sys, numpy as np\n"
        "from lipdesign.model import PriorSet, Prior, SecretModel\n"
        "from lipdesign.notions import LIP, WorstCaseLIP\n"
        "from lipdesign.verification import verify_table\n"
        "secret = SecretModel([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])\n"
        "table = np.full((3, 3), 1 / 3) * 0.5 + np.eye(3) * 0.5\n"
        "for notion in (LIP(2.0, secret=secret, prior_set=PriorSet.polytope([[0.3, 0.3, 0.4], [0.4, 0.3, 0.3]])),\n"
        "               LIP(2.0, prior_set=PriorSet.box([0.3, 0.3, 0.3], [0.4, 0.4, 0.4])), WorstCaseLIP(2.0)):\n"
        "    assert verify_table(table, notion, Prior([0.35, 0.3, 0.35]), exact=True).passed\n"
        "print(sorted(name for name in ('scipy', 'networkx') if name in sys.modules))\n"
    )
    assert _run(code) == "[]"


def _module_graph():
    """Every import anywhere in a module of lipdesign/ (function-local ones included), read with ast;
    importing a package also reaches every module it exports (the lazy ``__getattr__`` exports included)."""
    modules = {}
    for package in ("lipdesign",):
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    edges = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
                    if modules[target].name == "__init__.py" and not name.startswith(target + "."):
                        edges[name].update(m for m in modules if m.startswith(target + ".") and m != name)
    # a module importing its own package (for a constant) is not a cycle of layers
    return {name: {target for target in targets if not name.startswith(target + ".")}
            for name, targets in edges.items()}


def test_no_import_cycles_of_any_kind():
    edges = _module_graph()
    cycles = []
    for start in edges:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for target in edges[node]:
                if target == start:
                    cycles.append(" -> ".join([*path, start]))
                elif target not in seen:
                    seen.add(target)
                    stack.append((target, [*path, target]))
    assert not cycles, cycles[:5]


def test_layers_import_only_downward():
    """lipdesign._solvers knows no other lipdesign module; the declarations, notions, verification and mechanisms
    never reach the designer, the I/O layer, the CLI or the simulations, and no module below the designer imports
    a solver but the model's prior sets (the polytope geometry of ``_solvers.rays``, numpy only)."""
    edges = _module_graph()
    upper = ("lipdesign.designer", "lipdesign.io", "lipdesign.cli", "lipdesign.simulation", "lipdesign.testing",
             "lipdesign.demo", "lipdesign.harmony", "lipdesign.runtime")
    for name, targets in edges.items():
        if name.startswith("lipdesign._solvers"):
            assert not [t for t in targets if not t.startswith("lipdesign._solvers")], name
        if name.startswith(("lipdesign.model", "lipdesign.notions", "lipdesign.verification", "lipdesign.mechanisms",
                            "lipdesign.domains", "lipdesign.validation", "lipdesign.objectives", "lipdesign.learn")):
            assert not [t for t in targets if t.startswith(upper)], (name, sorted(targets))
        # the model's prior sets use the polytope geometry of _solvers.rays (numpy only); nothing else below the
        # designer reaches a solver
        if name.startswith(("lipdesign.notions", "lipdesign.verification", "lipdesign.mechanisms", "lipdesign.learn",
                            "lipdesign.domains", "lipdesign.validation", "lipdesign.objectives")):
            assert not [t for t in targets if t.startswith("lipdesign._solvers")], (name, sorted(targets))
        if name.startswith("lipdesign.model"):
            assert {t for t in targets if t.startswith("lipdesign._solvers")} <= {"lipdesign._solvers.rays"}, name


def test_the_old_module_names_still_work_for_one_release():
    code = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import lipdesign as ld, lipdesign.harmony as harmony, lipdesign.runtime as runtime\n"
        "assert [str(w.message).split(' is deprecated')[0] for w in caught] == "
        "['lipdesign.harmony', 'lipdesign.runtime']\n"
        "assert all(w.category is DeprecationWarning for w in caught)\n"
        "assert harmony.GRR is ld.mechanisms.GRR and harmony.Range is ld.Range\n"
        "assert harmony.LDPLinearRegression is ld.learn.LDPLinearRegression\n"
        "assert runtime.TablePerturber is ld.mechanisms.TablePerturber\n"
        "print('ok')\n"
    )
    assert _run(code) == "ok"


# --------------------------------- more of the contract: held values, aggregates, simulation, imports, CLI parameters
def test_what_a_mechanism_holds_cannot_be_changed_either():
    mechanism = ld.design([0.3, 0.3, 0.4], ld.LIP(1.0), baselines=False)
    with pytest.raises(AttributeError, match="immutable"):
        mechanism.prior.probabilities = np.array([0.6, 0.2, 0.2])  # would leave a stale PASS behind
    with pytest.raises(AttributeError, match="immutable"):
        mechanism.input_domain.k = 1000
    with pytest.raises(AttributeError, match="immutable"):
        mechanisms.GRR(1.0, 5).input_domain.k = 1000  # perturb would echo any value below 1000
    with pytest.raises(ValueError, match="read-only"):
        mechanism.sampler._prob_flat[0] = 2.0
    box = ld.PriorSet.box([0.2, 0.2, 0.3], [0.4, 0.4, 0.5])
    with pytest.raises(TypeError):
        box.parameters["lower"] = [0, 0, 0]


@pytest.mark.parametrize("statistics, n, message", [
    ({"support": [3, 9]}, 10, r"support \[2\] int64; the grr mechanism's are support \[5\] int64"),
    ({"support": [-50, 0, 0, 0, 0]}, 10, r"reaches -50\.\.0; from n = 10 reports it lies in 0\.\.10"),
    ({"support": [0, 11, 0, 0, 0]}, 10, "reaches 0..11"),
    ({"counts": [0, 1, 0, 0, 0]}, 10, "statistics are counts"),
])
def test_an_aggregate_that_reports_cannot_give_is_refused(statistics, n, message):
    grr = mechanisms.GRR(1.0, 5)
    forged = ld.Aggregate(grr.fingerprint, "grr", n, statistics)
    with pytest.raises(ld.ValidationError, match=message):
        grr.estimate(forged)


def test_table_counts_must_add_up_to_the_number_of_reports():
    table = ld.design([0.3, 0.3, 0.4], ld.LIP(1.0), baselines=False)
    forged = ld.Aggregate(table.fingerprint, "table", 10, {"counts": np.full(table.table.shape[1], 10)})
    with pytest.raises(ld.ValidationError, match="sums to .*; it must sum to n = 10"):
        table.estimate(forged)
    with pytest.raises(ld.ValidationError, match="aggregate holds 0 reports"):
        table.estimate(table.aggregate(table.empty_reports()))


@pytest.mark.parametrize("family", registry.families())
def test_empty_reports_aggregate_to_zero(family):
    mechanism = registry.family_class(family).example()
    empty = mechanism.aggregate(mechanism.empty_reports())
    assert empty.n == 0 and all(not array.any() for array in empty.statistics.values())


def test_the_simulation_p_value_is_calibrated():
    """The Bonferroni p-value of the largest |z| rejects a correct mechanism at most about as often as its level
    says, although estimated frequencies are dependent (they sum to 1); 400 seeded runs, tolerance 3 sd."""
    from lipdesign.simulation import simulate

    p = np.array([simulate(mechanisms.GRR(1.0, 2), 2000, rng=seed).p_value for seed in range(400)])
    assert np.mean(p < 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / p.size)
    assert np.mean(p < 0.5) > 0.2  # and it is not stuck at 1
    with pytest.raises(ld.ValidationError, match="n is 100 but values has 50 rows"):
        simulate(mechanisms.GRR(1.0, 2), 100, values=np.zeros(50, dtype=int))


def test_a_polytope_prior_set_table_builds_with_numpy_only():
    code = (
        "import sys\n"
        "sys.modules['scipy'] = None\n"  # importing scipy now fails
        "import json\n"
        "from lipdesign.mechanisms.table import TableMechanism\n"
        "from lipdesign.model import Prior\n"
        "from lipdesign.notions import notion_from_dict\n"
        "d = json.load(open('tests/data/v1/bp-lip-polytope.json'))\n"
        "m = TableMechanism(d['table'], notion_from_dict(d['notion']), Prior.from_dict(d['prior']))\n"
        "print(m.verify().passed)\n"
    )
    assert _run(code) == "True"


def test_an_unknown_cli_parameter_is_one_clear_line(tmp_path):
    from lipdesign.cli import main

    code = main(["mechanism", "grr", "--epsilon", "1", "-p", "kk=5", "-o", str(tmp_path / "g.json")])
    assert code == 2 and not (tmp_path / "g.json").exists()


# ------------------------------------------------------------------------------ the manual's contract table
def _contract_table():
    """{member as written in the manual's contract table (docs/manual.md): its signature or None}."""
    text = (ROOT / "docs" / "manual.md").read_text()
    table = text[text.index("| member | what it is |"):].split("\n\n", 1)[0]
    members = {}
    for row in table.splitlines()[2:]:
        for written in re.findall(r"`([a-z_]+(?:\([^`]*\))?)`", row.split("|")[1]):
            name, _, signature = written.partition("(")
            members[name] = f"({signature}" if signature else None
    return members


def _unannotated(signature):
    """``signature`` without its annotations: the manual's table writes the call (names, kinds, defaults), the type
    annotations are base.py's and mypy's."""
    return signature.replace(parameters=[parameter.replace(annotation=inspect.Parameter.empty)
                                         for parameter in signature.parameters.values()],
                             return_annotation=inspect.Signature.empty)


def test_the_readme_contract_table_matches_base_py():
    """Every public member of ld.Mechanism is in the manual's table, every member there exists, and each signature
    written there is the method's own (without self), so the table cannot document a call that raises TypeError."""
    table = _contract_table()
    public = {name for name in dir(ld.Mechanism) if not name.startswith("_") and not hasattr(object, name)}
    assert public - set(table) == set(), "members of ld.Mechanism missing from the manual's table"
    assert set(table) - public - {"input_domain"} == set(), "manual's table members that ld.Mechanism lacks"
    for name, written in table.items():
        if written is not None:
            member = getattr(ld.Mechanism, name)
            actual = str(_unannotated(inspect.signature(member))).replace("(self, ", "(").replace("(self)", "()")
            assert written == actual, (name, written, actual)
    families_row = (ROOT / "docs" / "manual.md").read_text().split("| `family` |", 1)[1].split("\n", 1)[0]
    assert re.findall(r"`([a-z-]+)`", families_row.split("(`ld.mechanisms")[0]) == registry.families()
