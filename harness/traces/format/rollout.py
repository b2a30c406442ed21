"""Agent-rollout traces in memory: the ``wsmode-trace`` constants, token estimates, and the
frozen dataclasses :class:`Rollout`, :class:`Turn`, :class:`OutputSpec` and :class:`Inject`.

Version 2 adds multi-agent rollouts (PROTOCOL.md §2.2): a rollout's ``multi_agent`` object (sent
with every create), output items naming their ``agent``, and a turn's ``injects``: the tool
outputs a client commits into the running response with ``response.inject``. A rollout without
them is written as version 1, byte for byte as before.

The dataclasses are frozen; the JSON objects inside them (input items, tools, meta) are plain
dicts shared with the caller and must be treated as read-only. Items are read with the protocol
core's readers (``harness.protocol.items``), so a trace's history is what a replaying client
sends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final, Literal, TypeAlias

from harness.protocol.items import assistant_message, function_call_item, item_text, item_type

__all__ = [
    "CHARS_PER_TOKEN",
    "INPUT_ROLES",
    "ITEM_OVERHEAD_TOKENS",
    "KNOWN_AGENT_KINDS",
    "OBSERVED_KEYS",
    "OUTPUT_TYPES",
    "READ_VERSIONS",
    "SOURCES",
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "Inject",
    "JSONObject",
    "OutputSpec",
    "Rollout",
    "Turn",
    "estimate_item_tokens",
    "estimate_tokens",
    "input_message",
]

JSONObject: TypeAlias = dict[str, Any]
OutputType: TypeAlias = Literal["message", "function_call", "reasoning"]

TRACE_FORMAT: Final = "wsmode-trace"
TRACE_VERSION: Final = 2  # the newest; a rollout without multi-agent features is written as 1
READ_VERSIONS: Final = (1, 2)
SOURCES: Final = (
    "generated",
    "codex",
    "chat-export",
    "recorded",
    "swe-agent",
    "openhands",
    "kvcache",
    "claude-code",
    "mooncake",
    "gemini-cli",
    "tracelab",
)
KNOWN_AGENT_KINDS: Final = ("bug_fix", "refactor", "test_fix", "unknown")
OUTPUT_TYPES: Final = ("message", "function_call", "reasoning")
OBSERVED_KEYS: Final = ("ttft_ms", "e2e_ms", "input_tokens", "cached_tokens", "output_tokens")
INPUT_ROLES: Final = ("user", "system", "developer", "assistant")

#: Token estimates are ``ceil(chars / CHARS_PER_TOKEN)``: no tokenizer, stdlib only.
CHARS_PER_TOKEN: Final = 4
#: Added per conversation item for role/framing tokens, like real chat templates do.
ITEM_OVERHEAD_TOKENS: Final = 4

_TEXT_ITEM_TYPES: Final = ("message", "function_call", "function_call_output", "reasoning")


# --------------------------------------------------------------------------------------------
# Token estimates


def estimate_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: the format's stand-in for a tokenizer."""
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_item_tokens(item: Mapping[str, Any]) -> int:
    """Estimated prompt tokens of one Responses item: its text / 4 plus a small framing cost.

    The text is the protocol core's reading of the item; an item type without text
    (``item_reference``, ...) is estimated from its JSON.
    """
    text = item_text(item) if item_type(item) in _TEXT_ITEM_TYPES else json.dumps(item)
    return estimate_tokens(text) + ITEM_OVERHEAD_TOKENS


def input_message(text: str, role: str = "user") -> JSONObject:
    """A Responses input message item carrying one ``input_text`` part."""
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


# --------------------------------------------------------------------------------------------
# Model


