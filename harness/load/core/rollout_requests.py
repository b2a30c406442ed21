"""A rollout's requests, built with no I/O: each turn's create from the recorded input, the calls
the target emitted answered with their recorded twins' outputs (`answer_calls`), the history a
stateless client resends, and whether the target reproduced the recorded output."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.load.core.replay_options import GENERIC_OUTPUT, ReplayOptions
from harness.protocol.items import content_text, history_item, summary_text
from harness.traces.format import OutputSpec, Rollout, Turn, input_message
from harness.transport.exchange import Exchange

CONTINUE_TEXT = "Continue."
#: the smallest ``max_output_tokens`` the API accepts
MIN_OUTPUT_CAP_TOKENS = 16
#: a turn whose recorded output holds a function call asks this many times its recorded length:
#: the target's tokenizer may count the call's arguments longer than the recording's, and a cap
#: must not cut the call it is meant to let through (docs/OUTPUT-CAPS.md)
CALL_CAP_HEADROOM = 2.0


def output_cap_tokens(turn: Turn, scale: float | None) -> int | None:
    """The `max_output_tokens` a turn asks for: its recorded output tokens x `scale` (x
    CALL_CAP_HEADROOM when the recorded output holds a function call), at least the API's
    minimum; None when the cap is lifted."""
    if scale is None:
        return None
    if turn.function_calls:
        scale *= CALL_CAP_HEADROOM
    return max(MIN_OUTPUT_CAP_TOKENS, math.ceil(turn.output_tokens * scale))


def sampling_fields(rollout: Rollout, options: ReplayOptions) -> dict[str, Any]:
    """`temperature` and `seed` for an unscripted create, where the recorded turn allows: not
    when the request names the rollout's own model and that model reasons (its recorded output
    has reasoning items: a reasoning model refuses `temperature`); a scripted replay needs none
    (its output is the recorded one)."""
    if options.send_script:
        return {}
    fields: dict[str, Any] = {}
    reasons = any(o.type == "reasoning" for t in rollout.turns for o in t.output)
    if options.temperature is not None and not (options.model is None and reasons):
        fields["temperature"] = options.temperature
    if options.sampling_seed is not None:
        fields["seed"] = options.sampling_seed
    return fields


def reproduces(items: Sequence[Mapping[str, Any]], specs: Sequence[OutputSpec]) -> bool:
    """True when the emitted output items are exactly the recorded ones (the tool outputs a
    multi-agent response lists are the client's own, not the model's)."""
    items = [i for i in items if i.get("type") != "function_call_output"]
    return len(items) == len(specs) and all(
        _reproduces(item, spec) for item, spec in zip(items, specs, strict=True)
    )


def _reproduces(item: Mapping[str, Any], spec: OutputSpec) -> bool:
    if item.get("type") != spec.type:
        return False
    if spec.type == "message":
        return content_text(item.get("content")) == spec.text
    if spec.type == "function_call":
        emitted = (item.get("name"), item.get("arguments"), item.get("call_id"))
        return emitted == (spec.name, spec.arguments, spec.call_id)
    return summary_text(item) == spec.summary


@dataclass(slots=True)
class Answers:
    """A turn's new input items after mapping recorded call ids onto the emitted ones."""

    items: list[dict[str, Any]]
    answered_call_ids: tuple[str, ...]
    generic_answers: int


def answer_calls(
    turn: Turn,
    recorded_calls: Sequence[str],
    emitted_calls: Sequence[Mapping[str, Any]],
    *,
    generic_output: str = GENERIC_OUTPUT,
) -> Answers:
    """Turn `turn`'s recorded input into what the agent sends after the emitted calls.

    The k-th recorded call of the previous turn is matched with the k-th emitted call: its
    recorded `function_call_output` is sent with the emitted `call_id`. Recorded outputs without
    an emitted twin are dropped (the server issued fewer calls); emitted calls without a recorded
    twin get `generic_output`. Other items (user messages) pass through in place. An input left
    empty becomes one user message, so every turn still asks for a response.
    """
    emitted_ids = [str(c.get("call_id")) for c in emitted_calls]
    mapping = dict(zip(recorded_calls, emitted_ids, strict=False))
    items: list[dict[str, Any]] = []
    answered: list[str] = []
    for item in turn.input:
        if item.get("type") != "function_call_output":
            items.append(dict(item))
            continue
        target = mapping.get(str(item.get("call_id")))
        if target is None or target in answered:
            continue
        items.append({**item, "call_id": target})
        answered.append(target)
    generic = 0
    for call_id in emitted_ids:
        if call_id not in answered:
            items.append(
                {"type": "function_call_output", "call_id": call_id, "output": generic_output}
            )
            answered.append(call_id)
            generic += 1
    if not items:
        items.append(input_message(CONTINUE_TEXT))
    return Answers(items, tuple(answered), generic)


