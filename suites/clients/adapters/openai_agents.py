"""wsmode certify-client adapter: the OpenAI Agents SDK for Python, its websocket transport.

`agents.responses_websocket_session(api_key, base_url)` (a shared websocket-configured
provider) and `session.run(agent, input, previous_response_id=...)` per turn: the SDK opens,
reuses, retries and recovers the connection itself; the adapter only chains turns with the
last response id, as the Agents docs show. What a run raises is the turn's error (its code,
status and message read from the exception's documented attributes). Tracing is disabled so
nothing leaves loopback. Parallel tasks run their turns with `asyncio.gather` on the one
session; the SDK has no named lanes (a lane task is unsupported).
"""

from __future__ import annotations

import asyncio
import os
import sys
from importlib import metadata
from typing import Any

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"  # no trace export: loopback only

from _contract import API_KEY, BASE_URL, emit, error_line, hello, read_task, wait
from agents import (
    Agent,
    ModelSettings,
    responses_websocket_session,
    set_tracing_disabled,
)


def exception_fields(exc: BaseException) -> dict[str, Any]:
    """code/status/stream_id from the places the SDKs keep them: the exception, its `body`,
    its `error`, or the server event it carries (`event`)."""
    fields: dict[str, Any] = {}
    sources: list[Any] = [exc, getattr(exc, "body", None), getattr(exc, "error", None)]
    event = getattr(exc, "event", None)
    if event is not None:
        sources += [event, getattr(event, "error", None)]
    for source in sources:
        for key in ("code", "status", "status_code", "stream_id"):
            value = source.get(key) if isinstance(source, dict) else getattr(source, key, None)
            if value is not None and not callable(value):
                fields.setdefault("status" if key == "status_code" else key, value)
    return fields


async def one_turn(
    session: Any, agent: Agent, index: int, text: str, previous: str | None
) -> dict[str, Any]:
    try:
        result = await session.run(agent, text, previous_response_id=previous)
    except Exception as exc:
        return error_line(index, exc, **exception_fields(exc))
    return {
        "turn": index,
        "status": "completed",
        "response_id": result.last_response_id,
        "text": str(result.final_output),
    }


async def run(task: dict[str, Any]) -> None:
    turns = task["turns"]
    if any(turn.get("stream_id") for turn in turns):
        for index in range(len(turns)):
            emit({"turn": index, "status": "unsupported", "reason": "no named lanes"})
        return
    agent = Agent(
        name="wsmode",
        instructions=task["instructions"],
        model=task["model"],
        model_settings=ModelSettings(store=task["store"]),
    )
    async with responses_websocket_session(api_key=API_KEY, base_url=BASE_URL) as session:
        if task["parallel"]:
            lines = await asyncio.gather(
                *(one_turn(session, agent, i, t["input"], None) for i, t in enumerate(turns))
            )
            for line in lines:
                emit(line)
            return
        previous = None
        for index, turn in enumerate(turns):
            await asyncio.to_thread(wait, turn)
            if turn.get("new_conversation"):  # the next task, on the same session
                previous = None
            line = await one_turn(session, agent, index, turn["input"], previous)
            previous = line.get("response_id") or previous
            emit(line)


def main() -> int:
    set_tracing_disabled(True)
    task = read_task()
    hello("openai-agents", metadata.version("openai-agents"))
    asyncio.run(run(task))
    return 0


if __name__ == "__main__":
    sys.exit(main())
