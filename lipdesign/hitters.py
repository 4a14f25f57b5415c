"""Heavy hitters over strings nobody listed: a whole simulated one-round collection with PEM or TreeHist
(``ld.heavy_hitters``, docs/math.md §18), and the reading of a text file of strings, one per line, for the CLI.
Numpy only."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.heavy_hitters import DEFAULT_HH_BYTES, PEM, TreeHist
from lipdesign.mechanisms.sampling import MAX_SEED, as_generator
from lipdesign.strings import encoded
from lipdesign.strings import max_bytes as checked_max_bytes
from lipdesign.validation import choice, fmt

if TYPE_CHECKING:
    import os

    from lipdesign.mechanisms.estimate import Estimate

#: The protocols ``heavy_hitters`` runs, by name.
PROTOCOLS = {"pem": PEM, "treehist": TreeHist}


def truncated(data: bytes, limit: int) -> bytes:
    """``data`` (UTF-8) cut to at most ``limit`` bytes at a character boundary: a character that does not fit is
    dropped whole."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and data[cut] & 0xC0 == 0x80:  # data[cut] continues the character that starts before it
        cut -= 1
    return data[:cut]


def heavy_hitters(values: Any, *, epsilon: float, top: int = 20, protocol: str = "pem",
                  max_bytes: int = DEFAULT_HH_BYTES, truncate: bool = False, seed: int | None = None,
                  **options: Any) -> Estimate:
    """The ``top`` most frequent strings among ``values`` and their frequencies, from one simulated round of PEM or
    TreeHist: every user perturbs her string once (eps-LDP), the server aggregates and searches (docs/math.md §18).

    Parameters
    ----------
    values : sequence of str or bytes
        One string per user: non-empty, valid UTF-8, at most ``max_bytes`` bytes (see ``truncate``).
    epsilon : float
        Each user's LDP level (her one report), in [1e-6, 10].
    top : int, default 20
        How many strings to return (TreeHist may return fewer: only prefixes above its threshold survive).
    protocol : {"pem", "treehist"}, default "pem"
        ``ld.mechanisms.PEM`` or ``ld.mechanisms.TreeHist``.
    max_bytes : int, default 16
        L, the longest string in bytes of UTF-8; also the number of levels (groups of users), so the smallest L
        that holds the strings sought is the most accurate.
    truncate : bool, default False
        Cut a longer string to ``max_bytes`` bytes at a character boundary instead of refusing it.
    seed : int, optional
        Seeds the users' randomness and the public hash seed; None draws both from the operating system.
    **options
        Further arguments of the protocol's class (``rows``, ``g`` or ``m``, ``keep``, and TreeHist's ``z``).

    Returns
    -------
    Estimate
        The strings found (``names``), largest first, with their estimated frequencies (from the last level's
        users), standard errors and ``confidence_interval``. The strings are selected as the largest of many
        estimates, so their intervals hold for strings fixed in advance, not for the selection: at low epsilon a
        string found may be noise whose true share is 0 and whose interval misses 0 (re-estimate the strings found
        on a fresh collection, e.g. with RAPPOR or a sketch over them as candidates, for intervals that hold).

    Raises
    ------
    ValidationError
        A value that is not a non-empty string of valid UTF-8 within ``max_bytes`` bytes (without ``truncate``),
        an epsilon outside [1e-6, 10], ``top`` below 1, or an unknown protocol or option.

    See Also
    --------
    lipdesign.mechanisms.PEM, lipdesign.mechanisms.TreeHist : The families, for a real device/server split.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> words = np.array(["the", "of", "and", "to", "in", "is", "you", "that"], dtype=object)
    >>> users = words[np.random.default_rng(0).choice(8, size=200_000, p=[.3, .2, .15, .1, .1, .07, .05, .03])]
    >>> found = ld.heavy_hitters(users, epsilon=4.0, top=3, max_bytes=4, seed=1)
    >>> found.names
    ['the', 'of', 'and']
    >>> np.round(found.values, 2)
    array([0.3 , 0.2 , 0.15])
    >>> np.round(found.confidence_interval(0.95)[0], 3)
    array([0.295, 0.197, 0.143])
    """
    name = choice(protocol, "protocol", tuple(PROTOCOLS))
    limit = checked_max_bytes(max_bytes)
    if not isinstance(truncate, bool):
        raise ValidationError(f"truncate is {fmt(truncate)}; it must be True or False")
    data = encoded(values, sys.maxsize if truncate else limit)  # checked as UTF-8 (and its length), cut below
    if truncate:
        data = [truncated(item, limit) for item in data]
        empty = next((i for i, item in enumerate(data) if not item), None)
        if empty is not None:
            raise ValidationError(f"values[{empty}] is empty once cut to max_bytes = {limit} bytes at a character "
                                  "boundary (its first character is longer)")
    rng = as_generator(seed)
    public = int(rng.integers(0, MAX_SEED)) if seed is not None else None
    mechanism = PROTOCOLS[name](epsilon, max_bytes=limit, seed=public, top=top, **options)
    reports = mechanism._perturb(data, rng, None)  # ``data`` is checked above, as ``perturb`` would check it again
    return mechanism.estimate(mechanism.aggregate(reports))


