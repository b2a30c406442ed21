import inspect
import json.decoder
import textwrap
import zlib

from hypothesis import given
from hypothesis import strategies as st

from harness.protocol.tokenizer import VOCAB_SIZE, count_tokens, split, tokenize

PROSE = textwrap.dedent("""\
    The reference server keeps one previous response per connection. When a client continues a
    conversation it sends only the new items, and the server appends their tokens to the cached
    rendering instead of tokenizing the whole history again. This matters because agents often
    carry a hundred thousand tokens of context, most of it tool output they have already seen.
    Measurements on a small machine showed that the saving grows with the length of the rollout,
    which is exactly what the benchmark is meant to demonstrate to people evaluating the API.
""")
TRACEBACK = textwrap.dedent("""\
    Traceback (most recent call last):
      File "/srv/app/handlers.py", line 118, in handle_request
        payload = json.loads(body)
      File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
        return _default_decoder.decode(s)
    json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
""")
DIFF = textwrap.dedent("""\
    diff --git a/src/cache.py b/src/cache.py
    index 3f2a1c0..9b7e4d2 100644
    --- a/src/cache.py
    +++ b/src/cache.py
    @@ -41,7 +41,9 @@ class ResponseCache:
    -        self._entries[key] = value
    +        if len(self._entries) >= self.max_entries:
    +            self._entries.popitem(last=False)
    +        self._entries[key] = value
""")
CODE = inspect.getsource(json.decoder)


def test_examples_split_like_a_bpe_pretokenizer() -> None:
    assert split("Hello, world!") == ["Hello", ",", " world", "!"]
    assert split(" getElementById") == [" get", "Element", "By", "Id"]
    assert split("snake_case_name") == ["snake", "_case", "_name"]
    assert split("12345678") == ["123", "456", "78"]
    assert split("don't") == ["don't"]
    assert split("x\n    return y") == ["x", "\n", "   ", " return", " y"]
    # a long word falls apart into several pieces, as a rare word does in a real vocabulary
    assert len(split(" internationalization")) == 3


def test_counts_are_about_four_characters_per_token() -> None:
    for sample in (PROSE, TRACEBACK, CODE):
        expected = len(sample) / 4
        assert 0.75 * expected <= count_tokens(sample) <= 1.25 * expected, sample[:40]
    # Hex hashes and diff markers are token-dense in real vocabularies too (~3 chars/token).
    assert 2.5 <= len(DIFF) / count_tokens(DIFF) <= 4


@given(st.text())
def test_split_round_trips_and_counts_agree(text: str) -> None:
    pieces = split(text)
    assert "".join(pieces) == text
    assert all(pieces)
    assert count_tokens(text) == len(pieces) == len(tokenize(text))


def test_lone_surrogates_round_trip() -> None:
    text = "a\ud800b \udfff"
    assert "".join(split(text)) == text
    assert len(tokenize(text)) == count_tokens(text)


def test_ids_are_stable_and_in_vocabulary() -> None:
    # crc32 of the UTF-8 piece: the same in every process (unlike hash()).
    assert tokenize("hello world") == [
        zlib.crc32(b"hello") % VOCAB_SIZE,
        zlib.crc32(b" world") % VOCAB_SIZE,
    ]
    assert all(0 <= i < VOCAB_SIZE for i in tokenize(CODE))
