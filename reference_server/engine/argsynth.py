"""Seeded synthesis of function-call arguments that validate against the tool's JSON Schema.

Supported subset (what function tools use in practice):

- ``type`` (a name or a list of names): object, string, integer, number, boolean, array, null;
- object: ``properties``, ``required``, ``additionalProperties`` (bool or schema);
- string: ``enum``, ``minLength``/``maxLength``, ``format`` (date-time, date, time, email, uri,
  uuid, ipv4, hostname); plausible values from the property name (``path``/``file`` → a file
  path, ``command`` → a shell command, ``url``, ``pattern``/``query``, ``content``/``code``, ...);
- integer/number: ``minimum``/``maximum``, ``exclusiveMinimum``/``exclusiveMaximum`` (numeric);
- array: ``items``, ``minItems``/``maxItems``, ``uniqueItems``;
- ``enum``, ``const``, ``anyOf``/``oneOf`` (one branch is picked; sibling keywords are merged
  into it), ``allOf`` (merged), local ``$ref`` (``#/...``), boolean schemas.

Not supported (ignored): ``pattern``, ``multipleOf``, ``minProperties``/``maxProperties``,
``patternProperties``, ``if``/``then``/``else``, ``not``, ``dependentRequired``. A contradictory
schema (``minimum`` above ``maximum``, a required property forbidden by
``additionalProperties: false``, a ``false`` schema) raises :class:`UnsatisfiableSchema`.

Required properties are always present; each optional one is included with probability
:data:`OPTIONAL_PROPERTY_PROBABILITY`. Values depend only on the schema and the ``rng`` state.
"""

from __future__ import annotations

import json
import math
import random
import string as _string
from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness.errors import ProtocolError

__all__ = [
    "MAX_DEPTH",
    "OPTIONAL_PROPERTY_PROBABILITY",
    "UnsatisfiableSchema",
    "synthesize_arguments",
    "synthesize_value",
]

OPTIONAL_PROPERTY_PROBABILITY: Final = 0.5
EXTRA_PROPERTY_PROBABILITY: Final = 0.15
#: Below this nesting depth, only required properties and minimum array lengths are generated.
MAX_DEPTH: Final = 8
_ONEOF_ATTEMPTS: Final = 12

_TYPES: Final = ("object", "string", "integer", "number", "boolean", "array", "null")

_DIRS: Final = ("src", "lib", "tests", "app", "pkg", "internal", "cmd", "scripts", "docs", "api")
_SUBDIRS: Final = ("core", "utils", "server", "client", "models", "handlers", "config", "cache")
_STEMS: Final = (
    "main",
    "index",
    "utils",
    "config",
    "server",
    "client",
    "parser",
    "session",
    "handlers",
    "models",
    "test_api",
    "cache",
    "errors",
    "settings",
    "router",
    "store",
    "engine",
    "schema",
)
_EXTS: Final = (".py", ".ts", ".rs", ".go", ".tsx", ".js", ".toml", ".json", ".md", ".yaml")
_COMMANDS: Final = (
    "pytest -q",
    "ls -la",
    "git status",
    "git diff --stat",
    "cargo test",
    "npm test",
    "rg -n TODO",
    "make build",
    "python -m mypy .",
    "go test ./...",
    "cat README.md",
    "ruff check .",
    "git log --oneline -5",
    "npm run lint",
    "pip install -e .",
)
_WORDS: Final = (
    "parse",
    "config",
    "handler",
    "request",
    "response",
    "cache",
    "session",
    "token",
    "error",
    "retry",
    "timeout",
    "buffer",
    "stream",
    "client",
    "server",
    "schema",
    "update",
    "fix",
    "refactor",
    "test",
    "build",
    "deploy",
    "render",
    "validate",
    "index",
    "query",
    "result",
)
#: Code identifiers, shared with the engine's text vocabulary.
IDENTIFIERS: Final = (
    "parse_request",
    "SessionCache",
    "handle_error",
    "TokenStream",
    "load_config",
    "retry_after",
    "build_index",
    "ResponseStore",
    "validate_input",
    "render_prompt",
    "max_tokens",
    "user_id",
)
_SENTENCES: Final = (
    "Fix the failing test in the parser module.",
    "Refactor the session cache to evict the oldest entry first.",
    "Add a timeout to the retry loop.",
    "Update the config loader to accept TOML files.",
    "Check why the build fails on the CI runner.",
    "Rename the handler and update its callers.",
    "The function returns None when the input is empty.",
)
_CODE: Final = (
    "def main() -> None:\n    run()\n",
    'return {"status": "ok"}\n',
    "if err != nil {\n\treturn err\n}\n",
    "const result = await fetch(url);\n",
    "for item in items:\n    process(item)\n",
    'fn main() {\n    println!("hello");\n}\n',
    "import os\nimport sys\n",
)
_LANGUAGES: Final = ("python", "typescript", "rust", "go", "javascript", "bash")


