"""The pytest plugin behind `wsmode certify` and `pytest suites`.

`wsmode certify` prepares its run (runner.prepare: cases selected, targets planned and checked)
and hands it to pytest in its own process (`run_prepared`), with pytest's terminal off and its
own console on. A plain run prepares through the same function, from the same options, each as
`--wsmode-<long name>` (runner.certify_config)::

    pytest suites [--wsmode-target ws://HOST:PORT/v1/responses ...] [--wsmode-http-target URL]
                  [--wsmode-api-key KEY] [--wsmode-target-profile NAME|FILE ...]
                  [--wsmode-keyword EXPR] [--wsmode-strict] [--wsmode-event-timeout S]
                  [--wsmode-case-timeout S] [--wsmode-results DIR]

Without a target (and without a profile naming a URL) the embedded reference server is started
on a free loopback port. Every case runs once per target (a session-scoped parametrized fixture,
so pytest runs one target's cases together and stops its embedded servers before the next).

Each case runs in a fresh event loop under `asyncio.timeout(case timeout)`, graded and (after a
stall) followed by a liveness probe, all in pytest's call phase (runner.case_runner);
pytest-timeout is set above everything the harness bounds itself, as a backstop that only a
harness bug can reach, and never inside a hook. The verdict replaces pytest's pass/fail: FAIL
and ERROR are reported as failed, NON-STRICT as failed only with `--wsmode-strict`,
UNIMPLEMENTED as skipped. At the end each target gets `report.json`, `report.html` and
`junit.xml` under `<results>/certify/<target>/<timestamp>/`, several targets also a matrix.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.bundled import suites_dir
from harness.conformance.certificates.documents import (
    run_directory,
    terminal_matrix,
    terminal_summary,
    write_matrix,
    write_run,
)
from harness.conformance.certificates.summary import offered_version, partial_of
from harness.conformance.certificates.wirelog import FULL_MAX_CHARS
from harness.conformance.certificates.wirelog_compact import wire_log_for
from harness.conformance.judges.sdk_opinion import sdk_version, warm_up
from harness.conformance.model.cases import meta_of
from harness.conformance.model.verdict import (
    SETUPS,
    Verdict,
    decide_verdict,
    detail_text,
    is_failure,
)
from harness.conformance.runner.case_runner import (
    CaseResult,
    RunLedger,
    backstop_s,
    case_budget_s,
    run_case,
)
from harness.conformance.runner.certify_config import CertifyConfig
from harness.conformance.runner.certify_console import CertifyConsole, CollectionErrors
from harness.conformance.runner.context import CaseContext
from harness.conformance.runner.prepare import PreparedRun, TargetUnreachable, prepare_run
from harness.conformance.targets.embedded import embedded_target, remote_target
from harness.conformance.targets.plan import LiveTarget, PlannedTarget
from harness.conformance.targets.profile import TargetProfile
from harness.errors import UsageError
from harness.options import add_pytest_options, from_pytest
from harness.results.schema import finish_result, new_result, utc_now_iso
from harness.results.store import timestamp_slug

_STATE = pytest.StashKey["CertifyState"]()
_CTX = pytest.StashKey[CaseContext]()
_RESULT = pytest.StashKey[CaseResult]()
_LETTERS = {
    "PASS": ("passed", ".", "PASS"),
    "FAIL": ("failed", "F", "FAIL"),
    "NON-STRICT": ("non-strict", "N", "NON-STRICT"),
    "PRECONDITION": ("precondition not met", "P", "PRECONDITION"),
    "INFORMATIONAL": ("informational", "I", "INFORMATIONAL"),
    "UNIMPLEMENTED": ("unimplemented", "U", "UNIMPLEMENTED"),
    "ERROR": ("error", "E", "ERROR"),
}


@dataclass
class TargetRun:
    planned: PlannedTarget
    live: LiveTarget | None = None
    started_at: str | None = None
    cases: list[dict[str, Any]] = field(default_factory=list)
    ledger: RunLedger = field(default_factory=RunLedger)  # a stopped target, failed setups


@dataclass
class CertifyState:
    """A run as it goes: what it was given, and what each target's cases gave."""

    prepared: PreparedRun
    runs: dict[str, TargetRun] = field(default_factory=dict)
    written: list[tuple[dict[str, Any], dict[str, Path]]] = field(default_factory=list)
    matrix: dict[str, Path] = field(default_factory=dict)

    @property
    def config(self) -> CertifyConfig:
        return self.prepared.config

    @property
    def targets(self) -> tuple[PlannedTarget, ...]:
        return self.prepared.targets

    @property
    def strict(self) -> bool:
        return self.prepared.config.strict

    @property
    def console(self) -> CertifyConsole | None:
        return self.prepared.console

    def run_for(self, name: str) -> TargetRun:
        for planned in self.targets:
            if planned.name == name:
                return self.runs.setdefault(name, TargetRun(planned))
        raise KeyError(name)


