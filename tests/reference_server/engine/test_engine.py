"""Simulated inference: determinism, content shape, tool choice, truncation, timing, scripts."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.protocol.requests import parse_create
from harness.protocol.tokenizer import count_tokens, split
from reference_server.cost_profiles import load_cost_profile
from reference_server.engine.cost_profile import Profile
from reference_server.engine.engine import MAX_PARALLEL_CALLS, MESSAGE_MAX_TOKENS, Engine, Seed
from reference_server.engine.filler_text import filler_pieces_checked
from reference_server.engine.generation_plan import (
    GenerationPlan,
    InvalidScript,
    InvalidToolChoice,
    PlanError,
    PlannedItem,
    UnknownToolChoice,
    resplit_texts,
)

ZERO = load_cost_profile("zero")

SHELL: dict[str, Any] = {
    "type": "function",
    "name": "shell",
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "workdir": {"type": "string"},
            "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 60000},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
}
READ: dict[str, Any] = {
    "type": "function",
    "name": "read_file",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "offset": {"type": "integer", "minimum": 0}},
        "required": ["path"],
    },
}
TOOLS = [SHELL, READ, {"type": "web_search"}]


def plan(engine: Engine | None = None, material: str | Seed = "req", **kw: Any) -> GenerationPlan:
    seed = material if isinstance(material, Seed) else Seed(material)
    args: dict[str, Any] = {"seed": seed, "input_tokens": 1000, **kw}
    return (engine or Engine(ZERO, seed=1)).plan(**args)


def assert_consistent(p: GenerationPlan) -> None:
    """Token accounting invariants every plan keeps."""
    assert p.output_tokens == sum(i.token_count for i in p.items)
    assert p.reasoning_tokens == sum(i.token_count for i in p.items if i.kind == "reasoning")
    offsets = p.item_offsets
    assert offsets == tuple(sum(i.token_count for i in p.items[:k]) for k in range(len(p.items)))
    for item in p.items:
        assert split(item.text) == list(item.pieces) or item.kind == "message"
        assert "".join(item.pieces) == item.text


# -- determinism -------------------------------------------------------------------------------


def test_same_seed_and_material_replay_identically() -> None:
    a = plan(Engine(ZERO, seed=7), "turn-3", tools=TOOLS, reasoning_effort="low")
    b = plan(Engine(ZERO, seed=7), "turn-3", tools=TOOLS, reasoning_effort="low")
    assert a == b


def test_different_material_or_seed_gives_different_output() -> None:
    texts = {plan(Engine(ZERO, seed=s), m).items[0].text for s in (1, 2) for m in ("a", "b", "c")}
    assert len(texts) == 6


def test_content_does_not_depend_on_the_profile() -> None:
    """Paired comparisons replay the same request under different profiles and transports."""
    kw: dict[str, Any] = {"tools": TOOLS, "reasoning_effort": "medium"}
    fast = plan(Engine(ZERO, seed=3), "x", **kw)
    slow = plan(Engine(load_cost_profile("production-like"), seed=3), "x", **kw)
    assert fast.items == slow.items
    assert fast.ttft_s == 0 and slow.ttft_s > 0


def test_plans_replay_identically_in_another_process() -> None:
    """SHA-256 seeding, not hash(): a fresh interpreter with another hash seed agrees."""
    code = (
        "import json,sys\n"
        "from reference_server.engine.engine import Engine, Seed\n"
        "from reference_server.cost_profiles import load_cost_profile\n"
        "p = Engine(load_cost_profile('production-like'), seed=11).plan(seed=Seed('abc'),"
        " input_tokens=5000, cached_tokens=4000, tools=json.loads(sys.argv[1]),"
        " reasoning_effort='low')\n"
        "print(json.dumps([p.ttft_s, p.decode_tokens_per_s,"
        " [[i.kind, list(i.pieces), i.call_id, list(i.summary_pieces)] for i in p.items]]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(TOOLS)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    here = Engine(load_cost_profile("production-like"), seed=11).plan(
        seed=Seed("abc"),
        input_tokens=5000,
        cached_tokens=4000,
        tools=TOOLS,
        reasoning_effort="low",
    )
    expected = [
        here.ttft_s,
        here.decode_tokens_per_s,
        [[i.kind, list(i.pieces), i.call_id, list(i.summary_pieces)] for i in here.items],
    ]
    assert json.loads(out) == expected


def test_streams_are_seeded_only_when_something_draws_from_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seeding costs ~5 us a stream: a jitter-free profile with fixed text seeds none, and
    never computes its seed material; where draws happen the plan is the same either way."""
    seeded: list[str] = []
    real_rng = Engine.rng

    def counting(self: Engine, seed: Seed, stream: str = "content") -> Any:
        seeded.append(stream)
        return real_rng(self, seed, stream)

    monkeypatch.setattr(Engine, "rng", counting)
    asked: list[str] = []

    class Material(Seed):
        @property
        def text(self) -> str:
            asked.append("material")
            return "req"

    fixed = [{"type": "message", "text": "done"}]
    plan(material=Material("req"), script=fixed)
    assert seeded == [] and asked == []
    plan(material=Material("req"), script=[{"type": "message", "tokens": 5}])
    assert seeded == ["content"]
    seeded.clear()
    prod = Engine(load_cost_profile("production-like"), seed=4)
    lazy = plan(prod, Material("req"), tools=TOOLS)
    assert set(seeded) == {"content", "timing", "decode"}
    assert lazy == plan(prod, "req", tools=TOOLS)


