"""The run's targets: each `--target` parsed, paired with its profile and the command line's
overrides (`plan_targets`, `with_overrides`), as planned and as live (`LiveTarget`, once an
embedded server runs), and checked once before the run (`check_before_run`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.conformance.targets.profile import EMBEDDED, TargetProfile, TargetProfileError
from harness.errors import UsageError
from harness.transport.target_check import CheckTarget, check_targets_now

_FAULT_NAME = re.compile(r"^[a-z0-9-]+$")


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """One `--target`: a URL, or `embedded[:fault,fault]` for the in-process reference server."""

    url: str
    faults: tuple[str, ...] = ()

    @property
    def embedded(self) -> bool:
        return self.url == EMBEDDED

    @classmethod
    def parse(cls, text: str) -> TargetSpec:
        text = text.strip()
        if text == EMBEDDED:
            return cls(EMBEDDED)
        if text.startswith(EMBEDDED + ":"):
            faults = tuple(f for f in text[len(EMBEDDED) + 1 :].split(",") if f)
            for fault in faults:
                if not _FAULT_NAME.match(fault):
                    raise TargetProfileError(f"--target {text}: bad fault name {fault!r}")
            return cls(EMBEDDED, faults)
        if not text.startswith(("ws://", "wss://")):
            raise TargetProfileError(
                f"--target {text}: expected ws://, wss:// or 'embedded[:faults]'"
            )
        return cls(text)


def default_name(url: str) -> str:
    """A readable target name from a URL: host and port."""
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0] or "target"


@dataclass(frozen=True, slots=True)
class PlannedTarget:
    """A target as the run will use it: the spec, its profile, and the name in reports."""

    name: str
    spec: TargetSpec
    profile: TargetProfile
    faults: tuple[str, ...] = field(default=())


def plan_targets(
    targets: list[str],
    profiles: list[TargetProfile],
    http_targets: list[str],
    api_keys: list[str],
    *,
    default_profile: TargetProfile,
    fallback_api_key: str | None = None,
) -> list[PlannedTarget]:
    """Pair `--target`s with `--target-profile`s (and --http-target / --api-key overrides).

    No target: every profile is a target (its ws_url), or the default (embedded) profile.
    N targets with 0, 1 or N profiles: the default, the one, or the i-th profile for each.
    `--http-target` and `--api-key` given once apply to every target, N times pair in order.
    A remote target left without a key gets `fallback_api_key` ($WSMODE_API_KEY).
    """
    if not targets:
        specs = [TargetSpec.parse(p.ws_url or EMBEDDED) for p in profiles] or [
            TargetSpec.parse(default_profile.ws_url or EMBEDDED)
        ]
        chosen = profiles or [default_profile]
    else:
        specs = [TargetSpec.parse(t) for t in targets]
        if len(profiles) > 1 and len(profiles) != len(targets):
            raise TargetProfileError(
                f"{len(targets)} --target but {len(profiles)} --target-profile: give one "
                "profile for all targets or one per target"
            )
        chosen = profiles * len(targets) if len(profiles) == 1 else profiles
        if not chosen:
            chosen = [default_profile if spec.embedded else TargetProfile() for spec in specs]
    http = _spread(http_targets, len(specs), "--http-target")
    keys = _spread(api_keys, len(specs), "--api-key")
    planned: list[PlannedTarget] = []
    names: dict[str, int] = {}
    for i, (spec, profile) in enumerate(zip(specs, chosen, strict=True)):
        changes: dict[str, Any] = {}
        if http[i] is not None:
            changes["http_url"] = http[i]
        if keys[i] is not None:
            changes["api_key"] = keys[i]
        if not spec.embedded:
            changes["ws_url"] = spec.url
            if fallback_api_key and not (keys[i] or profile.api_key):
                changes["api_key"] = fallback_api_key
        profile = profile.with_changes(**changes) if changes else profile
        if spec.embedded:
            base = profile.name if profile.source != "<defaults>" else "reference"
            name = base + "".join(f"+{f}" for f in spec.faults)
        elif profile.source != "<defaults>":
            name = profile.name
        else:
            name = default_name(spec.url)
        count = names.get(name, 0) + 1
        names[name] = count
        if count > 1:
            name = f"{name}-{count}"
        planned.append(PlannedTarget(name, spec, profile, spec.faults))
    return planned


def _spread(values: list[str], n: int, option: str) -> list[str | None]:
    if not values:
        return [None] * n
    if len(values) == 1:
        return [values[0]] * n
    if len(values) != n:
        raise TargetProfileError(f"{option} given {len(values)} times for {n} targets")
    return list(values)


def with_faults(targets: list[str], faults: Sequence[str]) -> list[str]:
    """`--fault` as the targets say it: the embedded server (or each embedded target) with
    every fault on, `embedded:a,b`. A fault for a remote target is a UsageError."""
    if not faults:
        return targets
    if any(not t.startswith(EMBEDDED) for t in targets):
        raise UsageError("--fault applies to the embedded reference server only")
    joined = ",".join(faults)
    return [f"{t}:{joined}" for t in targets] if targets else [f"{EMBEDDED}:{joined}"]


def check_faults(targets: list[PlannedTarget]) -> None:
    """Every fault a target names is one the reference server has (else a UsageError)."""
    from reference_server.hooks.faults import check_fault_names

    faults = {f for t in targets for f in t.faults}
    if faults:
        try:
            check_fault_names(faults)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


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


@dataclass(frozen=True, slots=True)
class LiveTarget:
    """A target with real URLs (an embedded server's are known only once it runs)."""

    name: str
    ws_url: str
    http_url: str | None
    lifetime_url: str | None
    api_key: str | None
    profile: TargetProfile
    faults: tuple[str, ...] = ()
    version: str | None = None
    ws_off_url: str | None = None  # an endpoint with WebSocket mode off (upgrade answers)


def check_before_run(targets: list[PlannedTarget]) -> str | None:
    """The pre-run target check (harness.transport.target_check) of every remote target: the
    first problem as one line, or None. An error answer to the check's create stops the run only
    when it would refuse every case alike (a key, a path, a model); other answers the cases judge.
    """
    checks = []
    for planned in targets:
        if planned.spec.embedded:
            continue
        profile = planned.profile
        key = profile.api_key or None
        checks.append(CheckTarget(profile.ws_url, "ws", profile.model, key))
        if profile.http_url:
            checks.append(CheckTarget(profile.http_url, "http", profile.model, key))
    if not checks:
        return None
    problem = check_targets_now(checks, any_error_refuses=False)
    return None if problem is None else problem.line()
