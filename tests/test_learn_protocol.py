"""The learners as a deployed protocol (lipdesign.learn.protocol, docs/math.md §9.11): server tasks through JSON,
device reports, mergeable aggregates, and the guarantee.

Expected values are recomputed here from the documented recipes (SeedSequence streams, the projection, the
losses' derivatives, the one-bit probabilities), never read back from the implementation.
"""

import json
import math
import warnings

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.errors import ValidationError
from lipdesign.learn import (
    LDPLinearRegression,
    LDPLinearSVC,
    LDPLogisticRegression,
    Task,
    Trainer,
    client_report,
)
from lipdesign.mechanisms import Aggregate, HarmonyNumeric
from lipdesign.mechanisms.harmony_categorical import projection_signs
from lipdesign.mechanisms.rr import one_bit_table
from lipdesign.mechanisms.sampling import implemented_exp
from lipdesign.notions import LDP
from lipdesign.verification import verify_table

BETA = np.array([0.5, -0.4, 0.3, 0.2])


def data(cls, n, seed):
    g = np.random.default_rng(seed)
    X = g.uniform(-1, 1, (n, BETA.size))
    if cls is LDPLinearRegression:
        return X, np.clip(X @ BETA + 0.1 * g.standard_normal(n), -1, 1)
    return X, np.where(X @ BETA + 0.05 > 0, "yes", "no")


