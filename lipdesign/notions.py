"""Privacy notions as homogeneous linear constraints on each column of a table (docs/math.md §2).

Each notion gives ``constraint_rows(prior)``: a matrix A such that a column q is allowed iff q >= 0 and
A q >= 0. The column cone is the same for every column; a table is feasible iff its rows sum to 1 and
each column lies in the cone. ``scenarios(prior)`` lists the (prior) vertices the LIP ratio is enforced at.
"""

import math
from dataclasses import dataclass

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.model import PriorSet, SecretModel
from lipdesign.validation import epsilon as checked_epsilon


@dataclass(frozen=True)
class LDP:
    """eps-local differential privacy: q[x] <= e^eps q[x'] for every x, x' (docs/math.md §2)."""

    epsilon: float
    kind = "LDP"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", checked_epsilon(self.epsilon))

    def constraint_rows(self, prior):
        k = prior.k
        first, second = np.nonzero(~np.eye(k, dtype=bool))
        rows = np.zeros((first.size, k))
        rows[np.arange(first.size), second] = math.exp(self.epsilon)
        rows[np.arange(first.size), first] -= 1.0
        return rows

    def check_sizes(self, prior):
        """LDP fits any prior."""

    def check(self, prior):
        """LDP fits any prior."""

    def to_dict(self):
        return {"kind": self.kind, "epsilon": self.epsilon}


@dataclass(frozen=True)
class _PosteriorRatio:
    """Local information privacy: e^-eps <= Pr[G=g | Y=y] / Pr[G=g] <= e^eps, i.e. for every scenario
    prior P and secret value g: e^-eps (P . q) <= (T[g] . q) <= e^eps (P . q) (docs/math.md §2).
    Without a secret, G = X (T = identity)."""

    epsilon: float
    secret: SecretModel | None = None

    def __post_init__(self):
        object.__setattr__(self, "epsilon", checked_epsilon(self.epsilon))
        if self.secret is not None and not isinstance(self.secret, SecretModel):
            raise ValidationError(f"secret is a {type(self.secret).__name__}; it must be a SecretModel")

    def conditional(self, k):
        """T[g, x] = Pr[X=x | G=g] (identity when the secret is X itself)."""
        return np.eye(k) if self.secret is None else self.secret.conditional

    def constraint_rows(self, prior):
        scenarios = self.scenarios(prior)  # (s, k)
        conditional = self.conditional(prior.k)  # (m, k)
        e = math.exp(self.epsilon)
        upper = e * scenarios[:, None, :] - conditional[None, :, :]  # T[g].q <= e^eps P.q
        lower = conditional[None, :, :] - scenarios[:, None, :] / e  # T[g].q >= e^-eps P.q
        return np.concatenate([upper.reshape(-1, prior.k), lower.reshape(-1, prior.k)])

    def declared_prior(self):
        """Pr[X] of the joint the secret model declares (exact Fractions, ``SecretModel.marginal``), or None: a
        claim for the secret is enforced and certified there as well as at the design prior (docs/math.md §1)."""
        return None if self.secret is None else self.secret.marginal

    def check_sizes(self, prior):
        """Raise unless the secret model fits ``prior`` (its size and, when Pr[G] is known, its marginal)."""
        if self.secret is not None:
            self.secret.check_prior(prior)

    def check(self, prior):
        """Raise unless the notion fits the design prior."""
        self.check_sizes(prior)

    def _secret_dict(self):
        return None if self.secret is None else self.secret.to_dict()


@dataclass(frozen=True)
class LIP(_PosteriorRatio):
    """eps-LIP for a fixed prior (the design prior) or, with ``prior_set``, bounded-prior LIP: the
    constraints hold at every vertex of the set (docs/math.md §2). ``secret`` protects a latent G instead of X."""

    prior_set: PriorSet | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.prior_set is not None and not isinstance(self.prior_set, PriorSet):
            raise ValidationError(f"prior_set is a {type(self.prior_set).__name__}; it must be a PriorSet")

    @property
    def kind(self):
        return "LIP" if self.prior_set is None else "BP-LIP"

    def scenarios(self, prior):
        enforced = prior.probabilities[None] if self.prior_set is None else self.prior_set.vertices
        declared = self.declared_prior()
        return enforced if declared is None else np.vstack([enforced, declared.astype(float)])

    def check_sizes(self, prior):
        super().check_sizes(prior)
        if self.prior_set is not None and self.prior_set.k != prior.k:
            raise ValidationError(f"prior_set has {self.prior_set.k} values; it must have one per value of the "
                                  f"prior ({prior.k})")

    def check(self, prior):
        """Raise unless the notion fits the design prior, which must lie in the prior set (decided wherever
        ``PriorSet.membership_decidable``: a polytope's needs scipy, absent from a lean runtime install, where the
        claim over the set is still verified in full)."""
        self.check_sizes(prior)
        if self.prior_set is not None and self.prior_set.membership_decidable() and \
                not self.prior_set.contains(prior.probabilities):
            raise ValidationError(
                f"prior {prior.probabilities.tolist()} is not in the {self.prior_set.kind} prior_set; "
                "the set of plausible priors must contain the design prior")

    def to_dict(self):
        return {"kind": self.kind, "epsilon": self.epsilon, "secret": self._secret_dict(),
                "prior_set": None if self.prior_set is None else self.prior_set.to_dict()}


@dataclass(frozen=True)
class WorstCaseLIP(_PosteriorRatio):
    """eps-LIP for every prior of X (the whole simplex, enforced at its corners). With G = X this is
    exactly eps-LDP (docs/math.md §2)."""

    kind = "WC-LIP"

    def scenarios(self, prior):
        return np.eye(prior.k)

    def to_dict(self):
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


def notion_from_dict(data):
    """Rebuild a notion from its ``to_dict`` form (spec files and the export envelope); a field the kind cannot use
    (``UNUSABLE_FIELDS``) is refused."""
    kind = data.get("kind")
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
