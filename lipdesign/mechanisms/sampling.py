"""Randomness as the mechanisms draw it (numpy, and randomgen for the ChaCha20 stream; docs/math.md §3).

- ``as_generator``: ``rng`` is an int seed (PCG64: reproducible simulation), a ``numpy.random.Generator`` or
  ``BitGenerator``, or None for ``secure_generator()``: the ChaCha20 bit stream keyed with 256 bits from the
  operating system's CSPRNG, unpredictable from its outputs (what a device should use; docs/math.md §3.8).
- ``TablePerturber``: sampling from a finite table with Walker/Vose alias tables and ONE uniform per value: with u
  uniform on [0, 1), ``j = floor(u * n_out)`` picks a slot and the fractional part ``u * n_out - j`` is the coin
  that decides between the slot's own output j (if ``coin < prob[x, j]``) and ``alias[x, j]``. An output whose
  table entry is 0 can never be produced (docs/math.md §8 lists "a lie that can equal the truth" and "one bucket
  never reported" among the known bugs), and ``realized_table`` is the exact distribution ``perturb`` realises on
  numpy's 2^-53 grid of uniforms.
- The floating-point margin of the finite mechanisms (``EXP_MARGIN``, ``implemented_exp``), the probability that
  ``rng.random() < p`` realises (``realized_probability``), and public randomness: seeds (``public_seed``) and a
  per-user index hashed from a user id (``public_index``).
- ``structured_reports`` and ``sign_field``: the checks every structured report array goes through.
"""

from __future__ import annotations

import copy
import math
import numbers
import secrets
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.immutable import Immutable
from lipdesign.validation import check_indices, epsilon, fmt, index_array, integer, stochastic_rows

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy.typing as npt

    #: An ``rng`` argument: an int seed (PCG64), a numpy Generator or BitGenerator, or None (ChaCha20 keyed from
    #: the OS, docs/math.md §3.8).
    RandomSource: TypeAlias = int | np.random.Generator | np.random.BitGenerator | None

#: Values processed per chunk: 2**16 values keep every temporary (8 bytes each) in the L2 cache.
DEFAULT_CHUNK = 2**16

#: Every finite mechanism with a flip probability runs at e^eps * (1 - EXP_MARGIN) instead of e^eps. Its
#: probabilities are computed in floating point and sampled as ``rng.random() < p``, which realises
#: ceil(p 2^53) / 2^53: absolute errors of about 2^-53, relative errors up to 2^-53 (e^eps + 1) in a flip
#: probability 1/(e^eps + 1). The margin covers them with room to spare for every epsilon up to
#: ONE_BIT_MAX_EPSILON (2^-53 e^10 = 2.4e-12), so the numbers a sampler really uses satisfy the claim in exact
#: rational arithmetic; the cost in variance is about 1e-10 relative (docs/math.md §3).
EXP_MARGIN = 1e-10

#: Epsilon range of the mechanisms whose smallest probability is a flip 1/(e^eps + 1) computed in floating point
#: (one-bit, Duchi, Harmony's numeric, categorical and mixed mechanisms, Piecewise, Hybrid, OUE, OLH, Hadamard;
#: Laplace shares it): below 1e-6, e^eps - 1 is too close to the margin and to rounding for the scale
#: c = (e^eps + 1)/(e^eps - 1) to be accurate; above 10 the 2^-53 resolution of the sampler is no longer small
#: against the flip probability, and e^10 ~ 22000 is no meaningful local privacy anyway.
ONE_BIT_MIN_EPSILON = 1e-6
ONE_BIT_MAX_EPSILON = 10.0


def one_bit_epsilon(value: float) -> float:
    """An epsilon in [ONE_BIT_MIN_EPSILON, ONE_BIT_MAX_EPSILON], the range of the flip-probability mechanisms."""
    return epsilon(value, ONE_BIT_MIN_EPSILON, ONE_BIT_MAX_EPSILON, include_low=True)


#: Elements per temporary array in chunked loops (32 MiB of int64 or float64).
BLOCK = 2**22

