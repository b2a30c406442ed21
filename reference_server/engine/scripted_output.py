"""Scripted mode (trace replay): the output is exactly the listed item specs.

Tools, ``tool_choice`` and ``reasoning_effort`` are not consulted; see :func:`validate_script`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from reference_server.engine.filler_text import exact_split, filler_pieces_checked
from reference_server.engine.generation_plan import InvalidScript, PlannedItem, seeded_call_id

_SCRIPT_FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "message": frozenset({"type", "text", "tokens", "refusal", "agent"}),
    "function_call": frozenset({"type", "name", "arguments", "call_id", "agent"}),
    "reasoning": frozenset({"type", "summary", "tokens", "agent"}),
}


def validate_script(script: object) -> None:
    """Check a scripted output; raise :class:`InvalidScript` naming the index and field.

    Item specs:

    - ``{"type": "message", "text": str}``, ``{"type": "message", "tokens": int >= 0}``
      (that many tokens of filler text) or ``{"type": "message", "refusal": str}`` (a
      refusal content part), exactly one of the three;
    - ``{"type": "function_call", "name": str, "arguments": str, "call_id"?: str}`` (a seeded
      ``call_...`` id when omitted; ``arguments`` is emitted verbatim, not parsed);
    - ``{"type": "reasoning", "summary"?: str, "tokens"?: int >= 0}`` (``tokens``: hidden
      reasoning tokens, decoded without events before the summary).

    Any item may name its ``"agent"`` (a non-empty string): in a multi-agent response the item
    and its events carry that agent tag (PROTOCOL.md §2.2); elsewhere it is ignored.

    Unknown fields are rejected, so a misspelt field cannot silently change the output.
    """
    # (dict, Mapping): decoded JSON is dicts, tested at C speed; the ABC check is the fallback
    # (it costs microseconds per call when the caches are cold, as after an idle wake-up).
    if isinstance(script, (str, bytes)) or not isinstance(script, (list, tuple, Sequence)):
        raise InvalidScript("script must be a list of output item specs")
    for i, spec in enumerate(script):
        where = f"script[{i}]"
        if not isinstance(spec, (dict, Mapping)):
            raise InvalidScript(f"{where}: must be an object")
        kind = spec.get("type")
        if not isinstance(kind, str) or kind not in _SCRIPT_FIELDS:
            raise InvalidScript(
                f"{where}.type: must be one of {', '.join(map(repr, _SCRIPT_FIELDS))}, got {kind!r}"
            )
        if not _SCRIPT_FIELDS[kind].issuperset(spec):
            unknown = sorted(str(k) for k in set(spec) - _SCRIPT_FIELDS[kind])
            raise InvalidScript(f"{where}: unknown field(s) {', '.join(unknown)} for {kind!r}")
        if "agent" in spec:
            _require_str(spec, "agent", where, non_empty=True)
        if kind == "message":
            given = [key for key in ("text", "tokens", "refusal") if key in spec]
            if len(given) != 1:
                raise InvalidScript(
                    f"{where}: a message needs exactly one of 'text', 'tokens' or 'refusal'"
                )
            if "tokens" in spec:
                _require_count(spec, "tokens", where)
            else:
                _require_str(spec, given[0], where)
        elif kind == "function_call":
            _require_str(spec, "name", where, non_empty=True)
            _require_str(spec, "arguments", where)
            if "call_id" in spec:
                _require_str(spec, "call_id", where, non_empty=True)
        else:
            if "summary" in spec:
                _require_str(spec, "summary", where)
            if "tokens" in spec:
                _require_count(spec, "tokens", where)


def _require_str(spec: Mapping[str, Any], key: str, where: str, *, non_empty: bool = False) -> None:
    if key not in spec:
        raise InvalidScript(f"{where}.{key}: required")
    value = spec[key]
    if not isinstance(value, str):
        raise InvalidScript(f"{where}.{key}: must be a string, got {type(value).__name__}")
    if non_empty and not value:
        raise InvalidScript(f"{where}.{key}: must not be empty")


def _require_count(spec: Mapping[str, Any], key: str, where: str) -> None:
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidScript(f"{where}.{key}: must be an integer >= 0, got {value!r}")


def scripted_items(
    script: Sequence[Mapping[str, Any]], rng: Callable[[], random.Random]
) -> tuple[PlannedItem, ...]:
    """The planned items of `script`; `rng()` gives the content stream, asked for only when a
    spec needs draws (filler text, a seeded call id)."""
    validate_script(script)
    items: list[PlannedItem] = []
    for spec in script:
        kind = spec["type"]
        if kind == "message":
            filler = "tokens" in spec
            if filler:
                pieces, resplit = filler_pieces_checked(spec["tokens"], rng())
            else:
                pieces, resplit = exact_split(spec.get("text", spec.get("refusal", ""))), True
            items.append(
                PlannedItem(
                    kind="message",
                    pieces=pieces,
                    refusal="refusal" in spec,
                    agent=spec.get("agent"),
                    pieces_resplit=resplit,
                    pool_text=filler,
                )
            )
        elif kind == "function_call":
            call_id = spec["call_id"] if "call_id" in spec else seeded_call_id(rng())
            items.append(
                PlannedItem(
                    kind="function_call",
                    pieces=exact_split(spec["arguments"]),
                    name=spec["name"],
                    call_id=call_id,
                    agent=spec.get("agent"),
                    pieces_resplit=True,
                )
            )
        else:
            items.append(
                PlannedItem(
                    kind="reasoning",
                    summary_pieces=exact_split(spec.get("summary", "")),
                    hidden_tokens=int(spec.get("tokens", 0)),
                    agent=spec.get("agent"),
                )
            )
    return tuple(items)
