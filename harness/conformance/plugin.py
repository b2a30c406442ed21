"""The pytest plugin behind `pytest suites` and `wsmode certify`.

    pytest suites [--target ws://HOST:PORT/v1/responses ...] [--http-target URL]
                  [--api-key KEY] [--target-profile FILE ...] [--wsmode-strict]
                  [--event-timeout S] [--case-timeout S] [--wsmode-results DIR]

Without `--target` (and without a profile naming a URL) the embedded reference server is started
on a free loopback port. Every case runs once per target (a session-scoped parametrized fixture,
so pytest runs one target's cases together and stops its embedded servers before the next).

Each case runs in a fresh event loop under `asyncio.timeout(case timeout)`, graded and (after a
stall) followed by a liveness probe, all in pytest's call phase (harness.conformance.runner);
pytest-timeout is set above everything the harness bounds itself, as a backstop that only a
harness bug can reach, and never inside a hook. The verdict replaces pytest's pass/fail: FAIL
and ERROR are reported as failed, NON-STRICT as failed only with `--wsmode-strict`,
UNIMPLEMENTED as skipped. At the end each target gets `report.json`, `report.html` and
`junit.xml` under `<results>/certify/<target>/<timestamp>/`, several targets also a matrix.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from harness.bundled import target_profile_path
from harness.conformance.cases import meta_of
from harness.conformance.console import CertifyConsole, CollectionErrors
from harness.conformance.context import CaseContext, LiveTarget
from harness.conformance.embedded import embedded_target, remote_target
from harness.conformance.liveness import check_before_run
from harness.conformance.model import (
    SETUPS,
    Verdict,
    decide_verdict,
    detail_text,
    is_failure,
)
from harness.conformance.reports import (
    run_directory,
    terminal_matrix,
    terminal_summary,
    write_matrix,
    write_run,
)
from harness.conformance.runner import (
    CaseResult,
    RunLedger,
    backstop_s,
    case_budget_s,
    run_case,
)
from harness.conformance.sdk import sdk_version, warm_up
from harness.conformance.selection import SelectionError, compile_selection, matches
from harness.conformance.summary import offered_version, partial_of
from harness.conformance.target_profile import (
    DEFAULT_RESPONSE_TIMEOUT_S,
    PlannedTarget,
    TargetProfile,
    TargetProfileError,
    load_target_profile,
    plan_targets,
    resolve_profile,
)
from harness.conformance.wirelog import FULL_MAX_CHARS
from harness.conformance.wirelog_compact import wire_log_for
from harness.results.schema import finish_result, new_result, utc_now_iso
from harness.results.store import timestamp_slug
from harness.usage import client_api_key

REFERENCE_PROFILE = target_profile_path("reference")

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
    targets: list[PlannedTarget]
    strict: bool
    results_root: Path | None
    label: str
    event_timeout_s: float | None
    case_timeout_s: float | None
    response_timeout_s: float | None
    full_wire_log: bool = False
    cases_expression: str | None = None
    console: CertifyConsole | None = None  # `wsmode certify`'s own console (console.py)
    runs: dict[str, TargetRun] = field(default_factory=dict)
    written: list[tuple[dict[str, Any], dict[str, Path]]] = field(default_factory=list)
    matrix: dict[str, Path] = field(default_factory=dict)

    def run_for(self, name: str) -> TargetRun:
        for planned in self.targets:
            if planned.name == name:
                return self.runs.setdefault(name, TargetRun(planned))
        raise KeyError(name)


# -- options ------------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wsmode", "wsmode conformance (suites/)")
    group.addoption(
        "--target",
        action="append",
        default=[],
        metavar="URL",
        help="WebSocket URL of a target (repeatable), or 'embedded[:fault,...]'",
    )
    group.addoption(
        "--http-target", action="append", default=[], metavar="URL", help="HTTP base URL (…/v1)"
    )
    group.addoption("--api-key", action="append", default=[], metavar="KEY", help="bearer key")
    group.addoption(
        "--target-profile",
        action="append",
        default=[],
        metavar="FILE",
        help="target profile TOML (capabilities and limits; repeatable, one per target)",
    )
    group.addoption(
        "--wsmode-strict",
        action="store_true",
        default=False,
        help="NON-STRICT (a SHOULD not met) fails the run too",
    )
    group.addoption("--event-timeout", type=float, default=None, metavar="S")
    group.addoption(
        "--response-timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"longest one response may stream before its terminal event (default: the "
        f"profile's, {DEFAULT_RESPONSE_TIMEOUT_S:g} s)",
    )
    group.addoption("--case-timeout", type=float, default=None, metavar="S")
    group.addoption(
        "--wsmode-results",
        default="results",
        metavar="DIR",
        help="results root: reports go to DIR/certify/<target>/<timestamp>/ (default: results)",
    )
    group.addoption("--wsmode-no-report", action="store_true", default=False)
    group.addoption(
        "--wsmode-model", default=None, metavar="MODEL", help="the model every request names"
    )
    group.addoption(
        "--wsmode-auth",
        action="store_true",
        default=False,
        help="the target refuses a missing or wrong key: run the auth cases",
    )
    group.addoption(
        "--wsmode-full-wire-log",
        action="store_true",
        default=False,
        help="keep every frame of every case (default: delta runs collapsed in passing cases)",
    )
    group.addoption(
        "--wsmode-cases",
        default=None,
        metavar="EXPR",
        help="select cases by id, category or level (a -k expression that never matches the "
        "target's name)",
    )
    group.addoption("--wsmode-label", default="certify", metavar="LABEL")
    group.addoption(
        "--wsmode-console",
        action="store_true",
        default=False,
        help="print wsmode certify's console (with -p no:terminal): non-PASS lines, failure "
        "blocks, the summary last",
    )
    group.addoption(
        "--wsmode-verbose",
        action="store_true",
        default=False,
        help="with --wsmode-console: one line per case, PASS and UNIMPLEMENTED too",
    )
    group.addoption(
        "--wsmode-checked",
        action="store_true",
        default=False,
        help="the targets were checked before the run (wsmode certify): skip the pre-run check",
    )


def pytest_configure(config: pytest.Config) -> None:
    try:
        default = load_target_profile(REFERENCE_PROFILE)
        profiles = [
            load_target_profile(resolve_profile(p)) for p in config.getoption("target_profile")
        ]
        targets = plan_targets(
            list(config.getoption("target")),
            profiles,
            list(config.getoption("http_target")),
            list(config.getoption("api_key")),
            default_profile=default,
            fallback_api_key=client_api_key(None),
        )
    except TargetProfileError as exc:
        raise pytest.UsageError(str(exc)) from None
    targets = with_overrides(
        targets, config.getoption("wsmode_model"), auth=bool(config.getoption("wsmode_auth"))
    )
    faults = {f for t in targets for f in t.faults}
    if faults:
        from reference_server.hooks.faults import check_fault_names

        try:
            check_fault_names(faults)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    if not config.getoption("wsmode_checked"):
        problem = check_before_run(targets)
        if problem is not None:
            raise pytest.UsageError(problem)
    root = (
        None if config.getoption("wsmode_no_report") else Path(config.getoption("wsmode_results"))
    )
    if root is not None and not root.is_absolute():
        root = config.invocation_params.dir / root
    config.stash[_STATE] = CertifyState(
        targets=targets,
        strict=bool(config.getoption("wsmode_strict")),
        results_root=root,
        label=str(config.getoption("wsmode_label")),
        event_timeout_s=config.getoption("event_timeout"),
        case_timeout_s=config.getoption("case_timeout"),
        response_timeout_s=config.getoption("response_timeout"),
        full_wire_log=bool(config.getoption("wsmode_full_wire_log")),
        cases_expression=config.getoption("wsmode_cases"),
    )
    if config.getoption("wsmode_console"):
        console = CertifyConsole(
            sys.stdout,
            verbose=bool(config.getoption("wsmode_verbose")),
            strict=bool(config.getoption("wsmode_strict")),
        )
        config.stash[_STATE].console = console
        config.pluginmanager.register(CollectionErrors(console), "wsmode-collection-errors")


def with_overrides(
    targets: list[PlannedTarget], model: str | None, *, auth: bool
) -> list[PlannedTarget]:
    """Apply `--model` and `--auth` to every planned target's profile."""
    changed: list[PlannedTarget] = []
    for planned in targets:
        changes: dict[str, Any] = {}
        if model:
            changes["model"] = model
        if auth:
            changes["capabilities"] = planned.profile.capabilities | {"auth"}
        profile = planned.profile.with_changes(**changes) if changes else planned.profile
        changed.append(replace(planned, profile=profile))
    return changed


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
        response_timeout_s=state.response_timeout_s or profile.response_timeout_s,
        wire_max_chars=FULL_MAX_CHARS,  # whole; wire_log_for compacts what it writes
    )
    request.node.stash[_CTX] = context
    return context


