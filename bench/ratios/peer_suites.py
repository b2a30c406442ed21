"""Other people's conformance suites against the reference server: a standing second opinion.

    python bench/ratios/peer_suites.py --install     # once: the suites into scratch folders
    python bench/ratios/peer_suites.py               # run all three, print counts and failures
    python bench/ratios/peer_suites.py --only llm-comply --target http://127.0.0.1:8000/v1

The suites come from their registries as released packages and run from scratch folders under
`$WSMODE_VENVS` (default `.venvs/`, git-ignored) in `peer-suites/`: llm-comply 0.5.0 (PyPI, its
own virtualenv; the Open Responses format), llmprobe 0.6.12 and CompatCanary 0.2.2 (npm). The
install holds the venvs lock (`$WSMODE_VENVS_LOCK`), as bench/ratios/open_responses.py does.
Without `--target` the reference server runs in a child process (`wsmode serve --profile zero`)
on a free loopback port. Only the Responses checks count: the suites also probe chat
completions, model lists and the like, which the reference server does not serve.

Where a suite is stricter than the live API, the reference follows the API and the failure is
printed with the reason (`KNOWN`), not hidden. Not on CI's default path (it installs packages).
The exit status is 0 when every counted check passed or is a known deviation, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.load.embedded_server import EmbeddedServer  # noqa: E402

LLM_COMPLY = "llm-comply==0.5.0"
NPM_PACKAGES = ("llmprobe@0.6.12", "compatcanary@0.2.2")
API_KEY = "sk-peer-suites"
MODEL = "wsmode-reference"
TIMEOUT_S = 900

# Failures that are the suite's rule, not the API's (the reference follows the API).
KNOWN: dict[str, str] = {
    "llmprobe:responses-sse-missing-done": (
        "the Responses API never sends `data: [DONE]` (PROTOCOL.md §3.1: the stream ends after "
        "its terminal event); the Open Responses spec does, so llmprobe asks for it"
    ),
    "llmprobe:responses-finish-present": (
        "llmprobe asks for max_output_tokens 1; the API refuses anything under 16 "
        "(integer_below_min_value, PROTOCOL.md §2.1), and so does the reference"
    ),
    "llmprobe:responses-max-tokens-unverifiable": (
        "the same max_output_tokens 1 request, refused as the API refuses it: no output to count"
    ),
    "llmprobe:responses-chain-remembers": (
        "a recall check: it needs a language model (the reference's text is filler by design; "
        "its carried context is judged by tokens, suites/test_3_continuation.py)"
    ),
}


@dataclass
class Outcome:
    suite: str
    passed: int = 0
    total: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (check id, reason)
    note: str = ""


def folder() -> Path:
    return Path(os.environ.get("WSMODE_VENVS") or ROOT / ".venvs") / "peer-suites"


def install(where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    lock = os.environ.get("WSMODE_VENVS_LOCK") or (
        "/work/venvs.lock" if os.access("/work", os.W_OK) else str(where / ".lock")
    )
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        npm = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(where / "npm")]
        subprocess.run([*npm, *NPM_PACKAGES], check=True)
        venv = where / "llm-comply"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", LLM_COMPLY], check=True)


def _run_json(command: list[str], what: str) -> Any:
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    try:
        return json.loads(done.stdout)
    except ValueError:
        sys.exit(f"{what} printed no JSON (exit {done.returncode}):\n{done.stderr[-2000:]}")


def llm_comply(where: Path, base_url: str) -> Outcome:
    tool = where / "llm-comply" / "bin" / "llm-comply"
    result = _run_json([str(tool), "run", "-u", base_url, "-k", API_KEY, "--json"], "llm-comply")
    outcome = Outcome("llm-comply 0.5.0 (Open Responses format)")
    for test in result["results"]:
        if test["status"] == "skipped":
            continue
        outcome.total += 1
        if test["status"] == "passed":
            outcome.passed += 1
        else:
            outcome.failures.append((test["id"], "; ".join(test.get("errors") or [])[:300]))
    skipped = [t["id"] for t in result["results"] if t["status"] == "skipped"]
    outcome.note = f"skipped: {', '.join(skipped)}" if skipped else ""
    return outcome


def llmprobe(where: Path, base_url: str) -> Outcome:
    tool = where / "npm" / "node_modules" / ".bin" / "llmprobe"
    root = base_url.removesuffix("/v1")
    command = [str(tool), root, "-k", API_KEY, "-m", MODEL, "--no-bench", "--no-save", "--json"]
    result = _run_json(command, "llmprobe")
    outcome = Outcome("llmprobe 0.6.12 (its responses surface)")
    for test in result["conformance"]["results"]:
        if test.get("surface") != "responses" or test["outcome"] not in ("pass", "fail"):
            continue
        outcome.total += 1
        if test["outcome"] == "pass":
            outcome.passed += 1
        for failure in test.get("failures") or []:
            outcome.failures.append((failure["id"], failure.get("message", "")[:300]))
    return outcome


def compat_canary(where: Path, base_url: str) -> Outcome:
    tool = where / "npm" / "node_modules" / ".bin" / "compatcanary"
    command = [str(tool), "scan", "--base-url", base_url, "--model", MODEL, "--api-key", API_KEY]
    result = _run_json([*command, "--format", "json", "--fail-on", "never"], "compatcanary")
    outcome = Outcome("CompatCanary 0.2.2 (its responses.* probes)")
    for probe in result["results"]:
        if not str(probe["id"]).startswith("responses."):
            continue
        outcome.total += 1
        if probe["status"] == "pass":
            outcome.passed += 1
        else:
            outcome.failures.append((probe["id"], str(probe.get("summary", ""))[:300]))
    return outcome


SUITES: dict[str, Callable[[Path, str], Outcome]] = {
    "llm-comply": llm_comply,
    "llmprobe": llmprobe,
    "compatcanary": compat_canary,
}


def report(outcome: Outcome, key: str) -> bool:
    unknown = [(cid, why) for cid, why in outcome.failures if f"{key}:{cid}" not in KNOWN]
    print(f"{outcome.suite}: {outcome.passed} of {outcome.total} passed")
    for check_id, reason in outcome.failures:
        known = KNOWN.get(f"{key}:{check_id}")
        print(f"  FAIL {check_id}: {reason}")
        if known:
            print(f"       KNOWN: {known}")
    if outcome.note:
        print(f"  {outcome.note}")
    return not unknown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--install", action="store_true", help="install the suites, then run")
    parser.add_argument("--target", help="HTTP base URL (http://HOST:PORT/v1); default: embedded")
    parser.add_argument("--only", choices=sorted(SUITES), action="append", help="repeatable")
    args = parser.parse_args()
    where = folder()
    if args.install:
        install(where)
    if not (where / "npm").is_dir() or not (where / "llm-comply").is_dir():
        sys.exit(f"no suites in {where}: run with --install first")
    good = True
    with contextlib.ExitStack() as stack:
        if args.target:
            base_url = args.target
        else:
            server = stack.enter_context(EmbeddedServer(profile="zero", api_keys=(API_KEY,)))
            base_url = server.http_url
        print(f"target {base_url}")
        for key in args.only or sorted(SUITES):
            good = report(SUITES[key](where, base_url), key) and good
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
