"""Privacy notions as homogeneous linear constraints on each column of a table (docs/math.md §2).

Each notion gives ``constraint_rows(prior)``: a matrix A such that a column q is allowed iff q >= 0 and
A q >= 0. The column cone is the same for every column; a table is feasible iff its rows sum to 1 and
each column lies in the cone. ``scenarios(prior)`` lists the (prior) vertices the LIP ratio is enforced at.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.model import PriorSet, SecretModel
from lipdesign.validation import epsilon as checked_epsilon

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy.typing as npt

    from lipdesign.model import Prior


@dataclass(frozen=True)
class LDP:
    """eps-local differential privacy: q[x] <= e^eps q[x'] for every x, x' (docs/math.md §2).

    The guarantee holds whatever the prior of X; it implies eps-LIP at every prior. ``kind`` is ``"LDP"``. A
    notion is immutable (a frozen dataclass).

    Parameters
    ----------
    epsilon : float
        The privacy level, in (0, 30].

    Raises
    ------
    ValidationError
        When ``epsilon`` is not a finite number in (0, 30].

    See Also
    --------
    LIP : LIP at the design prior or over a set of priors.
    WorstCaseLIP : LIP at every prior, for X or a latent secret.

    Examples
    --------
    Randomized response over 3 values with e^eps = 3 is ln(3)-LDP:

    >>> import numpy as np
    >>> import lipdesign as ld
    >>> table = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5
    >>> certificate = ld.verify(table, ld.LDP(np.log(3)))
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 1.0986)
    >>> ld.verify(table, ld.LDP(1.0)).passed
    False
    >>> ld.LDP(0)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: epsilon is 0; it must lie in (0, 30]
    """

    epsilon: float
    kind = "LDP"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", checked_epsilon(self.epsilon))

    def constraint_rows(self, prior: Prior) -> npt.NDArray[np.float64]:
        """The matrix A of the column cone: a column q is allowed iff q >= 0 and A q >= 0.

        One row e^eps e_x' - e_x per ordered pair x != x' (q[x] <= e^eps q[x']).

        Parameters
        ----------
        prior : Prior
            The design prior (only its size k matters for LDP).

        Returns
        -------
        numpy.ndarray
            A, of shape (k (k - 1), k).

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> rows = ld.LDP(1.0).constraint_rows(ld.Prior([0.5, 0.3, 0.2]))
        >>> rows.shape
        (6, 3)
        >>> np.round(rows[0], 3)
        array([-1.   ,  2.718,  0.   ])
        """
        k = prior.k
        first, second = np.nonzero(~np.eye(k, dtype=bool))
        rows = np.zeros((first.size, k))
        rows[np.arange(first.size), second] = math.exp(self.epsilon)
        rows[np.arange(first.size), first] -= 1.0
        return rows

    def check_sizes(self, prior: Prior) -> None:
        """LDP fits any prior.

        Parameters
        ----------
        prior : Prior
            The design prior (never refused).
        """

    def check(self, prior: Prior) -> None:
        """LDP fits any prior.

        Parameters
        ----------
        prior : Prior
            The design prior (never refused).
        """

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the notion (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"kind": "LDP", "epsilon": ...}``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.LDP(1.0).to_dict()
        {'kind': 'LDP', 'epsilon': 1.0}
        """
        return {"kind": self.kind, "epsilon": self.epsilon}


@dataclass(frozen=True)
class _PosteriorRatio:
    """Local information privacy: e^-eps <= Pr[G=g | Y=y] / Pr[G=g] <= e^eps, i.e. for every scenario
    prior P and secret value g: e^-eps (P . q) <= (T[g] . q) <= e^eps (P . q) (docs/math.md §2).
    Without a secret, G = X (T = identity)."""

    epsilon: float
    secret: SecretModel | None = None

    if TYPE_CHECKING:  # defined by each subclass (LIP, WorstCaseLIP)
        def scenarios(self, prior: Prior) -> npt.NDArray[np.float64]: ...

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", checked_epsilon(self.epsilon))
        if self.secret is not None and not isinstance(self.secret, SecretModel):
            raise ValidationError(f"secret is a {type(self.secret).__name__}; it must be a SecretModel")

    def conditional(self, k: int) -> npt.NDArray[np.float64]:
        """T[g, x] = Pr[X=x | G=g] (identity when the secret is X itself).

        Parameters
        ----------
        k : int
            The number of values of X.

        Returns
        -------
        numpy.ndarray
            T, of shape (m, k): the secret model's ``conditional``, or the (k, k) identity.
        """
        return np.eye(k) if self.secret is None else self.secret.conditional

    def constraint_rows(self, prior: Prior) -> npt.NDArray[np.float64]:
        """The matrix A of the column cone: a column q is allowed iff q >= 0 and A q >= 0.

        Two rows per scenario prior P (``scenarios``) and secret value g: e^eps P - T[g] (upper) and
        T[g] - e^-eps P (lower).

        Parameters
        ----------
        prior : Prior
            The design prior.

        Returns
        -------
        numpy.ndarray
            A, of shape (2 s m, k) for s scenarios and m secret values.
        """
        scenarios = self.scenarios(prior)  # (s, k)
        conditional = self.conditional(prior.k)  # (m, k)
        e = math.exp(self.epsilon)
        upper = e * scenarios[:, None, :] - conditional[None, :, :]  # T[g].q <= e^eps P.q
        lower = conditional[None, :, :] - scenarios[:, None, :] / e  # T[g].q >= e^-eps P.q
        return np.concatenate([upper.reshape(-1, prior.k), lower.reshape(-1, prior.k)])

    def declared_prior(self) -> npt.NDArray[np.object_] | None:
        """Pr[X] of the joint the secret model declares (exact Fractions, ``SecretModel.marginal``), or None: a
        claim for the secret is enforced and certified there as well as at the design prior (docs/math.md §1).

        Returns
        -------
        numpy.ndarray or None
            An object array of Fractions, shape (k,); None without a secret or without its ``secret_prior``.
        """
        return None if self.secret is None else self.secret.marginal

    def check_sizes(self, prior: Prior) -> None:
        """Raise unless the secret model fits ``prior`` (its size and, when Pr[G] is known, its marginal).

        Parameters
        ----------
        prior : Prior
            The design prior.

        Raises
        ------
        ValidationError
            As ``SecretModel.check_prior``.
        """
        if self.secret is not None:
            self.secret.check_prior(prior)

    def check(self, prior: Prior) -> None:
        """Raise unless the notion fits the design prior.

        Parameters
        ----------
        prior : Prior
            The design prior.

        Raises
        ------
        ValidationError
            As ``check_sizes``.
        """
        self.check_sizes(prior)

    def _secret_dict(self) -> dict[str, Any] | None:
        return None if self.secret is None else self.secret.to_dict()


@dataclass(frozen=True)
class LIP(_PosteriorRatio):
    """eps-LIP for a fixed prior (the design prior) or, with ``prior_set``, bounded-prior LIP: the
    constraints hold at every vertex of the set (docs/math.md §2). ``secret`` protects a latent G instead of X.

    Local information privacy bounds how much a report moves the adversary's belief about the secret:
    e^-eps <= Pr[G=g | Y=y] / Pr[G=g] <= e^eps for every report y and secret value g, at the design prior (or at
    every prior of ``prior_set``). eps-LIP for X implies 2 eps-LDP whatever the prior. ``kind`` is ``"LIP"``, or
    ``"BP-LIP"`` with a prior set. A notion is immutable (a frozen dataclass).

    Parameters
    ----------
    epsilon : float
        The privacy level, in (0, 30].
    secret : SecretModel, optional
        The latent secret G to protect; default None (G = X).
    prior_set : PriorSet, optional
        The plausible priors (bounded-prior LIP); default None (the design prior alone). It must contain the
        design prior.

    Raises
    ------
    ValidationError
        When ``epsilon`` is not a finite number in (0, 30], ``secret`` is not a SecretModel, or ``prior_set`` is
        not a PriorSet.

    See Also
    --------
    LDP : Local differential privacy.
    WorstCaseLIP : LIP at every prior.
    SecretModel : A latent secret correlated with X.
    PriorSet : A set of plausible priors.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> table = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5
    >>> certificate = ld.verify(table, ld.LIP(0.8), prior)
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 0.7621)

    Over every prior within TV distance 0.1 of the design prior, the same table needs more:

    >>> notion = ld.LIP(0.8, prior_set=ld.PriorSet.tv_ball(prior, 0.1))
    >>> notion.kind
    'BP-LIP'
    >>> certificate = ld.verify(table, notion, prior)
    >>> certificate.passed, round(certificate.epsilon, 4)
    (False, 0.9163)

    Protecting a latent secret G correlated with X:

    >>> secret = ld.SecretModel([[0.8, 0.2, 0.0], [0.1, 0.3, 0.6]])
    >>> round(ld.verify(table, ld.LIP(0.8, secret=secret), prior).epsilon, 4)
    0.5108
    """

    prior_set: PriorSet | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.prior_set is not None and not isinstance(self.prior_set, PriorSet):
            raise ValidationError(f"prior_set is a {type(self.prior_set).__name__}; it must be a PriorSet")

    @property
    def kind(self) -> str:
        """``"LIP"``, or ``"BP-LIP"`` with a prior set (the notion's name in files and certificates)."""
        return "LIP" if self.prior_set is None else "BP-LIP"

    def scenarios(self, prior: Prior) -> npt.NDArray[np.float64]:
        """The priors the LIP ratio is enforced at: the design prior, or the vertices of the prior set.

        With a secret model that declares Pr[G], its marginal Pr[X] is added (docs/math.md §1).

        Parameters
        ----------
        prior : Prior
            The design prior.

        Returns
        -------
        numpy.ndarray
            The scenario priors, one per row, shape (s, k).

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.Prior([0.5, 0.3, 0.2])
        >>> ld.LIP(1.0).scenarios(prior)
        array([[0.5, 0.3, 0.2]])
        >>> ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball(prior, 0.1)).scenarios(prior).shape
        (6, 3)
        """
        enforced = prior.probabilities[None] if self.prior_set is None else self.prior_set.vertices
        declared = self.declared_prior()
        return enforced if declared is None else np.vstack([enforced, declared.astype(float)])

    def check_sizes(self, prior: Prior) -> None:
        """Raise unless the secret model and the prior set fit ``prior``'s number of values (and the secret
        model's marginal, when it declares Pr[G]).

        Parameters
        ----------
        prior : Prior
            The design prior.

        Raises
        ------
        ValidationError
            When the secret model does not fit (``SecretModel.check_prior``) or the prior set has another number
            of values.
        """
        super().check_sizes(prior)
        if self.prior_set is not None and self.prior_set.k != prior.k:
            raise ValidationError(f"prior_set has {self.prior_set.k} values; it must have one per value of the "
                                  f"prior ({prior.k})")

    def check(self, prior: Prior) -> None:
        """Raise unless the notion fits the design prior, which must lie in the prior set (decided wherever
        ``PriorSet.membership_decidable``: a polytope's needs scipy, absent from a lean runtime install, where the
        claim over the set is still verified in full).

        Parameters
        ----------
        prior : Prior
            The design prior.

        Raises
        ------
        ValidationError
            As ``check_sizes``, and when the prior set does not contain ``prior``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> notion = ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball([0.2, 0.3, 0.5], 0.1))
        >>> notion.check(ld.Prior([0.2, 0.35, 0.45]))
        >>> notion.check(ld.Prior([0.5, 0.3, 0.2]))
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: prior [0.5, 0.3, 0.2] is not in the tv_ball prior_set; the set of
        plausible priors must contain the design prior
        """
        self.check_sizes(prior)
        if self.prior_set is not None and self.prior_set.membership_decidable() and \
                not self.prior_set.contains(prior.probabilities):
            raise ValidationError(
                f"prior {prior.probabilities.tolist()} is not in the {self.prior_set.kind} prior_set; "
                "the set of plausible priors must contain the design prior")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the notion (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"kind": "LIP" or "BP-LIP", "epsilon": ..., "secret": ... or None, "prior_set": ... or None}``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.LIP(1.0).to_dict()
        {'kind': 'LIP', 'epsilon': 1.0, 'secret': None, 'prior_set': None}
        """
        return {"kind": self.kind, "epsilon": self.epsilon, "secret": self._secret_dict(),
                "prior_set": None if self.prior_set is None else self.prior_set.to_dict()}


@dataclass(frozen=True)
class WorstCaseLIP(_PosteriorRatio):
    """eps-LIP for every prior of X (the whole simplex, enforced at its corners). With G = X this is
    exactly eps-LDP (docs/math.md §2).

    With a latent ``secret`` G it bounds the posterior ratio of G whatever the prior of X. ``kind`` is
    ``"WC-LIP"``. A notion is immutable (a frozen dataclass).

    Parameters
    ----------
    epsilon : float
        The privacy level, in (0, 30].
    secret : SecretModel, optional
        The latent secret G to protect; default None (G = X).

    Raises
    ------
    ValidationError
        When ``epsilon`` is not a finite number in (0, 30] or ``secret`` is not a SecretModel.

    See Also
    --------
    LDP : Local differential privacy (WorstCaseLIP without a secret).
    LIP : LIP at the design prior or over a set of priors.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> table = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> certificate = ld.verify(table, ld.WorstCaseLIP(1.1), prior)
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 1.0986)
    """

    kind = "WC-LIP"

    def scenarios(self, prior: Prior) -> npt.NDArray[np.float64]:
        """The priors the LIP ratio is enforced at: the corners of the simplex.

        Parameters
        ----------
        prior : Prior
            The design prior (only its size k matters).

        Returns
        -------
        numpy.ndarray
            The (k, k) identity, one corner per row.
        """
        return np.eye(prior.k)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the notion (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"kind": "WC-LIP", "epsilon": ..., "secret": ... or None}``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.WorstCaseLIP(1.0).to_dict()
        {'kind': 'WC-LIP', 'epsilon': 1.0, 'secret': None}
        """
        return {"kind": self.kind, "epsilon": self.epsilon, "secret": self._secret_dict()}


#: The notion fields each kind cannot use, and why: a spec or mechanism file carrying one is refused,
#: never stripped on the way.
UNUSABLE_FIELDS = {
    "LDP": {"secret": "an LDP notion protects X itself under every prior and takes no secret (a latent secret is "
                      "kind LIP's)",
            "prior_set": "an LDP notion holds under every prior and takes no prior_set (a set of priors is kind "
                         "BP-LIP's)"},
    "WC-LIP": {"prior_set": "a WC-LIP notion holds under every prior and takes no prior_set (a set of priors is kind "
                            "BP-LIP's)"},
    "LIP": {},
    "BP-LIP": {},
}


def notion_from_dict(data: Mapping[str, Any]) -> LDP | LIP | WorstCaseLIP:
    """Rebuild a notion from its ``to_dict`` form (spec files and the export envelope); a field the kind cannot use
    (``UNUSABLE_FIELDS``) is refused."""
    kind: Any = data.get("kind")
    for field, rule in UNUSABLE_FIELDS.get(kind, {}).items():
        if data.get(field) is not None:
            raise ValidationError(f"notion.{field} is set; {rule}")
    secret = None if data.get("secret") is None else SecretModel.from_dict(data["secret"])
    if kind == "LDP":
        return LDP(data["epsilon"])
    if kind in ("LIP", "BP-LIP"):
        prior_set = None if data.get("prior_set") is None else PriorSet.from_dict(data["prior_set"])
        if kind == "BP-LIP" and prior_set is None:
            raise ValidationError("notion.kind is 'BP-LIP' but notion.prior_set is missing")
        return LIP(data["epsilon"], secret=secret, prior_set=prior_set)
    if kind == "WC-LIP":
        return WorstCaseLIP(data["epsilon"], secret=secret)
    raise ValidationError(f"notion.kind is {kind!r}; it must be one of 'LDP', 'LIP', 'BP-LIP', 'WC-LIP'")
