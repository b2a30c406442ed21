"""Incremental validation of request input items.

A continuation turn sends only new items, but whether they are valid depends on the chain:
a ``function_call_output`` must answer a call issued earlier (by an input ``function_call`` or
by the model's output). ``ValidationState`` carries exactly that across turns, so the server
validates only the new items and still reaches the same verdict as a full pass over the whole
history (property-tested).

Every item type openai-python 3.57's `ResponseInputItemParam` names is accepted (PROTOCOL.md
§2.1.1): the ones this server reads (messages of every role, function and custom tool calls and
their outputs, reasoning, compaction) are checked field by field; the items of hosted tools a
client passes back (`PASSBACK_REQUIRED`) by the members the SDK marks required.

Error messages follow the API's wording ("Missing required parameter: 'input[0].role'.") and
never contain Python reprs or exception names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.protocol.items import item_type

from .sealed import open_sealed

__all__ = ["ItemError", "ValidationState", "validate_items"]

ROLES = ("user", "system", "developer", "assistant")
INPUT_PARTS = ("input_text", "input_image", "input_file")
ASSISTANT_PARTS = ("output_text", "refusal")
STATUSES = ("in_progress", "completed", "incomplete")
IMAGE_DETAILS = ("low", "high", "auto", "original")
PHASES = ("commentary", "final_answer")
# `data:image/<type>;base64,<payload>`: what the API takes inline (PROTOCOL.md §2.1.1)
_IMAGE_DATA_URL = re.compile(r"data:image/(?:png|jpeg|jpg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}")
_FILE_DATA_URL = re.compile(r"data:[\w.+-]+/[\w.+-]+;base64,[A-Za-z0-9+/]+={0,2}")
_HTTP_URL = re.compile(r"https?://[^\s]+")

# Items of hosted tools a client passes back (it resends a response's output, PROTOCOL.md §6.3):
# the server runs none of these tools, so it checks the members openai-python 3.57 marks
# required (tests/reference_server/state/test_input_shapes.py holds the table to the SDK) and
# renders the rest as JSON.
PASSBACK_REQUIRED: dict[str, tuple[str, ...]] = {
    "file_search_call": ("id", "queries", "status"),
    "computer_call": ("call_id", "id", "pending_safety_checks", "status"),
    "computer_call_output": ("call_id", "output"),
    "web_search_call": ("action", "id", "status"),
    "tool_search_call": ("arguments",),
    "tool_search_output": ("tools",),
    "additional_tools": ("role", "tools"),
    "configuration_update": (),
    "image_generation_call": ("id", "result", "status"),
    "code_interpreter_call": ("code", "container_id", "id", "outputs", "status"),
    "local_shell_call": ("action", "call_id", "id", "status"),
    "local_shell_call_output": ("id", "output"),
    "shell_call": ("action", "call_id"),
    "shell_call_output": ("call_id", "output"),
    "apply_patch_call": ("call_id", "operation", "status"),
    "apply_patch_call_output": ("call_id", "status"),
    "mcp_list_tools": ("id", "server_label", "tools"),
    "mcp_approval_request": ("arguments", "id", "name", "server_label"),
    "mcp_approval_response": ("approval_request_id", "approve"),
    "mcp_call": ("arguments", "id", "name", "server_label"),
    "compaction_trigger": (),
    "program": ("call_id", "code", "fingerprint", "id"),
    "program_output": ("call_id", "id", "result", "status"),
}


@dataclass(frozen=True, slots=True)
class ItemError:
    index: int  # position in the request's ``input`` array
    param: str  # e.g. "input[3].call_id"
    message: str
    code: str | None = None  # the API's error code, where it has one


@dataclass(frozen=True, slots=True)
class ValidationState:
    """What validating later items needs to know about the chain so far."""

    issued_call_ids: frozenset[str] = frozenset()  # by input function_call items or the model
    answered_call_ids: frozenset[str] = frozenset()  # subset of issued
    item_count: int = 0  # input and output items seen in the chain

    @classmethod
    def initial(cls) -> ValidationState:
        return _INITIAL

    @property
    def pending_call_ids(self) -> tuple[str, ...]:
        """Issued calls without an output yet, sorted (the server may require answers)."""
        return tuple(sorted(self.issued_call_ids - self.answered_call_ids))

    def with_output(self, items: Iterable[Mapping[str, Any]]) -> ValidationState:
        """Record the output items: the function calls the model issued, and the tool outputs a
        multi-agent response committed by inject (PROTOCOL.md §2.2), which answer them."""
        issued: set[str] = set()
        answered: set[str] = set()
        count = 0
        for item in items:
            count += 1
            call_id = item.get("call_id")
            if not (isinstance(call_id, str) and call_id):
                continue
            kind = item_type(item)
            if kind == "function_call":
                issued.add(call_id)
            elif kind == "function_call_output":
                answered.add(call_id)
        return self._extend(issued, answered, count)

    def _extend(self, issued: set[str], answered: set[str], count: int) -> ValidationState:
        if not (issued or answered or count):
            return self
        return ValidationState(
            self.issued_call_ids | issued if issued else self.issued_call_ids,
            self.answered_call_ids | answered if answered else self.answered_call_ids,
            self.item_count + count,
        )


_INITIAL = ValidationState()


def validate_items(
    state: ValidationState, items: Sequence[Any], *, first_index: int = 0
) -> tuple[ValidationState, list[ItemError]]:
    """Check ``items`` against their shapes and the chain in ``state``.

    Returns the state extended with ``items`` and the errors, in item order. ``first_index`` is
    the position of ``items[0]`` in the request's ``input`` array.
    """
    errors: list[ItemError] = []
    issued: set[str] = set()
    answered: set[str] = set()
    for offset, item in enumerate(items):
        check = _Check(first_index + offset, errors)
        # (dict, Mapping): decoded JSON is dicts, tested at C speed; the ABC check is the fallback
        # (it costs microseconds per call when the caches are cold, as after an idle wake-up).
        if not isinstance(item, (dict, Mapping)):
            check.wrong_type(check.base, "an object", item)
            continue
        kind = item_type(item)
        if kind in _ITEM_CHECKS:
            _ITEM_CHECKS[kind](check, item)
        elif kind in PASSBACK_REQUIRED:
            _check_passback(check, item, PASSBACK_REQUIRED[kind])
        else:
            if "type" not in item:
                check.missing(check.base + ".type")
            elif not isinstance(item["type"], str):
                check.wrong_type(check.base + ".type", "a string", item["type"])
            else:
                check.bad_value(check.base + ".type", item["type"], ITEM_TYPES)
            continue
        # Chain bookkeeping: recorded even when the item has other errors, so that an
        # incremental pass and a full pass always agree.
        call_id = item.get("call_id")
        if not (isinstance(call_id, str) and call_id):
            continue
        if kind in _CALLS:
            issued.add(call_id)
        elif kind in _OUTPUTS:
            if call_id in issued or call_id in state.issued_call_ids:
                answered.add(call_id)
            else:
                what = kind.removesuffix("_output").replace("_", " ")
                check.add(
                    check.base + ".call_id",
                    f"No tool call found for {what} output with call_id {_quote(call_id)}.",
                )
    return state._extend(issued, answered, len(items)), errors


class _Check:
    """Error collector for one item; helpers phrase messages the way the API does."""

    __slots__ = ("base", "errors", "index")

    def __init__(self, index: int, errors: list[ItemError]) -> None:
        self.index = index
        self.base = f"input[{index}]"
        self.errors = errors

    def add(self, param: str, message: str, code: str | None = None) -> None:
        self.errors.append(ItemError(self.index, param, message, code))

    def missing(self, param: str) -> None:
        self.add(param, f"Missing required parameter: '{param}'.")

    def wrong_type(self, param: str, expected: str, value: object) -> None:
        self.add(
            param,
            f"Invalid type for '{param}': expected {expected}, but got {_kind(value)} instead.",
        )

    def bad_value(self, param: str, value: str, allowed: Sequence[str]) -> None:
        self.add(param, f"Invalid value: {_quote(value)}. Supported values are: {_list(allowed)}.")

    def string(
        self,
        obj: Mapping[str, Any],
        key: str,
        param: str,
        *,
        required: bool = True,
        nonempty: bool = False,
    ) -> str | None:
        """The string at ``obj[key]``, or None after reporting why it is not one."""
        if key not in obj or (obj[key] is None and not required):
            if required:
                self.missing(param)
            return None
        value = obj[key]
        if not isinstance(value, str):
            self.wrong_type(param, "a string", value)
            return None
        if nonempty and not value:
            self.add(
                param,
                f"Invalid '{param}': empty string. Expected a string with minimum length 1, "
                "but got an empty string instead.",
            )
            return None
        return value

    def choice(self, obj: Mapping[str, Any], key: str, param: str, allowed: Sequence[str]) -> None:
        """An optional enum field."""
        value = self.string(obj, key, param, required=False)
        if value is not None and value not in allowed:
            self.bad_value(param, value, allowed)

    def parts(self, value: object, param: str, allowed: Sequence[str], expected: str) -> None:
        """A string or an array of content parts whose types are in ``allowed``."""
        if isinstance(value, str):
            return
        if not isinstance(value, list):
            self.wrong_type(param, expected, value)
            return
        for j, part in enumerate(value):
            self.part(part, f"{param}[{j}]", allowed)

    def part(self, part: object, param: str, allowed: Sequence[str]) -> None:
        if not isinstance(part, (dict, Mapping)):
            self.wrong_type(param, "an object", part)
            return
        kind = self.string(part, "type", param + ".type")
        if kind is None:
            return
        if kind not in allowed:
            self.bad_value(param + ".type", kind, allowed)
        elif kind in ("input_text", "output_text", "summary_text", "reasoning_text"):
            self.string(part, "text", param + ".text")
        elif kind == "refusal":
            self.string(part, "refusal", param + ".refusal")
        elif kind == "input_image":
            self._one_of(part, param, ("image_url", "file_id"))
            self.url(part, "image_url", param, _IMAGE_DATA_URL, "an image MIME type")
            self.choice(part, "detail", param + ".detail", IMAGE_DETAILS)
        elif kind == "input_file":
            self._one_of(part, param, ("file_id", "file_data", "file_url"))
            self.url(part, "file_url", param, None, "")
            data = part.get("file_data")
            if (
                isinstance(data, str)
                and data.startswith("data:")
                and not _FILE_DATA_URL.fullmatch(data)
            ):
                self.add(
                    param + ".file_data",
                    f"Invalid '{param}.file_data': expected a base64-encoded data URL "
                    "('data:<mime type>;base64,<data>') or base64 data.",
                    "invalid_value",
                )
            self.string(part, "filename", param + ".filename", required=False)

    def url(
        self,
        part: Mapping[str, Any],
        key: str,
        param: str,
        data_url: re.Pattern[str] | None,
        mime: str,
    ) -> None:
        """An http(s) URL, or (where `data_url` is given) a base64 data URL of that kind."""
        value = part.get(key)
        if not isinstance(value, str):
            return  # absent or of the wrong type: reported by _one_of
        if _HTTP_URL.fullmatch(value) or (data_url is not None and data_url.fullmatch(value)):
            return
        inline = f" or a base64-encoded data URL with {mime} (e.g. 'data:image/png;base64,...')"
        self.add(
            f"{param}.{key}",
            f"Invalid '{param}.{key}'. Expected a valid URL"
            + (inline if data_url is not None else "")
            + ", but got an invalid value.",
            "invalid_value",
        )

    def _one_of(self, part: Mapping[str, Any], param: str, keys: Sequence[str]) -> None:
        present = [key for key in keys if part.get(key) is not None]
        if not present:
            kind = part.get("type")
            self.add(param, f"Invalid '{param}': a {kind} part needs one of {_list(keys, 'or')}.")
        for key in present:
            self.string(part, key, f"{param}.{key}")


def _check_message(check: _Check, item: Mapping[str, Any]) -> None:
    base = check.base
    role = check.string(item, "role", base + ".role")
    if role is not None and role not in ROLES:
        check.bad_value(base + ".role", role, ROLES)
    if "content" not in item:
        check.missing(base + ".content")
    else:
        allowed = ASSISTANT_PARTS if role == "assistant" else INPUT_PARTS
        check.parts(
            item["content"], base + ".content", allowed, "a string or an array of content parts"
        )
    check.choice(item, "status", base + ".status", STATUSES)
    check.choice(item, "phase", base + ".phase", PHASES)
    check.string(item, "id", base + ".id", required=False)


def _check_function_call(check: _Check, item: Mapping[str, Any]) -> None:
    base = check.base
    check.string(item, "call_id", base + ".call_id", nonempty=True)
    check.string(item, "name", base + ".name", nonempty=True)
    arguments = check.string(item, "arguments", base + ".arguments")
    if arguments is not None:
        problem = _json_problem(arguments)
        if problem:
            check.add(
                base + ".arguments",
                f"Invalid '{base}.arguments': function call arguments must be a JSON-encoded "
                f"string, but the value is not valid JSON ({problem}).",
            )
    check.choice(item, "status", base + ".status", STATUSES)
    check.string(item, "id", base + ".id", required=False)


def _check_function_call_output(check: _Check, item: Mapping[str, Any]) -> None:
    base = check.base
    check.string(item, "call_id", base + ".call_id", nonempty=True)
    if "output" not in item:
        check.missing(base + ".output")
    else:
        check.parts(
            item["output"], base + ".output", INPUT_PARTS, "a string or an array of content parts"
        )
    check.choice(item, "status", base + ".status", STATUSES)
    check.string(item, "id", base + ".id", required=False)


def _check_reasoning(check: _Check, item: Mapping[str, Any]) -> None:
    base = check.base
    if "summary" not in item:
        check.missing(base + ".summary")
    elif not isinstance(item["summary"], list):
        check.wrong_type(base + ".summary", "an array of summary parts", item["summary"])
    else:
        check.parts(item["summary"], base + ".summary", ("summary_text",), "")
    if item.get("content") is not None:
        check.parts(
            item["content"], base + ".content", ("reasoning_text",), "an array of reasoning parts"
        )
    check.string(item, "encrypted_content", base + ".encrypted_content", required=False)
    check.string(item, "id", base + ".id", required=False)


def _check_custom_tool_call(check: _Check, item: Mapping[str, Any]) -> None:
    base = check.base
    check.string(item, "call_id", base + ".call_id", nonempty=True)
    check.string(item, "name", base + ".name", nonempty=True)
    check.string(item, "input", base + ".input")
    check.string(item, "id", base + ".id", required=False)


def _check_custom_tool_call_output(check: _Check, item: Mapping[str, Any]) -> None:
    base = check.base
    check.string(item, "call_id", base + ".call_id", nonempty=True)
    if "output" not in item:
        check.missing(base + ".output")
    else:
        check.parts(
            item["output"], base + ".output", INPUT_PARTS, "a string or an array of content parts"
        )
    check.string(item, "id", base + ".id", required=False)


def _check_compaction(check: _Check, item: Mapping[str, Any]) -> None:
    """A compaction item carries the compacted context: only this server's can be read."""
    base = check.base
    content = check.string(item, "encrypted_content", base + ".encrypted_content")
    if content is not None and open_sealed("compaction", content) is None:
        check.add(
            base + ".encrypted_content",
            f"The encrypted content of '{base}' could not be verified: pass back the compaction "
            "item exactly as this server returned it.",
            "invalid_encrypted_content",
        )
    check.string(item, "id", base + ".id", required=False)


