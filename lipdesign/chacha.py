"""The ChaCha20 block function ([ChaCha], RFC 8439 §2.3), vectorised over many blocks with numpy: the keyed
pseudo-random function a device memoises its permanent responses with (docs/math.md §16.5). Numpy only.

``block(key, words)`` takes the 8 key words and the 4 words of state positions 12-15 (a block counter and a nonce,
laid out as the caller's construction says) for each of n blocks, and returns their 16 output words. RFC 8439's
variant puts a 32-bit counter in word 12 and a 96-bit nonce in words 13-15; the original (and libsodium's
``crypto_stream_chacha20``) a 64-bit counter in words 12-13 and a 64-bit nonce in words 14-15.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

#: "expand 32-byte k" as four little-endian words: state words 0-3.
CONSTANTS = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)

#: The quarter rounds of a double round: four on the columns, four on the diagonals.
DOUBLE_ROUND = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))


def _rotate(x: npt.NDArray[np.uint32], bits: int) -> npt.NDArray[np.uint32]:
    return (x << np.uint32(bits)) | (x >> np.uint32(32 - bits))


def block(key: npt.ArrayLike, words: npt.ArrayLike) -> npt.NDArray[np.uint32]:
    """The ChaCha20 output blocks for n inputs (RFC 8439 §2.3: 20 rounds, then the input added word by word).

    Parameters
    ----------
    key : array_like of uint32, shape (n, 8) or (8,)
        The 256-bit keys as 8 little-endian words each.
    words : array_like of uint32, shape (n, 4)
        State words 12-15 of each block (counter and nonce).

    Returns
    -------
    numpy.ndarray
        uint32 (n, 16): the 16 output words of each block, in order.

    Examples
    --------
    RFC 8439 §2.3.2's test vector: key 00:01:..:1f, counter 1, nonce 00:00:00:09:00:00:00:4a:00:00:00:00.

    >>> import numpy as np
    >>> from lipdesign.chacha import block
    >>> key = np.frombuffer(bytes(range(32)), dtype="<u4")
    >>> nonce = np.frombuffer(bytes.fromhex("000000090000004a00000000"), dtype="<u4")
    >>> out = block(key, np.concatenate(([1], nonce))[None, :])
    >>> [f"{word:08x}" for word in out[0, :4]]
    ['e4e7f110', '15593bd1', '1fdd0f50', 'c47120a3']
    """
    words = np.asarray(words, dtype=np.uint32)
    key = np.broadcast_to(np.asarray(key, dtype=np.uint32), (words.shape[0], 8))
    state = [np.full(words.shape[0], constant, dtype=np.uint32) for constant in CONSTANTS]
    state += [key[:, i].copy() for i in range(8)] + [words[:, i].copy() for i in range(4)]
    x = [word.copy() for word in state]
    for _ in range(10):
        for a, b, c, d in DOUBLE_ROUND:
            x[a] += x[b]
            x[d] = _rotate(x[d] ^ x[a], 16)
            x[c] += x[d]
            x[b] = _rotate(x[b] ^ x[c], 12)
            x[a] += x[b]
            x[d] = _rotate(x[d] ^ x[a], 8)
            x[c] += x[d]
            x[b] = _rotate(x[b] ^ x[c], 7)
    return np.stack([x[i] + state[i] for i in range(16)], axis=1)


def stream_words(key: npt.ArrayLike, nonce: npt.ArrayLike, count: int, first_block: int = 0) -> npt.NDArray[np.uint32]:
    """``count`` 32-bit words of the original ChaCha20 stream (64-bit block counter in words 12-13, from
    ``first_block``; 64-bit nonce in words 14-15) for each of n (key, nonce) pairs.

    Parameters
    ----------
    key : array_like of uint32, shape (n, 8)
        The keys.
    nonce : array_like of uint64, shape (n,)
        The nonces (word 14 its low half, word 15 its high half).
    count : int
        Words per pair.
    first_block : int, default 0
        The block counter of the first word.

    Returns
    -------
    numpy.ndarray
        uint32 (n, count).

    Examples
    --------
    >>> import numpy as np
    >>> from lipdesign.chacha import stream_words
    >>> stream_words(np.zeros((2, 8), np.uint32), np.array([0, 0], np.uint64), 20).shape
    (2, 20)
    """
    key = np.asarray(key, dtype=np.uint32)
    nonce = np.asarray(nonce, dtype=np.uint64)
    n, blocks = nonce.shape[0], -(-count // 16)
    counters = np.tile(np.arange(blocks, dtype=np.uint64) + np.uint64(first_block), n)
    pairs = np.repeat(np.arange(n), blocks)
    low, high = np.uint64(0xFFFFFFFF), np.uint64(32)
    words = np.stack([(counters & low).astype(np.uint32), (counters >> high).astype(np.uint32),
                      (nonce[pairs] & low).astype(np.uint32), (nonce[pairs] >> high).astype(np.uint32)], axis=1)
    return block(key[pairs], words).reshape(n, blocks * 16)[:, :count]
