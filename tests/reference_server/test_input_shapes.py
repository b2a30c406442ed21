"""Every input shape the API accepts (PROTOCOL.md §2.1.1): accepted, validated, rendered and
safety-screened by the reference server; malformed ones refused with `param` naming the field.

The shapes come from openai-python 3.57's `ResponseInputItemParam` and from the recorded corpus
(every output item api.openai.com sent is something a client passes back as input).
"""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai.types.responses import response_input_item_param

from harness.conformance.check.offline_check import read_streams
from harness.transport.exchange import Exchange, ws_exchange
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import ServerConfig
from reference_server.pipeline.compaction import compacted_window
from reference_server.state.render import END, IMAGE, render_item
from reference_server.state.safety import SafetyState, classify_input
from reference_server.state.validate import (
    ITEM_TYPES,
    PASSBACK_REQUIRED,
    ValidationState,
    validate_items,
)
from tests.recorded import PROTOCOL_STREAMS, recorded

TIMEOUT_S = 10.0
PNG = (  # a 1x1 image
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQ"
    "DJ/pLvAAAAAElFTkSuQmCC"
)
MARK = "WSMODE-UNSAFE-INPUT"


def text(kind: str, value: str) -> dict[str, Any]:
    return {"type": kind, "text": value}


CALL = {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}
CUSTOM = {"type": "custom_tool_call", "call_id": "call_2", "name": "sql", "input": "SELECT 1"}
# (name, items): each a shape the API takes; the last item is the one under test
ACCEPTED: list[tuple[str, list[dict[str, Any]]]] = [
    ("system role, string", [{"type": "message", "role": "system", "content": "Be a pirate."}]),
    ("developer role, parts", [{"role": "developer", "content": [text("input_text", "Terse.")]}]),
    ("easy user message", [{"role": "user", "content": "hi"}]),
    (
        "image by URL",
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "input_image",
                        "image_url": "https://example.com/a.png",
                        "detail": "low",
                    }
                ],
            }
        ],
    ),
    (
        "image data URL",
        [
            {
                "role": "user",
                "content": [
                    text("input_text", "What?"),
                    {"type": "input_image", "image_url": PNG, "detail": "auto"},
                ],
            }
        ],
    ),
    (
        "image file_id",
        [
            {
                "role": "user",
                "content": [{"type": "input_image", "file_id": "file-1", "detail": "original"}],
            }
        ],
    ),
    (
        "file data URL",
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "input_file",
                        "filename": "a.txt",
                        "file_data": "data:text/plain;base64,aGk=",
                    }
                ],
            }
        ],
    ),
    (
        "file URL",
        [
            {
                "role": "user",
                "content": [{"type": "input_file", "file_url": "https://example.com/a.pdf"}],
            }
        ],
    ),
    ("assistant string", [{"type": "message", "role": "assistant", "content": "Hello Alice!"}]),
    (
        "assistant phase",
        [{"type": "message", "role": "assistant", "phase": "commentary", "content": "Checking."}],
    ),
    (
        "assistant parts",
        [
            {
                "type": "message",
                "role": "assistant",
                "phase": "final_answer",
                "id": "msg_1",
                "status": "completed",
                "content": [text("output_text", "4"), {"type": "refusal", "refusal": "no"}],
            }
        ],
    ),
    (
        "reasoning passed back",
        [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [text("summary_text", "Think.")],
                "encrypted_content": "gAAAAABopaque",
            }
        ],
    ),
    (
        "function call round",
        [
            CALL,
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": [text("input_text", "ok")],
            },
        ],
    ),
    (
        "custom tool round",
        [CUSTOM, {"type": "custom_tool_call_output", "call_id": "call_2", "output": "1"}],
    ),
    ("compaction", compacted_window([{"role": "assistant", "content": "Summary text."}])),
    (
        "web search passed back",
        [
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "q"},
            }
        ],
    ),
    (
        "mcp approval response",
        [{"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}],
    ),
]


@pytest.mark.parametrize(("name", "items"), ACCEPTED, ids=[n for n, _ in ACCEPTED])
def test_each_shape_is_accepted_and_rendered(name: str, items: list[dict[str, Any]]) -> None:
    _, errors = validate_items(ValidationState.initial(), items)
    assert errors == [], name
    tokens = render_item(items[-1])
    assert len(tokens) > 3 and tokens[-1] == END, name  # a header, content, the end
    if "image" in name and "file_id" not in name:
        assert IMAGE in tokens


@pytest.mark.parametrize(
    "item",
    [
        {"type": "message", "role": "system", "content": f"Say {MARK}."},
        {"role": "developer", "content": [text("input_text", MARK)]},
        {
            "role": "user",
            "content": [{"type": "input_image", "image_url": PNG}, text("input_text", MARK)],
        },
        {"type": "custom_tool_call_output", "call_id": "call_2", "output": MARK},
    ],
)
def test_text_that_comes_in_is_screened(item: dict[str, Any]) -> None:
    _, verdict = classify_input(SafetyState.initial(), [CUSTOM, item])
    assert verdict.blocked


def test_the_models_own_text_is_not_screened_as_input() -> None:
    _, verdict = classify_input(SafetyState.initial(), [{"role": "assistant", "content": MARK}])
    assert not verdict.blocked


REFUSED: list[tuple[dict[str, Any], str, str | None]] = [
    (
        {
            "role": "user",
            "content": [
                text("input_text", "a"),
                {"type": "input_image", "image_url": "ftp://x/a.png"},
            ],
        },
        "input[0].content[1].image_url",
        "invalid_value",
    ),
    (
        {
            "role": "user",
            "content": [{"type": "input_image", "image_url": "data:image/png;base64,@@"}],
        },
        "input[0].content[0].image_url",
        "invalid_value",
    ),
    (
        {
            "role": "user",
            "content": [{"type": "input_image", "image_url": "data:text/html;base64,aGk="}],
        },
        "input[0].content[0].image_url",
        "invalid_value",
    ),
    (
        {"role": "user", "content": [{"type": "input_image", "image_url": PNG, "detail": "ultra"}]},
        "input[0].content[0].detail",
        None,
    ),
    ({"role": "user", "content": [{"type": "input_file"}]}, "input[0].content[0]", None),
    (
        {"role": "user", "content": [{"type": "input_file", "file_data": "data:;base64,!"}]},
        "input[0].content[0].file_data",
        "invalid_value",
    ),
    ({"role": "assistant", "phase": "draft", "content": "x"}, "input[0].phase", None),
    ({"role": "assistant", "content": [text("input_text", "x")]}, "input[0].content[0].type", None),
    ({"role": "robot", "content": "x"}, "input[0].role", None),
    ({"type": "custom_tool_call", "call_id": "c", "input": "x"}, "input[0].name", None),
    (
        {"type": "custom_tool_call_output", "call_id": "nope", "output": "x"},
        "input[0].call_id",
        None,
    ),
    ({"type": "compaction"}, "input[0].encrypted_content", None),
    (
        {"type": "compaction", "encrypted_content": "gAAAAB"},
        "input[0].encrypted_content",
        "invalid_encrypted_content",
    ),
    ({"type": "web_search_call", "id": "ws_1", "status": "completed"}, "input[0].action", None),
    ({"type": "item_reference", "id": "msg_nowhere"}, "input[0].id", "item_not_found"),
    ({"type": "bogus"}, "input[0].type", None),
]


@pytest.mark.parametrize(("item", "param", "code"), REFUSED, ids=[p for _, p, _ in REFUSED])
def test_each_malformed_shape_is_refused_naming_the_field(
    item: dict[str, Any], param: str, code: str | None
) -> None:
    _, errors = validate_items(ValidationState.initial(), [item])
    assert errors and (errors[0].param, errors[0].code) == (param, code)
    assert "Traceback" not in errors[0].message and errors[0].message.endswith(".")


def _sdk_input_types() -> dict[str, tuple[str, ...]]:
    """Each input item type of openai-python's union with the members it marks required."""
    found: dict[str, tuple[str, ...]] = {}
    for model in typing.get_args(response_input_item_param.ResponseInputItemParam):
        hints = typing.get_type_hints(model, include_extras=True)
        literal = hints["type"]
        while typing.get_origin(literal) in (typing.Required,):
            literal = typing.get_args(literal)[0]
        names = [a for a in typing.get_args(literal) if isinstance(a, str)]
        names += [b for a in typing.get_args(literal) for b in typing.get_args(a)]
        required = tuple(
            sorted(
                key
                for key, hint in hints.items()
                if typing.get_origin(hint) in (typing.Required,) and key != "type"
            )
        )
        for name in names:
            found.setdefault(name, required)
    return found


def test_every_sdk_input_type_is_known_and_passback_checks_what_the_sdk_requires() -> None:
    sdk = _sdk_input_types()
    assert set(sdk) <= set(ITEM_TYPES), sorted(set(sdk) - set(ITEM_TYPES))
    for kind, required in PASSBACK_REQUIRED.items():
        assert tuple(sorted(required)) == sdk[kind], kind


def test_every_item_production_sent_is_accepted_back_as_input() -> None:
    """The recorded api.openai.com output items, resent as input (their calls issued first)."""
    items = [
        timed.event["item"]
        for path in sorted(recorded(PROTOCOL_STREAMS).rglob("*"))
        if path.is_file()
        and path.name != "README.md"
        and not any(m in path.name for m in ("azure", "lmstudio", "copilot", "xai", "openrouter"))
        for stream in read_streams(path).streams
        for timed in stream.events
        if timed.event.get("type") == "response.output_item.done"
    ]
    # a compaction item's content is another server's: only this server's can be read
    resent = [item for item in items if item.get("type") != "compaction"]
    _, errors = validate_items(ValidationState.initial(), resent)
    assert len({item["type"] for item in resent}) >= 10
    assert errors == []


# -- end to end over a WebSocket ----------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    data = Path(tmp_path_factory.mktemp("data"))
    config = ServerConfig(port=0, profile="zero", data_dir=data, self_check=True)
    with running_in_thread(config) as srv:
        yield srv


def ws_turns(server: ReferenceServer, *bodies: dict[str, Any]) -> list[Exchange]:
    async def main() -> list[Exchange]:
        client = await WsClient.connect(server.ws_url)
        try:
            return [await ws_exchange(client, body, timeout_s=TIMEOUT_S) for body in bodies]
        finally:
            await client.close()

    return asyncio.run(main())


def test_the_shapes_of_a_peer_suite_complete_and_a_bad_one_names_its_field(
    server: ReferenceServer,
) -> None:
    shapes = [item for _, items in ACCEPTED for item in items]
    first, flagged, bad, referenced = ws_turns(
        server,
        {"model": "m", "input": [*shapes, {"role": "user", "content": "Say hello."}]},
        {"model": "m", "input": [{"role": "system", "content": f"Repeat {MARK}"}]},
        {
            "model": "m",
            "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "nope"}]}],
        },
        {"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}, {"id": "msg_1"}]},
    )
    assert first.ok, (first.request_error, first.transport_error)
    assert flagged.final_response is not None and flagged.final_response["status"] == "failed"
    assert bad.request_error is not None
    assert (bad.request_error.code, bad.request_error.param) == (
        "invalid_value",
        "input[0].content[0].image_url",
    )
    assert referenced.request_error is not None  # no chain: the ids name nothing
    assert referenced.request_error.param == "input[0].id"


def test_an_item_reference_stands_for_the_chains_item(server: ReferenceServer) -> None:
    count = {"model": "m", "input": [{"role": "user", "content": "Count to 3."}]}
    (first,) = ws_turns(server, count)
    assert first.final_response is not None
    answer = first.final_response["output"][-1]
    (resolved,) = ws_turns(
        server,
        {
            "model": "m",
            "previous_response_id": first.final_response["id"],  # stored: hydrated
            "input": [{"type": "item_reference", "id": answer["id"]}],
        },
    )
    assert resolved.ok, resolved.request_error
    assert resolved.final_response is not None
    usage, before = resolved.final_response["usage"], first.final_response["usage"]
    # the chain (input + output) plus the referenced answer once more
    assert usage["input_tokens"] > before["input_tokens"] + before["output_tokens"]
