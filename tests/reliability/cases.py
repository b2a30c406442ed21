"""Generated bad input and the checks every answer must pass, for WebSocket and HTTP alike.

A case is made from a seed (`random.Random(seed)`), so hypothesis drives the seeds in the tests and
`bench/ratios/fuzz.py` runs the same generators for 10,000 cases. What a case may do to the server:
get an `error` event (or an HTTP 4xx with an `{"error": {...}}` body) that leaks no traceback or
path, or a normal response if the mutation happened to be valid; the WebSocket stays open (a binary
frame is the one input that closes it, 1003) and the next valid create still completes.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Final

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

FIELDS: Final = (
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "previous_response_id",
    "store",
    "stream",
    "max_output_tokens",
    "metadata",
    "temperature",
    "top_p",
    "reasoning",
    "stream_options",
    "stream_id",
    "parallel_tool_calls",
    "generate",
    "background",
    "wsmode",
)
NUMBER_LITERALS: Final = (
    "1e400",
    "-1e400",
    "1E+309",
    "1e-400",
    "-0",
    "0.5",
    "9" * 80,
    "-" + "9" * 30,
    "NaN",
    "Infinity",
)
ITEM_TYPES: Final = ("message", "function_call", "function_call_output", "reasoning", "bogus")
EVENT_TYPES: Final = ("response.cancel", "", "session.update", "RESPONSE.CREATE")
TERMINALS: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})
# What must never reach a client: a traceback, a source path, an exception's repr.
_LEAK: Final = re.compile(r"Traceback|File \"|\.py\b|/work/|/usr/|site-packages|Error\(")
ANSWER_TIMEOUT_S: Final = 10.0

VALID: Final[dict[str, Any]] = {
    "type": "response.create",
    "model": "m",
    "input": "hello",
    "store": False,
    "max_output_tokens": 16,
}


def random_value(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value: wrong types, edge numbers, odd strings, small containers."""
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 10**30, 7])
    if kind == 3:
        return rng.choice([0.0, -0.5, 1.5, 1e308, -1e-308, 2.0])
    if kind == 4:
        return "".join(
            chr(rng.choice([0, 9, 34, 92, 65, 0x7F, 0xE9, 0x2028, 0xFFFD, 0x1F600]))
            for _ in range(rng.randrange(8))
        )
    if kind == 5:
        return rng.choice(["", "x" * rng.randrange(1, 3000), "resp_" + "0" * 32, "auto", "none"])
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return {
            rng.choice((*FIELDS, "type", "role", "content", "name")): random_value(rng, depth + 1)
            for _ in range(rng.randrange(4))
        }
    return random_item(rng, depth + 1)


def random_item(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    item: dict[str, Any] = {"type": rng.choice(ITEM_TYPES)}
    for key in rng.sample(["role", "content", "call_id", "name", "arguments", "output", "id"], 3):
        item[key] = random_value(rng, depth + 1) if rng.random() < 0.5 else "user"
    return item


def _splice_number(frame: str, rng: random.Random) -> str:
    name = rng.choice(["temperature", "top_p", "max_output_tokens"])
    literal = rng.choice(NUMBER_LITERALS)
    return frame[:-1] + f',"{name}":{literal}}}'


def bad_frame(seed: int) -> str:
    """One generated client frame (text): a valid create, mutated one of several ways."""
    rng = random.Random(seed)
    create: dict[str, Any] = dict(VALID)
    kind = rng.randrange(8)
    if kind == 0:  # a field of the wrong type or value
        for _ in range(rng.randrange(1, 4)):
            create[rng.choice(FIELDS)] = random_value(rng)
    elif kind == 1:  # input items of every shape
        create["input"] = [random_item(rng) for _ in range(rng.randrange(1, 5))]
    elif kind == 2:
        return _splice_number(json.dumps(create), rng)
    elif kind == 3:  # broken syntax
        text = json.dumps(create)
        cut = rng.randrange(1, len(text))
        return rng.choice([text[:cut], text[:cut] + "\x01" + text[cut:], text + "}", "{" + text])
    elif kind == 4:  # nesting, duplicate keys, lone surrogates
        depth = rng.choice([63, 65, 200, 3000])
        return rng.choice(
            [
                '{"type":"response.create","model":"m","input":' + "[" * depth + "]" * depth + "}",
                '{"type":"response.create","model":"m","model":"n","input":"x"}',
                '{"type":"response.create","model":"m","input":"\\ud800"}',
            ]
        )
    elif kind == 5:  # not a create at all
        return rng.choice(
            ["[]", "5", '"x"', "null", "{}", json.dumps({"type": rng.choice(EVENT_TYPES)})]
        )
    elif kind == 6:  # continuation from an id that is not there, or not an id
        create["previous_response_id"] = rng.choice(["resp_" + "a" * 32, "", "x" * 600, "../etc"])
    else:  # tools and tool_choice
        create["tools"] = [random_value(rng) for _ in range(rng.randrange(1, 3))]
        create["tool_choice"] = random_value(rng)
    return json.dumps(create)


def http_body(seed: int) -> bytes:
    """The same mutations as an HTTP body (no `type`), plus invalid UTF-8 now and then."""
    frame = bad_frame(seed)
    if random.Random(seed).randrange(20) == 0:
        return frame.encode()[:5] + b"\xff\xfe" + frame.encode()[5:]
    try:
        parsed = json.loads(frame)
    except (ValueError, RecursionError):
        return frame.encode("utf-8", "surrogatepass")
    if isinstance(parsed, dict):
        parsed.pop("type", None)
        return frame.replace('"type": "response.create", ', "").encode("utf-8", "surrogatepass")
    return frame.encode()


@dataclass
class Tally:
    """What a run of cases found (bench/ratios/fuzz.py prints it; the tests assert it is clean)."""

    cases: int = 0
    errors_answered: int = 0
    responses: int = 0
    leaks: list[str] = field(default_factory=list)
    wrong_closes: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)

    def absorb(self, other: Tally) -> None:
        """Add another tally's counts (one per thread, merged at the end)."""
        self.cases += other.cases
        self.errors_answered += other.errors_answered
        self.responses += other.responses
        for mine, theirs in (
            (self.leaks, other.leaks),
            (self.wrong_closes, other.wrong_closes),
            (self.hangs, other.hangs),
            (self.server_errors, other.server_errors),
        ):
            mine.extend(theirs)

    @property
    def problems(self) -> list[str]:
        return [*self.leaks, *self.wrong_closes, *self.hangs, *self.server_errors]


