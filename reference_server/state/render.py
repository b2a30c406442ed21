"""Chat-template rendering of items into token ids, with an appendable cache.

Each item renders independently as ``<start> header "\\n" text <end>``, so the rendering of a
history is the concatenation of its items' renderings. That is what makes the cache exact: a
continuation turn appends the new items' tokens to the parent's ``Rendering`` instead of
re-tokenizing the history, and ``render_full(a + b) == render_full(a).append(b)`` token for
token (property-tested).

The system/tools prefix is rendered separately by ``render_prefix``: instructions and tools are
not inherited through ``previous_response_id``, so the server renders them every turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import Any

from harness.protocol.items import item_type, part_text
from harness.protocol.tokenizer import VOCAB_SIZE, token_id, tokenize

from .chain_seq import ChainSeq
from .sealed import open_sealed

__all__ = [
    "END",
    "FILE",
    "FILE_TOKENS",
    "IMAGE",
    "IMAGE_TOKENS",
    "START",
    "Rendering",
    "render_full",
    "render_item",
    "render_prefix",
    "shared_prefix_tokens",
]

# Special ids live above the vocabulary so they can never collide with text pieces.
START = VOCAB_SIZE
END = VOCAB_SIZE + 1
IMAGE = VOCAB_SIZE + 2
FILE = VOCAB_SIZE + 3
IMAGE_TOKENS = 85  # the API's fixed cost of a low-detail image
FILE_TOKENS = 128  # a flat stand-in: we never open the file
_IMAGE_RUN = (IMAGE,) * IMAGE_TOKENS
_FILE_RUN = (FILE,) * FILE_TOKENS


_CACHED_HEADER_CHARS = 64  # the header cache stays bounded in bytes: longer names are not kept


def _header(name: str) -> tuple[int, ...]:
    if len(name) > _CACHED_HEADER_CHARS:
        return (START, *tokenize(name + "\n"))
    return _cached_header(name)


@lru_cache(maxsize=64)
def _cached_header(name: str) -> tuple[int, ...]:
    return (START, *tokenize(name + "\n"))


_NOTHING_KNOWN: Mapping[str, tuple[str, ...]] = {}


def _text_tokens(text: str, known: Mapping[str, tuple[str, ...]]) -> list[int]:
    """``tokenize(text)``; from its pieces when ``known`` has them (the server's own output,
    whose planned pieces are the split of its text), without running the splitter again."""
    pieces = known.get(text) if known else None
    return list(map(token_id, pieces)) if pieces is not None else tokenize(text)


def _content_tokens(
    content: object, out: list[int], known: Mapping[str, tuple[str, ...]] = _NOTHING_KNOWN
) -> None:
    if isinstance(content, str):
        out += _text_tokens(content, known)
        return
    if not isinstance(content, list):
        return
    for part in content:
        # (dict, Mapping): decoded JSON is dicts, tested at C speed; the ABC check is the fallback
        # (it costs microseconds per call when the caches are cold, as after an idle wake-up).
        kind = part.get("type") if isinstance(part, (dict, Mapping)) else None
        if kind == "input_image":
            out += _IMAGE_RUN
        elif kind == "input_file":
            out += _FILE_RUN
        else:
            text = part_text(part)
            if text is not None:
                out += _text_tokens(text, known)


def render_item(
    item: Mapping[str, Any], known: Mapping[str, tuple[str, ...]] = _NOTHING_KNOWN
) -> tuple[int, ...]:
    """The tokens of one item, framed by ``START`` and ``END``. ``known``: texts whose token
    pieces are known (each must be exactly ``split(text)``), rendered without splitting."""
    kind = item_type(item)
    if kind == "message":
        role = item.get("role")
        out = list(_header(role if isinstance(role, str) else "message"))
        _content_tokens(item.get("content"), out, known)
    elif kind == "function_call":
        out = list(_header(kind))
        for key in ("name", "arguments"):
            value = item.get(key)
            if isinstance(value, str):
                out += _text_tokens(value, known)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        out = list(_header(kind))
        _content_tokens(item.get("output"), out)
    elif kind == "custom_tool_call":
        out = list(_header(kind))
        for key in ("name", "input"):
            value = item.get(key)
            if isinstance(value, str):
                out += tokenize(value)
    elif kind == "compaction":
        # the compacted context the item carries (state/sealed.py); validation refused others
        out = list(_header(kind))
        payload = open_sealed("compaction", item.get("encrypted_content")) or {}
        summary = payload.get("summary")
        if isinstance(summary, str):
            out += tokenize(summary)
    elif kind == "reasoning":
        # Only the summary is rendered; encrypted_content is opaque to this server.
        out = list(_header(kind))
        _content_tokens(item.get("summary"), out)
    else:
        # Unknown item types still cost tokens: render their JSON.
        out = list(_header(kind or "item"))
        out += tokenize(json.dumps(item, sort_keys=True, ensure_ascii=False, default=str))
    out.append(END)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Rendering:
    """An immutable rendered history: one token chunk per item.

    ``append`` returns a new ``Rendering`` that shares the parent's chunks (a ``ChainSeq``: the
    newest rendering extends in place), so a cached rendering can be extended by several
    children (forks) without copying tokens, and a continuation costs O(new items).
    """

    chunks: ChainSeq[tuple[int, ...]] = field(default_factory=ChainSeq)
    token_count: int = 0

    @classmethod
    def empty(cls) -> Rendering:
        return _EMPTY

    @property
    def item_count(self) -> int:
        return len(self.chunks)

    def append(
        self,
        items: Iterable[Mapping[str, Any]],
        known: Mapping[str, tuple[str, ...]] = _NOTHING_KNOWN,
    ) -> Rendering:
        """Render only ``items`` and return the extended rendering (``known``: `render_item`)."""
        new = tuple(render_item(item, known) for item in items)
        if not new:
            return self
        return Rendering(self.chunks.extended(new), self.token_count + sum(map(len, new)))

    def tail_token_count(self, item_count: int) -> int:
        """Tokens of the last ``item_count`` items."""
        return sum(map(len, self.chunks.tail(len(self.chunks) - item_count)))

    def tokens(self) -> list[int]:
        """All tokens, flattened (for equality checks and tests)."""
        return list(chain.from_iterable(self.chunks))


_EMPTY = Rendering()


def render_full(items: Iterable[Mapping[str, Any]]) -> Rendering:
    """Render a whole history from scratch: the uncached baseline path."""
    return _EMPTY.append(items)


# Canonical JSON of a tool (sorted keys, compact), the encoder built once, not per tool
_TOOL_JSON = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)


def render_prefix(instructions: str | None, tools: Sequence[Mapping[str, Any]]) -> tuple[int, ...]:
    """The tokens of the system instructions and tool definitions that precede the history."""
    out: list[int] = []
    if instructions:
        out += _header("system")
        out += tokenize(instructions)
        out.append(END)
    if tools:
        out += _header("tools")
        for tool in tools:
            # Canonical JSON: the same tools always render to the same tokens.
            text = _TOOL_JSON.encode(tool)
            out += tokenize(text + "\n")
        out.append(END)
    return tuple(out)


def shared_prefix_tokens(previous: Rendering, current: Rendering) -> int:
    """How many leading tokens ``current`` shares with ``previous``.

    Chunks shared by ``append`` are the same objects, so the identity test makes the common
    case O(items); equal chunks rendered separately still count, and the first differing
    chunk contributes its common leading tokens.
    """
    shared = 0
    for old, new in zip(previous.chunks, current.chunks, strict=False):
        if old is new or old == new:
            shared += len(old)
            continue
        for a, b in zip(old, new, strict=False):
            if a != b:
                break
            shared += 1
        break
    return shared
