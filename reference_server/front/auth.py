"""API keys: constant-time checks, and the tenant each key maps to.

Caches and the store are keyed by tenant, a hash of the key, so the raw key is never stored or
logged and one key's response ids are indistinguishable from random ids to another key.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from reference_server.store.response_store import tenant_for_api_key

ANONYMOUS_TENANT = "anonymous"


class KeyRing:
    def __init__(self, keys: Iterable[str]) -> None:
        self._digests = [hashlib.sha256(k.encode("utf-8")).digest() for k in keys if k]

    @property
    def enabled(self) -> bool:
        return bool(self._digests)

    def authenticate(self, authorization: str | None) -> str | None:
        """The tenant for an `Authorization` header, or None when it is refused."""
        if not self.enabled:
            return ANONYMOUS_TENANT
        if not authorization or not authorization.lower().startswith("bearer "):
            return None
        key = authorization[7:].strip()
        digest = hashlib.sha256(key.encode("utf-8")).digest()
        # Compare against every key so timing does not reveal which (or whether one) matched.
        matched = False
        for known in self._digests:
            matched |= hmac.compare_digest(digest, known)
        return tenant_for_api_key(key) if matched else None
