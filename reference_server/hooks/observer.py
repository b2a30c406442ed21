"""What a server saw, for whoever asked to watch: upgrades, frames both ways, closes, turns.

`wsmode certify-client` judges a client partly from the server's side (how many upgrades it
tried, which creates it sent on which connection, whether it replayed one). The server reports
each of these to a `ServerObserver` when one is configured (`Services.observer`); without one
it reports nothing and pays one `is None` test per frame. The reference server never imports
the harness: the harness passes an object that has this one method.
"""

from __future__ import annotations

from typing import Literal, Protocol

Direction = Literal["in", "out", "meta"]  # from the client, to the client, the server's note

# The kinds a server reports: `upgrade` (the request head, keys redacted), `refused` (status and
# body before 101), `dropped` (closed before 101), `open` (101), `text`/`binary` (a frame),
# `close` (code and reason; `meta` when the server dropped the TCP connection), `http` (a
# plain HTTP request head), `response` (a finished turn's Response object, both transports).


class ServerObserver(Protocol):
    def record(self, conn: str, direction: Direction, kind: str, data: str | bytes) -> None: ...


def redacted_head(head: bytes) -> str:
    """A request head as text without its credentials (the key never reaches a log)."""
    lines = head.decode("latin-1").split("\r\n")
    shown = [
        f"{line.split(':', 1)[0]}: <redacted>"
        if line.lower().startswith(("authorization:", "cookie:", "api-key:"))
        else line
        for line in lines
    ]
    return "\n".join(line for line in shown if line)
