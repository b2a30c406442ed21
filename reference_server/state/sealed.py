"""Opaque `encrypted_content` this server hands out and takes back (PROTOCOL.md §5.1, §3.4).

The API returns context a client cannot read but must pass back as is: the `compaction` item of
`POST /v1/responses/compact` (the compacted window) and, with `include:
["reasoning.encrypted_content"]`, a reasoning item's hidden state. Here both are a sealed
payload: a version prefix, the payload's JSON in URL-safe base64, and a keyed digest over them,
so a client can pass them back unchanged and the server can read them, while an edited or
foreign value (another server's ciphertext) is told apart and refused.

It is signed, not encrypted [I]: the reference server has nothing to hide from its client, and
one fixed key keeps values valid across restarts and `--workers` processes. Pure: no clock,
no randomness.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any, Final

from harness.protocol import wire

__all__ = ["SEAL_PREFIX", "open_sealed", "seal"]

SEAL_PREFIX: Final = "wsmode1."
_KEY: Final = b"wsmode reference server: sealed context v1"
_DIGEST_CHARS: Final = 22  # 128 bits of the digest, URL-safe base64


def _digest(kind: str, body: str) -> str:
    mac = hmac.new(_KEY, f"{kind}:{body}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode()[:_DIGEST_CHARS]


def seal(kind: str, payload: Mapping[str, Any]) -> str:
    """`payload` as an opaque value that `open_sealed(kind, ...)` reads back."""
    raw = json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    body = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
    return f"{SEAL_PREFIX}{body}.{_digest(kind, body)}"


def open_sealed(kind: str, value: object) -> dict[str, Any] | None:
    """The payload `value` seals, or None when it is not a value this server sealed as `kind`
    (edited, truncated, of another kind, or another server's)."""
    if not isinstance(value, str) or not value.startswith(SEAL_PREFIX):
        return None
    body, _, digest = value[len(SEAL_PREFIX) :].rpartition(".")
    if not body or not hmac.compare_digest(digest, _digest(kind, body)):
        return None
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        # A forged value may nest without end: the frame's own depth bound (a sealed payload
        # holds what a request held), never RecursionError.
        payload = wire.loads(raw)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None