def test_a_requests_seed_is_its_seed_model_and_newest_item_hashed_when_first_drawn() -> None:
    """A WebSocket continuation (new items only) and its stateless HTTP twin (the whole history)
    seed alike; a scripted turn is identified by its script; nothing is hashed until asked."""
    first, newest = {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
    body = {"model": "m", "input": [newest], "wsmode": {"seed": 7}}
    continuation = parse_create({**body, "previous_response_id": "resp_1"}, transport="ws")
    twin = parse_create({**body, "input": [first, newest]}, transport="http")
    seed = Seed.of(continuation)
    assert seed._text is None  # not hashed yet
    assert seed.text == Seed.of(twin).text and seed.text.startswith("7:m:")
    other = parse_create({**body, "wsmode": {"seed": 8}}, transport="ws")
    assert Seed.of(other).text != seed.text
    script = {"script": [{"type": "message", "text": "ok"}]}
    scripted = parse_create({**body, "wsmode": script}, transport="ws")
    again = parse_create({**body, "input": [first], "wsmode": script}, transport="ws")
    assert Seed.of(scripted).text == Seed.of(again).text != Seed.of(continuation).text


# -- messages ----------------------------------------------------------------------------------


def test_message_without_tools_is_tokenizer_consistent_agent_prose() -> None:
    p = plan(material="m1")
    assert [i.kind for i in p.items] == ["message"]
    (msg,) = p.items
    assert msg.name is None and msg.call_id is None
    assert p.output_tokens == len(msg.pieces) == count_tokens(msg.text)
    assert p.reasoning_tokens == 0 and not p.truncated
    assert_consistent(p)


def test_message_lengths_follow_the_documented_lognormal() -> None:
    engine = Engine(ZERO, seed=5)
    lengths = [plan(engine, f"len-{i}").output_tokens for i in range(600)]
    assert 120 <= statistics.median(lengths) <= 185  # median 150
    assert max(lengths) <= MESSAGE_MAX_TOKENS
    assert min(lengths) >= 1
    assert sum(n > 600 for n in lengths) > 20  # a real tail (p90 ~ 540)
    words = " ".join(plan(engine, f"len-{i}").items[0].text for i in range(40))
    assert "```" in words and "`" in words  # code fragments, not only prose


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 2**31))
def test_filler_has_exactly_n_pieces(n: int, seed: int) -> None:
    import random

    pieces, _ = filler_pieces_checked(n, random.Random(seed))
    assert len(pieces) == n
    assert all(pieces)
    # a client that re-tokenizes the reply counts what usage says (no 0 of 3,000 seeds missed)
    assert tuple(split("".join(pieces))) == pieces
    # seeded: the same reply again, flagged as the text's split (it is, as asserted above)
    assert filler_pieces_checked(n, random.Random(seed)) == (pieces, True)


