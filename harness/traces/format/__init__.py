"""Agent-rollout traces: the versioned ``wsmode-trace`` JSONL format, its loader and its writer.

A trace file holds one or more rollouts. Each line is one JSON object with a ``kind``:

``{"kind": "rollout", "format": "wsmode-trace", "version": 1, "id", "source", ...}``
    starts a rollout; the turn lines that follow belong to it.
``{"kind": "turn", "rollout", "index": i, "input": [...], "tool_wait_ms", "output": [...]}``
    one model request: the *new* input items of that request, the client-side tool time spent
    before sending it, and the model output a replay must reproduce. Version 2 (multi-agent)
    adds the rollout's ``multi_agent``, an output item's ``agent`` and a turn's ``injects``.

``traces/README.md`` documents every field; ``trace_schema.json`` beside this module is the JSON
Schema of one line.

This module is the import place of the format's public names; each concept has its own module:
``rollout`` (constants, token estimates, the frozen dataclasses), ``parse`` (one line's field
checks and :class:`TraceFormatError`), ``loader`` (files, cross-turn rules, located errors) and
``writer`` (atomic, validated writes and the JSON Schema).
"""

from __future__ import annotations

from harness.protocol.items import item_text
from harness.traces.format.loader import (
    iter_rollouts,
    load_traces,
    loads_rollouts,
    parse_rollouts,
    trace_files,
    validate_rollout,
)
from harness.traces.format.parse import TraceFormatError
from harness.traces.format.rollout import (
    CHARS_PER_TOKEN,
    ITEM_OVERHEAD_TOKENS,
    KNOWN_AGENT_KINDS,
    OBSERVED_KEYS,
    OUTPUT_TYPES,
    SOURCES,
    TRACE_FORMAT,
    TRACE_VERSION,
    Inject,
    JSONObject,
    OutputSpec,
    Rollout,
    Turn,
    estimate_item_tokens,
    estimate_tokens,
    input_message,
)
from harness.traces.format.writer import dump_rollouts, dumps_rollouts, trace_schema

__all__ = [
    "CHARS_PER_TOKEN",
    "ITEM_OVERHEAD_TOKENS",
    "KNOWN_AGENT_KINDS",
    "OBSERVED_KEYS",
    "OUTPUT_TYPES",
    "SOURCES",
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "Inject",
    "JSONObject",
    "OutputSpec",
    "Rollout",
    "TraceFormatError",
    "Turn",
    "dump_rollouts",
    "dumps_rollouts",
    "estimate_item_tokens",
    "estimate_tokens",
    "input_message",
    "item_text",
    "iter_rollouts",
    "load_traces",
    "loads_rollouts",
    "parse_rollouts",
    "trace_files",
    "trace_schema",
    "validate_rollout",
]
