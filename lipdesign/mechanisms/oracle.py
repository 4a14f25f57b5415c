"""Pure protocols: the LDP frequency oracles of the survey (docs/math.md §8), GRR, OUE, OLH and Hadamard response.

A report "supports" value v with probability p when v is the user's value and q otherwise, independently across
users. With C_v the number of reports supporting v (the ``support`` statistic of the aggregate), f_v =
(C_v/n - q)/(p - q) is unbiased and ``pure_variance`` is its variance. Numpy only.
"""

from typing import TYPE_CHECKING

import numpy as np

from lipdesign.domains import Categorical
from lipdesign.mechanisms.base import Mechanism
from lipdesign.mechanisms.sampling import implemented_exp
from lipdesign.validation import integer

#: Largest k of GRR, OUE and HadamardResponse: outputs and their arithmetic stay in int64.
MAX_K = 2**62 - 1


def pure_estimate(support, n, p, q):
    """f_v = (C_v/n - q)/(p - q) (docs/math.md §8), unbiased for a pure protocol with support probabilities p, q."""
    return (np.asarray(support, dtype=float) / n - q) / (p - q)


def pure_variance(frequencies, n, p, q):
    """Var f_v = [f_v p(1-p) + (1-f_v) q(1-q)] / (n (p-q)^2) (docs/math.md §8): C_v is a sum of n independent
    Bernoulli variables, n f_v of them with mean p and the others with mean q."""
    f = np.asarray(frequencies, dtype=float)
    return (f * p * (1.0 - p) + (1.0 - f) * q * (1.0 - q)) / (n * (p - q) ** 2)


class PureProtocol(Mechanism):
    """Parameters, aggregate, estimate and variance of a pure protocol over k values (docs/math.md §8). Subclasses
    set ``p`` and ``q`` and implement ``_support(reports)`` -> (C, n), C[v] = number of reports supporting v."""

    p: float
    q: float | None  # None only for OLH with a pool, whose estimate and variance do not use it

    if TYPE_CHECKING:  # what a subclass implements, for mypy only (no method at run time)
        def _support(self, reports): ...

    def __init__(self, epsilon, k, max_k=MAX_K):
        self.epsilon = self.checked_epsilon(epsilon)
        self.exp_epsilon = implemented_exp(self.epsilon)
        self.k = integer(k, "k", low=2, high=max_k)
        self.input_domain = Categorical(self.k)

    def parameters(self):
        return {"epsilon": self.epsilon, "k": self.k}

    def _statistics(self, reports):
        support, n = self._support(reports)
        return n, {"support": support}

    def _estimate(self, aggregate, method):
        return pure_estimate(aggregate["support"], aggregate.n, self.p, self.q)

    def _expected(self, frequencies, method, user_ids):
        return frequencies

    def _variance(self, frequencies, n, method, user_ids):
        return pure_variance(frequencies, n, self.p, self.q)
