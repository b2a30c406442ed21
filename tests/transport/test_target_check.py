"""The pre-run target check: each way a target can be missing reads as one line naming what,
where, the errno or HTTP status (with the server's message) and what to try."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.errors import TransportError
from harness.transport.failures import HttpStatusError
from harness.transport.target_check import (
    CHECK_BUDGET_S,
    CheckTarget,
    TargetProblem,
    check_targets_now,
    describe_failure,
)
from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import ServerConfig
from tests.conformance.servers import running

KEY = "sk-check-good"
UNRESOLVABLE = "a" * 64 + ".invalid"  # a label over 63 bytes: refused without any DNS query


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    data = tmp_path_factory.mktemp("check")
    config = ServerConfig(port=0, profile="zero", data_dir=Path(data), api_keys=(KEY,))
    with running_in_thread(config) as running_server:
        yield running_server


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check(
    url: str, mode: str = "ws", key: str | None = KEY, budget_s: float = CHECK_BUDGET_S
) -> TargetProblem:
    problem = check_targets_now([CheckTarget(url, mode, api_key=key)], budget_s=budget_s)
    assert problem is not None
    assert "\n" not in problem.line()
    return problem


def test_a_live_target_passes_over_both_transports(server: ReferenceServer) -> None:
    targets = [CheckTarget(server.ws_url, "ws", api_key=KEY)]
    targets.append(CheckTarget(server.http_url, "http", api_key=KEY))
    assert check_targets_now(targets) is None


@pytest.mark.parametrize("mode", ["ws", "http"])
def test_nothing_listening_names_the_errno_and_the_port(mode: str) -> None:
    port = closed_port()
    url = f"{'ws' if mode == 'ws' else 'http'}://127.0.0.1:{port}/v1" + (
        "/responses" if mode == "ws" else ""
    )
    problem = check(url, mode)
    assert problem.kind == "connect"
    assert problem.line() == (
        f"cannot connect to {url}: errno 111 ECONNREFUSED, connection refused; is a server "
        f"listening on 127.0.0.1, port {port}? (`wsmode serve` prints the URL it listens on)"
    )


def test_a_wrong_scheme_says_which_url_to_try() -> None:
    ws_as_http = check("http://127.0.0.1:8000/v1/responses")
    assert ws_as_http.line() == (
        "wrong scheme for http://127.0.0.1:8000/v1/responses: a WebSocket target starts with "
        "ws:// or wss://; try ws://127.0.0.1:8000/v1/responses"
    )
    http_as_ws = check("ws://127.0.0.1:8000/v1/responses", "http")
    assert http_as_ws.kind == "scheme" and http_as_ws.line().endswith(
        "an HTTP target starts with http:// or https://; try http://127.0.0.1:8000/v1"
    )


def test_a_wrong_path_shows_the_404_and_the_servers_message(server: ReferenceServer) -> None:
    url = server.ws_url.replace("/v1/responses", "/v2/responses")
    problem = check(url)
    assert problem.line() == (
        f"upgrade refused by {url}: HTTP 404 not_found: Unknown path.; check the path: the "
        "WebSocket endpoint is usually /v1/responses"
    )
    http = check(server.http_url + "/responses", "http")
    assert "HTTP 405" in http.line() and http.line().endswith(f"try {server.http_url}")


@pytest.mark.parametrize("mode", ["ws", "http"])
def test_a_bad_key_is_refused_with_401(server: ReferenceServer, mode: str) -> None:
    url = server.ws_url if mode == "ws" else server.http_url
    problem = check(url, mode, key="sk-wrong")
    what = "upgrade refused by" if mode == "ws" else "request refused by"
    assert problem.line().startswith(f"{what} {url}: HTTP 401 invalid_api_key: Incorrect API key")
    assert problem.line().endswith("; check the API key (--api-key or $WSMODE_API_KEY)")


def test_a_host_that_does_not_resolve() -> None:
    problem = check(f"ws://{UNRESOLVABLE}/v1/responses")
    assert problem.kind == "resolve"
    assert problem.line().startswith(f"cannot resolve the host of ws://{UNRESOLVABLE}/")
    assert problem.line().endswith("; check the host name")
    # what the resolver says of a well-formed name it does not know (no query sent from here)
    error = TransportError("cannot connect")
    error.__cause__ = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    line = describe_failure(error, "ws://nosuch.invalid/v1/responses").line()
    assert line == (
        "cannot resolve the host of ws://nosuch.invalid/v1/responses: nosuch.invalid: name or "
        "service not known; check the host name"
    )


def test_a_black_hole_is_no_answer_within_the_budget() -> None:
    with running("no-answer") as canned:
        problem = check(canned.url, budget_s=0.3)
    assert problem.line() == (
        f"no answer from {canned.url}: a plain create got no event within 0.3 s; is "
        "it a Responses API endpoint? (a slow server: raise the timeout)"
    )


def test_a_503_reads_as_a_server_unavailable_for_now_not_a_failed_one() -> None:
    """A server shutting down (or overloaded) answers 503: the hint says to try again later."""
    body = b'{"error": {"message": "Server is shutting down.", "type": "server_error"}}'
    problem = describe_failure(HttpStatusError(503, body), "ws://127.0.0.1:1/v1/responses")
    assert problem.line() == (
        "upgrade refused by ws://127.0.0.1:1/v1/responses: HTTP 503: Server is shutting down.; "
        "the server is unavailable (shutting down or overloaded): try again later"
    )
    failed = describe_failure(HttpStatusError(500, body), "ws://127.0.0.1:1/v1/responses")
    assert failed.line().endswith("; the server failed: see its log")
