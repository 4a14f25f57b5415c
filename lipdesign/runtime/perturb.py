"""Runtime perturbation with a finite table (numpy only).

Table convention (MATH §1): ``Q`` has shape ``(k, n_out)``, ``Q[x, y] = Pr[Y=y | X=x]``, every row sums to 1.
Inputs ``x`` and outputs ``y`` are integer indices ``0..k-1`` and ``0..n_out-1``; labels are the caller's job.

Sampling uses Walker/Vose alias tables, one per input row, and ONE uniform per value: with ``u`` uniform on
[0, 1), ``j = floor(u * n_out)`` picks a slot and the fractional part ``u * n_out - j`` is the coin that decides
between the slot's own output ``j`` (if ``coin < prob[x, j]``) and ``alias[x, j]``. The construction guarantees
that an output whose table entry is 0 can never be produced (MATH §8 lists "a lie that can equal the truth" and
"one bucket never reported" among the known bugs; the exact distribution implied by ``prob``/``alias`` is the table
up to floating-point rounding, see ``TablePerturber.implied_table``).
"""

from __future__ import annotations

import numbers
import secrets

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.validation import stochastic_rows

__all__ = ["TablePerturber", "as_generator", "counts", "index_array", "validate_table"]

#: Values processed per chunk: 2**16 values keep every temporary (8 bytes each) in the L2 cache.
DEFAULT_CHUNK = 2**16


