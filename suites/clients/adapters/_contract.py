"""The adapter contract's plumbing for Python adapters (stdlib only: it runs in each client's
own environment). The contract itself: suites/clients/README.md."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

BASE_URL = os.environ.get("WSMODE_CLIENT_BASE_URL", "")
WS_URL = os.environ.get("WSMODE_CLIENT_WS_URL", "")
API_KEY = os.environ.get("WSMODE_CLIENT_API_KEY", "")
HOME = os.environ.get("WSMODE_CLIENT_HOME", "")


def read_task() -> dict[str, Any]:
    task: dict[str, Any] = json.loads(sys.stdin.readline())
    return task


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def hello(client: str, version: str) -> None:
    emit({"client": client, "version": version})


def wait(turn: dict[str, Any]) -> None:
    time.sleep(turn.get("delay_ms", 0) / 1000)


def user_message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant_message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def raised_where(exc: BaseException) -> str:
    """The innermost frame of `exc` outside this folder (inside the client library, if it was
    raised there), as `package/module.py:LINE in FUNCTION`."""
    here = os.path.dirname(os.path.abspath(__file__))
    frames = list(traceback.extract_tb(exc.__traceback__))
    outside = [f for f in frames if not os.path.abspath(f.filename).startswith(here)]
    if not (outside or frames):
        return "an unknown place"
    frame = (outside or frames)[-1]
    path = frame.filename
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            path = path.rsplit(marker, 1)[1]
    return f"{path}:{frame.lineno} in {frame.name}"


# Exceptions that are a bug of the code that raised them: a wrapper's cause of this kind is the
# one the certificate names (harness/conformance/clients/crashes.py holds the same list).
_BUGS = (AttributeError, TypeError, KeyError, IndexError, NameError, AssertionError, RecursionError)


def _root_bug(exc: BaseException) -> BaseException:
    """`exc`, or the programming error it was raised from (its __cause__ / __context__ chain)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, _BUGS):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return exc


def error_line(turn: int, exc: BaseException | None = None, **error: Any) -> dict[str, Any]:
    """An error outcome; with an exception, its type and message (and an HTTP status if any),
    and `exception` {type, where}: the certificate names a crash inside the library, also when
    a wrapper exception was raised from it."""
    if exc is not None:
        error.setdefault("message", f"{type(exc).__name__}: {exc}")
        root = _root_bug(exc)
        error.setdefault("exception", {"type": type(root).__name__, "where": raised_where(root)})
        response = getattr(exc, "response", None)
        status = getattr(exc, "status_code", None) or getattr(response, "status_code", None)
        if isinstance(status, int):
            error.setdefault("status", status)
    return {"turn": turn, "status": "error", "error": error}
