"""A tiny client of the adapter contract, well behaved unless told to break (`--break MODE`).

Raw `websockets` (sync) and urllib: a conversation over one socket with previous_response_id,
HTTP fallback on 426, Retry-After on 429, one retry of a create that never reached the server,
a full-context resend after previous_response_not_found, a fresh connection after a lost one,
FIFO attribution of queued creates and lanes by stream_id. Each `--break` mode reproduces one
failure mode seen in real clients, so the tests can show every case catching its own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus
from websockets.sync.client import ClientConnection, connect

TERMINAL = ("response.completed", "response.failed", "response.incomplete")
BREAKS = (
    "hang-on-error",  # waits on after an error event (opencode#50848)
    "crash-on-string-error",  # reads error["code"] of a string error (opencode)
    "drop-failed-code",  # response.failed without its code (pipecat#5575)
    "incomplete-as-completed",  # response.incomplete taken for success (livekit#7013)
    "no-full-context",  # previous_response_not_found passed on, never resent (Effect)
    "retry-storm",  # retries a refused upgrade six times (codex on 404/405)
    "no-retry-before-101",  # a close before 101 is an error (openai-agents-python#4780)
    "replay-after-drop",  # a create cut mid-stream is resent silently
    "no-reconnect",  # a lost socket stays lost
    "strict-events",  # an unknown event type is a crash
    "lifo",  # queued answers given out last-in first-out
    "lane-blind",  # errors reported without their stream_id (openai-node)
    "short-timeout",  # gives up on the first token after 0.5 s
    "flat-error-blind",  # reads the code of nested errors only
    "no-status",  # a refused upgrade's status and code are lost
    "resend-on-error",  # resends a refused create, unchanged, five times (codex on any error)
    "ignore-retry-after",  # retries a 429 at once, Retry-After unread (codex on 429)
    "drop-last-delta",  # builds the text from deltas and loses the last one
    "dead-id-retry",  # after previous_response_not_found, the same dead id again
    "error-kills-session",  # an error event ends the session: later turns fail unsent
    "storm-200",  # 200 instant upgrade retries, no budget, no wait
    "no-auth-on-reconnect",  # a reconnect forgets the Authorization header
    "leftover-failed",  # stops at the error event; the next turn reads its response.failed
    "early-chain",  # sends the next turn on response.created, chained on its id
    "reuse-dead-id",  # store=false: continues the dead connection's id after a reconnect
    "no-close",  # exits without a close frame (the socket is dropped)
    "full-history",  # resends the whole history on a socket that holds the parent
    "retry-oversized",  # resends a create the server refused with 1009, five times
    "stale-id-next-task",  # a new task keeps the last task's previous_response_id
    "small-frames",  # reads frames of at most 32 KiB (a client's own max_size)
    "leftover-error",  # as leftover-failed, and the next turn's error has no response id
)


class Lost(Exception):
    """The socket went away; `sent` says whether the create had left."""

    def __init__(self, sent: bool) -> None:
        super().__init__("connection lost")
        self.sent = sent


class Refused(Exception):
    def __init__(self, status: int, code: str | None, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def text_of(response: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for item in response.get("output") or []
        if item.get("type") == "message"
        for part in item.get("content") or []
        if part.get("type") == "output_text"
    )


def message(role: str, text: str) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


class Client:
    def __init__(self, task: dict[str, Any], broken: str | None) -> None:
        self.task, self.broken = task, broken
        self.ws: ClientConnection | None = None
        self.http_only = False
        self.history: list[dict[str, Any]] = []  # the completed turns' messages
        self.previous: str | None = None
        self.fresh = True  # no parent on this socket: send the whole history
        self.connected = False  # a connection was open once (what a reconnect follows)
        self.dead = False  # error-kills-session: the session is over
        self.read_timeout = 0.5 if broken == "short-timeout" else task["timeout_s"]

    # -- connecting ------------------------------------------------------------------------
    def socket(self) -> ClientConnection:
        if self.ws is not None:
            return self.ws
        attempts = {"retry-storm": 6, "storm-200": 200}.get(self.broken or "", 3)
        headers = {"Authorization": f"Bearer {os.environ['WSMODE_CLIENT_API_KEY']}"}
        if self.broken == "no-auth-on-reconnect" and self.connected:
            headers = {}
        for attempt in range(attempts):
            try:
                self.ws = connect(
                    os.environ["WSMODE_CLIENT_WS_URL"],
                    additional_headers=headers,
                    open_timeout=10,
                    max_size=32 * 1024 if self.broken == "small-frames" else None,
                )
                self.fresh = self.connected = True
                return self.ws
            except InvalidStatus as exc:
                refused = refusal(exc)
                if self.broken in ("retry-storm", "storm-200") and attempt < attempts - 1:
                    time.sleep(0.05 if self.broken == "retry-storm" else 0)
                    continue
                if refused.status == 429 and attempt < attempts - 1:
                    if self.broken != "ignore-retry-after":
                        time.sleep(refused.retry_after)
                    continue
                raise refused from None
            except (InvalidMessage, EOFError, OSError):
                if self.broken == "no-retry-before-101" or attempt == attempts - 1:
                    raise Lost(sent=False) from None
        raise Lost(sent=False)

    # -- one turn ----------------------------------------------------------------------------
    def turn(self, index: int, text: str) -> None:
        user = message("user", text)
        if self.dead:
            emit({"turn": index, "status": "error", "error": {"message": "session closed"}})
            return
        try:
            outcome = self.run_turn(user)
        except Refused as exc:
            if exc.status == 426 and self.broken != "no-status":
                self.http_only = True
                outcome = self.http_turn(user)
            else:
                status = None if self.broken == "no-status" else exc.status
                code = None if self.broken == "no-status" else exc.code
                err = {"status": status, "code": code, "message": exc.message}
                outcome = {"status": "error", "error": err}
        except Lost:
            outcome = {"status": "error", "error": {"message": "the connection was lost"}}
        emit({"turn": index, **outcome})
        if outcome["status"] == "error" and self.broken == "error-kills-session":
            self.dead = True
        if outcome["status"] == "completed":
            self.history += [user, message("assistant", outcome["text"])]
            self.previous = outcome["response_id"]

    def run_turn(self, user: dict[str, Any]) -> dict[str, Any]:
        if self.http_only:
            return self.http_turn(user)
        for _ in range(6 if self.broken == "retry-oversized" else 3):
            try:
                return self.ws_turn(user)
            except Lost as lost:
                self.ws = None
                if lost.sent and self.broken not in ("replay-after-drop", "retry-oversized"):
                    raise
                if self.broken in ("no-reconnect", "no-retry-before-101"):
                    raise
        raise Lost(sent=False)

    def create(self, user: dict[str, Any], *, full: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": "response.create",
            "model": self.task["model"],
            "instructions": self.task["instructions"],
            "store": self.task["store"],
        }
        fresh = self.fresh and self.broken != "reuse-dead-id"
        if self.broken == "full-history":
            full = True
        if full or self.previous is None or (fresh and not self.task["store"]):
            body["input"] = [*self.history, user]
        else:
            body["input"] = [user]
            body["previous_response_id"] = self.previous
        return body

    def ws_turn(self, user: dict[str, Any], *, full: bool = False) -> dict[str, Any]:
        ws = self.socket()
        try:
            ws.send(json.dumps(self.create(user, full=full)))
        except ConnectionClosed:
            raise Lost(sent=False) from None
        self.fresh = False
        outcome = self.read_response(ws)
        error = outcome.get("error") or {}
        if outcome["status"] == "error" and self.broken == "resend-on-error" and not full:
            for _ in range(5):
                ws.send(json.dumps(self.create(user, full=True)))
                outcome = self.read_response(ws)
        missed = outcome["status"] == "error" and error.get("code") == "previous_response_not_found"
        if missed and self.broken == "dead-id-retry" and not full:
            ws.send(json.dumps(self.create(user, full=False)))  # the same dead id again
            outcome = self.read_response(ws)
        if missed and self.broken != "no-full-context":
            return self.ws_turn(user, full=True)
        return outcome

    def read_response(self, ws: ClientConnection, lane: str | None = None) -> dict[str, Any]:
        text = last_delta = ""
        while True:
            event = self.next_event(ws)
            kind = event.get("type")
            if kind == "error":
                if self.broken == "hang-on-error":
                    continue
                inside = "sequence_number" in event  # inside a response: response.failed follows
                if inside and self.broken not in ("leftover-failed", "leftover-error"):
                    continue
                return {"status": "error", "error": self.error_of(event)}
            if kind == "response.output_text.delta":
                last_delta = event.get("delta", "")
                text += last_delta
            elif kind in TERMINAL:
                if self.broken == "drop-last-delta":
                    return self.terminal(event, text[: len(text) - len(last_delta)])
                return self.terminal(event, text)
            elif not str(kind).startswith("response.") and self.broken == "strict-events":
                raise RuntimeError(f"unknown event type {kind!r}")

    def next_event(self, ws: ClientConnection) -> dict[str, Any]:
        try:
            return dict(json.loads(ws.recv(timeout=self.read_timeout)))
        except ConnectionClosed:
            raise Lost(sent=True) from None

    def error_of(self, event: dict[str, Any]) -> dict[str, Any]:
        payload = event.get("error")
        if self.broken == "crash-on-string-error":
            return {"code": payload["code"]}  # type: ignore[index]
        if isinstance(payload, str):
            return {"message": payload, "stream_id": event.get("stream_id")}
        if payload is None:  # the flat shape
            if self.broken == "flat-error-blind":
                return {"message": "error"}
            payload = event
        stream_id = None if self.broken == "lane-blind" else event.get("stream_id")
        return {
            "code": payload.get("code"),
            "message": payload.get("message"),
            "status": event.get("status"),
            "stream_id": stream_id,
        }

    def terminal(self, event: dict[str, Any], text: str) -> dict[str, Any]:
        response = event["response"]
        kind = event["type"]
        if kind == "response.completed" or (
            kind == "response.incomplete" and self.broken == "incomplete-as-completed"
        ):
            whole = text if self.broken == "drop-last-delta" else text_of(response)
            return {"status": "completed", "response_id": response["id"], "text": whole}
        if kind == "response.incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            return {
                "status": "incomplete",
                "response_id": response["id"],
                "incomplete_reason": reason,
            }
        error = dict(response.get("error") or {})
        if self.broken == "drop-failed-code":
            error.pop("code", None)
        if self.broken == "leftover-error":  # the SDK raises it as a plain error (pydantic-ai)
            return {"status": "error", "error": error}
        return {"status": "failed", "response_id": response["id"], "error": error}

    def early_chain(self, first: str, second: str) -> None:
        """Turns 0 and 1 with turn 1 sent as soon as turn 0's response.created names its id."""
        ws = self.socket()
        user0, user1 = message("user", first), message("user", second)
        ws.send(json.dumps(self.create(user0, full=True)))
        while (event := self.next_event(ws)).get("type") != "response.created":
            pass
        body = self.create(user1, full=True)
        body.update(input=[user1], previous_response_id=event["response"]["id"])
        ws.send(json.dumps(body))
        self.fresh = False
        for index, user in ((0, user0), (1, user1)):
            outcome = self.read_response(ws)
            emit({"turn": index, **outcome})
            if outcome["status"] == "completed":
                self.history += [user, message("assistant", outcome["text"])]
                self.previous = outcome["response_id"]

    # -- HTTP fallback -------------------------------------------------------------------------
    def http_turn(self, user: dict[str, Any]) -> dict[str, Any]:
        body = {
            "model": self.task["model"],
            "instructions": self.task["instructions"],
            "store": self.task["store"],
            "input": [*self.history, user],
        }
        request = urllib.request.Request(
            os.environ["WSMODE_CLIENT_BASE_URL"] + "/responses",
            data=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {os.environ['WSMODE_CLIENT_API_KEY']}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=self.task["timeout_s"]) as answer:
            response = json.loads(answer.read())
        return {"status": "completed", "response_id": response["id"], "text": text_of(response)}

    # -- parallel: queued creates or lanes ---------------------------------------------------------
    def parallel(self) -> None:
        turns = self.task["turns"]
        try:
            ws = self.socket()
        except Refused as exc:
            for i in range(len(turns)):
                emit({"turn": i, "status": "error", "error": {"status": exc.status}})
            return
        for turn in turns:
            body = self.create(message("user", turn["input"]), full=True)
            if turn.get("stream_id"):
                body["stream_id"] = turn["stream_id"]
            ws.send(json.dumps(body))
        waiting = list(range(len(turns)))
        if self.broken == "lifo":
            waiting.reverse()
        lanes = {t["stream_id"]: i for i, t in enumerate(turns) if t.get("stream_id")}
        texts: dict[int, str] = {}
        by_response: dict[str, int] = {}
        while waiting:
            event = self.next_event(ws)
            kind, lane = event.get("type"), event.get("stream_id")
            owner = lanes.get(lane) if lane in lanes else None
            if kind == "response.created":
                owner = owner if owner is not None else waiting[0]
                by_response[event["response"]["id"]] = owner
                continue
            if kind == "error":
                owner = owner if owner is not None else waiting[0]
                emit({"turn": owner, "status": "error", "error": self.error_of(event)})
                waiting.remove(owner)
                continue
            response = event.get("response") or {}
            owner = by_response.get(response.get("id", ""), owner)
            if kind == "response.output_text.delta" and owner is not None:
                texts[owner] = texts.get(owner, "") + event.get("delta", "")
            if kind in TERMINAL and owner is not None:
                emit({"turn": owner, **self.terminal(event, texts.get(owner, ""))})
                waiting.remove(owner)


