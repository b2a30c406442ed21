"""The SSE wire format: writing, and parsing at any chunk boundary (CRLF, comments, [DONE])."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from harness.transport import sse_wire
from harness.transport.failures import GarbageFrame
from harness.transport.sse_wire import SseParser, block_fields, encode_events, parse_event
from tests.protocol.conftest import full_stream
from tests.transport.servers import sse_block


def parse(chunks: list[bytes]) -> list[tuple[bytes, int]]:
    parser = SseParser()
    out = []
    for chunk in chunks:
        out += parser.feed(chunk)
    return out + parser.end()


def blocks(chunks: list[bytes]) -> list[bytes]:
    parser = SseParser()
    out = []
    for chunk in chunks:
        out += parser.blocks(chunk)
    last = parser.end_block()
    return out + ([last] if last is not None else [])


def splits(stream: bytes) -> list[list[bytes]]:
    """`stream` cut once at every offset, cut at every pair of offsets, and byte by byte."""
    out = [[stream[:i], stream[i:]] for i in range(len(stream) + 1)]
    out += [
        [stream[:i], stream[i:j], stream[j:]]
        for i in range(len(stream) + 1)
        for j in range(i, len(stream) + 1)
    ]
    return [*out, [stream[i : i + 1] for i in range(len(stream))]]


# -- data payloads ---------------------------------------------------------------------------------
def test_events_split_at_every_byte_come_out_whole() -> None:
    stream = b"".join(sse_block(e) for e in full_stream()[:6])
    expected = parse([stream])
    assert [json.loads(raw) for raw, _ in expected] == full_stream()[:6]
    assert sum(size for _, size in expected) == len(stream)
    for split in range(len(stream) + 1):
        assert parse([stream[:split], stream[split:]]) == expected, split
    assert parse([stream[i : i + 1] for i in range(len(stream))]) == expected


def test_crlf_and_cr_line_ends_even_split_between_cr_and_lf() -> None:
    blocks = b'event: a\r\ndata: {"a":1}\r\n\r\ndata: {"b":2}\r\rdata: {"c":3}\n\n'
    blocks += b"data: [1,\r\ndata: 2]\r\n\r\n"
    want = [b'{"a":1}', b'{"b":2}', b'{"c":3}', b"[1,\n2]"]
    for split in range(len(blocks) + 1):
        assert [raw for raw, _ in parse([blocks[:split], blocks[split:]])] == want, split


def test_comments_event_only_blocks_multiline_data_and_done() -> None:
    stream = (
        b": keep-alive\n\n"
        b"event: ping\n\n"
        b"data: [1,\ndata:  2]\n\n"
        b"data: [DONE]\n\n"
        b"id: 7\ndata:{}\nretry: 5\n\n"
        b'data: {"last":true}'  # the body ends without its blank line
    )
    assert [raw for raw, _ in parse([stream])] == [b"[1,\n2]", b"{}", b'{"last":true}']


def test_every_cut_of_a_crlf_stream_with_comments_and_done_gives_the_same_payloads() -> None:
    stream = (
        b": open\r\n\r\n"
        b'event: response.created\r\ndata: {"a":1}\r\n\r\n'
        b'data: {"b":\r\n: a comment between data lines\r\ndata: 2}\r\n\r\n'
        b"event: done\r\ndata: [DONE]\r\n\r\n"
    )
    want = [b'{"a":1}', b'{"b":\n2}']
    for chunks in splits(stream):
        assert [raw for raw, _ in parse(chunks)] == want, chunks


def test_a_block_size_counts_its_lines_and_the_blank_line() -> None:
    block = b'event: e\ndata: {"x":1}\n\n'
    assert parse([block]) == [(b'{"x":1}', len(block))]
    assert parse([b"data: 1"]) == [(b"1", len(b"data: 1"))]  # no blank line at the end


def test_done_is_skipped_with_or_without_its_event_line_and_space() -> None:
    stream = b"data: [DONE]\n\nevent: x\ndata: [DONE]\n\ndata:[DONE]\n\ndata: [DONE]"
    assert parse([stream]) == []


def test_a_body_of_blank_lines_and_comments_yields_nothing() -> None:
    for stream in (b"", b"\n\n\n", b": only a comment", b": a\n\n: b\r\n\r\n", b"\r"):
        assert parse([stream]) == [], stream


def test_encoded_events_are_one_event_and_one_data_line_each_and_parse_back() -> None:
    events = full_stream()[:4]
    stream = encode_events(events)
    first = events[0]
    assert stream.startswith(f"event: {first['type']}\ndata: ".encode())
    assert stream.count(b"\n\n") == len(events) and b"[DONE]" not in stream
    assert [parse_event(raw) for raw, _ in parse([stream])] == events
    assert sum(size for _, size in parse([stream])) == len(stream)
    assert encode_events([]) == b""


# -- whole blocks, for checkers --------------------------------------------------------------------
def test_blocks_keep_comments_event_lines_and_done_with_lf_line_ends() -> None:
    stream = b": hi\r\n\r\nevent: a\r\ndata: 1\r\n\r\ndata: [DONE]\n\nevent: last\ndata: 2\n"
    want = [b": hi", b"event: a\ndata: 1", b"data: [DONE]", b"event: last\ndata: 2"]
    for chunks in splits(stream):
        assert blocks(chunks) == want, chunks


def test_end_block_is_none_after_a_complete_stream_and_resets_the_parser() -> None:
    parser = SseParser()
    assert parser.blocks(b"data: 1\n\ndata: 2\r") == [b"data: 1"]
    assert parser.end_block() == b"data: 2"
    assert parser.end_block() is None
    assert parser.feed(b"data: 3\n\n") == [(b"3", len(b"data: 3") + 2)]


def test_block_fields_name_and_joined_data() -> None:
    assert block_fields(b"event: response.created\ndata: {}") == ("response.created", b"{}")
    assert block_fields(b"data: a\n: note\ndata:  b\nid: 3") == (None, b"a\nb")
    assert block_fields(b": only a comment") == (None, None)
    assert block_fields(b"event:  ping ") == ("ping", None)


# -- payloads as events ----------------------------------------------------------------------------
def test_parse_event_gives_a_json_object() -> None:
    assert parse_event(b'{"type":"response.created","n":1}') == {
        "type": "response.created",
        "n": 1,
    }


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'"text"', b"\xff\xfe{}", b"{} {}"])
def test_parse_event_refuses_what_is_not_one_json_object(raw: bytes) -> None:
    with pytest.raises(GarbageFrame) as raised:
        parse_event(raw)
    assert raised.value.raw == raw


def test_the_parser_does_no_io() -> None:
    tree = ast.parse(Path(sse_wire.__file__).read_text())
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    allowed = {"__future__", "collections.abc", "typing", "harness.protocol"}
    assert imported <= allowed | {"harness.transport.failures", "harness.transport.received"}
