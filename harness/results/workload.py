"""What a latency result measured: its kind and its workload identity.

Two latency results compare only when they measured the same thing: the same *kind* (a `bench`
replays agent rollouts, a `load` sends fixed-shape requests: their numbers mean different things)
and the same *workload* (the rollouts or the request shape, the server cost profile, the model,
the modes and the load pattern). `wsmode gate` refuses anything else; `wsmode board` groups rows
by workload and never pools across groups.

The identity leaves out what changes the sample size but not the work (seeds, repeats, duration
limits) and what names the target (that is the implementation's identity, `results.identity`).
It keeps every flag that changes what is sent: the output cap (`output_cap`: the scale of each
turn's recorded length and the headroom a recorded call gets; None when no `max_output_tokens`
is sent, as with a script), the codex-style prewarm, the sampling fields a replay adds
(`sampling`). A capped run and an uncapped one are different workloads: the board never ranks
them together and the gate refuses to compare them.
Writers record it as `result["workload"]`; for a file written before that, it is derived from
the run's `config` the same way, so old and new files group alike. A recorded identity that
predates a field gets it derived from its config too (`SENT_FIELDS`). Before results had a `load`
kind, `wsmode load` wrote `bench` files with `config.command == "load"`: `latency_kind` reads
those as the load results they are.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from harness.results.schema import LATENCY_KINDS

# the fields in the order they are described, and their words
_WORDS = {
    "corpus": "corpus",
    "rollouts": "rollouts",
    "shape": "shape",
    "profile": "profile",
    "model": "model",
    "modes": "modes",
    "concurrency": "concurrency",
    "schedule": "schedule",
    "max_turns": "max turns",
    "max_rollouts": "max rollouts",
    "time_scale": "time scale",
    "send_script": "scripted output",
    "output_cap": "output cap",
    "prewarm": "prewarm",
    "sampling": "sampling",
}
#: the fields added after identities were first recorded: filled from an older file's config
SENT_FIELDS = ("output_cap", "prewarm", "sampling")
#: the headroom a recorded call's turn got before it was recorded in config (none: x1)
_OLD_CALL_HEADROOM = 1.0


def latency_kind(result: Mapping[str, Any]) -> str:
    """`bench`, `load` or `certify`; a pre-`load`-kind load file (kind bench, config.command
    load) is a `load` result."""
    kind = str(result.get("kind"))
    config = result.get("config")
    if kind == "bench" and isinstance(config, Mapping) and config.get("command") == "load":
        return "load"
    return kind


def latency_payload(result: Mapping[str, Any]) -> dict[str, Any]:
    """The latency payload (modes, samples, rollouts, comparisons) of a bench or load result."""
    payload = result.get(str(result.get("kind")))
    if result.get("kind") not in LATENCY_KINDS or not isinstance(payload, dict):
        raise ValueError(f"a {result.get('kind')} result carries no latency payload")
    return payload


def _digest(value: Any) -> str | None:
    if value is None:
        return None
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _sorted_modes(modes: Any) -> list[str]:
    return sorted(str(m) for m in modes) if isinstance(modes, Sequence | Mapping) else []


def _corpus_name(traces: Any) -> str | None:
    """The corpus a trace path names: `generated` and `real` for the bundled ones."""
    if not traces:
        return None
    name = PurePath(str(traces)).name
    return "generated" if name == "corpus" else name


def bench_workload(config: Mapping[str, Any], profile: str | None) -> dict[str, Any]:
    """The identity of a rollout replay, from a bench run's `config` (BenchConfig.to_json plus
    the selected rollout ids)."""
    traces = config.get("traces")
    schedule: dict[str, Any] = {"kind": config.get("schedule", "closed")}
    if config.get("rate_per_s") is not None:
        schedule["rate_per_s"] = config["rate_per_s"]
    if config.get("sweep_levels") is not None:
        schedule["levels"] = list(config["sweep_levels"])
    return {
        **_sent_fields(config),
        "source": "corpus",
        "corpus": _corpus_name(traces),
        "rollouts": _digest(config.get("rollouts")),
        "max_turns": config.get("max_turns"),
        "max_rollouts": config.get("max_rollouts"),
        "time_scale": config.get("time_scale"),
        "send_script": config.get("send_script"),
        "model": config.get("model"),
        "modes": _sorted_modes(config.get("modes")),
        "concurrency": config.get("concurrency"),
        "schedule": schedule,
        "profile": profile,
    }


def _sent_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """What a bench run's flags change in the requests: the cap, the prewarm, the sampling."""
    scale = config.get("output_cap_scale")
    cap = None
    if scale is not None and not config.get("send_script"):
        headroom = config.get("output_cap_call_headroom", _OLD_CALL_HEADROOM)
        cap = {"scale": scale, "call_headroom": headroom}
    return {
        "output_cap": cap,
        "prewarm": bool(config.get("prewarm")),
        "sampling": config.get("sampling"),
    }


