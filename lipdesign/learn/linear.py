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

import numpy as np

from lipdesign.domains import Box
from lipdesign.errors import SampleSizeWarning, ValidationError
from lipdesign.learn.protocol import Trainer, class_labels, client_report, public_classes, signed_labels
from lipdesign.mechanisms.rr import one_bit_scale
from lipdesign.mechanisms.sampling import implemented_exp, one_bit_epsilon
from lipdesign.validation import integer, real_number

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


def default_reduced_dim(d, n, epsilon, fit_intercept=True):
    """r when ``reduced_dim=None``: the largest r in 1..d with n // default_batch_size(epsilon, r +
    fit_intercept) >= MIN_DEFAULT_ITERATIONS, else 1."""
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


def users_needed(d, epsilon, fit_intercept=True):
    """The users that give STABLE_ITERATIONS default-size mini-batches at every one of ``d`` features (docs/math.md
    §9.10): STABLE_ITERATIONS x ``default_batch_size(epsilon, d + fit_intercept)``. With fewer, ``fit`` warns
    (SampleSizeWarning): the default then projects to r < d dimensions, or takes too few steps to be stable."""
    d = integer(d, "d", low=1)
    return STABLE_ITERATIONS * default_batch_size(one_bit_epsilon(epsilon), d + (1 if fit_intercept else 0))


def default_batch_size(epsilon, m):
    """``|G|`` when ``batch_size=None``: ceil(BATCH_KAPPA * m * max(1, ln m) * c^2) for m reported gradient entries
    (r, plus 1 with an intercept) and c = (e^eps + 1)/(e^eps - 1)."""
    c = one_bit_scale(implemented_exp(one_bit_epsilon(epsilon)))
    m = integer(m, "m")
    return math.ceil(BATCH_KAPPA * m * max(1.0, math.log(m)) * c * c)


