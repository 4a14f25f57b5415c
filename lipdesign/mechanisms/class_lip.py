"""Class-symmetric LIP designs (family "class-lip"): the optimum at a prior whose values fall into a few classes of
equal probability, at any k (docs/math.md §11, "Class-symmetric designs").

When the prior gives the n_c values of class c the same probability p_c, an A-optimal eps-LIP design can be taken
invariant under the permutations within classes (the problem is, and it is convex), so it is a mixture of orbits of
slice vertices. A vertex is named by its free class f and its counts h_c of values at e^eps per class (the rest at
e^-eps, one value of class f at the free level z that makes P . r = 1). A report is (o, z, H): the orbit o, the free
value z (of class f_o) and the values H at e^eps (h_oc of class c). ``SubsetLIP`` is the case of one class and one
orbit.

Sampling for a user of value x in class c, with two uniforms: the orbit from class c's thresholds, Pr[o | c] =
w_o S_oc / n_c (S_oc the orbit's class sum); then x's case in the output: free, high or low with probabilities
proportional to z_o [f_o = c], e h_oc and e^-eps (n_c - h_oc - [f_o = c]); then z uniform among class f_o's values
(other than x, unless x is z) and each class's high values uniform among the values left (``random_subsets``,
exactly uniform). Both draws are thresholds on numpy's 2^-53 grid, so the realised probability of an output is
Pr[o | c] Pr[case | o, c] / (the number of outputs of o in which x has that case), a rational the certificate uses.

Reports: 16 bits of orbit index, then 2k bits (H, then the one-hot z), packed 8 to a byte. Aggregates: per orbit,
the number of reports and the bit sums. Numpy and the standard library only.
"""

from __future__ import annotations

import math
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.errors import ValidationError, VerificationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee, worst_over_vertices
from lipdesign.mechanisms.bitsums import packed_column_sums
from lipdesign.mechanisms.postprocess import consistent
from lipdesign.mechanisms.sampling import realized_probability
from lipdesign.mechanisms.subset import BLOCK_POSITIONS, SubsetFamily, design_lines, pack_bits, random_subsets
from lipdesign.model import Prior, PriorSet
from lipdesign.notions import LIP
from lipdesign.validation import integer, probability_vector, real_number
from lipdesign.verification import Certificate, exp_bounds, log_upper

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Self

    import numpy.typing as npt

#: Largest number of orbits (the orbit index is 16 bits) and of classes of a class-symmetric design.
MAX_ORBITS = 2**16 - 1
MAX_CLASSES = 256

#: Largest k: the exact variance forms a k x k matrix.
MAX_CLASS_K = 2048

CASES = ("free", "high", "low")

#: The vertices' levels sit this far (relative) inside e^+-eps: an orbit's probability given a class, w S_c/n_c >=
#: w e^-eps, is realised on the 2^-53 grid within 2^-53/(w e^-eps) of itself relative, which the margin must cover
#: (``min_orbit_weight``); 1e-8 costs about 1e-8 of the variance.
LEVEL_MARGIN = 1e-8


def level_exp(epsilon: float) -> float:
    """e^eps as the class-symmetric vertices use it: LEVEL_MARGIN inside."""
    return math.exp(epsilon) * (1.0 - LEVEL_MARGIN)


def min_orbit_weight(epsilon: float) -> float:
    """The lightest orbit weight whose realised probabilities stay within a quarter of LEVEL_MARGIN (relative)."""
    return max(1e-6, 4.0 * 2.0**-53 * math.exp(epsilon) / LEVEL_MARGIN)


def orbit_levels(epsilon: float, sizes: npt.ArrayLike, probabilities: npt.ArrayLike, free: int,
                 high: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float]:
    """(class sums S_c, class squares Q_c, free level z) of the vertex with free class ``free`` and ``high[c]`` values
    of each class at e^eps (``level_exp``), the rest at e^-eps, z making P . r = 1."""
    e = level_exp(epsilon)
    a = 1.0 / e
    sizes, p, h = np.asarray(sizes, float), np.asarray(probabilities, float), np.asarray(high, float)
    is_free = np.arange(sizes.size) == free
    low = sizes - h - is_free
    z = (1.0 - p @ (h * e + low * a)) / p[free]
    return h * e + low * a + is_free * z, h * e**2 + low * a**2 + is_free * z**2, z


def balanced_orbits(epsilon: float, classes: npt.ArrayLike, probabilities: npt.ArrayLike,
                    specs: Sequence[tuple[int, Sequence[int]]]) -> list[dict[str, Any]]:
    """Orbits {"weight", "free", "high"} for the (free, high) ``specs``, with the least-squares weights that make
    every row sum to 1 (exact when the specs allow it)."""
    sizes = np.bincount(np.asarray(classes))
    sums = np.array([orbit_levels(epsilon, sizes, probabilities, free, high)[0] for free, high in specs])
    weights = np.linalg.lstsq(sums.T, sizes.astype(float), rcond=None)[0]
    return [{"weight": float(w), "free": int(free), "high": [int(h) for h in high]}
            for w, (free, high) in zip(weights, specs)]


