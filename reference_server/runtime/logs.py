"""The server's log: one structured line per response, one line per bad upgrade, text or JSON.

`configure(level, fmt)` is what `wsmode serve --log-level --log-format` calls. Every line that
describes a request carries its fields as `extra={"fields": {...}}`: the text format appends
them as `key=value`, the JSON format puts them beside `ts`, `level`, `logger` and `msg`. No API
key ever reaches a line: a request is named by its response id and connection, the tenant only
by the store's opaque digest, and never that either in the response line.
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
from typing import Any, Final, Literal

from harness.protocol.extension import read_server_stamps

LogFormat = Literal["text", "json"]
LOG_FORMATS: Final = ("text", "json")
LOG_LEVELS: Final = ("debug", "info", "warning", "error")

responses_log = logging.getLogger("wsmode.responses")
_HANDSHAKE_LOGGER: Final = "websockets.server"  # the Server's and each connection's


def configure(level: str = "info", fmt: LogFormat = "text") -> None:
    """Route every log record to stderr in `fmt` at `level` (replacing earlier handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, dict) else {}


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        pairs = " ".join(f"{key}={value}" for key, value in _fields(record).items())
        return f"{line} {pairs}" if pairs else line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def log_response(
    response: dict[str, Any], status: str, *, transport: str, connection_id: str
) -> None:
    """The one line a finished response gets (INFO on `wsmode.responses`)."""
    if not responses_log.isEnabledFor(logging.INFO):
        return
    stamps = read_server_stamps(response)
    usage = response.get("usage") or {}
    fields = {
        "response_id": response.get("id"),
        "connection": connection_id,
        "transport": transport,
        "previous_response_id": response.get("previous_response_id"),
        "cache": stamps.resolution if stamps is not None else "none",
        "status": status,
        "ttft_ms": stamps.ttft_ms if stamps is not None else None,
        "tokens_in": usage.get("input_tokens"),
        "tokens_out": usage.get("output_tokens"),
    }
    responses_log.info("response %s", status, extra={"fields": fields})


def log_refusal(
    code: str | None, *, transport: str, connection_id: str, previous_id: str | None
) -> None:
    """The one line a refused create gets (no response was created)."""
    if not responses_log.isEnabledFor(logging.INFO):
        return
    fields = {
        "connection": connection_id,
        "transport": transport,
        "previous_response_id": previous_id,
        "cache": "miss" if code == "previous_response_not_found" else None,
        "status": "refused",
        "code": code,
    }
    responses_log.info("request refused", extra={"fields": fields})


class _OneLineHandshakeFailures(logging.Filter):
    """`websockets` logs a failed opening handshake as an error with its traceback, then
    "connection rejected (400 ...)": keep one warning line (it is the client's error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.msg == "connection rejected (%d %s)" and isinstance(args, tuple) and args:
            return args[0] != 400  # ours (401, 404, 429) stay; 400 follows the failure
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            record.msg = "bad upgrade: %s"
            record.args = (f"{type(error).__name__}: {error}"[:300],)
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def handshake_logger() -> logging.Logger:
    """The logger to give `websockets`' Server: handshake failures in one line, no traceback."""
    logger = logging.getLogger(_HANDSHAKE_LOGGER)
    if not any(isinstance(f, _OneLineHandshakeFailures) for f in logger.filters):
        logger.addFilter(_OneLineHandshakeFailures())
    return logger


def connection_id(transport: str) -> str:
    """A short id naming a connection in log lines (`ws-12`), unique within the process."""
    return f"{transport}-{next(_connection_numbers)}"


_connection_numbers = itertools.count(1)
