"""Store bytes per stored turn at turn 10 vs turn 200 of one chain (target <= 1.2x).

One WebSocket chain of `--turns` store=true turns against the reference server (its own process,
`async_post` off so each record is committed before its terminal event). After every turn the
store's payload bytes are read from `/metrics` (`wsmode_store_bytes`); the figure is the bytes
turn 200 added over the bytes turn 10 added, with the SQLite file size at the end.

    python bench/ratios/store_growth.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import urllib.request
from pathlib import Path

from websockets.asyncio.client import connect

from harness.load.embedded_server import EmbeddedServer


def store_bytes(http_url: str) -> int:
    base = http_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("wsmode_store_bytes "):
                return int(float(line.split()[1]))
    raise RuntimeError("no wsmode_store_bytes gauge")


async def chain(server: EmbeddedServer, turns: int) -> list[int]:
    added: list[int] = []
    previous: str | None = None
    async with connect(server.ws_url, max_size=None) as ws:
        for turn in range(turns):
            create = {"type": "response.create", "model": "m", "store": True}
            create["input"] = f"turn {turn}: " + "lorem ipsum " * 40
            if previous:
                create["previous_response_id"] = previous
            before = store_bytes(server.http_url)
            await ws.send(json.dumps(create))
            while True:
                event = json.loads(await ws.recv())
                if event["type"] in ("response.completed", "response.incomplete"):
                    previous = event["response"]["id"]
                    break
                if event["type"] in ("error", "response.failed"):
                    raise RuntimeError(json.dumps(event)[:300])
            added.append(store_bytes(server.http_url) - before)
    return added


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    with EmbeddedServer(profile="zero", disable=("async_post",)) as server:
        added = asyncio.run(chain(server, args.turns))
        assert server.data_dir is not None
        file_bytes = sum(p.stat().st_size for p in Path(server.data_dir).glob("responses*"))
    ratio = added[-1] / added[9]
    print(
        f"bytes added by turn 10: {added[9]}, by turn {args.turns}: {added[-1]} "
        f"(ratio {ratio:.2f}, target <= 1.2); total {sum(added)} payload bytes, "
        f"{file_bytes} bytes of SQLite files"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
