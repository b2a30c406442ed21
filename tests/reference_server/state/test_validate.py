import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reference_server.state.validate import ItemError, ValidationState, validate_items

from .item_strategies import any_item, valid_item

CALL = {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"cmd":"ls"}'}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "README.md"}


def errors_of(items: list[Any], state: ValidationState | None = None) -> list[tuple[str, str]]:
    _, errors = validate_items(state or ValidationState.initial(), items)
    return [(e.param, e.message) for e in errors]


def test_valid_history_passes_and_is_recorded() -> None:
    items = [
        {"role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
        CALL,
        OUTPUT,
        {"role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]
    state, errors = validate_items(ValidationState.initial(), items)
    assert errors == []
    assert state.item_count == 6
    assert state.issued_call_ids == {"call_1"} and state.pending_call_ids == ()


def test_output_without_its_call() -> None:
    assert errors_of([OUTPUT]) == [
        ("input[0].call_id", "No tool call found for function call output with call_id 'call_1'.")
    ]
    # ...and the output must come after its call
    assert errors_of([OUTPUT, CALL])[0][0] == "input[0].call_id"


def test_model_issued_calls_are_answerable_in_the_next_turn() -> None:
    state = ValidationState.initial().with_output([{**CALL, "id": "fc_1", "status": "completed"}])
    assert state.pending_call_ids == ("call_1",)
    state, errors = validate_items(state, [OUTPUT])
    assert errors == [] and state.pending_call_ids == ()


def test_shape_errors_name_the_parameter() -> None:
    cases: list[tuple[Any, str, str]] = [
        ("hello", "input[0]", "Invalid type for 'input[0]': expected an object, but got a string"),
        ({"content": "x"}, "input[0].type", "Missing required parameter: 'input[0].type'."),
        ({"type": "item_ref", "id": "msg_1"}, "input[0].type", "Invalid value: "
         "'item_ref'. Supported values are: 'message', 'function_call', "
         "'function_call_output', 'reasoning', 'custom_tool_call',"),
        ({"type": "item_reference", "id": "msg_1"}, "input[0].id", "Item with id 'msg_1' not "
         "found."),
        ({"role": "robot", "content": "x"}, "input[0].role", "Invalid value: 'robot'."),
        ({"role": "user"}, "input[0].content", "Missing required parameter"),
        ({"role": "user", "content": 3}, "input[0].content", "expected a string or an array of "
         "content parts, but got an integer instead."),
        ({"role": "user", "content": [{"type": "output_text", "text": "x"}]},
         "input[0].content[0].type", "Invalid value: 'output_text'. Supported values are: "
         "'input_text', 'input_image', and 'input_file'."),
        ({"role": "assistant", "content": [{"type": "input_text", "text": "x"}]},
         "input[0].content[0].type", "Supported values are: 'output_text' and 'refusal'."),
        ({"role": "user", "content": [{"type": "input_text"}]}, "input[0].content[0].text",
         "Missing required parameter: 'input[0].content[0].text'."),
        ({"role": "user", "content": [{"type": "input_image"}]}, "input[0].content[0]",
         "needs one of 'image_url' or 'file_id'."),
        ({**CALL, "call_id": ""}, "input[0].call_id", "Expected a string with minimum length 1"),
        ({**CALL, "arguments": {"cmd": "ls"}}, "input[0].arguments",
         "expected a string, but got an object instead."),
        ({**CALL, "arguments": "{cmd: ls}"}, "input[0].arguments",
         "function call arguments must be a JSON-encoded string, but the value is not valid JSON "
         "(Expecting property name enclosed in double quotes at line 1, column 2)."),
        ({**CALL, "arguments": '{"x": NaN}'}, "input[0].arguments", "NaN is not a JSON number"),
        ({**CALL, "arguments": "[" * 100_000}, "input[0].arguments", "nested too deeply"),
        ({**CALL, "status": "done"}, "input[0].status", "Invalid value: 'done'."),
        ({"type": "function_call_output", "call_id": "c"}, "input[0].output", "Missing required"),
        ({"type": "reasoning", "summary": "x"}, "input[0].summary",
         "expected an array of summary parts, but got a string instead."),
    ]  # fmt: skip
    for item, param, message in cases:
        errors = errors_of([item])
        assert errors, item
        assert errors[0][0] == param, (item, errors)
        assert message in errors[0][1], (item, errors)


def test_first_index_offsets_error_indices() -> None:
    _, errors = validate_items(
        ValidationState.initial(), [{"role": "x", "content": ""}], first_index=7
    )
    assert errors == [ItemError(7, "input[7].role", errors[0].message)]


PYTHONISMS = re.compile(r"<class|Traceback|Error\b|Exception|\bNone\b|\bTrue\b|\bFalse\b|\\x|\[\]")


@given(st.lists(any_item, max_size=6))
def test_messages_are_plain_sentences(items: list[Any]) -> None:
    for error in validate_items(ValidationState.initial(), items)[1]:
        assert error.message.endswith("."), error
        assert error.param.startswith(f"input[{error.index}]")
        # quoted values are the client's own strings; judge only our wording
        wording = re.sub(r"'[^']*'", "", error.message)
        assert not PYTHONISMS.search(wording), error


def _shifted(errors: list[ItemError], by: int) -> list[ItemError]:
    """The errors as a pass that started ``by`` items earlier reports them."""
    out = []
    for e in errors:
        old, new = f"input[{e.index}]", f"input[{e.index + by}]"
        out.append(
            ItemError(e.index + by, e.param.replace(old, new), e.message.replace(old, new), e.code)
        )
    return out


@given(st.lists(any_item, max_size=12), st.data())
def test_incremental_equals_full_pass(items: list[Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(items)))
    full_state, full_errors = validate_items(ValidationState.initial(), items)
    head_state, head_errors = validate_items(ValidationState.initial(), items[:cut])
    state, tail_errors = validate_items(head_state, items[cut:], first_index=cut)
    assert state == full_state
    assert head_errors + tail_errors == full_errors
    # the server's way: a new request whose indices start at 0 again
    _, tail_errors_local = validate_items(head_state, items[cut:])
    assert _shifted(tail_errors_local, cut) == tail_errors


@given(st.lists(valid_item, max_size=6), st.lists(valid_item, max_size=4),
       st.lists(any_item, max_size=6))  # fmt: skip
def test_model_output_counts_as_part_of_the_chain(
    turn1: list[Any], output: list[Any], turn2: list[Any]
) -> None:
    # what a model can produce: assistant messages, function calls, reasoning
    output = [i for i in output if i.get("type") != "function_call_output" and i.get("role") in
              (None, "assistant")]  # fmt: skip
    state, _ = validate_items(ValidationState.initial(), turn1)
    state, errors = validate_items(state.with_output(output), turn2)
    full_state, full_errors = validate_items(ValidationState.initial(), turn1 + output + turn2)
    assert state == full_state
    first = len(turn1) + len(output)
    assert _shifted(errors, first) == [e for e in full_errors if e.index >= first]