def test_tool_choice_none_or_no_function_tools_gives_a_message() -> None:
    for material in ("a", "b", "c", "d"):
        assert [i.kind for i in plan(material=material, tools=TOOLS, tool_choice="none").items] == [
            "message"
        ]
        assert [i.kind for i in plan(material=material, tools=[{"type": "web_search"}]).items] == [
            "message"
        ]


# -- tool calls --------------------------------------------------------------------------------


def _calls(p: GenerationPlan) -> list[PlannedItem]:
    return [i for i in p.items if i.kind == "function_call"]


def _check_call(item: PlannedItem, tools: Sequence[Mapping[str, Any]]) -> None:
    tool = next(t for t in tools if t.get("name") == item.name)
    args = json.loads(item.text)
    assert isinstance(args, dict)
    for key in tool["parameters"].get("required", []):
        assert key in args
    assert set(args) <= set(tool["parameters"]["properties"]) or (
        tool["parameters"].get("additionalProperties", True) is not False
    )
    assert item.text == json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    assert item.call_id is not None and len(item.call_id) == 29
    assert item.call_id.startswith("call_") and int(item.call_id[5:], 16) >= 0
    assert list(item.pieces) == split(item.text)


def test_auto_mixes_messages_and_parallel_calls() -> None:
    engine = Engine(ZERO, seed=9)
    shapes = []
    for i in range(300):
        p = plan(engine, f"auto-{i}", tools=TOOLS, tool_choice="auto", parallel_tool_calls=True)
        assert_consistent(p)
        calls = _calls(p)
        for c in calls:
            _check_call(c, TOOLS)
        if calls:
            assert len(calls) == len(p.items)  # calls or a message, not both
        shapes.append(len(calls))
    assert 0.55 < sum(1 for s in shapes if s) / 300 < 0.85  # AUTO_CALL_PROBABILITY 0.7
    assert max(shapes) > 1 and max(shapes) <= MAX_PARALLEL_CALLS
    assert {c.name for i in range(40) for c in _calls(plan(engine, f"auto-{i}", tools=TOOLS))} == {
        "shell",
        "read_file",
    }


def test_default_tool_choice_is_auto() -> None:
    engine = Engine(ZERO, seed=9)
    assert plan(engine, "q", tools=TOOLS) == plan(engine, "q", tools=TOOLS, tool_choice="auto")


def test_without_parallel_tool_calls_at_most_one_call() -> None:
    engine = Engine(ZERO, seed=2)
    for i in range(200):
        p = plan(engine, f"s-{i}", tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
        assert len(_calls(p)) == 1


def test_required_always_calls() -> None:
    engine = Engine(ZERO, seed=2)
    for i in range(200):
        p = plan(engine, f"r-{i}", tools=TOOLS, tool_choice="required")
        assert p.items and all(item.kind == "function_call" for item in p.items)


def test_named_function_is_called_exactly_once() -> None:
    for i in range(50):
        p = plan(
            material=f"n-{i}", tools=TOOLS, tool_choice={"type": "function", "name": "read_file"}
        )
        assert [(c.kind, c.name) for c in p.items] == [("function_call", "read_file")]
        _check_call(p.items[0], TOOLS)


def test_allowed_tools_restricts_the_choice() -> None:
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "shell"}],
    }
    for i in range(50):
        p = plan(material=f"al-{i}", tools=TOOLS, tool_choice=choice)
        assert {c.name for c in p.items} == {"shell"}


def test_unknown_named_tool_is_a_clear_400_class_error() -> None:
    with pytest.raises(
        UnknownToolChoice, match=r"'write_file'.*not in 'tools'.*'shell', 'read_file'"
    ) as info:
        plan(tools=TOOLS, tool_choice={"type": "function", "name": "write_file"})
    assert isinstance(info.value, ValueError) and isinstance(info.value, PlanError)
    with pytest.raises(UnknownToolChoice):
        plan(tool_choice={"type": "allowed_tools", "tools": [{"type": "function", "name": "x"}]})


