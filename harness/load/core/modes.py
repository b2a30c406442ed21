"""The three ways the load engine sends a turn to a target (harness.load.core.rollout_driver):

- ``ws``: WebSocket mode, ``previous_response_id`` + the new items on one connection;
- ``http``: stateless HTTP + SSE, the whole history every turn;
- ``http-chained``: HTTP + SSE with ``previous_response_id`` and ``store: true``.
"""

from __future__ import annotations

from typing import Literal, get_args

Mode = Literal["ws", "http", "http-chained"]
MODES: tuple[Mode, ...] = get_args(Mode)


def parse_mode(value: str) -> Mode:
    if value not in MODES:
        raise ValueError(f"unknown mode {value!r}; expected one of {', '.join(MODES)}")
    return value


def parse_modes(text: str) -> tuple[Mode, ...]:
    """`--modes ws,http`: the modes named, in order (none for an empty list)."""
    return tuple(parse_mode(m.strip()) for m in text.split(",") if m.strip())
