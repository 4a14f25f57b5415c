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
from lipdesign.validation import fmt, integer

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy.typing as npt

    from lipdesign.mechanisms.sampling import RandomSource

WORD = 2**32

#: The BLAKE2b personalisation of ``derived_keys`` (16 bytes).
DEVICE_PERSON = b"lipdesign.device"


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


def derived_keys(master: bytes, devices: npt.ArrayLike) -> npt.NDArray[np.uint32]:
    """Device keys derived from one secret master key, for simulations and gateways that perturb on devices'
    behalf (docs/runtime.md §15): device d's key is BLAKE2b-256 of d (8 bytes, little-endian) keyed by ``master`` and
    personalised with ``DEVICE_PERSON``. Distinct devices get independent keys; the master key never leaves the
    key file.

    Parameters
    ----------
    master : bytes
        The master key, 32 bytes.
    devices : array_like of int
        Device ids, 0 to 2^63 - 1.

    Returns
    -------
    numpy.ndarray
        uint32 (n, 8).

    Examples
    --------
    >>> from lipdesign.mechanisms.memo import derived_keys
    >>> keys = derived_keys(bytes(32), [0, 1, 0])
    >>> keys.shape, bool((keys[0] == keys[2]).all()), bool((keys[0] == keys[1]).all())
    ((3, 8), True, False)
    """
    ids = np.asarray(devices)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer) or (ids.size and ids.min() < 0):
        raise ValidationError(f"devices is {fmt(devices)}; device ids are integers 0 to 2^63 - 1, one per value")
    digests = b"".join(hashlib.blake2b(int(device).to_bytes(8, "little"), digest_size=32, key=master,
                                       person=DEVICE_PERSON).digest() for device in ids.tolist())
    return np.frombuffer(digests, dtype="<u4").reshape(len(ids), 8).astype(np.uint32)


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


__all__ = ["DEVICE_PERSON", "checked_keys", "derived_keys", "device_keys", "memo_nonces", "memo_words"]
