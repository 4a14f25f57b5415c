"""Declarations: what the user knows about a reported value (docs/math.md §1-§2).

- ``Prior``: the distribution of X over a finite domain with value labels;
- ``JointPrior``: the joint distribution of several attributes reported together;
- ``SecretModel``: the correlation of a latent secret G with X, T[g, x] = Pr[X=x | G=g];
- ``PriorSet``: the plausible priors of bounded-prior LIP, reduced to the vertices that must be enforced;
- ``Range``: a raw numeric range mapped to [-1, 1].

Every class validates on construction and is immutable afterwards. Numpy only (networkx for DAG secrets and
scipy for polytope membership are imported when used).
"""

from lipdesign.model.joint_prior import JointPrior
from lipdesign.model.prior import Prior
from lipdesign.model.prior_set import PriorSet
from lipdesign.model.range import Range
from lipdesign.model.secret import SecretModel

__all__ = ["JointPrior", "Prior", "PriorSet", "Range", "SecretModel"]
