"""The kill matrix: the suites against the reference server with each opt-in fault.

`EXPECTED` maps every fault of `reference_server/hooks/faults.py` to the cases that must FAIL when
it is on (the cases written to catch it). `run_matrix` certifies the clean server and every faulty
one, in parallel subprocesses (several embedded targets per `pytest suites` run), and
`check_matrix` lists what does not hold: a clean MUST/SHOULD case not passing, an expected
catcher not failing, a fault caught by nothing, and for `EXACT_FAULTS` any other case failing.
tests/conformance/test_kill_matrix.py asserts it is empty;
`python -m harness.conformance.commands kill-matrix --write-kill-matrix suites/README.md`
regenerates the README table from the same run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from harness.bundled import suites_dir
from harness.results.schema import load_result

SUITES_DIR: Final = suites_dir()
CLEAN: Final = "reference"
START_MARK: Final = "<!-- kill-matrix:start -->"
END_MARK: Final = "<!-- kill-matrix:end -->"

# Clean-server cases allowed to be UNIMPLEMENTED: the reference profile truthfully lacks what they
# need (every other MUST/SHOULD case must PASS on the clean server).
CLEAN_UNIMPLEMENTED: Final[dict[str, str]] = {
    "2.1.continuation.recall": "the reference server has no language model to recall with",
}

# fault -> the cases written to catch it (each must FAIL with the fault on).
EXPECTED: Final[dict[str, tuple[str, ...]]] = {
    "skip-sequence-number": ("3.3.order.seq-contiguous", "3.1.sse.grammar-text"),
    "missing-created": (
        "3.3.lifecycle.created-first",
        "3.3.sdk.accumulator-text",
        "3.3.order.seq-from-zero",
    ),
    "delta-after-done": ("3.3.lifecycle.text", "3.1.sse.grammar-text"),
    "done-text-mismatch": ("3.3.text.deltas-match-done", "3.1.sse.grammar-text"),
    "double-terminal": ("3.3.terminal.exactly-one",),
    "response-id-changes": ("3.3.response.id-stable", "3.3.sdk.accumulator-text"),
    "missing-usage": ("3.4.usage.present",),
    # A flat error is NON-STRICT by itself (openai-node declares it; event.flat_error): what
    # FAILs is a client reading the nested payload's type and code.
    "flat-error": ("4.2.not-found.fields", "5.3.lifetime.limit-reached"),
    "wrong-output-index": ("3.3.items.index-announced", "3.3.lifecycle.text"),
    "item-done-mismatch": ("3.3.items.done-matches-stream",),
    "close-on-request-error": (
        "5.1.store-false.other-connection",
        "4.3.invalid-input.socket-open",
        "2.1.function-call.unknown-call-id",
    ),
    "interleave-queued": ("5.2.queue.fifo", "5.2.queue.mid-stream", "5.2.lanes.fifo"),
    "shared-cache": ("5.1.store-false.other-connection", "5.2.lanes.fork-error-keeps-parent"),
    "no-failure-eviction": (
        "5.1.cache.failed-continuation-evicts",
        "5.1.cache.every-refusal-evicts",
    ),
    "cache-fifo": ("5.1.cache.lru-order",),
    "store-false-persisted": (
        "5.1.store-false.after-reconnect",
        "5.1.cache.older-miss",
    ),
    "ignore-lifetime": ("5.3.lifetime.limit-reached",),
    "inherit-instructions": ("2.1.instructions.not-inherited",),
    "reject-stream-field": ("2.1.request.stream-true-accepted",),
    "accept-background": ("2.1.request.background-rejected",),
    "drop-queued": ("5.2.queue.fifo", "5.2.queue.no-silent-drop", "5.2.lanes.fifo"),
    "completed-with-incomplete": (
        "3.3.terminal.incomplete-max-output-tokens",
        "3.3.terminal.incomplete-content-filter",
    ),
    "missing-response-fields": ("3.4.response.member-values",),
    "drop-context": (
        "2.1.continuation.new-items-only",
        "2.1.continuation.chain",
        "2.1.instructions.not-inherited",
        "5.1.store-true.other-connection",
        "5.1.store-true.after-reconnect",
        "5.1.store-true.http-created",
        "5.1.store-true.http-continuation",
    ),
    "binary-crash": ("4.3.binary.refused",),
    "ignore-named-tool-choice": ("2.1.function-call.named",),
    # Field values (issue 41): each caught by the case that brings the target into the situation.
    "zero-output-tokens": ("3.5.usage.output-streamed",),
    "output-over-cap": ("3.5.usage.output-cap",),
    "details-over-total": ("3.5.usage.output-streamed", "3.5.usage.output-cap"),
    "relist-parent-output": ("3.5.output.own-items",),  # SHOULD: caught as NON-STRICT
    "created-at-ms": ("3.5.time.unix-seconds",),
    "echo-last-response": ("3.5.echo.previous-response-id",),
    "stream-id-of-last-create": ("3.5.lanes.own-stream-id",),
    "queue-steers": ("2.2.steer.in-flight",),  # SHOULD: caught as NON-STRICT
    # The deadlock an implementer reported: the inject waits behind the response waiting for it.
    "queue-injects": (
        "2.2.inject.waiting",
        "2.2.inject.atomic",
        "2.2.inject.unknown-target",
        "2.2.agent.tagged",
    ),
}

# Faults that must fail *exactly* their expected cases: the behaviour is judged by the cases about
# it alone (a missing precondition elsewhere is PRECONDITION, never a FAIL of another rule).
EXACT_FAULTS: Final = frozenset(
    {
        "completed-with-incomplete",
        "missing-response-fields",
        "drop-context",
        "binary-crash",
        "ignore-named-tool-choice",
        "queue-injects",
        "zero-output-tokens",
        "output-over-cap",
        "details-over-total",
        "relist-parent-output",
        "created-at-ms",
        "queue-steers",
    }
)


@dataclass(frozen=True)
class MatrixRun:
    results: dict[str, dict[str, Any]]  # target name ("reference", "reference+<fault>") -> result
    faults: tuple[str, ...]

    def failing(self, fault: str) -> list[str]:
        result = self.results.get(f"{CLEAN}+{fault}")
        if result is None:
            return []
        return [c["id"] for c in result["certify"]["cases"] if c["verdict"] == "FAIL"]

    def caught(self, fault: str) -> list[str]:
        """The cases that judged the fault a breach at their level: FAIL, or NON-STRICT for a
        SHOULD case (its level's verdict for a breach, issue 41's inferred rules)."""
        result = self.results.get(f"{CLEAN}+{fault}")
        if result is None:
            return []
        return [
            c["id"]
            for c in result["certify"]["cases"]
            if c["verdict"] == "FAIL" or (c["verdict"] == "NON-STRICT" and c["level"] == "SHOULD")
        ]


def all_faults() -> dict[str, str]:
    from reference_server.hooks.faults import ALL_FAULTS

    return dict(ALL_FAULTS)


def _groups(targets: Sequence[str], jobs: int) -> list[list[str]]:
    groups: list[list[str]] = [[] for _ in range(max(1, min(jobs, len(targets))))]
    for i, target in enumerate(targets):
        groups[i % len(groups)].append(target)
    return groups


def run_matrix(
    faults: Sequence[str] | None = None,
    *,
    jobs: int | None = None,
    # what a healthy server never reaches: at load ~20 the in-process clean server went 3 s
    # without an event (a false FAIL); the ~15 cases a fault stalls wait it out
    event_timeout_s: float = 10.0,
    timeout_s: float = 600.0,
    workdir: Path | None = None,
    suites_dir: Path = SUITES_DIR,
) -> MatrixRun:
    """Certify the clean reference server and one faulty server per fault, in subprocesses."""
    chosen = tuple(faults if faults is not None else all_faults())
    targets = ["embedded", *(f"embedded:{f}" for f in chosen)]
    jobs = jobs or max(2, (os.cpu_count() or 2))
    base = workdir or Path(tempfile.mkdtemp(prefix="wsmode-kill-matrix-"))
    processes: list[tuple[subprocess.Popen[bytes], Path]] = []
    for index, group in enumerate(_groups(targets, jobs)):
        out = base / f"job{index}"
        out.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "pytest",
            str(suites_dir),
            "-q",
            "-p",
            "no:cacheprovider",
            "--wsmode-results",
            str(out),
            "--wsmode-event-timeout",
            str(event_timeout_s),
        ]
        for target in group:
            command += ["--wsmode-target", target]
        log = (out / "pytest.log").open("wb")
        processes.append(
            (
                subprocess.Popen(
                    command, cwd=suites_dir.parent, stdout=log, stderr=subprocess.STDOUT
                ),
                out,
            )
        )
    results: dict[str, dict[str, Any]] = {}
    for process, out in processes:
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise RuntimeError(
                f"kill matrix job in {out} did not finish in {timeout_s} s"
            ) from None
        for path in sorted(out.glob("certify/*/*/report.json")):
            result = load_result(path)
            results[result["target"]["name"]] = result
    return MatrixRun(results, chosen)


def check_matrix(run: MatrixRun, expected: Mapping[str, Sequence[str]] = EXPECTED) -> list[str]:
    """Everything that does not hold; empty when the suites have teeth."""
    problems: list[str] = []
    clean = run.results.get(CLEAN)
    if clean is None:
        problems.append("the clean reference server produced no report")
    else:
        for case in clean["certify"]["cases"]:
            allowed = ("PASS", "UNIMPLEMENTED") if case["id"] in CLEAN_UNIMPLEMENTED else ("PASS",)
            if case["level"] in ("MUST", "SHOULD") and case["verdict"] not in allowed:
                problems.append(f"clean: {case['id']} is {case['verdict']}: {case['detail']}")
    for fault in run.faults:
        if f"{CLEAN}+{fault}" not in run.results:
            problems.append(f"{fault}: no report")
            continue
        failing = set(run.failing(fault))
        caught = set(run.caught(fault))
        if not caught:
            problems.append(f"{fault}: no case fails (the fault goes unnoticed)")
        for case_id in expected.get(fault, ()):
            if case_id not in caught:
                problems.append(f"{fault}: expected {case_id} to FAIL, it did not")
        extra = sorted(failing - set(expected.get(fault, ())))
        if fault in EXACT_FAULTS and extra:
            problems.append(f"{fault}: also fails {', '.join(extra)} (not about the fault)")
        if fault not in expected:
            problems.append(f"{fault}: no expected catchers declared in EXPECTED")
    return problems


def render_table(run: MatrixRun, expected: Mapping[str, Sequence[str]] = EXPECTED) -> str:
    descriptions = all_faults()
    clean = run.results.get(CLEAN)
    lines = []
    if clean is not None:
        s = clean["certify"]["summary"]
        lines.append(
            f"Clean reference server: MUST {s['must_passed']}/{s['must_total']}, "
            f"SHOULD {s['should_passed']}/{s['should_total']} passed.\n"
        )
    lines += [
        "| fault | what it breaks | must be caught by | all failing cases |",
        "|---|---|---|---|",
    ]
    for fault in run.faults:
        failing = run.caught(fault)
        must = ", ".join(f"`{c}`" for c in expected.get(fault, ()))
        also = [c for c in failing if c not in expected.get(fault, ())]
        caught = (
            f"{len(failing)}: " + ", ".join(f"`{c}`" for c in also) if also else f"{len(failing)}"
        )
        lines.append(f"| `{fault}` | {descriptions.get(fault, '')} | {must} | {caught} |")
    lines.append("")
    lines.append(
        "_The last column counts every FAIL with the fault on (a SHOULD case's NON-STRICT counts "
        "too: its level's verdict for a breach) and names those beyond the expected catchers._"
    )
    return "\n".join(lines) + "\n"


def write_table(path: Path, table: str) -> None:
    text = path.read_text(encoding="utf-8")
    start, end = text.find(START_MARK), text.find(END_MARK)
    if start < 0 or end < start:
        raise ValueError(f"{path}: no {START_MARK} ... {END_MARK} block")
    new = text[: start + len(START_MARK)] + "\n" + table + text[end:]
    path.write_text(new, encoding="utf-8")
