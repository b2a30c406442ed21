"""The lanes cases have teeth: a server breaking one lane rule fails the cases about it, only those.

The reference server's opt-in faults (the kill matrix) predate lanes, so the broken servers here
are reference servers started in this process either with a lane setting that contradicts what
their profile declares (lanes off, one active response, another lane limit) or with one lane
mechanism patched wrong for this test only (the default lane counted, a failed fork evicting the
shared parent; switched on per server by a test-only name in `ServerConfig.faults`). One
`pytest suites -k 5.2.lanes` run certifies them all, one profile each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.protocol import errors
from reference_server.app import running_in_thread
from reference_server.config import Limits, ServerConfig
from reference_server.front.ws_session import WebSocketSession
from reference_server.runtime.turn import TurnRunner

from .conftest import SUITES

COSTS = SUITES / "targets" / "reference-costs.toml"
LANE_CASES = (
    "5.2.lanes.stream-id-echo",
    "5.2.lanes.default-no-stream-id",
    "5.2.lanes.invalid-stream-id",
    "5.2.lanes.concurrent",
    "5.2.lanes.concurrent-long-prompt",
    "5.2.lanes.fifo",
    "5.2.lanes.active-limit-queued",
    "5.2.lanes.limit",
    "5.2.lanes.default-not-counted",
    "5.2.lanes.fork",
    "5.2.lanes.fork-error-keeps-parent",
)
DEFAULT_COUNTED = "test-default-lane-counted"
FORK_EVICTS = "test-failed-fork-evicts-parent"


@dataclass(frozen=True)
class Variant:
    """A server setting, what its profile declares, and the verdicts that must follow."""

    lanes: bool = True
    limits: Limits = field(default_factory=Limits)
    patches: frozenset[str] = frozenset()
    declares_lanes: bool = True
    # case id -> (verdict, the rule a finding must name, if one); every other case must PASS
    verdicts: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def caught(case_id: str, rule_id: str, verdict: str = "FAIL") -> dict[str, tuple[str, str | None]]:
    return {case_id: (verdict, rule_id)}


VARIANTS: dict[str, Variant] = {
    "clean": Variant(),
    "undeclared": Variant(
        declares_lanes=False, verdicts=dict.fromkeys(LANE_CASES, ("UNIMPLEMENTED", None))
    ),
    "lanes-off": Variant(  # every stream_id refused with unsupported_parameter
        lanes=False,
        verdicts={
            **dict.fromkeys(LANE_CASES, ("FAIL", None)),
            "5.2.lanes.default-no-stream-id": ("NON-STRICT", None),
            "5.2.lanes.concurrent-long-prompt": ("NON-STRICT", None),
        },
    ),
    "one-active": Variant(
        limits=Limits(max_active_lanes=1),
        verdicts={
            **caught("5.2.lanes.concurrent", "lanes.concurrent"),
            **caught("5.2.lanes.concurrent-long-prompt", "lanes.concurrent", "NON-STRICT"),
        },
    ),
    "more-lanes": Variant(
        limits=Limits(max_lanes=40), verdicts=caught("5.2.lanes.limit", "lanes.limit")
    ),
    "fewer-lanes": Variant(
        limits=Limits(max_lanes=20),
        verdicts={
            **caught("5.2.lanes.limit", "lanes.limit"),
            **caught("5.2.lanes.default-not-counted", "lanes.default_not_counted"),
        },
    ),
    "default-counted": Variant(
        patches=frozenset({DEFAULT_COUNTED}),
        verdicts=caught("5.2.lanes.default-not-counted", "lanes.default_not_counted"),
    ),
    "fork-evicts": Variant(
        patches=frozenset({FORK_EVICTS}),
        verdicts=caught("5.2.lanes.fork-error-keeps-parent", "lanes.fork_error_keeps_parent"),
    ),
}


def patch_lane_mechanisms(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrong variants of two lane mechanisms, on for servers naming them in `faults`."""
    lane_of = WebSocketSession._lane

    def counting_the_default_lane(self: WebSocketSession, stream_id: str | None) -> Any:
        limit = self.config.limits.max_lanes
        new = stream_id is not None and stream_id not in self.lanes
        if DEFAULT_COUNTED in self.config.faults and new and len(self.lanes) >= limit:
            return errors.stream_limit_reached(stream_id or "", limit)
        return lane_of(self, stream_id)

    evict_parent = TurnRunner._evict_parent

    def evicting_from_every_lane(self: TurnRunner, request: Any, ctx: Any) -> None:
        evict_parent(self, request, ctx)
        if FORK_EVICTS in self.config.faults and request.previous_response_id is not None:
            for cache in ctx.forks:
                cache.evict(request.previous_response_id)

    monkeypatch.setattr(WebSocketSession, "_lane", counting_the_default_lane)
    monkeypatch.setattr(TurnRunner, "_evict_parent", evicting_from_every_lane)