@dataclass(frozen=True, kw_only=True)
class OutputSpec:
    """One model output item to reproduce: a message, a function call or a reasoning item.

    ``tokens``: for a message or function call, the output tokens the item cost when recorded
    (≈ chars / 4 when generated; a replaying server derives its own count from the text). For
    reasoning, the *hidden* reasoning tokens, decoded before the visible ``summary`` (the
    reference server's scripted ``tokens``); :attr:`total_tokens` adds the summary. Fields that
    do not apply to ``type`` stay empty.
    """

    type: OutputType
    tokens: int
    text: str = ""
    name: str = ""
    arguments: str = ""
    call_id: str = ""
    summary: str = ""
    agent: str = ""  # version 2: the agent of a multi-agent response that produced it

    @classmethod
    def message(cls, text: str, tokens: int | None = None) -> OutputSpec:
        return cls(type="message", text=text, tokens=_default_tokens(tokens, text))

    @classmethod
    def function_call(
        cls, name: str, arguments: str, call_id: str, tokens: int | None = None
    ) -> OutputSpec:
        return cls(
            type="function_call",
            name=name,
            arguments=arguments,
            call_id=call_id,
            tokens=_default_tokens(tokens, name + arguments),
        )

    @classmethod
    def reasoning(cls, summary: str, tokens: int = 0) -> OutputSpec:
        return cls(type="reasoning", summary=summary, tokens=tokens)

    @property
    def total_tokens(self) -> int:
        """Output tokens of the item: ``tokens``, plus the summary's estimate for reasoning."""
        if self.type == "reasoning":
            return self.tokens + estimate_tokens(self.summary)
        return self.tokens

    def to_json(self) -> JSONObject:
        """The trace-file form of this output item."""
        item: JSONObject
        if self.type == "message":
            item = {"type": "message", "text": self.text, "tokens": self.tokens}
        elif self.type == "function_call":
            item = {
                "type": "function_call",
                "name": self.name,
                "arguments": self.arguments,
                "call_id": self.call_id,
                "tokens": self.tokens,
            }
        else:
            item = {"type": "reasoning", "summary": self.summary, "tokens": self.tokens}
        if self.agent:
            item["agent"] = self.agent
        return item

    def script_item(self) -> JSONObject:
        """The scripted-mode item the reference server's engine accepts for this output."""
        item: JSONObject
        if self.type == "message":
            item = {"type": "message", "text": self.text}
        elif self.type == "function_call":
            item = {
                "type": "function_call",
                "name": self.name,
                "arguments": self.arguments,
                "call_id": self.call_id,
            }
        else:
            item = {"type": "reasoning", "summary": self.summary, "tokens": self.tokens}
        if self.agent:
            item["agent"] = self.agent
        return item

    def history_item(self) -> JSONObject | None:
        """This output as the input item a stateless client resends (``harness.protocol.items``).

        Reasoning is never resent (``None``): the API takes reasoning back only with its ``rs_``
        id (and encrypted content), which a trace does not keep.
        """
        if self.type == "message":
            return assistant_message(self.text)
        if self.type == "function_call":
            return function_call_item(self.call_id, self.name, self.arguments)
        return None


def _default_tokens(tokens: int | None, text: str) -> int:
    return max(1, estimate_tokens(text)) if tokens is None else tokens


@dataclass(frozen=True, kw_only=True)
class Inject:
    """Version 2: tool outputs a client commits into the turn's running response
    (``response.inject``), ``tool_wait_ms`` after the calls they answer were emitted."""

    input: tuple[JSONObject, ...]  # function_call_output items
    tool_wait_ms: float = 0.0

    @property
    def call_ids(self) -> tuple[str, ...]:
        return tuple(str(item.get("call_id")) for item in self.input)

    def to_json(self) -> JSONObject:
        return {"tool_wait_ms": self.tool_wait_ms, "input": list(self.input)}


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One model request of a rollout."""

    index: int
    input: tuple[JSONObject, ...]
    output: tuple[OutputSpec, ...]
    tool_wait_ms: float = 0.0
    observed: Mapping[str, Any] = field(default_factory=dict)
    injects: tuple[Inject, ...] = ()  # version 2: tool outputs committed in flight

    @property
    def function_calls(self) -> tuple[OutputSpec, ...]:
        return tuple(o for o in self.output if o.type == "function_call")

    @property
    def call_ids(self) -> tuple[str, ...]:
        """The ``call_id`` s of this turn's function calls, in output order."""
        return tuple(o.call_id for o in self.output if o.type == "function_call")

    @property
    def answered_call_ids(self) -> tuple[str, ...]:
        """The ``call_id`` s this turn's ``function_call_output`` inputs answer."""
        return tuple(
            str(item.get("call_id"))
            for item in self.input
            if item.get("type") == "function_call_output"
        )

    @property
    def output_tokens(self) -> int:
        """Output tokens of the turn (reasoning summaries included)."""
        return sum(o.total_tokens for o in self.output)

    @property
    def injected_call_ids(self) -> tuple[str, ...]:
        """The ``call_id`` s this turn's injects answer, in inject order."""
        return tuple(call_id for inject in self.injects for call_id in inject.call_ids)

    @property
    def inject_wait_ms(self) -> float:
        """Client-side tool time the response waited for its injects: per run of calls, the
        longest wait of the injects answering it (the tools of one run run side by side)."""
        run_of: dict[str, int] = {}
        run, follows_call = -1, False
        for spec in self.output:
            if spec.type == "function_call":
                run += 0 if follows_call else 1
                run_of[spec.call_id] = run
            follows_call = spec.type == "function_call"
        longest: dict[int, float] = {}
        for inject in self.injects:
            key = run_of.get(inject.call_ids[0], -1) if inject.call_ids else -1
            longest[key] = max(longest.get(key, 0.0), inject.tool_wait_ms)
        return sum(longest.values())

    def history_outputs(self) -> list[JSONObject]:
        """This turn's outputs as history items (reasoning left out, see OutputSpec), each run
        of calls followed by the injected outputs answering it (where a multi-agent response
        lists them)."""
        items: list[JSONObject] = []
        pending = list(self.injects)
        emitted: set[str] = set()
        for index, spec in enumerate(self.output):
            item = spec.history_item()
            if item is not None:
                items.append(item)
            if spec.type != "function_call":
                continue
            emitted.add(spec.call_id)
            following = self.output[index + 1] if index + 1 < len(self.output) else None
            if following is not None and following.type == "function_call":
                continue  # the run of calls goes on: the response waits after it
            while pending and set(pending[0].call_ids) <= emitted:
                items.extend(pending.pop(0).input)
        return items

    def script(self) -> list[JSONObject]:
        """This turn's outputs as reference-server scripted items."""
        return [o.script_item() for o in self.output]

    def to_json(self, rollout_id: str) -> JSONObject:
        line: JSONObject = {
            "kind": "turn",
            "rollout": rollout_id,
            "index": self.index,
            "input": list(self.input),
            "tool_wait_ms": self.tool_wait_ms,
            "output": [o.to_json() for o in self.output],
        }
        if self.injects:
            line["injects"] = [inject.to_json() for inject in self.injects]
        if self.observed:
            line["observed"] = dict(self.observed)
        return line


