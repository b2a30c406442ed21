"""Cost profiles: bundled TOML files, validation, overrides and the stage-cost helper."""

from __future__ import annotations

import dataclasses
import random
import re
from importlib import resources
from pathlib import Path

import pytest

from reference_server.cost_profiles import PROFILE_NAMES, load_cost_profile, parse_overrides
from reference_server.engine.cost_profile import STAGE_UNITS, CostProfileError, Profile

COST_FIELDS = [
    f.name
    for f in dataclasses.fields(Profile)
    if f.name not in ("name", "description", "burst_tokens_per_s")
]


def _toml_text(name: str) -> str:
    return resources.files("reference_server").joinpath("profiles", f"{name}.toml").read_text()


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_every_bundled_profile_loads_with_its_own_name(name: str) -> None:
    profile = load_cost_profile(name)
    assert profile.name == name
    assert profile.description
    assert profile.decode_tokens_per_s > 0


def test_bundled_profiles_are_exactly_the_toml_files() -> None:
    files = {
        p.name.removesuffix(".toml")
        for p in resources.files("reference_server").joinpath("profiles").iterdir()
        if p.name.endswith(".toml")
    }
    assert files == set(PROFILE_NAMES)


def test_decode_rates_match_profile_names() -> None:
    assert load_cost_profile("legacy-65tps").decode_tokens_per_s == 65
    assert load_cost_profile("spark-1000tps").decode_tokens_per_s == 1000
    assert load_cost_profile("burst-4000tps").decode_tokens_per_s == 4000
    prod = load_cost_profile("production-like")
    assert prod.decode_tokens_per_s == 1000
    assert prod.burst_tokens_per_s == 4000
    assert 0 < prod.burst_probability < 1


def test_zero_profile_costs_nothing_and_decodes_as_fast_as_possible() -> None:
    zero = load_cost_profile("zero")
    assert zero.is_zero
    assert zero.jitter_fraction == 0
    assert zero.decode_tokens_per_s >= 1e9
    for stage in STAGE_UNITS:
        assert zero.stage_cost_us(stage, 1e6, rng=random.Random(1)) == 0  # type: ignore[arg-type]


def test_production_like_charges_every_stage() -> None:
    prod = load_cost_profile("production-like")
    assert not prod.is_zero
    for stage in STAGE_UNITS:
        assert prod.stage_cost_us(stage, 1) > 0, stage  # type: ignore[arg-type]


def test_production_like_documents_every_cost_in_a_comment() -> None:
    """Each key sits in a block of lines that starts with a comment giving its rationale."""
    lines = _toml_text("production-like").splitlines()
    documented: set[str] = set()
    in_commented_block = False
    for line in lines:
        stripped = line.strip()
        if not stripped:
            in_commented_block = False
        elif stripped.startswith("#"):
            in_commented_block = True
        else:
            key = stripped.split("=", 1)[0].strip()
            if in_commented_block:
                documented.add(key)
    assert set(COST_FIELDS) <= documented


def test_production_like_header_arithmetic_matches_its_values() -> None:
    """The TOML header claims ~250 ms of overhead for a 100k-token HTTP turn and ~9 ms for a
    cached WS turn with 500 new tokens; keep that claim true when values change."""
    prod = load_cost_profile("production-like")
    kib = 100_000 * 4 / 1024
    http_ms = (
        prod.stage_cost_us("transfer", kib)
        + prod.stage_cost_us("parse", kib)
        + prod.stage_cost_us("validate_items", 300)
        + prod.stage_cost_us("validate_tokens", 100_000)
        + prod.stage_cost_us("safety", 100_000)
        + prod.stage_cost_us("tokenize", 100_000)
        + prod.stage_cost_us("routing")
        + prod.stage_cost_us("queue")
    ) / 1000
    new_kib = 500 * 4 / 1024
    ws_ms = (
        prod.stage_cost_us("transfer", new_kib)
        + prod.stage_cost_us("parse", new_kib)
        + prod.stage_cost_us("validate_items", 2)
        + prod.stage_cost_us("validate_tokens", 500)
        + prod.stage_cost_us("safety", 500)
        + prod.stage_cost_us("tokenize", 500)
        + prod.stage_cost_us("queue")
    ) / 1000
    assert 200 <= http_ms <= 300
    assert 5 <= ws_ms <= 12
    header = _toml_text("production-like")
    assert "about\n# 250 ms" in header or "about 250 ms" in header.replace("\n# ", " ")


def test_stage_cost_is_proportional_to_work_and_scaled_by_load_factor() -> None:
    p = Profile(name="t", decode_tokens_per_s=100, tokenize_us_per_token=2.0, routing_ms=3.0)
    assert p.stage_cost_us("tokenize", 0) == 0
    assert p.stage_cost_us("tokenize", 10) == pytest.approx(20.0)
    assert p.stage_cost_us("tokenize", 1000) == pytest.approx(2000.0)
    assert p.stage_cost_us("routing") == pytest.approx(3000.0)
    assert p.stage_cost_s("routing") == pytest.approx(0.003)
    loaded = p.with_overrides(load_factor=2.5)
    assert loaded.stage_cost_us("tokenize", 10) == pytest.approx(50.0)
    assert loaded.stage_cost_us("routing") == pytest.approx(7500.0)


