"""The one level vocabulary: requirement levels (cases, checker rules) and stream rule levels."""

from __future__ import annotations

from typing import get_args

from harness.protocol.levels import (
    REQUIREMENT_LEVELS,
    BindingLevel,
    RequirementLevel,
    StreamRuleLevel,
    as_requirement,
)
from harness.protocol.stream_rules import RULES


def test_both_vocabularies_share_the_binding_levels_and_differ_in_the_third() -> None:
    assert REQUIREMENT_LEVELS == get_args(RequirementLevel) == ("MUST", "SHOULD", "MAY")
    assert get_args(StreamRuleLevel) == (*get_args(BindingLevel), "INFO")


def test_every_stream_rule_has_a_stream_rule_level() -> None:
    assert {level for level, _ in RULES.values()} == set(get_args(StreamRuleLevel))


def test_an_observation_weighs_as_may_and_binding_levels_keep_their_weight() -> None:
    assert [as_requirement(level) for level in ("MUST", "SHOULD", "INFO", "MAY")] == [
        "MUST",
        "SHOULD",
        "MAY",
        "MAY",
    ]