# -- the run: handed over by `wsmode certify`, or prepared here from the options ----------------
def run_prepared(prepared: PreparedRun) -> int:
    """Run a prepared run in this process, pytest's terminal off (the console, if any, on):
    0 when every case held, 1 when one failed, 2 when pytest could not run the suites."""
    suites = str(prepared.suites_dir)
    # the suites' own rootdir and no ini file: the caller's pytest settings stay out of a run
    argv = [suites, "-c", os.devnull, "--rootdir", suites, "-p", "no:cacheprovider"]
    argv += ["-p", "no:terminal"]
    code = int(pytest.main(argv, plugins=[prepared]))
    return code if code in (0, 1) else 2


def pytest_addoption(parser: pytest.Parser) -> None:
    add_pytest_options(parser.getgroup("wsmode", "wsmode conformance (suites/)"), CertifyConfig)


def pytest_configure(config: pytest.Config) -> None:
    prepared = _handed_over(config)
    if prepared is None:  # a plain `pytest suites` run
        try:
            prepared = prepare_run(
                from_pytest(CertifyConfig, config),
                _suites_dir(config),
                invocation_dir=config.invocation_params.dir,
            )
        except (UsageError, TargetUnreachable) as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[_STATE] = CertifyState(prepared)
    if prepared.console is not None:
        collection_errors = CollectionErrors(prepared.console)
        config.pluginmanager.register(collection_errors, "wsmode-collection-errors")


def _handed_over(config: pytest.Config) -> PreparedRun | None:
    """The run `run_prepared` registered as a plugin, if this is one."""
    plugins = config.pluginmanager.get_plugins()
    return next((p for p in plugins if isinstance(p, PreparedRun)), None)


def _suites_dir(config: pytest.Config) -> Path:
    """The directory whose conftest loads this plugin (else the bundled suites)."""
    for plugin in config.pluginmanager.get_plugins():
        names = getattr(plugin, "pytest_plugins", ())
        where = getattr(plugin, "__file__", None)
        if where is not None and __name__ in ((names,) if isinstance(names, str) else names):
            return Path(where).parent
    return suites_dir()


def _state(config: pytest.Config) -> CertifyState:
    return config.stash[_STATE]


# -- targets and the case context ---------------------------------------------------------------
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "wsmode_target" in metafunc.fixturenames:
        targets = _state(metafunc.config).targets
        metafunc.parametrize(
            "wsmode_target",
            targets,
            ids=[t.name for t in targets],
            indirect=True,
            scope="session",
        )


@pytest.fixture(scope="session")
def wsmode_target(request: pytest.FixtureRequest) -> Iterator[LiveTarget]:
    planned: PlannedTarget = request.param
    run = _state(request.config).run_for(planned.name)
    warm_up()
    if planned.spec.embedded:
        with embedded_target(planned) as live:
            run.live = live
            yield live
    else:
        run.live = remote_target(planned)
        yield run.live


@pytest.fixture
def ctx(request: pytest.FixtureRequest, wsmode_target: LiveTarget) -> CaseContext:
    meta = meta_of(request.function)
    if meta is None:
        raise pytest.UsageError(f"{request.node.nodeid}: `ctx` is only for @case functions")
    state = _state(request.config)
    profile: TargetProfile = wsmode_target.profile
    event_s, case_s = _timeouts(state, profile)
    context = CaseContext(
        meta,
        wsmode_target,
        event_timeout_s=event_s,
        case_timeout_s=case_budget_s(meta, profile, case_s, event_s),
        response_timeout_s=state.config.response_timeout_s or profile.response_timeout_s,
        wire_max_chars=FULL_MAX_CHARS,  # whole; wire_log_for compacts what it writes
    )
    request.node.stash[_CTX] = context
    return context


