"""The 2026 beta client events on the reference server: steer and multi-agent inject (§2.2).

One server for the module, both switches on, every event self-checked against the grammar. Its
profile waits 300 ms before the first token (and decodes instantly), so a steer sent on
`response.created` reaches a running response; multi-agent cases need no timing at all: the
response waits for the inject.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from harness.protocol.beta import agent_name, beta_problems
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import Limits, ServerConfig

from .conftest import TOOLS, ServerFactory, run

TIMEOUT_S = 10.0
NAMED = {"type": "function", "name": "read_file"}
PROFILE = """name = "slow-start"
decode_tokens_per_s = 1e9
burst_probability = 0.0
jitter_fraction = 0.0
load_factor = 1.0
queue_ms = 300.0
"""


@pytest.fixture(scope="module")
def beta(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    root = tmp_path_factory.mktemp("beta")
    profile = root / "slow-start.toml"
    profile.write_text(PROFILE, encoding="utf-8")
    config = ServerConfig(
        port=0,
        profile=str(profile),
        data_dir=root / "data",
        self_check=True,
        steer=True,
        multi_agent=True,
    )
    with running_in_thread(config) as server:
        yield server


def create(**fields: Any) -> dict[str, Any]:
    return {"type": "response.create", "model": "m", "store": False, **fields}


def tool_create(**fields: Any) -> dict[str, Any]:
    return create(input="read a.py", tools=TOOLS, tool_choice=NAMED, **fields)


async def read_until(
    client: WsClient, done: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while not events or not done(events[-1]):
        events.append((await client.recv(TIMEOUT_S)).event)
    return events


def of_type(*types: str) -> Callable[[dict[str, Any]], bool]:
    return lambda event: event["type"] in types


def output(call: dict[str, Any], text: str = "contents of a.py") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call["call_id"], "output": text}


async def waiting_for_call(client: WsClient) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """Start a multi-agent response and read until it waits for its call's output."""
    await client.send_json(tool_create(multi_agent={"enabled": True}))
    events = await read_until(
        client,
        lambda e: e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call",
    )
    return events[0]["response"]["id"], events[-1]["item"], events


# -- multi-agent: response.inject ---------------------------------------------------------------
def test_an_inject_resumes_the_response_waiting_for_it(beta: ReferenceServer) -> None:
    async def body() -> None:
        client = await WsClient.connect(beta.ws_url)
        response_id, call, started = await waiting_for_call(client)
        assert {agent_name(e) for e in started} == {"root"}
        await client.send_json(create(input="queued behind it"))  # the lane is busy: it queues
        await client.send_json(
            {"type": "response.inject", "response_id": response_id, "input": [output(call)]}
        )
        events = await read_until(client, of_type("response.completed"))
        reply = events[0]
        assert reply == {
            "type": "response.inject.created",
            "sequence_number": started[-1]["sequence_number"] + 1,
            "response_id": response_id,
        }
        final = events[-1]["response"]
        assert [i["type"] for i in final["output"]] == [
            "function_call",
            "function_call_output",
            "message",
        ]
        assert (
            final["output"][1]["call_id"] == call["call_id"]
            and final["output"][1]["output"] == "contents of a.py"
        )
        assert [agent_name(i) for i in final["output"]] == ["root"] * 3
        queued = await read_until(client, of_type("response.completed"))
        assert queued[0]["type"] == "response.created", "the queued create ran after it"
        await client.close()

    run(body())


def test_one_invalid_item_rejects_the_whole_inject(beta: ReferenceServer) -> None:
    async def body() -> None:
        client = await WsClient.connect(beta.ws_url)
        response_id, call, _ = await waiting_for_call(client)
        bad = [output(call, "first try"), {"type": "message", "role": "user", "content": "hi"}]
        await client.send_json(
            {"type": "response.inject", "response_id": response_id, "input": bad}
        )
        (failed,) = await read_until(client, of_type("response.inject.failed"))
        assert failed["input"] == bad and failed["response_id"] == response_id
        assert (
            failed["error"]["code"] == "invalid_input" and "input[1]" in failed["error"]["message"]
        )
        assert beta_problems(failed) == []
        for wrong in ([], [output({"call_id": "call_unknown"})], [output(call), output(call)]):
            await client.send_json(
                {"type": "response.inject", "response_id": response_id, "input": wrong}
            )
            (refused,) = await read_until(client, of_type("response.inject.failed"))
            assert refused["input"] == wrong and refused["error"]["code"] == "invalid_input"
        await client.send_json(
            {
                "type": "response.inject",
                "response_id": response_id,
                "input": [output(call, "second try")],
            }
        )
        events = await read_until(client, of_type("response.completed"))
        outputs = [
            i for i in events[-1]["response"]["output"] if i["type"] == "function_call_output"
        ]
        assert [o["output"] for o in outputs] == ["second try"], (
            "nothing of a failed inject committed"
        )
        await client.send_json(create(input="and now?", previous_response_id=response_id))
        continued = await read_until(client, of_type("response.completed", "error"))
        assert continued[-1]["type"] == "response.completed", "the chain continues after an inject"
        await client.close()

    run(body())