@pytest.mark.parametrize(
    "choice",
    [
        "required",
        "sometimes",
        {"type": "function"},
        {"type": "hosted"},
        5,
        {"type": "allowed_tools", "mode": "never", "tools": []},
    ],
)
def test_invalid_tool_choice(choice: Any) -> None:
    with pytest.raises(InvalidToolChoice):
        plan(tools=[], tool_choice=choice)


def test_unsatisfiable_tool_schema_is_a_plan_error() -> None:
    bad = {
        "type": "function",
        "name": "f",
        "parameters": {"type": "object", "required": ["x"], "additionalProperties": False},
    }
    with pytest.raises(PlanError, match="'f'"):
        plan(tools=[bad], tool_choice="required")


# -- reasoning ---------------------------------------------------------------------------------


def test_reasoning_item_comes_first_and_counts_as_output() -> None:
    p = plan(material="think", tools=TOOLS, reasoning_effort="medium")
    assert p.items[0].kind == "reasoning"
    r = p.items[0]
    assert r.pieces == ()
    assert r.summary_text.startswith("**") and list(r.summary_pieces) == split(r.summary_text)
    assert r.hidden_tokens > 0
    assert p.reasoning_tokens == r.hidden_tokens + len(r.summary_pieces)
    assert p.output_tokens > p.reasoning_tokens
    assert_consistent(p)


def test_reasoning_effort_scales_hidden_tokens_and_none_means_no_reasoning() -> None:
    def hidden(effort: str) -> float:
        engine = Engine(ZERO, seed=4)
        return statistics.median(
            plan(engine, f"e-{i}", reasoning_effort=effort).items[0].hidden_tokens
            for i in range(60)
        )

    assert hidden("minimal") < hidden("low") < hidden("medium") < hidden("high")
    assert [i.kind for i in plan(reasoning_effort="none").items] == ["message"]
    with pytest.raises(PlanError, match="reasoning effort"):
        plan(reasoning_effort="extreme")


# -- truncation --------------------------------------------------------------------------------


def test_pieces_said_to_resplit_are_the_split_of_their_text() -> None:
    engine = Engine(ZERO, seed=4)
    flagged = 0
    for i in range(200):
        p = plan(engine, f"resplit-{i}", tools=TOOLS, tool_choice="auto", parallel_tool_calls=True)
        for item in p.items:
            if item.pieces_resplit:
                flagged += 1
                assert tuple(split(item.text)) == item.pieces
        assert resplit_texts(p.items) == {
            i.text: i.pieces for i in p.items if i.pieces_resplit and i.pieces
        }
    assert flagged >= 200  # messages and calls alike say so (one item or more per plan)
    # a cut item's pieces are a prefix of a split, not necessarily a split: never flagged
    cut = plan(material="long", max_output_tokens=5)
    assert cut.truncated and not cut.items[-1].pieces_resplit


def test_max_output_tokens_truncates_and_drops_later_items() -> None:
    full = plan(material="long", reasoning_effort="low")
    assert not full.truncated
    reasoning, message = full.items
    cap = reasoning.token_count + 5
    cut = plan(material="long", reasoning_effort="low", max_output_tokens=cap)
    assert cut.truncated and cut.output_tokens == cap
    assert cut.items[0] == reasoning
    assert cut.items[1].pieces == message.pieces[:5]
    tiny = plan(material="long", reasoning_effort="low", max_output_tokens=3)
    assert tiny.truncated and [i.kind for i in tiny.items] == ["reasoning"]
    assert tiny.output_tokens == tiny.reasoning_tokens == 3
    assert tiny.items[0].summary_pieces == ()
    exact = plan(material="long", reasoning_effort="low", max_output_tokens=full.output_tokens)
    assert not exact.truncated and exact.items == full.items


def test_truncated_function_call_keeps_a_prefix_of_its_arguments() -> None:
    full = plan(material="c", tools=[SHELL], tool_choice="required", parallel_tool_calls=False)
    cut = plan(
        material="c",
        tools=[SHELL],
        tool_choice="required",
        parallel_tool_calls=False,
        max_output_tokens=2,
    )
    assert cut.truncated and len(cut.items[0].pieces) == 2
    assert full.items[0].text.startswith(cut.items[0].text)
    assert cut.items[0].call_id == full.items[0].call_id


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_invalid_max_output_tokens(bad: Any) -> None:
    with pytest.raises(PlanError, match="max_output_tokens"):
        plan(max_output_tokens=bad)


