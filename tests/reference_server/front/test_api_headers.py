"""The API's response headers (PROTOCOL.md §1.2) on every answer: JSON, SSE, errors, the upgrade."""

from __future__ import annotations

import re

import httpx
import openai
from websockets.asyncio.client import connect

from reference_server.app import ReferenceServer

from ..conftest import ServerFactory, run

REQUEST_ID = re.compile(r"^req_[0-9a-f]{32}$")


def assert_api_headers(headers: httpx.Headers | dict[str, str]) -> str:
    request_id = headers["x-request-id"]
    assert REQUEST_ID.match(request_id), request_id
    assert headers["openai-processing-ms"].isdigit()
    limit = int(headers["x-ratelimit-limit-requests"])
    assert limit > 0 and int(headers["x-ratelimit-remaining-requests"]) <= limit
    assert int(headers["x-ratelimit-remaining-tokens"]) <= int(headers["x-ratelimit-limit-tokens"])
    return request_id


def test_json_sse_and_error_answers_carry_distinct_request_ids(server: ReferenceServer) -> None:
    with httpx.Client(base_url=server.http_url, timeout=10) as http:
        replies = [
            http.post("/responses", json={"model": "m", "input": "hi"}),
            http.post("/responses", json={"model": "m", "input": "hi", "stream": True}),
            http.post("/responses", json={"model": "m", "input": "hi", "temperature": "hot"}),
            http.get("/responses/resp_unknown"),
        ]
    assert [r.status_code for r in replies] == [200, 200, 400, 404]
    ids = [assert_api_headers(reply.headers) for reply in replies]
    assert len(set(ids)) == len(ids)


def test_the_sdk_reads_the_request_id(server: ReferenceServer) -> None:
    client = openai.OpenAI(api_key="sk-local", base_url=server.http_url, max_retries=0)
    response = client.responses.create(model="m", input="hi")
    assert REQUEST_ID.match(response._request_id or ""), response._request_id


def test_the_upgrade_answers_carry_them_too(make_server: ServerFactory) -> None:
    async def upgrade(url: str) -> dict[str, str]:
        async with connect(url) as ws:
            assert ws.response is not None
            return {k.lower(): v for k, v in ws.response.headers.raw_items()}

    with make_server() as server:
        headers = run(upgrade(server.ws_url))
    assert_api_headers(headers)
