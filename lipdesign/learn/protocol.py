"""The learners as a deployed protocol (Harmony Alg. 4, docs/math.md §9.10-§9.11): the server plans the rounds
and publishes one ``Task`` per round (JSON: ``to_dict`` / ``from_dict``); each participant of the round computes
its single report on its device (``client_report``); the server sums the reports into an ``Aggregate`` (mergeable
across files and machines with ``+``) and steps (``Trainer.update``); after the last round ``Trainer.result()``
is the fitted estimator. The estimators' ``fit`` runs exactly this loop in process. Numpy only (randomgen for the
devices' default ChaCha20 stream).

A report is Harmony's Alg. 2 on the user's clipped gradient: ``HarmonyNumeric(epsilon, m)`` with m = r +
fit_intercept entries (docs/math.md §9.2), whose one-bit table is verified exactly (``Trainer.verify``). Every
user reports in exactly one round, so each user is epsilon-LDP overall (``Trainer.guarantee``).

Randomness, in separate streams (docs/math.md §9.11); "root" is the int ``random_state``, or 128 bits drawn once
from a Generator or BitGenerator ``random_state``:

- the projection: the public ``projection_seed``; else, for an int ``random_state``, 63 bits of
  SeedSequence(root, spawn_key=(0,)); else fresh from the OS CSPRNG (nothing drawn from a Generator is published);
- the plan (which users report in which round), the server's: PCG64 on SeedSequence(root, spawn_key=(1,)) when
  seeded, else the ChaCha20 stream keyed from the OS;
- the devices' noise: a real device calls ``client_report(..., rng=None)`` (ChaCha20 keyed from the OS, like
  every ``perturb``); a seeded simulation draws round t's devices from PCG64 on SeedSequence(root,
  spawn_key=(2, t)) (``Trainer.simulated_rng``), so no stream is shared between the server and the devices.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.domains import Box
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.aggregate import Aggregate
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee, check_parameter_names
from lipdesign.mechanisms.harmony_categorical import projection_signs
from lipdesign.mechanisms.numeric import REPORT_DTYPE, HarmonyNumeric
from lipdesign.mechanisms.sampling import MAX_SEED, as_generator, one_bit_epsilon, public_seed
from lipdesign.validation import choice, document_header, float_array, fmt, integer, real_number

if TYPE_CHECKING:  # annotations only
    from collections.abc import Iterator, Mapping, Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.sampling import RandomSource
    from lipdesign.verification import Certificate

__all__ = ["REPORT_DTYPE", "TASK_FORMAT", "Task", "Trainer", "client_report", "learning_guarantee",
           "public_projection"]

TASK_FORMAT = "lipdesign.learn.task"
TASK_FORMAT_VERSION = 1

#: The spawn keys of the streams of a seeded simulation (module docstring).
PROJECTION_STREAM, PLAN_STREAM, DEVICE_STREAM = 0, 1, 2


def _squared_derivative(z, y):
    """d/dz (z - y)^2."""
    return 2.0 * (z - y)


def _logistic_derivative(z, y):
    """d/dz log(1 + exp(-y z)) = -y / (1 + exp(y z)), evaluated without overflow."""
    return -y * np.exp(-np.logaddexp(0.0, y * z))


def _hinge_derivative(z, y):
    """A subgradient of max(0, 1 - y z): -y where y z < 1, else 0."""
    return np.where(y * z < 1.0, -y, 0.0)


#: d loss / d margin z = x . alpha for each loss a task can name.
LOSS_DERIVATIVES = {"squared": _squared_derivative, "logistic": _logistic_derivative, "hinge": _hinge_derivative}


def _clipped_gradients(derivative, x, y, alpha, penalty):
    """Each user's gradient (one row per user) of l(z = x . alpha; y) + sum_k penalty_k alpha_k^2 / 2, clipped
    to [-1, 1] entrywise (Alg. 4 lines 7-9)."""
    gradient = derivative(x @ alpha, y)[:, None] * x + penalty * alpha
    return np.clip(gradient, -1.0, 1.0, out=gradient)


@cache
def report_mechanism(epsilon: float, m: int) -> HarmonyNumeric:
    """The mechanism of every report: ``HarmonyNumeric(epsilon, m)``, Harmony Alg. 2 on the m clipped gradient
    entries (one instance per (epsilon, m): mechanisms are immutable)."""
    return HarmonyNumeric(epsilon, m)


def learning_guarantee(epsilon: float) -> Guarantee:
    """The per-user claim of the learners: epsilon-LDP, resting on the exactly verified one-bit table of the one
    report each user sends.

    Every user reports in exactly one round, so there is no composition over the rounds (docs/math.md §9.10).

    Parameters
    ----------
    epsilon : float
        Each user's LDP budget.

    Returns
    -------
    Guarantee
        LDP at ``epsilon``, basis "exact table".

    See Also
    --------
    Trainer.guarantee, Task.guarantee : The same claim for a deployment.

    Examples
    --------
    >>> import lipdesign as ld
    >>> guarantee = ld.learn.learning_guarantee(1.0)
    >>> guarantee.notion, guarantee.epsilon, guarantee.basis
    ('LDP', 1.0, 'exact table')
    """
    return Guarantee("LDP", epsilon, EXACT_TABLE, "per user: one report per user (each user takes part in exactly "
                                                  "one round), Harmony Alg. 2 on the clipped gradient")


# -- class labels ------------------------------------------------------------------------------------------------
def class_labels(y: npt.ArrayLike, field: str = "y") -> npt.NDArray[Any]:
    """``y`` as a non-empty vector of class labels (no nan, inf or None)."""
    array = np.asarray(y)
    if array.ndim != 1:
        raise ValidationError(f"{field} has shape {array.shape}; it must be a vector of class labels, one per row")
    if array.size == 0:
        raise ValidationError(f"{field} must not be empty")
    if array.dtype.kind in "fc" and not np.all(np.isfinite(array)):
        position = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValidationError(f"{field}[{position}] is {array[position]}; class labels must not be nan or inf")
    if array.dtype.kind == "O" and any(label is None for label in array):
        raise ValidationError(f"{field} contains None; every row needs a class label")
    return array


def public_classes(classes: Any) -> npt.NDArray[Any]:
    """The 2 public class labels as an array (object dtype when they mix text and numbers)."""
    if not isinstance(classes, (list, tuple, np.ndarray)) or any(
            isinstance(label, (list, tuple, dict, set, np.ndarray)) for label in classes):
        raise ValidationError(f"classes is {classes!r}; it must be None or a sequence of the 2 public class "
                              "labels, e.g. (-1, 1)")
    labels = list(classes)
    if len(labels) != 2:
        raise ValidationError(f"classes has {len(labels)} entries ({labels!r}); it must hold exactly the 2 "
                              "public class labels")
    for label in labels:
        if label is None or (isinstance(label, (float, np.floating)) and not math.isfinite(label)):
            raise ValidationError(f"classes contains {label!r}; class labels must not be None, nan or inf")
    if labels[0] == labels[1]:
        raise ValidationError(f"classes repeats {labels[0]!r}; it must hold 2 distinct labels")
    mixed = len({isinstance(label, (str, np.str_)) for label in labels}) > 1
    return np.array(labels, dtype=object) if mixed else np.array(labels)


def signed_labels(labels: npt.NDArray[Any], classes: npt.NDArray[Any], field: str = "y") -> npt.NDArray[np.float64]:
    """classes[0] -> -1.0 and classes[1] -> +1.0 for each label; ValidationError at the first other label."""
    as_objects = labels.astype(object)
    positive = as_objects == classes[1]
    unknown = np.flatnonzero(~(positive | (as_objects == classes[0])))
    if unknown.size:
        position = int(unknown[0])
        label = labels[position].item() if isinstance(labels[position], np.generic) else labels[position]
        raise ValidationError(f"{field}[{position}] is {label!r}, not one of classes = {classes.tolist()!r}")
    return np.where(positive, 1.0, -1.0)


def public_projection(seed: int, r: int, d: int) -> npt.NDArray[np.float64]:
    """The public r x d projection P (docs/math.md §9.10 step 1): the identity when r = d, else the signs of
    ``projection_signs(r, d, seed)`` / sqrt(r)."""
    return np.eye(d) if r == d else projection_signs(r, d, seed) / math.sqrt(r)


def _json_label(label):
    return label.item() if isinstance(label, np.generic) else label


# -- the task a device receives ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Task:
    """One round of Harmony's Alg. 4 as the server publishes it to the round's devices (docs/math.md §9.11).

    Round ``round`` of ``rounds``: the loss, epsilon, the public projection (its seed, r = ``reduced_dim`` rows,
    the identity when r = d = ``n_features``), the current model alpha (r entries, then the intercept when
    ``fit_intercept``), the L2 ``regularization`` and, for classifiers, the 2 public ``classes`` (classes[1] is
    +1 in the loss). Every field is checked on construction. A server gets its tasks from ``Trainer.task``;
    devices read the published JSON with ``from_dict`` and answer with ``client_report``.

    Parameters
    ----------
    round : int
        The round, 1..``rounds``.
    rounds : int
        The number of rounds T, >= 1.
    loss : {"squared", "logistic", "hinge"}
        The loss of the learner (``LDPLinearRegression``, ``LDPLogisticRegression``, ``LDPLinearSVC``).
    epsilon : float
        Each user's LDP budget, in [1e-6, 10].
    n_features : int
        d, the features of a user, >= 1.
    reduced_dim : int
        r, the rows of the public projection, 1..d.
    projection_seed : int
        The public seed of the projection, in [0, 2**63).
    fit_intercept : bool
        Whether the model ends with an intercept.
    regularization : float
        lambda of the L2 penalty (the intercept excluded), >= 0.
    model : sequence of float
        The current model alpha: r + fit_intercept numbers (stored as a tuple).
    classes : sequence of str or int, optional
        The 2 public class labels of a classifier (classes[1] is +1 in the loss); None for the squared loss.

    Attributes
    ----------
    mechanism : HarmonyNumeric
        The mechanism of every report (``HarmonyNumeric(epsilon, r + fit_intercept)``).
    projection : numpy.ndarray
        The public r x d projection P.

    Raises
    ------
    ValidationError
        If a field breaks its rule: a round outside 1..rounds, an unknown loss, epsilon outside [1e-6, 10],
        reduced_dim > n_features, a model of the wrong length, classes for a regression or not 2 distinct labels
        for a classifier, ...

    See Also
    --------
    Trainer : The server that publishes the tasks.
    client_report : A device's answer to a task.

    Examples
    --------
    >>> import lipdesign as ld
    >>> task = ld.learn.Task(round=1, rounds=10, loss="logistic", epsilon=1.0, n_features=3, reduced_dim=3,
    ...                      projection_seed=7, fit_intercept=True, regularization=1e-4,
    ...                      model=(0.0, 0.0, 0.0, 0.0), classes=(0, 1))
    >>> task.mechanism
    HarmonyNumeric(epsilon=1.0, d=4, coordinates='private', seed=None)

    The JSON a device receives, read back field for field:

    >>> document = task.to_dict()
    >>> document["model"], document["report"]["fields"]
    ([0.0, 0.0, 0.0, 0.0], {'coordinate': 'int32 in 0..3', 'sign': 'int8, -1 or +1'})
    >>> ld.learn.Task.from_dict(document) == task
    True

    Every field is checked:

    >>> ld.learn.Task(round=1, rounds=10, loss="logistic", epsilon=1.0, n_features=3, reduced_dim=3,
    ...               projection_seed=7, fit_intercept=True, regularization=1e-4, model=(0.0, 0.0, 0.0),
    ...               classes=(0, 1))
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: model is (0.0, 0.0, 0.0); it must be a list of ... = 4 numbers
    """

    round: int
    rounds: int
    loss: str
    epsilon: float
    n_features: int
    reduced_dim: int
    projection_seed: int
    fit_intercept: bool
    regularization: float
    model: Sequence[float]
    classes: Sequence[Any] | npt.NDArray[Any] | None = None

    def __post_init__(self) -> None:
        def put(name, value):
            object.__setattr__(self, name, value)

        put("rounds", integer(self.rounds, "rounds"))
        put("round", integer(self.round, "round", high=self.rounds))
        put("loss", choice(self.loss, "loss", tuple(LOSS_DERIVATIVES)))
        put("epsilon", one_bit_epsilon(self.epsilon))
        put("n_features", integer(self.n_features, "n_features"))
        put("reduced_dim", integer(self.reduced_dim, "reduced_dim", high=self.n_features))
        put("projection_seed", integer(self.projection_seed, "projection_seed", low=0, high=MAX_SEED - 1))
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValidationError(f"fit_intercept is {fmt(self.fit_intercept)}; it must be true or false")
        put("fit_intercept", bool(self.fit_intercept))
        put("regularization", real_number(self.regularization, "regularization", low=0.0))
        m = self.reduced_dim + self.fit_intercept
        try:
            numbers_only = np.asarray(self.model).dtype.kind in "iuf"  # no text, booleans or objects
        except ValueError:  # ragged
            numbers_only = False
        if not (numbers_only and isinstance(self.model, (list, tuple, np.ndarray)) and np.shape(self.model) == (m,)):
            raise ValidationError(f"model is {fmt(self.model)}; it must be a list of reduced_dim + fit_intercept = "
                                  f"{m} numbers")
        put("model", tuple(float_array(self.model, "model", 1).tolist()))
        if self.loss == "squared":
            if self.classes is not None:
                raise ValidationError(f"classes is {fmt(self.classes)}; a regression (loss 'squared') has none")
        else:
            put("classes", tuple(_json_label(label) for label in public_classes(self.classes)))

    @property
    def mechanism(self) -> HarmonyNumeric:
        """The mechanism of every report: ``HarmonyNumeric(epsilon, m)``, m = r + fit_intercept."""
        return report_mechanism(self.epsilon, len(self.model))

    @cached_property
    def projection(self) -> npt.NDArray[np.float64]:
        """The public r x d projection P: the identity when r = d, else signs / sqrt(r) from ``projection_seed``."""
        return public_projection(self.projection_seed, self.reduced_dim, self.n_features)

    @property
    def guarantee(self) -> Guarantee:
        """The per-user claim, ``learning_guarantee(epsilon)``."""
        return learning_guarantee(self.epsilon)

    def report_format(self) -> dict[str, Any]:
        """What a device sends back: one record of the task's mechanism (its family and fingerprint).

        Returns
        -------
        dict
            ``family``, ``fingerprint`` and the ``fields`` of a report, in words.
        """
        return {"family": self.mechanism.family, "fingerprint": self.mechanism.fingerprint,
                "fields": {"coordinate": f"int32 in 0..{len(self.model) - 1}", "sign": "int8, -1 or +1"}}

    def to_dict(self) -> dict[str, Any]:
        """The JSON a device receives (``from_dict`` reads it back, field for field).

        Returns
        -------
        dict
            The format header, every field, the ``report_format`` and the ``guarantee``.
        """
        return {"format": TASK_FORMAT, "format_version": TASK_FORMAT_VERSION, "round": self.round,
                "rounds": self.rounds, "loss": self.loss, "epsilon": self.epsilon, "n_features": self.n_features,
                "reduced_dim": self.reduced_dim, "projection_seed": self.projection_seed,
                "fit_intercept": self.fit_intercept, "regularization": self.regularization,
                "model": list(self.model), "classes": None if self.classes is None else list(self.classes),
                "report": self.report_format(), "guarantee": self.guarantee.to_dict()}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Self:
        """The Task of ``to_dict()``: every name must be there (none defaulted), every field is checked, and the
        stated report format and guarantee must be the ones the fields give.

        Parameters
        ----------
        document : dict
            A task as ``to_dict`` writes it (parsed JSON).

        Returns
        -------
        Task
            The task, equal to the one written.

        Raises
        ------
        ValidationError
            If the format header is wrong, a field is missing, unknown or breaks its rule, or the stated report
            format or guarantee is not the one the fields give.
        """
        document_header(document, "a learning task", TASK_FORMAT, TASK_FORMAT_VERSION)
        names = ("round", "rounds", "loss", "epsilon", "n_features", "reduced_dim", "projection_seed",
                 "fit_intercept", "regularization", "model", "classes")
        missing = [name for name in (*names, "report", "guarantee") if name not in document]
        if missing:
            raise ValidationError(f"task.{missing[0]} is missing; a task states every field (none is defaulted)")
        task = cls(**{name: document[name] for name in names})
        written = task.to_dict()
        check_parameter_names(document, written, "Task.to_dict", field="task")
        for part in ("report", "guarantee"):
            if document[part] != written[part]:
                raise ValidationError(f"{part} is {fmt(document[part])}; the task's fields give {fmt(written[part])}")
        return task


def client_report(task: Task, x: npt.ArrayLike, y: Any, *,
                  rng: RandomSource = None) -> npt.NDArray[np.void] | np.void:
    """A device's report for ``task`` (docs/math.md §9.10 step 4).

    Its features x (in [-1, 1]^d) projected by the task's public P (plus the constant 1 of the intercept), the
    gradient of the regularised loss at the task's model clipped to [-1, 1], and Harmony Alg. 2 on it
    (``task.mechanism``).

    Parameters
    ----------
    task : Task
        The round's task (``Task.from_dict`` reads the published JSON).
    x : array_like
        One user's features (d,), or a batch (n, d), in [-1, 1].
    y : float, str or int, or array_like
        The user's target (in [-1, 1] for a regression, one of ``task.classes`` for a classifier), or one per
        row of a batch.
    rng : numpy.random.Generator or int, optional
        None (the default): the ChaCha20 stream keyed from the OS, what a device uses; an int or Generator only
        to simulate.

    Returns
    -------
    numpy.void or numpy.ndarray
        One record of ``REPORT_DTYPE`` (fields "coordinate" and "sign") for one user, or one per row of a batch.

    Raises
    ------
    ValidationError
        If ``task`` is not a Task, a feature lies outside [-1, 1], a target is outside [-1, 1] or not one of the
        task's classes, or x and y have different lengths.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> task = ld.learn.Task(round=1, rounds=10, loss="logistic", epsilon=1.0, n_features=3, reduced_dim=3,
    ...                      projection_seed=7, fit_intercept=True, regularization=1e-4,
    ...                      model=(0.0, 0.0, 0.0, 0.0), classes=(0, 1))
    >>> report = ld.learn.client_report(task, [0.5, -0.2, 0.1], 1, rng=0)
    >>> int(report["coordinate"]), int(report["sign"])
    (3, 1)

    A batch gives one report per row:

    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(100, 3))
    >>> reports = ld.learn.client_report(task, X, (X[:, 0] > 0).astype(int), rng=1)
    >>> reports.shape, reports.dtype
    ((100,), dtype([('coordinate', '<i4'), ('sign', 'i1')]))

    A label outside the task's classes is refused:

    >>> ld.learn.client_report(task, [0.5, -0.2, 0.1], 2)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: y[0] is 2, not one of classes = [0, 1]
    """
    if not isinstance(task, Task):
        raise ValidationError(f"task is {fmt(task)}; it must be a Task (Task.from_dict reads the published JSON)")
    single = np.ndim(y) == 0
    features = Box(task.n_features).validate([x] if single else x, "x")
    if task.classes is None:
        targets = Box(1).validate([y] if single else y, "y").ravel()
    else:
        targets = signed_labels(class_labels([y] if single else y), public_classes(task.classes))
    if targets.shape[0] != features.shape[0]:
        raise ValidationError(f"y has {targets.shape[0]} entries but x has {features.shape[0]} rows; one target "
                              "per row")
    r, m = task.reduced_dim, len(task.model)
    projected = np.ones((features.shape[0], m))
    projected[:, :r] = features @ task.projection.T
    penalty = np.where(np.arange(m) < r, task.regularization, 0.0)  # the intercept is not regularised
    gradient = _clipped_gradients(LOSS_DERIVATIVES[task.loss], projected, targets, np.array(task.model), penalty)
    reports = task.mechanism.perturb(gradient, rng=rng)
    return reports[0] if single else reports


# -- the server ------------------------------------------------------------------------------------------------
def _seed_root(random_state):
    """The root entropy of a seeded simulation's streams: the int ``random_state``, or 128 bits drawn from a
    Generator or BitGenerator; None for ``random_state=None`` (every stream from the OS)."""
    if random_state is None:
        return None
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        return integer(random_state, "random_state", low=0)
    try:
        generator = as_generator(random_state)
    except ValidationError as error:
        raise ValidationError(str(error).replace("rng is", "random_state is", 1)) from None
    return [int(word) for word in generator.integers(0, 2**32, size=4, dtype=np.uint64)]


def _stream(root, *key):
    return np.random.default_rng(np.random.SeedSequence(root, spawn_key=key))


class Trainer:
    """The server's side of Alg. 4 (docs/math.md §9.11): plans the rounds, publishes a ``Task`` per round, sums
    the round's reports and steps the model.

    It validates the estimator's parameters, fixes r, the batch size ``|G|`` and T = ``n_users // |G|`` rounds,
    publishes the projection's seed and draws the plan: a random permutation of the users cut into T batches of
    ``|G|`` (the ``n_users - T |G|`` left over never report). Round by round: ``tasks()`` / ``task()``,
    ``participants(task)``, ``aggregate(reports)``, ``update(task, aggregate)``; then ``result()``. The
    estimators' ``fit`` runs exactly this loop in process.

    Parameters
    ----------
    estimator : LDPLinearRegression, LDPLogisticRegression or LDPLinearSVC
        An unfitted learner, whose parameters the trainer reads (``result`` fits it).
    n_users : int
        The number of users, >= one mini-batch.
    n_features : int
        d, the features of each user, >= 1.
    classes : sequence of str or int, optional
        A classifier's 2 public labels; None: the estimator's ``classes``, which a deployment must then give.

    Attributes
    ----------
    rounds : int
        T, the number of rounds.
    batch_size : int
        ``|G|``, the users of a round.
    reduced_dim : int
        r, the rows of the public projection.
    projection_seed : int
        The public seed of the projection.
    mechanism : HarmonyNumeric
        The mechanism of every report.
    round : int
        The next round to update (rounds + 1 when done).

    Raises
    ------
    ValidationError
        If the estimator is not one of the learners, a parameter breaks its rule, there are fewer users than one
        mini-batch, or a classifier has no public classes.

    See Also
    --------
    Task, client_report : The devices' side.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(500, 2))
    >>> y = np.clip(0.6 * X[:, 0] - 0.3 * X[:, 1], -1, 1)
    >>> learner = ld.learn.LDPLinearRegression(epsilon=4.0, random_state=0)
    >>> trainer = ld.learn.Trainer(learner, n_users=500, n_features=2)
    >>> trainer.rounds, trainer.batch_size, trainer.reduced_dim
    (62, 8, 2)

    Each round: publish the task, let its participants report (simulated here, seeded), sum and step:

    >>> for task in trainer.tasks():
    ...     users = trainer.participants(task)
    ...     reports = ld.learn.client_report(task, X[users], y[users], rng=trainer.simulated_rng(task))
    ...     trainer.update(task, trainer.aggregate(reports))
    >>> model = trainer.result()
    >>> np.round(model.coef_, 2), round(model.intercept_, 2)
    (array([ 0.49, -0.21]), 0.03)

    The same as ``fit``, which runs this loop:

    >>> np.round(ld.learn.LDPLinearRegression(epsilon=4.0, random_state=0).fit(X, y).coef_, 2)
    array([ 0.49, -0.21])
    """

    # ``estimator`` and ``result()``: the learners of lipdesign.learn.linear, typed Any since that module imports
    # this one (no import back, not even for annotations: tests/test_mechanism_contract.py)
    def __init__(self, estimator: Any, n_users: int, n_features: int, *,
                 classes: Sequence[Any] | npt.NDArray[Any] | None = None) -> None:
        self.loss = cast(str, getattr(type(estimator), "_loss", None))  # a str once the check below passes
        if self.loss not in LOSS_DERIVATIVES:
            raise ValidationError(f"estimator is {fmt(estimator)}; it must be an LDPLinearRegression, "
                                  "LDPLogisticRegression or LDPLinearSVC")
        self.estimator = estimator
        self.n_users = integer(n_users, "n_users")
        self.n_features = integer(n_features, "n_features")
        (self.epsilon, self.regularization, self.learning_rate, self.reduced_dim, m,
         self.batch_size) = estimator._validated_parameters(self.n_users, self.n_features)
        if self.n_users < self.batch_size:
            raise ValidationError(
                f"n_users is {self.n_users}: X has {self.n_users} users but one mini-batch needs batch_size = "
                f"{self.batch_size} (epsilon = {self.epsilon:g}, m = {m} reported gradient entries); give at least "
                f"{self.batch_size} users, or a larger epsilon, a smaller reduced_dim or an explicit batch_size")
        if self.loss == "squared":
            self.classes = None
        elif classes is None and estimator.classes is None:
            raise ValidationError("classes is None; a deployed classifier needs its 2 public labels (pass classes= "
                                  "to the estimator, e.g. classes=(0, 1))")
        else:
            self.classes = public_classes(estimator.classes if classes is None else classes)
        self.rounds = self.n_users // self.batch_size
        self.n_users_used = self.rounds * self.batch_size
        self.mechanism = report_mechanism(self.epsilon, m)

        self._root = _seed_root(estimator.random_state)
        if estimator.projection_seed is not None:
            self.projection_seed = public_seed(estimator.projection_seed, "projection_seed")
        elif isinstance(self._root, int):  # an int seed: reproducible; a Generator's draws are never published
            words = np.random.SeedSequence(self._root, spawn_key=(PROJECTION_STREAM,)).generate_state(1, np.uint64)
            self.projection_seed = int(words[0] >> np.uint64(1))
        else:
            self.projection_seed = public_seed(None)
        plan = as_generator(None) if self._root is None else _stream(self._root, PLAN_STREAM)
        self._order = plan.permutation(self.n_users)[:self.n_users_used]
        self._order.setflags(write=False)
        self._alpha = np.zeros(m)
        self.round = 1  # the next round to update; rounds + 1 when done
        self._task: Task | None = None

    @property
    def guarantee(self) -> Guarantee:
        """epsilon-LDP per user, one report per user (``learning_guarantee``)."""
        return learning_guarantee(self.epsilon)

    def verify(self) -> Certificate:
        """The exact Certificate of one report's mechanism (its realised one-bit table, docs/math.md §3).

        Returns
        -------
        Certificate
            Passed at epsilon, exact.
        """
        return self.mechanism.verify()

    def task(self) -> Task:
        """The task of the current round (the same object until ``update`` applies it).

        Returns
        -------
        Task
            Round ``round`` of ``rounds``, with the current model.

        Raises
        ------
        ValidationError
            If every round is updated already.
        """
        if self.round > self.rounds:
            raise ValidationError(f"all {self.rounds} rounds are updated; call result() for the model")
        if self._task is None:
            self._task = Task(self.round, self.rounds, self.loss, self.epsilon, self.n_features, self.reduced_dim,
                              self.projection_seed, self.estimator.fit_intercept, self.regularization,
                              tuple(self._alpha.tolist()), self.classes)
        return self._task

    def tasks(self) -> Iterator[Task]:
        """Each round's task in turn; the next comes once ``update`` has applied the previous one.

        Yields
        ------
        Task
            The task of the current round.

        Raises
        ------
        ValidationError
            If the next task is asked for before the previous round was updated.
        """
        while self.round <= self.rounds:
            task = self.task()
            yield task
            if self.round == task.round:
                raise ValidationError(f"round {task.round} was not updated; call update(task, aggregate) before "
                                      "asking for the next task")

    def _round_of(self, task):
        if not isinstance(task, Task) or task.rounds != self.rounds:
            raise ValidationError(f"task is {fmt(task)}; it must be one of this trainer's {self.rounds} tasks")
        return task.round

    def participants(self, task: Task) -> npt.NDArray[np.int64]:
        """The users who report in ``task``'s round; over all rounds each user appears at most once.

        Parameters
        ----------
        task : Task
            One of this trainer's tasks.

        Returns
        -------
        numpy.ndarray
            The indices (in 0..n_users-1) of the ``|G|`` users of the round.
        """
        t = self._round_of(task)
        return self._order[(t - 1) * self.batch_size:t * self.batch_size]

    def simulated_rng(self, task: Task) -> np.random.Generator | None:
        """The simulated devices' noise for ``task``'s round, as ``fit`` draws it. Real devices pass None.

        Parameters
        ----------
        task : Task
            One of this trainer's tasks.

        Returns
        -------
        numpy.random.Generator or None
            PCG64 on SeedSequence(root, spawn_key=(2, t)) when the estimator's ``random_state`` is seeded, None
            (the OS-keyed ChaCha20 stream) otherwise.
        """
        t = self._round_of(task)
        return None if self._root is None else _stream(self._root, DEVICE_STREAM, t)

    def aggregate(self, reports: npt.ArrayLike) -> Aggregate:
        """The Aggregate of reports: sign sums and counts per gradient entry, integers. Aggregates of one round
        add with ``+``.

        Parameters
        ----------
        reports : numpy.ndarray
            A structured array of ``REPORT_DTYPE``, one record, or a list of records.

        Returns
        -------
        Aggregate
            What ``update`` takes.
        """
        return self.mechanism.aggregate(np.atleast_1d(reports))

    def update(self, task: Task, aggregate: Aggregate) -> None:
        """Apply the current round: alpha <- alpha - gamma_t * (mean report), gamma_t = learning_rate / sqrt(t).

        Parameters
        ----------
        task : Task
            The task this trainer published for the current round.
        aggregate : Aggregate
            The round's reports (``aggregate``, summed with ``+``): at most its ``|G|`` reports (fewer when
            devices dropped out: the mean stays unbiased), at least one.

        Raises
        ------
        ValidationError
            If ``task`` is not the current round's task, ``aggregate`` is not an Aggregate of the round's
            mechanism, or it holds more reports than the round has participants.
        """
        if self._round_of(task) != self.round or task != self.task():
            raise ValidationError(f"task is round {task.round}; the trainer is at round {self.round} and applies "
                                  "each round once, in order, with the task it published")
        if not isinstance(aggregate, Aggregate):
            raise ValidationError(f"aggregate is {fmt(aggregate)}; it must be an Aggregate (Trainer.aggregate of "
                                  "the round's reports, summed with +)")
        if aggregate.n > self.batch_size:
            raise ValidationError(f"aggregate holds {aggregate.n} reports; round {self.round} has "
                                  f"{self.batch_size} participants, each reporting once")
        mean = self.mechanism.estimate(aggregate)  # checks the mechanism, the statistics and n >= 1
        self._alpha = self._alpha - (self.learning_rate / math.sqrt(self.round)) * mean
        self.round += 1
        self._task = None

    def result(self) -> Any:
        """The estimator, fitted, once every round is updated.

        Returns
        -------
        LDPLinearRegression, LDPLogisticRegression or LDPLinearSVC
            The estimator given, with ``coef_`` = P^T alpha, ``intercept_`` and the fitted attributes its
            docstring lists.

        Raises
        ------
        ValidationError
            If a round is not updated yet.
        """
        if self.round <= self.rounds:
            raise ValidationError(f"round {self.round} of {self.rounds} is not updated yet; result() needs every "
                                  "round")
        estimator, r = self.estimator, self.reduced_dim
        projection = public_projection(self.projection_seed, r, self.n_features)
        estimator.projection_ = projection
        estimator.projection_seed_ = self.projection_seed
        estimator.reduced_dim_ = r
        estimator.batch_size_ = self.batch_size
        estimator.alpha_ = self._alpha.copy()
        estimator.coef_ = projection.T @ self._alpha[:r]
        estimator.intercept_ = float(self._alpha[r]) if estimator.fit_intercept else 0.0
        estimator.n_iter_ = self.rounds
        estimator.n_users_used_ = self.n_users_used
        estimator.n_features_in_ = self.n_features
        estimator.guarantee_ = self.guarantee
        if self.classes is not None:
            estimator.classes_ = self.classes
        return estimator
