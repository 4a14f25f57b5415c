"""Values from an open domain: UTF-8 strings, their byte words and the public hash functions of the sketch and
Bloom-filter families (docs/math.md §16.1). Numpy only.

A value is a non-empty string of at most ``max_bytes`` bytes in UTF-8 (``str``, or ``bytes`` that are valid UTF-8).
It is hashed as its byte length and its bytes in little-endian 64-bit words (the last one zero-padded), so two
different strings are two different word sequences; the hash is SplitMix64's finaliser applied word by word,
keyed by a public 64-bit key. docs/runtime.md §12 gives the same recipe for devices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.validation import fmt, integer

if TYPE_CHECKING:
    import numpy.typing as npt

#: The default and the largest ``max_bytes`` of a value (bytes of its UTF-8 encoding).
DEFAULT_MAX_BYTES = 64
MAX_BYTES_LIMIT = 4096

#: SplitMix64's increment (2^64 / golden ratio) and its finaliser's multipliers (docs/runtime.md §7).
GOLDEN = 0x9E3779B97F4A7C15
MIX_1 = 0xBF58476D1CE4E5B9
MIX_2 = 0x94D049BB133111EB


def max_bytes(value: Any, field: str = "max_bytes") -> int:
    """``value`` checked as a byte limit of the values, 1..MAX_BYTES_LIMIT."""
    return integer(value, field, low=1, high=MAX_BYTES_LIMIT)


def encoded(values: Any, limit: int, field: str = "values") -> list[bytes]:
    """The UTF-8 bytes of each value: a non-empty ``str``, or ``bytes`` that are valid UTF-8, of at most ``limit``
    bytes. Refused, naming the first offending entry: other types, an empty string, a longer one, invalid UTF-8 (a
    lone surrogate in a ``str``)."""
    if isinstance(values, (str, bytes)) or (isinstance(values, np.ndarray) and values.ndim != 1) or \
            not hasattr(values, "__iter__"):
        raise ValidationError(f"{field} is {fmt(values)}; it must be a sequence of strings, one per user")
    if isinstance(values, np.ndarray) and values.dtype.kind == "S":
        raise ValidationError(f"{field} has dtype {values.dtype}; numpy's fixed-width bytes drop trailing NUL bytes, "
                              "so pass a list or an object array of bytes")
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if not items:
        raise ValidationError(f"{field} is empty; it must hold at least one string")
    try:
        data = [item.encode("utf-8") if isinstance(item, str) else item for item in items]
        bad = next((i for i, item in enumerate(data) if not isinstance(item, bytes) or not 0 < len(item) <= limit),
                   None)
    except UnicodeEncodeError:
        bad = next(i for i, item in enumerate(items) if isinstance(item, str) and not _encodable(item))
        raise ValidationError(f"{field}[{bad}] is {fmt(items[bad])}; it is not valid Unicode text (a lone surrogate "
                              "cannot be encoded as UTF-8)") from None
    if bad is not None:
        item = items[bad]
        if not isinstance(item, (str, bytes)):
            raise ValidationError(f"{field}[{bad}] is {fmt(item)}; every value must be a string (str, or UTF-8 bytes)")
        if not data[bad]:
            raise ValidationError(f"{field}[{bad}] is the empty string; every value must hold at least one character")
        raise ValidationError(f"{field}[{bad}] is {fmt(item)}, {len(data[bad])} bytes in UTF-8; every value must be at "
                              f"most max_bytes = {limit} bytes (shorten it, or choose a larger max_bytes)")
    for i, item in enumerate(items):
        if isinstance(item, bytes):
            try:
                item.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValidationError(f"{field}[{i}] is {fmt(item)}; it is not valid UTF-8 ({error.reason} at byte "
                                      f"{error.start})") from None
    return data


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def byte_words(data: list[bytes]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """The strings as little-endian 64-bit words, zero-padded: (words (n, W), lengths (n,)), W = the most words of
    any string (ceil(length / 8))."""
    lengths = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
    width = 8 * max(1, -(-int(lengths.max()) // 8)) if lengths.size else 8
    flat = np.frombuffer(b"".join(data), dtype=np.uint8)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    columns = np.arange(width)
    inside = columns[None, :] < lengths[:, None]
    matrix = np.zeros((len(data), width), dtype=np.uint8)
    matrix[inside] = flat[(starts[:, None] + columns[None, :])[inside]]
    return matrix.view("<u8").astype(np.uint64), lengths


def mix(z: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser, elementwise in unsigned 64-bit arithmetic (wrapping)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX_1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX_2)
    return z ^ (z >> np.uint64(31))


def hash_key(seed: int, index: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """The key of hash function ``index`` under a public ``seed``: mix(seed + GOLDEN (index + 1)) mod 2^64."""
    index = np.asarray(index, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return mix(np.uint64(seed) + np.uint64(GOLDEN) * (index + np.uint64(1)))


def string_hash(words: npt.NDArray[np.uint64], lengths: npt.NDArray[np.int64],
                keys: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """The 64-bit hashes of each string under r keys (docs/math.md §16.1): z = mix(key XOR length), then
    z = mix(z XOR w_t) for each of the string's words w_t.

    ``keys`` is (r,) (the same r keys for every string) or (n, r) (each string its own); the result is (n, r)."""
    keys = np.asarray(keys, dtype=np.uint64)
    n = lengths.shape[0]
    keys = np.broadcast_to(keys if keys.ndim == 2 else keys[None, :], (n, keys.shape[-1]))
    count = -(-lengths[:, None] // 8)
    with np.errstate(over="ignore"):
        z = mix(keys ^ lengths[:, None].astype(np.uint64))
        for t in range(words.shape[1]):
            z = np.where(t < count, mix(z ^ words[:, t, None]), z)
    return z


def bounded(hashes: npt.NDArray[np.uint64], size: int) -> npt.NDArray[np.int64]:
    """A hash reduced to 0..size-1 without a modulo bias beyond 2^-32: ((z >> 32) * size) >> 32 (size <= 2^32)."""
    return (((hashes >> np.uint64(32)) * np.uint64(size)) >> np.uint64(32)).astype(np.int64)
