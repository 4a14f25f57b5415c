"""Composition of releases about the same input, and a per-user budget ledger (docs/math.md §13).

``compose(mechanisms, prior=None, notion=None)`` certifies the joint release of independent mechanisms applied
to one user's value: under LDP the budgets add (and for designed tables the joint is computed exactly, pair of
inputs by pair); under LIP they do not, so the joint posterior ratio is computed exactly from the product table
when it is small enough, and otherwise bounded by the parts' LDP epsilons with one part at its LIP epsilon.
``sequential`` and ``sampled`` are the rules of the fixed mechanisms that perturb several attributes (docs/math.md
§9.5, §9.8). ``Ledger`` keeps a user's releases under a total budget. Exact figures are computed on Python
integers (every stored double is an integer times a power of 2) and rounded outward. Numpy and the standard
library only; mechanisms are read through their contract (``guarantee``, ``verify``, ``verified_epsilons``,
``privacy_table``), never imported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.model.prior import Prior
from lipdesign.notions import LDP, LIP
from lipdesign.validation import fmt, integer
from lipdesign.verification.exact import Certificate, integer_entries, log_upper

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import numpy.typing as npt

    #: A mechanism (``ld.Mechanism``), read through its contract: lipdesign.mechanisms is never imported here, not
    #: even for annotations (it imports this module; tests/test_mechanism_contract.py forbids the cycle).
    Mechanism = Any

#: Largest product table (rows x joint outputs) whose joint LIP epsilon is computed exactly; past it the safe bound
#: is used (docs/math.md §13; measured: 0.25 s at the cap for 14 binary tables, 0.02 s for two 4 x 64 tables).
MAX_JOINT_ENTRIES = 2**15

#: How a joint certificate was obtained (``JointCertificate.method``).
EXACT_PRODUCT = "exact product table"
EXACT_PAIRS = "exact pairwise LDP ratios"
LDP_SUM = "sum of LDP budgets"
LIP_BOUND = "safe bound: sum of LDP epsilons, one part at its LIP epsilon"
SAMPLED = "one part drawn independently of the data"

#: The notions of a joint release: LDP, or LIP for X at one prior.
JOINT_NOTIONS = ("LDP", "LIP")


@dataclass(frozen=True)
class JointCertificate(Certificate):
    """A Certificate of several releases about the same input (docs/math.md §13).

    ``epsilon`` bounds the joint epsilon under ``notion`` ("LDP", or "LIP" for X at ``worst["prior"]``);
    ``method`` says how (one of the module's constants EXACT_PRODUCT, EXACT_PAIRS, LDP_SUM, LIP_BOUND, SAMPLED:
    only EXACT_PRODUCT and EXACT_PAIRS give the tightest value), ``parts`` what was used of each release.
    ``compose``, ``sequential`` and ``sampled`` return one.

    Parameters
    ----------
    notion : str
        ``"LDP"`` or ``"LIP"`` (LIP for X).
    claimed_epsilon : float or None
        The joint claim checked, or None (``compose`` checks none).
    epsilon : float
        The joint epsilon, rounded up.
    passed : bool or None
        Whether every part passed and ``epsilon`` is within the claim (None: no claim).
    exact : bool
        Whether every part was verified in exact arithmetic.
    worst : dict, optional
        Where the joint epsilon is attained (the ``outputs`` of each part, the ``inputs`` or the ``prior``), or
        which part the bound took at its LIP epsilon. Default empty.
    arithmetic : str, optional
        As in ``Certificate``; default ``""``.
    method : str, optional
        How the figure was obtained; default ``""``.
    parts : tuple of dict, optional
        What was used of each release (family, notion and epsilons); default empty.

    See Also
    --------
    compose : The joint certificate of several mechanisms.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), [0.5, 0.5])
    >>> joint = ld.compose([mechanism, mechanism])
    >>> joint.method, round(joint.epsilon, 4), len(joint.parts)
    ('exact pairwise LDP ratios', 2.1972, 2)
    >>> joint.worst
    {'inputs': [0, 1], 'outputs': [0, 0]}
    """

    method: str = ""
    parts: tuple[dict[str, Any], ...] = ()

    def summary(self) -> str:
        """One line of text: the verdict, the joint epsilon against the claim, the method, the number of parts and
        the worst place.

        Returns
        -------
        str
            ``"PASS: ..."``, ``"FAIL: ..."`` or ``"no claim: ..."``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), [0.5, 0.5])
        >>> print(ld.compose([mechanism, mechanism]).summary())
        no claim: joint LDP epsilon <= 2.19722457734 (exact pairwise LDP ratios, 2 parts);
        worst at {'inputs': [0, 1], 'outputs': [0, 0]}
        """
        verdict = {True: "PASS", False: "FAIL", None: "no claim"}[self.passed]
        claim = "" if self.claimed_epsilon is None else f" against claimed eps = {self.claimed_epsilon:g}"
        return (f"{verdict}: joint {self.notion} epsilon <= {self.epsilon:.12g}{claim} ({self.method}, "
                f"{len(self.parts)} parts); worst at {self.worst}")

    def to_dict(self) -> dict[str, Any]:
        """The certificate as a JSON-able dict: ``Certificate.to_dict`` with ``method`` and ``parts`` (a list).

        Returns
        -------
        dict
            ``notion``, ``claimed_epsilon``, ``epsilon``, ``passed``, ``exact``, ``worst``, ``method`` and
            ``parts``.
        """
        return {**super().to_dict(), "method": self.method, "parts": [dict(part) for part in self.parts]}


def _sum_up(values):
    """A float >= the exact sum of ``values`` (floats, inf allowed): one value as it is, else the nearest double to
    the rational sum stepped up one ulp (docs/math.md §3.3)."""
    if any(value == math.inf for value in values):
        return math.inf
    total = sum(Fraction(value) for value in values)
    return float(total) if len(values) == 1 else math.nextafter(float(total), math.inf)


def _passed(parts, epsilon, claimed_epsilon):
    return None if claimed_epsilon is None else all(part.passed for part in parts) and epsilon <= claimed_epsilon


def sequential(parts: Iterable[Certificate], claimed_epsilon: float | None = None) -> JointCertificate:
    """Certificate of independent releases, each certified by one of ``parts`` (LDP Certificates): the budgets add
    (docs/math.md §9.8, §13), rounded up; passed against ``claimed_epsilon`` when given.

    The rule of the fixed mechanisms that perturb every attribute (Piecewise and Laplace with d > 1).

    Parameters
    ----------
    parts : iterable of Certificate
        The LDP certificates of the releases (one per release; a certificate may be repeated).
    claimed_epsilon : float, optional
        The joint claim; default None (``passed`` is None).

    Returns
    -------
    JointCertificate
        Method LDP_SUM; ``epsilon`` is the sum of the parts' epsilons, rounded up.

    Raises
    ------
    ValidationError
        ``parts`` is empty, or holds something other than a Certificate, or a certificate not under LDP.

    Examples
    --------
    >>> import lipdesign as ld
    >>> part = ld.verification.verify_table([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1))
    >>> joint = ld.verification.sequential([part, part, part], claimed_epsilon=3.5)
    >>> joint.passed, round(joint.epsilon, 4), joint.method
    (True, 3.2958, 'sum of LDP budgets')
    """
    parts = _certificates(parts, "LDP")
    epsilon = _sum_up([part.epsilon for part in parts])
    largest = max(parts, key=lambda part: part.epsilon)
    worst = dict(largest.worst, parts=len(parts), part_epsilon=largest.epsilon)
    return JointCertificate("LDP", claimed_epsilon, epsilon, _passed(parts, epsilon, claimed_epsilon),
                            all(part.exact for part in parts), worst, method=LDP_SUM,
                            parts=tuple({"epsilon": part.epsilon} for part in parts))


def sampled(parts: Sequence[Certificate], claimed_epsilon: float | None = None) -> JointCertificate:
    """Certificate of ONE of ``parts`` (Certificates of one notion) drawn independently of the data, with the
    index drawn published: the largest of their epsilons (docs/math.md §9.5, §13); passed against
    ``claimed_epsilon`` when given.

    The rule of the fixed mechanisms that sample one attribute to perturb (Harmony over mixed attributes).

    Parameters
    ----------
    parts : sequence of Certificate
        The certificates of the releases one of which is drawn, all under the notion of the first.
    claimed_epsilon : float, optional
        The claim; default None (``passed`` is None).

    Returns
    -------
    JointCertificate
        Method SAMPLED, under the parts' notion; ``worst`` names the ``part`` with the largest epsilon.

    Raises
    ------
    ValidationError
        ``parts`` is empty, or holds something other than a Certificate, or certificates of different notions.

    Examples
    --------
    >>> import lipdesign as ld
    >>> first = ld.verification.verify_table([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1))
    >>> second = ld.verification.verify_table([[0.6, 0.4], [0.4, 0.6]], ld.LDP(1.1))
    >>> joint = ld.verification.sampled([first, second], claimed_epsilon=1.1)
    >>> joint.passed, round(joint.epsilon, 4), joint.worst["part"]
    (True, 1.0986, 0)
    """
    parts = _certificates(parts, parts[0].notion if parts else "")
    largest = max(parts, key=lambda part: part.epsilon)
    worst = dict(largest.worst, part=parts.index(largest))
    return JointCertificate(largest.notion, claimed_epsilon, largest.epsilon,
                            _passed(parts, largest.epsilon, claimed_epsilon), all(part.exact for part in parts),
                            worst, method=SAMPLED, parts=tuple({"epsilon": part.epsilon} for part in parts))


def _certificates(parts: Iterable[Any], notion: str) -> list[Certificate]:
    parts = list(parts)
    if not parts:
        raise ValidationError("parts is empty; a composition needs at least one certified part")
    for index, part in enumerate(parts):
        if not isinstance(part, Certificate):
            raise ValidationError(f"parts[{index}] is a {type(part).__name__}; it must be a Certificate")
        if part.notion != notion:
            raise ValidationError(f"parts[{index}] is certified under {part.notion}; these parts compose under "
                                  f"{notion}")
    return parts


# -- the parts of a joint release -------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Part:
    """What ``compose`` uses of one mechanism: its LDP epsilon, its LIP epsilon for X at its design prior (None
    under LDP), its design prior, and its table over the input values when it has one (designed tables)."""

    mechanism: Mechanism
    ldp: float
    lip: float | None
    prior: Prior | None
    exact: bool
    memoised: int = 0  # how many memoised releases of the mechanism this part stands for (docs/math.md §19.1)

    def describe(self, lip):
        figures = {"family": self.mechanism.family, "notion": self.mechanism.guarantee.notion, "LDP": self.ldp}
        if self.memoised:
            figures["memoised releases"] = self.memoised
        return figures if lip is None else {**figures, "LIP for X": lip}


def _part(mechanism, index):
    field = f"mechanisms[{index}]"
    guarantee = getattr(mechanism, "guarantee", None)
    if guarantee is None or not hasattr(mechanism, "input_domain"):
        raise ValidationError(f"{field} is a {type(mechanism).__name__}; it must be an ld.Mechanism")
    if not mechanism.finite:  # a closed form: its claim is all there is
        if guarantee.notion != "LDP":
            raise ValidationError(f"{field} is {guarantee.notion} by a closed form; compose takes closed forms "
                                  "under LDP only")
        return _Part(mechanism, guarantee.epsilon, None, None, exact=False)
    certificate = mechanism.verify()
    if not certificate.passed:
        raise ValidationError(f"{field} fails its own claim ({certificate.summary()}); it cannot be composed")
    if guarantee.notion == "LDP":
        return _Part(mechanism, certificate.epsilon, None, getattr(mechanism, "prior", None), exact=True)
    epsilons = mechanism.verified_epsilons()
    if "LIP for X" not in epsilons:
        raise ValidationError(f"{field} is {guarantee.notion} and records no verified 'LIP for X' epsilon "
                              f"(verified_epsilons() is {fmt(epsilons)}); compose needs it")
    lip = epsilons["LIP for X"]
    # eps-LIP for X at a full-support prior (every LIP design has one) implies 2 eps-LDP (docs/math.md §2)
    ldp = epsilons.get("LDP", 2 * lip)
    return _Part(mechanism, ldp, lip, mechanism.prior, exact=True)


def _parts(mechanisms):
    if isinstance(mechanisms, (str, bytes)) or not hasattr(mechanisms, "__iter__"):
        raise ValidationError(f"mechanisms is {fmt(mechanisms)}; it must be a list of mechanisms")
    parts = [_part(mechanism, index) for index, mechanism in enumerate(mechanisms)]
    if not parts:
        raise ValidationError("mechanisms is empty; a joint release needs at least one mechanism")
    domains = [_domain(part.mechanism) for part in parts]
    for index, domain in enumerate(domains):
        if domain != domains[0]:
            raise ValidationError(f"mechanisms[{index}] takes {_describe(domain)} and mechanisms[0] takes "
                                  f"{_describe(domains[0])}; a joint release perturbs the same input")
    named = [(index, labels) for index, labels in enumerate(_labels(part.mechanism) for part in parts) if labels]
    for index, labels in named[1:]:
        if labels != named[0][1]:
            raise ValidationError(f"mechanisms[{index}] has labels {list(labels)} and mechanisms[{named[0][0]}] "
                                  f"{list(named[0][1])}; their rows are combined value by value, so named labels "
                                  "must be the same in the same order (mechanisms without labels take the indices)")
    return parts


def _memoised_flags(memoised, count):
    if isinstance(memoised, bool):
        return [memoised] * count
    flags = list(memoised) if isinstance(memoised, (list, tuple)) else None
    if flags is None or len(flags) != count or not all(isinstance(flag, bool) for flag in flags):
        raise ValidationError(f"memoised is {fmt(memoised)}; it must be True, False or one bool per mechanism "
                              f"({count})")
    return flags


def _permanent_epsilon(part, index):
    """The certified epsilon of any number of memoised reports of one value (docs/math.md §16.5, §19.1): the
    permanent stage's certificate, or one report's for a mechanism whose memoised reports repeat exactly."""
    mechanism = part.mechanism
    certify = getattr(mechanism, "permanent_certificate", None)
    if certify is None and hasattr(mechanism, "perturb_memoised"):
        return part.ldp  # one-time reports: every round sends the same report
    if certify is None:
        raise ValidationError(f"memoised[{index}] is True and mechanisms[{index}] ({mechanism.family}) draws fresh "
                              "reports every round; only families with perturb_memoised memoise")
    certificate = certify()
    epsilon, passed = ((certificate.epsilon, certificate.passed) if isinstance(certificate, Certificate) else
                       (certificate["epsilon"], certificate["passed"]))
    if not passed:
        raise ValidationError(f"mechanisms[{index}] fails its own unbounded-reports claim; it cannot be composed")
    if isinstance(certificate, Certificate) and certificate.notion != "LDP":  # an LIP claim: its LDP figure caps LDP
        return mechanism.verified_epsilons()["permanent LDP"]
    return epsilon


def _memoised_lip(part, count):
    """LIP for X of ``count`` memoised reports: one report's, or, for more, the permanent stage's at the same prior
    (docs/math.md §19.1; a mechanism whose memoised reports repeat exactly: one report's)."""
    if part.lip is None or count == 1 or not hasattr(part.mechanism, "permanent_certificate"):
        return part.lip
    return part.mechanism.verified_epsilons()["permanent LIP for X"]


def _grouped(parts, flags):
    """Memoised releases of one mechanism merged into one part of LDP epsilon min(R eps, eps_permanent), R the
    releases (docs/math.md §19.1); the other parts as they are."""
    merged: list[_Part] = []
    groups: dict[str, tuple[int, int, int]] = {}  # fingerprint -> (position in merged, releases, first index)
    for index, (part, flag) in enumerate(zip(parts, flags)):
        if not flag:
            merged.append(part)
        elif part.mechanism.fingerprint in groups:
            position, count, first = groups[part.mechanism.fingerprint]
            groups[part.mechanism.fingerprint] = (position, count + 1, first)
        else:
            groups[part.mechanism.fingerprint] = (len(merged), 1, index)
            merged.append(part)
    for position, count, first in groups.values():
        part = merged[position]
        ldp = min(_sum_up([part.ldp] * count), _permanent_epsilon(part, first))
        merged[position] = replace(part, ldp=ldp, lip=_memoised_lip(part, count), memoised=count)
    return merged


def _labels(mechanism):
    """The named labels of a categorical input domain (None for the default indices or a numeric domain)."""
    labels = mechanism.input_domain.to_dict().get("labels")
    return None if labels is None else tuple(labels)


def _domain(mechanism):
    """The input domain without its labels: ("categorical", k), ("box", d) or ("mixed", attributes)."""
    described = mechanism.input_domain.to_dict()
    return tuple(value if not isinstance(value, list) else tuple(value) for key, value in described.items()
                 if key != "labels")


def _describe(domain):
    kind, size = domain
    if kind == "categorical":
        return f"{size} values"
    return f"vectors of {size} numbers" if kind == "box" else f"tuples {list(size)}"


def _joint_kind(parts, notion):
    kinds = sorted({"LDP" if part.lip is None else "LIP" for part in parts})
    if notion is None:
        if len(kinds) > 1:
            raise ValidationError("notion is None and the mechanisms are under both LDP and LIP; pass notion='LDP' "
                                  "(each LIP part at its LDP epsilon) or notion='LIP' (LIP for X at the prior)")
        return kinds[0]
    if notion not in JOINT_NOTIONS:
        raise ValidationError(f"notion is {fmt(notion)}; the joint release is certified under one of "
                              f"{', '.join(map(repr, JOINT_NOTIONS))}")
    return notion


def _joint_prior(parts: Any, prior: Any) -> Prior:
    k = _domain(parts[0].mechanism)
    if k[0] != "categorical":
        raise ValidationError(f"notion is 'LIP'; LIP needs a prior over categorical values and these mechanisms "
                              f"take {_describe(k)}")
    if prior is None:
        designed = [(index, part.prior) for index, part in enumerate(parts) if part.prior is not None]
        if not designed:
            raise ValidationError("prior is None and none of the mechanisms has a design prior; the joint LIP "
                                  "epsilon depends on the prior: pass prior=")
        first, prior = designed[0]
        for index, other in designed[1:]:
            if not np.array_equal(other.probabilities, prior.probabilities):
                raise ValidationError(f"prior is None and mechanisms[{first}] and mechanisms[{index}] have different "
                                      f"design priors ({fmt(prior.probabilities)} and {fmt(other.probabilities)}); "
                                      "pass prior= to say at which prior the joint LIP is wanted")
        return prior
    prior = prior if isinstance(prior, Prior) else Prior(prior)
    if prior.k != k[1]:
        raise ValidationError(f"prior has {prior.k} values; it must have one per value of the mechanisms ({k[1]})")
    return prior


def _input_tables(parts):
    """The parts' tables over the input values (rows x), or None unless every part is a designed table (the
    privacy tables of the fixed mechanisms are reductions whose rows are not the inputs, docs/math.md §3.2)."""
    if any(part.mechanism.family != "table" for part in parts):
        return None
    tables: dict[int, np.ndarray] = {}  # one array per mechanism, so that repeated reports are recognised (_counted)
    return [tables.setdefault(id(part.mechanism), np.asarray(part.mechanism.privacy_table(), dtype=float))
            for part in parts]


# -- exact arithmetic on integers ---------------------------------------------------------------------------------
def _largest_ratio(numerators, denominators):
    """(numerator, denominator, position) of the largest numerators / denominators along the last axis of two
    object arrays of non-negative Python integers, compared exactly by cross-multiplication in a tournament of
    halves; a / 0 is infinite for a > 0 (returned as 1 / 0) and 0 / 0 counts as 0."""
    numerators, denominators = np.broadcast_arrays(numerators, denominators)
    infinite = (denominators == 0) & (numerators > 0)
    blank = denominators == 0
    numerators, denominators = _with(numerators, blank, 0), _with(denominators, blank, 1)
    position = np.broadcast_to(np.arange(numerators.shape[-1]), numerators.shape)
    while numerators.shape[-1] > 1:
        if numerators.shape[-1] % 2:  # a last entry 0 / 1 never wins
            numerators, denominators = _padded(numerators, 0), _padded(denominators, 1)
            position = np.concatenate([position, np.zeros((*position.shape[:-1], 1), dtype=int)], axis=-1)
        second = numerators[..., 1::2] * denominators[..., 0::2] > numerators[..., 0::2] * denominators[..., 1::2]
        numerators = np.where(second, numerators[..., 1::2], numerators[..., 0::2])
        denominators = np.where(second, denominators[..., 1::2], denominators[..., 0::2])
        position = np.where(second, position[..., 1::2], position[..., 0::2])
    numerators, denominators, position = numerators[..., 0], denominators[..., 0], position[..., 0]
    some = infinite.any(axis=-1)
    if some.any():
        numerators, denominators = _with(numerators, some, 1), _with(denominators, some, 0)
        position = np.where(some, infinite.argmax(axis=-1), position)
    return numerators, denominators, position


def _with(array, where, value):
    """A copy of the object array with ``value`` (a Python int, not a numpy one) where ``where`` holds."""
    array = np.array(array, dtype=object)
    array[where] = value
    return array


def _padded(array, value):
    return np.concatenate([array, np.full((*array.shape[:-1], 1), value, dtype=object)], axis=-1)


def _ratio(numerator, denominator):
    return math.inf if denominator == 0 else Fraction(int(numerator), int(denominator))


def _joint_lip(tables, prior):
    """(largest ratio, worst place) of LIP for X at ``prior`` over the product table of ``tables`` (docs/math.md
    §13): q[x] = prod_i Q_i[x, y_i], ratios q[x] / P.q and P.q / q[x], exactly."""
    joint: np.ndarray | None = None
    sums: np.ndarray | None = None
    for table in tables:
        numbers = integer_entries(table)
        row_sums = numbers.sum(axis=1)
        joint = numbers if joint is None else (joint[:, :, None] * numbers[:, None, :]).reshape(len(numbers), -1)
        sums = row_sums if sums is None else sums * row_sums
    # set by the first table: there is at least one (_parts refuses an empty list of mechanisms)
    joint, sums = cast(np.ndarray, joint), cast(np.ndarray, sums)
    # q[x, c] = joint[x, c] / sums[x]: bring the rows to their least common denominator
    common = math.lcm(*(int(s) for s in sums))
    joint = joint * np.array([common // int(s) for s in sums], dtype=object)[:, None]
    weights = integer_entries(prior.probabilities)
    total = int(weights.sum())  # P = weights / total
    mass = weights @ joint  # total x P.q, in the same units as joint
    high, low = joint.max(axis=0), joint.min(axis=0)
    upper = _largest_ratio((high * total)[None], mass[None])
    lower = _largest_ratio(mass[None], (low * total)[None])
    candidates = []
    for side, (numerator, denominator, column), extreme in (("upper", upper, np.argmax), ("lower", lower, np.argmin)):
        column = int(column[0])
        ratio = _ratio(numerator[0], denominator[0])
        outputs = np.unravel_index(column, [table.shape[1] for table in tables])
        value = int(extreme(joint[:, column]))
        candidates.append((ratio, {"outputs": [int(y) for y in outputs], "value": value, "side": side,
                                   "prior": prior.probabilities.tolist()}))
    return max(candidates, key=lambda candidate: candidate[0])


def _pairwise_ldp(tables):
    """(largest ratio, worst place) of LDP over the product table of ``tables`` without building it: for inputs
    x, x' the largest joint ratio is the product over parts of max_y Q_i[x, y] / Q_i[x', y] (docs/math.md §13);
    a table repeated n times contributes its ratios to the power n."""
    numerator: np.ndarray | int = 1
    denominator: np.ndarray | int = 1
    outputs: list[np.ndarray] = []
    for table, count in _counted(tables):
        numbers = integer_entries(table)
        sums = numbers.sum(axis=1)
        # Q[x, y] / Q[x', y] = (numbers[x, y] sums[x']) / (numbers[x', y] sums[x]), for every pair (x, x')
        top, bottom, where = _largest_ratio(numbers[:, None, :], numbers[None, :, :])
        numerator = numerator * (top * sums[None, :]) ** count
        denominator = denominator * (bottom * sums[:, None]) ** count
        outputs += [where] * count
    # arrays after the first table: there is at least one (_parts refuses an empty list of mechanisms)
    numerator, denominator = cast(np.ndarray, numerator), cast(np.ndarray, denominator)
    top, bottom, flat = _largest_ratio(numerator.reshape(1, -1), denominator.reshape(1, -1))
    x, z = np.unravel_index(int(flat[0]), numerator.shape)
    return _ratio(top[0], bottom[0]), {"inputs": [int(x), int(z)], "outputs": [int(where[x, z]) for where in outputs]}


def _counted(tables):
    """(table, how many times it occurs in a row) for a list of tables (repeated reports of one mechanism)."""
    runs: list[list[Any]] = []  # [table, count]
    for table in tables:
        if runs and runs[-1][0] is table:
            runs[-1][1] += 1
        else:
            runs.append([table, 1])
    return runs


def _bound(parts, prior):
    """min over j of (LIP_j + sum over i != j of LDP_i), the sound joint LIP bound of docs/math.md §13 (a part's LIP
    epsilon counts only at its own design prior; elsewhere its LDP epsilon stands in), rounded up."""
    lips = [part.lip if part.lip is not None and part.prior is not None and
            np.array_equal(part.prior.probabilities, prior.probabilities) else part.ldp for part in parts]
    ldps = [part.ldp for part in parts]
    infinite = sum(value == math.inf for value in ldps)
    finite = sum(Fraction(value) for value in ldps if value != math.inf)
    best: float | Fraction = math.inf
    chosen = 0
    for j, (lip, ldp) in enumerate(zip(lips, ldps)):
        if lip == math.inf or infinite - (ldp == math.inf) > 0:
            continue
        candidate = Fraction(lip) + finite - (Fraction(ldp) if ldp != math.inf else 0)
        if candidate < best:
            best, chosen = candidate, j
    if best == math.inf:
        return math.inf, chosen, lips
    return (float(best) if len(parts) == 1 else math.nextafter(float(best), math.inf)), chosen, lips


def compose(mechanisms: Iterable[Mechanism], prior: Prior | npt.ArrayLike | None = None, *, notion: str | None = None,
            max_entries: int = MAX_JOINT_ENTRIES, memoised: bool | Sequence[bool] = False) -> JointCertificate:
    """JointCertificate of releasing every mechanism in ``mechanisms`` on the same input, with independent
    randomness (docs/math.md §13). ``notion``: "LDP" or "LIP" (LIP for X at ``prior``); default the mechanisms'
    common notion (a mix of LDP and LIP parts needs it said). ``prior`` (LIP only): a Prior or probabilities,
    default the mechanisms' common design prior.

    LDP: exact pairwise ratios when every part is a designed table (the tightest joint epsilon, which can be below
    the sum), else the sum of the parts' LDP epsilons (an LIP part's verified LDP epsilon, at most 2 eps). LIP: the
    exact product table when every part is a designed table and rows x joint outputs <= ``max_entries``, else the
    safe bound. No claim is checked (``passed`` is None); exact figures are rounded up.

    Parameters
    ----------
    mechanisms : iterable of Mechanism
        The mechanisms released, each on the same input (the same domain; named labels the same, in the same
        order). A mechanism may be listed several times (repeated reports). Each must pass its own verification.
    prior : Prior or array_like, optional
        LIP only: the prior at which the joint LIP for X is wanted; default the mechanisms' common design prior.
    notion : str, optional
        ``"LDP"`` or ``"LIP"``; default the mechanisms' common notion.
    max_entries : int, default MAX_JOINT_ENTRIES
        The largest product table (rows x joint outputs) computed exactly under LIP; 0 never builds it.
    memoised : bool or sequence of bool, default False
        Which releases are memoised reports (``perturb_memoised``) of one value: True for all, or one bool per
        mechanism. The memoised releases of one mechanism count together as min(R eps, eps_permanent) (docs/math.md
        §19.1), never more than its permanent response reveals.

    Returns
    -------
    JointCertificate
        The joint epsilon, how it was obtained (``method``) and what was used of each part (``parts``).

    Raises
    ------
    ValidationError
        An empty list or something that is not a mechanism; a mechanism failing its own claim; mechanisms of
        different input domains or labels; a mix of LDP and LIP parts without ``notion``; a ``prior`` under LDP;
        under LIP, a numeric domain, no prior to use, different design priors without ``prior``, or a prior of the
        wrong size.

    See Also
    --------
    Ledger : A per-user budget that composes each release with the ones before.

    Examples
    --------
    >>> import lipdesign as ld
    >>> table = [[0.75, 0.25], [0.25, 0.75]]
    >>> ldp = ld.TableMechanism(table, ld.LDP(1.1), [0.5, 0.5])
    >>> joint = ld.compose([ldp, ldp])
    >>> joint.method, round(joint.epsilon, 4)
    ('exact pairwise LDP ratios', 2.1972)

    Under LIP the budgets do not add: two reports of a part of LIP epsilon 0.8755 have a joint epsilon of 1.8871
    (the product table), or at most 1.9741 by the safe bound:

    >>> lip = ld.TableMechanism(table, ld.LIP(1.0), [0.7, 0.3])
    >>> round(lip.verify().epsilon, 4)
    0.8755
    >>> joint = ld.compose([lip, lip])
    >>> joint.method, round(joint.epsilon, 4)
    ('exact product table', 1.8871)
    >>> round(ld.compose([lip, lip], max_entries=0).epsilon, 4)
    1.9741
    >>> ld.compose([ldp, lip])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: notion is None and the mechanisms are under both LDP and LIP; ...
    >>> round(ld.compose([ldp, lip], notion="LDP").epsilon, 4)
    2.1972

    Thirty memoised rounds of L-GRR count as its permanent response, not as thirty reports:

    >>> rounds = ld.mechanisms.LongitudinalGRR(0.5, 2.0, k=4)
    >>> round(ld.compose([rounds] * 30).epsilon, 4), round(ld.compose([rounds] * 30, memoised=True).epsilon, 4)
    (15.0, 2.0)
    """
    max_entries = integer(max_entries, "max_entries", low=0)  # 0: never build the product table
    parts = _parts(mechanisms)
    parts = _grouped(parts, _memoised_flags(memoised, len(parts)))
    kind = _joint_kind(parts, notion)
    tables = _input_tables(parts)
    exact = all(part.exact for part in parts)
    if kind == "LDP":
        if prior is not None:
            raise ValidationError(f"prior is {fmt(getattr(prior, 'probabilities', prior))}; the joint LDP epsilon "
                                  "does not depend on a prior (pass notion='LIP' for LIP at that prior)")
        described = tuple(part.describe(None) for part in parts)
        if tables is not None:
            ratio, worst = _pairwise_ldp(tables)
            return JointCertificate("LDP", None, log_upper(ratio) if ratio else 0.0, None, exact, worst,
                                    method=EXACT_PAIRS, parts=described)
        epsilon = _sum_up([part.ldp for part in parts])
        return JointCertificate("LDP", None, epsilon, None, exact, {}, method=LDP_SUM, parts=described)
    prior = _joint_prior(parts, prior)
    if tables is not None and tables[0].shape[0] * math.prod(table.shape[1] for table in tables) <= max_entries:
        ratio, worst = _joint_lip(tables, prior)
        described = tuple(part.describe(part.lip) for part in parts)
        return JointCertificate("LIP", None, log_upper(ratio) if ratio else 0.0, None, exact, worst,
                                method=EXACT_PRODUCT, parts=described)
    epsilon, chosen, lips = _bound(parts, prior)
    worst = {"part at its LIP epsilon": chosen, "prior": prior.probabilities.tolist()}
    return JointCertificate("LIP", None, epsilon, None, exact, worst, method=LIP_BOUND,
                            parts=tuple(part.describe(lip) for part, lip in zip(parts, lips)))


class Ledger:
    """A per-user privacy budget for repeated collection (docs/math.md §13).

    The releases spent so far and their joint epsilon under ``total`` (``ld.LDP(eps)``, or ``ld.LIP(eps)`` for X
    at ``prior``, default the mechanisms' common design prior), computed by ``compose``. Under LDP the budgets add;
    under LIP the joint figure of the releases is used (exact while the product table is small, the safe bound
    beyond), so ``remaining`` is only a guide there: ``reports_allowed`` says what fits.

    Parameters
    ----------
    total : LDP or LIP
        The budget: ``ld.LDP(eps)``, or ``ld.LIP(eps)`` for X (no secret model and no prior set).
    prior : Prior or array_like, optional
        LIP only: the prior of the budget; default the mechanisms' common design prior.

    Raises
    ------
    ValidationError
        ``total`` is not ``ld.LDP`` or a plain ``ld.LIP``, or a ``prior`` is given with an LDP budget.

    See Also
    --------
    compose : The joint certificate of a list of releases.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), [0.5, 0.5])
    >>> ledger = ld.Ledger(ld.LDP(3.0))
    >>> ledger.reports_allowed(mechanism)
    2
    >>> certificate = ledger.spend(mechanism)
    >>> round(ledger.spent, 4), round(ledger.remaining, 4), ledger.reports_allowed(mechanism)
    (1.0986, 1.9014, 1)
    >>> ledger
    Ledger(LDP total 3: 1 releases, spent 1.09861228867)
    """

    def __init__(self, total: LDP | LIP, prior: Prior | npt.ArrayLike | None = None) -> None:
        if not isinstance(total, (LDP, LIP)) or isinstance(total, LIP) and (total.secret or total.prior_set):
            raise ValidationError(f"total is {total!r}; a ledger's budget is ld.LDP(eps) or ld.LIP(eps) (for X, at "
                                  "one prior)")
        if prior is not None and isinstance(total, LDP):
            raise ValidationError(f"prior is {fmt(getattr(prior, 'probabilities', prior))}; an LDP budget does not "
                                  "depend on a prior")
        self.total = total
        self.prior = prior
        self._releases: list[Mechanism] = []
        self._memoised: list[bool] = []  # whether each release was a memoised report (docs/math.md §19.1)

    @property
    def releases(self) -> tuple[Mechanism, ...]:
        """The mechanisms spent so far, in order.

        Returns
        -------
        tuple of Mechanism
            One entry per ``spend``.
        """
        return tuple(self._releases)

    def joint(self, mechanisms: Iterable[Mechanism], memoised: bool | Sequence[bool] = False) -> JointCertificate:
        """The JointCertificate of ``mechanisms`` under the ledger's notion and prior.

        Parameters
        ----------
        mechanisms : iterable of Mechanism
            The releases (those spent are not added: pass ``[*ledger.releases, ...]`` for them).
        memoised : bool or sequence of bool, default False
            Which of them are memoised reports (``compose``).

        Returns
        -------
        JointCertificate
            ``compose(mechanisms, prior, notion=total.kind)``.

        Raises
        ------
        ValidationError
            As ``compose``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), [0.5, 0.5])
        >>> ledger = ld.Ledger(ld.LDP(3.0))
        >>> round(ledger.joint([mechanism, mechanism]).epsilon, 4)
        2.1972
        """
        return compose(mechanisms, None if self.total.kind == "LDP" else self.prior, notion=self.total.kind,
                       memoised=memoised)

    @property
    def spent(self) -> float:
        """The joint epsilon of the releases so far (0.0 before the first).

        Returns
        -------
        float
            The epsilon of ``joint(releases)``.
        """
        return self.joint(self._releases, self._memoised).epsilon if self._releases else 0.0

    @property
    def remaining(self) -> float:
        """total - spent, rounded down (0.0 when nothing is left).

        Returns
        -------
        float
            The budget left (a guide under LIP, where budgets do not add).
        """
        left = Fraction(self.total.epsilon) - Fraction(self.spent)
        value = float(left)
        return max(0.0, math.nextafter(value, -math.inf) if value > left else value)

    def fits(self, mechanisms: Mechanism | list[Mechanism] | tuple[Mechanism, ...], *, memoised: bool = False
             ) -> bool:
        """Whether releasing ``mechanisms`` (one mechanism or a list) after the ones spent keeps the joint epsilon
        within the total.

        Parameters
        ----------
        mechanisms : Mechanism, or list or tuple of Mechanism
            The releases considered (nothing is recorded).
        memoised : bool, default False
            They are memoised reports of the same value (docs/math.md §19.1).

        Returns
        -------
        bool
            True when the joint epsilon with them is at most the total.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), [0.5, 0.5])
        >>> ledger = ld.Ledger(ld.LDP(3.0))
        >>> ledger.fits(mechanism), ledger.fits([mechanism] * 3)
        (True, False)
        """
        mechanisms = list(mechanisms) if isinstance(mechanisms, (list, tuple)) else [mechanisms]
        flags = [*self._memoised, *[memoised] * len(mechanisms)]
        return self.joint([*self._releases, *mechanisms], flags).epsilon <= self.total.epsilon

    def spend(self, mechanism: Mechanism, *, memoised: bool = False) -> JointCertificate:
        """Record one release of ``mechanism`` and return the new joint certificate; ValidationError, recording
        nothing, if it would exceed the total.

        Parameters
        ----------
        mechanism : Mechanism
            The mechanism released once more.
        memoised : bool, default False
            The release is a memoised report (``perturb_memoised``) of the value the earlier memoised releases of
            this mechanism reported: one round of a longitudinal collection. Those releases together count
            min(R eps, eps_permanent), never more than the permanent response reveals (docs/math.md §19.1). The
            ledger groups memoised releases by mechanism, not by value: once a device's value changes, its reports
            on the new value draw a new permanent response, so record them with memoised=False (each at eps).

        Returns
        -------
        JointCertificate
            The joint certificate of every release, this one included.

        Raises
        ------
        ValidationError
            The release would bring the joint epsilon above the total (nothing is recorded), or as ``compose``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), [0.5, 0.5])
        >>> ledger = ld.Ledger(ld.LDP(2.5))
        >>> round(ledger.spend(mechanism).epsilon, 4), round(ledger.spend(mechanism).epsilon, 4)
        (1.0986, 2.1972)
        >>> ledger.spend(mechanism)
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: mechanism is TableMechanism(...); releasing it would bring the joint LDP
        epsilon to 3.295836866 (exact pairwise LDP ratios), above the total 2.5 (spent so far: 2.19722457734)
        >>> len(ledger.releases)
        2
        """
        certificate = self.joint([*self._releases, mechanism], [*self._memoised, bool(memoised)])
        if certificate.epsilon > self.total.epsilon:
            raise ValidationError(f"mechanism is {mechanism!r}; releasing it would bring the joint {self.total.kind} "
                                  f"epsilon to {certificate.epsilon:.12g} ({certificate.method}), above the total "
                                  f"{self.total.epsilon:g} (spent so far: {self.spent:.12g})")
        self._releases.append(mechanism)
        self._memoised.append(bool(memoised))
        return certificate

    def reports_allowed(self, mechanism: Mechanism, *, memoised: bool = False) -> int | float:
        """How many more reports of ``mechanism`` fit within the total (math.inf for one that reveals nothing, or for
        memoised reports whose permanent response fits).

        The joint epsilon never decreases with another report (dropping a report is post-processing), so the
        count is found by doubling and bisection.

        Parameters
        ----------
        mechanism : Mechanism
            The mechanism to be reported again.
        memoised : bool, default False
            The reports are memoised reports of one value (docs/math.md §19.1).

        Returns
        -------
        int or float
            The number of further reports that fit (0 when none does), or ``math.inf``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LIP(1.0), [0.7, 0.3])
        >>> ld.Ledger(ld.LIP(2.0)).reports_allowed(mechanism)
        2

        The same budget under LDP, where each report counts at its LDP epsilon (ln 3):

        >>> ld.Ledger(ld.LDP(2.0)).reports_allowed(mechanism)
        1

        Memoised rounds of L-GRR fit without end once its permanent response does:

        >>> rounds = ld.mechanisms.LongitudinalGRR(0.5, 2.0, k=4)
        >>> ledger = ld.Ledger(ld.LDP(3.0))
        >>> ledger.reports_allowed(rounds), ledger.reports_allowed(rounds, memoised=True)
        (6, inf)
        """
        if not self.fits([mechanism], memoised=memoised):
            return 0
        one = compose([mechanism], notion="LDP").epsilon
        if one == 0:  # its reports do not depend on the input
            return math.inf
        if memoised:  # past ceil(eps_permanent / eps) + 1 releases the group's epsilon no longer grows
            enough = math.ceil(_permanent_epsilon(_part(mechanism, 0), 0) / one) + 1
            if self.fits([mechanism] * enough, memoised=True):
                return math.inf
        low, high = 1, 2
        while self.fits([mechanism] * high, memoised=memoised):
            low, high = high, 2 * high
        while high - low > 1:  # low fits, high does not
            middle = (low + high) // 2
            low, high = (middle, high) if self.fits([mechanism] * middle, memoised=memoised) else (low, middle)
        return low

    def __repr__(self):
        return (f"Ledger({self.total.kind} total {self.total.epsilon:g}: {len(self._releases)} releases, spent "
                f"{self.spent:.12g})")