def _timeouts(state: CertifyState, profile: TargetProfile) -> tuple[float, float]:
    """(event timeout, case timeout) of a target: the command line's, else its profile's."""
    return (
        state.event_timeout_s or profile.event_timeout_s,
        state.case_timeout_s or profile.case_timeout_s,
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
    if state.cases_expression:
        selected, deselected = select_cases(items, state.cases_expression)
        if not any(_is_case(item) for item in selected):
            raise pytest.UsageError(
                f"-k {state.cases_expression!r} matches no case (wsmode certify --list shows "
                "the cases)"
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
    return isinstance(item, pytest.Function) and meta_of(item.function) is not None


def select_cases(
    items: list[pytest.Item], expression: str
) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """Split `items` by a -k style expression judged on the cases alone (selection.py)."""
    try:
        compiled = compile_selection(expression)
    except SelectionError as exc:
        raise pytest.UsageError(str(exc)) from None
    selected: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        function = item.function if isinstance(item, pytest.Function) else None
        meta = meta_of(function) if function is not None else None
        keep = meta is None or function is None or matches(compiled, meta, function.__name__)
        (selected if keep else deselected).append(item)
    return selected, deselected


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
            "wire_log": wire_log_for(context.log.as_list(), verdict, full=state.full_wire_log),
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
    results: list[dict[str, Any]] = []
    for planned in state.targets:
        run = state.runs.get(planned.name)
        if run is None or not run.cases:
            continue
        result = build_result(run, state)
        results.append(result)
        paths: dict[str, Path] = {}
        if state.results_root is not None:
            directory = run_directory(state.results_root, planned.name, result["started_at"])
            paths = write_run(directory, result, strict=state.strict)
        state.written.append((result, paths))
    if state.results_root is not None and len(results) > 1:
        stamp = timestamp_slug(results[0]["started_at"])
        state.matrix = write_matrix(state.results_root / "certify" / "_matrix" / stamp, results)
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
        label=state.label,
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