def device_stream(seed, t):
    """The documented noise of round t's simulated devices: PCG64 on SeedSequence(seed, spawn_key=(2, t))."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2, t)))


def run_through_json(estimator, X, y, seed):
    """The deployment loop: every task crosses JSON, each round's reports are split over two 'machines' whose
    aggregates also cross JSON and are summed."""
    trainer = Trainer(estimator, *X.shape)
    for task in trainer.tasks():
        received = Task.from_dict(json.loads(json.dumps(task.to_dict())))
        users = trainer.participants(task)
        reports = client_report(received, X[users], y[users], rng=device_stream(seed, task.round))
        half = len(reports) // 3
        parts = [Aggregate.from_dict(json.loads(json.dumps(trainer.aggregate(part).to_dict())))
                 for part in (reports[:half], reports[half:])]
        trainer.update(task, sum(parts))
    return trainer, trainer.result()


@pytest.mark.parametrize("cls", [LDPLinearRegression, LDPLogisticRegression, LDPLinearSVC])
@pytest.mark.parametrize("reduced_dim", [None, 2])
def test_json_protocol_gives_exactly_the_model_of_fit(cls, reduced_dim):
    X, y = data(cls, 6000, 1)
    classes = None if cls is LDPLinearRegression else ("no", "yes")
    params = {"epsilon": 2.0, "reduced_dim": reduced_dim, "random_state": 7}
    fitted = cls(**params).fit(X, y)  # classes inferred from y: the sorted labels, the same pair
    trainer, model = run_through_json(cls(**params, classes=classes) if classes else cls(**params), X, y, 7)
    assert trainer.rounds == fitted.n_iter_ > 5
    np.testing.assert_array_equal(model.coef_, fitted.coef_)
    assert model.intercept_ == fitted.intercept_
    np.testing.assert_array_equal(model.projection_, fitted.projection_)
    if classes:
        assert model.classes_.tolist() == fitted.classes_.tolist() == ["no", "yes"]
        assert model.score(X, y) > 0.75  # it learned something: the signal is strong at eps = 2, n = 6000
    else:
        assert model.score(X, y) > 0.3


def test_the_plan_and_the_projection_follow_the_documented_streams():
    """Plan: PCG64 on SeedSequence(seed, spawn_key=(1,)); projection seed: 63 bits of spawn_key=(0,)."""
    n, d, seed = 5000, 6, 11
    trainer = Trainer(LDPLinearRegression(1.0, reduced_dim=3, random_state=seed), n, d)
    order = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,))).permutation(n)
    batch = trainer.batch_size
    tasks = []
    for task in trainer.tasks():
        np.testing.assert_array_equal(trainer.participants(task),
                                      order[(task.round - 1) * batch:task.round * batch])
        tasks.append(task)
        trainer.update(task, trainer.aggregate(_plus_one()))
    word = np.random.SeedSequence(seed, spawn_key=(0,)).generate_state(1, np.uint64)[0]
    assert tasks[0].projection_seed == int(word) >> 1
    np.testing.assert_array_equal(tasks[0].projection, projection_signs(3, d, int(word) >> 1) / math.sqrt(3))


def _plus_one():
    report = np.zeros(1, dtype=ld.learn.REPORT_DTYPE)
    report["sign"] = 1
    return report


@pytest.mark.parametrize("n, batch", [(1000, 70), (999, 1), (5000, 333), (700, 700)])
def test_each_user_reports_once(n, batch):
    """The union of the participants over all rounds: n_users_used distinct indices in 0..n-1."""
    trainer = Trainer(LDPLogisticRegression(1.0, batch_size=batch, classes=(0, 1), random_state=3), n, 4)
    rounds = []
    for task in trainer.tasks():
        rounds.append(trainer.participants(task))
        trainer.update(task, trainer.aggregate(_plus_one()))
    everyone = np.concatenate(rounds)
    assert len(rounds) == n // batch and all(len(users) == batch for users in rounds)
    assert everyone.size == trainer.n_users_used == (n // batch) * batch
    assert np.unique(everyone).size == everyone.size  # nobody twice
    assert everyone.min() >= 0 and everyone.max() < n


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_each_report_is_eps_ldp_and_the_guarantee_is_stated(epsilon):
    trainer = Trainer(LDPLinearSVC(epsilon, classes=(-1, 1), random_state=0), 20_000, 4)
    certificate = trainer.verify()
    assert certificate.passed and certificate.exact and certificate.epsilon <= epsilon
    independent = verify_table(one_bit_table(implemented_exp(epsilon)), LDP(epsilon), exact=True)
    assert independent.passed and certificate.epsilon == independent.epsilon
    guarantee = trainer.task().to_dict()["guarantee"]
    assert (guarantee["notion"], guarantee["epsilon"]) == ("LDP", epsilon)
    assert "one report per user" in guarantee["detail"]
    X, y = data(LDPLinearSVC, 20_000, 2)
    model = LDPLinearSVC(epsilon, random_state=0).fit(X, y)
    assert model.guarantee_.to_dict() == guarantee


def test_one_users_report_has_the_one_bit_law_of_its_clipped_gradient():
    """Many draws of one user's report: coordinate j uniform in 0..m-1 and Pr[+1 | j] = 1/2 + g_j (e^eps - 1) /
    (2 (e^eps + 1)), g the clipped gradient of the logistic loss at the task's model, computed here by hand."""
    d, r, eps = 4, 3, 1.5
    task = Task(round=1, rounds=1, loss="logistic", epsilon=eps, n_features=d, reduced_dim=r, projection_seed=99,
                fit_intercept=True, regularization=0.2, model=[0.9, -1.4, 0.3, 0.5], classes=["no", "yes"])
    x, label = np.array([0.7, -0.2, 0.9, -1.0]), "no"
    z = np.r_[projection_signs(r, d, 99) / math.sqrt(r) @ x, 1.0]
    alpha = np.array(task.model)
    gradient = np.clip(1 / (1 + np.exp(-z @ alpha)) * z + np.r_[0.2 * alpha[:r], 0.0], -1, 1)  # y = -1
    n = 400_000
    reports = client_report(task, np.tile(x, (n, 1)), np.full(n, label), rng=5)
    single = client_report(task, x, label, rng=5)
    assert single.dtype == ld.learn.REPORT_DTYPE and single.shape == ()
    counts = np.bincount(reports["coordinate"], minlength=4)
    assert np.all(np.abs(counts - n / 4) < 5 * math.sqrt(n / 4 * 3 / 4))
    e = math.exp(eps)
    plus = 0.5 + gradient * (e - 1) / (2 * (e + 1))
    observed = np.bincount(reports["coordinate"], weights=reports["sign"] == 1, minlength=4) / counts
    assert np.all(np.abs(observed - plus) < 5 * np.sqrt(plus * (1 - plus) / counts)), (observed, plus)


def test_devices_draw_from_the_os_keyed_stream_by_default(monkeypatch):
    from lipdesign.mechanisms import sampling

    calls = []
    original = sampling.secure_generator
    monkeypatch.setattr(sampling, "secure_generator", lambda: calls.append(1) or original())
    trainer = Trainer(LDPLinearRegression(1.0, batch_size=10), 50, 4)
    assert trainer.simulated_rng(trainer.task()) is None  # random_state=None: nothing simulated is seeded
    X, y = data(LDPLinearRegression, 10, 3)
    calls.clear()  # the plan drew from it too
    client_report(trainer.task(), X, y)
    assert calls == [1]