def test_an_inject_to_an_unknown_or_finished_response_fails_and_returns_its_input(
    beta: ReferenceServer,
) -> None:
    async def body() -> None:
        client = await WsClient.connect(beta.ws_url)
        items = [{"type": "function_call_output", "call_id": "call_x", "output": "x"}]
        await client.send_json(
            {"type": "response.inject", "response_id": "resp_unknown", "input": items}
        )
        (failed,) = await read_until(client, of_type("response.inject.failed"))
        assert failed == {
            "type": "response.inject.failed",
            "sequence_number": 0,
            "response_id": "resp_unknown",
            "input": items,
            "error": failed["error"],
        }
        assert failed["error"]["code"] == "response_not_found"
        await client.send_json(create(input="hi", stream_id=None))
        done = await read_until(client, of_type("response.completed"))
        finished = done[-1]["response"]["id"]
        await client.send_json({"type": "response.inject", "response_id": finished, "input": items})
        (late,) = await read_until(client, of_type("response.inject.failed"))
        assert late["error"]["code"] == "response_already_completed" and late["input"] == items
        await client.send_json({"type": "response.inject", "input": items})  # names no response
        (error,) = await read_until(client, of_type("error"))
        assert error["error"]["param"] == "response_id" and error["status"] == 400
        await client.close()

    run(body())


def test_a_response_whose_tool_output_never_comes_fails_in_bounded_time(
    make_server: ServerFactory,
) -> None:
    with make_server(multi_agent=True, limits=Limits(required_input_timeout_s=0.3)) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            await waiting_for_call(client)
            events = await read_until(client, of_type("response.failed"))
            assert [e["type"] for e in events] == ["error", "response.failed"]
            assert events[-1]["response"]["error"]["code"] == "required_input_timeout"
            await client.close()

        run(body())


def test_the_queue_injects_fault_holds_the_inject_behind_its_target(
    make_server: ServerFactory,
) -> None:
    limits = Limits(required_input_timeout_s=0.3)
    with make_server(
        multi_agent=True, limits=limits, faults=frozenset({"queue-injects"})
    ) as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            response_id, call, _ = await waiting_for_call(client)
            await client.send_json(
                {"type": "response.inject", "response_id": response_id, "input": [output(call)]}
            )
            events = await read_until(client, of_type("response.inject.failed"))
            kinds = [e["type"] for e in events]
            assert kinds == ["error", "response.failed", "response.inject.failed"], "deadlocked"
            assert events[-1]["error"]["code"] == "response_already_completed"
            await client.close()

        run(body())


def test_without_the_switches_the_beta_events_are_unknown(make_server: ServerFactory) -> None:
    with make_server() as server:

        async def body() -> None:
            client = await WsClient.connect(server.ws_url)
            for event in (
                {"type": "response.steer", "previous_response_id": "resp_1", "input": "x"},
                {"type": "response.inject", "response_id": "resp_1", "input": []},
            ):
                await client.send_json(event)
                (error,) = await read_until(client, of_type("error"))
                assert error["error"]["code"] == "unknown_event_type", event
            await client.send_json(tool_create(multi_agent={"enabled": True}))
            (refused,) = await read_until(client, of_type("error"))
            assert refused["error"]["code"] == "unsupported_parameter"
            assert refused["error"]["param"] == "multi_agent"
            await client.close()

        run(body())


def test_multi_agent_over_http_is_refused(beta: ReferenceServer) -> None:
    body = {"model": "m", "input": "x", "multi_agent": {"enabled": True}}
    answer = httpx.post(f"{beta.http_url}/responses", json=body, timeout=TIMEOUT_S)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "unsupported_parameter"


# -- response.steer ------------------------------------------------------------------------------
async def steer_on_start(
    client: WsClient, request: dict[str, Any], text: str = "be brief"
) -> list[dict[str, Any]]:
    """Send `request`, and a steer as soon as its response is created; its events up to the
    steer's reply."""
    await client.send_json(request)
    events = await read_until(client, of_type("response.created"))
    response_id = events[0]["response"]["id"]
    await client.send_json(
        {"type": "response.steer", "previous_response_id": response_id, "input": text}
    )
    return events + await read_until(
        client, of_type("response.steer.accepted", "response.steer.failed")
    )


