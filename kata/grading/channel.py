"""The results channel: lines a test process writes, signed, and the grader's reading of them.

Each test process gets a fresh random key from the grader (in its
configuration, dropped as soon as the sender has it). Every event it writes is
one JSON line carrying a sequence number and an HMAC-SHA256 of the rest; the
grader believes only lines whose MAC checks out, each once and in order. A
line written by anything else in the process (a wrapped ``os.write``, a
patched ``os._exit``, a guess at the descriptor) has no valid MAC: it is not
believed, and its presence flags the submission. Getting the key
would take introspection that the vetting flags and the tripwire refuses.

Only the standard library is used (the test process imports this before pytest).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Callable

__all__ = ["new_key", "read", "sender", "verify"]

_write, _dumps, _new = os.write, json.dumps, hmac.new   # taken before any submission code runs


def new_key() -> str:
    return secrets.token_hex(16)


def _mac(key: bytes, body: str) -> str:
    return _new(key, body.encode(), hashlib.sha256).hexdigest()[:32]


def sender(fd: int, key: str, writer: str = "") -> Callable[[dict], None]:
    """A function that writes one signed event to ``fd`` (never raising); ``writer`` names a second
    process writing to the same channel (a PID namespace's init), numbered on its own."""
    secret = bytes.fromhex(key)
    counter = [0]

    def send(event: dict) -> None:
        counter[0] += 1
        try:
            body = _dumps({**event, "n": counter[0], "w": writer}, sort_keys=True)
            _write(fd, (body + "\t" + _mac(secret, body) + "\n").encode())
        except (OSError, TypeError, ValueError):
            pass

    return send


def verify(raw: bytes, key: str) -> dict | None:
    """One line's event if its MAC checks out (its place in the sequence is :func:`read`'s to check)."""
    body, _, mac = raw.decode("utf-8", "replace").rpartition("\t")
    if not body or not hmac.compare_digest(mac, _mac(bytes.fromhex(key), body)):
        return None
    try:
        event = json.loads(body)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("e"), str) else None


def read(data: bytes, key: str) -> tuple[list[dict], int]:
    """The events of ``data`` that are signed with ``key``, each once and in order, and how many lines were
    not (a line garbled by something else writing there is lost alone; the ones after it still count)."""
    events, bad, last = [], 0, {}
    for raw in data.splitlines():
        event = verify(raw, key)
        if event is None:
            bad += 1
            continue
        writer, number = event.get("w"), event.get("n")
        if not isinstance(writer, str) or not isinstance(number, int) or number <= last.get(writer, 0):
            bad += 1   # a signed line again, or out of its order: replayed
            continue
        last[writer] = number
        events.append(event)
    return events, bad
