"""Item references: `{"type": "item_reference", "id": ...}` stands for an item of the chain.

A client may name an earlier item by its id instead of resending it (openai-python 3.57
`ItemReference`). The server looks the id up in the chain it resolved (the connection cache's or
the store's entry) and in the request's own earlier items, and puts the item in the reference's
place before validation, so every later stage sees the item itself. An id that names nothing is
left in place: validation refuses it (`item_not_found`, with the reference's `param`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from harness.protocol.items import item_type
from harness.protocol.requests import CreateRequest
from reference_server.state.conversation import Conversation


def resolve_references(request: CreateRequest, parent: Conversation | None) -> CreateRequest:
    """`request` with each item reference replaced by the item it names (when found)."""
    if not any(item_type(item) == "item_reference" for item in request.input):
        return request  # the common case costs one pass over the new items
    chain: Sequence[Mapping[str, Any]] = parent.items if parent is not None else ()
    resolved: list[dict[str, Any]] = []
    for item in request.input:
        if item_type(item) == "item_reference":
            found = _find(item.get("id"), resolved) or _find(item.get("id"), chain)
            resolved.append(dict(found) if found is not None else item)
        else:
            resolved.append(item)
    return dataclasses.replace(request, input=tuple(resolved))


def _find(item_id: object, items: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    if not isinstance(item_id, str):
        return None
    for index in range(len(items) - 1, -1, -1):  # the newest item of that id
        item = items[index]
        if item.get("id") == item_id and item_type(item) != "item_reference":
            return item
    return None
