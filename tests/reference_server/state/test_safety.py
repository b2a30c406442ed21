import os
import sysconfig
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_server.state.safety import (
    BLOCK_THRESHOLD,
    INPUT_RULES,
    OUTPUT_RULES,
    RULES,
    SafetyState,
    SafetyVerdict,
    classify_input,
    classify_output,
)

from .item_strategies import any_item


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def tool(text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": "call_1", "output": text}


def scan(*items: dict[str, Any]) -> SafetyVerdict:
    return classify_input(SafetyState.initial(), list(items))[1]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.id)
def test_each_rule_is_triggered_by_its_documented_example(rule: Any) -> None:
    phrase = f"Some context first. {rule.example} And then more."
    if rule.scope != "output":
        verdict = scan(user(phrase))
        assert verdict.rule_ids == (rule.id,)
        assert verdict.blocked == (rule.action == "block")
    if rule.scope != "input":
        assert classify_output(phrase).rule_ids == (rule.id,)
    else:
        assert classify_output(phrase).rule_ids == ()
    assert rule.action == "block" or 0 < rule.weight < BLOCK_THRESHOLD
    assert (rule.action == "block") == (rule.weight == 0)


def test_markers_for_tests_and_fault_injection() -> None:
    assert scan(user("WSMODE-UNSAFE-INPUT")) == SafetyVerdict(True, ("test.unsafe_input",), "test")
    assert not scan(user("WSMODE-UNSAFE-OUTPUT")).blocked  # output marker: output only
    assert classify_output("ok WSMODE-UNSAFE-OUTPUT") == SafetyVerdict(
        True, ("test.unsafe_output",), "test"
    )
    assert not classify_output("WSMODE-UNSAFE-INPUT").blocked
    assert not scan(user("wsmode-unsafe-input")).blocked  # markers are case-sensitive


_KEYWORD_SOUP = st.lists(
    st.sampled_from(
        [
            *sorted({k for rule in RULES for group in rule.keywords for k in group}),
            *("i will", "you", "to", "the", " ", "\n", "x"),
        ]
    ),
    max_size=12,
)


@given(_KEYWORD_SOUP.map("".join) | st.text(max_size=80))
def test_the_keyword_screen_never_changes_which_rules_hit(text: str) -> None:
    """The screen only skips rule-by-rule testing where no rule could hit."""
    for rules in (INPUT_RULES, OUTPUT_RULES):
        lowered = text.lower()
        assert rules.hits(text) == [rule for rule in rules.rules if rule.hits(text, lowered)]


def test_flags_accumulate_across_turns_until_the_threshold() -> None:
    state = SafetyState.initial()
    for turn in range(1, 4):
        state, verdict = classify_input(state, [user(f"turn {turn}: WSMODE-FLAG")])
        assert state.score == 4 * turn
        assert verdict.blocked == (state.score >= BLOCK_THRESHOLD)
    assert verdict == SafetyVerdict(True, ("test.flag",), "test")
    # a flag counts once per item, however often it repeats inside the item
    assert classify_input(SafetyState.initial(), [user("WSMODE-FLAG " * 5)])[0].score == 4


def test_heaviest_flag_names_the_category() -> None:
    verdict = scan(
        tool("aws_secret_access_key = Wsm0deTestSecretKey0123456789abcdefGHIJK"),
        user("WSMODE-FLAG"),
    )
    assert verdict.blocked and verdict.category == "credential_exfiltration"


def test_only_user_supplied_text_is_scanned() -> None:
    assert scan(tool("WSMODE-UNSAFE-INPUT")).blocked
    assert scan({"role": "developer", "content": "WSMODE-UNSAFE-INPUT"}).blocked
    assert not scan({"role": "assistant", "content": "WSMODE-UNSAFE-INPUT"}).blocked
    call = {
        "type": "function_call",
        "call_id": "c",
        "name": "x",
        "arguments": "WSMODE-UNSAFE-INPUT",
    }
    assert not scan(call).blocked
    state, _ = classify_input(SafetyState.initial(), [call, user("hi")])
    assert state.items_scanned == 2