def read_strings(path: str | os.PathLike[str], max_bytes: int, truncate: bool = False,
                 too_long: str = "pass --truncate to cut it, or a larger --max-bytes") -> list[bytes]:
    """The lines of a text file as UTF-8 strings (a final newline ends the last line; a carriage return before a
    newline is dropped; a UTF-8 byte-order mark at the start of the file is not part of the first string), each
    checked: valid UTF-8, not empty, at most ``max_bytes`` bytes (or cut at a character boundary with
    ``truncate``).

    Parameters
    ----------
    path : str or os.PathLike
        The file, one string per line.
    max_bytes : int
        The longest string, in bytes.
    truncate : bool, default False
        Cut longer strings instead of refusing them.
    too_long : str, optional
        What the refusal of a longer string advises (the heavy-hitters command's options by default).

    Returns
    -------
    list of bytes
        One string per line.

    Raises
    ------
    ValidationError
        Naming the file and the line number: invalid UTF-8, an empty line, or a line over ``max_bytes`` bytes.

    Examples
    --------
    >>> from pathlib import Path
    >>> from lipdesign.hitters import read_strings
    >>> _ = Path("words.txt").write_bytes(b"the\\nof\\nth\\xc3\\xa9\\n")
    >>> read_strings("words.txt", max_bytes=4)
    [b'the', b'of', b'th\\xc3\\xa9']
    >>> read_strings("words.txt", max_bytes=3, truncate=True)
    [b'the', b'of', b'th']
    >>> _ = Path("bad.txt").write_bytes(b"the\\n\\xff\\n")
    >>> read_strings("bad.txt", max_bytes=4)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: FILE 'bad.txt' line 2 is not valid UTF-8 (invalid start byte at byte 0)
    """
    limit = checked_max_bytes(max_bytes)
    with open(path, "rb") as handle:
        content = handle.read()
    content = content.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark (U+FEFF) some editors write first
    where = f"FILE {str(path)!r}"
    try:
        content.decode("utf-8")
    except UnicodeDecodeError as error:
        line = content.count(b"\n", 0, error.start) + 1
        start = content.rfind(b"\n", 0, error.start) + 1
        raise ValidationError(f"{where} line {line} is not valid UTF-8 ({error.reason} at byte "
                              f"{error.start - start})") from None
    lines = content.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    if not lines:
        raise ValidationError(f"{where} holds no line; it must hold one string per line")
    lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
    if (lengths == 0).any():
        raise ValidationError(f"{where} line {int(np.argmax(lengths == 0)) + 1} is empty; every line must hold a "
                              "string")
    if truncate:
        lines = [truncated(line, limit) for line in lines]
        lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
        if (lengths == 0).any():
            raise ValidationError(f"{where} line {int(np.argmax(lengths == 0)) + 1} is empty once cut to max_bytes "
                                  f"= {limit} bytes at a character boundary")
    elif (lengths > limit).any():
        line = int(np.argmax(lengths > limit))
        raise ValidationError(f"{where} line {line + 1} is {lengths[line]} bytes; every string must be at most "
                              f"max_bytes = {limit} bytes ({too_long})")
    return lines
