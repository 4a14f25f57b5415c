"""Key files: the secret master key from which a simulation or a gateway derives each device's memo key
(docs/runtime.md §15, ``lipdesign.mechanisms.memo.derived_keys``), bound to one mechanism.

A key file is JSON: ``{"format": "lipdesign.device-keys", "format_version": 1, "family": ..., "mechanism": <the
mechanism's fingerprint>, "master_key": <64 hex digits>}``, written with owner-only permissions. It is bound to the
mechanism it was made for: using it with another one is refused, so that one permanent key never serves two
mechanisms by accident (each would hold its own memo, and a budget that counts one would miss the other). Standard
library only.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lipdesign.errors import FormatError, ValidationError
from lipdesign.io.schema import read_json
from lipdesign.validation import fmt

if TYPE_CHECKING:
    from lipdesign.mechanisms.base import Mechanism

FORMAT = "lipdesign.device-keys"
FORMAT_VERSION = 1


def master_key(path: str | os.PathLike[str], mechanism: Mechanism, *, create: bool = True) -> bytes:
    """The 32-byte master key in the key file ``path``, bound to ``mechanism``; with ``create``, a new file (a key
    from the operating system's CSPRNG, owner-only permissions) when none exists.

    Parameters
    ----------
    path : str or path
        The key file.
    mechanism : Mechanism
        The mechanism whose memos the key derives; a file bound to another mechanism is refused.
    create : bool, default True
        Make the file when it does not exist.

    Returns
    -------
    bytes
        The master key.

    Raises
    ------
    ValidationError
        The file is bound to another mechanism, or does not exist and ``create`` is False.
    FormatError
        The file is not a key file.

    Examples
    --------
    >>> import lipdesign as ld
    >>> from lipdesign.io.device_keys import master_key
    >>> rounds = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=4)
    >>> key = master_key("devices.key", rounds)
    >>> len(key), key == master_key("devices.key", rounds)
    (32, True)
    >>> master_key("devices.key", ld.mechanisms.LongitudinalGRR(1.0, 3.0, k=4))
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: keys is devices.key, the permanent key of l-grr mechanism ...; reusing a ...
    """
    target = Path(path)
    if not target.exists():
        if not create:
            raise ValidationError(f"keys is {target}; no such key file")
        key = secrets.token_bytes(32)
        document = {"format": FORMAT, "format_version": FORMAT_VERSION, "family": mechanism.family,
                    "mechanism": mechanism.fingerprint, "master_key": key.hex()}
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(document, indent=1) + "\n")
        return key
    document = read_json(target)
    if not isinstance(document, dict) or document.get("format") != FORMAT or \
            document.get("format_version") != FORMAT_VERSION:
        raise FormatError(f"keys is {target}; it is not a key file ({FORMAT!r}, version {FORMAT_VERSION})")
    if document.get("mechanism") != mechanism.fingerprint:
        raise ValidationError(f"keys is {target}, the permanent key of {document.get('family')} mechanism "
                              f"{document.get('mechanism')}; reusing a permanent key across mechanisms is refused "
                              f"(this is {mechanism.family} {mechanism.fingerprint}): make a new key file for it")
    return _key(document, target)


def _key(document: dict[str, Any], target: Path) -> bytes:
    text = document.get("master_key")
    try:
        key = bytes.fromhex(text) if isinstance(text, str) else b""
    except ValueError:
        key = b""
    if len(key) != 32:
        raise FormatError(f"keys is {target}; its master_key is {fmt(text)}, it must be 64 hex digits")
    return key


__all__ = ["FORMAT", "FORMAT_VERSION", "master_key"]
