"""The pipeline stages read items with the protocol core's readers (harness.protocol.items)."""

from __future__ import annotations

from harness.protocol.items import item_texts, item_type, part_text

__all__ = ["item_texts", "item_type", "part_text"]