#: Float reports are checked against their mechanism's bound with this relative slack (their arithmetic rounds).
REPORT_RTOL = 1e-9

#: Seeds of public randomness are integers in [0, 2**63).
MAX_SEED = 2**63


#: The secure bit stream of ``rng=None`` (``secure_generator``): ChaCha with 20 rounds and a 256-bit key
#: (docs/math.md §3.8).
SECURE_ROUNDS = 20
SECURE_KEY_BITS = 256


def secure_generator(key: int | None = None) -> np.random.Generator:
    """A ``numpy.random.Generator`` on the ChaCha20 bit stream, ``randomgen.ChaCha(key=key, rounds=20)``
    (docs/math.md §3.8): as long as ChaCha20 is a pseudorandom function (the standard assumption), its words
    cannot be told from uniform ones, nor predicted from the others, without the key. ``key=None`` draws 256 bits
    from the operating system's CSPRNG (``secrets``), which is what ``rng=None`` uses; an int in [0, 2**256)
    replays that stream (audits, tests): keep it as secret as the noise it makes.
    """
    if key is None:
        key = secrets.randbits(SECURE_KEY_BITS)
    elif isinstance(key, (bool, np.bool_)) or not isinstance(key, numbers.Integral) or not (
            0 <= int(key) < 2**SECURE_KEY_BITS):
        raise ValidationError(f"key is {fmt(key)}; a ChaCha20 key must be None (drawn from the OS) or an int in "
                              f"[0, 2**{SECURE_KEY_BITS})")
    from randomgen import ChaCha  # here, so that seeded simulation and the estimators need numpy only

    return np.random.Generator(ChaCha(key=int(key), rounds=SECURE_ROUNDS))


