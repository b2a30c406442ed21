"""Write results/THIRD-PARTY.md from the latest committed certificate of each implementation.

    python scripts/third-party/table.py results/certify litellm-proxy=1.110.2 agentic-api=0.9.0

One table row per implementation (version, upstream, MUST / SHOULD passed of those run), then
each deviation in a line: the root causes of its FAIL and NON-STRICT cases, as the certificate
groups them. Run by scripts/certify-third-party after the certificates are written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness.conformance.certificates.summary import level_count, root_causes
from harness.results.schema import load_result

HEADER = """# Third-party implementations

Released implementations of the Responses API's WebSocket mode, certified by
`scripts/certify-third-party` on loopback, each in front of `wsmode serve` (the reference server,
profile zero) as its upstream, with the committed profiles `suites/targets/<name>.toml`.
Counts are of the cases run: a case the profile does not declare the capability for is not
applicable and left out (shown in brackets). The certificates (report.md, report.html,
report.json, junit.xml) are under `results/certify/<name>/`.

Not certified: vLLM's WebSocket mode (vllm-project/vllm#35492) is an unmerged pull request, not a
release. LiteLLM's `proxy` extra cannot install from the registry as pinned (its
`litellm-proxy-extras==0.4.114.post1` and `litellm-enterprise==0.1.83.post1` are not published):
the script installs `litellm` and the extra's other requirements by hand. LiteLLM is configured
with a `hosted_vllm/` model, so it serves WebSocket mode with its own handler over HTTP streaming
to the upstream: its native `openai/` WebSocket path cannot reach a `ws://` upstream at all (it
passes an SSL context for a `ws://` URI and closes every socket with 1011).
"""


KEPT_MARK = "<!-- kept: written by hand, not by this script -->"


def latest(directory: Path) -> dict[str, Any] | None:
    reports = sorted(directory.glob("*/report.json"))
    return load_result(reports[-1]) if reports else None


def row(name: str, version: str, result: dict[str, Any]) -> str:
    cases = result["certify"]["cases"]
    counts = []
    for level in ("MUST", "SHOULD"):
        count = level_count(cases, level)
        counts.append(f"{count.passed} / {count.run} ({count.not_applicable})")
    upstream = result.get("config", {}).get("upstream", "")
    return f"| {name} | {version} | {upstream} | {counts[0]} | {counts[1]} |"


def deviations(name: str, result: dict[str, Any]) -> list[str]:
    lines = [f"### {name}", ""]
    by_level: dict[str, str] = {}
    for case in result["certify"]["cases"]:
        by_level[case["id"]] = f"{case['verdict']} {case['level']}"
    for cause in root_causes(result["certify"]["cases"]):
        where = ", ".join(f"`{c}`" for c in cause.cases)
        verdicts = sorted({by_level[c] for c in cause.cases})
        message = cause.message.replace("\n", " ")
        if len(message) > 220:
            message = message[:219] + "…"
        lines.append(f"- [{', '.join(verdicts)}] `{cause.rule_id}`: {message} ({where})")
    return [*lines, ""]


def main(argv: list[str]) -> int:
    root = Path(argv[1])
    implementations = [arg.split("=", 1) for arg in argv[2:]]
    table = [
        "| implementation | version | upstream | MUST passed / run (n/a) "
        "| SHOULD passed / run (n/a) |",
        "|---|---|---|---|---|",
    ]
    sections: list[str] = ["## Deviations", ""]
    for name, version in implementations:
        result = latest(root / name)
        if result is None:
            table.append(f"| {name} | {version} | not run | | |")
            continue
        table.append(row(name, version, result))
        sections += deviations(name, result)
    text = "\n".join([HEADER, *table, "", *sections])
    out = Path("results/THIRD-PARTY.md")
    # what was written by hand below the marker (findings of other runs) is kept
    old = out.read_text(encoding="utf-8") if out.exists() else ""
    if KEPT_MARK in old:
        text = text.rstrip() + "\n\n" + old[old.index(KEPT_MARK) :]
    out.write_text(text.rstrip() + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
