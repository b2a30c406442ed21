"""What `wsmode certify` prints, in the conformance tools' style (h2spec, Autobahn|Testsuite).

`wsmode certify` runs pytest with its terminal output off and this console on (handed over
with the prepared run, runner.prepare): while the cases run, one line per case that did not
pass (verdict, level, case id, the one-line reason; every case with `--verbose`) under a live
progress line (harness.progress); at the end one block per failure (its expectation, its
findings and where its wire log is), then per target the summary, and the verdict of the run
last. Cases not run because the target does not declare what they need (UNIMPLEMENTED) are
counted by reason in the summary, one line each only with `--verbose`. `pytest suites` run
directly keeps pytest's own output and the plugin's terminal summary
(certificates.documents.terminal_summary).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TextIO

import pytest

from harness.conformance.certificates.documents import case_anchor, category_table
from harness.conformance.certificates.summary import (
    counts_line,
    partial_line,
    reading_order,
    root_causes,
    stopped_line,
    target_line,
)
from harness.conformance.model.verdict import CATEGORIES, is_failure
from harness.progress import Progress, console_width, fit

VERDICT_WIDTH: Final = 13  # UNIMPLEMENTED, INFORMATIONAL
FINDINGS_PER_BLOCK: Final = 5
CAUSES_SHOWN: Final = 8


def case_line(case: Mapping[str, Any], width: int) -> str:
    """`FAIL          MUST    3.3.order.seq-from-zero  the reason`, cut to `width`."""
    reason = " ".join(str(case.get("detail") or "").split())
    head = f"{case['verdict']:<{VERDICT_WIDTH}} {case['level']:<6} {case['id']}"
    return fit(f"{head}  {reason}" if reason else head, width)


class CertifyConsole:
    """The console of one certify run (see the module docstring)."""

    def __init__(self, stream: TextIO, *, verbose: bool, strict: bool) -> None:
        self.stream = stream
        self.verbose = verbose
        self.strict = strict
        self.width = console_width(stream)
        self.progress: Progress | None = None
        self.done = 0
        self.failed = 0
        self.current_target: str | None = None
        self.targets = 0

    # -- while the cases run -------------------------------------------------------------------
    def start(self, cases: int, targets: int) -> None:
        self.targets = targets
        per = f" on each of {targets} targets" if targets > 1 else ""
        total = cases
        self.say(f"wsmode certify: {cases // max(targets, 1)} cases{per}")
        self.progress = Progress("certify", total=total, unit="cases", stream=self.stream)

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress.note(text)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def case(self, target: str, case: Mapping[str, Any]) -> None:
        self.done += 1
        if is_failure(str(case["verdict"]), strict=self.strict):
            self.failed += 1
        if self.targets > 1 and target != self.current_target:
            self.current_target = target
            self.say(f"-- {target}")
        shown = self.verbose or case["verdict"] not in ("PASS", "UNIMPLEMENTED")
        if shown:
            self.say(case_line(case, self.width))
        if self.progress is not None:
            self.progress.update(self.done, failed=self.failed)

    def collection_error(self, where: str, text: str) -> None:
        self.say(f"cannot load {where}:")
        for line in text.strip().splitlines()[-8:]:
            self.say(f"  {fit(line, self.width - 2)}")

    # -- at the end --------------------------------------------------------------------------------
    def finish(
        self,
        written: Sequence[tuple[Mapping[str, Any], Mapping[str, Path]]],
        matrix: Mapping[str, Path],
        matrix_lines: str,
    ) -> None:
        if self.progress is not None:
            self.progress.close()
            self.progress = None
        lines: list[str] = []
        for result, paths in written:
            lines += self.failure_blocks(result, paths)
        for result, paths in written:
            lines += ["", *self.summary(result, paths)]
        if len(written) > 1:
            lines += ["", "cases × implementations (rows where a target did not PASS):"]
            lines += matrix_lines.splitlines()
            lines += [f"  {kind:<6}{shown(path)}" for kind, path in matrix.items()]
        lines += ["", self.verdict_line(written)]
        self.stream.write("\n".join(out for line in lines for out in wrap(line, self.width)))
        self.stream.write("\n")
        self.stream.flush()

    def failure_blocks(self, result: Mapping[str, Any], paths: Mapping[str, Path]) -> list[str]:
        """One block per failed case: expectation, findings, where its wire log is."""
        cases = [
            c
            for c in reading_order(result["certify"]["cases"])
            if is_failure(str(c["verdict"]), strict=self.strict) and not c.get("not_run")
        ]
        html = paths.get("html")
        lines: list[str] = []
        for case in cases:
            title = CATEGORIES.get(str(case.get("category")), str(case.get("category", "")))
            lines += ["", f"{case['verdict']} {case['id']} ({case['level']}, {title})"]
            lines.append(f"  expected: {case.get('title', '')}")
            findings = Counter(
                (str(f.get("rule_id")), " ".join(str(f.get("message", "")).split()))
                for f in case.get("findings") or []
            )
            for (rule_id, message), times in list(findings.items())[:FINDINGS_PER_BLOCK]:
                lines.append(
                    f"  [{rule_id}] {message}" + (f" ({times} times)" if times > 1 else "")
                )
            if len(findings) > FINDINGS_PER_BLOCK:
                lines.append(f"  ... and {len(findings) - FINDINGS_PER_BLOCK} more findings")
            if not findings and case.get("detail"):
                lines.append(f"  {' '.join(str(case['detail']).split())}")
            if html is not None:
                lines.append(f"  wire log: {shown(html)}#{case_anchor(str(case['id']))}")
        if lines:
            lines[0:1] = ["", f"Failures of {result['target']['name']}:"]
        return lines

    def summary(self, result: Mapping[str, Any], paths: Mapping[str, Path]) -> list[str]:
        certify = result["certify"]
        cases = certify["cases"]
        verdicts = Counter(str(c["verdict"]) for c in cases)
        lines = [
            f"wsmode certify: {target_line(result)}",
            f"  {counts_line(cases)}" + ("  [strict]" if self.strict else ""),
            "  " + "  ".join(f"{v}={n}" for v, n in sorted(verdicts.items())),
        ]
        for extra in (stopped_line(result), partial_line(result)):
            if extra:
                lines.append(f"  {extra}")
        lines += self.unimplemented(cases)
        lines += ["", *category_table(cases)]
        causes = root_causes(cases)
        if causes:
            lines += ["", "  findings by root cause (cases: rule, finding):"]
            for cause in causes[:CAUSES_SHOWN]:
                message = " ".join(cause.message.split())
                lines.append(f"  {len(cause.cases):>4}  [{cause.rule_id}] {message}")
            if len(causes) > CAUSES_SHOWN:
                lines.append(f"        ... and {len(causes) - CAUSES_SHOWN} more (report.md)")
        if paths:
            lines.append("")
            lines += [f"  {kind:<6}{shown(path)}" for kind, path in paths.items()]
        return lines

    def unimplemented(self, cases: Sequence[Mapping[str, Any]]) -> list[str]:
        """Cases not run, by reason (each one's line only with --verbose)."""
        reasons = Counter(
            " ".join(str(c.get("detail") or "not declared").split())
            for c in cases
            if c["verdict"] == "UNIMPLEMENTED"
        )
        if not reasons:
            return []
        lines = [f"  not run (UNIMPLEMENTED), by reason ({sum(reasons.values())} cases):"]
        lines += [f"  {n:>4}  {reason}" for reason, n in reasons.most_common()]
        return lines

    def verdict_line(self, written: Sequence[tuple[Mapping[str, Any], Mapping[str, Path]]]) -> str:
        failed = [
            c
            for result, _ in written
            for c in result["certify"]["cases"]
            if is_failure(str(c["verdict"]), strict=self.strict)
        ]
        if not written:
            return "certify: no case ran"
        if failed:
            levels = Counter(str(c["level"]) for c in failed)
            what = ", ".join(f"{n} {level}" for level, n in sorted(levels.items()))
            noun = "case" if len(failed) == 1 else "cases"
            return f"certify: FAIL ({what} {noun} failed; exit status 1)"
        partial = any(result["certify"].get("partial") for result, _ in written)
        return "certify: PASS" + (" (partial: see above)" if partial else "")


def wrap(line: str, width: int) -> list[str]:
    """A line as lines within `width`, continuations indented two more than the line."""
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()))
    return textwrap.wrap(
        line.strip(),
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_on_hyphens=False,
        break_long_words=False,  # a path stays whole
    ) or [line]


def shown(path: Path) -> str:
    """A path as the console shows it: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class CollectionErrors:
    """With the console on (pytest's terminal off): a suite file that cannot be imported is
    said on the console."""

    def __init__(self, console: CertifyConsole) -> None:
        self.console = console

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.console.collection_error(report.nodeid or "the suites", str(report.longrepr))
