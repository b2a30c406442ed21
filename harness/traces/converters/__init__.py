"""Converters from recorded agent sessions to ``wsmode-trace`` rollouts, and their import place.

One module per source (``codex``, ``chat``, ``swe_agent``, ``openhands``, ``kvcache``,
``claude_code``, ``mooncake``, ``gemini_cli``, ``tau_bench``); ``common`` holds the turn
grouping they share,
``token_shape`` the text synthesized for token-count-only sources and ``sources`` what
``wsmode traces convert`` does with them (each source's files, the conversion, the summary).
``traces/README.md`` documents the mappings."""

from __future__ import annotations

from harness.traces.converters.chat import convert_chat
from harness.traces.converters.claude_code import convert_claude_code, iter_claude_sessions
from harness.traces.converters.codex import convert_codex, iter_codex_sessions
from harness.traces.converters.common import ABORTED_OUTPUT, custom_call_arguments, infer_tools
from harness.traces.converters.gemini_cli import convert_gemini_cli
from harness.traces.converters.kvcache import convert_kvcache
from harness.traces.converters.mooncake import convert_mooncake
from harness.traces.converters.openhands import convert_openhands
from harness.traces.converters.swe_agent import convert_swe_agent
from harness.traces.converters.tau_bench import convert_tau_bench

__all__ = [
    "ABORTED_OUTPUT",
    "convert_chat",
    "convert_claude_code",
    "convert_codex",
    "convert_gemini_cli",
    "convert_kvcache",
    "convert_mooncake",
    "convert_openhands",
    "convert_swe_agent",
    "convert_tau_bench",
    "custom_call_arguments",
    "infer_tools",
    "iter_claude_sessions",
    "iter_codex_sessions",
]
