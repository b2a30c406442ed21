"""Argument synthesis: values validate against the schema subset function tools use.

``_validate`` below is an independent, hand-written validator for exactly that subset (it shares
no code with argsynth), so the two cannot agree on a bug by construction.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_server.engine.argsynth import (
    UnsatisfiableSchema,
    synthesize_arguments,
    synthesize_value,
)

# -- an independent validator for the subset ------------------------------------------------


def _type_ok(value: Any, kind: str) -> bool:
    return {
        "null": value is None,
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "string": isinstance(value, str),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }[kind]


def _validate(schema: Any, value: Any, root: Any = None, path: str = "$") -> list[str]:
    """Errors of ``value`` against ``schema`` (empty list: valid)."""
    root = schema if root is None else root
    if schema is True:
        return []
    if schema is False:
        return [f"{path}: false schema"]
    errors: list[str] = []
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        errors += _validate(target, value, root, path)
    if "const" in schema and json.dumps(value) != json.dumps(schema["const"]):
        errors.append(f"{path}: not const")
    if "enum" in schema and json.dumps(value) not in {json.dumps(e) for e in schema["enum"]}:
        errors.append(f"{path}: not in enum")
    if "anyOf" in schema and all(_validate(b, value, root, path) for b in schema["anyOf"]):
        errors.append(f"{path}: matches no anyOf branch")
    if "oneOf" in schema:
        matches = sum(1 for b in schema["oneOf"] if not _validate(b, value, root, path))
        if matches != 1:
            errors.append(f"{path}: matches {matches} oneOf branches")
    if "type" in schema:
        kinds = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        if not any(_type_ok(value, k) for k in kinds):
            return [*errors, f"{path}: {value!r} is not {kinds}"]
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: shorter than minLength")
        if len(value) > schema.get("maxLength", len(value)):
            errors.append(f"{path}: longer than maxLength")
    if _type_ok(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: below minimum")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: above maximum")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: not above exclusiveMinimum")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            errors.append(f"{path}: not below exclusiveMaximum")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than minItems")
        if len(value) > schema.get("maxItems", len(value)):
            errors.append(f"{path}: more than maxItems")
        if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(
            value
        ):
            errors.append(f"{path}: items not unique")
        for i, item in enumerate(value):
            errors += _validate(schema.get("items", True), item, root, f"{path}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required {key!r}")
        for key, item in value.items():
            sub = props.get(key, schema.get("additionalProperties", True))
            errors += _validate(sub, item, root, f"{path}.{key}")
    return errors


def test_the_validator_itself_rejects_bad_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 3},
            "s": {"type": "string", "maxLength": 2},
            "e": {"enum": ["a", "b"]},
            "l": {"type": "array", "items": {"type": "boolean"}, "maxItems": 1},
        },
        "required": ["n"],
        "additionalProperties": False,
    }
    assert _validate(schema, {"n": 2, "s": "ok", "e": "a", "l": [True]}) == []
    for bad in (
        {},
        {"n": 0},
        {"n": 2.5},
        {"n": True},
        {"n": 1, "s": "long"},
        {"n": 1, "e": "c"},
        {"n": 1, "l": [1]},
        {"n": 1, "l": [True, False]},
        {"n": 1, "x": 1},
    ):
        assert _validate(schema, bad), bad


# -- hypothesis strategy for schemas of the subset ---------------------------------------------

names = st.sampled_from(
    [
        "path",
        "file_path",
        "command",
        "cmd",
        "url",
        "query",
        "content",
        "name",
        "count",
        "flag",
        "description",
        "timeout_ms",
        "line",
        "workdir",
        "items",
        "mode",
        "language",
        "x",
        "y",
    ]
)


@st.composite
def string_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if draw(st.booleans()):
        schema["enum"] = draw(st.lists(st.text(max_size=8), min_size=1, max_size=4, unique=True))
        return schema
    lo = draw(st.integers(0, 20))
    if draw(st.booleans()):
        schema["minLength"] = lo
    if draw(st.booleans()):
        schema["maxLength"] = draw(st.integers(schema.get("minLength", 0), 40))
    if draw(st.booleans()):
        schema["format"] = draw(
            st.sampled_from(["date-time", "date", "email", "uri", "uuid", "ipv4", "unknown"])
        )
    return schema


@st.composite
def numeric_schemas(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["integer", "number"]))
    schema: dict[str, Any] = {"type": kind}
    lo = draw(st.integers(-1000, 1000))
    hi = lo + draw(st.integers(2, 500))
    if draw(st.booleans()):
        schema["exclusiveMinimum" if draw(st.booleans()) else "minimum"] = lo
    if draw(st.booleans()):
        schema["exclusiveMaximum" if draw(st.booleans()) else "maximum"] = hi
    return schema


leaves = st.one_of(
    string_schemas(),
    numeric_schemas(),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.builds(lambda v: {"const": v}, st.one_of(st.integers(), st.text(max_size=5), st.none())),
    st.just({"type": ["string", "null"]}),
    st.just({}),
)


def _object_of(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        props = draw(st.dictionaries(names, children, max_size=5))
        required = [k for k in props if draw(st.booleans())]
        schema: dict[str, Any] = {"type": "object", "properties": props, "required": required}
        additional = draw(st.sampled_from([None, False, True, "schema"]))
        if additional == "schema":
            schema["additionalProperties"] = draw(children)
        elif additional is not None:
            schema["additionalProperties"] = additional
        return schema

    return build()


def _array_of(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array", "items": draw(children)}
        lo = draw(st.integers(0, 3))
        if draw(st.booleans()):
            schema["minItems"] = lo
        if draw(st.booleans()):
            schema["maxItems"] = lo + draw(st.integers(0, 4))
        return schema

    return build()


# oneOf branches of distinct, non-overlapping types, so an exclusive value always exists
_EXCLUSIVE: list[dict[str, Any]] = [
    {"type": "string"},
    {"type": "integer"},
    {"type": "boolean"},
    {"type": "null"},
    {"type": "array", "items": {"type": "string"}},
]
exclusive_branches = st.lists(
    st.sampled_from(_EXCLUSIVE),
    min_size=1,
    max_size=4,
    unique_by=lambda s: str(s["type"]),
)

schemas = st.recursive(
    leaves,
    lambda children: st.one_of(
        _object_of(children),
        _array_of(children),
        st.builds(lambda bs: {"anyOf": bs}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda bs: {"oneOf": bs}, exclusive_branches),
    ),
    max_leaves=12,
)
tool_parameters = _object_of(schemas)


@settings(max_examples=300, deadline=None)
@given(tool_parameters, st.integers(0, 2**32))
def test_synthesized_arguments_validate(schema: dict[str, Any], seed: int) -> None:
    args = synthesize_arguments(schema, random.Random(seed))
    assert isinstance(args, dict)
    assert _validate(schema, args) == []
    for key in schema["required"]:
        assert key in args
    json.dumps(args, allow_nan=False)  # serializable as the arguments string


@settings(max_examples=300, deadline=None)
@given(schemas, st.integers(0, 2**32))
def test_synthesized_values_validate(schema: dict[str, Any], seed: int) -> None:
    value = synthesize_value(schema, random.Random(seed))
    assert _validate(schema, value) == []


@settings(max_examples=50, deadline=None)
@given(tool_parameters, st.integers(0, 2**32))
def test_same_seed_same_arguments(schema: dict[str, Any], seed: int) -> None:
    a = synthesize_arguments(schema, random.Random(seed))
    b = synthesize_arguments(schema, random.Random(seed))
    assert json.dumps(a) == json.dumps(b)


# -- specific behaviour ------------------------------------------------------------------------

SHELL = {
    "type": "object",
    "properties": {
        "command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "workdir": {"type": "string"},
        "timeout_ms": {"type": "integer", "minimum": 1000, "maximum": 60000},
        "justification": {"type": "string", "maxLength": 30},
    },
    "required": ["command"],
    "additionalProperties": False,
}


def test_required_always_and_optional_sometimes() -> None:
    seen: Counter[str] = Counter()
    for seed in range(400):
        args = synthesize_arguments(SHELL, random.Random(seed))
        assert _validate(SHELL, args) == []
        seen.update(args.keys())
    assert seen["command"] == 400
    for optional in ("workdir", "timeout_ms", "justification"):
        assert 100 < seen[optional] < 300  # included about half the time


def test_property_names_steer_plausible_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string"},
            "cmd": {"type": "string"},
            "url": {"type": "string"},
            "created": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
        },
        "required": ["file_path", "cmd", "url", "created", "id"],
    }
    for seed in range(50):
        args = synthesize_arguments(schema, random.Random(seed))
        assert re.fullmatch(r"[a-z]+(/[a-z]+)*/[a-z_]+\.[a-z]+", args["file_path"])
        assert re.fullmatch(r"[a-z]+( \S+)*", args["cmd"])
        assert args["url"].startswith("https://")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", args["created"])
        uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}"
        assert re.fullmatch(uuid, args["id"])


def test_length_and_numeric_bounds_are_honoured_at_the_edges() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 50, "maxLength": 50},
            "tiny": {"type": "string", "maxLength": 1},
            "n": {"type": "integer", "exclusiveMinimum": 4, "exclusiveMaximum": 6},
            "x": {"type": "number", "minimum": 0.5, "maximum": 0.5},
            "e": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.001},
        },
        "required": ["path", "tiny", "n", "x", "e"],
    }
    for seed in range(30):
        args = synthesize_arguments(schema, random.Random(seed))
        assert _validate(schema, args) == []
        assert args["n"] == 5
        assert args["x"] == 0.5


def test_local_refs_and_all_of_are_resolved() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Edit": {
                "type": "object",
                "properties": {"line": {"type": "integer"}},
                "required": ["line"],
                "additionalProperties": False,
            }
        },
        "properties": {
            "edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}, "minItems": 2},
            "opts": {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "boolean"}}},
                    {"required": ["a"]},
                ]
            },
        },
        "required": ["edits", "opts"],
    }
    for seed in range(20):
        args = synthesize_arguments(schema, random.Random(seed))
        assert _validate(schema, args) == []
        assert isinstance(args["opts"]["a"], bool)


def test_one_of_picks_a_value_matching_exactly_one_branch() -> None:
    schema = {"oneOf": [{"type": "number"}, {"type": "integer"}]}  # every integer matches both
    values = [synthesize_value(schema, random.Random(seed)) for seed in range(30)]
    assert all(isinstance(v, float) and not v.is_integer() for v in values)


def test_empty_or_missing_parameters_give_empty_arguments() -> None:
    assert synthesize_arguments({}, random.Random(0)) == {}
    assert synthesize_arguments(None, random.Random(0)) == {}
    assert synthesize_arguments({"type": "object"}, random.Random(0)) == {}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {}, "required": ["x"], "additionalProperties": False},
        {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 4}},
            "required": ["n"],
        },
        {
            "type": "object",
            "properties": {"s": {"type": "string", "minLength": 3, "maxLength": 2}},
            "required": ["s"],
        },
        {"type": "object", "properties": {"e": {"enum": []}}, "required": ["e"]},
        {"type": "object", "properties": {"f": False}, "required": ["f"]},
        {
            "type": "object",
            "properties": {"r": {"$ref": "https://example.com/x"}},
            "required": ["r"],
        },
        {"type": "string"},
    ],
)
def test_unsatisfiable_schemas_raise_a_value_error(schema: Mapping[str, Any]) -> None:
    with pytest.raises(UnsatisfiableSchema) as info:
        synthesize_arguments(schema, random.Random(0))
    assert isinstance(info.value, ValueError)


def test_unbounded_numbers_and_arrays_take_plausible_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "timeout_ms": {"type": "number"},
            "line": {"type": "integer"},
            "command": {"type": "array", "items": {"type": "string"}},
            "none_allowed": {"type": "array", "maxItems": 0},
        },
        "required": ["timeout_ms", "line", "command", "none_allowed"],
    }
    for seed in range(50):
        args = synthesize_arguments(schema, random.Random(seed))
        assert 1000 <= args["timeout_ms"] <= 120_000
        assert 1 <= args["line"] <= 500
        assert 1 <= len(args["command"]) <= 3
        assert args["none_allowed"] == []
