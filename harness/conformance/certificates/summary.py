"""Reading a certificate: counts of the cases run, FAILs first, findings by root cause, and the
Markdown certificate (report.md). Pure functions of a certify result (report.json's shape).

* **Counts of those run**: an UNIMPLEMENTED case was not run (the target does not declare what
  it needs), so it is out of the denominator: "MUST 51 of 75 run (16 not applicable)".
* **Root causes**: one broken behaviour (a model the target does not serve, a gateway that drops
  `metadata`) fails many cases with the same finding. Findings are grouped by rule and by their
  message with ids and numbers masked, so the reader sees each cause once, with its cases.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

# The order a reader wants: what failed first, what passed last.
READING_ORDER: Final = (
    "FAIL",
    "ERROR",
    "NON-STRICT",
    "PRECONDITION",
    "INFORMATIONAL",
    "UNIMPLEMENTED",
    "PASS",
)
_MASKS: Final = (
    (re.compile(r"\b(resp|msg|fc|rs|call|item)_[A-Za-z0-9_-]+"), r"\1_…"),
    (re.compile(r"\b\d+(\.\d+)?\b"), "#"),
    (re.compile(r"'[^']{0,80}'|\"[^\"]{0,80}\""), "'…'"),
)


def reading_order(cases: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Cases with FAILs first, then ERROR, NON-STRICT, ..., PASS (stable within a verdict)."""
    order = {v: i for i, v in enumerate(READING_ORDER)}
    return sorted(cases, key=lambda c: order.get(str(c.get("verdict")), len(order)))


@dataclass(frozen=True, slots=True)
class LevelCount:
    passed: int
    run: int
    not_applicable: int

    def text(self, level: str) -> str:
        extra = f" ({self.not_applicable} not applicable)" if self.not_applicable else ""
        return f"{level} {self.passed} of {self.run} run{extra}"


def level_count(cases: Iterable[Mapping[str, Any]], level: str) -> LevelCount:
    """Passed and run cases of one level; UNIMPLEMENTED ones are not applicable, not run."""
    of_level = [c for c in cases if c.get("level") == level]
    skipped = sum(1 for c in of_level if c.get("verdict") == "UNIMPLEMENTED")
    passed = sum(1 for c in of_level if c.get("verdict") == "PASS")
    return LevelCount(passed, len(of_level) - skipped, skipped)


def counts_line(cases: Sequence[Mapping[str, Any]]) -> str:
    """`MUST 51 of 75 run (16 not applicable), SHOULD 9 of 12 run (3 not applicable)`."""
    return ", ".join(level_count(cases, level).text(level) for level in ("MUST", "SHOULD"))


def stopped_line(result: Mapping[str, Any]) -> str | None:
    """`target stopped answering after case X; N cases not run`, when the run ended early."""
    stopped = result.get("certify", {}).get("stopped")
    if not isinstance(stopped, Mapping):
        return None
    return (
        f"target stopped answering after case {stopped.get('after')}; "
        f"{stopped.get('not_run', 0)} cases not run ({stopped.get('reason', '')})"
    )


def partial_of(cases: Sequence[Mapping[str, Any]], *, profile_given: bool) -> dict[str, Any] | None:
    """How much of the MUST level a run could not check (report.json's `certify.partial`), or
    None when every MUST case ran: the MUST and SHOULD cases not run because the target does not
    declare what they need (UNIMPLEMENTED), by reason, and whether a target profile was given."""
    not_run = [c for c in cases if c.get("verdict") == "UNIMPLEMENTED"]
    must = [c for c in not_run if c.get("level") == "MUST"]
    if not must:
        return None
    reasons = Counter(" ".join(str(c.get("detail") or "not declared").split()) for c in must)
    return {
        "must_not_run": len(must),
        "should_not_run": sum(1 for c in not_run if c.get("level") == "SHOULD"),
        "profile_given": profile_given,
        "reasons": dict(reasons.most_common()),
    }


def partial_line(result: Mapping[str, Any]) -> str | None:
    """`partial certificate: N MUST cases not run (why)`, when the run left MUST cases out."""
    partial = result.get("certify", {}).get("partial")
    if not isinstance(partial, Mapping):
        return None
    why = (
        "no target profile given, so the target declares no capability: name one with "
        "--target-profile (wsmode certify --profiles lists the bundled ones)"
        if not partial.get("profile_given")
        else "the target profile does not declare what they need"
    )
    return f"partial certificate: {partial.get('must_not_run')} MUST cases not run ({why})"