def load_workload(modes: Mapping[str, Mapping[str, Any]], profile: str | None) -> dict[str, Any]:
    """The identity of a fixed-shape load, from its per-mode specs (LoadSpec.to_json)."""
    first = next(iter(modes.values()), {})
    shape = {
        key: first.get(key)
        for key in ("input_tokens", "input_tokens_stddev", "output_tokens", "turns")
    }
    shape["prefix_share"] = first.get("prefix_share", 0.0)
    return {
        "source": "shape",
        "shape": shape,
        "model": first.get("model"),
        "modes": _sorted_modes(modes),
        "concurrency": first.get("concurrency"),
        "schedule": {
            "kind": "open" if first.get("rate_per_s") else "closed",
            "rate_per_s": first.get("rate_per_s"),
        },
        "profile": profile,
    }


def workload_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded workload identity, or the one derived from an older file's config."""
    recorded = result.get("workload")
    config = result.get("config") or {}
    if isinstance(recorded, Mapping) and recorded:
        workload = dict(recorded)
        if workload.get("source") == "corpus":
            for key, value in _sent_fields(config).items():
                workload.setdefault(key, value)
        return workload
    if latency_kind(result) == "load":
        return load_workload(config.get("modes") or {}, result.get("profile"))
    workload = bench_workload(config, result.get("profile"))
    if not workload["modes"] and result.get("kind") == "bench":
        workload["modes"] = _sorted_modes(result["bench"].get("modes", {}))
    if workload["time_scale"] is None and result.get("kind") == "bench":
        workload["time_scale"] = result["bench"].get("time_scale")
    return workload


def workload_key(result: Mapping[str, Any]) -> str:
    """One string per (kind, workload): equal keys compare, unequal ones never pool."""
    identity = {"kind": latency_kind(result), **workload_of(result)}
    return json.dumps(identity, sort_keys=True, separators=(",", ":"))


def _value(value: Any) -> str:
    if isinstance(value, Mapping) and set(value) == {"scale", "call_headroom"}:  # output cap
        scale, headroom = value["scale"], value["call_headroom"]
        return f"x{scale:g} of the recorded length (a call's turn x{headroom:g})"
    if isinstance(value, Mapping):
        if set(value) <= {"kind", "rate_per_s", "levels"}:  # a schedule
            words = [f"{value.get('kind')} loop"]
            if value.get("rate_per_s"):
                words.append(f"{value['rate_per_s']:g}/s")
            if value.get("levels"):
                words.append("levels " + ",".join(map(str, value["levels"])))
            return " ".join(words)
        return ", ".join(f"{k} {_value(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return "—" if value is None else str(value)


def describe_workload(result: Mapping[str, Any]) -> str:
    """The workload in a line: kind, then each field that is set."""
    workload = workload_of(result)
    parts = [latency_kind(result)]
    for key, word in _WORDS.items():
        value = workload.get(key)
        if key == "output_cap" and value is None and workload.get("source") == "corpus":
            parts.append("no output cap")  # shown: capped and uncapped are different work
            continue
        if value in (None, [], {}) or key == "rollouts" or (key == "prewarm" and not value):
            continue
        parts.append(f"{word} {_value(value)}")
    if workload.get("rollouts"):
        parts.append(f"rollout set {workload['rollouts']}")
    return "; ".join(parts)


def workload_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """How the workloads of two results differ, one phrase per field ('modes ws,http vs ws')."""
    wa, wb = workload_of(a), workload_of(b)
    out = []
    for key in dict.fromkeys([*wa, *wb]):
        if wa.get(key) != wb.get(key):
            word = _WORDS.get(key, key)
            out.append(f"{word} {_value(wa.get(key))} vs {_value(wb.get(key))}")
    return out
