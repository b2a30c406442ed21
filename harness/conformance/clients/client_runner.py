"""Running the client cases: per case a fresh reference server with the case's behaviour and an
observer, the adapter against it, and the verdict; then the certificate.

Each case gets its own server on a free loopback port (in this process, on this event loop),
its own store and scratch directory, so no case sees another's connections or ids; `jobs > 1`
runs cases side by side (their servers are separate, their timing-based judgements generous).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.conformance.certificates.wirelog import WireLog
from harness.conformance.certificates.wirelog_compact import wire_log_for
from harness.conformance.clients.catalogue import CASES, ClientCase
from harness.conformance.clients.client_config import Timings
from harness.conformance.clients.contract import (
    STDERR_TAIL_LINES,
    AdapterRun,
    Task,
    adapter_environment,
    run_adapter,
)
from harness.conformance.clients.judging import Evidence, common_checks
from harness.conformance.clients.observed import ServerWatch
from harness.conformance.clients.wire_rules import wire_checks
from harness.conformance.model.verdict import Outcome, Verdict, decide_verdict, detail_text
from harness.results.schema import finish_result, new_result, utc_now_iso

API_KEY = "sk-wsmode-client-certification"  # the case servers' only key; never a real one
# The case servers' cost profile: no simulated costs, and decode at 2,000 tokens/s with one token
# per delta, so a response streams many deltas (as the API's do) in a few tens of milliseconds:
# a case can cut or fail it mid-stream.
CASE_DECODE_TOKENS_PER_S = 2000.0
REPLY_TOKENS = 24  # each answer: one message of this many filler tokens, one delta each


def case_profile(directory: Path) -> Path:
    """The zero profile, decoding at CASE_DECODE_TOKENS_PER_S one token per delta."""
    import reference_server

    zero = Path(reference_server.__file__).parent / "profiles" / "zero.toml"
    text = zero.read_text(encoding="utf-8").replace('name = "zero"', 'name = "client-cases"')
    text = text.replace(
        "decode_tokens_per_s = 1e9", f"decode_tokens_per_s = {CASE_DECODE_TOKENS_PER_S}"
    )
    path = directory / "client-cases.toml"
    path.write_text(text + "max_tokens_per_delta = 1\n", encoding="utf-8")
    return path


@dataclass(frozen=True, slots=True)
class ClientUnderTest:
    """A client and the adapter command that drives it."""

    name: str
    command: tuple[str, ...]
    version: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # added to the adapter's environment
    description: str = ""


@dataclass
class CaseResult:
    case: ClientCase
    verdict: Verdict
    outcome: Outcome
    run: AdapterRun
    duration_ms: float
    started_at: str
    wire_log: list[dict[str, Any]]

    def as_dict(self, *, full_wire_log: bool = False) -> dict[str, Any]:
        case = self.case
        return {
            "id": case.id,
            "section": case.section,
            "level": case.level,
            "title": case.title,
            "verdict": str(self.verdict),
            "duration_ms": round(self.duration_ms, 3),
            "rule_ids": list(case.rules),
            "detail": detail_text(self.outcome),
            "category": case.category,
            "sources": list(case.sources),
            "level_source": case.source_of_level,
            "started_at": self.started_at,
            "findings": [f.as_dict() for f in self.outcome.findings],
            "notes": list(self.outcome.notes),
            "adapter": {
                "exit_code": self.run.exit_code,
                "killed": self.run.killed,
                "duration_ms": round(self.run.duration_ms, 3),
                "reports": [dict(r.raw) for r in self.run.reports],
            },
            "wire_log": wire_log_for(self.wire_log, str(self.verdict), full=full_wire_log),
        }


def _markers(case: ClientCase, count: int) -> list[str]:
    nonce = secrets.token_hex(3)
    short = case.id.split(".client.")[-1]
    return [f"wsmode-{short}-t{i}-{nonce}" for i in range(count)]


def _marked(task: Task, markers: Sequence[str]) -> Task:
    turns = tuple(
        dataclasses.replace(turn, input=f"[{marker}] {turn.input}")
        for turn, marker in zip(task.turns, markers, strict=True)
    )
    return dataclasses.replace(task, turns=turns)


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="wsmode-client-case-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def run_case(
    client: ClientUnderTest, case: ClientCase, timings: Timings, *, base_env: Mapping[str, str]
) -> CaseResult:
    from reference_server.app import ReferenceServer
    from reference_server.config import Limits, ServerConfig

    log = WireLog()
    watch = ServerWatch(log)
    task = case.task(timings)
    markers = _markers(case, len(task.turns))
    task = _marked(task, markers)
    # every answer is a short scripted message (many deltas, little to parse); the case's acts
    # aim at turn 0 however often the client resends it, as a real server would answer it again
    scripted = case.behaviour(timings)
    behaviour = dataclasses.replace(
        scripted, reply_tokens=scripted.reply_tokens or REPLY_TOKENS, target_input=markers[0]
    )
    started_at, started = utc_now_iso(), time.perf_counter()
    with _scratch() as scratch:
        lifetime_s = timings.lifetime_s if case.lifetime else Limits().connection_lifetime_s
        config = ServerConfig(
            host="127.0.0.1",
            port=0,
            profile=str(case_profile(scratch)),
            data_dir=scratch / "server",
            api_keys=(API_KEY,),
            limits=Limits(
                connection_lifetime_s=lifetime_s,
                max_message_bytes=case.max_message_bytes or Limits().max_message_bytes,
            ),
            case_behaviour=behaviour,
            lanes=case.lanes,
        )
        home = scratch / "home"
        home.mkdir()
        server = ReferenceServer(config, observer=watch)
        await server.start()
        try:
            env = adapter_environment(
                {**base_env, **client.env},
                base_url=server.http_url,
                ws_url=server.ws_url,
                api_key=API_KEY,
                case=case.id,
                home=str(home),
            )
            run = await run_adapter(
                client.command,
                task,
                env,
                on_line=lambda at_ms, text: log.add("adapter", "recv", "report", text),
            )
        finally:
            await server.stop()
    _log_adapter_end(log, run)
    evidence = Evidence(task, markers, run, watch, behaviour)
    common_checks(evidence)
    outcome = evidence.outcome
    if outcome.unimplemented is None and outcome.harness_error is None:
        try:
            case.judge(evidence)  # the case's own rules first: its findings lead the report
            wire_checks(evidence)
        except Exception as exc:  # a bug in a judge is the harness's, never the client's
            outcome.harness_error = f"judging {case.id} raised {type(exc).__name__}: {exc}"
    # findings carry the level of their consequence (severity): no case caps them
    verdict = decide_verdict("MUST", outcome)
    duration_ms = (time.perf_counter() - started) * 1000
    return CaseResult(case, verdict, outcome, run, duration_ms, started_at, log.as_list())


def _log_adapter_end(log: WireLog, run: AdapterRun) -> None:
    if run.start_error:
        log.note("adapter", run.start_error)
        return
    ending = "killed at the case's bound" if run.killed else f"exited with {run.exit_code}"
    log.note("adapter", f"adapter {ending} after {run.duration_ms:.0f} ms")
    if run.stderr_tail:
        tail = "\n".join(run.stderr_tail[-STDERR_TAIL_LINES:])
        log.add("adapter", "meta", "stderr", tail, size=len(tail))


async def run_cases(
    client: ClientUnderTest,
    cases: Sequence[ClientCase],
    timings: Timings,
    *,
    jobs: int = 1,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Every case, `jobs` at a time; results in the catalogue's order."""
    gate = asyncio.Semaphore(max(jobs, 1))
    base_env = dict(os.environ)

    async def one(case: ClientCase) -> CaseResult:
        async with gate:
            result = await run_case(client, case, timings, base_env=base_env)
        if on_result is not None:
            on_result(result)
        return result

    return list(await asyncio.gather(*(one(case) for case in cases)))


