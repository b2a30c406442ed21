"""tau-bench's published results: a JSON list of ``{task_id, reward, info, traj, trial}``.

Each entry's ``traj`` is the conversation in OpenAI chat messages (``role``, ``content``,
``tool_calls``, ``tool_call_id``): one rollout per entry, read by the chat converter, with the
task, trial and reward kept in ``meta``. tau-bench records no timings: ``tool_wait_ms`` is 0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.traces.converters.chat import ChatDoc, convert_messages
from harness.traces.converters.common import read_json, show
from harness.traces.format import Rollout, TraceFormatError

_ENTRY_KEYS = frozenset({"task_id", "traj"})


def is_tau_bench(document: Any) -> bool:
    """Whether a decoded JSON document is a tau-bench results list."""
    return (
        isinstance(document, list)
        and bool(document)
        and all(isinstance(e, Mapping) and e.keys() >= _ENTRY_KEYS for e in document)
    )


def convert_tau_bench(
    path: str | os.PathLike[str], *, agent_kind: str = "unknown"
) -> list[Rollout]:
    p = Path(path)
    document = read_json(p)
    if not is_tau_bench(document):
        raise TraceFormatError(
            f"expected tau-bench results (a list of {{task_id, reward, info, traj, trial}}), "
            f"got {show(document)}",
            path=p,
        )
    rollouts = []
    for index, entry in enumerate(document):
        traj = entry["traj"]
        if not isinstance(traj, list):
            raise TraceFormatError(
                f"expected a list of chat messages, got {show(traj)}",
                path=p,
                field=f"[{index}].traj",
            )
        trial = entry.get("trial", 0)
        doc = ChatDoc(traj, str(p), f"[{index}].traj")
        rollouts.append(
            convert_messages(
                doc,
                source="chat-export",  # the trace format's source for chat transcripts
                converter="harness.traces.converters.tau_bench",
                rollout_id=f"tau-{p.stem}-task{entry['task_id']}-trial{trial}",
                agent_kind=agent_kind,
                meta_extra={
                    "task_id": entry["task_id"],
                    "trial": trial,
                    "reward": entry.get("reward"),
                },
            )
        )
    return rollouts
