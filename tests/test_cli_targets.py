"""A target that is not there, through the command line: each command (load, bench, certify,
record) stops before its run with one line on stderr (what, where, the errno or HTTP status,
what to try), exit status 2 and no results file; a target that dies mid-run ends `wsmode load`
with the same kind of line and exit status 1.

One reference server (in-process, port 0, with a key) serves the whole module; nothing here
waits out a timeout."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import Limits, ServerConfig
from tests.cli_run import run_cli
from tests.load.replay_support import SMOKE

KEY = "sk-cli-targets"
UNRESOLVABLE = "a" * 64 + ".invalid"  # a label over 63 bytes: refused without any DNS query


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    data = tmp_path_factory.mktemp("server")
    config = ServerConfig(port=0, profile="zero", data_dir=Path(data), api_keys=(KEY,))
    with running_in_thread(config) as running:
        yield running


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_line(argv: list[str], capsys: Any, tmp_path: Path, monkeypatch: Any) -> str:
    """Run `wsmode argv` in an empty directory: exit 2, one line on stderr, no file written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WSMODE_API_KEY", raising=False)
    status, out, err = run_cli(argv, capsys)
    assert status == 2, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == [], "nothing written"
    return err.rstrip("\n")


def test_load_nothing_listening(capsys: Any, tmp_path: Path, monkeypatch: Any) -> None:
    port = closed_port()
    url = f"ws://127.0.0.1:{port}/v1/responses"
    line = one_line(["load", "--target", url, "--duration-s", "3"], capsys, tmp_path, monkeypatch)
    assert line == (
        f"wsmode load: cannot connect to {url}: errno 111 ECONNREFUSED, connection refused; is "
        f"a server listening on 127.0.0.1, port {port}? (`wsmode serve` prints the URL it "
        "listens on)"
    )


