"""A certify run prepared once: its cases loaded and selected, its targets planned and checked.

`wsmode certify` prepares the run, then hands it to pytest in its own process
(`plugin.run_prepared`); a plain `pytest suites --wsmode-...` run prepares through the same
`prepare_run`, in the plugin's `pytest_configure`. Either way the plugin uses what it is given:
the suite files are imported once (runner.suite_loader, and pytest's collection finds them
imported), `-k` selects once, and every remote target is planned and checked once before the
first case (connect, upgrade, one plain create): one that is not there stops the run with one
line instead of a report of cases that all say the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.bundled import target_profile_path
from harness.conformance.model.selection import SelectionError, select
from harness.conformance.model.verdict import CaseMeta
from harness.conformance.runner.certify_config import CertifyConfig
from harness.conformance.runner.suite_loader import load_cases
from harness.conformance.targets.plan import (
    PlannedTarget,
    check_before_run,
    check_faults,
    plan_targets,
    with_faults,
    with_overrides,
)
from harness.conformance.targets.profile import load_target_profile, resolve_profile
from harness.errors import TargetError
from harness.usage import client_api_key

if TYPE_CHECKING:
    from harness.conformance.runner.certify_console import CertifyConsole


class TargetUnreachable(TargetError):
    """A remote target failed the pre-run check (nothing listening, upgrade or key refused)."""


@dataclass(frozen=True)
class PreparedRun:
    """What the plugin runs: the config, the cases selected and the targets checked."""

    config: CertifyConfig
    suites_dir: Path
    cases: tuple[CaseMeta, ...]  # selected, in file order
    targets: tuple[PlannedTarget, ...]
    results_root: Path | None  # None: --no-report
    console: CertifyConsole | None = None  # `wsmode certify`'s own (pytest's terminal off)


def prepare_run(
    config: CertifyConfig,
    suites_dir: Path,
    *,
    invocation_dir: Path | None = None,
    console: CertifyConsole | None = None,
) -> PreparedRun:
    """Select the cases, then plan and check the targets. A bad selection or target raises a
    UsageError (SelectionError, TargetProfileError), a target not there TargetUnreachable."""
    cases = select_cases(suites_dir, config.keyword)
    targets = plan_run_targets(config)
    root = None if config.no_report else Path(config.results)
    if root is not None and not root.is_absolute():
        root = (invocation_dir or Path.cwd()) / root
    return PreparedRun(config, suites_dir, tuple(cases), tuple(targets), root, console)


def select_cases(suites_dir: Path, keyword: str | None) -> list[CaseMeta]:
    """The cases `-k` selects (all without it); one that selects none is a SelectionError."""
    loaded = load_cases(suites_dir)
    if not keyword:
        return [meta for meta, _ in loaded]
    selected = select([(meta, name, None) for meta, name in loaded], keyword)
    if not selected:
        raise SelectionError(f"-k {keyword!r} matches no case (wsmode certify --list shows them)")
    return [meta for meta, _, _ in selected]


def plan_run_targets(config: CertifyConfig) -> list[PlannedTarget]:
    """The targets as the run uses them (profiles, URLs, keys, faults, --model, --auth), each
    remote one checked before the run."""
    profiles = [load_target_profile(resolve_profile(p)) for p in config.target_profiles]
    planned = plan_targets(
        with_faults(list(config.targets), config.faults),
        profiles,
        list(config.http_targets),
        list(config.api_keys),
        default_profile=load_target_profile(target_profile_path("reference")),
        fallback_api_key=client_api_key(None),
    )
    planned = with_overrides(planned, config.model, auth=config.auth)
    check_faults(planned)
    problem = check_before_run(planned)
    if problem is not None:
        raise TargetUnreachable(problem)
    return planned
