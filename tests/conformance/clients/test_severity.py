"""Each client rule is graded by its consequence and names the source of its level; storms are
graded by their count against the stated budget."""

from __future__ import annotations

from harness.conformance.clients.catalogue import CASES, COMMON_RULES
from harness.conformance.clients.severity import (
    CLIENT_RULES,
    RETRY_BUDGET,
    STORM_MUST_FACTOR,
    storm_level,
)


def test_losing_mixing_or_forbidden_is_must_and_every_level_has_a_source() -> None:
    for rule_id, rule in CLIENT_RULES.items():
        assert rule.source.strip(), rule_id
        if rule.consequence in ("lost", "mixed", "forbidden"):
            assert rule.level == "MUST", rule_id
    assert CLIENT_RULES["client.recovers"].level == "MUST"  # a session ended by a 1001
    assert CLIENT_RULES["client.own_outcome"].level == "MUST"  # a leftover response.failed
    assert CLIENT_RULES["client.dead_id"].level == "MUST"
    assert CLIENT_RULES["client.authorized"].level == "MUST"


def test_a_storm_is_graded_by_its_count() -> None:
    assert storm_level(RETRY_BUDGET) is None
    assert storm_level(RETRY_BUDGET + 1) == "SHOULD"
    assert storm_level(RETRY_BUDGET * STORM_MUST_FACTOR - 1) == "SHOULD"
    assert storm_level(200) == "MUST"


def test_every_case_names_known_rules_its_level_and_the_source_of_it() -> None:
    assert set(COMMON_RULES) <= set(CLIENT_RULES)
    for case in CASES:
        assert set(case.rules) <= set(CLIENT_RULES), case.id
        levels = {CLIENT_RULES[r].level for r in case.rules}
        assert case.level == min(levels, key=("MUST", "SHOULD", "MAY").index), case.id
        assert case.source_of_level.split(":", 1)[0] in case.rules
    assert len({case.id for case in CASES}) == len(CASES)
