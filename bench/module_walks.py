"""How many of the project's modules three paths enter, counted as the code runs.

    python bench/module_walks.py            # all three walks
    python bench/module_walks.py frame -v   # one, with the modules in the order first entered

- `frame`: the reference server, from the moment a `response.create` frame's bytes reach it
  (the first call on its thread after the client sends) to its first socket write of that turn
  (created .. first delta, one write): every first-party module whose code runs on the server's
  thread in between, and how often the path comes back into a module it had left.
- `bench`: `wsmode bench` (one rollout, two turns, ws only, embedded server in its own process)
  from the command line to the results file: the modules the command's own process runs.
- `certify`: `wsmode certify -k <one case>` against the embedded server, from the command line to
  the case's verdict on the console: the modules on the certify thread (the embedded server runs
  on threads of its own and is left out).

A module counts when a function defined in it is called (sys.setprofile); imports alone do not.
Not a benchmark of time: the counts are the same on a busy machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = (ROOT / "harness", ROOT / "reference_server", ROOT / "suites")


def _module(filename: str) -> str | None:
    path = Path(filename)
    if not any(path.is_relative_to(top) for top in FIRST_PARTY):
        return None
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class Trail:
    """The first-party modules entered, in order, and how often the path re-entered one."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.entries: dict[str, int] = {}
        self._last: str | None = None
        self.active = False

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.active or event != "call":
            return
        module = _module(frame.f_code.co_filename)
        if module is None or module == self._last:
            return
        if module not in self.entries:
            self.order.append(module)
        self.entries[module] = self.entries.get(module, 0) + 1
        self._last = module

    def report(self, name: str, verbose: bool) -> str:
        back = sum(n - 1 for n in self.entries.values())
        most = sorted(self.entries.items(), key=lambda kv: -kv[1])[:3]
        busiest = ", ".join(f"{m} x{n}" for m, n in most)
        lines = [f"{name}: {len(self.order)} modules, {back} re-entries (most: {busiest})"]
        if verbose:
            lines += [f"  {m}  x{self.entries[m]}" for m in self.order]
        return "\n".join(lines)


def walk_frame() -> Trail:
    """The server thread's modules from a create frame's arrival to the turn's first write."""
    import asyncio

    from websockets.sync.client import connect

    from reference_server.app import running_in_thread
    from reference_server.config import ServerConfig

    trail = Trail()
    first_write = threading.Event()
    server_thread: list[threading.Thread] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and trail.active and frame.f_code.co_name == "write":
            owner = frame.f_locals.get("self")
            if isinstance(owner, asyncio.Transport) and not first_write.is_set():
                trail.active = False
                first_write.set()
                return
        trail.profile(frame, event, arg)

    def thread_profile(frame: FrameType, event: str, arg: Any) -> None:
        if not server_thread:
            server_thread.append(threading.current_thread())
        if threading.current_thread() is server_thread[0]:
            profile(frame, event, arg)

    create = (
        '{"type":"response.create","model":"gpt-5-codex","store":false,'
        '"input":[{"type":"message","role":"user","content":[{"type":"input_text",'
        '"text":"Explain the change."}]}]}'
    )
    with tempfile.TemporaryDirectory() as data:
        config = ServerConfig(port=0, profile="zero", data_dir=Path(data))
        threading.setprofile(thread_profile)
        try:
            with running_in_thread(config) as server, connect(server.ws_url) as ws:
                time.sleep(0.2)  # the session is set up, its reader waiting, before the frame
                trail.active = True
                ws.send(create)
                first_write.wait(10)
                while '"response.completed"' not in ws.recv(timeout=10):
                    pass
        finally:
            threading.setprofile(None)  # type: ignore[arg-type]
    return trail


@contextlib.contextmanager
def _profiled(trail: Trail) -> Iterator[None]:
    trail.active = True
    sys.setprofile(trail.profile)
    try:
        yield
    finally:
        sys.setprofile(None)
        trail.active = False


def _run_cli(argv: list[str]) -> Trail:
    from harness.cli import main

    trail = Trail()
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said), _profiled(trail):
        status = main(argv)
    if status != 0:
        raise SystemExit(f"wsmode {' '.join(argv)} exited {status}:\n{said.getvalue()}")
    return trail


def walk_bench() -> Trail:
    with tempfile.TemporaryDirectory() as out:
        argv = ["bench", "--modes", "ws", "--no-cache-split", "--per-kind", "1"]
        argv += ["--max-rollouts", "1", "--max-turns", "2", "--no-html", "--out", out]
        return _run_cli(argv)


def walk_certify() -> Trail:
    return _run_cli(["certify", "-k", "1.handshake.upgrade", "--no-report"])


WALKS: dict[str, Callable[[], Trail]] = {
    "frame": walk_frame,
    "bench": walk_bench,
    "certify": walk_certify,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("walks", nargs="*", metavar="WALK", help=", ".join(WALKS))
    parser.add_argument("-v", "--verbose", action="store_true", help="list the modules")
    args = parser.parse_args()
    unknown = [w for w in args.walks if w not in WALKS]
    if unknown:
        parser.error(f"unknown walk(s): {', '.join(unknown)} (choose from {', '.join(WALKS)})")
    for name in args.walks or list(WALKS):
        print(WALKS[name]().report(name, args.verbose), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