# -- timing ------------------------------------------------------------------------------------


def test_ttft_is_queue_plus_prefill_on_uncached_and_cached_tokens() -> None:
    profile = Profile(
        name="t",
        decode_tokens_per_s=500,
        queue_ms=2.0,
        prefill_us_per_uncached_token=10.0,
        prefill_us_per_cached_token=1.0,
    )
    p = plan(Engine(profile), input_tokens=10_000, cached_tokens=8_000)
    assert p.queue_s == pytest.approx(0.002)
    assert p.prefill_s == pytest.approx(2_000 * 10e-6 + 8_000 * 1e-6)
    assert p.ttft_s == pytest.approx(p.queue_s + p.prefill_s)
    assert p.decode_tokens_per_s == 500 and not p.burst
    loaded = plan(
        Engine(profile.with_overrides(load_factor=2.0)), input_tokens=10_000, cached_tokens=8_000
    )
    assert loaded.ttft_s == pytest.approx(2 * p.ttft_s)
    assert loaded.decode_tokens_per_s == 500


def test_jitter_and_bursts_follow_the_profile() -> None:
    prod = load_cost_profile("production-like")
    engine = Engine(prod, seed=6)
    plans = [plan(engine, f"t-{i}", input_tokens=20_000, cached_tokens=10_000) for i in range(400)]
    bursts = [p for p in plans if p.burst]
    assert 0.15 < len(bursts) / len(plans) < 0.35  # burst_probability 0.25
    j = prod.jitter_fraction
    for p in plans:
        base = prod.burst_tokens_per_s if p.burst else prod.decode_tokens_per_s
        assert base is not None
        assert base * (1 - j) <= p.decode_tokens_per_s <= base * (1 + j)
        nominal = (8_000 + 10_000 * 25 + 10_000 * 1) / 1e6
        assert nominal * (1 - j) <= p.ttft_s <= nominal * (1 + j)
    assert len({p.ttft_s for p in plans}) > 350
    always = Engine(prod.with_overrides(burst_probability=1.0, jitter_fraction=0.0))
    assert plan(always).decode_tokens_per_s == 4000


def test_zero_profile_has_no_latency_and_huge_rate() -> None:
    p = plan(input_tokens=100_000)
    assert p.ttft_s == 0 and p.queue_s == 0 and p.prefill_s == 0
    assert p.decode_tokens_per_s >= 1e9 and math.isfinite(p.decode_tokens_per_s)


def test_token_counts_are_validated() -> None:
    with pytest.raises(ValueError):
        plan(input_tokens=10, cached_tokens=11)
    with pytest.raises(ValueError):
        plan(input_tokens=-1)


# -- scripted mode -----------------------------------------------------------------------------


def test_script_is_emitted_exactly() -> None:
    script = [
        {"type": "reasoning", "summary": "**Plan**\n\nRead the file.", "tokens": 120},
        {"type": "message", "text": "Reading `src/app.py` now."},
        {
            "type": "function_call",
            "name": "read_file",
            "arguments": '{"path":"src/app.py"}',
            "call_id": "call_abc",
        },
        {"type": "function_call", "name": "anything", "arguments": "not json"},
        {"type": "message", "tokens": 37},
        {"type": "message", "text": ""},
    ]
    p = plan(
        material="scripted", tools=TOOLS, tool_choice="none", reasoning_effort="high", script=script
    )
    kinds = [i.kind for i in p.items]
    assert kinds == ["reasoning", "message", "function_call", "function_call", "message", "message"]
    r, m, c1, c2, filler, empty = p.items
    assert r.summary_text == "**Plan**\n\nRead the file." and r.hidden_tokens == 120
    assert m.text == "Reading `src/app.py` now." and list(m.pieces) == split(m.text)
    assert (c1.name, c1.text, c1.call_id) == ("read_file", '{"path":"src/app.py"}', "call_abc")
    assert c2.text == "not json" and c2.call_id is not None and c2.call_id.startswith("call_")
    assert len(filler.pieces) == 37
    assert empty.pieces == ()
    assert p.reasoning_tokens == 120 + len(r.summary_pieces)
    assert_consistent(p)
    assert plan(material="scripted", script=script) == p  # seeded parts replay too