class RolloutState:
    """What the agent knows between turns: the chain id, the history, the calls to answer."""

    def __init__(self, rollout: Rollout, options: ReplayOptions) -> None:
        self.rollout = rollout
        self.options = options
        self.previous_response_id: str | None = None
        self.history: list[dict[str, Any]] = []  # http: everything sent and received so far
        self.emitted_calls: list[dict[str, Any]] = []
        self.recorded_calls: tuple[str, ...] = ()

    def request(self, turn: Turn) -> tuple[dict[str, Any], Answers]:
        """The body of the create for `turn` (without `type`; WS adds it)."""
        opts = self.options
        if turn.index == 0:
            answers = Answers([dict(i) for i in turn.input], (), 0)
        else:
            answers = answer_calls(
                turn,
                self.recorded_calls,
                self.emitted_calls,
                generic_output=opts.generic_output,
            )
        body: dict[str, Any] = {
            "model": opts.model or self.rollout.model,
            "store": opts.effective_store,
            "tool_choice": "auto",
            "parallel_tool_calls": True,
        }
        if opts.cache_salt is not None:
            instructions = self.rollout.instructions
            body["instructions"] = opts.cache_salt + (f"\n{instructions}" if instructions else "")
        elif self.rollout.instructions is not None:
            body["instructions"] = self.rollout.instructions
        if self.rollout.tools:
            body["tools"] = list(self.rollout.tools)
        if self.rollout.multi_agent is not None:
            body["multi_agent"] = dict(self.rollout.multi_agent)
        # a script fixes the output itself (its length in the server's own tokens)
        cap = None if opts.send_script else output_cap_tokens(turn, opts.output_cap_scale)
        if cap is not None:
            body["max_output_tokens"] = cap
        body.update(sampling_fields(self.rollout, opts))
        if opts.mode == "http":
            body["input"] = [*self.history, *answers.items]
            if opts.include_reasoning:
                # without a stored response, reasoning can only come back encrypted
                body["include"] = ["reasoning.encrypted_content"]
        else:
            body["input"] = answers.items
            if self.previous_response_id is not None:
                body["previous_response_id"] = self.previous_response_id
        extension: dict[str, Any] = {}
        if opts.send_script:
            extension["script"] = turn.script()
        seed = opts.seed if opts.seed is not None else self.rollout.seed
        if seed is not None and opts.send_script:
            extension["seed"] = seed
        if extension:
            body["wsmode"] = extension
        return body, answers

    def prewarm_request(self, turn: Turn) -> dict[str, Any]:
        body, _ = self.request(turn)
        body.pop("wsmode", None)
        body.pop("max_output_tokens", None)  # nothing is generated
        body["generate"] = False
        return body

    def observe(
        self, turn: Turn, sent_items: Sequence[Mapping[str, Any]], exchange: Exchange
    ) -> None:
        """Remember what the server emitted, for the next turn."""
        assert exchange.response is not None
        output = exchange.response.output_items()
        self.previous_response_id = exchange.response_id
        in_flight = self.rollout.multi_agent is not None  # its calls were answered by inject
        stateless = self.options.mode == "http"
        calls = [] if in_flight else [i for i in output if i.get("type") == "function_call"]
        self.emitted_calls = [dict(i) for i in calls]
        self.recorded_calls = turn.call_ids
        if stateless:
            self.history.extend(dict(i) for i in sent_items)
            for item in output:
                converted = history_item(item, include_reasoning=self.options.include_reasoning)
                if converted is not None:
                    self.history.append(converted)


def cut_call(item: Mapping[str, Any]) -> bool:
    """A function call cut short: marked incomplete, or its arguments not whole JSON (a server
    that truncates at max_output_tokens without saying so). The replay never answers or resends
    one: the rollout ends at it, in every mode (rollout_driver)."""
    if item.get("type") != "function_call":
        return False
    if item.get("status") == "incomplete":
        return True
    try:
        json.loads(str(item.get("arguments") or "{}"))
    except ValueError:
        return True
    return False