def select_cases(keyword: str | None) -> list[ClientCase]:
    """Cases whose id, category or level contains every word of `keyword` (`-k 'upgrade 42'`);
    a word starting with `not ` excludes."""
    if not keyword:
        return list(CASES)
    chosen = []
    for case in CASES:
        haystack = f"{case.id} {case.category} {case.level}".lower()
        if _matches(keyword.lower(), haystack):
            chosen.append(case)
    return chosen


def _matches(expression: str, haystack: str) -> bool:
    for alternative in expression.split(" or "):
        words = alternative.split(" and ")
        if all(
            (w.strip()[4:].strip() not in haystack)
            if w.strip().startswith("not ")
            else (w.strip() in haystack)
            for w in words
        ):
            return True
    return False


def client_version(client: ClientUnderTest, results: Sequence[CaseResult]) -> str | None:
    """The version the adapter announced (its `{"client", "version"}` line), else the profile's."""
    for result in results:
        if result.run.version:
            return result.run.version
    return client.version


def build_result(
    client: ClientUnderTest,
    results: Sequence[CaseResult],
    timings: Timings,
    *,
    label: str,
    started_at: str,
    full_wire_log: bool = False,
) -> dict[str, Any]:
    """A `wsmode-results` certify result whose target is the client (config.subject: client)."""
    result = new_result(
        "certify",
        label=label,
        target={
            "url": f"adapter:{client.name}",
            "name": client.name,
            "version": client_version(client, results),
        },
        config={
            "subject": "client",
            "client": client.name,
            "description": client.description,
            "timings": dataclasses.asdict(timings),
            "server": "wsmode reference server, one per case, loopback; no simulated costs, "
            f"decode {CASE_DECODE_TOKENS_PER_S:g} tokens/s, one token per delta",
        },
        started_at=started_at,
    )
    result["certify"]["cases"] = [r.as_dict(full_wire_log=full_wire_log) for r in results]
    return finish_result(result)
