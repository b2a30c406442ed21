"""The Open Responses compliance suite (17 tests, 7 over WebSocket) against a target.

A peer's suite, written by others, as a second opinion on the reference server (or any target).
Point it at a checkout of github.com/openresponses/openresponses (PROTOCOL.md §11: upstream main
with PR #77, e.g. the mirror's commit 92c12d96); the suite runs with Bun and needs only `zod`:

    python bench/ratios/open_responses.py --suite ~/src/openresponses --install  # once: bun + zod
    python bench/ratios/open_responses.py --suite ~/src/openresponses    # the reference server
    python bench/ratios/open_responses.py --suite ~/src/openresponses \\
        --target http://127.0.0.1:8000/v1 --api-key sk-... --model gpt-5-mini

`--install` puts the npm packages `bun` and `zod@3.25.76` into `open-responses/` under
`$WSMODE_VENVS` (default `.venvs/`, git-ignored), holding the venvs lock while it installs
(`$WSMODE_VENVS_LOCK`, as scripts/third-party/lib.sh chooses it). The checkout is never written
to: its `bin/` and `src/` are copied into a temporary directory beside a link to those packages,
and the suite runs there: `bun bin/compliance-test.ts -u URL -k KEY -m MODEL --json`.

Without `--target` the reference server runs in a child process (`wsmode serve --profile zero`)
on a free loopback port. The exit status is 0 when every test passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.load.embedded_server import EmbeddedServer  # noqa: E402

PACKAGES = ("bun", "zod@3.25.76")
DEFAULT_KEY = "sk-open-responses"


def venvs() -> Path:
    return Path(os.environ.get("WSMODE_VENVS") or ROOT / ".venvs")


def install(folder: Path) -> None:
    """npm-install the suite's runtime (bun) and its one dependency (zod) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = os.environ.get("WSMODE_VENVS_LOCK") or (
        "/work/venvs.lock" if os.access("/work", os.W_OK) else str(venvs() / ".lock")
    )
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        command = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder), *PACKAGES]
        subprocess.run(command, check=True)


def bun_in(folder: Path) -> Path:
    bun = folder / "node_modules" / ".bin" / "bun"
    if not bun.exists():
        sys.exit(f"no bun in {folder}: run with --install first (npm install {' '.join(PACKAGES)})")
    return bun


@contextlib.contextmanager
def suite_copy(checkout: Path, node_modules: Path) -> Iterator[Path]:
    """`bin/` and `src/` of the checkout in a temporary directory, beside `node_modules`."""
    if not (checkout / "bin" / "compliance-test.ts").exists():
        sys.exit(f"{checkout} is not an openresponses checkout (no bin/compliance-test.ts)")
    with tempfile.TemporaryDirectory(prefix="open-responses-") as tmp:
        work = Path(tmp)
        for part in ("bin", "src"):
            shutil.copytree(checkout / part, work / part)
        (work / "node_modules").symlink_to(node_modules)
        yield work


def suite_commit(checkout: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short=8", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else "unknown (not a git checkout)"


def run_suite(bun: Path, work: Path, url: str, key: str, model: str, only: str) -> dict[str, Any]:
    command = [str(bun), "bin/compliance-test.ts", "-u", url, "-k", key, "-m", model, "--json"]
    if only:
        command += ["--filter", only]
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        sys.exit(f"the suite printed no JSON (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return result


def report(result: dict[str, Any], where: str) -> bool:
    summary = result["summary"]
    for test in sorted(result["results"], key=lambda r: (r["status"] == "passed", r["id"])):
        print(f"  {test['status']:<7} {test['id']}")
        for error in (test.get("errors") or [])[:3] if test["status"] != "passed" else []:
            print(f"            {error[:300]}")
    print(
        f"Open Responses compliance against {where}: {summary['passed']} of {summary['total']} "
        f"passed, {summary['failed']} failed, {summary['skipped']} skipped"
    )
    return bool(summary["failed"] == 0 and summary["passed"] == summary["total"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, required=True, help="an openresponses checkout")
    parser.add_argument("--target", help="HTTP base URL (http://HOST:PORT/v1); default: embedded")
    parser.add_argument("--api-key", default=DEFAULT_KEY)
    parser.add_argument("--model", default="gpt-4o-mini", help="the model every test names")
    parser.add_argument("--filter", default="", help="test ids, comma-separated")
    parser.add_argument("--install", action="store_true", help=f"npm install {' '.join(PACKAGES)}")
    parser.add_argument("--json", type=Path, help="also write the suite's JSON result here")
    args = parser.parse_args()
    folder = venvs() / "open-responses"
    if args.install:
        install(folder)
    bun = bun_in(folder)
    bun_version = subprocess.run([str(bun), "--version"], capture_output=True, text=True).stdout
    commit = suite_commit(args.suite)
    with contextlib.ExitStack() as stack:
        if args.target:
            url, where = args.target, args.target
        else:
            server = stack.enter_context(EmbeddedServer(profile="zero", api_keys=(args.api_key,)))
            url, where = server.http_url, "the reference server (wsmode serve --profile zero)"
        work = stack.enter_context(suite_copy(args.suite.resolve(), folder / "node_modules"))
        print(f"suite {commit}, bun {bun_version.strip()}, target {url}")
        result = run_suite(bun, work, url, args.api_key, args.model, args.filter)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1))
    return 0 if report(result, where) else 1


if __name__ == "__main__":
    sys.exit(main())