@dataclass(frozen=True, kw_only=True)
class Rollout:
    """One agent rollout: what one WebSocket (one ``previous_response_id`` chain) carries."""

    id: str
    source: str
    agent_kind: str
    model: str
    instructions: str | None = None
    tools: tuple[JSONObject, ...] = ()
    seed: int | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    turns: tuple[Turn, ...] = ()
    # version 2: the create's `multi_agent` object, e.g. {"enabled": true}: every function call
    # is client-owned and answered in flight by the turn's injects
    multi_agent: Mapping[str, Any] | None = None

    @property
    def version(self) -> int:
        """The format version this rollout needs: 2 with multi-agent features, else 1."""
        multi = self.multi_agent is not None or any(
            turn.injects or any(o.agent for o in turn.output) for turn in self.turns
        )
        return 2 if multi else 1

    # -- history ------------------------------------------------------------------------------

    def full_history(self, upto_turn: int) -> list[JSONObject]:
        """The full ``input`` a stateless client (no ``previous_response_id``) sends at a turn.

        That is every input item of turns ``0..upto_turn`` interleaved with the outputs of turns
        ``0..upto_turn-1`` rendered as Responses items (see :meth:`OutputSpec.history_item`;
        reasoning has no history form in a trace). ``upto_turn == len(turns)`` gives the whole
        conversation including the last turn's output.
        """
        self._check_turn_number(upto_turn)
        history: list[JSONObject] = []
        for turn in self.turns[:upto_turn]:
            history.extend(turn.input)
            history.extend(turn.history_outputs())
        if upto_turn < len(self.turns):
            history.extend(self.turns[upto_turn].input)
        return history

    def context_tokens_estimate(self, turn: int) -> int:
        """Estimated prompt tokens of the request at ``turn`` (≈ chars / 4).

        Counts instructions, tool definitions and :meth:`full_history`,
        with :data:`ITEM_OVERHEAD_TOKENS` per item. ``turn == len(turns)`` is the context after
        the last output.
        """
        self._check_turn_number(turn)
        before, inputs = self._token_prefix[turn]
        return before + inputs

    @cached_property
    def _token_prefix(self) -> list[tuple[int, int]]:
        # (tokens of everything before turn i's input, tokens of turn i's input)
        base = estimate_tokens(self.instructions or "")
        if self.tools:
            base += estimate_tokens(json.dumps(list(self.tools)))
        table: list[tuple[int, int]] = []
        running = base
        for turn in self.turns:
            inputs = sum(estimate_item_tokens(i) for i in turn.input)
            table.append((running, inputs))
            running += inputs + sum(estimate_item_tokens(i) for i in turn.history_outputs())
        table.append((running, 0))
        return table

    def _check_turn_number(self, turn: int) -> None:
        if not 0 <= turn <= len(self.turns):
            raise IndexError(f"turn {turn} out of range 0..{len(self.turns)}")

    # -- summaries ------------------------------------------------------------------------------

    @property
    def final_context_tokens(self) -> int:
        """:meth:`context_tokens_estimate` after the last turn."""
        return self.context_tokens_estimate(len(self.turns))

    @property
    def total_output_tokens(self) -> int:
        return sum(t.output_tokens for t in self.turns)

    @property
    def total_tool_wait_ms(self) -> float:
        """Tool time before the turns and of the in-flight injects."""
        return sum(t.tool_wait_ms + t.inject_wait_ms for t in self.turns)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(str(t.get("name")) for t in self.tools)

    # -- serialisation ----------------------------------------------------------------------------

    def header_json(self) -> JSONObject:
        """The ``kind: rollout`` line."""
        line: JSONObject = {
            "kind": "rollout",
            "format": TRACE_FORMAT,
            "version": self.version,
            "id": self.id,
            "source": self.source,
            "agent_kind": self.agent_kind,
            "model": self.model,
            "instructions": self.instructions,
            "tools": list(self.tools),
            "seed": self.seed,
            "meta": dict(self.meta),
        }
        if self.multi_agent is not None:
            line["multi_agent"] = dict(self.multi_agent)
        return line

    def to_lines(self) -> list[JSONObject]:
        """Every line of this rollout, as JSON objects."""
        return [self.header_json(), *(t.to_json(self.id) for t in self.turns)]
