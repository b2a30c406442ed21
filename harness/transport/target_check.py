"""Is the target there at all? The check every command runs before its run, and its one line.

Before certify, bench, load or record start anything that writes results, each URL they will use
gets one bounded check: the URL's scheme, a fresh connection (and the WebSocket upgrade), and one
minimal exchange, the liveness probe's plain create (harness.transport.liveness_probe). What can go
wrong is classified into a `TargetProblem` that reads as one line: what went wrong, where (the
URL), the errno or HTTP status (with the server's JSON error message when it sent one), and what
to try. The commands print it as `<prog>: <line>` and exit 2 without writing a results file.

The same classification serves a target that dies mid-run (`describe_failure` of the transport
error a liveness probe met, harness.load.core.target_watch): the run ends with the same kind of line
instead of thousands of failures.

    cannot connect to ws://127.0.0.1:9/v1/responses: errno 111, connection refused; is a server
        listening there? (`wsmode serve` prints the URL it listens on)
    upgrade refused by ws://127.0.0.1:8000/v2: HTTP 404 not_found: Unknown path.; check the
        path: the WebSocket endpoint is usually /v1/responses
"""

from __future__ import annotations

import asyncio
import errno as errno_codes
import os
import socket
import ssl
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from harness.errors import TransportError
from harness.protocol.errors import ApiError
from harness.transport.exchange import error_from_http
from harness.transport.failures import HttpStatusError, TargetClosed, TargetTimeout
from harness.transport.liveness_probe import ProbeOutcome, probe_outcome
from harness.transport.ws import WsClient

CHECK_BUDGET_S: Final = 10.0  # the whole check: connection, upgrade and the answer's events
CHECK_MODEL: Final = "gpt-5-codex"  # what the check's create names when the run names none
# answers that mean every request of the run would be refused the same way
_ACCESS_STATUSES: Final = frozenset({401, 403, 404, 429})
WS_SCHEMES: Final = ("ws", "wss")
HTTP_SCHEMES: Final = ("http", "https")


