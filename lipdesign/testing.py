"""The conformance suite of the mechanism contract (scikit-learn's ``check_estimator`` is the model).

``check_mechanism(mechanism)`` runs every check below that applies to one instance (``checks``: the optional
capabilities, an audit plan and a design family, are checked where the family has them) and raises one
AssertionError naming every check that failed and why; ``run_check`` runs one, for a test parametrised over
(family, check). The test suite runs them on ``example()`` of every registered family, so a new family cannot skip
them. Use them on your own families after ``lipdesign.mechanisms.register`` (docs/adding-a-family.md).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.immutable import Immutable
from lipdesign.io import mechanism_from_dict
from lipdesign.mechanisms.aggregate import Aggregate
from lipdesign.mechanisms.audit_plan import audited_values
from lipdesign.mechanisms.base import CLOSED_FORM, Mechanism
from lipdesign.mechanisms.estimate import Estimate
from lipdesign.mechanisms.registry import families, family_class
from lipdesign.simulation import simulate

if TYPE_CHECKING:
    from collections.abc import Callable

    #: A check of the suite: it takes the mechanism and a seeded Generator, and raises AssertionError on failure.
    Check = Callable[[Mechanism, np.random.Generator], None]

#: Users in the statistical check: the estimate of each quantity must lie within Z_LIMIT closed-form standard
#: deviations of its expectation (two-sided 2e-9 per quantity for a normal estimate; the seed is fixed).
STATISTICAL_USERS = 20_000
Z_LIMIT = 6.0

#: Floating-point sums of reports (Laplace, Piecewise, Hybrid) added in another order agree to about n ulps.
FLOAT_SUM_RTOL = 1e-12


def _same_reports(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _flat(estimate):
    return np.atleast_1d(np.asarray(estimate, dtype=float))


def _same_numbers(a, b):
    return np.array_equal(_flat(a), _flat(b), equal_nan=True)


def _same_aggregate(a, b):
    """Equal, except that floating-point sums may differ by rounding (they add in another order)."""
    if (a.mechanism, a.family, a.n, sorted(a.statistics)) != (b.mechanism, b.family, b.n, sorted(b.statistics)):
        return False
    return all(np.array_equal(x, b[name]) if x.dtype.kind == "i" else
               np.allclose(x, b[name], rtol=FLOAT_SUM_RTOL, atol=FLOAT_SUM_RTOL * max(1, a.n))
               for name, x in a.statistics.items())


def _close_numbers(a, b):
    return np.allclose(_flat(a), _flat(b), rtol=FLOAT_SUM_RTOL, atol=FLOAT_SUM_RTOL, equal_nan=True)


def _refuses(call, field, check):
    try:
        call()
    except ValidationError as error:
        assert field in str(error), f"{check}: the error {str(error)!r} does not name {field!r}"
        return
    raise AssertionError(f"{check}: no ValidationError naming {field!r}")


def _population(mechanism, n, rng):
    values = mechanism.input_domain.sample(n, rng)
    return values, (np.arange(n) if mechanism.uses_user_ids else None)


def check_family(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """The family id is a registered, stable string that maps back to the class."""
    assert isinstance(mechanism, Mechanism), f"family: {mechanism!r} is not a lipdesign Mechanism"
    assert isinstance(mechanism.family, str) and mechanism.family in families(), \
        f"family: {mechanism.family!r} is not registered (lipdesign.mechanisms.register)"
    assert family_class(mechanism.family) is type(mechanism), \
        f"family: {mechanism.family!r} is registered to {family_class(mechanism.family).__name__}"


def _held(obj, depth=2):
    """(name, value) of everything ``obj`` holds, and what the immutable objects among them hold, ``depth`` deep."""
    for name, value in vars(obj).items():
        yield name, value
        if depth > 1 and isinstance(value, Immutable):
            for inner, held in _held(value, depth - 1):
                yield f"{name}.{inner}", held


def check_immutable(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """Attributes cannot be set or deleted, neither on the mechanism nor on the declarations and domains it holds;
    held arrays are read-only; and a returned privacy table cannot be used to change the mechanism."""
    for action in (lambda: setattr(mechanism, "epsilon", 123.0), lambda: delattr(mechanism, "input_domain")):
        try:
            action()
        except AttributeError:
            continue
        raise AssertionError("immutable: an attribute could be set or deleted")
    for name, value in _held(mechanism):
        if isinstance(value, np.ndarray):
            assert not value.flags.writeable, f"immutable: the array {name!r} is writeable"
        if isinstance(value, Immutable):
            try:
                value.k = 10**6
            except AttributeError:
                continue
            raise AssertionError(f"immutable: {name!r} ({type(value).__name__}) can be changed")
    assert isinstance(mechanism.input_domain, Immutable), "immutable: the input domain can be changed"
    table = mechanism.privacy_table()
    if table is not None and table.flags.writeable:
        before = np.array(table)
        table[...] = 0.0
        again = cast("np.ndarray", mechanism.privacy_table())  # a finite mechanism's table (not None) once more
        assert np.array_equal(again, before), "immutable: privacy_table() is the mechanism's own"


def check_json_round_trip(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """to_dict() is JSON (no NaN), and the envelope, from_parameters and the fingerprint all round-trip to an equal
    mechanism that perturbs identically."""
    text = json.dumps(mechanism.to_dict(), allow_nan=False)
    loaded = mechanism_from_dict(json.loads(text), "round trip")
    rebuilt = type(mechanism).from_parameters(json.loads(json.dumps(mechanism.parameters())))
    for other in (loaded, rebuilt):
        assert other == mechanism and other.fingerprint == mechanism.fingerprint, "json: the round trip changed it"
    values, ids = _population(mechanism, 200, rng)
    assert _same_reports(mechanism.perturb(values, rng=3, user_ids=ids), loaded.perturb(values, rng=3, user_ids=ids)), \
        "json: the loaded mechanism perturbs differently"


def _bad_values(domain):
    if domain.kind == "strings":
        return [["ok", ""], ["x" * (domain.max_bytes + 1)], [b"\xff"], [3], []]
    if domain.kind == "categorical":
        return [[domain.k], [0.5], [[0]], []]
    if domain.kind == "box":
        return [np.full((2, domain.d), 2.0), np.full((2, domain.d), np.nan), np.zeros((2, domain.d + 1))]
    return [np.zeros((2, domain.d + 1)), np.full((2, domain.d), np.nan)]


def check_input_validation(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """Bad values, rng, user ids, methods and consistency options are refused with a ValidationError naming them."""
    for bad in _bad_values(mechanism.input_domain):
        _refuses(lambda bad=bad: mechanism.perturb(bad, rng=0), "values", "input validation")
    values, ids = _population(mechanism, 10, rng)
    bad_rng = cast(Any, "seed")  # not a seed, a Generator or None: refused
    _refuses(lambda: mechanism.perturb(values, rng=bad_rng, user_ids=ids), "rng", "input validation")
    if not mechanism.uses_user_ids:
        _refuses(lambda: mechanism.perturb(values, rng=0, user_ids=np.arange(10)), "user_ids", "input validation")
    reports = mechanism.perturb(values, rng=0, user_ids=ids)
    _refuses(lambda: mechanism.estimate(reports, method="no such method"), "method", "input validation")
    _refuses(lambda: mechanism.estimate(reports, consistency="no such step"), "consistency", "input validation")


def check_reproducible(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """A seed fixes the reports; a Generator with that seed gives the same ones; rng=None is seeded from the OS."""
    values, ids = _population(mechanism, 2000, rng)
    first = mechanism.perturb(values, rng=11, user_ids=ids)
    assert _same_reports(first, mechanism.perturb(values, rng=11, user_ids=ids)), "reproducible: same seed, new reports"
    assert _same_reports(first, mechanism.perturb(values, rng=np.random.default_rng(11), user_ids=ids)), \
        "reproducible: a Generator seeded alike gives other reports"
    assert not _same_reports(first, mechanism.perturb(values, rng=12, user_ids=ids)), \
        "reproducible: another seed gives the same reports"
    assert not _same_reports(mechanism.perturb(values, user_ids=ids), mechanism.perturb(values, user_ids=ids)), \
        "reproducible: two OS-seeded runs (rng=None) gave the same reports"


def check_aggregate(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """Aggregates of parts (one of them empty) add up to the aggregate of the whole, survive JSON, estimate exactly
    as the reports do, and refuse another mechanism's aggregate."""
    values, ids = _population(mechanism, 1000, rng)
    reports = mechanism.perturb(values, rng=5, user_ids=ids)
    whole = mechanism.aggregate(reports)
    parts = [mechanism.aggregate(reports[:300]), mechanism.aggregate(reports[300:300]),
             mechanism.aggregate(reports[300:])]
    assert whole.n == len(reports) and parts[1].n == 0, "aggregate: wrong number of reports"
    assert _same_aggregate(sum(parts), whole) and _same_aggregate(parts[0] + parts[1] + parts[2], whole), \
        "aggregate: parts do not add up"
    assert Aggregate.from_dict(json.loads(json.dumps(whole.to_dict(), allow_nan=False))) == whole, \
        "aggregate: the JSON round trip changed it"
    assert _same_numbers(mechanism.estimate(reports), mechanism.estimate(whole)), \
        "aggregate: estimate(reports) differs from estimate(aggregate)"
    assert _close_numbers(mechanism.estimate(whole), mechanism.estimate(sum(parts))), \
        "aggregate: the merged aggregate estimates differently"
    stranger = Aggregate("0" * 32, whole.family, whole.n, dict(whole.statistics))
    _refuses(lambda: whole + stranger, "mechanism", "aggregate")
    _refuses(lambda: mechanism.estimate(stranger), "mechanism", "aggregate")
    _refuses(lambda: mechanism.estimate(parts[1]), "reports", "aggregate")