def as_generator(rng=None) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` for ``rng``.

    ``None``: a fresh generator seeded from the operating system's CSPRNG (``secrets.randbits(128)``), which is
    what a device should use. A non-negative ``int``: ``numpy.random.default_rng(rng)`` (reproducible, for tests
    and simulations). A ``Generator``: returned as is (its state advances). Anything else: ``ValidationError``.
    """
    if rng is None:
        return np.random.default_rng(secrets.randbits(128))
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (bool, np.bool_)):
        raise ValidationError(
            f"rng is {rng!r} (a bool); must be None, a non-negative int seed or a numpy.random.Generator"
        )
    if isinstance(rng, numbers.Integral):
        if int(rng) < 0:
            raise ValidationError(
                f"rng is {int(rng)}; an int seed must be non-negative "
                "(or pass None or a numpy.random.Generator)"
            )
        return np.random.default_rng(int(rng))
    raise ValidationError(
        f"rng is {rng!r} of type {type(rng).__name__}; "
        "must be None, a non-negative int seed or a numpy.random.Generator"
    )


def validate_table(table, name: str = "table") -> np.ndarray:
    """Return ``table`` as a float64 ``(k, n_out)`` array, or raise ``ValidationError`` (MATH §1): finite,
    >= 0, every row summing to 1 within 1e-9 (``lipdesign.validation.stochastic_rows``)."""
    return stochastic_rows(table, name)


def fmt(v) -> str:
    """A number as it should appear in an error message: ``7``, ``1.5``, ``nan`` (no ``np.float64(...)``)."""
    if isinstance(v, (np.integer, int)) and not isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if isinstance(v, (np.floating, float)):
        return repr(float(v))
    return repr(v)


def _position(flat_index: int, shape: tuple) -> str:
    if len(shape) <= 1:
        return str(flat_index)
    return str(tuple(int(i) for i in np.unravel_index(flat_index, shape)))


def _as_index_array(values, bound: int, name: str) -> np.ndarray:
    """Return ``values`` as an integer ndarray (no range check yet); reject non-integer input."""
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        raise ValidationError(
            f"{name} has dtype bool; must be integer indices in 0..{bound - 1} (convert with .astype(int))"
        )
    if np.issubdtype(arr.dtype, np.integer):
        return arr
    if np.issubdtype(arr.dtype, np.floating):
        flat = arr.ravel()
        bad = ~np.isfinite(flat) | (np.floor(flat) != flat)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValidationError(
                f"{name} contains {fmt(flat[i])} at position {_position(i, arr.shape)}; "
                f"must be an integer index in 0..{bound - 1}"
            )
        lo, hi = (flat.min(), flat.max()) if flat.size else (0, 0)
        if lo < 0 or hi > bound - 1:
            _raise_out_of_range(flat, arr.shape, bound, name)
        return arr.astype(np.int64)
    raise ValidationError(
        f"{name} has dtype {arr.dtype}; must be an array of integer indices in 0..{bound - 1}"
    )


def _raise_out_of_range(flat: np.ndarray, shape: tuple, bound: int, name: str, offset: int = 0):
    bad = (flat < 0) | (flat > bound - 1)
    i = int(np.argmax(bad))
    v = flat[i]
    v = int(v) if float(v).is_integer() else v
    raise ValidationError(
        f"{name} contains {fmt(v)} at position {_position(offset + i, shape)}; must be an index in 0..{bound - 1}"
    )


def _alias_row(row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


class TablePerturber:
    """Perturb integer inputs with a validated table ``Q`` (MATH §1) using per-row alias tables.

    ``TablePerturber(table).perturb(values, rng)`` returns an int64 array of the same shape as ``values`` with
    ``out[i] ~ Q[values[i], :]``, independently. Attributes: ``table`` (float64 copy), ``k``, ``n_out``,
    ``prob`` and ``alias`` (both ``(k, n_out)``, the alias tables).
    """

    def __init__(self, table, chunk_size: int = DEFAULT_CHUNK):
        self.table = validate_table(table)
        self.k, self.n_out = self.table.shape
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral) or chunk_size < 1:
            raise ValidationError(f"chunk_size is {fmt(chunk_size)}; must be a positive int")
        self.chunk_size = int(chunk_size)
        prob = np.empty((self.k, self.n_out), dtype=np.float64)
        alias = np.empty((self.k, self.n_out), dtype=np.int64)
        for x in range(self.k):
            prob[x], alias[x] = _alias_row(self.table[x])
        self.prob = prob
        self.alias = alias
        self._prob_flat = prob.ravel()
        self._alias_flat = alias.ravel()
        for arr in (self.table, self.prob, self.alias):
            arr.setflags(write=False)

    def implied_table(self) -> np.ndarray:
        """The exact output distribution the alias tables produce (equals ``table`` up to rounding)."""
        out = np.zeros((self.k, self.n_out))
        rows = np.repeat(np.arange(self.k), self.n_out)
        np.add.at(out, (rows, np.tile(np.arange(self.n_out), self.k)), self._prob_flat)
        np.add.at(out, (rows, self._alias_flat), 1.0 - self._prob_flat)
        return out / self.n_out

    def realized_table(self) -> np.ndarray:
        """The exact output distribution ``perturb`` realises, as exact dyadic floats (counts / 2^53).

        numpy's ``random()`` returns u = k / 2^53 with k uniform on 0..2^53-1, so every step of ``perturb`` is a
        deterministic function of k: the slot j = min(floor(fl(u n_out)), n_out - 1) and the coin fl(u n_out) - j
        (an exact subtraction), which keeps j when below ``prob[x, j]``. Both are monotone in k, so the k of each
        slot and of each kept coin form intervals, found by bisection over k (vectorised, 54 steps). Unlike
        ``implied_table`` this accounts for the resolution of the coin, which matters for tiny entries.
        """
        n_out, last, top = self.n_out, self.n_out - 1, 2**53

        def first_k(reached):
            """Smallest k in 0..2^53 with reached(fl(k 2^-53 n_out)) True (monotone), elementwise."""
            low = np.zeros(reached_shape, dtype=np.int64)
            high = np.full(reached_shape, top, dtype=np.int64)
            while np.any(low < high):
                middle = (low + high) // 2
                hit = reached((middle.astype(np.float64) * 2.0**-53) * n_out)
                high = np.where(hit, middle, high)
                low = np.where(hit, low, middle + 1)
            return low

        slots = np.arange(n_out)
        reached_shape = (n_out,)
        start = first_k(lambda v: np.minimum(np.floor(v), last) >= slots)
        end = np.append(start[1:], top)
        reached_shape = (self.k, n_out)
        kept_end = first_k(lambda v: v - slots >= self.prob)  # the coin v - j is no longer below prob[x, j]
        kept = np.clip(kept_end, start, end) - start
        counts = np.zeros((self.k, n_out), dtype=np.int64)
        rows = np.repeat(np.arange(self.k), n_out)
        np.add.at(counts, (rows, np.tile(slots, self.k)), kept.ravel())
        np.add.at(counts, (rows, self._alias_flat), (end - start - kept).ravel())
        return counts / 2.0**53

    def perturb(self, values, rng=None) -> np.ndarray:
        """Perturb every entry of ``values`` (integer indices in 0..k-1, any shape); returns int64, same shape.

        ``rng``: see ``as_generator`` (None = cryptographically seeded). One uniform per value, processed in
        chunks of ``chunk_size`` without per-value Python loops; deterministic for a given seed (the chunk size
        does not change the result, since each double consumes exactly one draw of the bit generator).
        """
        arr = _as_index_array(values, self.k, "values")
        gen = as_generator(rng)
        flat = arr.ravel()
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
            if xs.min() < 0 or xs.max() > self.k - 1:
                _raise_out_of_range(xs, arr.shape, self.k, "values", offset=start)
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
        return out.reshape(arr.shape)

    def __repr__(self) -> str:
        return f"TablePerturber(k={self.k}, n_out={self.n_out})"


def index_array(values, bound: int, name: str = "values") -> np.ndarray:
    """``values`` as an int64 array of indices in ``0..bound-1`` (any shape), or ``ValidationError`` naming the
    first offending entry, its position and the rule."""
    arr = _as_index_array(values, bound, name)
    flat = arr.ravel()
    if flat.size and (flat.min() < 0 or flat.max() > bound - 1):
        _raise_out_of_range(flat, arr.shape, bound, name)
    return arr.astype(np.int64, copy=False)


def counts(reports, n_out: int) -> np.ndarray:
    """Histogram of ``reports`` (integer outputs in 0..n_out-1, any shape): int64 array of length ``n_out``.

    The estimators in ``lipdesign.runtime.estimate`` take these counts (MATH §4, §8).
    """
    if isinstance(n_out, bool) or not isinstance(n_out, numbers.Integral) or n_out < 1:
        raise ValidationError(f"n_out is {fmt(n_out)}; must be a positive int")
    n_out = int(n_out)
    flat = index_array(reports, int(n_out), "reports").ravel()
    return np.bincount(flat, minlength=int(n_out)).astype(np.int64, copy=False)
