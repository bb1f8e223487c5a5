"""Lines from the evaluation worker to the judge, sealed with a key the judge sends in the
request, so that a line the candidate writes into the judge's pipe is told from the worker's.

The candidate runs inside the worker (unless isolated), and its library may call ``fprintf``:
pointing ``stderr`` at the protocol's file descriptor (a field of the FILE it is handed) takes
three lines of C, and a forged ``scenario`` line, then ``done``, would end the evaluation with
whatever results it wrote. Each line now carries an HMAC of its text under a fresh key per
evaluation, which arrives on the worker's stdin after the candidate's library is built and
before it is loaded; the judge refuses any line without a valid seal. A candidate that reads
the key out of the worker's memory is the in-process hole docs/RELIABILITY.md names (closed
only by isolation); this closes the cheap way.

A sealed line is the message's JSON, a tab, and the hex HMAC-SHA256 of the JSON: ``json.dumps``
never writes a raw tab, so the last tab splits the two.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any

KEY_FIELD = "protocol_key"


class ForgedLine(Exception):
    """A line on the worker's protocol that the worker did not seal."""


def new_key() -> str:
    """A fresh key for one evaluation's request (hex, 256 bits)."""
    return secrets.token_hex(32)


def _mac(key: bytes, text: bytes) -> str:
    return hmac.new(key, text, hashlib.sha256).hexdigest()


class Sealer:
    """The worker's side: seals each message it writes. With no key (a request from an older
    judge) lines go out unsealed, and that judge reads them as before."""

    def __init__(self, key_hex: str | None) -> None:
        self._key = bytes.fromhex(key_hex) if key_hex else None

    @classmethod
    def from_request(cls, request: dict[str, Any]) -> Sealer:
        """Takes the key out of the request, so nothing later hands it on."""
        return cls(request.pop(KEY_FIELD, None))

    def line(self, message: dict[str, Any]) -> str:
        text = json.dumps(message, default=str)
        if self._key is None:
            return text
        return f"{text}\t{_mac(self._key, text.encode())}"


def open_line(key_hex: str, line: bytes) -> dict[str, Any]:
    """The judge's side: the message of a sealed line; :class:`ForgedLine` when the seal is
    missing or wrong, or the text is not a message."""
    text, tab, seal = line.rstrip(b"\r").rpartition(b"\t")
    if not tab:
        raise ForgedLine("a line without the worker's seal")
    if not hmac.compare_digest(_mac(bytes.fromhex(key_hex), text), seal.decode("ascii", "replace")):
        raise ForgedLine("a line whose seal does not match")
    try:
        message = json.loads(text)
    except ValueError:
        raise ForgedLine("a sealed line that is not JSON") from None
    if not isinstance(message, dict) or "type" not in message:
        raise ForgedLine("a sealed line that is not a message")
    return message
