"""wsmode certify-client adapter: the official Python SDK, `client.responses.connect()`.

The application glue here is only what the SDK's docs assign to the application (the WebSocket
mode guide): one connection per conversation, each continuation sends `previous_response_id`
and the new message; on `previous_response_not_found` the turn is sent again with the full
input and no previous id; a connection the SDK reports closed before a turn was sent (the
connection limit: "create a new websocket connection to continue") is replaced, and the turn
goes out with the full input. Lanes use the SDK's `ResponsesWebSocketSession`. No HTTP
fallback, no retry of a failed connect or of a sent create, no timeout of its own: those are
the SDK's to do or not.
"""

from __future__ import annotations

import sys
from typing import Any

import openai
from _contract import (
    API_KEY,
    BASE_URL,
    assistant_message,
    emit,
    error_line,
    hello,
    read_task,
    user_message,
    wait,
)
from openai import OpenAI
from websockets.exceptions import ConnectionClosed

TERMINAL = {"response.completed", "response.failed", "response.incomplete"}


def error_fields(event: Any) -> dict[str, Any]:
    """What the SDK's error event offers: nested `error`, a string, or flat fields."""
    payload = getattr(event, "error", None)
    if isinstance(payload, str):
        return {"message": payload, "stream_id": getattr(event, "stream_id", None)}
    source = payload if payload is not None else event
    return {
        "code": getattr(source, "code", None),
        "message": getattr(source, "message", None),
        "status": getattr(event, "status", None),
        "stream_id": getattr(event, "stream_id", None),
    }


def outcome_of(event: Any, turn: int) -> dict[str, Any]:
    response = event.response
    line: dict[str, Any] = {"turn": turn, "response_id": response.id}
    if event.type == "response.completed":
        return {**line, "status": "completed", "text": response.output_text}
    if event.type == "response.incomplete":
        details = response.incomplete_details
        return {
            **line,
            "status": "incomplete",
            "incomplete_reason": getattr(details, "reason", None),
        }
    error = response.error
    return {
        **line,
        "status": "failed",
        "error": {"code": getattr(error, "code", None), "message": getattr(error, "message", None)},
    }


class Conversation:
    def __init__(self, task: dict[str, Any]) -> None:
        self.task = task
        self.client = OpenAI(api_key=API_KEY, base_url=BASE_URL)
        self.conn: Any = None
        self.history: list[dict[str, Any]] = []
        self.previous: str | None = None

    def create(self, user: dict[str, Any], *, full: bool) -> None:
        if self.conn is None:
            self.conn = self.client.responses.connect().enter()
            full = True  # a new connection knows no previous response
        kwargs: dict[str, Any] = {
            "model": self.task["model"],
            "store": self.task["store"],
            "instructions": self.task["instructions"],
        }
        if full or self.previous is None:
            kwargs["input"] = [*self.history, user]
        else:
            kwargs.update(input=[user], previous_response_id=self.previous)
        self.conn.response.create(**kwargs)

    def turn(self, index: int, text: str) -> dict[str, Any]:
        user = user_message(text)
        try:
            try:
                self.create(user, full=False)
            except ConnectionClosed:  # closed before this turn was sent: a new connection
                self.conn = None
                self.create(user, full=True)
            line = self.read(index)
            code = (line.get("error") or {}).get("code")
            if code == "previous_response_not_found":
                self.create(user, full=True)
                line = self.read(index)
        except Exception as exc:  # what the SDK raised reaches the caller as the turn's error
            self.conn = None
            return error_line(index, exc)
        if line["status"] == "completed":
            self.history += [user, assistant_message(line["text"])]
            self.previous = line["response_id"]
        return line

    def read(self, index: int) -> dict[str, Any]:
        for event in self.conn:
            if event.type in TERMINAL:
                return outcome_of(event, index)
            if event.type == "error" and getattr(event, "sequence_number", None) is None:
                return {"turn": index, "status": "error", "error": error_fields(event)}
        self.conn = None
        return error_line(index, message="the connection closed before the response ended")


def parallel(task: dict[str, Any]) -> None:
    client = OpenAI(api_key=API_KEY, base_url=BASE_URL)
    turns = task["turns"]
    lanes = [t.get("stream_id") for t in turns]
    try:
        conn = client.responses.connect().enter()
    except Exception as exc:
        for i in range(len(turns)):
            emit(error_line(i, exc))
        return
    base = {"model": task["model"], "store": task["store"], "instructions": task["instructions"]}
    if any(lanes):
        from openai.lib.responses_websocket import (
            ResponsesWebSocketLimits,
            ResponsesWebSocketSession,
        )

        limits = ResponsesWebSocketLimits(  # the budgets the SDK's README shows
            max_lanes=8,
            max_events_per_lane=4096,
            max_events=8192,
            max_bytes_per_lane=16 * 1024 * 1024,
            max_bytes=32 * 1024 * 1024,
            max_response_bytes=None,
        )
        with ResponsesWebSocketSession(conn, limits=limits) as session:
            handles = [session.lane(lane) for lane in lanes]
            for handle, turn in zip(handles, turns, strict=True):
                handle.send({"type": "response.create", **base, "input": turn["input"]})
            for i, handle in enumerate(handles):
                try:
                    response = handle.get_final_response()
                    emit(
                        {
                            "turn": i,
                            "status": response.status,
                            "response_id": response.id,
                            "text": response.output_text,
                        }
                    )
                except Exception as exc:
                    event = getattr(exc, "event", None)
                    fields = error_fields(event) if event is not None else {}
                    emit(error_line(i, exc, **{k: v for k, v in fields.items() if v is not None}))
        return
    for turn in turns:
        conn.response.create(**base, input=turn["input"])
    waiting, owner = list(range(len(turns))), None
    for event in conn:
        if event.type == "response.created":
            owner = waiting[0]
        elif event.type in TERMINAL:
            emit(outcome_of(event, owner if owner is not None else waiting[0]))
            waiting.remove(owner if owner is not None else waiting[0])
            owner = None
        elif event.type == "error" and getattr(event, "sequence_number", None) is None:
            emit({"turn": waiting.pop(0), "status": "error", "error": error_fields(event)})
        if not waiting:
            break
    conn.close()


def main() -> int:
    task = read_task()
    hello("openai-python", openai.__version__)
    if task["parallel"]:
        parallel(task)
        return 0
    conversation = Conversation(task)
    for index, turn in enumerate(task["turns"]):
        wait(turn)
        if turn.get("new_conversation"):  # the next task, on the same connection
            conversation.history, conversation.previous = [], None
        emit(conversation.turn(index, turn["input"]))
    if conversation.conn is not None:
        conversation.conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
