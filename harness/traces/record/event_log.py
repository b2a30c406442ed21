"""What `wsmode record --events` writes: the server events the recorder relayed."""

from __future__ import annotations

import json
from pathlib import Path


class EventLog:
    """The server events the recorder relayed, as wire-log JSONL that `wsmode check` judges.

    A trace keeps what a replay needs (inputs, outputs, timings), not the events themselves;
    this file keeps those, one line per event: `{"dir": "recv", "kind": "text", "conn": ...,
    "data": <the event's JSON text>}`, one `conn` per WebSocket or HTTP connection.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = self.path.open("w", encoding="utf-8")

    def write(self, conn: str, data: str) -> None:
        entry = {"dir": "recv", "kind": "text", "conn": conn, "data": data}
        self._file.write(json.dumps(entry, ensure_ascii=True) + "\n")

    def close(self) -> None:
        self._file.close()