@contextlib.contextmanager
def servers(root: Path) -> Iterator[dict[str, str]]:
    """Start one reference server per variant; yields variant -> WebSocket URL."""
    with contextlib.ExitStack() as stack:
        urls: dict[str, str] = {}
        for name, variant in VARIANTS.items():
            config = ServerConfig(
                host="127.0.0.1",
                port=0,
                profile=str(COSTS),
                data_dir=root / name,
                lanes=variant.lanes,
                limits=variant.limits,
                faults=variant.patches,
            )
            urls[name] = stack.enter_context(running_in_thread(config)).ws_url
        yield urls


def profile_text(name: str, url: str, variant: Variant) -> str:
    return (
        f'name = "{name}"\nmodel = "wsmode-reference"\n\n'
        f'[target]\nws_url = "{url}"\n\n'
        f"[capabilities]\nlanes = {str(variant.declares_lanes).lower()}\n"
        "scripted_output = true\n\n"
        "[limits]\nmax_lanes = 32\n\n"
        "[timeouts]\nevent_s = 3\n"
    )


def test_each_lane_case_fails_the_server_breaking_its_rule(
    suites: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch_lane_mechanisms(monkeypatch)
    with servers(tmp_path / "data") as urls:
        args: list[str] = []
        for name, url in urls.items():
            path = tmp_path / f"{name}.toml"
            path.write_text(profile_text(name, url, VARIANTS[name]), encoding="utf-8")
            args += ["--wsmode-target-profile", str(path)]
        run = suites(*args, "-k", "5.2.lanes")
    wrong: list[str] = []
    for name, variant in VARIANTS.items():
        cases = run.cases(name)
        assert set(cases) == set(LANE_CASES), name
        for case_id in LANE_CASES:
            verdict, rule_id = variant.verdicts.get(case_id, ("PASS", None))
            case = cases[case_id]
            found = [f["rule_id"] for f in case["findings"]]
            if case["verdict"] != verdict or (rule_id is not None and rule_id not in found):
                wrong.append(
                    f"{name}: {case_id} is {case['verdict']} {found}, expected {verdict} "
                    f"{rule_id or ''}: {case['detail']}"
                )
    assert wrong == [], "\n".join(wrong)


def test_the_embedded_server_runs_with_the_declared_lane_limit(suites: Any, tmp_path: Path) -> None:
    reference = (SUITES / "targets" / "reference.toml").read_text(encoding="utf-8")
    assert "max_lanes = 32" in reference
    small = tmp_path / "small.toml"
    costs = f'server_profile = "{COSTS}"'
    text = reference.replace("max_lanes = 32", "max_lanes = 4")
    small.write_text(text.replace('server_profile = "reference-costs.toml"', costs), "utf-8")
    run = suites(
        "--wsmode-target-profile", str(small), "-k", "5.2.lanes.limit or default-not-counted"
    )
    assert run.returncode == 0, run.output
    cases = run.cases()
    assert set(cases) == {"5.2.lanes.limit", "5.2.lanes.default-not-counted"}
    for case in cases.values():
        assert case["verdict"] == "PASS", (case["id"], case["detail"])
    assert run.report()["config"]["max_lanes"] == 4