def check_verification(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """A finite output space has an exact, passing certificate within the claim; a continuous one says so."""
    guarantee = mechanism.guarantee
    if mechanism.finite:
        certificate = mechanism.verify()
        assert mechanism.privacy_table() is not None, "verification: a finite mechanism without a privacy table"
        assert certificate.exact and certificate.passed, f"verification: {certificate.summary()}"
        assert certificate.epsilon <= guarantee.epsilon, "verification: the certified epsilon exceeds the claim"
        assert mechanism.verified_epsilons()["claimed"] == certificate.epsilon, "verification: stale epsilons"
    else:
        assert guarantee.basis == CLOSED_FORM and mechanism.privacy_table() is None, \
            "verification: a continuous mechanism must rest on its closed form and have no table"
        _refuses(mechanism.verify, "continuous", "verification")


def check_estimate_statistics(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """On a seeded population every estimated quantity lies within Z_LIMIT closed-form standard deviations of its
    expectation (``simulate``), and variance/expected_estimate have the estimate's shape. The limit assumes each
    estimate is close to normal: a frequency needs a few expected reports supporting it (not the case for, say,
    GRR at eps = 15 over 40000 values, where one stray report is 13 sd)."""
    result = simulate(mechanism, STATISTICAL_USERS, rng=rng)
    assert len(result.names) == result.estimate.size == result.expected.size == result.std.size, \
        "statistics: names, estimate, expectation and variance differ in size"
    finite = np.isfinite(result.z_scores)
    assert finite.any(), "statistics: no quantity has a finite z-score"
    worst = int(np.argmax(np.where(finite, np.abs(result.z_scores), 0)))
    assert abs(result.z_scores[worst]) < Z_LIMIT, \
        f"statistics: {result.names[worst]} is {result.z_scores[worst]:.2f} sd from its expectation"


#: Reports per audited input in ``check_audit_plan``.
AUDIT_PLAN_REPORTS = 5_000


def check_audit_plan(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """Where the family states an ``audit_plan()`` (what ``ld.audit`` reads): each row of its table is a distribution
    over its classes, ``classify`` maps the mechanism's own reports of each audited input to those classes, and the
    class counts of AUDIT_PLAN_REPORTS reports per input lie within Z_LIMIT binomial standard deviations (plus one
    report) of the plan's row, none in a class of probability 0. Without a plan there is nothing to check."""
    plan = mechanism.audit_plan()
    if plan is None:
        return
    rows, classes = plan.table.shape
    assert rows == len(plan.inputs) == len(plan.row_names) and classes == len(plan.class_names), \
        "audit plan: the table, inputs and names disagree in shape"
    assert np.all(plan.table >= 0) and np.allclose(plan.table.sum(axis=1), 1.0, rtol=0, atol=1e-9), \
        "audit plan: a row of the table is not a distribution over the classes"
    n = AUDIT_PLAN_REPORTS
    for row in range(rows):
        values = audited_values(mechanism, plan.inputs[np.full(n, row)])
        reports = mechanism.perturb(values, rng=rng, user_ids=np.arange(n) if mechanism.uses_user_ids else None)
        classify = cast("Callable[[np.ndarray], Any]", plan.classify)  # AuditPlan.classify is annotated object
        found = np.asarray(classify(reports))
        assert found.shape == (n,) and found.min() >= 0 and found.max() < classes, \
            f"audit plan: classify maps a report of {plan.row_names[row]} outside the {classes} classes"
        counts, expected = np.bincount(found, minlength=classes), n * plan.table[row]
        sd = np.sqrt(expected * (1 - plan.table[row]))
        worst = int(np.argmax(np.abs(counts - expected) - Z_LIMIT * sd))
        assert abs(counts[worst] - expected[worst]) <= Z_LIMIT * sd[worst] + 1, \
            (f"audit plan: {plan.row_names[row]} gave {counts[worst]} reports in class {plan.class_names[worst]!r}, "
             f"where the plan expects {expected[worst]:.1f}")


def check_device_numbers(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """``device_numbers()`` is a JSON object (no NaN), and the test vectors written from it replay: each case's
    recorded words give the recorded report (``lipdesign.vectors``)."""
    from lipdesign.vectors import check_vectors, test_vectors

    numbers = mechanism.device_numbers()
    assert isinstance(numbers, dict), f"device numbers: {type(numbers).__name__}, not a dict"
    try:
        json.dumps(numbers, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise AssertionError(f"device numbers: not JSON ({error})") from None
    vectors = json.loads(json.dumps(test_vectors(mechanism, n=4, seed=int(rng.integers(2**31)))))
    failures = check_vectors(mechanism, vectors)
    assert not failures, f"device numbers: the test vectors do not replay: {failures[:2]}"


def check_design_family(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """A ``design_family`` is one of ``ld.design``'s families, and the mechanism names itself (``display_name``)."""
    if mechanism.design_family is None:
        return
    from lipdesign.designer.design import FAMILIES

    assert mechanism.design_family in FAMILIES, \
        f"design family: {mechanism.design_family!r} is not one of ld.design's families {FAMILIES}"
    assert isinstance(mechanism.display_name(), str) and mechanism.display_name(), "design family: no display name"


def check_estimate_type(mechanism: Mechanism, rng: np.random.Generator) -> None:
    """``estimate`` returns an ``ld.Estimate`` whose values, standard errors and names agree in length with the
    estimand's names (one contract for every family)."""
    values, ids = _population(mechanism, 500, rng)
    estimate = mechanism.estimate(mechanism.perturb(values, rng=rng, user_ids=ids))
    assert isinstance(estimate, Estimate), f"estimate type: {type(estimate).__name__}, not an ld.Estimate"
    size = len(mechanism.estimand_names())
    assert estimate.values.shape == estimate.standard_errors.shape == (size,) and len(estimate.names) == size, \
        "estimate type: the values, standard errors and names of the estimate differ in length"


#: Every check, in a fixed order (each draws from its own seeded stream, by its index here).
CHECKS = (check_family, check_immutable, check_json_round_trip, check_input_validation, check_reproducible,
          check_aggregate, check_verification, check_estimate_statistics, check_audit_plan, check_device_numbers,
          check_design_family, check_estimate_type)

#: The checks of an optional capability, with the hook whose absence (None) makes them not apply.
_HOOKS = {check_audit_plan: lambda mechanism: mechanism.audit_plan() is not None,
          check_design_family: lambda mechanism: mechanism.design_family is not None}


def checks(mechanism: Mechanism) -> list[Check]:
    """The checks that apply to ``mechanism``: every check of CHECKS, but those of an optional hook it does not
    implement (an audit plan, a design family).

    For ``pytest.mark.parametrize`` over (family, check), as scikit-learn's ``parametrize_with_checks``; run one
    with ``run_check``.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism to be checked.

    Returns
    -------
    list of callable
        The check functions, in the order of CHECKS; each takes ``(mechanism, rng)``.

    See Also
    --------
    run_check : Run one of them.
    check_mechanism : Run them all.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> [check.__name__ for check in ld.testing.checks(mechanism)]
    ['check_family', 'check_immutable', 'check_json_round_trip', 'check_input_validation', 'check_reproducible',
     'check_aggregate', 'check_verification', 'check_estimate_statistics', 'check_audit_plan',
     'check_device_numbers', 'check_estimate_type']

    In a test module, one test per (family, check):

    >>> import pytest
    >>> @pytest.mark.parametrize("check", ld.testing.checks(mechanism), ids=lambda check: check.__name__)
    ... def test_grr(check):
    ...     ld.testing.run_check(mechanism, check)
    """
    return [check for check in CHECKS if _applies(check, mechanism)]


def _applies(check, mechanism):
    """Whether the hook of ``check`` exists on ``mechanism``; a hook that raises applies (its check reports it)."""
    try:
        return _HOOKS.get(check, lambda mechanism: True)(mechanism)
    except Exception:
        return True


def run_check(mechanism: Mechanism, check: Check | str, *, seed: int = 20261201) -> str:
    """Run one check of CHECKS (a function or its name) on ``mechanism`` with its own seeded stream; AssertionError
    when it fails, else the check's name.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism checked.
    check : callable or str
        One of the functions of CHECKS (``checks`` lists those that apply), or its name.
    seed : int, default 20261201
        The seed of the check's stream (with the check's index in CHECKS).

    Returns
    -------
    str
        The check's name.

    Raises
    ------
    AssertionError
        The check failed; the message says what.
    ValidationError
        ``check`` is not one of ``CHECKS`` (by object or name).

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> ld.testing.run_check(mechanism, "check_verification")
    'check_verification'
    """
    found = [c for c in CHECKS if check in (c, c.__name__)]
    if not found:
        raise ValidationError(f"check is {check!r}; it must be one of lipdesign.testing.CHECKS: "
                              + ", ".join(c.__name__ for c in CHECKS))
    check = found[0]
    check(mechanism, np.random.default_rng([seed, CHECKS.index(check)]))
    return check.__name__


def check_mechanism(mechanism: Mechanism, *, seed: int = 20261201) -> list[str]:
    """Run every check that applies to ``mechanism`` (``checks``, seeded) and raise one AssertionError listing every
    check that failed (an assertion, or an exception raised inside it), each with its message. Returns the names
    of the checks run.

    Use it on your own families after ``lipdesign.mechanisms.register`` (docs/adding-a-family.md).

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism checked (one instance of a registered family).
    seed : int, default 20261201
        The seed of the checks' streams (each check has its own, from this seed and its index in CHECKS).

    Returns
    -------
    list of str
        The names of the checks run, all passed.

    Raises
    ------
    AssertionError
        One or more checks failed: "n of m checks failed:" then one line per failed check with its message.

    See Also
    --------
    checks : The checks that apply to a mechanism.
    run_check : Run one check.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), [0.5, 0.5])
    >>> passed = ld.testing.check_mechanism(mechanism)
    >>> len(passed), passed[:3]
    (12, ['check_family', 'check_immutable', 'check_json_round_trip'])
    """
    run, failures = checks(mechanism), []
    for check in run:
        try:
            run_check(mechanism, check, seed=seed)
        except AssertionError as error:
            failures.append(f"{check.__name__}: {error}")
        except Exception as error:  # a check that crashes has failed too; the others still run
            failures.append(f"{check.__name__}: {type(error).__name__}: {error}")
    if failures:
        raise AssertionError(f"{len(failures)} of {len(run)} checks failed:\n" + "\n".join(failures))
    return [check.__name__ for check in run]