def test_predict_proba_is_the_logistic_of_the_decision_function():
    X, y = data(LDPLogisticRegression, 5000, 4)
    model = LDPLogisticRegression(4.0, classes=("yes", "no"), random_state=1).fit(X, y)
    margin = X @ model.coef_ + model.intercept_
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-margin)), rtol=1e-12)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X))


def test_missing_reports_still_step_and_surplus_ones_are_refused():
    trainer = Trainer(LDPLinearRegression(2.0, batch_size=40, random_state=0), 400, 4)
    task = trainer.task()
    X, y = data(LDPLinearRegression, 400, 5)
    reports = client_report(task, X[trainer.participants(task)], y[trainer.participants(task)], rng=1)
    too_many = trainer.aggregate(reports) + trainer.aggregate(reports[:1])
    with pytest.raises(ValidationError, match="aggregate holds 41 reports; round 1 has 40 participants"):
        trainer.update(task, too_many)
    trainer.update(task, trainer.aggregate(reports[:30]))  # ten devices dropped out
    assert trainer.round == 2


def test_rounds_are_applied_once_in_order():
    trainer = Trainer(LDPLinearRegression(2.0, batch_size=40, random_state=0), 200, 4)
    iterator = trainer.tasks()
    first = next(iterator)
    with pytest.raises(ValidationError, match="round 1 was not updated"):
        next(iterator)
    altered = Task(**{**{name: getattr(first, name) for name in first.__dataclass_fields__},
                      "model": (1.0,) * len(first.model)})
    with pytest.raises(ValidationError, match="task is round 1; the trainer is at round 1"):
        trainer.update(altered, trainer.aggregate(_plus_one()))
    with pytest.raises(ValidationError, match="round 1 of 5 is not updated yet"):
        trainer.result()
    trainer.update(first, trainer.aggregate(_plus_one()))
    with pytest.raises(ValidationError, match="task is round 1; the trainer is at round 2"):
        trainer.update(first, trainer.aggregate(_plus_one()))
    other = HarmonyNumeric(2.0, 5, coordinates="public", seed=1).aggregate(_plus_one())
    with pytest.raises(ValidationError, match="aggregate is of mechanism"):
        trainer.update(trainer.task(), other)
    with pytest.raises(ValidationError, match="aggregate is 3; it must be an Aggregate"):
        trainer.update(trainer.task(), 3)


@pytest.mark.parametrize("change, message", [
    (lambda doc: doc.pop("model"), "task.model is missing"),
    (lambda doc: doc.update(extra=1), "task.extra is unknown"),
    (lambda doc: doc.update(format="x"), "format is 'x'"),
    (lambda doc: doc.update(format_version=9), "format_version is 9"),
    (lambda doc: doc.update(epsilon=3.0), "report is"),  # the stated report mechanism no longer matches
    (lambda doc: doc["guarantee"].update(epsilon=3.0), "guarantee is"),
    (lambda doc: doc["report"].update(fingerprint="0" * 64), "report is"),
    (lambda doc: doc.update(model=[0.1, "0.2", 0.3]), "model is"),
    (lambda doc: doc.update(model=[0.1, 0.2]), "must be a list of reduced_dim \\+ fit_intercept = 3 numbers"),
    (lambda doc: doc.update(reduced_dim=5), "reduced_dim is 5"),
    (lambda doc: doc.update(round=4), "round is 4"),
    (lambda doc: doc.update(loss="huber"), "loss is 'huber'"),
    (lambda doc: doc.update(classes=[1, 1]), "classes repeats 1"),
    (lambda doc: doc.update(fit_intercept="yes"), "fit_intercept is 'yes'"),
])
def test_a_bad_task_document_is_refused_naming_the_field(change, message):
    trainer = Trainer(LDPLogisticRegression(1.0, classes=(0, 1), batch_size=10, reduced_dim=2, random_state=0),
                      30, 2)
    document = json.loads(json.dumps(trainer.task().to_dict()))
    change(document)
    with pytest.raises(ValidationError, match=message):
        Task.from_dict(document)


