from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from harness.protocol.tokenizer import split, token_id, tokenize
from reference_server.state.render import (
    END,
    IMAGE,
    IMAGE_TOKENS,
    START,
    Rendering,
    render_full,
    render_item,
    render_prefix,
    shared_prefix_tokens,
)

from .item_strategies import any_item, valid_item

USER = {"type": "message", "role": "user", "content": "Fix the failing test."}
CALL = {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"cmd":"ls"}'}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "README.md\nsrc\n"}


@given(st.lists(any_item, max_size=12), st.data())
def test_append_equals_full_render(items: list[Any], data: st.DataObject) -> None:
    items = [item for item in items if isinstance(item, dict)]
    cut = data.draw(st.integers(0, len(items)))
    full = render_full(items)
    appended = render_full(items[:cut]).append(items[cut:])
    assert appended.tokens() == full.tokens()
    assert appended == full
    assert full.token_count == len(full.tokens())
    assert full.item_count == len(items)


@given(st.lists(st.lists(valid_item, max_size=4), max_size=5))
def test_turn_by_turn_appends_equal_full_render(turns: list[list[Any]]) -> None:
    rendering = Rendering.empty()
    for turn in turns:
        rendering = rendering.append(turn)
    assert rendering.tokens() == render_full([item for turn in turns for item in turn]).tokens()


@given(st.lists(valid_item, max_size=6))
def test_known_pieces_render_as_the_split_would(items: list[Any]) -> None:
    # the server's own output: each text with the pieces the engine planned, its split
    texts = [
        part.get("text") if isinstance(part, dict) else None
        for item in items
        for part in (item.get("content") if isinstance(item.get("content"), list) else [])
    ] + [item.get(key) for item in items for key in ("arguments", "content")]
    known = {text: tuple(split(text)) for text in texts if isinstance(text, str)}
    assert render_full(items).append(items, known) == render_full(items).append(items)


def test_known_pieces_are_taken_as_the_tokens_without_splitting() -> None:
    reply = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "ab"}],
    }
    tokens = render_item(reply, {"ab": ("a", "b")})
    assert tokens[-3:] == (token_id("a"), token_id("b"), END)  # split() would give one piece
    assert render_item(reply)[-2:] == (*tokenize("ab"), END)


def test_item_framing() -> None:
    assert render_item(USER) == (START, *tokenize("user\n"), *tokenize(USER["content"]), END)
    assert render_item(CALL) == (
        START,
        *tokenize("function_call\n"),
        *tokenize("shell"),
        *tokenize('{"cmd":"ls"}'),
        END,
    )
    untyped = {"role": "user", "content": [{"type": "input_text", "text": USER["content"]}]}
    assert render_item(untyped) == render_item(USER)


def test_images_cost_a_fixed_number_of_placeholder_tokens() -> None:
    item = {"role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}
    tokens = render_item(item)
    assert tokens.count(IMAGE) == IMAGE_TOKENS


def test_append_never_mutates_the_parent_and_shares_its_chunks() -> None:
    parent = render_full([USER, CALL])
    before = parent.tokens()
    child_a = parent.append([OUTPUT])
    child_b = parent.append([{"role": "user", "content": "never mind"}])
    assert parent.tokens() == before and parent.item_count == 2
    assert child_a.chunks[:2] == parent.chunks and child_a.chunks[0] is parent.chunks[0]
    assert child_a.tokens() != child_b.tokens()
    assert parent.append([]) is parent


def test_shared_prefix_tokens() -> None:
    parent = render_full([USER, CALL])
    child = parent.append([OUTPUT])
    assert shared_prefix_tokens(parent, child) == parent.token_count
    # rendered separately (HTTP path, no cache): equal chunks still count
    assert shared_prefix_tokens(render_full([USER, CALL, OUTPUT]), child) == child.token_count
    # an edited first message shares only the header and the unchanged leading words
    edited = render_full([{"type": "message", "role": "user", "content": "Fix the other test."}])
    header_and_two_words = 1 + len(tokenize("user\n")) + len(tokenize("Fix the"))
    assert shared_prefix_tokens(parent, edited) == header_and_two_words
    assert shared_prefix_tokens(Rendering.empty(), child) == 0


def test_prefix_is_deterministic_and_ignores_key_order() -> None:
    tool_a = {"type": "function", "name": "shell", "parameters": {"type": "object"}}
    tool_b = {"parameters": {"type": "object"}, "name": "shell", "type": "function"}
    assert render_prefix("Be brief.", [tool_a]) == render_prefix("Be brief.", [tool_b])
    assert render_prefix(None, []) == ()
    assert render_prefix("Be brief.", [])[0] == START
    assert render_prefix("Be brief.", [tool_a]) != render_prefix("Be terse.", [tool_a])
