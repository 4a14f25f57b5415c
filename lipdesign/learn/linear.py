"""LDP empirical risk minimisation: Harmony's mini-batch gradient descent with dimension reduction (Nguyen et al. 2016,
Section 4, Algorithm 4; docs/math.md §9), as scikit-learn-style estimators. Numpy only; scikit-learn is not needed, but
the estimators follow its conventions (``get_params`` / ``set_params``, ``fit`` returns ``self``, fitted
attributes end in ``_``) so that ``sklearn.base.clone`` and ``GridSearchCV`` work when it is installed.

- ``LDPLinearRegression``: squared loss (x^T beta - y)^2, targets y in [-1, 1]; ``score`` is R^2.
- ``LDPLogisticRegression``: logistic loss log(1 + exp(-y x^T beta)), any two classes (mapped to -1 / +1).
- ``LDPLinearSVC``: hinge loss max(0, 1 - y x^T beta), any two classes. Pass the two labels as ``classes=``
  unless they are public anyway: otherwise the set of labels present in y is read outside the LDP guarantee.

Features must lie in [-1, 1]^d (map raw ranges with ``lipdesign.Range``).

``fit`` runs the deployed protocol (``lipdesign.learn.protocol``: ``Trainer``, ``Task``, ``client_report``) in
process on the rows of X, one row per user, with the same functions a server and its devices use:

1. The server draws a public r x d matrix P (entries +-1/sqrt(r), independent fair signs: a Johnson-Lindenstrauss
   projection with E[|P x|^2] = |x|^2) from a public seed that is never drawn from the users' noise (docs/math.md
   §3.8) and publishes it. When r == d it uses the identity instead: a square random sign matrix is badly
   conditioned (its smallest singular value is near 0), which would slow the descent and lose nothing that the
   identity keeps. The model is alpha in R^r (plus an intercept b when ``fit_intercept``); the prediction for x
   is alpha . (P x) + b, i.e. beta = P^T alpha in the original space.
2. The server shuffles the users (its own stream, never the devices' noise: docs/math.md §9.11) and cuts them
   into consecutive mini-batches of ``batch_size`` users; the users left over after the last full batch (fewer
   than ``batch_size``) do not take part. Every user therefore reports exactly once, which is why each user is
   epsilon-LDP (no composition over iterations; ``guarantee_``).
3. For mini-batch t = 1, 2, ..., T each user of the batch computes the gradient of the regularised loss
   l(alpha; P x, y) + (regularization / 2) |alpha|^2 at the current model (the intercept, the unprojected
   m-th coordinate with constant feature 1, is not regularised), clips each of its m = r + fit_intercept
   entries to [-1, 1] and perturbs it with Harmony's Algorithm 2: one coordinate j uniform in 1..m, one bit by
   ``one_bit`` on g_j, and the report m * c * bit in coordinate j (c = (e^eps + 1)/(e^eps - 1)): that is
   ``HarmonyNumeric(epsilon, m)``, whose one-bit table is verified exactly. The report is unbiased for the
   clipped gradient, with per-coordinate variance m c^2 - g_j^2.
4. The server sums the batch's reports into integer sign sums and counts per entry (an ``Aggregate``), takes
   their mean and steps: alpha <- alpha - gamma_t * mean with
   gamma_t = learning_rate / sqrt(t). The fitted model is the last iterate.

Everything after the users' reports is post-processing of epsilon-LDP outputs; P, the step sizes and the batch
schedule are public and independent of the data.
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.domains import Box
from lipdesign.errors import SampleSizeWarning, ValidationError
from lipdesign.learn.protocol import Trainer, class_labels, client_report, public_classes, signed_labels
from lipdesign.mechanisms.rr import one_bit_scale
from lipdesign.mechanisms.sampling import implemented_exp, one_bit_epsilon
from lipdesign.validation import integer, real_number

if TYPE_CHECKING:  # annotations only
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.base import Guarantee
    from lipdesign.mechanisms.sampling import RandomSource

__all__ = ["LDPLinearRegression", "LDPLinearSVC", "LDPLogisticRegression", "default_batch_size",
           "default_reduced_dim", "users_needed"]

#: kappa of the default mini-batch size |G| = ceil(kappa * m * max(1, ln m) * c^2), m the number of reported
#: gradient entries. Per coordinate, the batch mean of Algorithm 2's reports then has noise standard deviation
#: at most sqrt(m c^2 / |G|) = 1 / sqrt(kappa * max(1, ln m)), about 0.47 for m = 11 with kappa = 2. Measured
#: (d = 10, n = 2e5, eps = 1, 4, 8, the three losses): kappa from 0.5 to 8 reaches about the same error once the
#: learning rate is tuned to it (halving the batch calls for a smaller rate); kappa = 2 with the default rates
#: was within a few percent of the best. c^2 ~ 4 / eps^2 for small eps, so this is the paper's
#: |G| = Omega(r log r / eps^2); unlike 1/eps^2 it stays >= 1 for large eps, where the noise of Algorithm 2
#: stays of order sqrt(m) per report however large eps is.
BATCH_KAPPA = 2.0

#: ``reduced_dim=None`` picks the largest r <= d whose default mini-batch still leaves at least this many
#: mini-batches for the n users (r = 1 if none does). Measured (see the module's tests): a projection to r < d
#: restricts beta = P^T alpha to a random r-dimensional subspace and loses about a fraction 1 - r/d of a generic
#: dense beta, so r = d was best whenever it left a few dozen steps (d = 50, n = 2e5: test MSE 0.05 at r = 50
#: against 0.09 at r = 32 and 0.14 at r = 8, eps = 1). It stayed best, or within noise of best, down to about
#: 10 steps: with the earlier threshold of 30 steps, d = 5, n = 3000, eps = 1 projected to r = 4 and the
#: logistic fit scored below the majority class for 8 of 20 seeds (none of 20 at r = 5); over d = 5, 10, 50,
#: eps = 1 and 4 and n between 1e3 and 1e5 (6 seeds each, wherever the choice of r differed), a threshold of
#: 10 rather than 30 gave clearly better mean test scores for the squared and hinge losses (e.g. R^2 0.60
#: against 0.41 at d = 5, n = 3000; 0.20 against 0.06 at d = 50, n = 2e4) and equal or better ones for the
#: logistic loss at d = 5 and 10; at d = 50 the logistic loss was within noise (accuracy 0.57-0.61 either
#: way, 0.59 against 0.61 at n = 5e4). Large n is unaffected (r = d either way).
MIN_DEFAULT_ITERATIONS = 10


def default_reduced_dim(d: int, n: int, epsilon: float, fit_intercept: bool = True) -> int:
    """r when ``reduced_dim=None``: the largest r in 1..d with n // default_batch_size(epsilon, r +
    fit_intercept) >= MIN_DEFAULT_ITERATIONS (10), else 1.

    A projection to r < d loses about a fraction 1 - r/d of a dense coefficient vector, so r = d whenever the n
    users allow it (docs/math.md §9.10).

    Parameters
    ----------
    d : int
        The number of features, >= 1.
    n : int
        The number of users, >= 1.
    epsilon : float
        Each user's LDP budget, in [1e-6, 10].
    fit_intercept : bool, default True
        Whether the model has an intercept (one more reported gradient entry).

    Returns
    -------
    int
        r, in 1..d.

    Raises
    ------
    ValidationError
        If d or n is not a positive integer or epsilon is outside [1e-6, 10].

    Examples
    --------
    >>> import lipdesign as ld
    >>> ld.learn.default_reduced_dim(10, 200_000, 1.0), ld.learn.default_reduced_dim(10, 2000, 1.0)
    (10, 8)
    """
    d = integer(d, "d")
    n = integer(n, "n")
    extra = 1 if fit_intercept else 0
    best = 1
    for r in range(1, d + 1):  # the batch size grows with r: stop at the first r that leaves too few steps
        if n // default_batch_size(epsilon, r + extra) < MIN_DEFAULT_ITERATIONS:
            break
        best = r
    return best


#: Below about this many mini-batches the fitted model varies widely with the users' randomness (measured: d = 5,
#: eps = 1, 40 seeds, logistic loss: below the majority-class accuracy in 14 fits at 10 mini-batches, 2 at 30, none
#: at 50; the learners' docstring), so ``users_needed`` asks for this many and ``fit`` warns below it.
STABLE_ITERATIONS = 50


def users_needed(d: int, epsilon: float, fit_intercept: bool = True) -> int:
    """The users that give STABLE_ITERATIONS (50) default-size mini-batches at every one of ``d`` features
    (docs/math.md §9.10): STABLE_ITERATIONS x ``default_batch_size(epsilon, d + fit_intercept)``.

    With fewer, ``fit`` warns (SampleSizeWarning): the default then projects to r < d dimensions, or takes too
    few steps to be stable.

    Parameters
    ----------
    d : int
        The number of features, >= 1.
    epsilon : float
        Each user's LDP budget, in [1e-6, 10].
    fit_intercept : bool, default True
        Whether the model has an intercept (one more reported gradient entry).

    Returns
    -------
    int
        The number of users.

    Raises
    ------
    ValidationError
        If d is not a positive integer or epsilon is outside [1e-6, 10].

    Examples
    --------
    >>> import lipdesign as ld
    >>> ld.learn.users_needed(5, 1.0), ld.learn.users_needed(5, 4.0)
    (5050, 1200)
    """
    d = integer(d, "d", low=1)
    return STABLE_ITERATIONS * default_batch_size(one_bit_epsilon(epsilon), d + (1 if fit_intercept else 0))


def default_batch_size(epsilon: float, m: int) -> int:
    """``|G|`` when ``batch_size=None``: ceil(BATCH_KAPPA * m * max(1, ln m) * c^2) for m reported gradient entries
    (r, plus 1 with an intercept) and c = (e^eps + 1)/(e^eps - 1).

    The batch mean of the reports then has noise standard deviation at most 1 / sqrt(BATCH_KAPPA max(1, ln m))
    per entry (docs/math.md §9.10).

    Parameters
    ----------
    epsilon : float
        Each user's LDP budget, in [1e-6, 10].
    m : int
        The number of reported gradient entries, >= 1.

    Returns
    -------
    int
        The users per mini-batch.

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10] or m is not a positive integer.

    Examples
    --------
    >>> import lipdesign as ld
    >>> ld.learn.default_batch_size(1.0, 3), ld.learn.default_batch_size(4.0, 3)
    (31, 8)
    >>> ld.learn.default_batch_size(20.0, 3)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: epsilon is 20.0; it must lie in [1e-06, 10]
    """
    c = one_bit_scale(implemented_exp(one_bit_epsilon(epsilon)))
    m = integer(m, "m")
    return math.ceil(BATCH_KAPPA * m * max(1.0, math.log(m)) * c * c)


class _LDPLinearModel:
    """The shared estimator: parameters, validation, Algorithm 4, prediction. Subclasses set ``_loss`` (a key of
    ``protocol.LOSS_DERIVATIVES``) and how targets are read and scored."""

    _loss: str | None = None
    _estimator_type: str | None = None
    _default_learning_rate: float | None = None

    # The fitted attributes, set by ``fit`` (``Trainer.result``); annotations only: an unfitted estimator has none
    # (scikit-learn's convention, which ``_check_fitted`` relies on).
    coef_: npt.NDArray[np.float64]
    intercept_: float
    projection_: npt.NDArray[np.float64]
    projection_seed_: int
    reduced_dim_: int
    batch_size_: int
    alpha_: npt.NDArray[np.float64]
    n_iter_: int
    n_users_used_: int
    n_features_in_: int
    guarantee_: Guarantee

    def __init__(self, epsilon: float = 1.0, *, regularization: float = 1e-4, reduced_dim: int | None = None,
                 batch_size: int | None = None, learning_rate: float | None = None, fit_intercept: bool = True,
                 random_state: RandomSource = None, projection_seed: int | None = None) -> None:
        # Stored as given (scikit-learn convention, needed by clone); validated in fit.
        self.epsilon = epsilon
        self.regularization = regularization
        self.reduced_dim = reduced_dim
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.projection_seed = projection_seed

    # -- scikit-learn parameter protocol -------------------------------------------------------------------
    @classmethod
    def _parameter_names(cls):
        signature = inspect.signature(cls.__init__)
        return sorted(name for name, parameter in signature.parameters.items()
                      if name != "self" and parameter.kind is not parameter.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments as a dict, as scikit-learn's ``get_params``.

        Parameters
        ----------
        deep : bool, default True
            Accepted for scikit-learn; there are no nested estimators.

        Returns
        -------
        dict
            Each constructor argument by name, as given.
        """
        return {name: getattr(self, name) for name in self._parameter_names()}

    def set_params(self, **params: Any) -> Self:
        """Set constructor arguments by name, as scikit-learn's ``set_params``. Values are validated by ``fit``.

        Parameters
        ----------
        **params
            Constructor arguments by name.

        Returns
        -------
        estimator
            This estimator.

        Raises
        ------
        ValidationError
            If a name is not a constructor argument.
        """
        names = self._parameter_names()
        for name, value in params.items():
            if name not in names:
                raise ValidationError(f"{name!r} is not a parameter of {type(self).__name__}; valid "
                                      f"parameters: {', '.join(names)}")
            setattr(self, name, value)
        return self

    def __sklearn_tags__(self):
        """scikit-learn's tags, for its own checks (only scikit-learn calls this, so it is imported here): a
        randomised regressor or two-class classifier on 2-D numeric X (no nan)."""
        from sklearn.utils import ClassifierTags, RegressorTags, Tags, TargetTags

        classifier = self._estimator_type == "classifier"
        return Tags(estimator_type=self._estimator_type, target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(multi_class=False) if classifier else None,
                    regressor_tags=None if classifier else RegressorTags(), non_deterministic=True)

    def __repr__(self):
        arguments = ", ".join(f"{name}={value!r}" for name, value in self.get_params().items())
        return f"{type(self).__name__}({arguments})"

    # -- validation ----------------------------------------------------------------------------------------
    def _validated_parameters(self, n, d):
        epsilon = one_bit_epsilon(self.epsilon)
        regularization = real_number(self.regularization, "regularization", low=0.0)
        # the default: not None in the estimator classes, which set it (the private base is never fitted alone)
        learning_rate = (cast(float, self._default_learning_rate) if self.learning_rate is None
                         else real_number(self.learning_rate, "learning_rate"))
        if not learning_rate > 0:
            raise ValidationError(f"learning_rate is {self.learning_rate!r}; it must be > 0")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValidationError(f"fit_intercept is {self.fit_intercept!r}; it must be True or False")
        if self.reduced_dim is None:
            r = default_reduced_dim(d, n, epsilon, self.fit_intercept)
        else:
            r = integer(self.reduced_dim, "reduced_dim")
            if r > d:
                raise ValidationError(f"reduced_dim is {r} but X has {d} feature{'s' if d > 1 else ''}; it must "
                                      f"be at most {d}")
        m = r + bool(self.fit_intercept)
        batch = (default_batch_size(epsilon, m) if self.batch_size is None
                 else integer(self.batch_size, "batch_size"))
        if self.reduced_dim is None and self.batch_size is None and (r < d or n // batch < STABLE_ITERATIONS):
            warnings.warn(f"n = {n} users at eps = {epsilon:g} give {n // batch} mini-batches of {batch} users at r = "
                          f"{r} of the d = {d} features (docs/math.md §9.10): below about {STABLE_ITERATIONS} "
                          "mini-batches the fitted model varies widely with the users' randomness and may not beat "
                          "a constant prediction" + (f", and projecting to r < d can lose about {1 - r / d:.0%} of a "
                                                     "dense coefficient vector" if r < d else "") +
                          f"; users_needed({d}, {epsilon:g}) = {users_needed(d, epsilon, self.fit_intercept)} users "
                          f"give {STABLE_ITERATIONS} at every feature", SampleSizeWarning, stacklevel=4)
        return epsilon, regularization, learning_rate, r, m, batch

    def _features(self, X: npt.ArrayLike, d: int | None = None) -> npt.NDArray[np.float64]:
        if d is None:
            try:
                shape = np.shape(X)
            except ValueError:  # a ragged nested list
                raise ValidationError("X is ragged (rows of different lengths); it must have shape (n, d): one row "
                                      "of d features in [-1, 1] per user") from None
            d = shape[1] if len(shape) == 2 else -1
            if d < 1:
                raise ValidationError(f"X has shape {shape}; it must have shape (n, d): one row of d features in "
                                      "[-1, 1] per user")
        return Box(d).validate(X, "X")

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise ValidationError(f"this {type(self).__name__} is not fitted yet; call fit(X, y) first")

    def _check_length(self, X, y):
        if y.shape[0] != X.shape[0]:
            raise ValidationError(f"y has {y.shape[0]} entries but X has {X.shape[0]} rows; one target per row")

    def _targets(self, y: npt.ArrayLike) -> tuple[npt.NDArray[Any], npt.NDArray[Any] | None]:
        """(validated targets: floats in [-1, 1], or class labels; the 2 classes, or None for a regression)."""
        raise NotImplementedError

    # -- Algorithm 4 ---------------------------------------------------------------------------------------
    def fit(self, X: npt.ArrayLike, y: npt.ArrayLike) -> Self:
        """Run Harmony's Algorithm 4 with one user per row of X and y, as the deployed protocol (``Trainer``,
        ``Task``, ``client_report``) in process.

        Parameters
        ----------
        X : array_like
            (n, d): one row of features in [-1, 1] per user.
        y : array_like
            (n,): the targets, in [-1, 1] for a regression, class labels for a classifier.

        Returns
        -------
        estimator
            This estimator, fitted.

        Raises
        ------
        ValidationError
            If a parameter breaks its rule, X or y is malformed or out of range, or there are fewer users than one
            mini-batch.

        Warns
        -----
        SampleSizeWarning
            With the default ``reduced_dim`` and ``batch_size``, when the n users give fewer than about 50
            mini-batches or call for a projection to r < d (``users_needed``).
        """
        if y is None:
            raise ValidationError("y is None; fit requires y to be passed, but the target y is None (one target per "
                                  "row of X)")
        X = self._features(X)
        y, classes = self._targets(y)
        self._check_length(X, y)
        trainer = Trainer(self, *X.shape, classes=classes)
        for task in trainer.tasks():
            users = trainer.participants(task)
            reports = client_report(task, X[users], y[users], rng=trainer.simulated_rng(task))
            trainer.update(task, trainer.aggregate(reports))
        return trainer.result()

    def _margins(self, X):
        self._check_fitted()
        return self._features(X, self.n_features_in_) @ self.coef_ + self.intercept_


class LDPLinearRegression(_LDPLinearModel):
    """epsilon-LDP linear regression (Harmony Alg. 4, squared loss); see the module docstring for the protocol.

    Features X must lie in [-1, 1]^d and targets y in [-1, 1] (map them with ``lipdesign.Range``). The
    parameters are stored as given (scikit-learn's convention) and validated by ``fit``; all are keyword-only
    except epsilon.

    Parameters
    ----------
    epsilon : float, default 1.0
        Each user's LDP budget, a real number in the range of the one-bit mechanism
        (``lipdesign.mechanisms.sampling.one_bit_epsilon``: at least 1e-6, at most 10); every user reports once.
    regularization : float, default 1e-4
        lambda of the regularised loss l + (lambda/2)|alpha|^2 (intercept excluded); small, since the noise
        already keeps the steps from fitting the data too closely.
    reduced_dim : int, optional
        r, the rows of the public projection; None = the largest r <= d that leaves at least 10 default-size
        mini-batches for the n users (``default_reduced_dim``; r = d whenever n allows, since a projection to
        r < d loses part of a dense beta).
    batch_size : int, optional
        Users per mini-batch; None = ceil(2 m max(1, ln m) c^2) with m = r + fit_intercept and
        c = (e^eps + 1)/(e^eps - 1) (``default_batch_size``, ``BATCH_KAPPA``).
    learning_rate : float, optional
        gamma_0 of the step sizes gamma_t = gamma_0 / sqrt(t); None = 0.1 for the squared loss, 0.5 for the
        logistic and hinge losses (best or within a few percent of best over eps = 0.5..8, n = 2e4..2e5,
        d = 10..50 in our measurements; the squared loss has the larger slope 2 (z - y)).
    fit_intercept : bool, default True
        Learn an intercept, as an extra unprojected, unregularised gradient entry (the constant feature 1), so it
        is never lost by the projection.
    random_state : numpy.random.Generator or int, optional
        The randomness of the simulated protocol, in separate streams for the server's plan (the shuffle) and
        each round's devices (``lipdesign.learn.protocol``, docs/math.md §9.11): None (every stream the secure
        ChaCha20 keyed from the OS CSPRNG, ``lipdesign.mechanisms.sampling.as_generator``), an int >= 0 (PCG64
        streams on SeedSequence children of it: reproducible, for simulation) or a numpy Generator or
        BitGenerator (128 bits drawn from it stand for the int).
    projection_seed : int, optional
        The public seed of the projection (an int in [0, 2**63);
        ``lipdesign.mechanisms.harmony_categorical.projection_signs``), never drawn from the users' noise
        (docs/math.md §3.8). None: derived from a seeded ``random_state`` (a SeedSequence child, so a seeded fit
        is reproducible), otherwise drawn from the OS CSPRNG. A seeded random_state is for simulation only: the
        published seed is a function of it.

    Attributes
    ----------
    coef_ : numpy.ndarray
        (d,) = P^T alpha.
    intercept_ : float
        The intercept (0.0 without ``fit_intercept``).
    projection_ : numpy.ndarray
        P, r x d.
    projection_seed_, reduced_dim_, batch_size_ : int
        The projection's public seed, r and the users per mini-batch used.
    alpha_ : numpy.ndarray
        The model in the reduced space, intercept last.
    n_iter_ : int
        The mini-batches (rounds).
    n_users_used_ : int
        ``n_iter_ * batch_size_``: the users left over after the last full batch do not report.
    n_features_in_ : int
        d.
    guarantee_ : Guarantee
        epsilon-LDP per user, one report per user (``learning_guarantee``).

    See Also
    --------
    LDPLogisticRegression, LDPLinearSVC : The classifiers.
    Trainer : The same algorithm as a server/device protocol.

    Notes
    -----
    Small n: each user reports one noisy gradient entry, so with few mini-batches (``n_iter_`` below about 50;
    n ~ 5000 for d = 5 at eps = 1, about 20 times more at eps = 0.2) the fitted model varies widely with the
    users' randomness. Measured (d = 5, eps = 1, 40 seeds, logistic loss): below the majority-class accuracy
    in 14 of 40 fits at n = 1000, 8 at n = 2000, 2 at n = 3000 and none at n = 5000. Compare the fit with a
    trivial baseline before relying on it at such n (``users_needed``; ``fit`` warns below it with the
    defaults).

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(500, 2))
    >>> y = np.clip(0.6 * X[:, 0] - 0.3 * X[:, 1], -1, 1)
    >>> model = ld.learn.LDPLinearRegression(epsilon=4.0, random_state=0).fit(X, y)
    >>> np.round(model.coef_, 2), round(model.intercept_, 2)
    (array([ 0.49, -0.21]), 0.03)
    >>> model.n_iter_, model.batch_size_, model.guarantee_.epsilon
    (62, 8, 4.0)
    >>> round(model.score(X, y), 2)
    0.95
    >>> np.round(model.predict([[0.5, 0.5]]), 2)
    array([0.17])
    """

    _loss = "squared"
    _estimator_type = "regressor"
    _default_learning_rate = 0.1

    def _targets(self, y):
        return Box(1).validate(y, "y").ravel(), None

    def predict(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """The predictions ``x . coef_ + intercept_``.

        Parameters
        ----------
        X : array_like
            (n, d): one row of features in [-1, 1] per user.

        Returns
        -------
        numpy.ndarray
            (n,): one prediction per row.

        Raises
        ------
        ValidationError
            If the estimator is not fitted, or X has the wrong number of features or values outside [-1, 1].
        """
        return self._margins(X)

    def score(self, X: npt.ArrayLike, y: npt.ArrayLike) -> float:
        """R^2 = 1 - sum (y - prediction)^2 / sum (y - mean y)^2, as scikit-learn.

        Parameters
        ----------
        X : array_like
            (n, d): features in [-1, 1].
        y : array_like
            (n,): targets in [-1, 1].

        Returns
        -------
        float
            R^2; 1.0 when y is constant and predicted exactly, 0.0 when y is constant and not.
        """
        prediction = self.predict(X)
        targets = Box(1).validate(y, "y").ravel()
        self._check_length(prediction[:, None], targets)
        residual = float(np.sum((targets - prediction) ** 2))
        total = float(np.sum((targets - targets.mean()) ** 2))
        if total == 0.0:
            return 1.0 if residual == 0.0 else 0.0
        return 1.0 - residual / total


class _LDPClassifier(_LDPLinearModel):
    """Two-class labels: classes_[0] -> -1 and classes_[1] -> +1 in the loss. ``classes_`` is the ``classes``
    parameter when given (public labels, in the given order), else the sorted distinct labels of y."""

    _estimator_type = "classifier"
    _default_learning_rate = 0.5

    #: Fitted (annotation only, as the other fitted attributes).
    classes_: npt.NDArray[Any]

    def __init__(self, epsilon: float = 1.0, *, classes: Any = None, regularization: float = 1e-4,
                 reduced_dim: int | None = None, batch_size: int | None = None, learning_rate: float | None = None,
                 fit_intercept: bool = True, random_state: RandomSource = None,
                 projection_seed: int | None = None) -> None:
        super().__init__(epsilon, regularization=regularization, reduced_dim=reduced_dim, batch_size=batch_size,
                         learning_rate=learning_rate, fit_intercept=fit_intercept, random_state=random_state,
                         projection_seed=projection_seed)
        self.classes = classes

    def _targets(self, y):
        labels = class_labels(y)
        if self.classes is not None:
            classes = public_classes(self.classes)
            signed_labels(labels, classes)  # every label must be one of them
            return labels, classes
        try:
            classes = np.unique(labels)
        except TypeError:
            raise ValidationError("y mixes labels of different types; labels must be mutually sortable") from None
        if classes.size != 2:
            raise ValidationError(f"y has {classes.size} distinct class{'es' if classes.size != 1 else ''} "
                                  f"({', '.join(map(repr, classes[:5].tolist()))}). Only binary classification is "
                                  "supported: these classifiers need exactly 2 (or pass the 2 public labels as "
                                  "classes=)")
        return labels, classes

    def decision_function(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """The margins ``x . coef_ + intercept_``; positive means classes_[1].

        Parameters
        ----------
        X : array_like
            (n, d): features in [-1, 1].

        Returns
        -------
        numpy.ndarray
            (n,): one margin per row.
        """
        return self._margins(X)

    def predict(self, X: npt.ArrayLike) -> npt.NDArray[Any]:
        """The predicted labels: classes_[1] where the decision function is > 0, else classes_[0].

        Parameters
        ----------
        X : array_like
            (n, d): features in [-1, 1].

        Returns
        -------
        numpy.ndarray
            (n,): one label per row.
        """
        positive = self.decision_function(X) > 0  # checks fitting before classes_ is read
        return self.classes_[positive.astype(int)]

    def score(self, X: npt.ArrayLike, y: npt.ArrayLike) -> float:
        """Accuracy: the fraction of rows whose predicted label equals y.

        Parameters
        ----------
        X : array_like
            (n, d): features in [-1, 1].
        y : array_like
            (n,): the true labels.

        Returns
        -------
        float
            The accuracy, in [0, 1].
        """
        prediction = self.predict(X)
        y = class_labels(y)
        self._check_length(prediction[:, None], y)
        return float(np.mean(prediction == y))


class LDPLogisticRegression(_LDPClassifier):
    """epsilon-LDP logistic regression (Harmony Alg. 4, loss log(1 + exp(-y x^T beta))) for two classes.

    Same parameters, fitted attributes and small-n advice as ``LDPLinearRegression``, plus ``classes`` and
    ``classes_``; y holds any two labels (numbers or strings), ``classes_[1]`` being the positive class.

    Parameters
    ----------
    epsilon : float, default 1.0
        Each user's LDP budget, in [1e-6, 10]; every user reports once.
    classes : sequence of str or int, optional
        The two public class labels, e.g. ``(-1, 1)`` or ``("no", "yes")``; ``classes_`` is then exactly them, in
        the given order (``classes[1]`` is the positive class), and every label of y must be one of them (y may
        hold only one of the two). With None, ``classes_`` is the sorted pair of distinct labels found in y: the
        set of labels present is then read from the raw data, outside the LDP guarantee. That is harmless when
        the labels are public anyway (say {-1, 1} or {0, 1}, both known to occur), but for labels that could
        reveal something (rare categories, free text) pass ``classes``.
    regularization : float, default 1e-4
        lambda of the L2 penalty (intercept excluded), >= 0.
    reduced_dim : int, optional
        r, the rows of the public projection; default ``default_reduced_dim``.
    batch_size : int, optional
        Users per mini-batch; default ``default_batch_size``.
    learning_rate : float, optional
        gamma_0 of the step sizes gamma_t = gamma_0 / sqrt(t); default 0.5.
    fit_intercept : bool, default True
        Learn an intercept (an extra unprojected, unregularised gradient entry).
    random_state : numpy.random.Generator or int, optional
        The randomness of the simulated protocol (see ``LDPLinearRegression``); None: the OS-keyed ChaCha20.
    projection_seed : int, optional
        The public seed of the projection, in [0, 2**63) (see ``LDPLinearRegression``).

    Attributes
    ----------
    classes_ : numpy.ndarray
        The 2 labels: classes_[0] -> -1 and classes_[1] -> +1 in the loss.
    coef_, intercept_, guarantee_
        As for ``LDPLinearRegression``, with its other fitted attributes.

    See Also
    --------
    LDPLinearSVC : The hinge loss.
    LDPLinearRegression : The regression, whose docstring says more about every parameter.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(500, 2))
    >>> labels = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    >>> clf = ld.learn.LDPLogisticRegression(epsilon=4.0, classes=("no", "yes"), random_state=1)
    >>> clf = clf.fit(X, labels)
    >>> np.round(clf.coef_, 2), clf.classes_
    (array([0.73, 0.65]), array(['no', 'yes'], dtype='<U3'))
    >>> round(clf.score(X, labels), 3)
    0.964
    >>> clf.predict([[0.8, 0.5], [-0.5, -0.9]])
    array(['yes', 'no'], dtype='<U3')
    >>> np.round(clf.predict_proba([[0.8, 0.5]]), 3)
    array([[0.299, 0.701]])
    """

    _loss = "logistic"

    def predict_proba(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """The model's class probabilities, the logistic function of the decision function.

        Parameters
        ----------
        X : array_like
            (n, d): features in [-1, 1].

        Returns
        -------
        numpy.ndarray
            (n, 2): Pr[classes_[0]] and Pr[classes_[1]] per row.
        """
        margin = self.decision_function(X)
        return np.exp(-np.logaddexp(0.0, np.column_stack([margin, -margin])))


class LDPLinearSVC(_LDPClassifier):
    """epsilon-LDP linear SVM (Harmony Alg. 4, hinge loss max(0, 1 - y x^T beta)) for two classes.

    Same parameters, fitted attributes and small-n advice as ``LDPLinearRegression``, plus ``classes`` and
    ``classes_``.

    Parameters
    ----------
    epsilon : float, default 1.0
        Each user's LDP budget, in [1e-6, 10]; every user reports once.
    classes : sequence of str or int, optional
        The two public class labels, e.g. ``(-1, 1)`` or ``("no", "yes")``; ``classes_`` is then exactly them, in
        the given order (``classes[1]`` is the positive class), and every label of y must be one of them (y may
        hold only one of the two). With None, ``classes_`` is the sorted pair of distinct labels found in y: the
        set of labels present is then read from the raw data, outside the LDP guarantee. That is harmless when
        the labels are public anyway (say {-1, 1} or {0, 1}, both known to occur), but for labels that could
        reveal something (rare categories, free text) pass ``classes``.
    regularization : float, default 1e-4
        lambda of the L2 penalty (intercept excluded), >= 0.
    reduced_dim : int, optional
        r, the rows of the public projection; default ``default_reduced_dim``.
    batch_size : int, optional
        Users per mini-batch; default ``default_batch_size``.
    learning_rate : float, optional
        gamma_0 of the step sizes gamma_t = gamma_0 / sqrt(t); default 0.5.
    fit_intercept : bool, default True
        Learn an intercept (an extra unprojected, unregularised gradient entry).
    random_state : numpy.random.Generator or int, optional
        The randomness of the simulated protocol (see ``LDPLinearRegression``); None: the OS-keyed ChaCha20.
    projection_seed : int, optional
        The public seed of the projection, in [0, 2**63) (see ``LDPLinearRegression``).

    Attributes
    ----------
    classes_ : numpy.ndarray
        The 2 labels: classes_[0] -> -1 and classes_[1] -> +1 in the loss.
    coef_, intercept_, guarantee_
        As for ``LDPLinearRegression``, with its other fitted attributes.

    See Also
    --------
    LDPLogisticRegression : The logistic loss, with probabilities.
    LDPLinearRegression : The regression, whose docstring says more about every parameter.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(500, 2))
    >>> labels = np.where(X[:, 0] + X[:, 1] > 0, 1, 0)
    >>> svc = ld.learn.LDPLinearSVC(epsilon=4.0, classes=(0, 1), random_state=1).fit(X, labels)
    >>> np.round(svc.coef_, 2)
    array([1.3 , 1.03])
    >>> round(svc.score(X, labels), 3)
    0.928
    >>> np.round(svc.decision_function(X[:3]), 2), svc.predict(X[:3]), labels[:3]
    (array([-0.05, -2.12,  1.72]), array([0, 0, 1]), array([0, 0, 1]))

    Without ``classes`` a classifier needs exactly two labels in y:

    >>> ld.learn.LDPLinearSVC(epsilon=4.0).fit(X, np.zeros(500))
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: y has 1 distinct class (0.0). Only binary classification is supported: ...
    """

    _loss = "hinge"