def refusal(exc: InvalidStatus) -> Refused:
    response = exc.response
    code, text = None, response.reason_phrase
    try:
        error = json.loads(response.body or b"{}").get("error") or {}
        code, text = error.get("code"), error.get("message", text)
    except ValueError:
        pass
    retry_after = float(response.headers.get("Retry-After", "1"))
    return Refused(response.status_code, code, text, retry_after)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--break", dest="broken", choices=BREAKS, default=None)
    args = parser.parse_args()
    task = json.loads(sys.stdin.readline())
    emit({"client": "wsmode-test-adapter", "version": args.broken or "well-behaved"})
    client = Client(task, args.broken)
    if task["parallel"]:
        client.parallel()
        return 0
    turns = list(enumerate(task["turns"]))
    if args.broken == "early-chain" and len(turns) > 1:
        client.early_chain(task["turns"][0]["input"], task["turns"][1]["input"])
        turns = turns[2:]
    for index, turn in turns:
        time.sleep(turn["delay_ms"] / 1000)
        if turn.get("new_conversation"):  # the next task: nothing of the earlier turns
            client.history = []
            if args.broken != "stale-id-next-task":
                client.previous = None
        try:
            client.turn(index, turn["input"])
        except TimeoutError:
            emit({"turn": index, "status": "error", "error": {"message": "client timeout"}})
    if args.broken == "no-close":
        os._exit(0)  # no close frame: the kernel drops the socket
    if client.ws is not None:
        client.ws.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
