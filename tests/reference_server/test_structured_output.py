"""Structured output (PROTOCOL.md §3.4): with `text.format` json_schema or json_object the
reply is a JSON document (valid against the schema), seeded as tool arguments are."""

from __future__ import annotations

import json
from typing import Any

import httpx

from reference_server.app import ReferenceServer

from .engine.test_argsynth import _validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 2},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
            "additionalProperties": False,
        },
    },
    "required": ["city", "days", "units", "tags", "where"],
    "additionalProperties": False,
}


def reply_text(server: ReferenceServer, fmt: dict[str, Any], seed: int) -> str:
    body = {
        "model": "m",
        "input": "Plan a trip.",
        "text": {"format": fmt},
        "wsmode": {"seed": seed},
        "max_output_tokens": 4000,
    }
    with httpx.Client(base_url=server.http_url, timeout=10) as http:
        response = http.post("/responses", json=body).json()
    assert response["status"] == "completed", response
    (message,) = [item for item in response["output"] if item["type"] == "message"]
    return str(message["content"][0]["text"])


def test_json_schema_output_validates_and_is_seeded(server: ReferenceServer) -> None:
    fmt = {"type": "json_schema", "name": "trip", "schema": SCHEMA, "strict": True}
    texts = [reply_text(server, fmt, seed) for seed in range(8)]
    for text in texts:
        assert _validate(SCHEMA, json.loads(text)) == [], text
    assert reply_text(server, fmt, 3) == texts[3]  # the same seed, the same document
    assert len(set(texts)) > 1  # other seeds, other documents


def test_json_object_output_is_an_object(server: ReferenceServer) -> None:
    document = json.loads(reply_text(server, {"type": "json_object"}, 1))
    assert isinstance(document, dict) and document