@dataclass(frozen=True, slots=True)
class TargetProblem:
    """Why a target cannot be used, as one line: `what where: detail; hint`.

    `kind` names the class for programs and tests: "scheme", "resolve", "connect", "tls",
    "refused" (the upgrade or the request), "closed", "no-answer", "error-answer".
    """

    kind: str
    what: str  # "cannot connect to", "upgrade refused by", ...
    where: str  # the URL
    detail: str  # the errno, the HTTP status and the server's message, ...
    hint: str  # what to try

    def line(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        hint = f"; {self.hint}" if self.hint else ""
        return " ".join(f"{self.what} {self.where}{detail}{hint}".split())


@dataclass(frozen=True, slots=True)
class CheckTarget:
    """One URL a run will use: `mode` "ws" (a WebSocket URL) or an HTTP mode (the API base)."""

    url: str
    mode: str = "ws"
    model: str = CHECK_MODEL
    api_key: str | None = None


def check_url(url: str, mode: str) -> TargetProblem | None:
    """The URL's own problems, before any connection: its scheme for the mode, a host."""
    parts = urllib.parse.urlsplit(url)
    wants_ws = mode == "ws"
    expected = WS_SCHEMES if wants_ws else HTTP_SCHEMES
    kind_name = "WebSocket" if wants_ws else "HTTP"
    if parts.scheme not in expected:
        other = {"http": "ws", "https": "wss", "ws": "http", "wss": "https"}.get(parts.scheme)
        if other is not None and other in expected:
            fixed = urllib.parse.urlunsplit(parts._replace(scheme=other))
            if not wants_ws and fixed.rstrip("/").endswith("/responses"):
                fixed = fixed.rstrip("/").removesuffix("/responses")
            hint = f"try {fixed}"
        else:
            hint = f"give a {kind_name} URL"
        return TargetProblem(
            "scheme",
            "wrong scheme for",
            url,
            f"{'a' if wants_ws else 'an'} {kind_name} target starts with "
            + " or ".join(f"{scheme}://" for scheme in expected),
            hint,
        )
    if not parts.hostname:
        return TargetProblem("scheme", "no host in", url, "", f"give a full {kind_name} URL")
    return None


async def check_target(
    target: CheckTarget, *, budget_s: float = CHECK_BUDGET_S, any_error_refuses: bool = True
) -> TargetProblem | None:
    """None when `target` answered a plain create; else what is wrong with it.

    An error answer is a problem when it would refuse every request of the run alike (401,
    403, 404, 429), or always with `any_error_refuses` (a measuring run needs answers; certify
    passes False and lets its cases judge other error answers).
    """
    problem = check_url(target.url, target.mode)
    if problem is not None:
        return problem
    outcome = await probe_outcome(
        target.url,
        model=target.model,
        api_key=target.api_key,
        mode=target.mode,
        event_timeout_s=budget_s,
        budget_s=budget_s,
        first_event=True,
    )
    return problem_of(outcome, target, budget_s, any_error_refuses=any_error_refuses)


def problem_of(
    outcome: ProbeOutcome, target: CheckTarget, budget_s: float, *, any_error_refuses: bool
) -> TargetProblem | None:
    """The `TargetProblem` a probe's outcome shows, if any.

    Failing to connect or upgrade, and silence, are always problems. What a target does once
    it answers (an error event, garbage, a close) is one only with `any_error_refuses`, or for
    an error that would refuse every request alike."""
    url, mode = target.url, target.mode
    answer = outcome.answer_error
    if answer is not None and (any_error_refuses or answer.status in _ACCESS_STATUSES):
        return _error_answer(answer, url, mode, upgrade=False)  # an answer: past any upgrade
    if outcome.failure is None:
        return None
    error = outcome.error
    if error is not None and not isinstance(error, TargetTimeout):
        # over HTTP no event came back (with one the check passed): nothing answered
        if outcome.stage == "connect" or mode != "ws" or any_error_refuses:
            return describe_failure(error, url, mode)
        return None  # a WebSocket that answered with garbage or a close: the cases judge it
    return TargetProblem(
        "no-answer",
        "no answer from",
        url,
        f"a plain create got no event within {budget_s:g} s",
        "is it a Responses API endpoint? (a slow server: raise the timeout)",
    )


def describe_failure(error: BaseException, url: str, mode: str = "ws") -> TargetProblem:
    """Classify a transport failure met on `url` (before or during a run) into one problem."""
    if isinstance(error, HttpStatusError):
        return _error_answer(error_from_http(error), url, mode, upgrade=mode == "ws")
    if isinstance(error, TargetTimeout):
        return TargetProblem(
            "no-answer",
            "no answer from",
            url,
            str(error),
            "is the host right and the server up? (a slow server: raise the timeout)",
        )
    if isinstance(error, TargetClosed):
        code = f"close code {error.code}" if error.code is not None else "closed"
        reason = f" {error.reason!r}" if error.reason else ""
        return TargetProblem(
            "closed",
            "connection closed by",
            url,
            f"{code}{reason}",
            "see the server's log",
        )
    cause = _root_cause(error)
    if isinstance(cause, socket.gaierror | UnicodeError):  # UnicodeError: not a host name at all
        host = urllib.parse.urlsplit(url).hostname or url
        words = cause.strerror if isinstance(cause, socket.gaierror) else None
        return TargetProblem(
            "resolve",
            "cannot resolve the host of",
            url,
            f"{host}: {(words or str(cause)).lower()}",
            "check the host name",
        )
    if isinstance(cause, ssl.SSLError):
        plain = "ws://" if mode == "ws" else "http://"
        return TargetProblem(
            "tls",
            "TLS handshake failed with",
            url,
            cause.reason or str(cause),
            f"a server without TLS takes {plain} URLs",
        )
    if isinstance(cause, OSError) and cause.errno is not None:
        return TargetProblem(
            "connect", "cannot connect to", url, _errno_text(cause), _connect_hint(url, cause)
        )
    return TargetProblem(
        "connect",
        "cannot connect to",
        url,
        _first_line(str(cause or error)),
        "is the URL right and the server up?",
    )


def _root_cause(error: BaseException) -> BaseException | None:
    """The innermost cause (an OSError behind a TransportError, behind websockets' wrappers)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        nxt = current.__cause__ or current.__context__
        if nxt is None:
            return current
        current = nxt
    return current


def _errno_text(cause: OSError) -> str:
    number = cause.errno
    assert number is not None
    name = errno_codes.errorcode.get(number, "")
    words = (os.strerror(number) or cause.strerror or "").lower()
    return f"errno {number}{f' {name}' if name else ''}, {words}"


def _connect_hint(url: str, cause: OSError) -> str:
    parts = urllib.parse.urlsplit(url)
    if cause.errno == errno_codes.ECONNREFUSED:
        where = f"port {parts.port}" if parts.port else "the default port"
        return (
            f"is a server listening on {parts.hostname}, {where}? "
            "(`wsmode serve` prints the URL it listens on)"
        )
    if cause.errno in (errno_codes.ECONNRESET, errno_codes.EPIPE):
        return "the server dropped the connection: see its log"
    return "is the host reachable from here?"


def _error_answer(answer: ApiError, url: str, mode: str, *, upgrade: bool) -> TargetProblem:
    status = answer.status
    code = f" {answer.code}" if answer.code else ""
    message = f": {_first_line(answer.message)}" if answer.message else ""
    detail = f"HTTP {status}{code}{message}" if status else f"error{code}{message}"
    if status in (401, 403):
        hint = "check the API key (--api-key or $WSMODE_API_KEY)"
    elif status == 404 and answer.code in ("model_not_found", "not_found_model"):
        hint = "name a model it serves (--model)"
    elif mode != "ws" and status in (404, 405) and url.rstrip("/").endswith("/responses"):
        base = url.rstrip("/").removesuffix("/responses")
        hint = f"the HTTP target is the API base (requests go to <base>/responses): try {base}"
    elif status == 404:
        hint = (
            "check the path: the WebSocket endpoint is usually /v1/responses"
            if mode == "ws"
            else "check the path: the HTTP target is the API base, usually ending in /v1 "
            "(requests go to <base>/responses)"
        )
    elif status == 429:
        hint = "the target is busy or rate-limited: try again later, with less concurrency"
    elif status == 503:
        hint = "the server is unavailable (shutting down or overloaded): try again later"
    elif status >= 500:
        hint = "the server failed: see its log"
    else:
        hint = "check --model and the target's documentation"
    if upgrade:
        return TargetProblem("refused", "upgrade refused by", url, detail, hint)
    return TargetProblem("error-answer", "request refused by", url, detail, hint)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:197] + "..."


async def check_reachable(
    upstream: str, *, budget_s: float = CHECK_BUDGET_S
) -> TargetProblem | None:
    """Is a Responses API server there at all? For a proxy (`wsmode record`) that has no key or
    model of its own: the WebSocket upgrade to the upstream's /v1/responses, where any HTTP
    answer (the upgrade, a 401, a 404) says a server is there; not connecting, or silence, is
    a problem. `upstream` is an origin: http(s):// or ws(s)://host:port."""
    parts = urllib.parse.urlsplit(upstream)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.hostname:
        return TargetProblem(
            "scheme",
            "not an upstream URL:",
            upstream,
            "",
            "give the server's origin, e.g. http://127.0.0.1:8000",
        )
    url = f"{scheme}://{parts.netloc}/v1/responses"
    try:
        client = await WsClient.connect(url, timeout_s=budget_s)
    except HttpStatusError:
        return None  # an HTTP answer: a server is there (it wants a key, or another path)
    except TransportError as exc:
        problem = describe_failure(exc, url)
        return replace(problem, where=upstream)
    await client.close()
    return None


async def check_targets(
    targets: Sequence[CheckTarget], *, budget_s: float = CHECK_BUDGET_S, any_error_refuses: bool
) -> TargetProblem | None:
    """The first problem among `targets` (each checked once, one after the other), or None."""
    seen: set[tuple[str, str]] = set()
    for target in targets:
        key = (target.url, "ws" if target.mode == "ws" else "http")
        if key in seen:
            continue
        seen.add(key)
        problem = await check_target(target, budget_s=budget_s, any_error_refuses=any_error_refuses)
        if problem is not None:
            return problem
    return None


def check_targets_now(
    targets: Sequence[CheckTarget],
    *,
    budget_s: float = CHECK_BUDGET_S,
    any_error_refuses: bool = True,
) -> TargetProblem | None:
    """`check_targets` from synchronous code (a command, before its run starts)."""
    return asyncio.run(
        check_targets(targets, budget_s=budget_s, any_error_refuses=any_error_refuses)
    )


def check_reachable_now(upstream: str, *, budget_s: float = CHECK_BUDGET_S) -> TargetProblem | None:
    """`check_reachable` from synchronous code."""
    return asyncio.run(check_reachable(upstream, budget_s=budget_s))