def _check_text(tally: Tally, seed: int, text: str) -> None:
    if _LEAK.search(text):
        tally.leaks.append(f"seed {seed}: {text[:200]}")


async def _answer(ws: ClientConnection) -> dict[str, Any]:
    """Events until an error event or a terminal; the last one."""
    while True:
        event: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), ANSWER_TIMEOUT_S))
        if event.get("type") == "error" or event.get("type") in TERMINALS:
            return event


async def ws_case(ws: ClientConnection, seed: int, tally: Tally) -> None:
    """Send one generated frame, then a valid create: both must be answered on the same socket."""
    tally.cases += 1
    try:
        await ws.send(bad_frame(seed))
        answer = await _answer(ws)
        if answer["type"] == "error":
            tally.errors_answered += 1
            _check_text(tally, seed, json.dumps(answer))
            error = answer.get("error") or {}
            if not isinstance(error.get("message"), str) or not error.get("type"):
                tally.server_errors.append(f"seed {seed}: malformed error event: {answer}")
            if error.get("type") == "server_error":
                tally.server_errors.append(f"seed {seed}: {answer}")
        else:
            tally.responses += 1
        await ws.send(json.dumps(VALID))
        follow_up = await _answer(ws)
        if follow_up["type"] not in ("response.completed", "response.incomplete"):
            tally.server_errors.append(f"seed {seed}: the next valid create got {follow_up}")
    except TimeoutError:
        tally.hangs.append(f"seed {seed}: no answer within {ANSWER_TIMEOUT_S:g} s")
    except ConnectionClosed as exc:
        tally.wrong_closes.append(f"seed {seed}: socket closed ({exc})")


async def run_ws_cases(url: str, seeds: range, tally: Tally) -> None:
    """Every seed on one connection, reopened only after a (counted) wrong close."""
    ws = await connect(url, max_size=None)
    try:
        for seed in seeds:
            await ws_case(ws, seed, tally)
            if ws.close_code is not None:
                ws = await connect(url, max_size=None)
    finally:
        await ws.close()


def http_case(http_url: str, seed: int, tally: Tally) -> None:
    """POST one generated body: a JSON answer, 4xx for bad input, never 5xx or a leak."""
    tally.cases += 1
    request = urllib.request.Request(
        f"{http_url}/responses",
        data=http_body(seed),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as reply:
            status, body = reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    except TimeoutError:
        tally.hangs.append(f"seed {seed}: no HTTP answer within {ANSWER_TIMEOUT_S:g} s")
        return
    text = body.decode("utf-8", "replace")
    if status != 200:
        _check_text(tally, seed, text)
    if status >= 500:
        tally.server_errors.append(f"seed {seed}: HTTP {status}: {text[:200]}")
        return
    if status == 200 and text.startswith("event:"):  # the mutation asked for a stream
        if not any(f"event: {kind}\n" in text for kind in TERMINALS):
            tally.server_errors.append(f"seed {seed}: an SSE stream without a terminal event")
        else:
            tally.responses += 1
        return
    try:
        parsed = json.loads(text)
    except ValueError:
        tally.server_errors.append(f"seed {seed}: HTTP {status} body is not JSON: {text[:200]}")
        return
    if status == 200:
        tally.responses += 1
    elif isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        tally.errors_answered += 1
    else:
        tally.server_errors.append(f"seed {seed}: HTTP {status} without an error body")
