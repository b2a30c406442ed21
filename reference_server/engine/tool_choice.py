"""Which function tools a response may call: `tools` and `tool_choice` read as the API does.

``"auto"`` (or absent): any function tool, or none; ``"none"``: no call; ``"required"``: at least
one call; ``{"type": "function", "name": X}``: exactly X; ``{"type": "allowed_tools", "mode":
"auto"|"required", "tools": [...]}``: the same over the listed function tools. Hosted tool types
are not simulated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from reference_server.engine.generation_plan import InvalidToolChoice, UnknownToolChoice

ToolChoiceMode = Literal["none", "auto", "required", "named"]


def function_tools(tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Function tools with a usable name; other tool types are not simulated."""
    return [
        t
        for t in tools
        if isinstance(t, Mapping)
        and t.get("type") == "function"
        and isinstance(t.get("name"), str)
        and t.get("name")
    ]


def resolve_tool_choice(
    tool_choice: str | Mapping[str, Any] | None, functions: list[Mapping[str, Any]]
) -> tuple[ToolChoiceMode, list[Mapping[str, Any]]]:
    """(mode, callable tools). Raises InvalidToolChoice / UnknownToolChoice."""
    if tool_choice is None or tool_choice == "auto":
        return "auto", functions
    if tool_choice == "none":
        return "none", []
    if tool_choice == "required":
        if not functions:
            raise InvalidToolChoice(
                "tool_choice 'required' needs at least one function tool in 'tools'"
            )
        return "required", functions
    if isinstance(tool_choice, str):
        raise InvalidToolChoice(
            f"invalid tool_choice {tool_choice!r}: expected 'none', 'auto', 'required' or an object"
        )
    if not isinstance(tool_choice, Mapping):
        raise InvalidToolChoice("tool_choice must be a string or an object")
    kind = tool_choice.get("type")
    if kind == "function":
        return "named", [_named_tool(tool_choice, functions)]
    if kind == "allowed_tools":
        return _allowed_tools(tool_choice, functions)
    raise InvalidToolChoice(
        f"tool_choice of type {kind!r} is not supported by the reference server "
        "(supported: 'function', 'allowed_tools')"
    )


def _named_tool(
    tool_choice: Mapping[str, Any], functions: list[Mapping[str, Any]]
) -> Mapping[str, Any]:
    names = [str(t["name"]) for t in functions]
    name = tool_choice.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidToolChoice("tool_choice of type 'function' needs a 'name'")
    if name not in names:
        known = ", ".join(repr(n) for n in names) or "none"
        raise UnknownToolChoice(
            f"tool_choice names function {name!r}, which is not in 'tools' "
            f"(function tools: {known})"
        )
    return functions[names.index(name)]


def _allowed_tools(
    tool_choice: Mapping[str, Any], functions: list[Mapping[str, Any]]
) -> tuple[ToolChoiceMode, list[Mapping[str, Any]]]:
    names = [str(t["name"]) for t in functions]
    mode = tool_choice.get("mode", "auto")
    if mode not in ("auto", "required"):
        raise InvalidToolChoice(
            f"tool_choice allowed_tools mode must be 'auto' or 'required', got {mode!r}"
        )
    listed = tool_choice.get("tools")
    if not isinstance(listed, Sequence) or isinstance(listed, str):
        raise InvalidToolChoice("tool_choice allowed_tools needs a 'tools' list")
    allowed: list[Mapping[str, Any]] = []
    for i, ref in enumerate(listed):
        if not isinstance(ref, Mapping) or ref.get("type") != "function":
            continue  # hosted tools are not simulated
        name = ref.get("name")
        if name not in names:
            raise UnknownToolChoice(
                f"tool_choice.tools[{i}] names function {name!r}, which is not in 'tools'"
            )
        allowed.append(functions[names.index(str(name))])
    if mode == "required" and not allowed:
        raise InvalidToolChoice(
            "tool_choice allowed_tools with mode 'required' lists no function tool"
        )
    return ("required" if mode == "required" else "auto"), allowed
