"""A family added from outside with ``register`` (docs/adding-a-family.md): its capabilities live on its class, so
the audit, the test vectors, save/load and the conformance suite accept it with no edit anywhere in lipdesign."""

import math

import numpy as np
import pytest

import lipdesign as ld
from lipdesign import vectors
from lipdesign.mechanisms import registry
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.oracle import PureProtocol
from lipdesign.testing import CHECKS, check_mechanism


class CoinFlip(PureProtocol):
    """A toy family: a bit kept with probability ``keep``, flipped otherwise. keep is e/(1 + e) for e = e^eps (1 -
    1e-9), rounded down to the 2^-53 grid that ``rng.random() < keep`` realises exactly: at e = e^eps itself the
    exact certificate, rounded outward, comes out a few ulps above the claim and save/load refuses the file."""

    family = "toy-coin-flip"

    def __init__(self, epsilon):
        super().__init__(epsilon, 2)
        e = math.exp(self.epsilon) * (1 - 1e-9)
        self.keep = math.floor(e / (1 + e) * 2**53) / 2**53
        self.p, self.q = self.keep, 1 - self.keep

    def parameters(self):
        return {"epsilon": self.epsilon}

    @classmethod
    def example(cls):
        return cls(1.0)

    def _perturb(self, values, rng, user_ids):
        return np.where(rng.random(values.size) < self.keep, values, 1 - values)

    def _support(self, reports):
        reports = np.asarray(reports, dtype=np.int64)
        return np.bincount(reports, minlength=2), reports.size

    def privacy_table(self):
        return np.array([[self.keep, 1 - self.keep], [1 - self.keep, self.keep]])

    def audit_plan(self):
        return AuditPlan(np.array([0, 1]), self.privacy_table(), np.asarray, ["x=0", "x=1"], ["y=0", "y=1"])

    def device_numbers(self):
        return {"keep": self.keep}


@pytest.fixture
def coin_flip(monkeypatch):
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))
    registry.register(CoinFlip)
    return CoinFlip.example()


def test_the_conformance_suite_runs_every_hook_of_a_new_family(coin_flip):
    assert check_mechanism(coin_flip) == [check.__name__ for check in CHECKS if check.__name__ != "check_design_family"]


def test_a_new_family_is_audited_from_its_own_plan(coin_flip):
    result = ld.audit(coin_flip, reports=50_000, rng=3)
    assert result.passed and result.family == "toy-coin-flip"
    # the plan's table is the mechanism's, so the events compare the kept bit against the flipped one
    assert max(event["table_epsilon"] for event in result.events) == pytest.approx(math.log(coin_flip.keep /
                                                                                             (1 - coin_flip.keep)))


def test_a_new_family_gets_test_vectors_with_its_device_numbers(coin_flip, tmp_path):
    vectors.write_vectors(coin_flip, tmp_path / "v.json", n=8, seed=5)
    written = vectors.read_vectors(tmp_path / "v.json")
    assert written["device"] == {"keep": coin_flip.keep} and len(written["cases"]) == 8
    assert vectors.check_vectors(coin_flip, written) == []
    written["cases"][0]["report"] = 1 - written["cases"][0]["report"]  # a wrong report is caught
    assert vectors.check_vectors(coin_flip, written)


def test_a_new_family_saves_loads_and_verifies(coin_flip, tmp_path):
    ld.save(coin_flip, tmp_path / "m.json")
    loaded = ld.load(tmp_path / "m.json")
    assert type(loaded) is CoinFlip and loaded == coin_flip
    assert loaded.verify().passed and loaded.verify().epsilon <= 1.0


def test_a_hook_that_raises_is_reported_as_a_failing_check_not_a_crash(coin_flip, monkeypatch):
    def broken(self):
        raise ld.ValidationError("k is 80; the audit plan is built for at most 4096 hashes")

    monkeypatch.setattr(CoinFlip, "audit_plan", broken)
    with pytest.raises(AssertionError, match="1 of 11 checks failed:\ncheck_audit_plan: ValidationError: k is 80"):
        check_mechanism(coin_flip)
