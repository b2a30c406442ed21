"""`wsmode certify-client` as a product: run the cases, print a line per case, write the
certificate (the servers' formats: report.json/html/md, junit.xml) and the client matrix."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from harness.conformance.certificates.documents import run_directory, write_run
from harness.conformance.certificates.summary import counts_line
from harness.conformance.clients.catalogue import CASES, ClientCase
from harness.conformance.clients.client_config import Timings
from harness.conformance.clients.client_runner import (
    CaseResult,
    ClientUnderTest,
    build_result,
    run_cases,
)
from harness.conformance.clients.matrix import write_client_matrix
from harness.conformance.clients.severity import CLIENT_RULES
from harness.conformance.model.verdict import is_failure
from harness.progress import MAX_COLUMNS
from harness.results.schema import utc_now_iso


def _wrapped(text: str, indent: int) -> list[str]:
    """`text` as lines of at most MAX_COLUMNS, each indented by `indent` columns."""
    pad = " " * indent
    return textwrap.wrap(text, MAX_COLUMNS, initial_indent=pad, subsequent_indent=pad)


def case_list() -> str:
    lines = [f"{len(CASES)} client cases (wsmode certify-client):", ""]
    for case in CASES:
        lines.append(f"  {case.level:<7}{case.id}")
        lines.extend(_wrapped(case.title, 9))
        lines.extend(_wrapped(f"sources: {'; '.join(case.sources)}", 9))
    lines += ["", "Rules, each graded by the consequence of breaking it (source of the level):", ""]
    for rule_id, rule in CLIENT_RULES.items():
        lines.append(f"  {rule.level:<7}{rule_id} ({rule.consequence})")
        lines.extend(_wrapped(rule.text, 9))
        lines.extend(_wrapped(f"level: {rule.source}", 9))
    return "\n".join(lines)


def _line(result: CaseResult) -> str:
    text = f"  {result.verdict!s:<14}{result.case.level:<7}{result.case.id}"
    text += f"  ({result.duration_ms / 1000:.1f} s)"
    detail = ""
    if result.outcome.findings:
        first = result.outcome.findings[0]
        detail = f"[{first.rule_id}] {first.message[:140]}"
    elif result.outcome.unimplemented:
        detail = result.outcome.unimplemented[:140]
    elif result.outcome.harness_error:
        detail = result.outcome.harness_error[:140]
    return "\n".join([text, *_wrapped(detail, 23)])


def certify(
    client: ClientUnderTest,
    cases: Sequence[ClientCase],
    timings: Timings,
    *,
    jobs: int = 1,
    strict: bool = False,
    results_root: Path | None = Path("results"),
    label: str = "certify-client",
    full_wire_log: bool = False,
) -> int:
    """Run, report, and return the exit status (0 clean, 1 on a FAIL or ERROR)."""
    started_at = utc_now_iso()
    print(f"wsmode certify-client: {client.name} ({len(cases)} cases, {jobs} at a time)")
    sys.stdout.flush()

    def show(result: CaseResult) -> None:
        print(_line(result), flush=True)

    results = asyncio.run(run_cases(client, cases, timings, jobs=jobs, on_result=show))
    result = build_result(
        client, results, timings, label=label, started_at=started_at, full_wire_log=full_wire_log
    )
    version = result["target"]["version"]
    print(f"\n  {client.name} {version or ''}: {counts_line(result['certify']['cases'])}")
    counts = result["certify"]["summary"]["counts"]
    print("  " + "  ".join(f"{verdict}={n}" for verdict, n in counts.items() if n))
    if results_root is not None:
        directory = run_directory(results_root, client.name, started_at, area="clients")
        paths = write_run(directory, result, strict=strict)
        matrix = write_client_matrix(results_root / "clients")
        for kind, path in {**paths, **{f"matrix {k}": v for k, v in matrix.items()}}.items():
            print(f"  {kind:<12}{path}")
    failed = any(is_failure(r.verdict, strict=strict) for r in results)
    return 1 if failed else 0


def print_matrix(root: Path) -> None:
    paths = write_client_matrix(root)
    if not paths:
        print(f"no client certificates under {root}")
        return
    print(paths["md"].read_text(encoding="utf-8"))
    for kind, path in paths.items():
        print(f"  {kind:<6}{path}")
