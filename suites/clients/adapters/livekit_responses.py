"""wsmode certify-client adapter: livekit-plugins-openai, its Responses LLM (WebSocket by default).

`livekit.plugins.openai.responses.LLM(model, api_key, base_url, store)` (with the WebSocket
transport its `base_url` is the socket's URL, `wss://…/v1/responses` by default) with its default
`use_websocket=True` and default connect options (its own retries are the client's), one LLM
for the task; each turn adds the user message to one `ChatContext` (instructions first, as the
system message) and runs `llm.chat(chat_ctx=...)`, reading the stream's text deltas; the plugin
chains `previous_response_id` itself (it keeps the last response id and the context it sent). A
completed turn adds the assistant's text to the context; a new task starts a new context. What
the stream raises is the turn's error: `APIStatusError.status_code` and the code from its `body`;
for any other exception its type and frame. Outside an agent worker the plugin asks for
`livekit.agents.utils.http_context.open()` around its use (its error message says so): that is
the one piece of glue. No lanes, one stream at a time.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from importlib import metadata
from typing import Any

from _contract import API_KEY, WS_URL, emit, error_line, hello, read_task, wait
from livekit.agents.llm import ChatContext
from livekit.agents.utils import http_context
from livekit.plugins.openai import responses


def error_fields(exc: BaseException) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status > 0:
        fields["status"] = status
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        if isinstance(inner.get("code"), str):
            fields["code"] = inner["code"]
    return fields


def new_context(task: dict[str, Any]) -> ChatContext:
    context = ChatContext()
    context.add_message(role="system", content=task["instructions"])
    return context


async def one_turn(llm: Any, context: ChatContext, index: int, text: str) -> dict[str, Any]:
    context.add_message(role="user", content=text)
    parts: list[str] = []
    response_id = None
    try:
        async with llm.chat(chat_ctx=context) as stream:
            async for chunk in stream:
                response_id = chunk.id or response_id
                if chunk.delta is not None and chunk.delta.content:
                    parts.append(chunk.delta.content)
    except Exception as exc:
        return error_line(index, exc, **error_fields(exc))
    answer = "".join(parts)
    context.add_message(role="assistant", content=answer)
    return {"turn": index, "status": "completed", "response_id": response_id, "text": answer}


async def run(task: dict[str, Any]) -> None:
    turns = task["turns"]
    if any(turn.get("stream_id") for turn in turns) or task["parallel"]:
        for index in range(len(turns)):
            emit({"turn": index, "status": "unsupported", "reason": "one stream at a time"})
        return
    # outside a worker the plugin needs its HTTP context opened, as its own error message says
    async with http_context.open():
        llm = responses.LLM(
            model=task["model"], api_key=API_KEY, base_url=WS_URL, store=task["store"]
        )
        context = new_context(task)
        try:
            for index, turn in enumerate(turns):
                await asyncio.to_thread(wait, turn)
                if turn.get("new_conversation"):
                    context = new_context(task)
                emit(await one_turn(llm, context, index, turn["input"]))
        finally:
            await llm.aclose()


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # its retries, on stderr
    task = read_task()
    hello("livekit-plugins-openai", metadata.version("livekit-plugins-openai"))
    asyncio.run(run(task))
    return 0


if __name__ == "__main__":
    sys.exit(main())
