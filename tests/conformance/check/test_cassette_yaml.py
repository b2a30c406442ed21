"""Cassette YAML: the recorders' tags read as plain data, and the reading bounds."""

from __future__ import annotations

import pytest
import yaml

from harness.conformance.check import cassette_yaml
from harness.conformance.check.cassette_yaml import CassetteBoundExceeded, load_cassette


def test_ruby_binary_is_the_text_it_encodes() -> None:
    text = "body:\n  encoding: ASCII-8BIT\n  string: !binary |-\n    ZXZlbnQ6IHggCmRhdGE6IHt9\n"
    assert load_cassette(text) == {
        "body": {"encoding": "ASCII-8BIT", "string": "event: x \ndata: {}"}
    }


def test_psych_object_tags_are_their_data() -> None:
    text = (
        "a: !ruby/object:Faraday::Env\n  k: v\n"
        "b: !ruby/hash:ActiveSupport::HashWithIndifferentAccess\n  x: 1\n"
        "c: !ruby/string:Foo str\n"
    )
    assert load_cassette(text) == {"a": {"k": "v"}, "b": {"x": 1}, "c": "str"}


def test_python_tags_are_plain_data_and_construct_nothing() -> None:
    text = (
        "headers:\n"
        "  ? !!python/object/apply:multidict._multidict.istr\n    - Content-Type\n"
        "  : - application/json\n"
        "t: !!python/tuple [1, 2]\n"
        "o: !!python/object/apply:os.system\n  args: [echo pwned]\n"
    )
    loaded = load_cassette(text)
    assert loaded == {
        "headers": {"Content-Type": ["application/json"]},
        "t": [1, 2],
        "o": "echo pwned",
    }


def test_broken_yaml_is_still_an_error() -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        load_cassette("interactions:\n  - request: [unclosed\n")
    assert not isinstance(caught.value, CassetteBoundExceeded)


def test_deep_yaml_is_refused_at_the_depth_bound() -> None:
    with pytest.raises(CassetteBoundExceeded, match="deeper than 100"):
        load_cassette("a: " + "[" * 50_000 + "]" * 50_000 + "\n")


def test_aliases_repeating_a_large_body_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cassette_yaml, "MAX_ALIAS_BYTES", 10_000)
    text = "big: &b " + "x" * 1_000 + "\nrefs:\n" + "".join("  - *b\n" for _ in range(20))
    with pytest.raises(CassetteBoundExceeded, match="aliases repeat"):
        load_cassette(text)
    few = "big: &b " + "x" * 1_000 + "\nrefs:\n" + "".join("  - *b\n" for _ in range(5))
    assert load_cassette(few)["refs"] == ["x" * 1_000] * 5
