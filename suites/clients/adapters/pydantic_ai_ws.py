"""wsmode certify-client adapter: pydantic-ai, its Responses WebSocket transport.

`OpenAIResponsesModel` with `OpenAIResponsesModelSettings(openai_transport='websocket')`, as the
pydantic-ai docs show ("Responses WebSockets"), the provider pointed at the case's server. The
agent is held open (`async with agent:`) for the whole task, so its turns share one socket; each
turn is `agent.run(text, message_history=...)` with the history of the turns that completed (the
documented way to continue a conversation: the model itself sends `previous_response_id` and
only the new input over the socket). A new task starts with an empty history. What a run raises
is the turn's error: its status and code read from `ModelAPIError` (`status_code`,
`provider_error_code`, `body`), and, for any other exception, its type and frame (a crash inside
the library is named as such). No retries of its own. No lanes (a lane task is unsupported).
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from importlib import metadata
from typing import Any

from _contract import API_KEY, BASE_URL, emit, error_line, hello, read_task, wait
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIResponsesModel, OpenAIResponsesModelSettings
from pydantic_ai.providers.openai import OpenAIProvider


def error_fields(exc: BaseException) -> dict[str, Any]:
    """status and code as pydantic-ai keeps them, else from the error body or event."""
    fields: dict[str, Any] = {}
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        fields["status"] = status
    code = getattr(exc, "provider_error_code", None)
    body = getattr(exc, "body", None)
    if code is None and isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        code = inner.get("code")
    if isinstance(code, str):
        fields["code"] = code
    return fields


async def run(task: dict[str, Any]) -> None:
    turns = task["turns"]
    if any(turn.get("stream_id") for turn in turns) or task["parallel"]:
        for index in range(len(turns)):
            emit({"turn": index, "status": "unsupported", "reason": "one run at a time per agent"})
        return
    model = OpenAIResponsesModel(
        task["model"], provider=OpenAIProvider(base_url=BASE_URL, api_key=API_KEY)
    )
    settings = OpenAIResponsesModelSettings(
        openai_transport="websocket", openai_store=task["store"]
    )
    agent = Agent(model, instructions=task["instructions"], model_settings=settings, retries=0)
    history: list[Any] = []
    async with agent:  # one socket for the whole task
        for index, turn in enumerate(turns):
            await asyncio.to_thread(wait, turn)
            if turn.get("new_conversation"):
                history = []
            try:
                result = await agent.run(turn["input"], message_history=history)
            except Exception as exc:
                emit(error_line(index, exc, **error_fields(exc)))
                continue
            history = result.all_messages()
            emit(
                {
                    "turn": index,
                    "status": "completed",
                    "response_id": result.response.provider_response_id,
                    "text": str(result.output),
                }
            )


def main() -> int:
    warnings.simplefilter("default")  # a fallback to HTTP is warned: it reaches stderr
    task = read_task()
    hello("pydantic-ai", metadata.version("pydantic-ai-slim"))
    asyncio.run(run(task))
    return 0


if __name__ == "__main__":
    sys.exit(main())