class ClassSymmetricLIP(SubsetFamily):
    """An eps-LIP mixture of class-symmetric orbits at a prior constant on each class (docs/math.md §11): optimal
    among all eps-LIP mechanisms at that prior when ``ld.design`` chose the orbits and weights. ``classes[x]`` is the
    class of value x, ``probabilities[c]`` the prior probability of each value of class c, ``orbits`` a list of
    {"weight", "free", "high"}: the orbit's probability at the prior, its free class and its counts of values at
    e^eps per class. Unbiased estimate: GLS at the design prior, f^ = M^-1 s^ with s(y)_x the realised
    Pr[y | x]/Pr[y] and M = E[s s^T] (class structure: U T U^T + sum_c alpha_c (I_c - J_c/n_c)); its variance
    given the users' values is exact.

    Parameters
    ----------
    epsilon : float
        The LIP epsilon claimed (and verified) at ``prior``.
    classes : array_like
        k integers, the class of each value, numbering 0..m-1 (m <= MAX_CLASSES, none empty; k <= MAX_CLASS_K).
    probabilities : array_like
        m positive probabilities, one per class: the probability of each value of that class (they sum to 1 over
        the values).
    orbits : sequence of dict
        1..MAX_ORBITS orbits ``{"weight": w, "free": f, "high": [h_0, ..., h_m-1]}``: the orbit's probability at
        the prior (> 0), its free class and its counts of values at e^eps per class. Each free level must lie in
        [e^-eps, e^eps] and the weights must make every row of the table sum to 1 (to 1e-9).
    labels : sequence of str or int, optional
        k distinct labels of the values (default 0..k-1).
    level_epsilon : float, optional
        The epsilon of the vertices' levels, in (0, epsilon]; None: ``epsilon``. A design for a prior that is only
        close to constant on the classes takes its vertices at a smaller epsilon.
    prior : Prior or array_like, optional
        The prior the LIP claim is made at (a prior grouped into the classes); None: the class prior.
    provenance : mapping, optional
        The design's record (``optimality``, ``baselines``), as ``ld.design`` writes it; None when built directly.

    Raises
    ------
    ValidationError
        If a parameter breaks its rule (``parameter_rules``): classes not numbered 0..m-1, probabilities that are
        not positive or do not sum to 1 over the values, an orbit that is malformed, has a free level outside
        [e^-eps, e^eps] or weights whose rows do not sum to 1, a level_epsilon above epsilon.
    VerificationError
        If the realised orbits are not eps-LIP at the claim's prior.

    See Also
    --------
    lipdesign.design : ``method="classes"`` (or ``"auto"`` at large k) designs it.
    SubsetLIP : The case of one class and one orbit, at the uniform prior.
    TableMechanism : The table of an exact design, at small k.

    Examples
    --------
    A design at a prior with two classes of equally likely values (``baselines=False`` skips the comparison with
    the other families):

    >>> import lipdesign as ld
    >>> import numpy as np
    >>> prior = ld.Prior([0.4, 0.2, 0.2, 0.2])
    >>> mech = ld.design(prior, ld.LIP(1.0), method="classes", baselines=False)
    >>> type(mech).__name__, mech.classes, mech.probabilities
    ('ClassSymmetricLIP', (0, 1, 1, 1), (0.4, 0.2))
    >>> certificate = mech.certificate  # exact, on the realised probabilities
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 1.0)

    A round of reports (16 bits of orbit, then 2k bits) and the estimate from their aggregate:

    >>> rng = np.random.default_rng(0)
    >>> values = rng.choice(4, size=20_000, p=prior.probabilities)
    >>> reports = mech.perturb(values, rng=rng)
    >>> reports.shape, mech.report_bits
    ((20000, 3), 24)
    >>> estimate = mech.estimate(mech.aggregate(reports))
    >>> np.round(estimate.values, 3)
    array([0.397, 0.2  , 0.201, 0.203])
    >>> np.round(np.bincount(values) / values.size, 3)  # the truth
    array([0.392, 0.205, 0.202, 0.201])

    Orbits can also be given by hand; they are verified when built:

    >>> orbits = [{"weight": 0.4, "free": 0, "high": [0, 0]}, {"weight": 0.6, "free": 1, "high": [0, 1]}]
    >>> mech = ld.mechanisms.ClassSymmetricLIP(1.0, [0, 1, 1, 1, 1], [0.4, 0.15], orbits)
    >>> round(mech.epsilons["LIP for X"], 4), round(mech.epsilons["LDP"], 4), round(mech.mse, 4)
    (1.0, 2.0, 3.2916)
    >>> orbits[0]["weight"] = 0.5
    >>> ld.mechanisms.ClassSymmetricLIP(1.0, [0, 1, 1, 1, 1], [0.4, 0.15], orbits)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: orbits: the rows of the table sum to [...] by class; the weights must make ...
    """

    family = "class-lip"
    design_family = "rr"
    parameter_rules = (
        ("classes", f"k integers, the class of each value, numbering 0..m-1 (m <= {MAX_CLASSES}) with none empty"),
        ("probabilities", "m positive probabilities, one per class, with sum_x probabilities[classes[x]] = 1"),
        ("orbits", f"1..{MAX_ORBITS} objects {{weight > 0, free class, high: m counts}} whose free level lies in "
                   "[e^-eps, e^eps] and whose weights make every row of the table sum to 1 (to 1e-9)"),
        ("labels", "None, or k distinct labels"),
        ("level_epsilon", "None (epsilon), or the epsilon of the vertices' levels, in (0, epsilon]"),
        ("prior", "None (the class prior), or k probabilities: the prior the LIP claim is made at"))
    client_cost = "O(k) per report (16 + 2k bits; one bounded integer per value at e^eps, and one for z)"

    def __init__(self, epsilon: float, classes: npt.ArrayLike, probabilities: npt.ArrayLike,
                 orbits: Sequence[Mapping[str, Any]], labels: Sequence[str | int] | None = None,
                 level_epsilon: float | None = None, prior: Prior | npt.ArrayLike | None = None, *,
                 provenance: Mapping[str, Any] | None = None) -> None:
        classes = np.asarray(classes)
        if classes.ndim != 1 or classes.size < 2 or classes.dtype.kind not in "iu":
            raise ValidationError(f"classes is {classes.tolist()!r:.80}; it must list the class (an integer) of each "
                                  "of at least 2 values")
        self._common(epsilon, classes.size, labels, provenance)
        if classes.min() < 0 or np.bincount(classes).min() == 0 or classes.max() >= MAX_CLASSES:
            raise ValidationError(f"classes numbers its classes {sorted(set(classes.tolist()))[:12]}; they must be "
                                  f"0..m-1 with m <= {MAX_CLASSES}, none empty")
        if self.k > MAX_CLASS_K:
            raise ValidationError(f"classes lists {self.k} values; a class-symmetric design has at most "
                                  f"{MAX_CLASS_K} (its exact variance forms a k x k matrix)")
        self.classes = tuple(classes.astype(int).tolist())
        self._class_of = np.asarray(self.classes, dtype=np.int64)
        self.sizes = np.bincount(self._class_of)
        m = self.sizes.size
        probabilities = np.asarray(probabilities, dtype=float)
        if probabilities.shape != (m,) or not (probabilities > 0).all() or \
                abs(float(probabilities @ self.sizes) - 1.0) > 1e-9:
            raise ValidationError(f"probabilities is {probabilities.tolist()!r:.80}; it must give each of the {m} "
                                  "classes a positive probability per value, summing to 1 over the values")
        self.probabilities = tuple(probabilities.tolist())
        self.level_epsilon = self.epsilon if level_epsilon is None else self.checked_epsilon(level_epsilon)
        if self.level_epsilon > self.epsilon:
            raise ValidationError(f"level_epsilon is {self.level_epsilon:g}; it must be at most epsilon "
                                  f"({self.epsilon:g})")
        self._level_exp = level_exp(self.level_epsilon)
        self.claim_prior = None if prior is None else \
            tuple(probability_vector(prior, "prior", length=self.k).tolist())
        self.orbits = self._checked_orbits(orbits, m)
        self._draws = self._thresholds()
        self._exact = self._realised()
        self.notion = LIP(self.epsilon)
        self._claimed = self.certificate_at(self.prior)
        if not self._claimed.passed:
            raise VerificationError(f"the class-symmetric design realises LIP epsilon {self._claimed.epsilon:.12g} > "
                                    f"{self.epsilon:g} at {'the class prior' if prior is None else 'prior'}")
        orbit, top, bottom = self._ldp_pair()
        ldp = self._exact["scaled"][orbit][top] / self._exact["scaled"][orbit][bottom]
        self.epsilons = MappingProxyType({"claimed": self._claimed.epsilon, "LIP for X": self._claimed.epsilon,
                                          "LDP": log_upper(ldp)})
        self._rho = np.array([[[float(self._exact["rho"][o][c].get(case) or 0.0) for case in CASES]
                               for c in range(m)] for o in range(len(self.orbits))])  # (N, m, 3)
        self._information_value = self._information()
        self._moments = self._second_moments()
        for array in (self._class_of, self.sizes, self._rho, *self._information_value,
                      *(part for moments in self._moments for part in moments[1:]),
                      *(part for draw in self._draws for part in draw)):
            array.setflags(write=False)

    def _checked_orbits(self, orbits, m):
        if not isinstance(orbits, (list, tuple)) or not 1 <= len(orbits) <= MAX_ORBITS:
            raise ValidationError(f"orbits has {len(orbits) if isinstance(orbits, (list, tuple)) else orbits!r} "
                                  f"entries; it must be a list of 1..{MAX_ORBITS} orbits")
        e, a = self._level_exp, 1.0 / self._level_exp
        checked, sums = [], np.zeros(m)
        p, n = np.asarray(self.probabilities), self.sizes
        for index, orbit in enumerate(orbits):
            if not isinstance(orbit, dict) or set(orbit) != {"weight", "free", "high"}:
                raise ValidationError(f"orbits[{index}] is {orbit!r:.80}; it must be an object with the keys weight, "
                                      "free and high")
            free = integer(orbit["free"], f"orbits[{index}].free", low=0, high=m - 1)
            if not isinstance(orbit["high"], (list, tuple)) or len(orbit["high"]) != m:
                raise ValidationError(f"orbits[{index}].high is {orbit['high']!r:.80}; it must list one count per "
                                      f"class ({m})")
            high = [integer(h, f"orbits[{index}].high[{c}]", low=0, high=int(n[c]) - (c == free))
                    for c, h in enumerate(orbit["high"])]
            weight = real_number(orbit["weight"], f"orbits[{index}].weight", low=0.0)
            if not weight > 0:
                raise ValidationError(f"orbits[{index}].weight is {orbit['weight']!r}; it must be positive")
            class_sums, _, z = orbit_levels(self.level_epsilon, n, p, free, high)
            if not a * (1 - 1e-9) <= z <= e * (1 + 1e-9):
                raise ValidationError(f"orbits[{index}] has free level {z:.6g} outside [e^-eps, e^eps] = "
                                      f"[{a:.6g}, {e:.6g}]: it is no vertex of the LIP slice at this prior")
            sums += weight * class_sums
            z = min(max(z, a), e)
            checked.append(MappingProxyType({"weight": weight, "free": free, "high": tuple(high), "level": float(z)}))
        if np.abs(sums / n - 1.0).max() > 1e-9:
            raise ValidationError(f"orbits: the rows of the table sum to {np.round(sums / n, 12).tolist()!r:.80} by "
                                  "class; the weights must make every row sum to 1 (to 1e-9)")
        return tuple(checked)

    def _counts(self, orbit, c):
        """{case: number of values of class c in that case in any output of ``orbit``}."""
        free = int(orbit["free"] == c)
        return {"free": free, "high": orbit["high"][c], "low": int(self.sizes[c]) - orbit["high"][c] - free}

    def _thresholds(self):
        """Per class: the orbit thresholds (N,) and per orbit the (free end, high end) of the case draw, each on the
        2^-53 grid; a case of no value is given probability 0 exactly."""
        e, a = self._level_exp, 1.0 / self._level_exp
        draws = []
        for c, size in enumerate(self.sizes):
            masses = []
            ends = []
            for orbit in self.orbits:
                counts = self._counts(orbit, c)
                levels = {"free": orbit["level"], "high": e, "low": a}
                parts = {case: counts[case] * levels[case] for case in CASES}
                total = sum(parts.values())
                masses.append(orbit["weight"] * total / size)
                free_end = 0.0 if not counts["free"] else float(realized_probability(parts["free"] / total))
                high_end = 1.0 if not counts["low"] else free_end if not counts["high"] else \
                    float(realized_probability(min(1.0, (parts["free"] + parts["high"]) / total)))
                ends.append((free_end, high_end))
            cumulative = np.cumsum(masses) / sum(masses)
            thresholds = realized_probability(cumulative)
            thresholds[-1] = 1.0
            draws.append((thresholds, np.array(ends)))
        return draws

    def _realised(self):
        """Exact Fractions: pi[o][c][case] = Pr[o, case | a value of class c] as drawn, the scaled per-output
        probabilities pi n_c / count (the output probability times the orbit's size), and rho[o][c][case] =
        Pr[y | x] / Pr[y] at the design prior; mass[o] = Pr[orbit o] at the design prior."""
        per_value = [Fraction(value) for value in self.probabilities]  # each value's class-prior probability, exact
        total = sum(value * int(size) for value, size in zip(per_value, self.sizes))
        prior = [value / total for value in per_value]
        pi: list[list[dict[str, Fraction]]] = []
        scaled: list[dict[tuple[int, str], Any]] = []  # Fraction, or None: no value of the class has the case
        rho: list[list[dict[str, Fraction | None]]] = []
        mass: list[Fraction | int] = []  # sums of Fractions (an int 0 only if empty)
        for o, orbit in enumerate(self.orbits):
            pi.append([])
            scaled.append({})
            for c, size in enumerate(self.sizes):
                thresholds, ends = self._draws[c]
                start = Fraction(float(thresholds[o - 1])) if o else Fraction(0)
                chosen = Fraction(float(thresholds[o])) - start
                free_end, high_end = (Fraction(float(value)) for value in ends[o])
                cases = {"free": free_end, "high": high_end - free_end, "low": 1 - high_end}
                counts = self._counts(orbit, c)
                pi[o].append({case: chosen * cases[case] for case in CASES})
                for case in CASES:
                    scaled[o][(c, case)] = pi[o][c][case] * int(size) / counts[case] if counts[case] else None
            total = sum(prior[c] * int(size) * sum(pi[o][c].values()) for c, size in enumerate(self.sizes))
            mass.append(total)
            rho.append([{case: None if scaled[o][(c, case)] is None else scaled[o][(c, case)] / total
                         for case in CASES} for c in range(self.sizes.size)])
        return {"pi": pi, "scaled": scaled, "rho": rho, "mass": mass}

    @classmethod
    def example(cls) -> Self:
        """Two orbits at k = 5, one value of probability 0.4 and four of 0.15, eps = 1: the free value in the first
        class with none at e^eps, and in the second with one more at e^eps; weights solving the row sums."""
        classes, probabilities, specs = [0, 1, 1, 1, 1], [0.4, 0.15], [(0, [0, 0]), (1, [0, 1])]
        return cls(1.0, classes, probabilities, balanced_orbits(1.0, classes, probabilities, specs))

    @property
    def report_bits(self) -> int:
        return 16 + 2 * self.k

    @property
    def class_prior(self) -> Prior:
        """The prior constant on each class, probabilities[classes[x]] for each value x, at which the orbits are
        vertices and the estimate is weighted."""
        return Prior(np.asarray(self.probabilities)[self._class_of], self.labels)

    @property
    def prior(self) -> Prior:
        """The prior of the LIP claim: ``prior`` when given (a prior grouped into the classes), else the class prior."""
        return self.class_prior if self.claim_prior is None else Prior(self.claim_prior, self.labels)

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LIP", self.epsilon, EXACT_TABLE, "at its prior, on the realised orbit and case "
                                                          "probabilities (docs/math.md §11)")

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "classes": list(self.classes), "probabilities": list(self.probabilities),
                "orbits": [{"weight": o["weight"], "free": o["free"], "high": list(o["high"])} for o in self.orbits],
                "labels": self.labels,
                "level_epsilon": None if self.level_epsilon == self.epsilon else self.level_epsilon,
                "prior": None if self.claim_prior is None else list(self.claim_prior)}

    def certificate_at(self, prior: Prior | PriorSet | npt.ArrayLike) -> Certificate:
        """The exact Certificate of eps-LIP for X at ``prior``.

        For an output y of orbit o the ratio of an input x is q(x's class and case)/D(y), D(y) = sum_x P_x q(...),
        with q the output's probability times the orbit's size (the same for every output of the orbit). Within a
        class the levels q are assigned to the values by the output, so D is smallest when the largest levels meet
        the smallest P_x and largest when they meet the largest (rearrangement inequality): sorting P within each
        class gives both extremes exactly (docs/math.md §11).

        Parameters
        ----------
        prior : Prior, PriorSet or array_like
            A Prior, k probabilities, or a PriorSet (the worst over its vertices).

        Returns
        -------
        Certificate
            Whether the mechanism is eps-LIP at ``prior``, and its exact epsilon there (rounded up).

        Raises
        ------
        ValidationError
            If ``prior`` is not a probability vector of length k.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mech = ld.mechanisms.ClassSymmetricLIP.example()  # at the class prior 0.4, 0.15, 0.15, 0.15, 0.15
        >>> certificate = mech.certificate_at([0.2, 0.2, 0.2, 0.2, 0.2])
        >>> certificate.passed, round(certificate.epsilon, 4)
        (False, 1.1912)
        """
        if isinstance(prior, PriorSet):
            return worst_over_vertices(self, prior)
        p = probability_vector(getattr(prior, "probabilities", prior), "prior", length=self.k)
        exact = [Fraction(float(value)) for value in p]
        total = sum(exact)
        prefix = []  # per class: the prefix sums of its P_x sorted ascending
        for c in range(self.sizes.size):
            members = sorted((exact[x] / total for x in np.flatnonzero(self._class_of == c)))
            sums = [Fraction(0)]
            for value in members:
                sums.append(sums[-1] + value)
            prefix.append(sums)
        worst = Fraction(0)
        for o, orbit in enumerate(self.orbits):
            smallest = largest = Fraction(0)
            for c, sums in enumerate(prefix):
                counts = self._counts(orbit, c)
                levels = sorted(((self._exact["scaled"][o][(c, case)], counts[case]) for case in CASES
                                 if counts[case]), key=lambda item: item[0])
                size = len(sums) - 1
                position = 0  # the smallest levels meet the largest P for the smallest D, and conversely
                for level, count in levels:
                    smallest += level * (sums[size - position] - sums[size - position - count])
                    largest += level * (sums[position + count] - sums[position])
                    position += count
            present = [value for value in self._exact["scaled"][o].values() if value is not None]
            worst = max(worst, max(present) / smallest, largest / min(present))
        return Certificate("LIP", self.epsilon, log_upper(worst), bool(worst <= exp_bounds(self.epsilon)[0]), True,
                           {"orbits": len(self.orbits), "prior": [float(value) for value in p]})

    def _certify(self):
        return self._claimed

    def verified_epsilons(self) -> dict[str, float]:
        return dict(self.epsilons)

    def ratios(self) -> dict[tuple[int, int, str], float]:
        """The posterior ratios Pr[y | x] / Pr[y] at the class prior, by (orbit, class, case).

        For an input x of that class in that case (``"free"``, ``"high"`` or ``"low"``) of an output y of that orbit
        (realised probabilities; the same for every such y); within [e^-eps, e^eps] at the class prior.

        Returns
        -------
        dict
            {(orbit, class, case): ratio}, for the cases an orbit's outputs have.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mech = ld.mechanisms.ClassSymmetricLIP.example()
        >>> for key, ratio in mech.ratios().items():
        ...     print(key, round(ratio, 3))
        (0, 0, 'free') 1.948
        (0, 1, 'low') 0.368
        (1, 0, 'low') 0.368
        (1, 1, 'free') 2.232
        (1, 1, 'high') 2.718
        (1, 1, 'low') 0.368
        """
        return {(o, c, case): float(value) for o, orbit in enumerate(self._exact["rho"])
                for c, cases in enumerate(orbit) for case, value in cases.items() if value is not None}

    def _ldp_pair(self):
        """(orbit, (class, case), (class, case)): where the ratio of two inputs' output probabilities is largest."""
        best: tuple[Fraction, int, tuple[int, str], tuple[int, str]] | None = None
        for o, scaled in enumerate(self._exact["scaled"]):
            present = {key: value for key, value in scaled.items() if value is not None}
            top, bottom = max(present, key=present.__getitem__), min(present, key=present.__getitem__)
            ratio = present[top] / present[bottom]
            if best is None or ratio > best[0]:
                best = (ratio, o, top, bottom)
        return cast("tuple[Fraction, int, tuple[int, str], tuple[int, str]]", best)[1:]  # not None: orbits >= 1

    def pair(self) -> tuple[int, int]:
        """(u, v): the two inputs of ``privacy_table``.

        Values of the classes whose output probabilities have the largest ratio (``_ldp_pair``), v the second value
        of u's class when both classes are the same.

        Returns
        -------
        tuple of int
            The indices u and v.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.ClassSymmetricLIP.example().pair()
        (1, 2)
        """
        _, (c, _), (d, _) = self._ldp_pair()
        first = int(np.flatnonzero(self._class_of == c)[0])
        return first, int(np.flatnonzero((self._class_of == d) & (np.arange(self.k) != first))[0])

    def _share(self, orbit, wanted, removed):
        """Pr[a given value of class wanted[0] has case wanted[1] | the cases ``removed`` ((class, case) pairs of
        other values) are taken]: its class's labels left, over the values left (exchangeable labels)."""
        c, case = wanted
        labels = self._counts(orbit, c)[case] - sum(1 for d, other in removed if d == c and other == case)
        pool = int(self.sizes[c]) - sum(1 for d, _ in removed if d == c)
        return Fraction(max(labels, 0), pool)

    def _grouped(self):
        """(groups, rows): the (orbit, u's case, v's case) of each column of ``privacy_table`` (cases 0 free, 1
        high, 2 low) and its rows as Fractions."""
        u, v = self.pair()
        c, d = int(self._class_of[u]), int(self._class_of[v])
        others = self._other_rows()
        groups: list[tuple[int, int, int]] = []
        rows: list[list[Fraction]] = [[] for _ in range(2 + len(others))]
        for o, orbit in enumerate(self.orbits):
            pi = self._exact["pi"][o]
            for i, first in enumerate(CASES):
                for j, second in enumerate(CASES):
                    cells = [pi[c][first] * self._share(orbit, (d, second), [(c, first)]),
                             pi[d][second] * self._share(orbit, (c, first), [(d, second)])]
                    cells += [sum(pi[g][case] * self._share(orbit, (c, first), [(g, case)])
                                  * self._share(orbit, (d, second), [(g, case), (c, first)]) for case in CASES)
                              for g in others]
                    if any(cells):
                        groups.append((o, i, j))
                        for row, cell in zip(rows, cells):
                            row.append(cell)
        return groups, rows

    def privacy_table(self, exact: bool = False) -> npt.NDArray[Any]:
        """The output probabilities grouped by (orbit, u's case, v's case), u and v from ``pair``.

        Row 0 for input u, row 1 for v, then one row per class for any of its other values (each has the same row,
        by symmetry).
        Within a group every output has the same probability under u and under v, so the LDP of these rows is the
        mechanism's (an exact reduction: ``verified_epsilons``); the rows of the other values serve the audit's
        prior mixture (``classes_of_rows`` names the values each row stands for). Pr[group | u] = Pr[o, u's case |
        u's class] times the share of v's class's labels, u's own left out, that are v's case; for another value w,
        summed over w's case with both shares. The LIP certificate comes from ``certificate_at``.

        Parameters
        ----------
        exact : bool, default False
            Whether to give the realised probabilities as Fractions (an object array) rather than floats.

        Returns
        -------
        numpy.ndarray
            One row per input (u, v, then a class's other values; ``classes_of_rows``), one column per group
            (``groups``); each row sums to 1.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> mech = ld.mechanisms.ClassSymmetricLIP.example()
        >>> table = mech.privacy_table()
        >>> table.shape, np.round(table.sum(axis=1), 6)
        ((4, 8), array([1., 1., 1., 1.]))
        >>> certificate = ld.verify(table, ld.LDP(2.0))  # the mechanism's LDP epsilon, exactly
        >>> certificate.passed, round(certificate.epsilon, 4)
        (True, 2.0)
        """
        rows = self._grouped()[1]
        return np.array(rows, dtype=object) if exact else np.array([[float(v) for v in row] for row in rows])

    def groups(self) -> list[tuple[int, int, int]]:
        """The (orbit, u's case, v's case) of each column of ``privacy_table`` (cases 0 free, 1 high, 2 low).

        Returns
        -------
        list of tuple of int
            One (orbit, case of u, case of v) per column.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.ClassSymmetricLIP.example().groups()[:3]
        [(0, 2, 2), (1, 0, 1), (1, 0, 2)]
        """
        return self._grouped()[0]

    def _other_rows(self):
        """The classes with a value other than u and v (``pair``), one row of ``privacy_table`` each."""
        u, v = self.pair()
        return [c for c in range(self.sizes.size) if ((self._class_of == c) & (np.arange(self.k) != u)
                                                      & (np.arange(self.k) != v)).any()]

    def classes_of_rows(self) -> npt.NDArray[np.float64]:
        """(rows x k) 0/1: the values each row of ``privacy_table`` stands for.

        Returns
        -------
        numpy.ndarray
            Row 0 marks u, row 1 v (``pair``), each further row the other values of one class.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.ClassSymmetricLIP.example().classes_of_rows()
        array([[0., 1., 0., 0., 0.],
               [0., 0., 1., 0., 0.],
               [1., 0., 0., 0., 0.],
               [0., 0., 0., 1., 1.]])
        """
        u, v = self.pair()
        members = np.zeros((2 + len(self._other_rows()), self.k))
        members[0, u] = members[1, v] = 1.0
        for row, c in enumerate(self._other_rows(), start=2):
            members[row] = (self._class_of == c) & (np.arange(self.k) != u) & (np.arange(self.k) != v)
        return members

    def device_numbers(self) -> dict[str, Any]:
        """What a device reads (docs/runtime.md §6): the classes, per class the orbit thresholds and per orbit the
        case ends, and per orbit its free class and counts at e^eps.

        Returns
        -------
        dict
            ``k``, ``classes``, ``thresholds`` and ``case_ends`` (per class, on the 2^-53 grid), ``free`` and
            ``high`` (per orbit).
        """
        return {"k": self.k, "classes": list(self.classes),
                "thresholds": [draw[0].tolist() for draw in self._draws],
                "case_ends": [draw[1].tolist() for draw in self._draws],
                "free": [orbit["free"] for orbit in self.orbits],
                "high": [list(orbit["high"]) for orbit in self.orbits]}

    # -- reports ----------------------------------------------------------------------------------------------
    def _members(self):
        return [np.flatnonzero(self._class_of == c) for c in range(self.sizes.size)]

    def _perturb(self, values, rng, user_ids):
        """Reports in blocks of BLOCK_POSITIONS // k users (each block holds two n x k bit matrices)."""
        block = max(1, BLOCK_POSITIONS // self.k)
        parts = [self._perturb_block(values[start:start + block], rng) for start in range(0, values.size, block)]
        return np.concatenate(parts) if parts else self.empty_reports()

    def _perturb_block(self, values, rng):
        """The draws of the module docstring, in this order for the whole block: the orbit uniforms, the case
        uniforms, then orbit by orbit (those drawn) the free values and class by class the values at e^eps
        (docs/runtime.md §6)."""
        n, k = values.size, self.k
        own = self._class_of[values]
        members = self._members()
        position = np.empty(k, dtype=np.int64)  # each value's index within its class
        for group in members:
            position[group] = np.arange(group.size)
        orbit, case = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        first, second = rng.random(n), rng.random(n)
        for c, (thresholds, ends) in enumerate(self._draws):
            rows = np.flatnonzero(own == c)
            orbit[rows] = np.searchsorted(thresholds, first[rows], side="right")
            free_end, high_end = ends[orbit[rows], 0], ends[orbit[rows], 1]
            case[rows] = np.where(second[rows] < free_end, 0, np.where(second[rows] < high_end, 1, 2))
        free = values.copy()
        chosen = np.zeros((n, k), dtype=bool)
        chosen[np.flatnonzero(case == 1), values[case == 1]] = True
        order = np.argsort(orbit, kind="stable")
        starts = np.searchsorted(orbit[order], np.arange(len(self.orbits) + 1))
        for o in np.flatnonzero(np.diff(starts)):
            spec, in_orbit = self.orbits[o], order[starts[o]:starts[o + 1]]
            pool = members[spec["free"]]
            rows = in_orbit[case[in_orbit] != 0]
            mine = (own[rows] == spec["free"]).astype(np.int64)  # z among class f's values other than the user's
            draw = rng.integers(0, pool.size - mine, size=rows.size)
            draw += mine * (draw >= position[values[rows]])
            free[rows] = pool[draw]
            for c, group in enumerate(members):
                if not spec["high"][c]:
                    continue
                user_here = own[in_orbit] == c
                drop = user_here & (case[in_orbit] == 1)  # the user's value is one of class c's at e^eps
                z_here = (self._class_of[free[in_orbit]] == c) & (case[in_orbit] != 0)  # z, not the user's
                pattern = 4 * user_here + 2 * drop + z_here
                for key in np.unique(pattern):
                    rows = in_orbit[pattern == key]
                    parts = ([position[values[rows]]] if key & 4 else []) + ([position[free[rows]]] if key & 1 else [])
                    excluded = np.sort(np.column_stack(parts), axis=1) if parts else np.zeros((rows.size, 0), np.int64)
                    local = random_subsets(excluded, spec["high"][c] - bool(key & 2), group.size, rng)
                    chosen[rows[:, None], group[None, :]] |= local
        one_hot = np.zeros((n, k), dtype=bool)
        one_hot[np.arange(n), free] = True
        index = orbit.astype("<u2").view(np.uint8).reshape(n, 2)
        return np.concatenate([index, pack_bits(np.concatenate([chosen, one_hot], axis=1))], axis=1)

    @property
    def report_bytes(self) -> int:
        """Bytes per report: 2 of orbit index, then the 2k bits packed, ceil(2k / 8)."""
        return 2 + -(-2 * self.k // 8)

    def _packed(self, reports):
        """(orbit index, the 2k bits) of each report, checked: the shape and spare bits (``SubsetFamily._packed``, the
        orbit index being two whole bytes), and an orbit this design has."""
        reports = super()._packed(reports)
        orbit = reports[:, :2].copy().view("<u2")[:, 0].astype(np.int64)
        if (orbit >= len(self.orbits)).any():
            raise ValidationError(f"reports name orbit {int(orbit.max())}; this design has {len(self.orbits)} orbits")
        return orbit, reports[:, 2:]

    def _statistics(self, reports):
        orbit, bits = self._packed(reports)
        count = np.bincount(orbit, minlength=len(self.orbits))
        high = np.zeros((len(self.orbits), self.k), dtype=np.int64)
        free = np.zeros((len(self.orbits), self.k), dtype=np.int64)
        for o in np.flatnonzero(count):
            sums = packed_column_sums(np.ascontiguousarray(bits[orbit == o]), 2 * self.k)
            high[o], free[o] = sums[:self.k], sums[self.k:]
        return orbit.size, {"orbits": count, "high": high, "free": free}

    # -- estimates --------------------------------------------------------------------------------------------
    def _information(self):
        """(T, alpha): M = E[s s^T] at the design prior = U T U^T + sum_c alpha_c (I_c - J_c/n_c), U the class
        indicators over sqrt(n_c) (docs/math.md §11), from the realised ratios."""
        counts = np.array([[[self._counts(orbit, c)[case] for case in CASES] for c in range(self.sizes.size)]
                           for orbit in self.orbits], dtype=float)
        weight = np.array([float(value) for value in self._exact["mass"]])
        sums, squares = (counts * self._rho).sum(axis=2), (counts * self._rho**2).sum(axis=2)
        vectors = sums / np.sqrt(self.sizes)
        spread = weight @ (squares - sums**2 / self.sizes)
        alpha = np.divide(spread, self.sizes - 1, out=np.zeros(self.sizes.size), where=self.sizes > 1)
        return vectors.T @ (weight[:, None] * vectors), alpha

    def _structured(self, between, within, vector):
        """U B U^T v + sum_c w_c (v_c - mean(v_c)) for each row v of ``vector``: M with (B, w) = (T, alpha), M^-1
        with (T^-1, 1/alpha)."""
        vector = np.asarray(vector, dtype=float)
        root = np.sqrt(self.sizes)
        indicator = (self._class_of[:, None] == np.arange(self.sizes.size)[None, :]).astype(float)
        totals = vector @ indicator
        means = totals / self.sizes
        return ((totals / root) @ between)[..., self._class_of] / root[self._class_of] + \
            within[self._class_of] * (vector - means[..., self._class_of])

    def _solve(self, vector):
        """M^-1 applied to each row of ``vector`` (..., k)."""
        information, alpha = self._information_value
        inverse_alpha = np.divide(1.0, alpha, out=np.zeros_like(alpha), where=alpha > 0)
        return self._structured(np.linalg.inv(information), inverse_alpha, vector)

    def _estimate(self, aggregate, method):
        n = aggregate.n
        rho = self._rho[:, self._class_of, :]  # (N, k, 3)
        total = aggregate["orbits"] @ rho[:, :, 2] + ((rho[:, :, 1] - rho[:, :, 2]) * aggregate["high"]).sum(axis=0) \
            + ((rho[:, :, 0] - rho[:, :, 2]) * aggregate["free"]).sum(axis=0)
        values = self._solve(total / max(n, 1))
        plug_in = consistent(values, "norm-sub")
        return self._estimate_of(values, self._variance(plug_in, n, method, None), n, method)

    def _second_moments(self):
        """Per class c of the user's value: (E[s_x^2], E[s_x s_u] for u in each class, E[s_u^2] by class, E[s_u s_v]
        for u != v by class pair), over the orbits and cases as drawn; the other values of a class carry
        exchangeable labels, so each is an average over the labels left."""
        m, sizes = self.sizes.size, self.sizes
        moments = []
        for c in range(m):
            at_x, cross, square, pair = 0.0, np.zeros(m), np.zeros(m), np.zeros((m, m))
            for o, orbit in enumerate(self.orbits):
                for index, case in enumerate(CASES):
                    probability = float(self._exact["pi"][o][c][case])
                    if probability == 0.0:
                        continue
                    labels = np.array([[self._counts(orbit, d)[name] for name in CASES] for d in range(m)], float)
                    labels[c, index] -= 1
                    pool = sizes - (np.arange(m) == c)
                    level = self._rho[o]  # (m, 3)
                    first = (labels * level).sum(axis=1)
                    second = (labels * level**2).sum(axis=1)
                    mean = np.divide(first, pool, out=np.zeros(m), where=pool > 0)
                    same = np.divide(first**2 - second, pool * (pool - 1), out=np.zeros(m), where=pool > 1)
                    at_x += probability * level[c, index] ** 2
                    cross += probability * level[c, index] * mean
                    square += probability * np.divide(second, pool, out=np.zeros(m), where=pool > 0)
                    block = np.outer(mean, mean)
                    np.fill_diagonal(block, same)
                    pair += probability * block
            moments.append((at_x, cross, square, pair))
        return moments

    def _variance(self, frequencies, n, method, user_ids):
        """The exact variance of each entry of the GLS estimate given the users' values (frequencies f):
        Cov(f^) = M^-1 [sum_x f_x E[s s^T | x] - M diag(f) M] M^-1 / n (E[s | x] = M e_x; docs/math.md §11)."""
        f = np.asarray(frequencies, dtype=float)
        cls = self._class_of
        covariance = np.zeros((self.k, self.k))
        for c, (at_x, cross, square, pair) in enumerate(self._moments):
            members = np.flatnonzero(cls == c)
            expanded = pair[np.ix_(cls, cls)]
            np.fill_diagonal(expanded, square[cls])
            covariance += f[members].sum() * expanded
            gamma = cross[cls] - pair[c][cls]  # the user's row, less the others' block
            weighted = np.zeros(self.k)
            weighted[members] = f[members]
            covariance += np.outer(weighted, gamma) + np.outer(gamma, weighted)
            covariance[members, members] += f[members] * (at_x - square[c] - 2.0 * gamma[members])
        information, alpha = self._information_value
        information = self._structured(information, alpha, np.eye(self.k))
        covariance -= (information * f) @ information
        inverse = self._solve(np.eye(self.k))
        return np.einsum("ij,jk,ik->i", inverse, covariance, inverse) / n

    @property
    def mse(self) -> float:
        """n x the sum of the variances of the unbiased estimate at ``prior`` (the claim's), given the users' values."""
        return float(self._variance(self.prior.probabilities, 1, "unbiased", None).sum())

    def summary(self) -> str:
        where = "the class prior" if self.claim_prior is None else \
            f"its prior (grouped into the classes; vertices at eps' = {self.level_epsilon:.6g})"
        lines = [f"{self!r}: a class-symmetric LIP design, {len(self.orbits)} orbit{'s' * (len(self.orbits) != 1)} "
                 f"over {self.sizes.size} classes (docs/math.md §11)",
                 f"  guarantee (exactly verified on the realised probabilities, rounded up): LIP for X "
                 f"{self.epsilons['LIP for X']:.6g} at {where}, LDP for X {self.epsilons['LDP']:.6g}",
                 f"  accuracy: n x sum of the variances of the unbiased estimate (weighted at the class prior) at "
                 f"{where.split(' (')[0]}, given the users' values: {self.mse:.6g}"]
        return "\n".join(lines + design_lines(self))

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads: inputs u and v (``ClassSymmetricLIP.pair``) and one value per class for the rest.

        Classes of outputs by (orbit, u's case, v's case) (``ClassSymmetricLIP.privacy_table``).

        Returns
        -------
        AuditPlan
            The rows of ``privacy_table``, its groups as the output classes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> plan = ld.mechanisms.ClassSymmetricLIP.example().audit_plan()
        >>> plan.row_names, plan.class_names[:2]
        (['x=1', 'x=2', 'x=0', 'x=3'], ['orbit 0: 1 low, 2 low', 'orbit 1: 1 free, 2 high'])
        """
        k, u, v = self.k, *self.pair()
        members = self.classes_of_rows()
        lookup = np.full((len(self.orbits), 3, 3), -1)
        for index, (o, first, second) in enumerate(self.groups()):
            lookup[o, first, second] = index

        def case_of(reports, x):
            free = (reports[:, 2 + (k + x) // 8] >> ((k + x) % 8)) & 1
            high = (reports[:, 2 + x // 8] >> (x % 8)) & 1
            return np.where(free == 1, 0, np.where(high == 1, 1, 2))

        def classify(reports):
            orbit = reports[:, 0].astype(np.int64) + 256 * reports[:, 1].astype(np.int64)
            return lookup[orbit, case_of(reports, u), case_of(reports, v)]

        inputs = np.array([int(np.flatnonzero(row)[0]) for row in members])
        names = ["free", "high", "low"]
        return AuditPlan(inputs, self.privacy_table(), classify, [f"x={x}" for x in inputs],
                     [f"orbit {o}: {u} {names[a]}, {v} {names[b]}" for o, a, b in self.groups()], members)

    def display_name(self) -> str:
        return f"randomized response: class-symmetric design, {len(self.orbits)} orbits"