class UnsatisfiableSchema(ProtocolError, ValueError):
    """The schema admits no value (or uses a construct in a way this generator cannot satisfy)."""


# -- public API -------------------------------------------------------------------------------


def synthesize_arguments(schema: Mapping[str, Any] | None, rng: random.Random) -> dict[str, Any]:
    """Arguments for a function tool whose ``parameters`` are ``schema`` (an object schema).

    A missing or empty schema yields ``{}``.
    """
    if not schema:
        return {}
    value = _Synth(schema, rng).value(schema, name="", depth=0)
    if not isinstance(value, dict):
        raise UnsatisfiableSchema(
            f"function parameters must describe an object, got a schema producing "
            f"{type(value).__name__}"
        )
    return value


def synthesize_value(
    schema: Mapping[str, Any] | bool, rng: random.Random, *, name: str = ""
) -> Any:
    """Any JSON value valid for ``schema``; ``name`` is a property name used as a content hint."""
    return _Synth(schema, rng).value(schema, name=name, depth=0)


# -- implementation ---------------------------------------------------------------------------


class _Synth:
    def __init__(self, root: Mapping[str, Any] | bool, rng: random.Random) -> None:
        self.root = root
        self.rng = rng

    # dispatch ---------------------------------------------------------------------------------

    def value(self, schema: Mapping[str, Any] | bool, *, name: str, depth: int) -> Any:
        if schema is True:
            schema = {}
        if schema is False:
            raise UnsatisfiableSchema(
                f"property {name or '<root>'!r}: schema 'false' admits no value"
            )
        if not isinstance(schema, Mapping):
            raise UnsatisfiableSchema(f"property {name or '<root>'!r}: schema must be an object")
        if depth > 64:
            raise UnsatisfiableSchema("schema nesting too deep (recursive $ref?)")
        schema = self._expand(schema, depth)
        if "const" in schema:
            return _copy_json(schema["const"])
        if "enum" in schema:
            options = list(schema["enum"])
            if not options:
                raise UnsatisfiableSchema(f"property {name or '<root>'!r}: empty enum")
            return _copy_json(self.rng.choice(options))
        if "oneOf" in schema:
            return self._one_of(schema, name=name, depth=depth)
        if "anyOf" in schema:
            branches = _branches(schema, "anyOf", name)
            branch = self.rng.choice(branches)
            return self.value(_merge(_without(schema, "anyOf"), branch), name=name, depth=depth + 1)
        kind = self._pick_type(schema, name)
        if kind == "object":
            return self._object(schema, name=name, depth=depth)
        if kind == "array":
            return self._array(schema, name=name, depth=depth)
        if kind == "string":
            return self._string(schema, name=name)
        if kind == "integer":
            return self._integer(schema, name=name)
        if kind == "number":
            return self._number(schema, name=name)
        if kind == "boolean":
            return self.rng.random() < 0.5
        return None  # "null"

    def _expand(self, schema: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
        """Resolve a local $ref and merge allOf into the schema."""
        if "$ref" in schema:
            target = self._resolve_ref(schema["$ref"])
            schema = _merge(target, _without(schema, "$ref")) if len(schema) > 1 else target
            return self._expand(schema, depth + 1) if depth < 64 else schema
        if "allOf" in schema:
            merged: Mapping[str, Any] = _without(schema, "allOf")
            for part in _branches(schema, "allOf", ""):
                merged = _merge(merged, self._expand(part, depth + 1))
            return merged
        return schema

    def _resolve_ref(self, ref: Any) -> Mapping[str, Any]:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise UnsatisfiableSchema(f"only local $ref ('#/...') is supported, got {ref!r}")
        node: Any = self.root
        for raw in ref[1:].split("/")[1:] if ref != "#" else []:
            key = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            else:
                raise UnsatisfiableSchema(f"$ref {ref!r} does not resolve")
        if node is True:
            return {}
        if not isinstance(node, Mapping):
            raise UnsatisfiableSchema(f"$ref {ref!r} does not point at a schema")
        return node

    def _pick_type(self, schema: Mapping[str, Any], name: str) -> str:
        declared = schema.get("type")
        if declared is None:
            return _infer_type(schema)
        kinds = [declared] if isinstance(declared, str) else list(declared)
        kinds = [k for k in kinds if k in _TYPES]
        if not kinds:
            raise UnsatisfiableSchema(
                f"property {name or '<root>'!r}: unsupported type {declared!r}"
            )
        return str(self.rng.choice(kinds))

    def _one_of(self, schema: Mapping[str, Any], *, name: str, depth: int) -> Any:
        branches = _branches(schema, "oneOf", name)
        base = _without(schema, "oneOf")
        merged = [_merge(base, self._expand(b, depth + 1)) for b in branches]
        value: Any = None
        for _ in range(_ONEOF_ATTEMPTS):
            pick = self.rng.randrange(len(merged))
            value = self.value(merged[pick], name=name, depth=depth + 1)
            if sum(1 for m in merged if self._conforms(m, value, depth + 1)) == 1:
                return value
        return value  # best effort: branches overlap so much that no exclusive value was found

    # types ------------------------------------------------------------------------------------

    def _object(self, schema: Mapping[str, Any], *, name: str, depth: int) -> dict[str, Any]:
        props = schema.get("properties") or {}
        required = list(dict.fromkeys(schema.get("required") or []))
        additional = schema.get("additionalProperties", True)
        out: dict[str, Any] = {}
        for key, sub in props.items():
            include = key in required or (
                depth < MAX_DEPTH and self.rng.random() < OPTIONAL_PROPERTY_PROBABILITY
            )
            if include:
                out[key] = self.value(sub, name=key, depth=depth + 1)
        for key in required:
            if key in out:
                continue
            if additional is False:
                raise UnsatisfiableSchema(
                    f"property {key!r} is required but not allowed by additionalProperties: false"
                )
            extra_schema = additional if isinstance(additional, Mapping) else {}
            out[key] = self.value(extra_schema, name=key, depth=depth + 1)
        if (
            isinstance(additional, Mapping)
            and depth < MAX_DEPTH
            and self.rng.random() < EXTRA_PROPERTY_PROBABILITY
        ):
            key = f"extra_{self.rng.choice(_WORDS)}"
            if key not in props and key not in out:
                out[key] = self.value(additional, name=key, depth=depth + 1)
        return out

    def _array(self, schema: Mapping[str, Any], *, name: str, depth: int) -> list[Any]:
        items = schema.get("items", {})
        lo = int(schema.get("minItems", 0))
        hi_decl = schema.get("maxItems")
        hi = int(hi_decl) if hi_decl is not None else lo + 3
        if lo > hi:
            raise UnsatisfiableSchema(f"property {name or '<root>'!r}: minItems > maxItems")
        # Without minItems, prefer 1-3 items (an empty list is valid but rarely what a model
        # sends); maxItems: 0 still yields [].
        floor = min(max(lo, 1), hi)
        n = lo if depth >= MAX_DEPTH else self.rng.randint(floor, min(hi, floor + 2))
        singular = name[:-1] if name.endswith("s") else name
        unique = bool(schema.get("uniqueItems"))
        out: list[Any] = []
        seen: set[str] = set()
        for _ in range(n):
            for attempt in range(20):
                item = self.value(items, name=singular, depth=depth + 1)
                key = json.dumps(item, sort_keys=True)
                if not unique or key not in seen:
                    break
                if attempt == 19:
                    if len(out) >= lo:
                        return out
                    raise UnsatisfiableSchema(
                        f"property {name or '<root>'!r}: cannot find {lo} unique items"
                    )
            seen.add(key)
            out.append(item)
        return out

    def _string(self, schema: Mapping[str, Any], *, name: str) -> str:
        lo = int(schema.get("minLength", 0))
        hi_decl = schema.get("maxLength")
        hi = int(hi_decl) if hi_decl is not None else None
        if hi is not None and lo > hi:
            raise UnsatisfiableSchema(f"property {name or '<root>'!r}: minLength > maxLength")
        fmt = schema.get("format")
        text = self._format(fmt) if isinstance(fmt, str) else None
        if text is None:
            text = self._hinted_string(name)
        if hi is not None and len(text) > hi:
            text = text[:hi]
        if len(text) < lo:
            text += "".join(self.rng.choice(_string.ascii_lowercase) for _ in range(lo - len(text)))
        return text

    def _format(self, fmt: str) -> str | None:
        r = self.rng
        if fmt == "date-time":
            return (
                f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T"
                f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z"
            )
        if fmt == "date":
            return f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
        if fmt == "time":
            return f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"
        if fmt == "email":
            return f"{r.choice(_WORDS)}@example.com"
        if fmt in ("uri", "url", "uri-reference", "iri"):
            return self._url()
        if fmt == "uuid":
            h = f"{r.getrandbits(128):032x}"
            return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
        if fmt == "ipv4":
            return ".".join(str(r.randint(1, 254)) for _ in range(4))
        if fmt == "hostname":
            return f"{r.choice(_WORDS)}.example.com"
        return None

    def _hinted_string(self, name: str) -> str:
        r = self.rng
        n = name.lower()
        if any(h in n for h in ("path", "file", "dir", "folder", "cwd", "workdir")):
            return self._path(directory_only="dir" in n or "folder" in n or n in ("cwd", "workdir"))
        if any(h in n for h in ("command", "cmd", "shell", "script", "argv")):
            return r.choice(_COMMANDS)
        if any(h in n for h in ("url", "uri", "href", "link", "endpoint")):
            return self._url()
        if any(h in n for h in ("pattern", "query", "regex", "search", "glob")):
            return r.choice(IDENTIFIERS + _WORDS)
        if any(h in n for h in ("code", "content", "patch", "diff", "body", "source", "text")):
            return r.choice(_CODE)
        if any(
            h in n
            for h in (
                "description",
                "message",
                "reason",
                "explanation",
                "summary",
                "comment",
                "prompt",
                "instruction",
                "note",
                "title",
            )
        ):
            return r.choice(_SENTENCES)
        if any(h in n for h in ("lang",)):
            return r.choice(_LANGUAGES)
        if n.endswith("name") or n.endswith("id") or n in ("symbol", "identifier", "key"):
            return r.choice(IDENTIFIERS)
        return r.choice(_WORDS)

    def _path(self, *, directory_only: bool) -> str:
        r = self.rng
        parts = [r.choice(_DIRS)]
        if r.random() < 0.6:
            parts.append(r.choice(_SUBDIRS))
        if directory_only:
            return "/".join(parts)
        return "/".join(parts) + "/" + r.choice(_STEMS) + r.choice(_EXTS)

    def _url(self) -> str:
        r = self.rng
        return f"https://{r.choice(_WORDS)}.example.com/{r.choice(_WORDS)}/{r.choice(_STEMS)}"

    def _integer(self, schema: Mapping[str, Any], *, name: str) -> int:
        lo, hi = _numeric_bounds(schema, name)
        ilo = math.ceil(lo[0]) if lo else None
        if lo and lo[1] and ilo == lo[0]:
            ilo = int(lo[0]) + 1
        ihi = math.floor(hi[0]) if hi else None
        if hi and hi[1] and ihi == hi[0]:
            ihi = int(hi[0]) - 1
        if ilo is None and ihi is None:
            ilo, ihi = _default_range(name)
        elif ilo is None:
            assert ihi is not None
            ilo = min(0, ihi) if ihi >= 0 else ihi - 100
        elif ihi is None:
            ihi = ilo + 100
        if ilo > ihi:
            raise UnsatisfiableSchema(f"property {name or '<root>'!r}: no integer within bounds")
        return self.rng.randint(ilo, ihi)

    def _number(self, schema: Mapping[str, Any], *, name: str) -> float | int:
        lo, hi = _numeric_bounds(schema, name)
        flo = lo[0] if lo else None
        fhi = hi[0] if hi else None
        if flo is None and fhi is None:
            hinted = _default_range(name)
            if hinted != (0, 100):  # a count-like name: whole numbers read more plausibly
                return self.rng.randint(*hinted)
            flo, fhi = 0.0, 100.0
        elif flo is None:
            assert fhi is not None
            flo = fhi - 100.0
        elif fhi is None:
            fhi = flo + 100.0

        def ok(x: float) -> bool:
            above = x > flo if (lo and lo[1]) else x >= flo
            below = x < fhi if (hi and hi[1]) else x <= fhi
            return above and below

        candidate = round(self.rng.uniform(flo, fhi), 2)
        if ok(candidate):
            return candidate
        mid = flo + (fhi - flo) / 2
        if ok(mid):
            return mid
        if ok(flo):
            return flo
        raise UnsatisfiableSchema(f"property {name or '<root>'!r}: no number within bounds")

    # minimal conformance check, used to make oneOf picks exclusive -----------------------------

    def _conforms(self, schema: Mapping[str, Any] | bool, value: Any, depth: int) -> bool:
        if schema is True:
            return True
        if schema is False or not isinstance(schema, Mapping) or depth > 64:
            return False
        schema = self._expand(schema, depth)
        if "const" in schema and not _json_equal(schema["const"], value):
            return False
        if "enum" in schema and not any(_json_equal(e, value) for e in schema["enum"]):
            return False
        if "anyOf" in schema and not any(
            self._conforms(b, value, depth + 1) for b in schema["anyOf"]
        ):
            return False
        if (
            "oneOf" in schema
            and sum(1 for b in schema["oneOf"] if self._conforms(b, value, depth + 1)) != 1
        ):
            return False
        declared = schema.get("type")
        if declared is not None:
            kinds = [declared] if isinstance(declared, str) else list(declared)
            if not any(_is_type(value, k) for k in kinds):
                return False
        if isinstance(value, str):
            if len(value) < int(schema.get("minLength", 0)):
                return False
            if "maxLength" in schema and len(value) > int(schema["maxLength"]):
                return False
        if _is_type(value, "number"):
            lo, hi = _numeric_bounds(schema, "")
            if lo and (value <= lo[0] if lo[1] else value < lo[0]):
                return False
            if hi and (value >= hi[0] if hi[1] else value > hi[0]):
                return False
        if isinstance(value, list):
            if len(value) < int(schema.get("minItems", 0)):
                return False
            if "maxItems" in schema and len(value) > int(schema["maxItems"]):
                return False
            items = schema.get("items")
            if items is not None and not all(self._conforms(items, v, depth + 1) for v in value):
                return False
        if isinstance(value, dict):
            props = schema.get("properties") or {}
            if any(k not in value for k in schema.get("required") or []):
                return False
            additional = schema.get("additionalProperties", True)
            for k, v in value.items():
                if k in props:
                    if not self._conforms(props[k], v, depth + 1):
                        return False
                elif not self._conforms(additional, v, depth + 1):
                    return False
        return True


# -- helpers ----------------------------------------------------------------------------------


def _default_range(name: str) -> tuple[int, int]:
    """A plausible range for an unbounded number, from its property name."""
    n = name.lower()
    if "timeout" in n or n.endswith(("_ms", "ms")):
        return (1000, 120_000)
    if n.endswith(("_s", "seconds", "_sec")):
        return (1, 300)
    if "line" in n:
        return (1, 500)
    if any(h in n for h in ("offset", "limit", "count", "max", "num", "size", "depth", "page")):
        return (1, 200)
    return (0, 100)


def _infer_type(schema: Mapping[str, Any]) -> str:
    if any(k in schema for k in ("properties", "required", "additionalProperties")):
        return "object"
    if any(k in schema for k in ("items", "minItems", "maxItems", "uniqueItems")):
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
        return "number"
    return "string"


def _branches(schema: Mapping[str, Any], key: str, name: str) -> list[Any]:
    branches = schema.get(key)
    if not isinstance(branches, Sequence) or isinstance(branches, str) or not branches:
        raise UnsatisfiableSchema(f"property {name or '<root>'!r}: {key} must be a non-empty list")
    return list(branches)


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _merge(base: Mapping[str, Any], branch: Mapping[str, Any] | bool) -> dict[str, Any]:
    """Shallow merge for anyOf/oneOf/allOf: branch keys win; required and properties combine."""
    if branch is True:
        return dict(base)
    if branch is False or not isinstance(branch, Mapping):
        raise UnsatisfiableSchema("a schema branch admits no value")
    out = {**base, **branch}
    if "required" in base and "required" in branch:
        out["required"] = list(dict.fromkeys([*base["required"], *branch["required"]]))
    if "properties" in base and "properties" in branch:
        out["properties"] = {**base["properties"], **branch["properties"]}
    return out


def _numeric_bounds(
    schema: Mapping[str, Any], name: str
) -> tuple[tuple[float, bool] | None, tuple[float, bool] | None]:
    """(lower, upper) bounds as (value, exclusive) pairs, or None when unbounded."""
    lo: tuple[float, bool] | None = None
    hi: tuple[float, bool] | None = None
    if "minimum" in schema:
        lo = (schema["minimum"], schema.get("exclusiveMinimum") is True)
    if "maximum" in schema:
        hi = (schema["maximum"], schema.get("exclusiveMaximum") is True)
    ex_lo = schema.get("exclusiveMinimum")
    if (
        isinstance(ex_lo, int | float)
        and not isinstance(ex_lo, bool)
        and (lo is None or ex_lo >= lo[0])
    ):
        lo = (ex_lo, True)
    ex_hi = schema.get("exclusiveMaximum")
    if (
        isinstance(ex_hi, int | float)
        and not isinstance(ex_hi, bool)
        and (hi is None or ex_hi <= hi[0])
    ):
        hi = (ex_hi, True)
    return lo, hi


def _is_type(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return False


def _json_equal(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _copy_json(value: Any) -> Any:
    return json.loads(json.dumps(value))
