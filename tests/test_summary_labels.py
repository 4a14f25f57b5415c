"""Every epsilon a designed mechanism's summary prints names the variable it protects (the latent secret or X), and
the summary says plainly when the secret's LIP jumps if X's prior is off (issue 23)."""

import re
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.model import PriorSet, SecretModel

CONDITIONAL = np.array([[0.97, 0.01, 0.01, 0.01], [0.01, 0.01, 0.01, 0.97]])
PRIOR = ld.Prior([0.49, 0.01, 0.01, 0.49])


def lip_for_x(table, prior):
    """max over x, y of |log Pr[X = x | Y = y] / Pr[X = x]| for the realised table, in Fraction arithmetic."""
    p = [Fraction(float(v)) for v in prior]
    worst = Fraction(1)
    for y in range(table.shape[1]):
        column = [Fraction(float(v)) for v in table[:, y]]
        mass = sum(pi * q for pi, q in zip(p, column))
        for q in column:
            if mass > 0:
                ratio = q / mass
                worst = max(worst, ratio, 1 / ratio if ratio > 0 else Fraction(10**400))
    return float(np.log(float(worst)))


def figure(text, name):
    found = re.search(re.escape(name) + r" ([0-9.e+]+)", text)
    assert found, (name, text)
    return float(found.group(1))


@pytest.mark.parametrize("family", ["rr", "unary"])
def test_a_secret_design_labels_each_figure_and_warns_of_the_jump(family):
    mechanism = ld.design(PRIOR, ld.LIP(1.0, secret=SecretModel(CONDITIONAL)), family=family, baselines=False)
    text = mechanism.summary()
    guarantee = text.splitlines()[1]
    assert "LIP for the secret" in guarantee and "LIP for X" in guarantee and "LDP for X" in guarantee
    assert re.search(r"\bclaimed \d", guarantee) is None and re.search(r"(?<!for X), LDP \d", guarantee) is None
    assert figure(guarantee, "LIP for the secret" + (" (claimed)" if family == "rr" else "")) <= 1.0 + 1e-9
    if family == "rr":  # the realised table, computed independently
        assert figure(guarantee, "LIP for X") == pytest.approx(lip_for_x(mechanism.realized, PRIOR.probabilities),
                                                               rel=1e-5)
    worst = ld.verify(mechanism, prior=PriorSet.tv_ball(PRIOR.probabilities, 0.1)).epsilon
    assert worst > 2.0  # the design is fragile: the summary must say so
    shown = figure(text, "LIP for the secret at worst")
    assert worst <= shown <= worst * (1 + 1e-3)  # rounded up to 4 digits
    assert re.search(r"WARNING: LIP for the secret jumps from 1 to [0-9.]+ if X's prior is off by TV 0\.1", text)


def test_a_robust_design_has_no_jump_warning_and_names_x():
    prior = ld.Prior([0.4, 0.3, 0.2, 0.1])
    text = ld.design(prior, ld.LIP(1.0), baselines=False).summary()
    assert "LIP for X at worst" in text and "jumps" not in text
    assert "LIP for the secret" not in text
