"""The wsmode-trace format: model, loader errors, writer round trip, history and schema."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.format import (
    ITEM_OVERHEAD_TOKENS,
    OutputSpec,
    Rollout,
    TraceFormatError,
    Turn,
    dump_rollouts,
    dumps_rollouts,
    estimate_tokens,
    input_message,
    load_traces,
    loads_rollouts,
    trace_schema,
    validate_rollout,
)

SMOKE = Path(__file__).resolve().parents[3] / "traces" / "smoke.jsonl"

TOOLS = [
    {
        "type": "function",
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        "strict": False,
    },
    {"type": "function", "name": "run_tests", "parameters": {"type": "object"}},
]


def sample_lines() -> list[dict[str, Any]]:
    """A three-turn rollout: parallel calls, a reasoning item, a final message."""
    return copy.deepcopy(_SAMPLE)


_SAMPLE: list[dict[str, Any]] = [
    {
        "kind": "rollout",
        "format": "wsmode-trace",
        "version": 1,
        "id": "r1",
        "source": "recorded",
        "agent_kind": "bug_fix",
        "model": "m",
        "instructions": "Be brief.",
        "tools": TOOLS,
        "seed": None,
        "meta": {"note": "hand written"},
    },
    {
        "kind": "turn",
        "rollout": "r1",
        "index": 0,
        "input": [input_message("Fix the bug in cache.py")],
        "tool_wait_ms": 0,
        "output": [
            {"type": "reasoning", "summary": "Look first.", "tokens": 40},
            {
                "type": "function_call",
                "name": "read_file",
                "arguments": '{"path":"a.py"}',
                "call_id": "call_a",
                "tokens": 9,
            },
            {
                "type": "function_call",
                "name": "run_tests",
                "arguments": "{}",
                "call_id": "call_b",
                "tokens": 4,
            },
        ],
    },
    {
        "kind": "turn",
        "rollout": "r1",
        "index": 1,
        "input": [
            {"type": "function_call_output", "call_id": "call_b", "output": "1 failed"},
            {"type": "function_call_output", "call_id": "call_a", "output": "x = 1\n"},
        ],
        "tool_wait_ms": 1250.5,
        "output": [
            {
                "type": "function_call",
                "name": "run_tests",
                "arguments": "{}",
                "call_id": "call_c",
                "tokens": 4,
            },
        ],
        "observed": {"ttft_ms": 210.0, "input_tokens": 900, "cached_tokens": 800},
    },
    {
        "kind": "turn",
        "rollout": "r1",
        "index": 2,
        "input": [{"type": "function_call_output", "call_id": "call_c", "output": "ok"}],
        "tool_wait_ms": 3000,
        "output": [{"type": "message", "text": "Fixed.", "tokens": 2}],
    },
]


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def load_sample(tmp_path: Path, lines: list[dict[str, Any]] | None = None) -> list[Rollout]:
    return load_traces(write_lines(tmp_path / "x.jsonl", lines or sample_lines()))


# ---------------------------------------------------------------------------------------------
# Loading the model


def test_load_builds_the_model(tmp_path: Path) -> None:
    [r] = load_sample(tmp_path)
    assert (r.id, r.source, r.agent_kind, r.model, r.instructions) == (
        "r1", "recorded", "bug_fix", "m", "Be brief."
    )  # fmt: skip
    assert r.tool_names == ("read_file", "run_tests")
    assert r.meta == {"note": "hand written"}
    assert [t.index for t in r.turns] == [0, 1, 2]
    assert r.turns[0].call_ids == ("call_a", "call_b")
    assert r.turns[1].answered_call_ids == ("call_b", "call_a")
    assert r.turns[1].tool_wait_ms == 1250.5
    assert r.turns[1].observed == {"ttft_ms": 210.0, "input_tokens": 900, "cached_tokens": 800}
    assert r.turns[0].output[0] == OutputSpec(type="reasoning", summary="Look first.", tokens=40)
    # reasoning: 40 hidden tokens plus the summary's estimate ("Look first." -> 3)
    assert r.turns[0].output_tokens == 40 + 3 + 9 + 4
    assert r.total_output_tokens == 40 + 3 + 9 + 4 + 4 + 2
    assert r.total_tool_wait_ms == 4250.5


def test_script_items_are_the_reference_server_scripted_items(tmp_path: Path) -> None:
    [r] = load_sample(tmp_path)
    assert r.turns[0].script() == [
        {"type": "reasoning", "summary": "Look first.", "tokens": 40},
        {"type": "function_call", "name": "read_file", "arguments": '{"path":"a.py"}',
         "call_id": "call_a"},
        {"type": "function_call", "name": "run_tests", "arguments": "{}", "call_id": "call_b"},
    ]  # fmt: skip
    assert r.turns[2].script() == [{"type": "message", "text": "Fixed."}]


def test_scripts_pass_the_reference_server_script_validator(tmp_path: Path) -> None:
    engine = pytest.importorskip("reference_server.engine.scripted_output")
    rollouts = load_sample(tmp_path)
    if SMOKE.exists():
        rollouts += load_traces(SMOKE)
    for rollout in rollouts:
        for turn in rollout.turns:
            engine.validate_script(turn.script())


def test_unknown_extra_fields_are_tolerated(tmp_path: Path) -> None:
    lines = sample_lines()
    lines[0]["future_field"] = {"x": 1}
    lines[1]["annotations"] = ["y"]
    lines[1]["output"][1]["status"] = "completed"
    lines[2]["observed"]["user_wait_ms"] = 5
    [r] = load_sample(tmp_path, lines)
    assert r.turns[1].observed["user_wait_ms"] == 5
    assert r.turns[0].output[1].call_id == "call_a"


def test_tokens_default_to_a_chars_estimate_and_zero_hidden_reasoning(tmp_path: Path) -> None:
    lines = sample_lines()
    del lines[3]["output"][0]["tokens"]
    lines[3]["output"][0]["text"] = "x" * 41
    del lines[1]["output"][0]["tokens"]
    [r] = load_sample(tmp_path, lines)
    assert r.turns[2].output[0].tokens == 11
    assert r.turns[0].output[0].tokens == 0
    assert r.turns[0].output[0].total_tokens == 3


def test_round_trip_dump_then_load_is_identity(tmp_path: Path) -> None:
    [r] = load_sample(tmp_path)
    other = Rollout(
        id="r2", source="generated", agent_kind="refactor", model="m", seed=7,
        turns=(Turn(index=0, input=(input_message("hi"),), output=(OutputSpec.message("yo"),)),),
    )  # fmt: skip
    size = dump_rollouts([r, other], tmp_path / "out" / "both.jsonl")
    text = (tmp_path / "out" / "both.jsonl").read_text(encoding="utf-8")
    assert size == len(text.encode())
    assert text == dumps_rollouts([r, other])
    assert load_traces(tmp_path / "out" / "both.jsonl") == [r, other]
    assert loads_rollouts(text) == [r, other]
    # gzip is chosen by suffix and loads the same
    dump_rollouts([r], tmp_path / "g.jsonl.gz")
    assert gzip.decompress((tmp_path / "g.jsonl.gz").read_bytes()).decode() == dumps_rollouts([r])
    assert load_traces(tmp_path / "g.jsonl.gz") == [r]


def test_directory_loading_is_sorted_and_ids_are_unique_across_files(tmp_path: Path) -> None:
    lines = sample_lines()
    write_lines(tmp_path / "b.jsonl", lines)
    renamed = copy.deepcopy(lines)
    for line in renamed:
        line["id" if line["kind"] == "rollout" else "rollout"] = "r0"
    write_lines(tmp_path / "a.jsonl", renamed)
    (tmp_path / "notes.txt").write_text("not a trace")
    assert [r.id for r in load_traces(tmp_path)] == ["r0", "r1"]
    write_lines(tmp_path / "c.jsonl", lines)
    with pytest.raises(TraceFormatError, match=r"c\.jsonl.*duplicate rollout id \"r1\".*b\.jsonl"):
        load_traces(tmp_path)


def test_empty_directory_and_missing_path_are_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"no \*\.jsonl trace files"):
        load_traces(tmp_path)
    with pytest.raises(TraceFormatError, match="no such file"):
        load_traces(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(TraceFormatError, match=r"empty\.jsonl: no rollouts in trace"):
        load_traces(tmp_path / "empty.jsonl")


def test_unreadable_files_are_trace_format_errors_naming_file_and_line(tmp_path: Path) -> None:
    good = dumps_rollouts(load_sample(tmp_path)).encode()
    not_gzip = tmp_path / "plain.jsonl.gz"
    not_gzip.write_bytes(good)
    with pytest.raises(TraceFormatError, match=r"plain\.jsonl\.gz: bad gzip data: Not a") as info:
        load_traces(not_gzip)
    assert info.value.line is None  # no line was read: no line number to give
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(gzip.compress(good)[:-12])
    with pytest.raises(TraceFormatError, match=r"cut\.jsonl\.gz: bad gzip data after line \d+"):
        load_traces(truncated)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(good.replace(b"Fixed.", b"Fix\xe9d."))
    with pytest.raises(TraceFormatError) as info:
        load_traces(latin)
    assert (info.value.path, info.value.line) == (str(latin), 4)
    assert "not UTF-8 text" in info.value.reason
    # a directory load reports its first bad file (sorted) the same way
    with pytest.raises(TraceFormatError, match=r"cut\.jsonl\.gz: bad gzip data"):
        load_traces(tmp_path)


# ---------------------------------------------------------------------------------------------
# Errors name file, line and field


def test_error_message_names_file_line_and_field(tmp_path: Path) -> None:
    lines = sample_lines()
    lines[2]["tool_wait_ms"] = "abc"
    path = write_lines(tmp_path / "x.jsonl", lines)
    with pytest.raises(TraceFormatError) as info:
        load_traces(path)
    assert str(info.value) == f'{path}:3: turn.tool_wait_ms: expected a number >= 0, got "abc"'
    assert (info.value.line, info.value.field) == (3, "turn.tool_wait_ms")


def _set(line: int, key: str, value: Any) -> Any:
    def mutate(lines: list[dict[str, Any]]) -> None:
        target: Any = lines[line]
        *path, last = key.split(".")
        for part in path:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is _DELETE:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value

    return mutate


_DELETE = object()

BAD_CASES = [
    ("version", _set(0, "version", 3), 1, "rollout.version",
     "unsupported trace format version 3"),
    ("format", _set(0, "format", "other"), 1, "rollout.format", 'expected "wsmode-trace"'),
    ("source", _set(0, "source", "web"), 1, "rollout.source", "expected one of generated"),
    ("no id", _set(0, "id", _DELETE), 1, "rollout.id", "missing required field"),
    ("tool type", _set(0, "tools.1.type", "custom"), 1, "rollout.tools[1].type",
     'expected "function"'),
    ("dup tool", _set(0, "tools.1.name", "read_file"), 1, "rollout.tools[1].name",
     "duplicate tool name"),
    ("index gap", _set(2, "index", 2), 3, "turn.index", "expected turn index 1"),
    ("wrong owner", _set(2, "rollout", "zz"), 3, "turn.rollout", 'belongs to rollout "zz"'),
    ("unanswered", _set(2, "input", [{"type": "function_call_output", "call_id": "call_a",
                                      "output": ""}]),
     3, "turn.input", 'function call(s) ["call_b"] of turn 0 have no function_call_output'),
    ("stray answer", _set(2, "input.0.call_id", "call_zz"), 3, "turn.input[0].call_id",
     'for call_id "call_zz": it answers no function call of turn 0'),
    ("double answer", _set(2, "input.0.call_id", "call_a"), 3, "turn.input[1].call_id",
     "answered twice"),
    ("answer on turn 0", _set(1, "input", [{"type": "function_call_output", "call_id": "c",
                                            "output": ""}]),
     2, "turn.input[0].call_id", "the first turn has no function calls"),
    ("empty first input", _set(1, "input", []), 2, "turn.input", "at least one input item"),
    ("undeclared tool", _set(2, "output.0.name", "rm_rf"), 3, "turn.output[0].name",
     'function "rm_rf" is not declared'),
    ("dup call id", _set(2, "output.0.call_id", "call_a"), 3, "turn.output[0].call_id",
     'duplicate call_id "call_a" (already used in turn 0)'),
    ("output type", _set(3, "output.0.type", "image"), 4, "turn.output[0].type",
     "expected one of message, function_call, reasoning"),
    ("empty output", _set(3, "output", []), 4, "turn.output", "a non-empty list"),
    ("neg tokens", _set(3, "output.0.tokens", -1), 4, "turn.output[0].tokens",
     "an integer >= 0"),
    ("bool tokens", _set(3, "output.0.tokens", True), 4, "turn.output[0].tokens",
     "an integer >= 0"),
    ("bad role", _set(1, "input.0.role", "robot"), 2, "turn.input[0].role", "expected one of"),
    ("no output", _set(2, "input.0.output", _DELETE), 3, "turn.input[0].output",
     "missing required field"),
    ("observed", _set(2, "observed.ttft_ms", -3), 3, "turn.observed.ttft_ms", "a number >= 0"),
    ("kind", _set(3, "kind", "trun"), 4, "kind", 'expected "rollout" or "turn", got "trun"'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "line", "field", "reason"),
    [c[1:] for c in BAD_CASES],
    ids=[c[0] for c in BAD_CASES],
)
def test_bad_files_fail_with_location(
    tmp_path: Path, mutate: Any, line: int, field: str, reason: str
) -> None:
    lines = sample_lines()
    mutate(lines)
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(TraceFormatError) as info:
        load_traces(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), line, field)
    assert reason in err.reason
    assert str(err).startswith(f"{path}:{line}: {field}: ")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "invalid JSON"),
        ('{"a": NaN}', "NaN is not valid JSON"),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ("[1, 2]", "expected a JSON object"),
        ("[" * 5000 + "]" * 5000, "invalid JSON"),
    ],
)
def test_malformed_json_lines(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "j.jsonl"
    good = json.dumps(sample_lines()[0])
    path.write_text(f"{good}\n\n{text}\n", encoding="utf-8")
    with pytest.raises(TraceFormatError) as info:
        load_traces(path)
    assert info.value.line == 3
    assert reason in str(info.value)


def test_turn_before_rollout_and_rollout_without_turns(tmp_path: Path) -> None:
    lines = sample_lines()
    with pytest.raises(TraceFormatError, match=r":1: turn: a turn line before any rollout"):
        load_traces(write_lines(tmp_path / "a.jsonl", lines[1:]))
    with pytest.raises(TraceFormatError, match=r':1: rollout: rollout "r1" has no turns'):
        load_traces(write_lines(tmp_path / "b.jsonl", lines[:1]))


def test_bad_turn_in_second_rollout_is_reported_after_the_first_is_yielded(
    tmp_path: Path,
) -> None:
    lines = sample_lines()
    second = copy.deepcopy(lines)
    for line in second:
        line["id" if line["kind"] == "rollout" else "rollout"] = "r2"
    second[3]["tool_wait_ms"] = -1
    path = write_lines(tmp_path / "two.jsonl", lines + second)
    with pytest.raises(TraceFormatError, match=r"two\.jsonl:8: turn\.tool_wait_ms"):
        load_traces(path)


def test_validate_checks_in_memory_rollouts() -> None:
    bad = Rollout(
        id="mem", source="generated", agent_kind="bug_fix", model="m",
        turns=(
            Turn(index=0, input=(input_message("go"),),
                 output=(OutputSpec.function_call("undeclared", "{}", "c1"),)),
        ),
    )  # fmt: skip
    with pytest.raises(TraceFormatError) as info:
        validate_rollout(bad)
    assert str(info.value).startswith("<rollout mem>:2: turn.output[0].name: function")
    with pytest.raises(TraceFormatError, match="undeclared"):
        dump_rollouts([bad], "/nonexistent-dir/never-written.jsonl")


# ---------------------------------------------------------------------------------------------
# History and context estimates


def test_full_history_interleaves_inputs_and_rendered_outputs(tmp_path: Path) -> None:
    [r] = load_sample(tmp_path)
    lines = sample_lines()
    assert r.full_history(0) == lines[1]["input"]
    call_a = {"type": "function_call", "call_id": "call_a", "name": "read_file",
              "arguments": '{"path":"a.py"}'}  # fmt: skip
    call_b = {"type": "function_call", "call_id": "call_b", "name": "run_tests", "arguments": "{}"}
    # reasoning is left out: the API takes it back only with an rs_ id, which a trace lacks
    assert r.full_history(1) == [*lines[1]["input"], call_a, call_b, *lines[2]["input"]]
    assert r.turns[0].output[0].type == "reasoning"
    assert r.turns[0].output[0].history_item() is None
    final = r.full_history(3)
    assert final[-1] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Fixed."}],
    }
    assert len(final) == 1 + 2 + 2 + 1 + 1 + 1
    with pytest.raises(IndexError):
        r.full_history(4)


def test_context_tokens_estimate_counts_chars_over_four(tmp_path: Path) -> None:
    [r] = load_sample(tmp_path)
    base = estimate_tokens("Be brief.") + estimate_tokens(json.dumps(TOOLS))
    first = estimate_tokens("Fix the bug in cache.py") + ITEM_OVERHEAD_TOKENS
    assert r.context_tokens_estimate(0) == base + first
    calls = estimate_tokens('read_file{"path":"a.py"}') + estimate_tokens("run_tests{}")
    outputs = estimate_tokens("1 failed") + estimate_tokens("x = 1\n")
    assert r.context_tokens_estimate(1) == base + first + calls + outputs + 4 * ITEM_OVERHEAD_TOKENS
    series = [r.context_tokens_estimate(i) for i in range(len(r.turns) + 1)]
    assert series == sorted(series)
    assert r.final_context_tokens == series[-1]


# ---------------------------------------------------------------------------------------------
# JSON Schema (checked with a small draft 2020-12 subset validator: no jsonschema dependency)


def _errors(schema: dict[str, Any], value: Any, root: dict[str, Any]) -> list[str]:
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return _errors(target, value, root)
    problems: list[str] = []
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        checks = {
            "object": lambda v: isinstance(v, dict),
            "array": lambda v: isinstance(v, list),
            "string": lambda v: isinstance(v, str),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
        }
        if not any(checks[n](value) for n in names):
            return [f"type {names}"]
    if "const" in schema and value != schema["const"]:
        problems.append(f"const {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        problems.append("enum")
    if "not" in schema and not _errors(schema["not"], value, root):
        problems.append("not")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        problems.append("minLength")
    if isinstance(value, int | float) and value < schema.get("minimum", float("-inf")):
        problems.append("minimum")
    if isinstance(value, dict):
        problems += [f"required {k}" for k in schema.get("required", []) if k not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problems += _errors(sub, value[key], root)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append("minItems")
        for item in value:
            problems += _errors(schema.get("items", {}), item, root)
    if "oneOf" in schema:
        ok = sum(not _errors(s, value, root) for s in schema["oneOf"])
        if ok != 1:
            problems.append(f"oneOf matched {ok}")
    if "anyOf" in schema and all(_errors(s, value, root) for s in schema["anyOf"]):
        problems.append("anyOf")
    return problems


def test_schema_accepts_every_line_the_writer_produces() -> None:
    schema = trace_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    lines = sample_lines()
    if SMOKE.exists():
        lines += [json.loads(t) for t in SMOKE.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        assert _errors(schema, line, schema) == [], line


@pytest.mark.parametrize(
    ("line", "mutate"),
    [
        (0, _set(0, "version", 3)),
        (0, _set(0, "model", _DELETE)),
        (1, _set(1, "tool_wait_ms", "abc")),
        (1, _set(1, "output.0.type", "image")),
        (1, _set(1, "input.0", {"no": "type"})),
        (2, _set(2, "input.0.call_id", "")),
    ],
)
def test_schema_rejects_bad_lines(line: int, mutate: Any) -> None:
    schema = trace_schema()
    lines = sample_lines()
    mutate(lines)
    assert _errors(schema, lines[line], schema)
