"""CLI command of the load area: `wsmode bench`."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    from harness.load import bench

    parser = subparsers.add_parser(
        "bench",
        help="replay agent rollouts in ws, http and http-chained mode and compare them",
        description=(
            "Replay agent-rollout traces against a server in WebSocket mode and over HTTP, "
            "print a comparison table, write a results JSON and an HTML report. Without "
            "--target it starts the embedded reference server."
        ),
    )
    bench.add_arguments(parser)
    parser.set_defaults(handler=bench.main)