def test_jitter_is_bounded_and_seeded() -> None:
    p = Profile(name="t", decode_tokens_per_s=100, safety_us_per_token=1.0, jitter_fraction=0.05)
    a = [p.stage_cost_us("safety", 1000, rng=random.Random(7)) for _ in range(3)]
    assert a[0] == a[1] == a[2]  # same seed, same value
    rng = random.Random(3)
    costs = [p.stage_cost_us("safety", 1000, rng=rng) for _ in range(500)]
    assert all(950 <= c <= 1050 for c in costs)
    assert len(set(costs)) > 400  # actually jittered
    assert p.stage_cost_us("safety", 1000) == 1000  # no rng, no jitter
    # one draw per call whatever the work, so later draws do not depend on zero-cost stages
    r1, r2 = random.Random(5), random.Random(5)
    p.stage_cost_us("safety", 0, rng=r1)
    p.stage_cost_us("routing", 10, rng=r1)  # routing costs 0 in this profile
    p.stage_cost_us("safety", 7, rng=r2)
    p.stage_cost_us("safety", 9, rng=r2)
    assert r1.random() == r2.random()


def test_stage_cost_rejects_unknown_stage_and_negative_work() -> None:
    p = load_cost_profile("zero")
    with pytest.raises(ValueError, match="unknown stage"):
        p.stage_cost_us("gpu", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="work_units"):
        p.stage_cost_us("parse", -1)


def test_with_overrides_copies_and_validates() -> None:
    base = load_cost_profile("spark-1000tps")
    fast = base.with_overrides(decode_tokens_per_s=2000.0, queue_ms=0.0)
    assert fast.decode_tokens_per_s == 2000 and fast.queue_ms == 0
    assert base.decode_tokens_per_s == 1000 and base.queue_ms > 0
    with pytest.raises(CostProfileError, match="unknown profile field"):
        base.with_overrides(decode_tps=5)
    with pytest.raises(CostProfileError, match="decode_tokens_per_s"):
        base.with_overrides(decode_tokens_per_s=0)
    with pytest.raises(CostProfileError, match="jitter_fraction"):
        base.with_overrides(jitter_fraction=1.5)
    with pytest.raises(CostProfileError, match="burst_tokens_per_s"):
        base.with_overrides(burst_probability=0.5)  # no burst rate set
    with pytest.raises(CostProfileError, match="must be >= 0"):
        base.with_overrides(routing_ms=-1.0)
    with pytest.raises(CostProfileError, match="must be a number"):
        base.with_overrides(routing_ms="4")


def test_load_profile_from_path(tmp_path: Path) -> None:
    path = tmp_path / "custom.toml"
    path.write_text('decode_tokens_per_s = 123.0\nrouting_ms = 2\ndescription = "x"\n')
    profile = load_cost_profile(str(path))
    assert profile.name == "custom"
    assert profile.decode_tokens_per_s == 123
    assert profile.stage_cost_us("routing") == 2000
    assert load_cost_profile(path) == profile


def test_load_profile_rejects_typos_unknown_names_and_bad_toml(tmp_path: Path) -> None:
    typo = tmp_path / "typo.toml"
    typo.write_text("decode_tokens_per_s = 10\nroutng_ms = 4\n")
    with pytest.raises(CostProfileError, match="routng_ms"):
        load_cost_profile(typo)
    missing = tmp_path / "missing.toml"
    missing.write_text("routing_ms = 4\n")
    with pytest.raises(CostProfileError, match="decode_tokens_per_s is required"):
        load_cost_profile(missing)
    broken = tmp_path / "broken.toml"
    broken.write_text("decode_tokens_per_s = = 1\n")
    with pytest.raises(CostProfileError, match="invalid TOML"):
        load_cost_profile(broken)
    with pytest.raises(CostProfileError, match=re.escape(", ".join(PROFILE_NAMES))):
        load_cost_profile("no-such-profile")


def test_cli_overrides_parse_as_toml_values() -> None:
    overrides = parse_overrides(["decode_tokens_per_s=2000", " routing_ms = 0.5", 'name="x"'])
    assert overrides == {"decode_tokens_per_s": 2000, "routing_ms": 0.5, "name": "x"}
    profile = load_cost_profile("zero").with_overrides(**overrides)
    assert profile.decode_tokens_per_s == 2000 and profile.routing_ms == 0.5
    with pytest.raises(CostProfileError, match="key=value"):
        parse_overrides(["routing_ms"])
    with pytest.raises(CostProfileError, match="not a TOML value"):
        parse_overrides(["routing_ms=fast"])