def test_empty_script_plans_no_output() -> None:
    p = plan(script=[])
    assert p.items == () and p.output_tokens == 0 and not p.truncated


def test_script_respects_max_output_tokens() -> None:
    p = plan(
        script=[{"type": "message", "tokens": 50}, {"type": "message", "text": "tail"}],
        max_output_tokens=20,
    )
    assert p.truncated and len(p.items) == 1 and len(p.items[0].pieces) == 20


@pytest.mark.parametrize(
    ("script", "needle"),
    [
        ("not a list", "list of output item specs"),
        ([5], r"script\[0\]: must be an object"),
        ([{"type": "message", "text": "ok"}, {"type": "image"}], r"script\[1\]\.type"),
        ([{"type": "message"}], r"script\[0\]: a message needs exactly one of 'text', 'tokens'"),
        ([{"type": "message", "text": "a", "tokens": 3}], r"script\[0\]: a message needs exactly"),
        ([{"type": "message", "text": 3}], r"script\[0\]\.text: must be a string"),
        ([{"type": "message", "tokens": -1}], r"script\[0\]\.tokens: must be an integer >= 0"),
        ([{"type": "message", "tokens": True}], r"script\[0\]\.tokens"),
        ([{"type": "function_call", "arguments": "{}"}], r"script\[0\]\.name: required"),
        (
            [{"type": "function_call", "name": "", "arguments": "{}"}],
            r"script\[0\]\.name: must not",
        ),
        ([{"type": "function_call", "name": "f"}], r"script\[0\]\.arguments: required"),
        ([{"type": "function_call", "name": "f", "arguments": {}}], r"script\[0\]\.arguments"),
        (
            [{"type": "function_call", "name": "f", "arguments": "{}", "call_id": 1}],
            r"script\[0\]\.call_id",
        ),
        ([{"type": "reasoning", "tokens": "many"}], r"script\[0\]\.tokens"),
        ([{"type": "reasoning", "summary": ["x"]}], r"script\[0\]\.summary"),
        (
            [{"type": "message", "text": "a", "argument": 1}],
            r"script\[0\]: unknown field.*argument",
        ),
    ],
)
def test_invalid_scripts_name_the_index_and_field(script: Any, needle: str) -> None:
    with pytest.raises(InvalidScript, match=needle) as info:
        plan(script=script)
    assert isinstance(info.value, PlanError)


def test_paired_requests_share_burst_and_jitter_whatever_their_cache_split() -> None:
    """A WS turn (mostly cached) and its HTTP twin (uncached) differ only in what is charged."""
    prod = load_cost_profile("production-like")
    engine = Engine(prod, seed=8)
    for i in range(100):
        ws = plan(engine, f"pair-{i}", input_tokens=50_000, cached_tokens=49_000)
        http = plan(engine, f"pair-{i}", input_tokens=50_000, cached_tokens=0)
        assert ws.decode_tokens_per_s == http.decode_tokens_per_s
        assert ws.burst == http.burst
        assert ws.queue_s == http.queue_s
        assert ws.items == http.items
        assert ws.prefill_s < http.prefill_s


def test_generated_text_is_marked_as_pool_text_and_given_text_is_not() -> None:
    """The mark that spares a reply its output scan (pipeline/inference.py) is set only on text
    drawn from the filler pool, and survives a cut (a prefix of pool text is pool text)."""
    generated = plan(material="pool").items[0]
    assert generated.kind == "message" and generated.pool_text
    cut = plan(material="pool", max_output_tokens=3).items[0]
    assert cut.pool_text and cut.pieces == generated.pieces[:3]
    given_text = plan(script=[{"type": "message", "text": "hello there"}]).items[0]
    assert not given_text.pool_text
    drawn = plan(script=[{"type": "message", "tokens": 12}]).items[0]
    assert drawn.pool_text and len(drawn.pieces) == 12
