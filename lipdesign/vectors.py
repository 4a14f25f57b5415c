"""Test vectors for other implementations of the runtime (docs/runtime.md): for each case the input, the exact
32-bit words the sampler drew and the report it produced, with the numbers a device reads (``device``).

- ``test_vectors(mechanism, n=32, seed=0)``: a JSON-able dict. The words come from ChaCha20 keyed with ``seed``
  (``secure_generator(seed)``'s stream, docs/math.md §3.8), drawn through a recording bit generator; each case is
  one ``perturb`` call on one value, as a device makes it, and the cases are consecutive calls on that one stream
  (a case begins where the previous one stopped, which may be in the middle of a 64-bit word).
- ``check_vectors(mechanism, vectors)``: replays every case's words through ``mechanism.perturb`` and returns the
  failures (an empty list when every report, and the number of words drawn, match); a case whose input is not in
  the mechanism's input domain is a FormatError naming the case.
- ``write_vectors(mechanism, path, ...)`` and ``read_vectors(path)``: the same as a JSON file (read strictly).

Numpy, randomgen and the standard library only.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import numpy as np
from randomgen import UserBitGenerator

from lipdesign import __version__
from lipdesign.errors import FormatError, ValidationError
from lipdesign.io.schema import read_json
from lipdesign.mechanisms.base import Mechanism
from lipdesign.mechanisms.sampling import secure_generator
from lipdesign.validation import document_header, fmt, integer

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Mapping

FORMAT = "lipdesign.vectors"
FORMAT_VERSION = 1

#: Cases per file by default, and at most (each case is one perturb call through a Python bit generator).
DEFAULT_CASES = 32
MAX_CASES = 10**4

#: How the words of a case are drawn, written into every file (docs/runtime.md §2).
STREAM = ("32-bit words, 8 hex digits each; a 32-bit draw takes the next word, a 64-bit draw the next two (the first "
          "is the low half), a double is (w >> 11) * 2^-53 of a 64-bit draw w (docs/runtime.md)")

_MASK = 0xFFFFFFFF


class WordStream(UserBitGenerator):
    """A bit generator on a stream of 32-bit words, drawn as ChaCha20 draws them (docs/runtime.md §2): a 32-bit
    draw takes the next word, a 64-bit draw the next two (low half first), a double is (w >> 11) 2^-53 of a 64-bit
    draw. It gives ``words`` first, then splits the raw 64-bit outputs of ``source`` (low half first) and appends
    them to ``words``; ``used`` counts the words drawn. A deep copy replays the same words independently."""

    def __init__(self, words: Iterable[int], source: np.random.BitGenerator) -> None:
        self.words = list(words)
        self.source = source
        self.used = 0
        super().__init__(self._next_64, 64, next_64=self._next_64, next_32=self._next_32,
                         next_double=self._next_double)

    def _next_32(self, _state):
        if self.used == len(self.words):
            raw = int(self.source.random_raw())
            self.words += [raw & _MASK, raw >> 32]
        self.used += 1
        return self.words[self.used - 1]

    def _next_64(self, _state):
        low = self._next_32(_state)
        return low | self._next_32(_state) << 32

    def _next_double(self, _state):
        return (self._next_64(_state) >> 11) * 2.0**-53

    def __deepcopy__(self, memo):
        twin = WordStream(self.words, copy.deepcopy(self.source, memo))
        twin.used = self.used
        return twin


def test_vectors(mechanism: Mechanism, n: int = DEFAULT_CASES, seed: int = 0) -> dict[str, Any]:
    """``n`` test vectors of ``mechanism`` (docs/runtime.md §9): for each case the input, the 32-bit words drawn and
    the report.

    Categorical inputs cycle through 0..k-1, numeric ones are ``input_domain.sample`` with
    ``numpy.random.default_rng(seed)``; mechanisms keyed by user ids get ``user_id`` = the case's index. The words
    are ChaCha20's keyed with ``seed`` (an int in [0, 2**256)); each case is one ``perturb`` call on one value, the
    cases consecutive calls on one stream.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism whose reports are recorded.
    n : int, default DEFAULT_CASES
        The number of cases, 1 to MAX_CASES.
    seed : int, default 0
        The ChaCha20 key (and the seed of numeric inputs), in [0, 2**256).

    Returns
    -------
    dict
        A JSON-able document: ``format``, ``format_version``, ``lipdesign_version``, ``family``, ``fingerprint``,
        ``mechanism`` (its file), ``stream`` (how words are drawn), ``device`` (``mechanism.device_numbers()``) and
        ``cases`` (each with ``input``, ``report``, ``words`` and, where used, ``user_id``).

    Raises
    ------
    ValidationError
        ``mechanism`` is not a lipdesign mechanism, or ``n`` or ``seed`` is out of range.

    See Also
    --------
    check_vectors : Replay them.
    write_vectors : Write them to a file.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> vectors = ld.vectors.test_vectors(mechanism, n=3, seed=0)
    >>> vectors["format"], vectors["family"], sorted(vectors["device"])
    ('lipdesign.vectors', 'grr', ['alpha', 'k'])
    >>> for case in vectors["cases"]:
    ...     print(case)
    {'input': 0, 'report': 2, 'words': ['ade0b876', '903df1a0', 'e56a5d40']}
    {'input': 1, 'report': 0, 'words': ['28bd8653', 'b819d2bd', '1aed8da0']}
    {'input': 2, 'report': 1, 'words': ['ccef36a8', 'c70d778b', '7c5941da']}
    """
    _check_mechanism(mechanism)
    n = integer(n, "n", low=1, high=MAX_CASES)
    source = secure_generator(integer(seed, "seed", low=0, high=2**256 - 1)).bit_generator
    stream, cases = WordStream([], source), []
    for index, value in enumerate(_inputs(mechanism, n, seed)):  # one perturb call per case: a device's report
        case, begin = {"input": value.tolist() if isinstance(value, np.ndarray | np.generic) else value}, stream.used
        if mechanism.uses_user_ids:
            case["user_id"] = index
        case["report"] = _report(mechanism, value, case.get("user_id"), stream)
        case["words"] = [f"{word:08x}" for word in stream.words[begin:stream.used]]
        cases.append(case)
    document = {"format": FORMAT, "format_version": FORMAT_VERSION, "lipdesign_version": __version__,
                "family": mechanism.family, "fingerprint": mechanism.fingerprint, "mechanism": mechanism.to_dict(),
                "stream": STREAM, "device": mechanism.device_numbers(), "cases": cases}
    if _memoises(mechanism):
        document["memo"] = _memo_cases(mechanism, n, seed)
    return document


def check_vectors(mechanism: Mechanism, vectors: Mapping[str, Any]) -> list[str]:
    """Replay each case of ``vectors`` (a dict, as ``test_vectors`` or ``read_vectors`` gives it) through
    ``mechanism.perturb``: the failures, one line per case whose report differs or which drew another number of
    words than recorded ([] when all pass). FormatError for a document of another mechanism or format.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism the vectors were made for (the same fingerprint).
    vectors : dict
        The test vectors document.

    Returns
    -------
    list of str
        One line per failed case (``"case i: ..."``); empty when every case replays.

    Raises
    ------
    ValidationError
        ``mechanism`` is not a lipdesign mechanism.
    FormatError
        A document of another format or version, of another mechanism (fingerprint), with malformed cases or
        words, or a case whose input is not in the mechanism's input domain.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> vectors = ld.vectors.test_vectors(mechanism, n=3)
    >>> ld.vectors.check_vectors(mechanism, vectors)
    []
    >>> vectors["cases"][0]["report"] = 0
    >>> ld.vectors.check_vectors(mechanism, vectors)
    ['case 0: report 2, the vector records 0']
    >>> ld.vectors.check_vectors(ld.mechanisms.GRR(2.0, 3), vectors)
    Traceback (most recent call last):
    ...
    lipdesign.errors.FormatError: vectors has fingerprint '...'; they are vectors of another mechanism than this
    one (...)
    """
    _check_mechanism(mechanism)
    cases = _checked_document(vectors, mechanism)
    failures = []
    for index, case in enumerate(cases):
        words = _words(case, index)
        value = _case_input(mechanism, case, index)
        stream = WordStream(words, np.random.PCG64(0))  # past the recorded words: any stream, and a failure
        report = _report(mechanism, value, case.get("user_id"), stream)
        if stream.used != len(words):
            failures.append(f"case {index}: drew {stream.used} words, the vector records {len(words)}")
        elif report != case["report"]:
            failures.append(f"case {index}: report {report}, the vector records {case['report']}")
    if _memoises(mechanism):
        memo = vectors.get("memo")
        if not isinstance(memo, list) or not all(isinstance(case, dict) and {"key", "input", "permanent"} <= set(case)
                                                 for case in memo):
            raise FormatError("vectors['memo'] must be a list of objects with 'key', 'input' and 'permanent' (the "
                              "memoised permanent responses, docs/runtime.md §9)")
        for index, case in enumerate(memo):
            value = _case_input(mechanism, case, index)
            permanent = _permanent(mechanism, value, _key(case, index))
            if permanent != case["permanent"]:
                failures.append(f"memo case {index}: permanent response {permanent}, the vector records "
                                f"{case['permanent']}")
    return failures


def write_vectors(mechanism: Mechanism, path: str | os.PathLike[str], n: int = DEFAULT_CASES,
                  seed: int = 0) -> None:
    """Write ``test_vectors(mechanism, n, seed)`` to ``path`` as JSON (serialised first: a failure leaves no
    truncated file).

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism whose reports are recorded.
    path : str or path
        The JSON file written (replaced if it exists).
    n : int, default DEFAULT_CASES
        The number of cases.
    seed : int, default 0
        The ChaCha20 key, as in ``test_vectors``.

    Raises
    ------
    ValidationError
        As ``test_vectors``.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> ld.vectors.write_vectors(mechanism, "grr-vectors.json", n=4, seed=7)
    >>> vectors = ld.vectors.read_vectors("grr-vectors.json")
    >>> len(vectors["cases"]), ld.vectors.check_vectors(mechanism, vectors)
    (4, [])
    """
    text = json.dumps(test_vectors(mechanism, n, seed), indent=1, allow_nan=False) + "\n"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def read_vectors(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The test vectors in ``path`` (JSON read strictly; ``check_vectors`` checks their content).

    Parameters
    ----------
    path : str or path
        A JSON file, as ``write_vectors`` writes it.

    Returns
    -------
    dict
        The document.

    Raises
    ------
    FormatError
        A file that is not strict JSON (duplicate keys, NaN, ...) or cannot be read.

    Examples
    --------
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> ld.vectors.write_vectors(mechanism, "grr-vectors.json", n=2)
    >>> vectors = ld.vectors.read_vectors("grr-vectors.json")
    >>> vectors["family"], [case["input"] for case in vectors["cases"]]
    ('grr', [0, 1])
    """
    return read_json(path)