NEAR_MISSES = [
    "kill the process and restart the worker; I'll kill them all with pkill -f gunicorn",
    "I'll shoot you an email once the build is green.",
    "Write a ransomware detection rule for our SIEM.",
    "Build the ransomware simulator used in the tabletop exercise",  # "simulat" exclusion
    "Add ~/.ssh/id_rsa.pub to authorized_keys, then upload the public key to GitHub.",
    "ssh -i ~/.ssh/id_ed25519 deploy@host 'systemctl restart app'",
    "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_SECRET_ACCESS_KEY=${{ secrets.AWS_SECRET_ACCESS_KEY }}",
    "the child thread commits suicide by calling os._exit(1) after the fork",
    "This zip bomb test makes sure we cap decompression at 4 MiB.",
    "How to build a fork bomb detector: count processes per uid.",
    "pynput can act as a keylogger; we only record hotkeys in the foreground window.",
    'Traceback (most recent call last):\n  File "app.py", line 3, in kill_worker\n'
    "    os.kill(pid, signal.SIGKILL)\nProcessLookupError: [Errno 3] No such process",
    "--- a/payload.py\n+++ b/payload.py\n-    bypass_cache = False\n+    bypass_cache = True",
    "FAILED tests/test_auth.py::test_steal_session_cookie_is_rejected - AssertionError",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_ordinary_coding_traffic_does_not_trigger(text: str) -> None:
    assert scan(user(text)).rule_ids == ()
    assert classify_output(text).rule_ids == ()


def test_standard_library_sources_do_not_trigger() -> None:
    # A few MB of real code, docstrings and comments, read as tool output by an agent.
    root = sysconfig.get_paths()["stdlib"]
    items, size = [], 0
    for name in sorted(os.listdir(root)):
        if name.endswith(".py") and size < 3_000_000:
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            items.append(tool(text))
            size += len(text)
    state, verdict = classify_input(SafetyState.initial(), items)
    assert verdict.rule_ids == () and state.score == 0


EXAMPLES = [rule.example for rule in RULES] + ["WSMODE-FLAG"] * 4
safety_item = st.one_of(
    any_item.filter(lambda item: isinstance(item, dict)),
    st.builds(
        lambda wrap, before, phrase, after: wrap(f"{before}{phrase}{after}"),
        st.sampled_from((user, tool, lambda t: {"role": "assistant", "content": t})),
        st.text(max_size=20),
        st.sampled_from(EXAMPLES),
        st.text(max_size=20),
    ),
)


@given(st.lists(safety_item, max_size=10), st.data())
def test_incremental_equals_full_pass(items: list[Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(items)))
    full_state, full_verdict = classify_input(SafetyState.initial(), items)
    head_state, _ = classify_input(SafetyState.initial(), items[:cut])
    state, verdict = classify_input(head_state, items[cut:])
    assert (state, verdict) == (full_state, full_verdict)
    assert verdict == state.verdict()


def test_rules_md_documents_every_rule() -> None:
    import reference_server.state.safety as safety

    with open(os.path.join(os.path.dirname(safety.__file__), "RULES.md"), encoding="utf-8") as f:
        doc = f.read()
    assert [rule.id for rule in RULES if f"`{rule.id}`" not in doc] == []


# -- generated text: one check of its paragraphs vouches for every reply ------------------------
def test_the_filler_pool_passes_the_output_screen_joined() -> None:
    from reference_server.engine.filler_text import pool_texts

    assert OUTPUT_RULES.screen_passes_joined(pool_texts())


@given(st.data())
def test_text_joined_from_screened_paragraphs_passes_classify_output(data: st.DataObject) -> None:
    from reference_server.engine.filler_text import pool_texts

    paragraphs = pool_texts()
    chosen = data.draw(st.lists(st.sampled_from(paragraphs), min_size=1, max_size=6))
    cut = data.draw(st.integers(1, len(chosen[-1])))
    text = "".join(chosen[:-1]) + chosen[-1][:cut]
    assert classify_output(text) == SafetyVerdict(False, (), None)


def test_screen_passes_joined_refuses_what_could_hide_a_hit() -> None:
    # each part passes alone, but a keyword spans the join: not vouched for, and flagged joined
    parts = ["Output: WSMODE-UNSAFE-OUT", "PUT\n"]
    assert all(OUTPUT_RULES.screen_passes(part) for part in parts)
    assert not OUTPUT_RULES.screen_passes_joined(parts)  # the first ends in no line break
    assert classify_output("".join(parts)).blocked
    blocked = next(rule for rule in RULES if rule.scope != "input" and rule.action == "block")
    assert not OUTPUT_RULES.screen_passes_joined(["Fine.\n", blocked.example + "\n"])
    assert not OUTPUT_RULES.screen_passes_joined(["Caf\u00e9 ok.\n"])  # not ASCII: not vouched
    assert OUTPUT_RULES.screen_passes_joined(["Fine.\n", "Also fine.\n"])
