"""A memoised pair of tables designed under LIP at a prior (family "l-table", docs/math.md §19.8). Numpy and the
standard library only.

The permanent table Q1 (k x m) is drawn once per device and value (``perturb_memoised``: one word of the memo's
ChaCha20 stream), then every report passes it through Q2 = a I + (1 - a) 1 r^T: the permanent output is kept with
probability a, else replaced by a draw from the refill distribution r (two fresh words). Every probability is a
multiple of 2^-32 on both paths, so both claims are verified in exact rational arithmetic on what is sampled: one
report (Q1 Q2) is ``epsilon``-LIP for X at the prior, and any number of reports of one value are
``epsilon_permanent``-LIP (Q1). ``ld.designer.design_longitudinal`` chooses Q1, a and r.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.domains import Categorical
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee, Mechanism
from lipdesign.mechanisms.memo import WORD, checked_keys, device_keys, memo_words
from lipdesign.mechanisms.sampling import as_generator, index_reports
from lipdesign.mechanisms.table import gls_matrix, linear_covariance
from lipdesign.model import Prior, PriorSet
from lipdesign.notions import LDP, LIP
from lipdesign.validation import epsilon as checked_epsilon
from lipdesign.validation import fmt, integer
from lipdesign.verification import verify_table

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.sampling import RandomSource
    from lipdesign.verification import Certificate

#: Devices per block of the memo's words.
BLOCK = 2**16


def word_counts(table: npt.ArrayLike, field: str) -> npt.NDArray[np.int64]:
    """The rows of ``table`` as counts of 32-bit words (each entry a multiple of 2^-32, each row summing to 1
    exactly), or the ValidationError naming the field and the rule."""
    array = np.atleast_2d(np.asarray(table, dtype=float))
    counts = array * WORD
    if not np.all(np.isfinite(counts)) or np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValidationError(f"{field} is {fmt(table)}; every entry must be a multiple of 2^-32 in [0, 1] (what "
                              "32-bit words realise: ld.designer.design_longitudinal rounds a table so)")
    counts = counts.astype(np.int64)
    if np.any(counts.sum(axis=1) != WORD):
        row = int(np.argmax(counts.sum(axis=1) != WORD))
        raise ValidationError(f"{field}[{row}] sums to {counts[row].sum() / WORD!r}; every row must sum to 1 exactly")
    return counts


def on_grid(table: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``table``'s rows rounded to multiples of 2^-32 summing to 1 exactly (largest remainders; zeros stay zero)."""
    array = np.atleast_2d(np.asarray(table, dtype=float))
    scaled = array * WORD
    counts = np.floor(scaled).astype(np.int64)
    for row in range(len(counts)):
        short = WORD - int(counts[row].sum())
        order = np.argsort(-(scaled[row] - counts[row]) + (array[row] == 0) * 2.0)  # zeros last
        counts[row, order[:short]] += 1
    return counts / float(WORD)


def _frozen(array):
    array.setflags(write=False)
    return array


def _draw(counts: npt.NDArray[np.int64], rows: npt.NDArray[np.int64], words: npt.NDArray[np.uint32]
          ) -> npt.NDArray[np.int64]:
    """Output j of row x for word u: the j with cumulative counts C[x, j - 1] <= u < C[x, j]."""
    cumulative = np.cumsum(counts, axis=1)
    return (words.astype(np.int64)[:, None] >= cumulative[rows]).sum(axis=1)


