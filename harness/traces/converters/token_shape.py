"""Text of a recorded token shape: content for sources that keep token counts, not text.

kv-cache-tester captures describe each prompt as ``hash_ids``: one id per block of
``block_size`` (64) tokens, equal ids meaning equal blocks. :func:`prompt_text` writes a text
whose tokens (under the project's tokenizer, ``harness.protocol.tokenizer``) are those blocks:
every block is ``block_size`` one-token words picked by its id (and a scope, so ids of
unrelated sessions do not collide) from a fixed vocabulary of 65,536 words, each a space and 2-7
lowercase letters, which the tokenizer keeps as one piece whatever follows it. So two prompts
sharing their first k ids share exactly their first ``k * block_size`` tokens, and the prefix and
connection caches of a server reuse what the recorded session reused.
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections.abc import Sequence
from functools import lru_cache

BLOCK_TOKENS = 64
_LETTERS = "etaoinshrdlucmfwypvbgk"
#: byte -> its letter (``_LETTERS[b % 22]``), to map a digest's bytes in one call
_LETTER_OF_BYTE = bytes(ord(_LETTERS[b % len(_LETTERS)]) for b in range(256))
_VOCABULARY_SIZE = 1 << 16  # two digest bytes pick one word


@lru_cache(maxsize=1)
def _vocabulary() -> tuple[str, ...]:
    """65,536 one-token words, fixed: per 8 bytes of a SHA-256, a space and 2-7 letters."""
    words: list[str] = []
    for n in range(_VOCABULARY_SIZE // 4):
        data = hashlib.sha256(b"wsmode token_shape vocabulary\x00%d" % n).digest()
        for i in range(0, len(data), 8):
            length = 2 + data[i] % 6
            words.append(" " + data[i + 1 : i + 1 + length].translate(_LETTER_OF_BYTE).decode())
    return tuple(words)


@lru_cache(maxsize=1024)
def block_words(scope: str, block_id: int, size: int = BLOCK_TOKENS) -> tuple[str, ...]:
    """The ``size`` one-token words of block ``block_id`` in ``scope`` (stable everywhere): the
    SHA-256 stream of ``scope, block_id, counter`` read two bytes (one word) at a time."""
    seed = hashlib.sha256(f"{scope}\x00{block_id}\x00".encode())
    stream = bytearray()
    counter = 0
    while len(stream) < 2 * size:
        digest = seed.copy()
        digest.update(b"%d" % counter)
        stream += digest.digest()
        counter += 1
    picks = array("H", bytes(stream[: 2 * size]))
    if sys.byteorder == "big":  # the stream is read little-endian on every machine
        picks.byteswap()
    return tuple(map(_vocabulary().__getitem__, picks))


def prompt_words(
    scope: str, hash_ids: Sequence[int], n_tokens: int, block_size: int = BLOCK_TOKENS
) -> list[str]:
    """The first ``n_tokens`` one-token words of the blocks ``hash_ids``."""
    words: list[str] = []
    for block_id in hash_ids:
        if len(words) >= n_tokens:
            break
        words.extend(block_words(scope, block_id, block_size))
    return words[:n_tokens]


def prompt_text(
    scope: str, hash_ids: Sequence[int], n_tokens: int, block_size: int = BLOCK_TOKENS
) -> str:
    """A text of exactly ``n_tokens`` tokens whose blocks are ``hash_ids``."""
    return "".join(prompt_words(scope, hash_ids, n_tokens, block_size))


def fresh_text(scope: str, label: str, n_tokens: int) -> str:
    """``n_tokens`` tokens of text no recorded block shares (model output with no later prompt
    to take it from)."""
    seed = int.from_bytes(hashlib.sha256(label.encode()).digest()[:6], "big")
    blocks = range(-seed - (n_tokens // BLOCK_TOKENS) - 1, -seed)
    return prompt_text(scope, list(blocks), n_tokens)
