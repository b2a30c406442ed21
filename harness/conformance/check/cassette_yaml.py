"""YAML cassettes as the recorders write them, read as plain data and with bounds.

Dialects: VCR.py (`!!python/...` tags, e.g. aiohttp's `multidict.istr` header keys, read as the
strings, lists and mappings they hold: no object is ever constructed), Ruby VCR (Psych's local
tags: `!binary` base64 bodies for ASCII-8BIT strings, `!ruby/object:...`, `!ruby/hash:...`,
`!ruby/string`, ... read as their data), go-vcr (plain YAML). Any other local tag is read as its
plain node too: a tag never makes a cassette unreadable, broken YAML always does.

Bounds (a hostile file gets `CassetteBoundExceeded`, a `yaml.YAMLError`, never RecursionError
or a multi-GiB expansion): nesting depth, alias count, and the bytes aliases would repeat
(PyYAML shares an aliased node, but every reader after it walks each repetition).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Final

import yaml

MAX_DEPTH: Final = 100  # three Python frames per level while composing: far inside the limit
MAX_ALIASES: Final = 10_000
MAX_ALIAS_BYTES: Final = 16 * 1024 * 1024  # scalar bytes repeated by aliases, in all


class CassetteBoundExceeded(yaml.YAMLError):
    """A cassette past one of the bounds above."""


class CassetteLoader(yaml.SafeLoader):
    """SafeLoader with the recorders' tags read as plain data, and the bounds above."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0
        self._alias_bytes = 0
        self._anchor_bytes: dict[str, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self._count_alias(self.peek_event().anchor)  # type: ignore[no-untyped-call]
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise CassetteBoundExceeded(f"YAML nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _count_alias(self, anchor: str) -> None:
        self._aliases += 1
        if self._aliases > MAX_ALIASES:
            raise CassetteBoundExceeded(f"more than {MAX_ALIASES} YAML aliases")
        size = self._anchor_bytes.get(anchor)
        if size is None:
            node = self.anchors.get(anchor)
            size = self._anchor_bytes[anchor] = _scalar_bytes(node) if node is not None else 0
        self._alias_bytes += size
        if self._alias_bytes > MAX_ALIAS_BYTES:
            raise CassetteBoundExceeded(
                f"YAML aliases repeat more than {MAX_ALIAS_BYTES // 1024 // 1024} MiB"
            )


def _scalar_bytes(node: yaml.Node) -> int:
    """The scalar text below `node` (iterative: the node may be as deep as the bound)."""
    total, stack = 0, [node]
    while stack and total <= MAX_ALIAS_BYTES:
        current = stack.pop()
        if isinstance(current, yaml.ScalarNode):
            total += len(current.value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.extend((key, value))
    return total


def _plain(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """A tagged node as the data it holds: a string, a list or a mapping."""
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]


def _plain_tagged(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
    return _plain(loader, node)


def _python_object(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
    """`!!python/object/apply:X [arg]` (aiohttp's `istr` header keys) is its one argument; any
    other python tag is its plain data, its `args` when it has only them."""
    value = _plain(loader, node)
    if isinstance(value, dict) and set(value) <= {"args", "kwds", "state"} and "args" in value:
        value = value["args"]
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str | bytes):
        return value[0]
    return value


def _python_bytes(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    return _binary(loader, node)


def _binary(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """Psych's `!binary` (an ASCII-8BIT string, base64): the text it encodes, as UTF-8."""
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    try:
        raw = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise yaml.constructor.ConstructorError(
            None, None, "a !binary value that is not base64", node.start_mark
        ) from None
    return raw.decode("utf-8", "replace")


CassetteLoader.add_constructor("!binary", _binary)
CassetteLoader.add_constructor("tag:yaml.org,2002:binary", _binary)
CassetteLoader.add_constructor("tag:yaml.org,2002:python/bytes", _python_bytes)
CassetteLoader.add_multi_constructor("tag:yaml.org,2002:python/", _python_object)
CassetteLoader.add_multi_constructor("!", _plain_tagged)  # !ruby/..., and any other local tag


def load_cassette(text: str) -> Any:
    """One YAML document, read as plain data under the bounds; yaml.YAMLError when it is broken
    or past a bound (`CassetteBoundExceeded`)."""
    loader = CassetteLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
