"""The count-mean sketch designed under LIP at a prior over candidate strings (docs/math.md §16.6). Numpy only.

The reports are the count-mean sketch's (``hashed_bits``: the row, then m bits), but each (row, bucket) cell has its
own pair of bit probabilities: on the user's bucket and off it. The pairs of row j are a unary encoding over the m
buckets, designed (``ld.design(..., family="cms")``) at the prior the candidates induce on those buckets, and the
claim is verified for X itself: the row is drawn uniformly and independently of the value, so a report's posterior
ratio for any string equals its bucket's, and every bucket (empty or not) is checked, which covers every string,
listed or not (docs/math.md §16.6).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.domains import Strings
from lipdesign.errors import ValidationError, VerificationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee, worst_over_vertices
from lipdesign.mechanisms.hashed_bits import MAX_BITS, MAX_COHORTS, WORD, HashedBitReports, chunk
from lipdesign.mechanisms.sampling import MAX_SEED
from lipdesign.mechanisms.unary_encoding import UnaryEncoding
from lipdesign.model import Prior, PriorSet
from lipdesign.notions import LIP
from lipdesign.strings import DEFAULT_MAX_BYTES, bounded, byte_words, string_hash
from lipdesign.validation import fmt, probability_vector, real_number, upward
from lipdesign.verification import exp_bounds
from lipdesign.verification.exact import Certificate, log_upper
from lipdesign.verification.unary_encoding import joint_lip_bound

if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from typing import Self

    import numpy.typing as npt


#: The audit reads the bits of at most this many buckets of the worst row (2^AUDIT_BUCKETS + 1 classes).
AUDIT_BUCKETS = 6


def word_thresholds(probabilities: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The 32-bit thresholds nearest to ``probabilities`` (a bit is 1 when its word is below its threshold), kept
    in 1..2^32 - 1 so that no bit is certain."""
    return np.clip(np.rint(np.asarray(probabilities, dtype=float) * WORD), 1, WORD - 1).astype(np.int64)


def induced_priors(prior: Prior, keys: npt.NDArray[np.uint64], m: int, unlisted: float) -> npt.NDArray[np.float64]:
    """(d, m): the prior of each row's buckets (docs/math.md §16.6): the candidates' mass (scaled to 1 - unlisted)
    by their bucket under the row's hash key (``keys``, one per row), plus ``unlisted`` / m in every bucket."""
    labels = [str(label).encode("utf-8") for label in prior.labels]
    d = len(keys)
    rows = np.repeat(np.arange(d), len(labels))
    buckets = bounded(string_hash(*byte_words(labels * d), np.asarray(keys).reshape(-1)[rows, None]), m)
    induced = np.zeros((d, m))
    np.add.at(induced, (rows, buckets.reshape(-1)), np.tile(prior.probabilities, d))
    return induced * (1 - unlisted) + unlisted / m


