"""The server's WebSocket connection: `websockets`' own, plus socket-level arrival stamps."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import DATA_OPCODES, Frame


class StampedConnection(ServerConnection):
    """Stamps each data message with the time its last frame was read off the socket.

    A request's server-side clock (TTFT, API overhead) starts there, not when the session's task
    gets around to it: under load the two differ by the event loop's queueing delay.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arrivals: deque[float] = deque()  # one per complete data message, in order
        self._chunk_at = 0.0

    def data_received(self, data: bytes) -> None:
        self._chunk_at = time.perf_counter()
        super().data_received(data)

    def process_event(self, event: Any) -> None:
        if isinstance(event, Frame) and event.fin and event.opcode in DATA_OPCODES:
            self.arrivals.append(self._chunk_at)
        super().process_event(event)

    def arrival_of_next_message(self) -> float:
        return self.arrivals.popleft() if self.arrivals else time.perf_counter()