def device_numbers(mechanism: Mechanism) -> dict[str, Any]:
    """Deprecated since 0.3.0, removed in 0.4.0: ``mechanism.device_numbers()``, each family's own.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism.

    Returns
    -------
    dict
        ``mechanism.device_numbers()``: the numbers a device reads (the ``device`` entry of test vectors).

    Warns
    -----
    DeprecationWarning
        On every call.

    Examples
    --------
    >>> import warnings
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     numbers = ld.vectors.device_numbers(mechanism)
    >>> caught[0].category.__name__, numbers == mechanism.device_numbers()
    ('DeprecationWarning', True)

    Call the mechanism's own method instead:

    >>> sorted(mechanism.device_numbers())
    ['alpha', 'k']
    """
    import warnings

    warnings.warn("lipdesign.vectors.device_numbers(mechanism) is deprecated since 0.3.0 and will be removed in "
                  "0.4.0: call mechanism.device_numbers()", DeprecationWarning, stacklevel=2)
    return mechanism.device_numbers()


# -- shared steps ------------------------------------------------------------------------------------------------
def _check_mechanism(mechanism):
    if not isinstance(mechanism, Mechanism):
        raise ValidationError(f"mechanism is {fmt(mechanism)}; test vectors are made for a lipdesign mechanism "
                              "(ld.load(path) reads one)")