def mask(message: str) -> str:
    """A finding's message with ids, numbers and short quoted values masked."""
    for pattern, replacement in _MASKS:
        message = pattern.sub(replacement, message)
    return message


@dataclass
class RootCause:
    rule_id: str
    level: str
    message: str  # the first message seen, unmasked: what a vendor reads
    cases: list[str] = field(default_factory=list)


def root_causes(cases: Iterable[Mapping[str, Any]]) -> list[RootCause]:
    """The findings of FAIL / NON-STRICT / ERROR cases grouped by (rule, masked message), the
    cause shared by most cases first. A not-run case counts under its stop reason once."""
    groups: dict[tuple[str, str], RootCause] = {}
    for case in cases:
        if case.get("verdict") not in ("FAIL", "NON-STRICT", "ERROR"):
            continue
        findings = case.get("findings") or []
        if not findings and case.get("detail"):
            findings = [{"rule_id": "harness", "level": "-", "message": case["detail"]}]
        for finding in findings:
            rule_id, message = str(finding.get("rule_id")), str(finding.get("message"))
            key = (rule_id, "" if rule_id == "transport.stopped" else mask(message))
            cause = groups.setdefault(
                key, RootCause(rule_id, str(finding.get("level", "")), message)
            )
            if case["id"] not in cause.cases:
                cause.cases.append(str(case["id"]))
    return sorted(groups.values(), key=lambda c: -len(c.cases))


_VERSION_HEADER: Final = re.compile(r"^(server|x-[a-z0-9-]*version):\s*(.+)$", re.I | re.M)


def offered_version(cases: Iterable[Mapping[str, Any]]) -> str | None:
    """The version string the target offers in its upgrade or HTTP response headers
    (`Server`, `x-...-version`), e.g. `x-litellm-version: 1.110.2`; None when it offers none."""
    for case in cases:
        for entry in case.get("wire_log") or []:
            if entry.get("dir") != "recv" or entry.get("kind") not in ("open", "http", "sse"):
                continue
            match = _VERSION_HEADER.search(str(entry.get("data", "")))
            if match:
                return f"{match.group(1).lower()}: {match.group(2).strip()}"
    return None


def target_line(result: Mapping[str, Any]) -> str:
    """Who was certified: name, URL, version string, declared upstream and the model sent."""
    target = result.get("target", {})
    config = result.get("config", {})
    parts = [f"{target.get('name')} ({target.get('url')})"]
    if target.get("version"):
        parts.append(f"version {target['version']}")
    if config.get("upstream"):
        parts.append(f"upstream: {config['upstream']}")
    if config.get("model"):
        parts.append(f"model {config['model']}")
    return " · ".join(parts)


def render_markdown(result: Mapping[str, Any], *, strict: bool, causes: int = 30) -> str:
    """report.md: the certificate as Markdown, FAILs first and findings by root cause."""
    cases: list[Mapping[str, Any]] = result["certify"]["cases"]
    lines = [
        f"# wsmode certify: {result['target']['name']}",
        "",
        f"{target_line(result)}  ",
        f"{result['started_at']} → {result['ended_at']} · wsmode {result['harness']['version']}"
        + (" · strict" if strict else ""),
        "",
        f"**{counts_line(cases)}**",
        "",
    ]
    for note in (stopped_line(result), partial_line(result)):
        if note:
            lines += [f"> {note}", ""]
    found = root_causes(cases)
    if found:
        lines += ["## Findings by root cause", "", "| cases | rule | level | finding |"]
        lines.append("|---:|---|---|---|")
        for cause in found[:causes]:
            shown = ", ".join(f"`{c}`" for c in cause.cases[:6])
            more = f" and {len(cause.cases) - 6} more" if len(cause.cases) > 6 else ""
            message = cause.message.replace("|", "\\|").replace("\n", " ")
            lines.append(
                f"| {len(cause.cases)} | `{cause.rule_id}` | {cause.level} | {message} "
                f"({shown}{more}) |"
            )
        if len(found) > causes:
            lines.append(f"| | | | … and {len(found) - causes} more causes |")
        lines.append("")
    lines += ["## Cases", "", "| verdict | level | case | detail |", "|---|---|---|---|"]
    for case in reading_order(cases):
        detail = str(case.get("detail", "")).replace("|", "\\|").replace("\n", " ")
        if len(detail) > 200:
            detail = detail[:199] + "…"
        lines.append(f"| {case['verdict']} | {case['level']} | `{case['id']}` | {detail} |")
    return "\n".join(lines) + "\n"