def test_bad_trainer_and_device_inputs_name_the_field():
    with pytest.raises(ValidationError, match="classes is None; a deployed classifier needs its 2 public labels"):
        Trainer(LDPLogisticRegression(), 10_000, 3)
    with pytest.raises(ValidationError, match="estimator is"):
        Trainer(object(), 100, 3)
    with pytest.raises(ValidationError, match="n_users is 50: X has 50 users but one mini-batch needs"):
        Trainer(LDPLinearRegression(0.1), 50, 3)
    task = Trainer(LDPLinearSVC(1.0, classes=("a", "b"), batch_size=5), 20, 3).task()
    with pytest.raises(ValidationError, match=r"x\[0, 1\] is 2.0"):
        client_report(task, [0.0, 2.0, 0.0], "a")
    with pytest.raises(ValidationError, match=r"y\[1\] is 'c', not one of classes"):
        client_report(task, np.zeros((2, 3)), ["a", "c"])
    with pytest.raises(ValidationError, match="y has 3 entries but x has 2 rows"):
        client_report(task, np.zeros((2, 3)), ["a", "b", "a"])
    with pytest.raises(ValidationError, match="task is"):
        client_report(task.to_dict(), np.zeros((2, 3)), ["a", "b"])


# -- scikit-learn's estimator checks (optional) ------------------------------------------------------------------
#: Checks that do not apply, by reason. Most generate X outside [-1, 1] (normal around 0 or 100): the learners
#: refuse such features rather than rescale them, since the clipping bound is part of the privacy contract (map
#: raw ranges with lipdesign.Range). Others expect scikit-learn's own wording or exception types, where
#: lipdesign raises its ValidationError naming the field, value and rule (numpy only: no sklearn import).
X_OUTSIDE = "generates X outside [-1, 1]; the learners refuse it (the clipping bound is the privacy contract)"
SKIPPED = {
    **dict.fromkeys([
        "check_dict_unchanged", "check_dont_overwrite_parameters", "check_estimators_dtypes",
        "check_estimators_fit_returns_self", "check_estimators_overwrite_params", "check_estimators_pickle",
        "check_f_contiguous_array_estimator", "check_fit2d_1feature", "check_fit2d_1sample", "check_fit2d_predict1d",
        "check_fit_check_is_fitted", "check_fit_idempotent", "check_n_features_in",
        "check_n_features_in_after_fitting", "check_positive_only_tag_during_fit", "check_readonly_memmap_input",
        "check_regressor_data_not_an_array", "check_regressors_int", "check_regressors_no_decision_function",
        "check_regressors_train", "check_classifier_data_not_an_array", "check_classifier_not_supporting_multiclass",
        "check_classifiers_classes", "check_classifiers_train", "check_decision_proba_consistency"], X_OUTSIDE),
    "check_supervised_y_2d": "a column y is refused (regression: its targets also leave [-1, 1]), not raveled",
    "check_fit_score_takes_y": "generates regression targets outside [-1, 1], which LDPLinearRegression refuses",
    "check_classifiers_regression_target": "expects sklearn's 'Unknown label type' wording; lipdesign says "
                                           "'y has 100 distinct classes ... Only binary classification'",
    "check_complex_data": "expects sklearn's wording; lipdesign says 'X has complex entries'",
    "check_dtype_object": "expects sklearn's wording; lipdesign says 'X is ...; it must be a rectangular array'",
    "check_estimators_empty_data_messages": "expects sklearn's wording for 0 features",
    "check_estimators_nan_inf": "expects 'NaN'/'inf' in the message; lipdesign says 'X[i, j] is nan; ... finite'",
    "check_estimators_unfitted": "expects sklearn's NotFittedError; lipdesign raises ValidationError 'not fitted "
                                 "yet' (numpy only)",
}


def _sklearn_checks():
    try:
        from sklearn.utils.estimator_checks import parametrize_with_checks
    except ImportError:
        return pytest.mark.skip(reason="scikit-learn is not installed (pip install -e .[dev])")
    # A large epsilon and batch_size=1 so that the checks' small data sets (n ~ 30) are enough users.
    estimators = [cls(8.0, batch_size=1, random_state=0)
                  for cls in (LDPLinearRegression, LDPLogisticRegression, LDPLinearSVC)]
    with warnings.catch_warnings():  # "does not inherit from BaseEstimator": deliberate, scikit-learn is optional
        warnings.simplefilter("ignore", UserWarning)
        return parametrize_with_checks(estimators, expected_failed_checks=_skipped)


def _skipped(estimator):
    skipped = dict(SKIPPED)
    if not isinstance(estimator, LDPLinearRegression):  # classification targets are any labels
        skipped.pop("check_fit_score_takes_y")
    if not isinstance(estimator, LDPLogisticRegression):  # the only one with predict_proba
        skipped.pop("check_decision_proba_consistency")
    return skipped


@_sklearn_checks()
def test_sklearn_estimator_checks(estimator, check):
    """Each of scikit-learn's checks raises AssertionError (or its own error) when the estimator breaks its rule."""
    check(estimator)