def test_a_steer_ends_the_response_at_an_item_boundary_and_a_successor_takes_it(
    beta: ReferenceServer,
) -> None:
    async def body() -> None:
        client = await WsClient.connect(beta.ws_url)
        events = await steer_on_start(client, create(input="explain", reasoning={"effort": "low"}))
        steered_id = events[0]["response"]["id"]
        accepted = events[-1]
        assert accepted["steer"]["previous_response_id"] == steered_id and accepted["steer"][
            "id"
        ].startswith("steer_")
        assert beta_problems(accepted) == []
        rest = await read_until(client, of_type("response.incomplete", "response.completed"))
        steered = rest[-1]["response"]
        assert rest[-1]["type"] == "response.incomplete"
        assert steered["incomplete_details"] == {"reason": "steered"}
        assert [i["type"] for i in steered["output"]] == ["reasoning"], "cut after its first item"
        successor = await read_until(client, of_type("response.completed"))
        assert successor[0]["type"] == "response.created", "the successor follows at once"
        final = successor[-1]["response"]
        assert final["previous_response_id"] == steered_id
        assert final["reasoning"] == steered["reasoning"], "it inherits the settings"
        await client.close()

    run(body())


def test_a_steer_on_a_response_stopping_for_tool_output_waits_for_the_continuation(
    beta: ReferenceServer,
) -> None:
    async def continuation_tokens(steer: bool) -> int:
        client = await WsClient.connect(beta.ws_url)
        if steer:
            events = await steer_on_start(client, tool_create(), "use the cache")
            events += await read_until(client, of_type("response.steer.pending"))
            completed = next(e for e in events if e["type"] == "response.completed")
            pending = events[-1]
            assert pending["reason"] == "waiting_for_required_input"
            call = completed["response"]["output"][0]
            assert pending["required_input"] == [
                {"type": "function_call_output", "call_id": call["call_id"], "name": "read_file"}
            ]
            assert (
                pending["steer"]["id"]
                == events[[e["type"] for e in events].index("response.steer.accepted")]["steer"][
                    "id"
                ]
            )
        else:
            await client.send_json(tool_create())
            completed = (await read_until(client, of_type("response.completed")))[-1]
            call = completed["response"]["output"][0]
        parent = completed["response"]["id"]
        await client.send_json(create(previous_response_id=parent, input=[output(call)]))
        final = (await read_until(client, of_type("response.completed")))[-1]["response"]
        assert final["previous_response_id"] == parent
        await client.close()
        return int(final["usage"]["input_tokens"])

    async def body() -> None:
        with_steer, without = await continuation_tokens(True), await continuation_tokens(False)
        assert with_steer > without, "the queued steer input went first in the continuation"

    run(body())


def test_steer_failures_return_the_input(beta: ReferenceServer) -> None:
    async def failure(client: WsClient, event: dict[str, Any]) -> dict[str, Any]:
        await client.send_json(event)
        (failed,) = await read_until(client, of_type("response.steer.failed"))
        assert beta_problems(failed) == [] and failed["steer"]["input"] == event["input"]
        return failed

    async def body() -> None:
        client = await WsClient.connect(beta.ws_url)
        unknown = await failure(
            client, {"type": "response.steer", "previous_response_id": "resp_x", "input": "hi"}
        )
        assert unknown["error"]["code"] == "response_not_found" and "id" not in unknown["steer"]
        assistant = [{"role": "assistant", "content": "no"}]
        invalid = await failure(
            client, {"type": "response.steer", "previous_response_id": "resp_x", "input": assistant}
        )
        assert invalid["error"]["code"] == "invalid_input"
        response_id, call, _ = await waiting_for_call(client)
        multi = await failure(
            client, {"type": "response.steer", "previous_response_id": response_id, "input": "x"}
        )
        assert multi["error"]["code"] == "steering_not_supported"
        await client.send_json(
            {"type": "response.inject", "response_id": response_id, "input": [output(call)]}
        )
        await read_until(client, of_type("response.completed"))
        late = await failure(
            client, {"type": "response.steer", "previous_response_id": response_id, "input": "x"}
        )
        assert late["error"]["code"] == "response_already_completed"
        await client.send_json({"type": "response.steer", "input": "x"})
        (error,) = await read_until(client, of_type("error"))
        assert error["error"]["param"] == "previous_response_id"
        await client.close()

    run(body())
