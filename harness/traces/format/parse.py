"""One trace line at a time: the field checks and the parsers of a rollout line and a turn line.

Every check raises :class:`TraceFormatError` with ``field`` set; the loader adds path and line.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from harness.errors import InputError
from harness.traces.format.rollout import (
    INPUT_ROLES,
    OBSERVED_KEYS,
    OUTPUT_TYPES,
    READ_VERSIONS,
    SOURCES,
    TRACE_FORMAT,
    Inject,
    JSONObject,
    OutputSpec,
    Rollout,
    Turn,
    estimate_tokens,
)

__all__ = [
    "TraceFormatError",
    "declared_version",
    "field_error",
    "parse_rollout_header",
    "parse_turn",
    "require",
    "show_value",
]


# --------------------------------------------------------------------------------------------
# Errors


class TraceFormatError(InputError, ValueError):
    """A trace (or a converter's input) is malformed.

    ``str(err)`` is ``"<path>:<line>: <field>: <reason>"``, leaving out the parts that are unknown.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        location = self.path or ""
        if self.line is not None:
            location = f"{location}:{self.line}" if location else f"line {self.line}"
        parts = [p for p in (location, self.field) if p]
        return ": ".join([*parts, self.reason])

    def located(
        self, path: str | os.PathLike[str] | None, line: int | None = None
    ) -> TraceFormatError:
        """The same error with a file location filled in (kept if already set)."""
        return TraceFormatError(
            self.reason,
            path=self.path if self.path is not None else path,
            line=self.line if self.line is not None else line,
            field=self.field,
        )


def show_value(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def field_error(field_name: str, expected: str, value: Any) -> TraceFormatError:
    return TraceFormatError(f"expected {expected}, got {show_value(value)}", field=field_name)


# --------------------------------------------------------------------------------------------
# Field checks (each raises TraceFormatError with `field` set; the reader adds path and line)


def require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise TraceFormatError("missing required field", field=f"{where}.{key}")
    return obj[key]


def _str(obj: Mapping[str, Any], key: str, where: str, *, empty_ok: bool = False) -> str:
    value = require(obj, key, where)
    if not isinstance(value, str) or (not empty_ok and not value):
        raise field_error(f"{where}.{key}", "a string" if empty_ok else "a non-empty string", value)
    return value


def _opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise field_error(f"{where}.{key}", "a string or null", value)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _tokens(obj: Mapping[str, Any], where: str, text: str | None) -> int:
    if "tokens" not in obj:
        return 0 if text is None else max(1, estimate_tokens(text))
    value = obj["tokens"]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise field_error(f"{where}.tokens", "an integer >= 0", value)
    return value


def _parse_tool(tool: Any, where: str) -> JSONObject:
    if not isinstance(tool, dict):
        raise field_error(where, "a function tool object", tool)
    if tool.get("type") != "function":
        raise field_error(f"{where}.type", '"function"', tool.get("type"))
    _str(tool, "name", where)
    _opt_str(tool, "description", where)
    params = tool.get("parameters")
    if params is not None and not isinstance(params, dict):
        raise field_error(f"{where}.parameters", "a JSON Schema object or null", params)
    strict = tool.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise field_error(f"{where}.strict", "a boolean or null", strict)
    return tool


def declared_version(obj: JSONObject) -> int:
    """The `version` of a rollout line, one this wsmode reads (else TraceFormatError)."""
    version = require(obj, "version", "rollout")
    if version not in READ_VERSIONS or isinstance(version, bool):
        known = " and ".join(map(str, READ_VERSIONS))
        raise TraceFormatError(
            f"unsupported trace format version {show_value(version)}: this wsmode reads versions "
            f"{known} (a newer wsmode may read it; re-export or upgrade)",
            field="rollout.version",
        )
    return int(version)


def _version_2(obj: Mapping[str, Any], key: str, where: str, version: int) -> bool:
    """Whether a version-2 field is present; in a version-1 line it is an error."""
    if key not in obj:
        return False
    if version < 2:
        raise TraceFormatError(
            "a multi-agent field: needs trace format version 2", field=f"{where}.{key}"
        )
    return True


def _parse_multi_agent(value: Any) -> JSONObject:
    w = "rollout.multi_agent"
    if not isinstance(value, dict):
        raise field_error(w, "an object {enabled, max_concurrent_subagents?}", value)
    if value.get("enabled") is not True:
        raise field_error(f"{w}.enabled", "true", value.get("enabled"))
    limit = value.get("max_concurrent_subagents")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise field_error(f"{w}.max_concurrent_subagents", "an integer >= 1 or null", limit)
    return value


def parse_rollout_header(obj: JSONObject) -> Rollout:
    w = "rollout"
    fmt = obj.get("format")
    if fmt != TRACE_FORMAT:
        raise field_error(f"{w}.format", f'"{TRACE_FORMAT}"', fmt)
    version = declared_version(obj)
    multi_agent = None
    if _version_2(obj, "multi_agent", w, version):
        multi_agent = _parse_multi_agent(obj["multi_agent"])
    rollout_id = _str(obj, "id", w)
    source = _str(obj, "source", w)
    if source not in SOURCES:
        raise field_error(f"{w}.source", "one of " + ", ".join(SOURCES), source)
    agent_kind = _str(obj, "agent_kind", w)
    model = _str(obj, "model", w)
    instructions = _opt_str(obj, "instructions", w)
    tools_raw = obj.get("tools", [])
    if not isinstance(tools_raw, list):
        raise field_error(f"{w}.tools", "a list of function tools", tools_raw)
    tools = tuple(_parse_tool(t, f"{w}.tools[{i}]") for i, t in enumerate(tools_raw))
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if tool["name"] in seen:
            raise TraceFormatError(
                f"duplicate tool name {show_value(tool['name'])}", field=f"{w}.tools[{i}].name"
            )
        seen.add(tool["name"])
    seed = obj.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise field_error(f"{w}.seed", "an integer or null", seed)
    meta = obj.get("meta", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise field_error(f"{w}.meta", "an object", meta)
    return Rollout(
        id=rollout_id,
        source=source,
        agent_kind=agent_kind,
        model=model,
        instructions=instructions,
        tools=tools,
        seed=seed,
        meta=meta,
        multi_agent=multi_agent,
    )


def _parse_input_item(item: Any, where: str) -> JSONObject:
    if not isinstance(item, dict):
        raise field_error(where, "an input item object", item)
    kind = item.get("type")
    if kind is None and "role" not in item:
        raise TraceFormatError("expected an input item with a type or a role", field=where)
    if kind is not None and not isinstance(kind, str):
        raise field_error(f"{where}.type", "a string", kind)
    if kind in (None, "message"):
        role = item.get("role")
        if role not in INPUT_ROLES:
            raise field_error(f"{where}.role", "one of " + ", ".join(INPUT_ROLES), role)
        content = require(item, "content", where)
        if not isinstance(content, str | list):
            raise field_error(f"{where}.content", "a string or a list of content parts", content)
    elif kind == "function_call_output":
        _str(item, "call_id", where)
        output = require(item, "output", where)
        if not isinstance(output, str | list):
            raise field_error(f"{where}.output", "a string or a list of content parts", output)
    # Other item types (item_reference, images, ...) pass through unchecked.
    return item


def _parse_output(out: Any, where: str, version: int) -> OutputSpec:
    if not isinstance(out, dict):
        raise field_error(where, "an output item object", out)
    kind = out.get("type")
    agent = _str(out, "agent", where) if _version_2(out, "agent", where, version) else ""
    if kind == "message":
        text = _str(out, "text", where, empty_ok=True)
        return OutputSpec(type="message", text=text, tokens=_tokens(out, where, text), agent=agent)
    if kind == "function_call":
        name = _str(out, "name", where)
        arguments = _str(out, "arguments", where, empty_ok=True)
        call_id = _str(out, "call_id", where)
        return OutputSpec(
            type="function_call",
            name=name,
            arguments=arguments,
            call_id=call_id,
            tokens=_tokens(out, where, name + arguments),
            agent=agent,
        )
    if kind == "reasoning":
        summary = _str(out, "summary", where, empty_ok=True)
        tokens = _tokens(out, where, None)
        return OutputSpec(type="reasoning", summary=summary, tokens=tokens, agent=agent)
    raise field_error(f"{where}.type", "one of " + ", ".join(OUTPUT_TYPES), kind)


def _parse_inject(obj: Any, where: str) -> Inject:
    if not isinstance(obj, dict):
        raise field_error(where, "an object {tool_wait_ms, input}", obj)
    wait = obj.get("tool_wait_ms", 0.0)
    if not _is_number(wait) or wait < 0:
        raise field_error(f"{where}.tool_wait_ms", "a number >= 0", wait)
    items = require(obj, "input", where)
    if not isinstance(items, list) or not items:
        raise field_error(f"{where}.input", "a non-empty list of function_call_output items", items)
    parsed = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("type") != "function_call_output":
            raise field_error(f"{where}.input[{i}]", "a function_call_output item", item)
        parsed.append(_parse_input_item(item, f"{where}.input[{i}]"))
    return Inject(input=tuple(parsed), tool_wait_ms=float(wait))


def _parse_observed(obj: Any) -> dict[str, Any]:
    w = "turn.observed"
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise field_error(w, "an object", obj)
    for key in OBSERVED_KEYS:
        value = obj.get(key)
        if value is not None and (not _is_number(value) or value < 0):
            raise field_error(f"{w}.{key}", "a number >= 0", value)
    return {k: v for k, v in obj.items() if v is not None}


def parse_turn(obj: JSONObject, version: int = 1) -> Turn:
    """One turn line of a rollout whose line declared `version`."""
    w = "turn"
    index = require(obj, "index", w)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise field_error(f"{w}.index", "an integer >= 0", index)
    inputs = require(obj, "input", w)
    if not isinstance(inputs, list):
        raise field_error(f"{w}.input", "a list of input items", inputs)
    items = tuple(_parse_input_item(it, f"{w}.input[{i}]") for i, it in enumerate(inputs))
    wait = obj.get("tool_wait_ms", 0.0)
    if not _is_number(wait) or wait < 0:
        raise field_error(f"{w}.tool_wait_ms", "a number >= 0", wait)
    outputs = require(obj, "output", w)
    if not isinstance(outputs, list) or not outputs:
        raise field_error(f"{w}.output", "a non-empty list of output items", outputs)
    specs = tuple(_parse_output(o, f"{w}.output[{i}]", version) for i, o in enumerate(outputs))
    injects: tuple[Inject, ...] = ()
    if _version_2(obj, "injects", w, version):
        raw = obj["injects"]
        if not isinstance(raw, list):
            raise field_error(f"{w}.injects", "a list of injects", raw)
        injects = tuple(_parse_inject(x, f"{w}.injects[{i}]") for i, x in enumerate(raw))
    return Turn(
        index=index,
        input=items,
        output=specs,
        tool_wait_ms=float(wait),
        observed=_parse_observed(obj.get("observed")),
        injects=injects,
    )