class LongitudinalTable(Mechanism):
    """A permanent table memoised per device and value, then a keep-or-refill instantaneous stage, designed under
    LIP at a prior (docs/math.md §19.8; made by ``ld.designer.design_longitudinal``).

    Parameters
    ----------
    epsilon : float
        One report's LIP claim for X at ``prior``.
    epsilon_permanent : float
        Any number of reports of one value: the permanent table's LIP claim for X at ``prior``, at least
        ``epsilon``.
    permanent : array_like
        Q1, k x m, entries multiples of 2^-32, rows summing to 1.
    keep : int
        The instantaneous stage keeps the permanent output when its word is below ``keep`` (0 to 2^32).
    refill : array_like
        r, m entries multiples of 2^-32 summing to 1: the distribution of a replaced output.
    prior : Prior or array_like
        The prior of both claims.

    Raises
    ------
    ValidationError
        A table not on the 2^-32 grid, sizes that disagree, an epsilon out of range or above
        ``epsilon_permanent``, or a claim the realised tables do not meet (nothing is built).

    Examples
    --------
    >>> import lipdesign as ld
    >>> pair = ld.designer.design_longitudinal([0.5, 0.3, 0.2], epsilon=0.5, epsilon_permanent=1.0)
    >>> pair.verify().passed, pair.permanent_certificate().passed
    (True, True)
    >>> round(pair.verify().epsilon, 6) <= 0.5, round(pair.permanent_certificate().epsilon, 6) <= 1.0
    (True, True)
    """

    family = "l-table"
    methods = ("unbiased",)
    epsilon_range = (0.0, 30.0)
    parameter_rules = (("epsilon_permanent", "in (0, 30], at least epsilon"),
                       ("permanent", "k x m table, entries multiples of 2^-32, rows summing to 1"),
                       ("keep", "integer in 0..2^32"), ("refill", "m entries, multiples of 2^-32, summing to 1"),
                       ("prior", "k probabilities"))
    client_cost = "O(m) per report (3 words; 1 through the memo's ChaCha20 block)"
    design_family = None

    def __init__(self, epsilon: float, epsilon_permanent: float, permanent: npt.ArrayLike, keep: int,
                 refill: npt.ArrayLike, prior: Prior | npt.ArrayLike) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.epsilon_permanent = checked_epsilon(epsilon_permanent, field="epsilon_permanent")
        if self.epsilon > self.epsilon_permanent:
            raise ValidationError(f"epsilon is {fmt(self.epsilon)}; one report's guarantee is at most the unbounded "
                                  f"one's, epsilon_permanent = {fmt(self.epsilon_permanent)} (docs/math.md §19.1)")
        self.permanent_counts = word_counts(permanent, "permanent")
        self.k, self.m = self.permanent_counts.shape
        self.keep = integer(keep, "keep", low=0, high=WORD)
        self.refill_counts = word_counts(refill, "refill")[0]
        if self.refill_counts.size != self.m:
            raise ValidationError(f"refill has {self.refill_counts.size} entries; it must have one per output of the "
                                  f"permanent table ({self.m})")
        for array in (self.permanent_counts, self.refill_counts):
            array.setflags(write=False)
        self.prior = prior if isinstance(prior, Prior) else Prior(prior)
        if self.prior.k != self.k:
            raise ValidationError(f"prior has {self.prior.k} values; it must have one per row of the permanent table "
                                  f"({self.k})")
        self.input_domain = Categorical(self.k)
        #: One report's claim, for X at ``prior`` (what ``ld.audit`` tests).
        self.notion = LIP(self.epsilon)
        for certificate in (self.certificate, self.permanent_certificate()):
            if not certificate.passed:
                raise ValidationError(f"permanent, keep and refill realise {certificate.summary()}; the tables do not "
                                      "meet their claim")

    @classmethod
    def example(cls) -> Self:
        """Randomized response with e^eps = 3 as the permanent table, kept half the time, refilled from its output
        distribution at (0.5, 0.3, 0.2): one report 0.452-LIP, the permanent 0.762-LIP there."""
        prior = [0.5, 0.3, 0.2]
        permanent = on_grid([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
        return cls(0.5, 1.0, permanent, WORD // 2, on_grid(np.array(prior) @ permanent)[0], prior)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "epsilon_permanent": self.epsilon_permanent,
                "permanent": (self.permanent_counts / WORD).tolist(), "keep": self.keep,
                "refill": (self.refill_counts / WORD).tolist(), "prior": self.prior.probabilities.tolist()}

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> Self:
        return cls(**dict(parameters))

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LIP", self.epsilon, EXACT_TABLE,
                         f"for X at the prior, one report; any number of reports of one value, memoised: LIP "
                         f"{self.epsilon_permanent:.6g} (docs/math.md §19.8)")

    # -- the exact tables -------------------------------------------------------------------------------------------

    @cached_property
    def exact_permanent(self) -> npt.NDArray[np.object_]:
        """Q1 in Fractions (k x m)."""
        return _frozen(np.array([[Fraction(int(c), WORD) for c in row] for row in self.permanent_counts],
                                dtype=object))

    @cached_property
    def exact_table(self) -> npt.NDArray[np.object_]:
        """One report's table Q1 Q2 in Fractions (k x m): a Q1 + (1 - a) r, row by row (docs/math.md §19.8)."""
        keep = Fraction(self.keep, WORD)
        refill = np.array([Fraction(int(c), WORD) for c in self.refill_counts], dtype=object)
        return _frozen(keep * self.exact_permanent + (1 - keep) * refill[None, :])

    @cached_property
    def table(self) -> npt.NDArray[np.float64]:
        """One report's table, in floats."""
        return _frozen(self.exact_table.astype(float))

    def privacy_table(self) -> npt.NDArray[np.float64]:
        return self.table

    def _certify(self):
        return verify_table(self.exact_table, LIP(self.epsilon), self.prior)

    def permanent_certificate(self) -> Certificate:
        """Any number of reports of one value: the exact LIP certificate of Q1 at the prior (docs/math.md §19.1).

        Returns
        -------
        Certificate
            Against the claim ``epsilon_permanent``.
        """
        return verify_table(self.exact_permanent, LIP(self.epsilon_permanent), self.prior)

    def certificate_at(self, prior: Prior | PriorSet | npt.ArrayLike) -> Certificate:
        """One report's exact LIP certificate for X at another ``prior`` (a PriorSet: its worst vertex).

        Parameters
        ----------
        prior : Prior, PriorSet or array_like
            The prior.

        Returns
        -------
        Certificate
            Against the claim ``epsilon``.
        """
        return self._lip_at(self.exact_table, self.epsilon, prior)

    def permanent_certificate_at(self, prior: Prior | PriorSet | npt.ArrayLike) -> Certificate:
        """The unbounded-reports LIP certificate at another ``prior``.

        Parameters
        ----------
        prior : Prior, PriorSet or array_like
            The prior.

        Returns
        -------
        Certificate
            Against the claim ``epsilon_permanent``.
        """
        return self._lip_at(self.exact_permanent, self.epsilon_permanent, prior)

    @staticmethod
    def _lip_at(table, claim, prior):
        """The exact LIP certificate of ``table`` at ``prior``; over a PriorSet, its worst vertex (docs/math.md §2)."""
        if isinstance(prior, PriorSet):
            return max((verify_table(table, LIP(claim), vertex) for vertex in prior.vertices), key=lambda c: c.epsilon)
        return verify_table(table, LIP(claim), prior)

    def verified_epsilons(self) -> dict[str, float]:
        """Exactly verified epsilons of one report: the claim, ``"LIP for X"`` and ``"LDP"``; and of the permanent
        table, ``"permanent LIP for X"`` and ``"permanent LDP"``.

        Returns
        -------
        dict of str to float
            By name.
        """
        return {"claimed": self.certificate.epsilon, "LIP for X": self.certificate.epsilon,
                "LDP": verify_table(self.exact_table, LDP(30.0)).epsilon,
                "permanent LIP for X": self.permanent_certificate().epsilon,
                "permanent LDP": verify_table(self.exact_permanent, LDP(30.0)).epsilon}

    # -- device side --------------------------------------------------------------------------------------------

    device_keys = staticmethod(device_keys)

    def _instantaneous(self, permanent, rng):
        words = rng.integers(0, WORD, size=(len(permanent), 2), dtype=np.uint32)
        refill = _draw(self.refill_counts[None, :], np.zeros(len(permanent), np.int64), words[:, 1])
        return np.where(words[:, 0].astype(np.int64) < self.keep, permanent, refill)

    def _perturb(self, values, rng, user_ids):
        permanent = _draw(self.permanent_counts, values, rng.integers(0, WORD, size=len(values), dtype=np.uint32))
        return self._instantaneous(permanent, rng)

    def permanent(self, values: npt.ArrayLike, keys: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The memoised permanent outputs (docs/math.md §19.1): word 0 of the memo's ChaCha20 stream (docs/runtime.md
        §15) draws from the value's row of Q1.

        Parameters
        ----------
        values : array_like of int
            One value per device.
        keys : array_like of uint32, shape (n, 8)
            The devices' keys.

        Returns
        -------
        numpy.ndarray
            int64 (n,).
        """
        data = self.input_domain.validate(values)
        checked = checked_keys(keys, len(data))
        parts = [_draw(self.permanent_counts, data[i:i + BLOCK],
                       memo_words(self.fingerprint, [int(v).to_bytes(8, "little") for v in data[i:i + BLOCK]],
                                  checked[i:i + BLOCK], 1)[:, 0]) for i in range(0, len(data), BLOCK)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def perturb_memoised(self, values: npt.ArrayLike, keys: npt.ArrayLike, *, rng: RandomSource = None
                         ) -> npt.NDArray[np.int64]:
        """Reports round after round: the memoised permanent output, then a fresh keep-or-refill.

        Parameters
        ----------
        values : array_like of int
            One value per device.
        keys : array_like of uint32, shape (n, 8)
            The devices' keys, the same every round.
        rng : numpy.random.Generator or int, optional
            The instantaneous stage's source.

        Returns
        -------
        numpy.ndarray
            int64 (n,), outputs in 0..m-1.
        """
        return self._instantaneous(self.permanent(values, keys), as_generator(rng))

    # -- server side --------------------------------------------------------------------------------------------

    @cached_property
    def _estimator(self) -> npt.NDArray[np.float64]:
        """The GLS estimator at the prior (k x m): unbiased at every distribution (docs/math.md §11)."""
        return _frozen(gls_matrix(self.table, prior=self.prior.probabilities))

    def _statistics(self, reports):
        reports = index_reports(reports, self.m)
        return reports.size, {"counts": np.bincount(reports, minlength=self.m)}

    def _estimate(self, aggregate, method):
        return self._estimator @ aggregate["counts"] / aggregate.n

    def _expected(self, frequencies, method, user_ids):
        return frequencies

    def _variance(self, frequencies, n, method, user_ids):
        return np.diag(linear_covariance(self.table, self._estimator, frequencies, n)).copy()

    def user_terms(self, reports: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Each report's term of the unbiased estimate (a column of the GLS estimator), for ``ld.rounds``.

        Parameters
        ----------
        reports : array_like of int
            One round's reports.

        Returns
        -------
        numpy.ndarray
            float (n, k).
        """
        return self._estimator[:, index_reports(reports, self.m)].T

    def rounds_variance(self, frequencies: npt.ArrayLike | None = None, n: int = 1, rounds: int = 1
                        ) -> npt.NDArray[np.float64]:
        """The variance of the average of ``rounds`` memoised rounds of ``n`` devices with unchanged values
        (docs/math.md §19.5, §19.8): (V_1 + (R - 1) C) / R with C the covariance of two rounds, the variance of
        E[term | permanent output] = the estimator times Q2's row.

        Parameters
        ----------
        frequencies : array_like, optional
            The devices' value frequencies (default the prior).
        n : int, default 1
            The devices.
        rounds : int, default 1
            The rounds averaged.

        Returns
        -------
        numpy.ndarray
            float (k,).
        """
        rounds = integer(rounds, "rounds", low=1)
        f = self.prior.probabilities if frequencies is None else np.asarray(frequencies, dtype=float)
        one = self.variance(f, n)
        keep = self.keep / WORD
        instantaneous = keep * np.eye(self.m) + (1 - keep) * (self.refill_counts / WORD)[None, :]
        covariance = np.diag(linear_covariance(self.permanent_counts / WORD, self._estimator @ instantaneous.T, f,
                                              integer(n, "n", low=1)))
        return (one + (rounds - 1) * covariance) / rounds

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads: every input and every output of one report's table.

        Returns
        -------
        AuditPlan
            The inputs, the table and the identity classifier.
        """
        return AuditPlan(np.arange(self.k), self.table, lambda reports: np.asarray(reports, dtype=np.int64),
                         [f"x={x}" for x in range(self.k)], [f"y={y}" for y in range(self.m)], np.eye(self.k))

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §15): the permanent table and the refill distribution as
        counts of 32-bit words, and the keep threshold.

        Returns
        -------
        dict
            ``permanent_counts``, ``keep`` and ``refill_counts``.
        """
        return {"permanent_counts": self.permanent_counts.tolist(), "keep": self.keep,
                "refill_counts": self.refill_counts.tolist()}

    def display_name(self) -> str:
        return "LIP-designed pair"

    def __repr__(self) -> str:
        return (f"LongitudinalTable(LIP eps={self.epsilon:g}, eps_permanent={self.epsilon_permanent:g} at the prior, "
                f"k={self.k}, {self.m} outputs, keep={self.keep / WORD:.4g})")


__all__ = ["LongitudinalTable", "on_grid", "word_counts"]
