"""wsmode certify-client adapter: the codex CLI, `codex exec --json` (npm @openai/codex).

Each turn is one `codex exec` (later turns: `codex exec resume --last`), as a script drives
codex: a custom model provider at the case's server with `supports_websockets = true`, its
`CODEX_HOME` in the case's scratch directory (nothing of the user's config or login is read),
no approvals, a read-only sandbox. Sealed to loopback: every proxy variable points at a closed
loopback port (`NO_PROXY` only for 127.0.0.1), so any traffic codex tries beyond the case's
server fails instead of leaving the machine. The caller is told what codex prints: the agent's
message, or the error of `turn.failed` / `error` (codex exposes no response id and no
structured error code; a code shows only inside its message). `parallel` tasks run one
`codex exec` per turn at once (codex has no lanes: a lane task is unsupported).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _contract import BASE_URL, HOME, emit, error_line, hello, read_task, wait

CODEX = Path(os.environ.get("WSMODE_NODE_CLIENTS", ".clients/node")) / "node_modules/.bin/codex"
DEAD_PROXY = "http://127.0.0.1:9"  # discard port: nothing listens, so nothing leaves


def configure(home: Path, task: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"""model = {json.dumps(task["model"])}
model_provider = "wsmode"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.wsmode]
name = "wsmode certify-client"
base_url = {json.dumps(BASE_URL)}
env_key = "WSMODE_CLIENT_API_KEY"
wire_api = "responses"
supports_websockets = true
""",
        encoding="utf-8",
    )


def environment(home: Path) -> dict[str, str]:
    env = dict(os.environ, CODEX_HOME=str(home), NO_COLOR="1")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env[name] = DEAD_PROXY
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def run(index: int, prompt: str, home: Path, workdir: Path, thread: str | None) -> dict[str, Any]:
    command = [str(CODEX), "exec", "--json", "--skip-git-repo-check", "-C", str(workdir)]
    if thread is not None:
        command += ["resume", thread]
    command.append(prompt)
    try:
        done = subprocess.run(
            command, env=environment(home), capture_output=True, text=True, check=False
        )
    except OSError as exc:
        return error_line(index, exc)
    text, error, completed = None, None, False
    for raw in done.stdout.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        item = event.get("item") or {}
        if event.get("type") == "thread.started":
            thread = event.get("thread_id") or thread
        elif event.get("type") == "item.completed" and item.get("type") == "agent_message":
            text = item.get("text", "")
        elif event.get("type") == "turn.completed":
            completed = True
        elif event.get("type") == "turn.failed":
            error = (event.get("error") or {}).get("message")
        elif event.get("type") == "error":
            error = event.get("message") or error
    sys.stderr.write(done.stderr[-2000:])
    if not completed or text is None:  # `error` events alone are codex's retry notices
        message = error or f"codex exited with {done.returncode} and no answer"
        return {**error_line(index, message=message), "thread": thread}
    return {"turn": index, "status": "completed", "text": text, "thread": thread}


def main() -> int:
    task = read_task()
    version = subprocess.run([str(CODEX), "--version"], capture_output=True, text=True).stdout
    hello("codex", version.strip().rsplit(" ", 1)[-1])
    if any(turn.get("stream_id") for turn in task["turns"]):
        for index in range(len(task["turns"])):
            emit({"turn": index, "status": "unsupported", "reason": "codex has no named lanes"})
        return 0
    root = Path(HOME)
    if task["parallel"]:
        homes = [root / f"codex-{i}" for i in range(len(task["turns"]))]
        for home in homes:
            configure(home, task)
        with ThreadPoolExecutor(len(homes)) as pool:
            jobs = [
                pool.submit(run, i, turn["input"], home, root, None)
                for i, (turn, home) in enumerate(zip(task["turns"], homes, strict=True))
            ]
            for job in jobs:
                emit(job.result())
        return 0
    home = root / "codex"
    configure(home, task)
    thread = None  # the codex session that later turns resume
    for index, turn in enumerate(task["turns"]):
        wait(turn)
        if turn.get("new_conversation"):  # the next task: a new codex session, no resume
            thread = None
        line = run(index, turn["input"], home, root, thread)
        thread = line.pop("thread", None) or thread
        emit(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