def _check_item_reference(check: _Check, item: Mapping[str, Any]) -> None:
    """Left only when it named no item of the chain (pipeline/resolve.py resolves the rest)."""
    item_id = check.string(item, "id", check.base + ".id", nonempty=True)
    if item_id is not None:
        check.add(
            check.base + ".id", f"Item with id {_quote(item_id)} not found.", "item_not_found"
        )


def _check_passback(check: _Check, item: Mapping[str, Any], required: Sequence[str]) -> None:
    for key in required:
        if key not in item:
            check.missing(f"{check.base}.{key}")
    check.string(item, "id", check.base + ".id", required=False)
    check.string(item, "call_id", check.base + ".call_id", required=False)  # null: a server call


_ITEM_CHECKS: dict[str | None, Callable[[_Check, Mapping[str, Any]], None]] = {
    "message": _check_message,
    "function_call": _check_function_call,
    "function_call_output": _check_function_call_output,
    "reasoning": _check_reasoning,
    "custom_tool_call": _check_custom_tool_call,
    "custom_tool_call_output": _check_custom_tool_call_output,
    "compaction": _check_compaction,
    "item_reference": _check_item_reference,
}
ITEM_TYPES = (*(t for t in _ITEM_CHECKS if t is not None), *PASSBACK_REQUIRED)
_CALLS = frozenset({"function_call", "custom_tool_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


class _NonFiniteNumber(ValueError):
    pass


def _reject_constant(name: str) -> object:
    raise _NonFiniteNumber(name)


def _json_problem(text: str) -> str | None:
    """Why ``text`` is not strict JSON, as a short phrase; None when it is."""
    try:
        json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    except RecursionError:
        return "it is nested too deeply"
    except _NonFiniteNumber as exc:
        return f"{exc} is not a JSON number"
    except ValueError:  # int() refuses integers longer than 4300 digits
        return "a number has too many digits"
    return None


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, (dict, Mapping)):
        return "an object"
    return "an unsupported value"


def _quote(value: str, limit: int = 64) -> str:
    return "'" + (value if len(value) <= limit else value[:limit] + "…") + "'"


def _list(values: Sequence[str], conjunction: str = "and") -> str:
    quoted = [f"'{v}'" for v in values]
    if len(quoted) <= 2:
        return f" {conjunction} ".join(quoted)
    return ", ".join(quoted[:-1]) + f", {conjunction} " + quoted[-1]
