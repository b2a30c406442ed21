"""A crash inside a client library is named by its type and its innermost library frame."""

from __future__ import annotations

from harness.conformance.clients.crashes import from_report, from_stderr

PYTHON_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/x/suites/clients/adapters/pydantic_ai.py", line 40, in one_turn',
    "    result = await agent.run(text)",
    '  File "/v/lib/python3.11/site-packages/pydantic_ai/models/openai.py", line 812, in _map',
    "    code = error.code",
    '  File "/v/lib/python3.11/site-packages/pydantic_ai/_utils.py", line 9, in get',
    "AttributeError: 'str' object has no attribute 'code'",
]

NODE_STACK = [
    "TypeError: Cannot read properties of undefined (reading 'code')",
    "    at mapError (file:///n/node_modules/@openai/agents-openai/dist/ws.mjs:120:33)",
    "    at WebSocket.onMessage (file:///n/node_modules/ws/lib/event-target.js:1:2)",
    "    at main (file:///x/suites/clients/adapters/agents_js.mjs:80:5)",
]


def test_a_python_traceback_names_the_innermost_library_frame() -> None:
    crash = from_stderr(["some log line", *PYTHON_TRACEBACK])
    assert crash is not None
    assert (crash.type, crash.where) == ("AttributeError", "pydantic_ai/_utils.py:9 in get")
    assert crash.describe().startswith("a crash inside the client library: AttributeError at")


def test_a_node_stack_names_its_innermost_library_frame() -> None:
    crash = from_stderr(NODE_STACK)
    assert crash is not None
    assert crash.type == "TypeError"
    assert crash.where == "@openai/agents-openai/dist/ws.mjs:120 in mapError"


def test_stderr_without_a_crash_names_none() -> None:
    assert from_stderr(["warning: something", "done"]) is None


def test_a_reported_programming_error_is_a_crash_and_an_api_error_is_not() -> None:
    crash = from_report(
        {"error": {"exception": {"type": "AttributeError", "where": "pydantic_ai/x.py:3 in f"}}}
    )
    assert crash is not None and crash.where == "pydantic_ai/x.py:3 in f"
    api = from_report({"error": {"exception": {"type": "BadRequestError", "where": "openai/x"}}})
    assert api is None


def test_the_adapters_report_a_wrapped_programming_error_as_the_crash() -> None:
    """A library that wraps its own AttributeError in an API error: the adapter's report names
    the AttributeError and its frame (suites/clients/adapters/_contract.py)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "suites/clients/adapters"))
    try:
        import _contract  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)

    def library_code() -> None:
        payload: object = "invalid_prompt: refused"
        payload.code  # type: ignore[attr-defined]  # noqa: B018 - the bug under test

    try:
        try:
            library_code()
        except AttributeError as bug:
            raise RuntimeError("failed to map the error") from bug
    except RuntimeError as wrapper:
        line = _contract.error_line(0, wrapper)
    crash = from_report(line)
    assert crash is not None and crash.type == "AttributeError"
    assert crash.where.endswith("in library_code")
    assert line["error"]["message"].startswith("RuntimeError: failed to map the error")