def test_load_wrong_path_shows_the_404(
    server: ReferenceServer, capsys: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    url = server.ws_url.replace("/v1/responses", "/v1/respond")
    argv = ["load", "--target", url, "--api-key", KEY, "--duration-s", "3"]
    assert one_line(argv, capsys, tmp_path, monkeypatch) == (
        f"wsmode load: upgrade refused by {url}: HTTP 404 not_found: Unknown path.; check the "
        "path: the WebSocket endpoint is usually /v1/responses"
    )


@pytest.mark.parametrize("flag", ["--target", "--http-target"])
def test_load_wrong_scheme(
    flag: str, server: ReferenceServer, capsys: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """An http:// URL as the WebSocket target, a ws:// one as the HTTP target."""
    if flag == "--target":
        url, modes, fixed = server.http_url + "/responses", "ws", server.ws_url
    else:
        url, modes, fixed = server.ws_url.removesuffix("/responses"), "http", server.http_url
    argv = ["load", "--target", server.ws_url, "--http-target", server.http_url]
    argv[argv.index(flag) + 1] = url
    line = one_line([*argv, "--modes", modes, "--api-key", KEY], capsys, tmp_path, monkeypatch)
    assert line.startswith(f"wsmode load: wrong scheme for {url}: ")
    assert line.endswith(f"; try {fixed}")


@pytest.mark.parametrize("command", ["load", "bench"])
def test_a_bad_key_is_refused_with_401(
    command: str, server: ReferenceServer, capsys: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    argv = [command, "--target", server.ws_url, "--modes", "ws", "--api-key", "sk-wrong"]
    if command == "bench":
        argv += ["--traces", str(SMOKE)]
    line = one_line(argv, capsys, tmp_path, monkeypatch)
    assert line.startswith(
        f"wsmode {command}: upgrade refused by {server.ws_url}: HTTP 401 invalid_api_key: "
    )
    assert line.endswith("; check the API key (--api-key or $WSMODE_API_KEY)")


def test_the_key_comes_from_the_one_environment_variable(
    server: ReferenceServer, capsys: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WSMODE_API_KEYS", KEY)  # the old name still works, with a note
    argv = ["load", "--target", server.ws_url, "--requests", "2", "--processes", "1"]
    status, _, err = run_cli([*argv, "--out", "r", "--output-tokens", "16"], capsys)
    assert status == 0, err
    assert "wsmode: $WSMODE_API_KEYS is deprecated: set $WSMODE_API_KEY instead" in err


def test_a_host_that_does_not_resolve(capsys: Any, tmp_path: Path, monkeypatch: Any) -> None:
    url = f"ws://{UNRESOLVABLE}/v1/responses"
    line = one_line(["load", "--target", url, "--modes", "ws"], capsys, tmp_path, monkeypatch)
    assert line.startswith(f"wsmode load: cannot resolve the host of {url}: {UNRESOLVABLE}: ")
    assert line.endswith("; check the host name")


def test_certify_and_record_say_the_same(capsys: Any, tmp_path: Path, monkeypatch: Any) -> None:
    port = closed_port()
    url = f"ws://127.0.0.1:{port}/v1/responses"
    certify = one_line(["certify", "--target", url], capsys, tmp_path, monkeypatch)
    assert certify.startswith(f"wsmode certify: cannot connect to {url}: errno 111 ")
    upstream = f"http://127.0.0.1:{port}"
    argv = ["record", "--upstream", upstream, "--listen", "0", "--out", "t.jsonl"]
    record = one_line(argv, capsys, tmp_path, monkeypatch)
    assert record.startswith(f"wsmode record: cannot connect to {upstream}: errno 111 ")


def test_certify_wrong_path_and_bad_key(
    server: ReferenceServer, capsys: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    wrong = server.ws_url.replace("/v1/responses", "/v2")
    line = one_line(["certify", "--target", wrong, "--api-key", KEY], capsys, tmp_path, monkeypatch)
    assert line == (
        f"wsmode certify: upgrade refused by {wrong}: HTTP 404 not_found: Unknown path.; check "
        "the path: the WebSocket endpoint is usually /v1/responses"
    )
    line = one_line(["certify", "--target", server.ws_url], capsys, tmp_path, monkeypatch)
    assert "HTTP 401 invalid_api_key" in line and line.startswith("wsmode certify: upgrade")


def test_load_ends_fast_when_the_target_dies_mid_run(
    capsys: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The server stops after the run started: a refused connection asks the liveness probe,
    the run ends at once with one line naming the errno or the server's 503, exit status 1."""
    monkeypatch.chdir(tmp_path)
    config = ServerConfig(
        port=0,
        profile="zero",
        data_dir=tmp_path / "data",
        limits=Limits(drain_timeout_s=0.1, close_timeout_s=0.5),
    )
    started, stop = threading.Event(), threading.Event()
    urls: list[str] = []

    def serve() -> None:
        with running_in_thread(config) as dying:
            urls.append(dying.ws_url)
            started.set()
            stop.wait(60)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert started.wait(30)
    timer = threading.Timer(1.5, stop.set)  # after the pre-run check and some requests
    timer.start()
    argv = ["load", "--target", urls[0], "--duration-s", "60", "--processes", "1"]
    status, _, err = run_cli([*argv, "--out", "results", "--output-tokens", "16"], capsys)
    timer.cancel()
    stop.set()
    thread.join(30)
    assert status == 1, err
    last = err.rstrip("\n").splitlines()[-1]
    # which one a client sees depends on when it reconnects: while the server stops (its 503),
    # or after its listener closed (the kernel's refusal); both name the target and the cause
    early = "wsmode load: the run ended early,"
    refused = f"{early} cannot connect to {urls[0]}: errno 111 ECONNREFUSED"
    stopping = (
        f"{early} upgrade refused by {urls[0]}: HTTP 503: "
        "Server is shutting down.; the server is unavailable"
    )
    assert last.startswith((refused, stopping)), err
