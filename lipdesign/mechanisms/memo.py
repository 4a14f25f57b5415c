"""Memoisation on the device (docs/math.md §16.5, §19.1): one secret key per device and a keyed pseudo-random function
of (mechanism, value), so a device answers the same value the same way every round without storing past answers.

- ``device_keys(n, rng)``: one 256-bit key per device, as 8 32-bit words;
- ``memo_nonces(fingerprint, values, keys)``: the first 8 bytes (little-endian) of BLAKE2b keyed by the device's key
  and personalised with the first 16 bytes of the mechanism's fingerprint (RFC 7693), per value given as bytes;
- ``memo_words(fingerprint, values, keys, count)``: ``count`` words of the ChaCha20 stream keyed by the device's key
  with that nonce (``lipdesign.chacha.stream_words``): the words that decide the value's permanent response.

A key used by two mechanisms gives each its own independent memos (the personalisation), and no one without the key
can pick two values that share a nonce. Numpy and the standard library only.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

from lipdesign.chacha import stream_words
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.sampling import as_generator
from lipdesign.validation import integer

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy.typing as npt

    from lipdesign.mechanisms.sampling import RandomSource

WORD = 2**32


def device_keys(n: int, rng: RandomSource = None) -> npt.NDArray[np.uint32]:
    """One secret 256-bit key per device, as 8 32-bit words (``rng=None``: from the operating system's CSPRNG through
    ChaCha20, docs/math.md §3.8; a seed only for simulations).

    Parameters
    ----------
    n : int
        The number of devices.
    rng : numpy.random.Generator or int, optional
        The source.

    Returns
    -------
    numpy.ndarray
        uint32 (n, 8).

    Examples
    --------
    >>> import lipdesign as ld
    >>> ld.mechanisms.RAPPOR.device_keys(3, rng=0).shape
    (3, 8)
    """
    return as_generator(rng).integers(0, WORD, size=(integer(n, "n"), 8), dtype=np.uint32)


def checked_keys(keys: npt.ArrayLike, n: int | None = None) -> npt.NDArray[np.uint32]:
    """``keys`` as uint32 (n, 8), refused (naming the rule) otherwise or when it has not one row per value."""
    array = np.asarray(keys)
    if array.ndim != 2 or array.shape[1] != 8 or array.dtype != np.uint32:
        raise ValidationError(f"keys has shape {array.shape} and dtype {array.dtype}; a device key is 8 uint32 "
                              "words (256 bits): device_keys(n)")
    if n is not None and len(array) != n:
        raise ValidationError(f"keys has {len(array)} rows; it must have one per value ({n})")
    return array


def memo_nonces(fingerprint: str, values: Sequence[bytes], keys: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint64]:
    """The memo's nonce of each device's value (docs/math.md §16.5): BLAKE2b-64 of the value's bytes, keyed by the
    device's key, personalised with the first 16 bytes of the mechanism's ``fingerprint``. One call per device."""
    person = bytes.fromhex(fingerprint)[:16]
    return np.fromiter((int.from_bytes(hashlib.blake2b(value, digest_size=8, key=key.astype("<u4").tobytes(),
                                                       person=person).digest(), "little")
                        for value, key in zip(values, keys)), dtype=np.uint64, count=len(values))


def memo_words(fingerprint: str, values: Sequence[bytes], keys: npt.NDArray[np.uint32], count: int
               ) -> npt.NDArray[np.uint32]:
    """uint32 (n, count): the first ``count`` words of the ChaCha20 stream keyed by each device's key, with its
    value's nonce (``memo_nonces``)."""
    return stream_words(keys, memo_nonces(fingerprint, values, keys), count)


__all__ = ["checked_keys", "device_keys", "memo_nonces", "memo_words"]