def as_generator(rng: RandomSource = None) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` for ``rng`` (docs/math.md §3.8).

    ``None``: ``secure_generator()``, a fresh ChaCha20 stream keyed from the OS CSPRNG, which is what a device
    should use. A non-negative ``int``: ``numpy.random.default_rng(rng)`` (PCG64: reproducible, for tests and
    simulations, but predictable from its outputs). A ``Generator``: returned as is (its state advances); a
    ``BitGenerator`` (say ``randomgen.AESCounter()``): wrapped in a Generator. The exact statements about what
    the samplers realise (§3.5, §3.6) assume ``random()`` returns the top 53 bits of one 64-bit word, as for
    PCG64, ChaCha and AESCounter. Anything else: ``ValidationError``. Every ``rng=`` argument of the package goes
    through it.

    Parameters
    ----------
    rng : numpy.random.Generator, numpy.random.BitGenerator, int or None, optional
        The source of randomness; by default None, the secure ChaCha20 stream.

    Returns
    -------
    numpy.random.Generator
        A generator drawing from ``rng`` (``rng`` itself when it is one).

    Raises
    ------
    ValidationError
        If ``rng`` is a negative int, a bool, of another type, or a bit generator whose ``random()`` is not the
        top 53 bits of one 64-bit word (randomgen's DSFMT, for one).

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> from lipdesign.mechanisms import as_generator
    >>> rng = as_generator(7)  # reproducible: PCG64 seeded with 7
    >>> print(rng, round(rng.random(), 4))
    Generator(PCG64) 0.6251
    >>> rng = np.random.default_rng(0)
    >>> as_generator(rng) is rng
    True
    >>> as_generator(None).bit_generator  # what a device should use
    <randomgen.chacha.ChaCha object at 0x...>
    >>> as_generator(-1)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: rng is -1; an int seed must be non-negative (or pass None, a \
numpy.random.Generator or a BitGenerator)
    """
    if rng is None:
        return secure_generator()
    if isinstance(rng, np.random.Generator):
        _check_doubles(rng.bit_generator)
        return rng
    if isinstance(rng, np.random.BitGenerator):
        return np.random.Generator(_check_doubles(rng))
    if isinstance(rng, (bool, np.bool_)):
        raise ValidationError(f"rng is {rng!r} (a bool); it must be None, a non-negative int seed, a "
                              "numpy.random.Generator or a BitGenerator")
    if isinstance(rng, numbers.Integral):
        if int(rng) < 0:
            raise ValidationError(f"rng is {int(rng)}; an int seed must be non-negative (or pass None, a "
                                  "numpy.random.Generator or a BitGenerator)")
        return np.random.default_rng(int(rng))
    raise ValidationError(f"rng is {fmt(rng)} of type {type(rng).__name__}; it must be None, a non-negative int "
                          "seed, a numpy.random.Generator or a BitGenerator")


#: BitGenerator types whose doubles were found to be the top 53 bits of their words (``_check_doubles``).
_DOUBLES_CHECKED: set[type] = set()


def _check_doubles(bit_generator):
    """``bit_generator``, once its type is seen to give ``random() == (word >> 11) 2^-53`` on copies of its state
    (what the exact statements of docs/math.md §3.5-§3.6 assume); ValidationError otherwise (e.g. randomgen's DSFMT,
    whose doubles come from another recipe and would realise other tables than the certified ones)."""
    kind = type(bit_generator)
    if kind not in _DOUBLES_CHECKED:
        words = copy.deepcopy(bit_generator).random_raw(4)
        doubles = np.random.Generator(copy.deepcopy(bit_generator)).random(4)
        if not np.array_equal(doubles, (words >> np.uint64(11)).astype(float) * 2.0**-53):
            raise ValidationError(f"rng is a {kind.__name__} bit stream; its random() is not the top 53 bits of "
                                  "one 64-bit word, so the certified tables would not be what it samples (use "
                                  "None, an int seed, PCG64, ChaCha or AESCounter)")
        _DOUBLES_CHECKED.add(kind)
    return bit_generator


def _alias_row(row: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Vose's alias construction for one row; zero entries are never reachable (see module docstring)."""
    n = row.size
    total = row.sum()
    scaled = row * (n / total)
    prob = np.ones(n, dtype=np.float64)
    alias = np.arange(n, dtype=np.int64)
    positive = row > 0
    # Zero columns first (they sit at the end of the stack, so they are popped first): each is paired with a
    # column of mass > 1, which exists while any zero column is left (the remaining mass equals the number of
    # remaining slots, one of which holds 0).
    small = [j for j in range(n) if scaled[j] < 1.0 and positive[j]]
    small += [j for j in range(n) if not positive[j]]
    large = [j for j in range(n) if scaled[j] >= 1.0]
    while small and large:
        s = small.pop()
        g = large.pop()
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] = (scaled[g] + scaled[s]) - 1.0
        if scaled[g] < 1.0:
            small.append(g)
        else:
            large.append(g)
    # Leftovers (large, or small only through floating-point drift) keep prob = 1 and alias = self.
    # Safety net, whatever drift did: a zero column is never its own output and never an alias target.
    best = int(np.argmax(row))
    zero = ~positive
    prob[zero] = 0.0
    bad_alias = zero[alias]
    alias[zero & bad_alias] = best  # a zero slot aliased to a zero column: send it to the largest entry
    prob[positive & bad_alias] = 1.0  # a positive slot aliased to a zero column: never take the alias
    alias[positive & bad_alias] = np.flatnonzero(positive & bad_alias)
    return prob, alias


class TablePerturber(Immutable):
    """Perturb integer inputs with a validated table ``Q`` (docs/math.md §1, §3.6) using per-row alias tables.

    ``TablePerturber(table).perturb(values, rng)`` returns an int64 array of the same shape as ``values`` with
    ``out[i] ~ Q[values[i], :]``, independently. Attributes: ``table`` (float64 copy), ``k``, ``n_out``,
    ``prob`` and ``alias`` (both ``(k, n_out)``, the alias tables). One uniform per value (Walker/Vose: the slot
    and the coin come from the same draw); an output whose table entry is 0 is never produced, and
    ``realized_table`` is the exact distribution sampled, on which ``TableMechanism`` verifies its claim.
    Immutable.

    Parameters
    ----------
    table : array_like of float
        The table, shape ``(k, n_out)``, non-negative, every row summing to 1 (within 1e-9).
    chunk_size : int, default 65536
        Values processed per chunk (``DEFAULT_CHUNK``); it does not change the result.

    Raises
    ------
    ValidationError
        If ``table`` is not a non-negative matrix whose rows sum to 1, or ``chunk_size`` is not an integer.

    See Also
    --------
    TableMechanism : A table with the privacy claim it is verified against.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> from lipdesign.mechanisms import TablePerturber
    >>> sampler = TablePerturber([[0.75, 0.25], [0.1, 0.9]])
    >>> sampler
    TablePerturber(k=2, n_out=2)
    >>> reports = sampler.perturb(np.repeat([0, 1], [5000, 5000]), rng=0)
    >>> np.bincount(reports[:5000]) / 5000, np.bincount(reports[5000:]) / 5000  # the rows, from 5000 draws
    (array([0.7554, 0.2446]), array([0.1012, 0.8988]))
    """

    def __init__(self, table: npt.ArrayLike, chunk_size: int = DEFAULT_CHUNK) -> None:
        self.table = stochastic_rows(table, "table")
        self.k, self.n_out = self.table.shape
        self.chunk_size = integer(chunk_size, "chunk_size")
        prob = np.empty((self.k, self.n_out), dtype=np.float64)
        alias = np.empty((self.k, self.n_out), dtype=np.int64)
        for x in range(self.k):
            prob[x], alias[x] = _alias_row(self.table[x])
        for array in (self.table, prob, alias):
            array.setflags(write=False)
        self.prob = prob
        self.alias = alias
        self._prob_flat = prob.ravel()  # views of read-only arrays are read-only
        self._alias_flat = alias.ravel()

    def implied_table(self) -> npt.NDArray[np.float64]:
        """The exact output distribution the alias tables produce (equals ``table`` up to rounding).

        Returns
        -------
        numpy.ndarray
            Shape ``(k, n_out)``: the distribution of ``perturb`` if its uniforms were real numbers.
        """
        out = np.zeros((self.k, self.n_out))
        rows = np.repeat(np.arange(self.k), self.n_out)
        np.add.at(out, (rows, np.tile(np.arange(self.n_out), self.k)), self._prob_flat)
        np.add.at(out, (rows, self._alias_flat), 1.0 - self._prob_flat)
        return out / self.n_out

    def thresholds(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(start, keep_end): the alias tables in integers on k = (word >> 11), the 53 bits that ``random()`` turns
        into u = k / 2^53 (docs/runtime.md, the integer alias method). Slot j takes the k in [start[j], start[j+1])
        (start[n_out] = 2^53) and keeps its own output j exactly when k < keep_end[x, j], else gives alias[x, j].

        Every step of ``perturb`` is a deterministic function of k: the slot j = min(floor(fl(u n_out)), n_out - 1)
        and the coin fl(u n_out) - j (an exact subtraction), which keeps j when below ``prob[x, j]``. Both are
        monotone in k, so the k of each slot and of each kept coin form intervals, found by bisection over k
        vectorised, 54 steps).

        Returns
        -------
        start : numpy.ndarray
            int64, shape ``(n_out,)``: the first k of each slot.
        keep_end : numpy.ndarray
            int64, shape ``(k, n_out)``: per value and slot, the end of the k that keep the slot's own output.

        Examples
        --------
        >>> from lipdesign.mechanisms import TablePerturber
        >>> start, keep_end = TablePerturber([[0.75, 0.25], [0.1, 0.9]]).thresholds()
        >>> start / 2**53, keep_end / 2**53
        (array([0. , 0.5]), array([[0.5 , 0.75], [0.1 , 1.  ]]))
        """
        n_out, last, top = self.n_out, self.n_out - 1, 2**53

        def first_k(reached, shape):
            """Smallest k in 0..2^53 with reached(fl(k 2^-53 n_out)) True (monotone), elementwise."""
            low = np.zeros(shape, dtype=np.int64)
            high = np.full(shape, top, dtype=np.int64)
            while np.any(low < high):
                middle = (low + high) // 2
                hit = reached((middle.astype(np.float64) * 2.0**-53) * n_out)
                high = np.where(hit, middle, high)
                low = np.where(hit, low, middle + 1)
            return low

        slots = np.arange(n_out)
        start = first_k(lambda v: np.minimum(np.floor(v), last) >= slots, (n_out,))
        end = np.append(start[1:], top)
        kept_end = first_k(lambda v: v - slots >= self.prob, (self.k, n_out))  # the coin v - j reaches prob[x, j]
        return start, np.clip(kept_end, start, end)

    def realized_table(self) -> npt.NDArray[np.float64]:
        """The exact output distribution ``perturb`` realises, as exact dyadic floats (counts / 2^53).

        From ``thresholds`` (docs/math.md §3.6). Unlike ``implied_table`` this accounts for the resolution of the
        coin, which matters for tiny entries.

        Returns
        -------
        numpy.ndarray
            Shape ``(k, n_out)``; every entry is a multiple of 2^-53 and every row sums to 1 exactly.

        Examples
        --------
        >>> import numpy as np
        >>> from lipdesign.mechanisms import TablePerturber
        >>> sampler = TablePerturber([[0.75, 0.25], [0.1, 0.9]])
        >>> realized = sampler.realized_table()
        >>> realized
        array([[0.75, 0.25], [0.1 , 0.9 ]])
        >>> print(np.abs(realized - sampler.table).max() < 1e-15, (realized * 2**53 % 1 == 0).all())
        True True
        """
        start, keep_end = self.thresholds()
        end = np.append(start[1:], 2**53)
        counts = np.zeros((self.k, self.n_out), dtype=np.int64)
        rows = np.repeat(np.arange(self.k), self.n_out)
        np.add.at(counts, (rows, np.tile(np.arange(self.n_out), self.k)), (keep_end - start).ravel())
        np.add.at(counts, (rows, self._alias_flat), (end - keep_end).ravel())
        return counts / 2.0**53

    def perturb(self, values: npt.ArrayLike, rng: RandomSource = None) -> npt.NDArray[np.int64]:
        """Perturb every entry of ``values`` (integer indices in 0..k-1, any shape); returns int64, same shape.

        ``rng``: see ``as_generator`` (None = the secure ChaCha20 stream). One uniform per value, processed in
        chunks of ``chunk_size`` without per-value Python loops; deterministic for a given seed (the chunk size
        does not change the result, since each double consumes exactly one draw of the bit generator).

        Parameters
        ----------
        values : array_like of int
            Row indices in 0..k-1, any shape.
        rng : numpy.random.Generator, numpy.random.BitGenerator, int or None, optional
            The randomness (``as_generator``); by default None, the secure ChaCha20 stream.

        Returns
        -------
        numpy.ndarray
            int64, the shape of ``values``: an output index drawn from the row of each value.

        Raises
        ------
        ValidationError
            If ``values`` are not integers in 0..k-1, or ``rng`` is not a source of randomness.

        Examples
        --------
        >>> from lipdesign.mechanisms import TablePerturber
        >>> TablePerturber([[0.75, 0.25], [0.1, 0.9]]).perturb([[0, 1], [1, 0]], rng=0)
        array([[1, 1], [0, 0]])
        """
        arr = index_array(values, self.k, "values", check_range=False)
        flat = arr.ravel()
        check = arr.shape
        if flat.size == 1:
            check_indices(flat, self.k, "values", arr.shape)
            check = None
        return self.sample(flat, as_generator(rng), check).reshape(arr.shape)

    def sample(self, indices: npt.NDArray[np.integer[Any]], rng: np.random.Generator,
               check: tuple[int, ...] | None = None) -> npt.NDArray[np.int64]:
        """``perturb`` of the integer vector ``indices`` with the numpy Generator ``rng``, for a checked caller.

        For a caller that has checked that they lie in 0..k-1 (``check``: None, or the shape to name when checking
        them chunk by chunk). One value is drawn with Python floats (the same IEEE doubles and the same one draw,
        without numpy's per-call costs: docs/runtime.md), more in chunks; the same outputs as ``perturb``.

        Parameters
        ----------
        indices : numpy.ndarray of int
            A vector of row indices.
        rng : numpy.random.Generator
            The generator to draw from (its state advances by one draw per value).
        check : tuple of int, optional
            None (the default): the caller has checked the indices. A shape: check each chunk of a vector of more
            than one index, naming this shape in the error.

        Returns
        -------
        numpy.ndarray
            int64 vector: an output index per entry of ``indices``.

        Raises
        ------
        ValidationError
            If ``check`` is given and an index lies outside 0..k-1.

        Examples
        --------
        >>> import numpy as np
        >>> from lipdesign.mechanisms import TablePerturber
        >>> TablePerturber([[0.75, 0.25], [0.1, 0.9]]).sample(np.array([0, 1, 1]), np.random.default_rng(0))
        array([1, 1, 0])
        """
        if indices.size != 1:
            return self._chunked(indices, rng, check)
        v = rng.random() * self.n_out
        j = min(int(v), self.n_out - 1)  # int() truncates: the floor, since v >= 0
        slot = int(indices[0]) * self.n_out + j
        return np.array([j if v - j < self._prob_flat[slot] else self._alias_flat[slot]], dtype=np.int64)

    def _chunked(self, flat, gen, shape):
        """The values of ``flat`` in chunks of ``chunk_size``, each range-checked first (naming ``shape``) unless
        ``shape`` is None."""
        size = flat.size
        out = np.empty(size, dtype=np.int64)
        n_out = self.n_out
        last = n_out - 1
        prob = self._prob_flat
        alias = self._alias_flat
        step = self.chunk_size
        buf = np.empty(min(step, size), dtype=np.float64)
        j = np.empty(buf.size, dtype=np.int64)
        coin = np.empty(buf.size, dtype=np.float64)
        idx = np.empty(buf.size, dtype=np.int64)
        pbuf = np.empty(buf.size, dtype=np.float64)
        take = np.empty(buf.size, dtype=np.bool_)
        same_dtype = flat.dtype == np.int64
        for start in range(0, size, step):
            xs = flat[start : start + step]
            m = xs.size
            if shape is not None:
                check_indices(xs, self.k, "values", shape, offset=start)
            u, jj, cc, ii, pp, tt = buf[:m], j[:m], coin[:m], idx[:m], pbuf[:m], take[:m]
            gen.random(out=u)
            np.multiply(u, n_out, out=u)
            np.copyto(jj, u, casting="unsafe")  # truncation == floor, since u >= 0
            np.minimum(jj, last, out=jj)  # u * n_out < n_out in IEEE arithmetic; belt and braces
            np.subtract(u, jj, out=cc)  # the coin: fractional part of u * n_out
            if same_dtype:
                np.multiply(xs, n_out, out=ii)
            else:  # widen first: small integer dtypes would overflow in x * n_out
                np.copyto(ii, xs, casting="unsafe")  # safe: the range was checked above
                np.multiply(ii, n_out, out=ii)
            np.add(ii, jj, out=ii)  # flat slot index x * n_out + j
            np.take(prob, ii, out=pp, mode="clip")  # indices are in range; "clip" avoids buffering
            np.less(cc, pp, out=tt)
            res = out[start : start + m]
            np.take(alias, ii, out=res, mode="clip")
            np.copyto(res, jj, where=tt)
        return out

    def __repr__(self) -> str:
        return f"TablePerturber(k={self.k}, n_out={self.n_out})"

    def device_numbers(self) -> dict[str, Any]:
        """The integer alias tables (docs/runtime.md §4): ``thresholds()`` and the alias of every slot.

        Returns
        -------
        dict
            ``slot_start`` (a list), ``keep_end`` and ``alias`` (lists of lists), as plain ints for JSON.
        """
        start, keep_end = self.thresholds()
        return {"slot_start": start.tolist(), "keep_end": keep_end.tolist(), "alias": self.alias.tolist()}


def implemented_exp(epsilon: float) -> float:
    """The e^eps a finite mechanism uses: slightly below the true e^eps (see EXP_MARGIN)."""
    return math.exp(epsilon) * (1.0 - EXP_MARGIN)


def realized_probability(probability: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Pr[rng.random() < p] exactly: numpy's random() is k / 2^53, so it is ceil(p 2^53) / 2^53 (a double)."""
    return np.ceil(np.asarray(probability, dtype=float) * 2.0**53) / 2.0**53


def public_seed(seed: int | None, field: str = "seed") -> int:
    """A seed of public randomness: an int in [0, 2**63); ``None`` draws a fresh one from the OS CSPRNG (it is
    stored with the mechanism and exported, since the server needs it)."""
    if seed is None:
        return secrets.randbits(63)
    return integer(seed, field, low=0, high=MAX_SEED - 1)


def public_index(seed: int, user_ids: npt.ArrayLike, size: int) -> npt.NDArray[np.int64]:
    """Public randomness: a uniform index in 0..size-1 per user id, derived from ``seed`` and the id by the
    SplitMix64 finaliser (Steele, Lea, Flood 2014), so the server recomputes it from the id alone.

    ``user_ids``: non-negative integers below 2**63. Vectorised; the result is int64.
    """
    ids = np.asarray(user_ids)
    if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
        raise ValidationError(f"user_ids has dtype {ids.dtype} and shape {ids.shape}; user_ids must be a "
                              "non-empty vector of integers")
    if ids.min() < 0:
        raise ValidationError(f"user_ids contains {fmt(ids.min())}; user ids must be non-negative integers")
    with np.errstate(over="ignore"):
        z = ids.astype(np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    # Multiply-shift maps the 64-bit hash to 0..size-1 with bias below size / 2**32.
    return ((z >> np.uint64(32)) * np.uint64(size) >> np.uint64(32)).astype(np.int64)


def structured_reports(reports: Any, dtype: Any) -> npt.NDArray[Any]:
    """Check that ``reports`` is a vector of records with exactly the fields of ``dtype`` (in any order; another
    mechanism's reports, with other or extra fields, are refused), each a scalar integer, as a ``perturb``
    returns them. An empty vector is allowed (an empty partition aggregates to zero)."""
    fields = getattr(getattr(reports, "dtype", None), "names", None)
    if not isinstance(reports, np.ndarray) or fields is None or set(fields) != set(dtype.names):
        got = f"dtype {reports.dtype}" if isinstance(reports, np.ndarray) else f"type {type(reports).__name__}"
        raise ValidationError(f"reports has {got}; it must be a numpy structured array with exactly the fields "
                              f"{', '.join(dtype.names)} (dtype {dtype}), as perturb returns")
    for name in dtype.names:
        field = reports.dtype.fields[name][0]
        if field.shape != () or field.kind not in "iu":
            raise ValidationError(f"reports['{name}'] has dtype {field}; every field of the reports must be a "
                                  f"scalar integer (perturb returns {dtype[name]})")
    if reports.ndim != 1:
        raise ValidationError(f"reports has shape {reports.shape}; it must be a vector of reports")
    return reports


def sign_field(reports: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """``reports['sign']`` as int64, refusing any value other than -1 and +1 (compared in the field's own
    dtype: casting a huge unsigned value first would wrap it onto -1)."""
    sign = reports["sign"]
    bad = np.flatnonzero(sign != 1 if sign.dtype.kind == "u" else (sign != 1) & (sign != -1))
    if bad.size:
        raise ValidationError(f"reports['sign'][{bad[0]}] is {fmt(sign[bad[0]])}; every sign must be -1 or +1")
    return sign.astype(np.int64)


def index_reports(reports: npt.ArrayLike, bound: int) -> npt.NDArray[np.int64]:
    """Reports that are output indices (GRR, Hadamard, designed tables): an int64 vector in 0..bound-1, possibly
    empty."""
    indices = index_array(reports, bound, "reports")
    if indices.ndim != 1:
        raise ValidationError(f"reports has shape {indices.shape}; it must be a vector of reports")
    return indices
