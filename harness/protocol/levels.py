"""The levels wsmode grades by, defined once for the stream rules, the checker's rules and cases.

Two vocabularies share the binding words of RFC 2119 and differ in their third member:

- A **requirement level** (MUST / SHOULD / MAY) says how strongly the protocol asks for a
  behaviour. A conformance case declares one, a checker rule has one, a finding weighs one, and
  results files store the case's.
- A **stream rule level** (MUST / SHOULD / INFO) is what `stream_rules.RULES` gives each rule the
  accumulator reports. INFO is not a requirement: it marks an observation of something tolerated
  (an unknown event type, a resumed stream), reported and never failed, never raised. No stream
  rule is optional behaviour, so none is MAY; judged in a case, INFO weighs as MAY
  (`as_requirement`).
"""

from __future__ import annotations

from typing import Literal

# A breach of these counts against the target: FAIL (MUST) or NON-STRICT (SHOULD).
BindingLevel = Literal["MUST", "SHOULD"]

RequirementLevel = Literal[BindingLevel, "MAY"]
REQUIREMENT_LEVELS: tuple[RequirementLevel, ...] = ("MUST", "SHOULD", "MAY")

StreamRuleLevel = Literal[BindingLevel, "INFO"]


def as_requirement(level: StreamRuleLevel | RequirementLevel) -> RequirementLevel:
    """The requirement level a rule's finding weighs: INFO (an observation) weighs as MAY."""
    if level == "MUST":
        return "MUST"
    if level == "SHOULD":
        return "SHOULD"
    return "MAY"