def _inputs(mechanism, n, seed):
    """One input per case: a category index, or a row of numbers (a vector of one entry per attribute)."""
    domain = mechanism.input_domain
    if domain.kind == "categorical":
        return np.arange(n) % domain.k
    if domain.kind == "strings":  # any strings: short and long ASCII, accents, other scripts (UTF-8 of 1 to 4 bytes)
        texts = ["a", "the", "héllo", "日本語", "🙂 emoji", "x" * domain.max_bytes, "w\u00f6rd-" + str(seed)]
        return np.array([texts[i % len(texts)].encode()[:domain.max_bytes].decode("utf-8", "ignore") or "a"
                         for i in range(n)], dtype=object)
    return np.asarray(domain.sample(n, np.random.default_rng(seed)))


def _report(mechanism, value, user_id, stream):
    """The JSON form of ``mechanism``'s report for the one ``value`` (a category's index is passed as its label,
    which every categorical domain reads), drawing from ``stream``."""
    domain = mechanism.input_domain
    values = np.array([domain.labels[int(value)]]) if domain.kind == "categorical" else np.asarray(value)[None]
    user_ids = None if user_id is None else np.array([user_id])
    reports = mechanism.perturb(values, rng=np.random.Generator(stream), user_ids=user_ids)
    report = reports[0]
    if reports.dtype.names:
        return {name: report[name].item() for name in reports.dtype.names}
    return report.tolist()


