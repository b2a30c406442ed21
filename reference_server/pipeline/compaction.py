"""`POST /v1/responses/compact`: a chain's context as a compacted window (PROTOCOL.md §5.1).

The API's compacted output is "a list of all user messages, followed by a single compaction
item" (openai-python 3.57 `CompactedResponse`). The reference server keeps every user message
as it was and seals the rest (instructions given as system/developer messages, assistant text,
tool calls and their outputs, reasoning summaries, earlier compactions) into the compaction
item as a bounded summary: the last `SUMMARY_CHARS` characters of their text, one line per item
(state/sealed.py; no model writes a real summary here). A new chain starts from it by sending
`[*compacted.output, *new items]` as input without `previous_response_id`; rendering the
compaction item costs the summary's tokens, so the compacted chain is cheaper to continue.

The work is charged as inference: the engine plans the summary as its output and the call
waits out the plan's prefill and decode, on the active profile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Any, Final

from harness.protocol.items import item_text, item_type
from reference_server.engine.engine import Engine, Seed
from reference_server.pipeline.prepare import PreparedTurn
from reference_server.pipeline.response import new_id
from reference_server.state.prefix import PrefixCache
from reference_server.state.sealed import open_sealed, seal

SUMMARY_CHARS: Final = 4096  # ~1k tokens of the compacted items' text survive a compaction


def compacted_window(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every user message as an output item, then one compaction item sealing the rest."""
    kept: list[dict[str, Any]] = []
    lines: list[str] = []
    for item in items:
        kind = item_type(item)
        if kind == "message" and item.get("role") == "user":
            kept.append(_user_message(item))
        elif kind == "compaction":
            earlier = open_sealed("compaction", item.get("encrypted_content")) or {}
            lines.append(str(earlier.get("summary", "")))
        else:
            label = item.get("role") if kind == "message" else kind
            lines.append(f"{label}: {item_text(item)}")
    summary = "\n".join(line for line in lines if line)[-SUMMARY_CHARS:]
    compaction = {
        "id": new_id("cmp"),
        "type": "compaction",
        "encrypted_content": seal("compaction", {"summary": summary}),
    }
    return [*kept, compaction]


def _user_message(item: Mapping[str, Any]) -> dict[str, Any]:
    content = item.get("content")
    text_part = [{"type": "input_text", "text": content}] if isinstance(content, str) else None
    parts = text_part if text_part is not None else list(content or [])
    return {
        "id": item["id"] if isinstance(item.get("id"), str) else new_id("msg"),
        "type": "message",
        "status": "completed",
        "role": "user",
        "content": parts,
    }


async def compact(
    prepared: PreparedTurn, engine: Engine, seed: Seed, prefix_cache: PrefixCache
) -> dict[str, Any]:
    """The compacted response of a prepared (resolved, validated, rendered) request."""
    cached_tokens = prefix_cache.match(prepared.prompt.cache_keys)  # not a turn's: not counted
    output = compacted_window(prepared.items)
    sealed = open_sealed("compaction", output[-1]["encrypted_content"]) or {}
    summary = str(sealed.get("summary", ""))
    prompt_tokens = prepared.prompt.token_count
    plan = engine.plan(
        seed=seed,
        input_tokens=prompt_tokens,
        cached_tokens=cached_tokens,
        script=[{"type": "message", "text": summary}] if summary else [],
    )
    output_tokens = plan.output_tokens
    rate = plan.decode_tokens_per_s
    busy_s = plan.ttft_s + (output_tokens / rate if output_tokens and rate > 0 else 0)
    if 0 < busy_s < float("inf"):
        await asyncio.sleep(busy_s)  # the engine's prefill and decode of the summary
    return {
        "id": new_id("resp"),
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": output,
        "usage": {
            "input_tokens": prompt_tokens,
            "input_tokens_details": {"cached_tokens": cached_tokens, "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt_tokens + output_tokens,
        },
    }
