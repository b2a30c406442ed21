"""A JSON Schema (draft 2020-12) validator for the subset of keywords the schemas wsmode stores
from elsewhere use (llm-d-benchmark's Benchmark Report, harness/results/llmd/): written here
because `jsonschema` is no dependency of wsmode, and ~100 lines beat adding one.

Assertions: `type` (one or a list), `enum`, `const`, `required`, `properties`,
`additionalProperties` (a boolean), `items`, `prefixItems`, `minItems`, `maxItems`, `minimum`,
`exclusiveMinimum`, `anyOf`, `oneOf`, `$ref` to `#/$defs/...`, and `format: date-time` (an
assertion here, stricter than the draft's default annotation, so an export never writes a
timestamp llm-d's pydantic models would refuse). Annotations are skipped: `title`,
`description`, `default`, `discriminator` (OpenAPI's; `oneOf` decides), and pydantic's `ge`
(no JSON Schema keyword; the schema states the same bound nowhere else, and wsmode never writes
a negative length or concurrency). Any other keyword raises `SchemaKeywordError`: the validator
never passes a document by ignoring a rule it does not know.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from harness.errors import InputError

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "discriminator", "ge", "$schema", "$id", "$defs"}
)
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    # draft 2020-12: an integer is any number with a zero fractional part (1.0 included)
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and math.isfinite(v) and v.is_integer())
    ),
}


class SchemaViolation(InputError, ValueError):
    """A document that does not follow the schema; the message names the path."""


class SchemaKeywordError(ValueError):
    """The schema uses a keyword this subset does not implement (a bug to fix here)."""


def _date_time(value: str) -> bool:
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in value


class Validator:
    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema

    def _resolve(self, ref: str) -> Mapping[str, Any]:
        if not ref.startswith("#/$defs/"):
            raise SchemaKeywordError(f"$ref {ref!r}: only #/$defs/... references are supported")
        target: Mapping[str, Any] = self.schema["$defs"][ref.removeprefix("#/$defs/")]
        return target

    def errors(self, value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
        """Every violation of `schema` by `value`, as `path: what` lines."""
        out: list[str] = []
        for key, rule in schema.items():
            if key in _ANNOTATIONS:
                continue
            check = getattr(self, "_k_" + key.lstrip("$"), None)
            if check is None:
                raise SchemaKeywordError(f"unsupported JSON Schema keyword {key!r} at {path}")
            out += check(value, rule, schema, path)
        return out

    def validate(self, value: Any) -> None:
        """Raise SchemaViolation naming the first violation (and how many there are)."""
        found = self.errors(value, self.schema)
        if found:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            raise SchemaViolation(found[0] + more)

    # -- keywords: (value, the keyword's rule, the whole subschema, path) -> violations
    def _k_ref(self, v: Any, ref: str, _: Any, path: str) -> list[str]:
        return self.errors(v, self._resolve(ref), path)

    def _k_type(self, v: Any, rule: str | list[str], _: Any, path: str) -> list[str]:
        names = [rule] if isinstance(rule, str) else rule
        if any(_TYPES[n](v) for n in names):
            return []
        return [f"{path}: expected {' or '.join(names)}, got {type(v).__name__}"]

    def _k_enum(self, v: Any, rule: list[Any], _: Any, path: str) -> list[str]:
        return [] if v in rule else [f"{path}: {v!r} is not one of {rule}"]

    def _k_const(self, v: Any, rule: Any, _: Any, path: str) -> list[str]:
        return [] if v == rule else [f"{path}: expected {rule!r}, got {v!r}"]

    def _k_required(self, v: Any, rule: list[str], _: Any, path: str) -> list[str]:
        if not isinstance(v, dict):
            return []
        return [f"{path}: missing required {k!r}" for k in rule if k not in v]

    def _k_properties(self, v: Any, rule: Mapping[str, Any], _: Any, path: str) -> list[str]:
        if not isinstance(v, dict):
            return []
        out: list[str] = []
        for key, sub in rule.items():
            if key in v:
                out += self.errors(v[key], sub, f"{path}.{key}")
        return out

    def _k_additionalProperties(
        self, v: Any, rule: bool | Mapping[str, Any], schema: Mapping[str, Any], path: str
    ) -> list[str]:
        if not isinstance(v, dict):
            return []
        if not isinstance(rule, bool):
            raise SchemaKeywordError(f"additionalProperties as a schema at {path}")
        if rule:
            return []
        known = schema.get("properties", {})
        return [f"{path}: unexpected property {k!r}" for k in v if k not in known]

    def _k_items(self, v: Any, rule: Mapping[str, Any], schema: Any, path: str) -> list[str]:
        if not isinstance(v, list):
            return []
        start = len(schema.get("prefixItems", ()))
        out: list[str] = []
        for i, item in enumerate(v[start:], start=start):
            out += self.errors(item, rule, f"{path}[{i}]")
        return out

    def _k_prefixItems(self, v: Any, rule: list[Any], _: Any, path: str) -> list[str]:
        if not isinstance(v, list):
            return []
        out: list[str] = []
        for i, (item, sub) in enumerate(zip(v, rule, strict=False)):
            out += self.errors(item, sub, f"{path}[{i}]")
        return out

    def _k_minItems(self, v: Any, rule: int, _: Any, path: str) -> list[str]:
        bad = isinstance(v, list) and len(v) < rule
        return [f"{path}: fewer than {rule} items"] if bad else []

    def _k_maxItems(self, v: Any, rule: int, _: Any, path: str) -> list[str]:
        bad = isinstance(v, list) and len(v) > rule
        return [f"{path}: more than {rule} items"] if bad else []

    def _k_minimum(self, v: Any, rule: float, _: Any, path: str) -> list[str]:
        bad = _TYPES["number"](v) and v < rule
        return [f"{path}: {v} is under the minimum {rule}"] if bad else []

    def _k_exclusiveMinimum(self, v: Any, rule: float, _: Any, path: str) -> list[str]:
        bad = _TYPES["number"](v) and v <= rule
        return [f"{path}: {v} is not above {rule}"] if bad else []

    def _k_format(self, v: Any, rule: str, _: Any, path: str) -> list[str]:
        if rule != "date-time":
            raise SchemaKeywordError(f"format {rule!r} at {path}")
        bad = isinstance(v, str) and not _date_time(v)
        return [f"{path}: {v!r} is not an ISO 8601 date-time"] if bad else []

    def _k_anyOf(self, v: Any, rule: list[Any], _: Any, path: str) -> list[str]:
        branches = [self.errors(v, sub, path) for sub in rule]
        if any(not b for b in branches):
            return []
        best = min(branches, key=len)
        return [f"{path}: matches none of anyOf ({best[0]})"]

    def _k_oneOf(self, v: Any, rule: list[Any], _: Any, path: str) -> list[str]:
        branches = [self.errors(v, sub, path) for sub in rule]
        matched = sum(1 for b in branches if not b)
        if matched == 1:
            return []
        if matched > 1:
            return [f"{path}: matches {matched} branches of oneOf"]
        return [f"{path}: matches none of oneOf ({min(branches, key=len)[0]})"]