def _memoises(mechanism):
    """Whether ``mechanism`` memoises a permanent response per device and value (``permanent(values, keys)``)."""
    return callable(getattr(mechanism, "permanent", None)) and callable(getattr(mechanism, "device_keys", None))


def _memo_cases(mechanism, n, seed):
    """One memo case per input of the cases: a device key (32 bytes, hex, from ``numpy.random.default_rng(seed)``)
    and the permanent response ``mechanism.permanent`` gives for the input under that key (docs/runtime.md §9)."""
    keys = mechanism.device_keys(n, rng=np.random.default_rng(seed))
    return [{"key": key.astype("<u4").tobytes().hex(),
             "input": value.tolist() if isinstance(value, np.ndarray | np.generic) else value,
             "permanent": _permanent(mechanism, np.asarray(value), key)}
            for value, key in zip(_inputs(mechanism, n, seed), keys)]


def _permanent(mechanism, value, key):
    """The JSON form of the permanent response of one device (``key``, uint32 (8,)) for ``value``."""
    domain = mechanism.input_domain
    values = np.array([domain.labels[int(value)]]) if domain.kind == "categorical" else np.asarray(value)[None]
    permanent = np.asarray(mechanism.permanent(values, key[None, :]))[0]
    if permanent.dtype.names:  # a record (l-olh's (a, b, y)): its fields in order
        return [permanent[name].item() for name in permanent.dtype.names]
    return permanent.astype(int).tolist() if permanent.dtype == np.bool_ else permanent.tolist()


def _key(case, index):
    key = case["key"]
    try:
        raw = bytes.fromhex(key) if isinstance(key, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise FormatError(f"vectors['memo'][{index}]['key'] is {fmt(key)}; it must be 64 hex digits (a 256-bit "
                          "device key)")
    return np.frombuffer(raw, dtype="<u4").astype(np.uint32)


def _checked_document(vectors, mechanism):
    """The cases of a vectors document for ``mechanism``, or FormatError naming what is wrong."""
    document_header(vectors, "a test vectors", FORMAT, FORMAT_VERSION, FormatError)
    if vectors.get("fingerprint") != mechanism.fingerprint:
        raise FormatError(f"vectors has fingerprint {fmt(vectors.get('fingerprint'))}; they are vectors of another "
                          f"mechanism than this one ({mechanism.fingerprint})")
    cases = vectors.get("cases")
    if not isinstance(cases, list) or not all(isinstance(case, dict) and {"input", "words", "report"} <= set(case)
                                              for case in cases):
        raise FormatError("vectors['cases'] must be a list of objects with 'input', 'words' and 'report'")
    return cases


def _case_input(mechanism, case, index):
    """The case's input, checked against ``mechanism.input_domain`` (a category's index in 0..k-1, or a row of
    the domain), or FormatError naming the case."""
    domain, value = mechanism.input_domain, case["input"]
    field = f"vectors['cases'][{index}]['input']"
    if domain.kind == "categorical":  # an index, never a label (docs/runtime.md §9)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < domain.k:
            raise FormatError(f"case {index}: {field} is {fmt(value)}; it must be an integer index in "
                              f"0..{domain.k - 1} (k = {domain.k})")
        return np.asarray(value)
    try:
        domain.validate([value], field)
    except ValidationError as error:
        raise FormatError(f"case {index}: {error}") from None
    return np.asarray(value)


def _words(case, index):
    words = case["words"]
    try:
        values = [int(word, 16) for word in words]
    except (TypeError, ValueError):
        values = None
    if values is None or not all(len(word) == 8 and 0 <= value <= _MASK for word, value in zip(words, values)):
        raise FormatError(f"vectors['cases'][{index}]['words'] is {fmt(words)}; every word must be 8 hex digits "
                          "(a 32-bit word)")
    return values