class _LDPLinearModel:
    """The shared estimator: parameters, validation, Algorithm 4, prediction. Subclasses set ``_loss`` (a key of
    ``protocol.LOSS_DERIVATIVES``) and how targets are read and scored."""

    _loss: str | None = None
    _estimator_type: str | None = None
    _default_learning_rate: float | None = None

    def __init__(self, epsilon=1.0, *, regularization=1e-4, reduced_dim=None, batch_size=None,
                 learning_rate=None, fit_intercept=True, random_state=None, projection_seed=None):
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

    def get_params(self, deep=True):
        """The constructor arguments as a dict (``deep`` is accepted for scikit-learn; there are no nested
        estimators)."""
        return {name: getattr(self, name) for name in self._parameter_names()}

    def set_params(self, **params):
        """Set constructor arguments by name; returns self. Values are validated by ``fit``."""
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
        learning_rate = (self._default_learning_rate if self.learning_rate is None
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

    def _features(self, X, d=None):
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

    def _targets(self, y):
        """(validated targets: floats in [-1, 1], or class labels; the 2 classes, or None for a regression)."""
        raise NotImplementedError

    # -- Algorithm 4 ---------------------------------------------------------------------------------------
    def fit(self, X, y):
        """Run Harmony's Algorithm 4 with one user per row of X (features in [-1, 1]^d) and y, as the deployed
        protocol (``Trainer``, ``Task``, ``client_report``) in process; returns self."""
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

    Parameters (all keyword except epsilon; validated by ``fit``):

    - ``epsilon=1.0``: each user's LDP budget, a real number in the range of the one-bit mechanism
      (``lipdesign.mechanisms.sampling.one_bit_epsilon``: at least 1e-6, at most 10); every user reports once.
    - ``regularization=1e-4``: lambda of the regularised loss l + (lambda/2)|alpha|^2 (intercept excluded);
      small, since the noise already keeps the steps from fitting the data too closely.
    - ``reduced_dim=None``: r, the rows of the public projection; None = the largest r <= d that leaves at least
      10 default-size mini-batches for the n users (``default_reduced_dim``; r = d whenever n allows, since a
      projection to r < d loses part of a dense beta).
    - ``batch_size=None``: users per mini-batch; None = ceil(2 m max(1, ln m) c^2) with m = r + fit_intercept
      and c = (e^eps + 1)/(e^eps - 1) (``default_batch_size``, ``BATCH_KAPPA``).
    - ``learning_rate=None``: gamma_0 of the step sizes gamma_t = gamma_0 / sqrt(t); None = 0.1 for the squared
      loss, 0.5 for the logistic and hinge losses (best or within a few percent of best over eps = 0.5..8,
      n = 2e4..2e5, d = 10..50 in our measurements; the squared loss has the larger slope 2 (z - y)).
    - ``fit_intercept=True``: learn an intercept, as an extra unprojected, unregularised gradient entry
      (the constant feature 1), so it is never lost by the projection.
    - ``random_state=None``: the randomness of the simulated protocol, in separate streams for the server's plan
      (the shuffle) and each round's devices (``lipdesign.learn.protocol``, docs/math.md §9.11): None (every
      stream the secure ChaCha20 keyed from the OS CSPRNG, ``lipdesign.mechanisms.sampling.as_generator``), an
      int >= 0 (PCG64 streams on SeedSequence children of it: reproducible, for simulation) or a numpy Generator
      or BitGenerator (128 bits drawn from it stand for the int).
    - ``projection_seed=None``: the public seed of the projection (an int in [0, 2**63);
      ``lipdesign.mechanisms.harmony_categorical.projection_signs``), never drawn from the users' noise (docs/math.md
      §3.8). None: derived from a seeded ``random_state`` (a SeedSequence child, so a seeded fit is
      reproducible), otherwise drawn from the OS CSPRNG. A seeded random_state is for simulation only: the
      published seed is a function of it.

    Fitted attributes: ``coef_`` (d,) = P^T alpha, ``intercept_``, ``projection_`` (r x d), ``projection_seed_``,
    ``reduced_dim_``, ``batch_size_``, ``alpha_`` (the model in the reduced space, intercept last),
    ``n_iter_`` (mini-batches), ``n_users_used_`` (= ``n_iter_ * batch_size_``), ``n_features_in_``, ``guarantee_``
    (a ``Guarantee``: epsilon-LDP per user, one report per user).

    Targets y must lie in [-1, 1] (map them with ``lipdesign.Range``).

    Small n: each user reports one noisy gradient entry, so with few mini-batches (``n_iter_`` below about 50;
    n ~ 5000 for d = 5 at eps = 1, about 20 times more at eps = 0.2) the fitted model varies widely with the
    users' randomness. Measured (d = 5, eps = 1, 40 seeds, logistic loss): below the majority-class accuracy
    in 14 of 40 fits at n = 1000, 8 at n = 2000, 2 at n = 3000 and none at n = 5000. Compare the fit with a
    trivial baseline before relying on it at such n.
    """

    _loss = "squared"
    _estimator_type = "regressor"
    _default_learning_rate = 0.1

    def _targets(self, y):
        return Box(1).validate(y, "y").ravel(), None

    def predict(self, X):
        """``x . coef_ + intercept_`` for each row of X (features in [-1, 1])."""
        return self._margins(X)

    def score(self, X, y):
        """R^2 = 1 - sum (y - prediction)^2 / sum (y - mean y)^2, as scikit-learn (1.0 when y is constant and
        predicted exactly, 0.0 when y is constant and not)."""
        prediction = self.predict(X)
        y = Box(1).validate(y, "y").ravel()
        self._check_length(prediction[:, None], y)
        residual = float(np.sum((y - prediction) ** 2))
        total = float(np.sum((y - y.mean()) ** 2))
        if total == 0.0:
            return 1.0 if residual == 0.0 else 0.0
        return 1.0 - residual / total


class _LDPClassifier(_LDPLinearModel):
    """Two-class labels: classes_[0] -> -1 and classes_[1] -> +1 in the loss. ``classes_`` is the ``classes``
    parameter when given (public labels, in the given order), else the sorted distinct labels of y."""

    _estimator_type = "classifier"
    _default_learning_rate = 0.5

    def __init__(self, epsilon=1.0, *, classes=None, regularization=1e-4, reduced_dim=None, batch_size=None,
                 learning_rate=None, fit_intercept=True, random_state=None, projection_seed=None):
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

    def decision_function(self, X):
        """``x . coef_ + intercept_``; positive means classes_[1]."""
        return self._margins(X)

    def predict(self, X):
        """classes_[1] where the decision function is > 0, else classes_[0]."""
        positive = self.decision_function(X) > 0  # checks fitting before classes_ is read
        return self.classes_[positive.astype(int)]

    def score(self, X, y):
        """Accuracy: the fraction of rows whose predicted label equals y."""
        prediction = self.predict(X)
        y = class_labels(y)
        self._check_length(prediction[:, None], y)
        return float(np.mean(prediction == y))


class LDPLogisticRegression(_LDPClassifier):
    """epsilon-LDP logistic regression (Harmony Alg. 4, loss log(1 + exp(-y x^T beta))) for two classes.

    Same parameters, fitted attributes and small-n advice as ``LDPLinearRegression``, plus ``classes`` and
    ``classes_`` (see ``LDPLinearSVC``); y holds any two labels (numbers or strings), ``classes_[1]`` being the
    positive class.
    """

    _loss = "logistic"

    def predict_proba(self, X):
        """(n, 2): the model's Pr[classes_[0]] and Pr[classes_[1]] per row, the logistic function of the decision
        function."""
        margin = self.decision_function(X)
        return np.exp(-np.logaddexp(0.0, np.column_stack([margin, -margin])))


class LDPLinearSVC(_LDPClassifier):
    """epsilon-LDP linear SVM (Harmony Alg. 4, hinge loss max(0, 1 - y x^T beta)) for two classes.

    Same parameters, fitted attributes and small-n advice as ``LDPLinearRegression``, plus:

    - ``classes=None``: the two public class labels, e.g. ``(-1, 1)`` or ``("no", "yes")``; ``classes_`` is then
      exactly them, in the given order (``classes[1]`` is the positive class), and every label of y must be one
      of them (y may hold only one of the two). With None, ``classes_`` is the sorted pair of distinct labels
      found in y: the set of labels present is then read from the raw data, outside the LDP guarantee. That is
      harmless when the labels are public anyway (say {-1, 1} or {0, 1}, both known to occur), but for labels
      that could reveal something (rare categories, free text) pass ``classes``.
    - fitted ``classes_``: the labels, classes_[0] -> -1 and classes_[1] -> +1 in the loss.
    """

    _loss = "hinge"
