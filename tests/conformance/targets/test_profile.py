from __future__ import annotations

from pathlib import Path

import pytest

from harness.conformance.targets.plan import TargetSpec, plan_targets
from harness.conformance.targets.profile import (
    TargetProfile,
    TargetProfileError,
    load_target_profile,
    parse_profile,
)

TARGETS = Path(__file__).resolve().parents[3] / "suites" / "targets"


def test_shipped_profiles_load() -> None:
    reference = load_target_profile(TARGETS / "reference.toml")
    assert reference.embedded and reference.api_key
    assert reference.capabilities >= {
        "store",
        "reasoning",
        "lanes",
        "scripted_output",
        "safety_markers",
    }
    assert reference.max_lanes == 32
    assert reference.cache_depth >= 2 and reference.cache_max_bytes and reference.lifetime_s
    assert Path(reference.server_profile).is_file()  # resolved relative to the TOML file
    for requirement in (
        "auth",
        "http",
        "lifetime",
        "cache_lru",
        "cache_bytes",
        "max_message",
        "lane_limit",
    ):
        assert reference.missing(requirement) is None, requirement
    example = load_target_profile(TARGETS / "example-openai.toml")
    assert example.ws_url.startswith("wss://") and example.cache_depth == 1
    assert "longer than" in str(example.missing("lifetime"))
    assert example.missing("scripted_output") is not None
    assert example.has("lanes") and example.max_lanes == 32  # documented upstream since 2026-08


def test_undeclared_means_missing_with_a_reason() -> None:
    profile = TargetProfile()
    assert profile.missing("store") == "capability 'store' not declared in the target profile"
    assert profile.missing("auth") is not None and profile.missing("http") is not None
    assert profile.missing("cache_eviction") is None  # depth 1 is the documented default
    assert profile.with_changes(cache_depth=0).missing("cache_eviction") is not None
    assert profile.max_lanes == 32 and profile.missing("lane_limit") is None  # as documented
    assert profile.with_changes(max_lanes=0).missing("lane_limit") is not None
    with pytest.raises(ValueError, match="unknown requirement"):
        profile.missing("teleport")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nmae": "x"}, "unknown key"),
        ({"capabilities": {"stor": True}}, "capabilities.stor: unknown key"),
        ({"capabilities": {"store": "yes"}}, "expected bool"),
        ({"limits": {"cache_depth": True}}, "got a boolean"),
        ({"limits": {"cache_depth": -1}}, "must be >= 0"),
        ({"timeouts": {"event_s": 0}}, "must be > 0"),
        ({"target": "ws://x"}, "expected a [target] table"),
        ({"name": " "}, "must not be empty"),
    ],
)
def test_profiles_are_strict(data: dict[str, object], message: str) -> None:
    with pytest.raises(TargetProfileError, match=message.replace("[", r"\[")):
        parse_profile(data, "p.toml")


def test_api_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WSMODE_TEST_KEY", "sk-from-env")
    profile = parse_profile({"target": {"api_key_env": "WSMODE_TEST_KEY"}})
    assert profile.api_key == "sk-from-env"


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [", encoding="utf-8")
    with pytest.raises(TargetProfileError, match=r"bad\.toml: not valid TOML"):
        load_target_profile(bad)
    with pytest.raises(TargetProfileError, match="cannot read"):
        load_target_profile(tmp_path / "missing.toml")


def test_target_specs() -> None:
    assert TargetSpec.parse("embedded") == TargetSpec("embedded")
    assert TargetSpec.parse("embedded:a-b,c").faults == ("a-b", "c")
    assert TargetSpec.parse("wss://h/v1/responses").url == "wss://h/v1/responses"
    with pytest.raises(TargetProfileError, match="expected ws://"):
        TargetSpec.parse("http://h/v1")
    with pytest.raises(TargetProfileError, match="bad fault name"):
        TargetSpec.parse("embedded:Bad Name")


def test_planning_pairs_targets_with_profiles() -> None:
    default = parse_profile({"name": "reference", "target": {"ws_url": "embedded"}})
    one = parse_profile({"name": "one"}, "one.toml")
    two = parse_profile({"name": "two", "target": {"ws_url": "ws://b:2/v1/responses"}}, "two.toml")
    [embedded] = plan_targets([], [], [], [], default_profile=default)
    assert embedded.spec.embedded and embedded.name == "reference"
    planned = plan_targets(
        ["ws://a:1/v1/responses", "embedded:cache-fifo"],
        [],
        ["http://a:1/v1"],
        [],
        default_profile=default,
    )
    assert [p.name for p in planned] == ["a:1", "reference+cache-fifo"]
    assert planned[0].profile.http_url == "http://a:1/v1" and planned[1].faults == ("cache-fifo",)
    from_profiles = plan_targets([], [two], [], ["k"], default_profile=default)
    assert from_profiles[0].spec.url == "ws://b:2/v1/responses"
    assert from_profiles[0].profile.api_key == "k"
    paired = plan_targets(
        ["ws://x:1/v1/responses", "ws://y:1/v1/responses"],
        [one, two],
        [],
        [],
        default_profile=default,
    )
    assert [p.name for p in paired] == ["one", "two"]
    assert paired[1].profile.ws_url == "ws://y:1/v1/responses"
    twice = plan_targets(["embedded", "embedded"], [], [], [], default_profile=default)
    assert [p.name for p in twice] == ["reference", "reference-2"]
    with pytest.raises(TargetProfileError, match="one profile for all targets or one per target"):
        plan_targets(["embedded"], [one, two], [], [], default_profile=default)
    with pytest.raises(TargetProfileError, match="--api-key given 2 times for 3 targets"):
        plan_targets(["embedded"] * 3, [], [], ["a", "b"], default_profile=default)


def test_sending_a_key_claims_nothing_auth_is_declared_apart() -> None:
    keyed = parse_profile({"target": {"api_key": "k"}, "upstream": "vLLM 0.11 on a GPU"})
    assert keyed.api_key == "k" and keyed.upstream == "vLLM 0.11 on a GPU"
    assert "capability 'auth' not declared" in str(keyed.missing("auth"))
    claimed = parse_profile({"capabilities": {"auth": True}})
    assert claimed.missing("auth") is None and not claimed.api_key  # a refusal needs no key
    assert claimed.describe()["auth"] is True and claimed.describe()["sends_key"] is False
    assert keyed.describe()["upstream"] == "vLLM 0.11 on a GPU"