def _timeouts(state: CertifyState, profile: TargetProfile) -> tuple[float, float]:
    """(event timeout, case timeout) of a target: the command line's, else its profile's."""
    return (
        state.config.event_timeout_s or profile.event_timeout_s,
        state.config.case_timeout_s or profile.case_timeout_s,
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = _state(config)
    for item in items:
        meta = meta_of(item.function) if isinstance(item, pytest.Function) else None
        if meta is not None:
            # the backstop times the call only (never a hook), above all the harness bounds
            longest = max(
                backstop_s(case_budget_s(meta, t.profile, case_s, event_s), event_s)
                for t in state.targets
                for event_s, case_s in [_timeouts(state, t.profile)]
            )
            item.add_marker(pytest.mark.timeout(longest, func_only=True))
            # `-k` can select by case id, category or level: -k "5.1.cache and not lru"
            item.extra_keyword_matches.update((meta.id, meta.category, meta.level))
    # the cases the run selected (`-k` was judged once, on the cases alone: runner.prepare);
    # what is no case (None) stays
    keep = {None, *(meta.id for meta in state.prepared.cases)}
    selected: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        (selected if _case_id(item) in keep else deselected).append(item)
    if state.config.keyword and not any(_is_case(item) for item in selected):
        raise pytest.UsageError(
            f"-k {state.config.keyword!r} matches no case (wsmode certify --list shows the cases)"
        )
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected
    items[:] = judges_first(items)
    if state.console is not None:
        state.console.start(sum(1 for item in items if _is_case(item)), len(state.targets))


def judges_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """Within each target's cases, the judges of setups (model.SETUPS) run first, so a setup
    that fails is reported by its own case and the cases built on it say so, not run."""
    judges = {setup.judge for setup in SETUPS.values()}

    def key(position: int) -> tuple[int, int, int]:
        item = items[position]
        callspec = getattr(item, "callspec", None)
        target = callspec.indices.get("wsmode_target", 0) if callspec is not None else 0
        function = item.function if isinstance(item, pytest.Function) else None
        meta = meta_of(function) if function is not None else None
        return (target, 0 if meta is not None and meta.id in judges else 1, position)

    return [items[i] for i in sorted(range(len(items)), key=key)]


def _is_case(item: pytest.Item) -> bool:
    return _case_id(item) is not None


def _case_id(item: pytest.Item) -> str | None:
    meta = meta_of(item.function) if isinstance(item, pytest.Function) else None
    return meta.id if meta is not None else None


# -- running a case -----------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    context = pyfuncitem.stash.get(_CTX, None)
    function = pyfuncitem.obj
    if context is None or not inspect.iscoroutinefunction(function):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    run = _state(pyfuncitem.config).run_for(context.target.name)
    pyfuncitem.stash[_RESULT] = run_case(
        context, lambda: function(**kwargs), run.ledger, budget_s=context.case_timeout_s
    )
    return True


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    if not isinstance(item, pytest.Function) or meta_of(item.function) is None:
        return report
    state = _state(item.config)
    context = item.stash.get(_CTX, None)
    if report.when == "setup" and report.failed:
        _record_setup_error(state, item, report)
    elif report.when == "call" and context is not None:
        result = item.stash.get(_RESULT, None)
        if result is None or call.excinfo is not None:
            # the case runner never raises for the target: only the backstop (a harness bug)
            # or an interrupt gets here; graded as it stands, no probe (nothing waits in a hook)
            exc = call.excinfo.value if call.excinfo is not None else None
            if isinstance(exc, pytest.fail.Exception) and "Timeout" in str(exc):
                exc = TimeoutError("pytest-timeout backstop")
            graded = context.absorb(exc)
            result = CaseResult(graded, decide_verdict(context.meta.level, graded))
        _record(state, context, result)
        _rewrite_report(
            report, item, result.verdict, detail_text(result.outcome), strict=state.strict
        )
    return report


def _record(state: CertifyState, context: CaseContext, result: CaseResult) -> None:
    graded, verdict, not_run = result.outcome, result.verdict, result.not_run
    run = state.run_for(context.target.name)
    if run.started_at is None:
        run.started_at = context.started_at
    meta = context.meta
    run.cases.append(
        {
            "id": meta.id,
            "section": meta.section,
            "level": meta.level,
            "title": meta.title,
            "verdict": str(verdict),
            "duration_ms": round(context.duration_ms or 0.0, 3),
            "rule_ids": context.result_rule_ids(graded),
            "detail": detail_text(graded),
            "category": meta.category,
            "requires": list(meta.requires),
            "started_at": context.started_at,
            "findings": [f.as_dict() for f in graded.findings],
            "notes": list(graded.notes),
            "wire_log": wire_log_for(
                context.log.as_list(), verdict, full=state.config.full_wire_log
            ),
            **({"not_run": True} if not_run else {}),
            **({"setup_failed_in": result.setup_failed_in} if result.setup_failed_in else {}),
        }
    )
    if state.console is not None:
        state.console.case(run.planned.name, run.cases[-1])


def _record_setup_error(
    state: CertifyState, item: pytest.Function, report: pytest.TestReport
) -> None:
    meta = meta_of(item.function)
    planned = item.callspec.params.get("wsmode_target") if hasattr(item, "callspec") else None
    if meta is None or not isinstance(planned, PlannedTarget):
        return
    run = state.run_for(planned.name)
    if run.started_at is None:
        run.started_at = utc_now_iso()
    text = str(report.longrepr).strip().splitlines()
    detail = f"harness error during setup: {text[-1] if text else 'unknown'}"
    run.cases.append(
        {
            "id": meta.id,
            "section": meta.section,
            "level": meta.level,
            "title": meta.title,
            "verdict": "ERROR",
            "duration_ms": None,
            "rule_ids": list(meta.rules),
            "detail": detail,
            "category": meta.category,
            "requires": list(meta.requires),
            "findings": [],
            "notes": [],
            "wire_log": [],
        }
    )
    if state.console is not None:
        state.console.case(run.planned.name, run.cases[-1])
    report.wsmode_verdict = "ERROR"  # type: ignore[attr-defined]


def _rewrite_report(
    report: pytest.TestReport, item: pytest.Item, verdict: Verdict, detail: str, *, strict: bool
) -> None:
    report.wsmode_verdict = str(verdict)  # type: ignore[attr-defined]
    text = f"{verdict}: {detail}" if detail else str(verdict)
    if verdict is Verdict.UNIMPLEMENTED:
        path, lineno, _ = item.location
        report.outcome = "skipped"
        report.longrepr = (str(path), (lineno or 0) + 1, text)
    elif is_failure(verdict, strict=strict):
        report.outcome = "failed"
        report.longrepr = text
    else:
        report.outcome = "passed"
        report.longrepr = None
        if verdict is not Verdict.PASS:
            report.sections.append(("wsmode", text))


def pytest_report_teststatus(
    report: pytest.TestReport, config: pytest.Config
) -> tuple[str, str, str] | None:
    verdict = getattr(report, "wsmode_verdict", None)
    if verdict is None or report.when not in ("call", "setup"):
        return None
    if report.when == "setup" and verdict != "ERROR":
        return None
    return _LETTERS.get(verdict)


# -- the end of the run -------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = _state(session.config)
    root = state.prepared.results_root
    results: list[dict[str, Any]] = []
    for planned in state.targets:
        run = state.runs.get(planned.name)
        if run is None or not run.cases:
            continue
        result = build_result(run, state)
        results.append(result)
        paths: dict[str, Path] = {}
        if root is not None:
            directory = run_directory(root, planned.name, result["started_at"])
            paths = write_run(directory, result, strict=state.strict)
        state.written.append((result, paths))
    if root is not None and len(results) > 1:
        stamp = timestamp_slug(results[0]["started_at"])
        state.matrix = write_matrix(root / "certify" / "_matrix" / stamp, results)
    if any(
        is_failure(case["verdict"], strict=state.strict)
        for result in results
        for case in result["certify"]["cases"]
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if state.console is not None:
        matrix = terminal_matrix(results) if len(results) > 1 else ""
        state.console.finish(state.written, state.matrix, matrix)


def build_result(run: TargetRun, state: CertifyState) -> dict[str, Any]:
    planned = run.planned
    live = run.live
    profile = live.profile if live is not None else planned.profile
    config = profile.describe()
    config.update(
        faults=list(planned.faults),
        strict=state.strict,
        openai_sdk=sdk_version(),
        embedded=planned.spec.embedded,
    )
    result = new_result(
        "certify",
        label=state.config.label,
        target={
            "url": live.ws_url if live is not None else planned.spec.url,
            "name": planned.name,
            "version": (live.version if live is not None else None) or offered_version(run.cases),
        },
        profile=profile.describe()["profile_source"],
        config=config,
        started_at=run.started_at,
    )
    result["certify"]["cases"] = run.cases
    partial = partial_of(run.cases, profile_given=planned.profile.source != "<defaults>")
    if partial is not None:
        result["certify"]["partial"] = partial
    if run.ledger.stopped_after is not None:
        result["certify"]["stopped"] = {
            "after": run.ledger.stopped_after,
            "reason": run.ledger.stop_reason,
            "not_run": sum(1 for case in run.cases if case.get("not_run")),
        }
    return finish_result(result)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not state.written:
        return
    write = terminalreporter.write_line
    terminalreporter.section("wsmode certify")
    for result, paths in state.written:
        for line in terminal_summary(result, strict=state.strict).splitlines():
            write(line)
        for kind, path in paths.items():
            write(f"  {kind:<6}{path}")
        write("")
    if len(state.written) > 1:
        write("cases × implementations (rows where a target did not PASS):")
        for line in terminal_matrix([r for r, _ in state.written]).splitlines():
            write(line)
        for kind, path in state.matrix.items():
            write(f"  {kind:<6}{path}")
