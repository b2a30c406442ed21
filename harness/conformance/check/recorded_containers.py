"""HTTP recording containers, read for `wsmode check`: each recorded Responses body is a stream.

* **VCR cassettes**: VCR.py and go-vcr YAML (`interactions:`; the body is `response.body.string`,
  or, in go-vcr, `response.body` itself, often a block scalar) and Ruby VCR, YAML or JSON
  (`http_interactions:`; `body.string`, or `body.base64_string`);
* **HAR 1.2** (`log.entries[].response.content.text`, base64 when `encoding` says so): what
  browsers, mitmproxy and Charles export;
* the Azure SDK **test-proxy records** (`Entries[].ResponseBody`: a list of SSE lines when the
  response streamed);
* Datadog's **dd-apm-test-agent cassettes**: one JSON `{request, response}` per file, the SSE
  text in `response.body`.

An interaction that is not Responses traffic (an MCP server's JSON-RPC, a chat completion, a
JSON body rather than a stream) is skipped and counted, with a note naming it: a cassette that
also holds other traffic is still judged.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from harness.conformance.check.recorded_streams import (
    Streams,
    UnreadableInput,
    read_sse,
    sse_events,
)


@dataclass(frozen=True, slots=True)
class Interaction:
    """One recorded request and the body of its response."""

    number: int  # 1-based within the container
    method: str
    url: str
    body: str | None


def container_kind(document: Any) -> str | None:
    """Which container a parsed JSON or YAML document is, else None."""
    if not isinstance(document, Mapping):
        return None
    if isinstance(document.get("http_interactions"), list):
        return "Ruby VCR cassette"
    if isinstance(document.get("interactions"), list):
        return "VCR cassette"
    log = document.get("log")
    if isinstance(log, Mapping) and isinstance(log.get("entries"), list):
        return "HAR"
    if isinstance(document.get("Entries"), list):
        return "test-proxy record"
    if isinstance(document.get("request"), Mapping) and isinstance(
        document.get("response"), Mapping
    ):
        return "dd-apm-test-agent cassette"
    return None


def interactions(document: Mapping[str, Any]) -> list[Interaction]:
    """The interactions of a container (`container_kind` is not None)."""
    if isinstance(document.get("http_interactions"), list):
        return list(_vcr(document["http_interactions"]))
    if isinstance(document.get("interactions"), list):
        return list(_vcr(document["interactions"]))
    log = document.get("log")
    if isinstance(log, Mapping):
        return list(_har(log.get("entries") or []))
    if isinstance(document.get("Entries"), list):
        return list(_test_proxy(document["Entries"]))
    return list(_vcr([document]))  # a dd-apm-test-agent cassette: one {request, response}


def _vcr(items: list[Any]) -> Iterator[Interaction]:
    for number, item in enumerate(items, start=1):
        request = _mapping(item, "request")
        response = _mapping(item, "response")
        body = response.get("body")
        if isinstance(body, Mapping):  # VCR.py and Ruby VCR: {string} or {base64_string}
            text = body.get("string")
            if text is None and isinstance(body.get("base64_string"), str):
                text = _unbase64(body["base64_string"])
            body = text
        url = request.get("uri", request.get("url", ""))
        yield Interaction(number, str(request.get("method", "")).upper(), str(url), _text(body))


def _har(entries: list[Any]) -> Iterator[Interaction]:
    for number, entry in enumerate(entries, start=1):
        request = _mapping(entry, "request")
        content = _mapping(_mapping(entry, "response"), "content")
        text = content.get("text")
        if isinstance(text, str) and content.get("encoding") == "base64":
            text = _unbase64(text)
        method = str(request.get("method", "")).upper()
        yield Interaction(number, method, str(request.get("url", "")), _text(text))


def _test_proxy(entries: list[Any]) -> Iterator[Interaction]:
    for number, entry in enumerate(entries, start=1):
        record = entry if isinstance(entry, Mapping) else {}
        body = record.get("ResponseBody")
        if isinstance(body, list) and all(isinstance(line, str) for line in body):
            body = "".join(body)  # a streamed body, recorded line by line
        else:
            body = None  # a JSON body (or none): no events to judge
        method = str(record.get("RequestMethod", "")).upper()
        yield Interaction(number, method, str(record.get("RequestUri", "")), body)


def _mapping(value: Any, key: str) -> Mapping[str, Any]:
    inner = value.get(key) if isinstance(value, Mapping) else None
    return inner if isinstance(inner, Mapping) else {}


def _text(body: Any) -> str | None:
    if isinstance(body, bytes):  # YAML !!binary
        return body.decode("utf-8", "replace")
    return body if isinstance(body, str) else None


def _unbase64(text: str) -> str | None:
    try:
        return base64.b64decode(text, validate=False).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None


def read_container(name: str, document: Mapping[str, Any]) -> Streams:
    """Every Responses stream of a container; the other interactions skipped and counted."""
    kind = container_kind(document) or "container"
    result = Streams()
    for interaction in interactions(document):
        label = f"interaction {interaction.number}"
        why = _not_responses(name, interaction.body)
        if why is None:
            stream = read_sse(name, (interaction.body or "").encode(), label, 0)
            stream.starting_after = starting_after(interaction.url)
            result.streams.append(stream)
            continue
        result.skipped += 1
        shown = f"{interaction.method} {interaction.url}".strip() or "no request"
        result.notes.append(f"{label} ({shown}): skipped, not Responses traffic: {why}")
    if not result.streams and not result.skipped:
        raise UnreadableInput(name, None, f"a {kind} without interactions")
    return result


def starting_after(url: str) -> int | None:
    """N of a resumed stream's request (`GET /v1/responses/{id}?stream=true&starting_after=N`)."""
    values = parse_qs(urlsplit(url).query).get("starting_after", [])
    try:
        return int(values[0]) if values else None
    except ValueError:
        return None


def _not_responses(name: str, body: str | None) -> str | None:
    """Why a recorded body is not a Responses event stream; None when it is one."""
    if body is None:
        return "no text body"
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:  # a HAR's binary body, exported as text with lone surrogates
        return "a binary body (not UTF-8 text)"
    if "\ndata:" not in "\n" + body:
        if _is_response_object(body):  # a call made without `stream`: no events to judge
            return "a Response object, not an event stream (only streams are judged)"
        return "not an event stream"
    try:
        events = [event for _, _, event in sse_events(name, body.encode(), 0)]
    except UnreadableInput:
        return "an event stream whose data is not JSON"
    if not events:
        return "an event stream without data"
    types = [e.get("type") if isinstance(e, dict) else None for e in events]
    if not all(isinstance(t, str) for t in types):
        return "events without a 'type' (another protocol, such as JSON-RPC)"
    if not any(str(t).startswith("response.") for t in types):
        return f"no response.* event (first: {types[0]})"
    return None


def _is_response_object(body: str) -> bool:
    try:
        document = json.loads(body)
    except ValueError:
        return False
    return isinstance(document, dict) and document.get("object") == "response"