class CountMeanSketchLIP(HashedBitReports):
    """The count-mean sketch with a pair of bit probabilities per (row, bucket), eps-LIP for X at a prior over
    candidate strings (docs/math.md §16.6; ``ld.design(prior, ld.LIP(eps), family="cms")`` designs it).

    A user draws a row j of d uniformly and sends (j, y): y_b is 1 with probability ``on[j, b] / 2^32`` when b is her
    string's bucket h_j(v) and ``off[j, b] / 2^32`` otherwise. The prior over strings is the candidates' (the labels
    of ``prior``, scaled to 1 - ``unlisted``) plus ``unlisted`` mass for all other strings, taken as spread evenly over
    each row's buckets. Each row is then a unary encoding over its buckets at the prior they induce, and the claim is
    verified on it exactly (docs/math.md §7.1) for every row and every bucket: since the row is drawn independently of
    the value, that is eps-LIP for every string, listed or not. ``epsilons`` also gives the LDP level, which eps-LIP
    bounds by 2 eps whatever the prior (docs/math.md §2). Decoding over the candidates is the least squares of the
    hashed-bit families, with each cell debiased by its own pair.

    Parameters
    ----------
    epsilon : float
        The LIP level claimed, in (0, 30].
    prior : Prior or mapping
        The prior over the candidates (its labels, as strings; probabilities may be 0), or its JSON form.
    on, off : array_like of int
        (d, m) thresholds on 32-bit words, each in 1..2^32 - 1: bit b of row j is 1 below ``on[j, b]`` on the
        user's bucket and below ``off[j, b]`` elsewhere.
    m : int
        Buckets per row, 2 to 65536.
    d : int
        Rows, each with its own hash function, 1 to 65536.
    seed : int
        The public seed of the hash functions, 0 to 2^63 - 1.
    unlisted : float, default 0
        The prior mass of all strings outside the candidates, in [0, 1).
    max_bytes : int, default 64
        The longest value, in bytes of UTF-8.
    candidates : sequence of str, optional
        The strings ``estimate`` decodes over; by default the prior's.
    provenance : mapping, optional
        The design's record (``baselines``, ``optimality``), as ``ld.design`` writes it.

    Attributes
    ----------
    induced_priors : numpy.ndarray
        (d, m): the prior each row's buckets get from the candidates and the unlisted mass.
    epsilons : mapping
        Exactly verified epsilons: "claimed" and "LIP for X" (the worst row's), "LDP" (the worst row's).

    Raises
    ------
    ValidationError
        A parameter outside its range, thresholds of another shape, or a prior whose labels are not valid strings.
    VerificationError
        If a row's realised bits are not eps-LIP at its induced prior.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> words = ["the", "of", "and", "to", "in", "is"]
    >>> prior = ld.Prior([0.4, 0.2, 0.15, 0.1, 0.1, 0.05], labels=words)
    >>> sketch = ld.design(prior, ld.LIP(1.0), family="cms", baselines=False)
    >>> sketch.verify().passed, round(sketch.epsilons["LIP for X"], 6), round(sketch.epsilons["LDP"], 3)
    (True, 1.0, 1.387)
    >>> users = np.array(words, dtype=object)[np.random.default_rng(0).choice(6, size=20_000, p=prior.probabilities)]
    >>> np.round(sketch.estimate(sketch.perturb(users, rng=1)).values, 2)
    array([0.39, 0.21, 0.15, 0.12, 0.11, 0.03])
    >>> np.round(sketch.estimand(users), 2)  # the truth
    array([0.39, 0.21, 0.15, 0.1 , 0.1 , 0.05])
    """

    family = "cms-lip"
    design_family = "cms"
    epsilon_range = (0.0, 30.0)
    parameter_rules = (("m", f"integer in 2..{MAX_BITS}"), ("d", f"integer in 1..{MAX_COHORTS}"),
                       ("seed", f"integer in 0..{MAX_SEED - 1}"), ("unlisted", "number in [0, 1)"),
                       ("on", "d x m integers in 1..2^32 - 1"), ("off", "d x m integers in 1..2^32 - 1"),
                       ("max_bytes", "integer in 1..4096"))
    client_cost = "O(m) per report (m bits)"

    def __init__(self, epsilon: float, prior: Prior | Mapping[str, Any], on: npt.ArrayLike, off: npt.ArrayLike, *,
                 m: int, d: int, seed: int, unlisted: float = 0.0, max_bytes: int = DEFAULT_MAX_BYTES,
                 candidates: Sequence[str] | None = None, provenance: Mapping[str, Any] | None = None) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        #: The claim, eps-LIP for X at the prior (what ``ld.audit`` compares populations under).
        self.notion = LIP(self.epsilon)
        self.prior = prior if isinstance(prior, Prior) else Prior.from_dict(prior)
        labels = [str(label) for label in self.prior.labels]
        self._sketch(m, 1, d, seed, max_bytes, labels if candidates is None else candidates, cohort_field="d")
        if candidates is None:  # decoding over the prior's candidates, and simulations draw users from the prior
            self.strings = Strings(self.strings.max_bytes, labels, self.prior.probabilities)
            self.input_domain = self.strings
        if self.m < 2:
            raise ValidationError(f"m is {self.m}; a row needs at least 2 buckets to tell strings apart")
        self.unlisted = real_number(unlisted, "unlisted", 0.0, 1.0)
        if self.unlisted >= 1:
            raise ValidationError(f"unlisted is {fmt(unlisted)}; the candidates need some prior mass (it must be "
                                  "below 1)")
        self.on = self._thresholds(on, "on")
        self.off = self._thresholds(off, "off")
        self.input_domain.validate(labels)  # the prior's labels must be strings this sketch takes
        #: (d, m): the prior of each row's buckets (docs/math.md §16.6).
        self.induced_priors = induced_priors(self.prior, self.keys[:, 0], self.m, self.unlisted)
        self.induced_priors.setflags(write=False)
        certificates = [self._row(row) for row in range(self.d)]
        worst = max(range(self.d), key=lambda row: certificates[row][0].epsilon)
        lip, ldp = certificates[worst][0], max(pair[1] for pair in certificates)
        self._claimed = Certificate("LIP", self.epsilon, lip.epsilon, True, True, {"row": worst, **lip.worst},
                                    arithmetic=lip.arithmetic)
        self._worst_row = worst
        self.epsilons = MappingProxyType({"claimed": lip.epsilon, "LIP for X": lip.epsilon, "LDP": ldp})
        self.provenance = MappingProxyType(dict(provenance or {}))

    @property
    def d(self) -> int:
        """The rows of the sketch (its depth): the cohorts of the hashed-bit layout."""
        return self.cohorts

    def _thresholds(self, values, name):
        array = np.asarray(values)
        if array.shape != (self.d, self.m):
            raise ValidationError(f"{name} has shape {array.shape}; it must be d x m = {self.d} x {self.m} thresholds "
                                  "on 32-bit words")
        if not np.issubdtype(array.dtype, np.integer) and not (
                np.issubdtype(array.dtype, np.floating) and np.array_equal(array, np.rint(array))):
            raise ValidationError(f"{name} has dtype {array.dtype} and non-integer entries; its thresholds must be "
                                  "integers in 1..2^32 - 1")
        array = array.astype(np.int64)
        bad = (array < 1) | (array >= WORD)
        if bad.any():
            row, bucket = np.argwhere(bad)[0]
            raise ValidationError(f"{name}[{row}][{bucket}] is {array[row, bucket]}; it must lie in 1..2^32 - 1 (a "
                                  "certain bit has an infinite epsilon)")
        if name == "off" and (array == self.on).any():
            row, bucket = np.argwhere(array == self.on)[0]
            raise ValidationError(f"off[{row}][{bucket}] equals on[{row}][{bucket}] ({array[row, bucket]}); such a "
                                  "bit says nothing about its bucket and has no unbiased estimate")
        array.setflags(write=False)
        return array

    def _row(self, row):
        """(LIP certificate, LDP epsilon) of row ``row``: a unary encoding over its buckets at its induced prior,
        verified exactly (docs/math.md §7.1); the realised probabilities T / 2^32 are on the 2^-53 grid it verifies."""
        try:
            encoding = UnaryEncoding(self.on[row] / WORD, self.off[row] / WORD, LIP(self.epsilon),
                                     Prior(self.induced_priors[row], normalize=True))
        except VerificationError as error:
            raise VerificationError(f"row {row} of the sketch: {error}") from None
        return encoding.certificate, encoding.epsilons["LDP"]

    @property
    def k(self) -> int:
        """The number of candidates of the design prior."""
        return self.prior.k

    def certificate_at(self, prior: Prior | PriorSet | npt.ArrayLike) -> Certificate:
        """The exact Certificate of eps-LIP for X at another prior over the candidates, the unlisted mass kept
        (docs/math.md §16.6): every row's joint condition (docs/math.md §7.1) at the buckets' prior it induces, the
        worst row's. ``ld.verify(mech, prior=...)`` calls it.

        Parameters
        ----------
        prior : Prior, PriorSet or array_like
            A Prior over the candidates (matched by label, in any order), k probabilities in the order of the design
            prior's candidates, or a PriorSet: the worst over its vertices. The unlisted mass stays the design's.

        Returns
        -------
        Certificate
            Whether the sketch is eps-LIP at ``prior``, and its epsilon there (rounded up).

        Raises
        ------
        ValidationError
            If ``prior`` is not a probability vector with one entry per candidate.

        Examples
        --------
        >>> import lipdesign as ld
        >>> sketch = ld.mechanisms.CountMeanSketchLIP.example()
        >>> certificate = ld.verify(sketch, prior=[1 / 8] * 8)
        >>> certificate.passed, round(certificate.epsilon, 4)
        (True, 0.9)
        """
        if isinstance(prior, PriorSet):
            return worst_over_vertices(self, prior)
        probabilities = probability_vector(getattr(prior, "probabilities", prior), "prior", length=self.k)
        if isinstance(prior, Prior) and not isinstance(prior.labels, range):  # matched by label, not by position
            mine = [str(label) for label in self.prior.labels]
            theirs = [str(label) for label in prior.labels]
            if sorted(theirs) != sorted(mine):
                stranger = next(label for label in theirs if label not in set(mine))
                raise ValidationError(f"prior has the label {stranger!r}; its labels must be the design's candidates "
                                      f"({len(mine)} strings), in any order")
            position = {label: index for index, label in enumerate(theirs)}
            probabilities = probabilities[[position[label] for label in mine]]
        induced = induced_priors(Prior(probabilities, labels=self.prior.labels), self.keys[:, 0], self.m,
                                 self.unlisted)
        bounds = [joint_lip_bound(self.on[row] / WORD, self.off[row] / WORD, induced[row]) for row in range(self.d)]
        row = max(range(self.d), key=lambda r: bounds[r][0])
        ratio, side, value = bounds[row]
        return Certificate("LIP", self.epsilon, log_upper(ratio), bool(ratio <= exp_bounds(self.epsilon)[0]), True,
                           {"row": row, "side": side, "value": value, "prior": probabilities.tolist()},
                           arithmetic="50-digit decimal, rounding bounded")

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LIP", self.epsilon, EXACT_TABLE, "every row's unary encoding over its buckets at the prior "
                         "the candidates induce, verified exactly over all 2^m reports (docs/math.md §16.6)")

    def _certify(self) -> Certificate:
        return self._claimed

    def verified_epsilons(self) -> dict[str, float]:
        return dict(self.epsilons)

    def privacy_table(self) -> npt.NDArray[Any]:  # type: ignore[override]  # floats: the unary table's
        """The reports that decide every posterior ratio of the worst row (its unary encoding's table, docs/math.md
        §7.1), for audits; the certificate comes from the exact joint condition, not from this table.

        Returns
        -------
        numpy.ndarray
            m rows (buckets), a column per deciding report and one for the rest.
        """
        row = self._worst_row
        return UnaryEncoding(self.on[row] / WORD, self.off[row] / WORD, LIP(self.epsilon),
                             Prior(self.induced_priors[row], normalize=True)).privacy_table(max_k=self.m)

    def cell_probabilities(self) -> tuple[Any, Any]:
        return self.on / WORD, self.off / WORD

    @cached_property
    def mse(self) -> float:
        """n x the sum of the variances of the candidates' estimated frequencies, users holding the candidates in
        the prior's proportions (the unlisted mass left out; docs/math.md §16.4, §16.6)."""
        return float(self.variance_at(self.prior).sum())

    def summary(self) -> str:
        """The certificate, what it covers, the figure and the baselines the design evaluated (docs/math.md §16.6).

        Returns
        -------
        str
            Lines of text, as the CLI prints them.

        Examples
        --------
        >>> import lipdesign as ld
        >>> print(ld.mechanisms.CountMeanSketchLIP.example().summary())
        CountMeanSketchLIP(epsilon=1.0, a prior over 8 candidates, m=16, d=4, ...)
        PASS: tightest LIP epsilon <= ...
          eps-LIP for every string at the declared prior (8 candidates, unlisted mass 0 ...); LDP ...
          accuracy: n x sum Var of the candidates' frequencies ... (least squares, users in the prior's proportions)
        """
        lines = [super().summary(),
                 f"  eps-LIP for every string at the declared prior ({self.prior.k} candidates, unlisted mass "
                 f"{self.unlisted:g} spread over the buckets); LDP {upward(self.epsilons['LDP'], 4)} whatever the "
                 "prior (eps-LIP implies at most 2 eps-LDP, docs/math.md §2)",
                 f"  accuracy: n x sum Var of the candidates' frequencies {self.mse:.4g} (least squares, users in the "
                 "prior's proportions)"]
        said = {"count-mean sketch (LIP)": "Apple's sketch at LIP eps", "count-mean sketch": "at LDP eps (stronger)",
                "count-mean sketch at 2 eps": "at LDP 2 eps (the level eps-LIP implies at worst)",
                "optimal RR table (LIP)": "the optimal RR table at LIP eps (k listed values only)"}
        if self.baselines:
            lines.append("    beside it, same hashes and decoder: " + ", ".join(
                f"{said.get(name, name)} {figure:.4g}" for name, figure in self.baselines.items()))
        return "\n".join(lines)

    @property
    def baselines(self) -> dict[str, float]:
        """The figures of the alternatives the design evaluated, by name (its provenance)."""
        return dict((self.provenance or {}).get("baselines", {}))

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "prior": self.prior.to_dict(), "on": self.on.tolist(),
                "off": self.off.tolist(), "m": self.m, "d": self.d, "seed": self.seed, "unlisted": self.unlisted,
                "max_bytes": self.max_bytes}

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> Self:
        from lipdesign.mechanisms.base import check_parameter_names

        mechanism = cls(**parameters, provenance=provenance)
        check_parameter_names(parameters, mechanism.parameters(), cls.__name__)
        return mechanism

    def with_candidates(self, candidates: Sequence[str]) -> Self:
        return type(self)(**self.parameters(), candidates=candidates, provenance=self.provenance)

    def __repr__(self) -> str:
        return (f"CountMeanSketchLIP(epsilon={self.epsilon!r}, a prior over {self.prior.k} candidates, m={self.m}, "
                f"d={self.d}, "
                f"seed={self.seed}, unlisted={self.unlisted!r}, on and off: {self.d} x {self.m} thresholds)")

    @classmethod
    def example(cls) -> Self:
        words = ["the", "of", "and", "to", "in", "is", "you", "that"]
        prior = Prior([0.3, 0.2, 0.15, 0.1, 0.1, 0.07, 0.05, 0.03], labels=words)
        flip = round(WORD / (1 + np.exp(0.45)))  # Apple's sketch at LDP 0.9, so LIP < 1 at any prior
        return cls(1.0, prior, np.full((4, 16), WORD - flip), np.full((4, 16), flip), m=16, d=4, seed=7,
                   max_bytes=16)

    def display_name(self) -> str:
        return "count-mean sketch designed for LIP"

    def _perturb(self, values, rng, user_ids):
        """Per chunk of users: the rows, then m words per user, each compared with its cell's threshold."""
        chunks = []
        for start in range(0, len(values), chunk(self.m)):
            data = values[start:start + chunk(self.m)]
            rows = rng.integers(0, self.d, size=len(data)) if self.d > 1 else np.zeros(len(data), int)
            thresholds = np.where(self._filters(data, rows), self.on[rows], self.off[rows])
            words = rng.integers(0, WORD, size=thresholds.shape, dtype=np.uint32)
            chunks.append(self._pack(rows, words < thresholds))
        return np.concatenate(chunks)

    def perturb_memoised(self, values: Any, keys: npt.ArrayLike) -> npt.NDArray[np.uint8]:
        """Reports as devices send them, round after round (docs/math.md §16.5, §16.6): a device's row comes from its
        key, and its report of a value is memoised: bit i is 1 when word i of the value's keyed ChaCha20 stream is
        below its cell's threshold. The same device and value give the same report every round, so any number of
        them are eps-LIP together (one-time RAPPOR with one hash function per cohort, designed under LIP).

        Parameters
        ----------
        values : sequence of str or bytes
            One value per device.
        keys : array_like of uint32, shape (n, 8)
            The devices' secret keys (``device_keys``), the same every round.

        Returns
        -------
        numpy.ndarray
            uint8 reports, as ``perturb`` returns them. Estimate each round's reports on their own: a device's
            rounds share its permanent response, so merged rounds are not independent users and their standard
            errors would be too small.

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> sketch = ld.mechanisms.CountMeanSketchLIP.example()
        >>> keys = sketch.device_keys(3, rng=0)
        >>> first = sketch.perturb_memoised(["the", "of", "the"], keys)
        >>> first.shape, np.array_equal(first, sketch.perturb_memoised(["the", "of", "the"], keys))
        ((3, 4), True)
        """
        return np.concatenate([self._pack(rows, words < np.where(filters, self.on[rows], self.off[rows]))
                               for rows, filters, words in self._memo_words(values, keys)] or [self.empty_reports()])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §12): the thresholds, as in ``parameters()``.

        Returns
        -------
        dict
            ``on`` and ``off``: d lists of m integers below 2^32.

        Examples
        --------
        >>> import lipdesign as ld
        >>> numbers = ld.mechanisms.CountMeanSketchLIP.example().device_numbers()
        >>> len(numbers["on"]), len(numbers["on"][0]), numbers["off"][0][0]
        (4, 16, 1672291757)
        """
        return {"on": self.on.tolist(), "off": self.off.tolist()}

    def audit_plan(self) -> AuditPlan | None:
        """What ``ld.audit`` reads (docs/math.md §14): the worst row of the certificate, the bits of up to
        AUDIT_BUCKETS of its buckets that hold candidates (the worst first, then by increasing induced prior), and a
        class for the reports of every other row; the rows of the plan are the candidates grouped by their bucket
        there (``members``), so the audit compares each with the prior as the LIP claim does.

        Returns
        -------
        AuditPlan or None
            None when ``unlisted`` > 0: the audit samples its populations from the candidates, which would leave out
            the unlisted mass the claim is stated with.

        Examples
        --------
        >>> import lipdesign as ld
        >>> plan = ld.mechanisms.CountMeanSketchLIP.example().audit_plan()
        >>> plan.table.shape, plan.row_names[0]
        ((6, 65), 'bucket 11 of row 0 (is)')
        """
        if self.unlisted > 0:
            return None
        row = self._worst_row
        labels = [str(label) for label in self.prior.labels]
        buckets = np.argmax(self._filters(self.input_domain.validate(labels), np.full(len(labels), row)), axis=1)
        occupied = np.unique(buckets)
        worst = int(self._claimed.worst.get("value", -1))
        order = sorted(occupied, key=lambda b: (b != worst, self.induced_priors[row, b], b))[:AUDIT_BUCKETS]
        read = np.array(order, dtype=np.int64)
        rest = np.flatnonzero(~np.isin(buckets, read))
        groups = [np.flatnonzero(buckets == b) for b in read] + ([rest] if rest.size else [])
        members = np.zeros((len(groups), len(labels)))
        for r, group in enumerate(groups):
            members[r, group] = 1
        on, off = self.on[row, read] / WORD, self.off[row, read] / WORD
        ones = np.array([np.where(read == read[r], on, off) if r < read.size else off for r in range(len(groups))])
        patterns = (np.arange(2**read.size)[:, None] >> np.arange(read.size)) & 1
        table = np.where(patterns[None] == 1, ones[:, None, :], 1 - ones[:, None, :]).prod(axis=2) / self.d
        table = np.column_stack([table, np.full(len(groups), 1 - 1 / self.d)])
        weights = 1 << np.arange(read.size)

        def classify(reports):
            rows, bits = self.unpack(reports)
            return np.where(rows == row, bits[:, read].astype(np.int64) @ weights, 2**read.size)

        names = [f"bucket {b} of row {row} ({labels[group[0]]})" for b, group in zip(read, groups)] + \
            (["the other buckets"] if rest.size else [])
        classes = ["bits " + "".join(map(str, p)) for p in patterns] + ["another row"]
        inputs = np.array([labels[group[0]] for group in groups], dtype=object)
        return AuditPlan(inputs, table, classify, names, classes, members)

