"""``traces/CALIBRATION.md``: the bundled corpus's distributions beside real sessions', before
and after the calibration (``python -m harness.traces.commands calibration``).

Each distribution of ``wsmode traces stats`` is tabled for the real reference and for the corpus
drawn from each set of targets: p50 / p90 and the KS distance from the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.results.table import number
from harness.traces.stats import DISTRIBUTIONS, CorpusShape, compare

__all__ = ["calibration_document", "calibration_table"]


def _cell(shape: CorpusShape, name: str) -> str:
    s = shape.to_json()["distributions"][name]
    return f"{number(s['p50'], 0)} / {number(s['p90'], 0)}"


def calibration_table(
    reference: tuple[str, CorpusShape], corpora: Sequence[tuple[str, CorpusShape]]
) -> list[str]:
    """A markdown table: per distribution, the reference's p50 / p90, then each corpus's with
    its KS distance from the reference; a last row sums the distances."""
    ref_label, ref = reference
    head = f"| distribution (p50 / p90) | {ref_label} |"
    rule = "|---|---|"
    for label, _ in corpora:
        head += f" {label} | KS |"
        rule += "---|---|"
    lines = [head, rule]
    comparisons = [compare(shape, ref) for _, shape in corpora]
    for name in DISTRIBUTIONS:
        row = f"| {name} | {_cell(ref, name)} |"
        for (_, shape), comparison in zip(corpora, comparisons, strict=True):
            distance = comparison.distances[name]
            row += f" {_cell(shape, name)} | {number(distance, 2)} |"
        lines.append(row)
    total = "| sum of KS distances | |"
    for comparison in comparisons:
        known = [d for d in comparison.distances.values() if d is not None]
        total += f" | {sum(known):.2f} |"
    lines.append(total)
    return lines


_HEAD = """# Calibration of the bundled corpus

`traces/corpus/` is generated (`harness/traces/synthetic/`); its distributions are the
generator's targets (`harness/traces/synthetic/targets.py`). This page puts the corpus drawn from
the calibrated targets (version 2, the committed corpus) and from version 1's (the corpus before)
beside real coding-agent sessions, distribution by distribution, as `wsmode traces stats`
measures them (p50 / p90; KS: the two-sample Kolmogorov-Smirnov distance from the real sample,
0 the same, 1 disjoint). Regenerate it with

    python bench/ratios/long_sessions.py reference --out /tmp/real
    python -m harness.traces.commands calibration --reference /tmp/real

(the second table alone, without ../shared/recorded: leave `--reference` out).

## The real sessions

- **Real sessions** (%(real)s): what the converters make of the Codex and Claude Code sessions
  in `../shared/recorded/set3` (two Codex rollouts of 66 and 18 turns, Claude Code 2.0.76-2.1.7
  sessions of 47, 67 and 55 turns, shorter ones with their sub-agents; never committed, read at
  run time) and TraceLab's two example sessions. Token counts are the recorded ones where a
  rollout has them (all but the 18-turn Codex rollout, whose file keeps no token counts).
- **TraceLab example sessions** (%(tracelab)s): `tests/data/tracelab/` (uw-syfi/TraceLab,
  CC BY 4.0), a Claude Code session of 10 rounds and a Codex session of 9.
- **TraceLab's published figures** (its analysis READMEs, 357,161 rounds of 43 developers): 4,265
  sessions, so 84 model calls per session on average; per-call tool latency median ~125 ms
  (Claude Code) and ~626 ms (Codex), most calls sub-second while most tool *time* sits in the
  rare slow calls (Claude ~53 %% of it in 1-10 min calls, Codex ~52 %% in 1 s-1 min); the window
  grows on ~99.6 %% of steps; most appends are small while most appended tokens come from rare
  large ones. They are not samples, so they enter no KS distance: the calibrated targets follow
  them (sub-second median tool waits with a 600 s cap, heavy-tailed tool outputs, sessions of
  20-90 turns).

"""

_TAIL = """
## What is still apart, and why

- **Turns per session**: the real sample mixes long sessions with short ones (sub-agents of one
  turn, a 5-turn session), which the generator does not make: it makes long coding sessions
  (TraceLab's sessions average 84 model calls). The KS distance here mostly counts those short
  sessions.
- **Input growth** is no closer to the real sessions than version 1's was: real prompts grow by
  more than the appended text the converters can see
  (Claude Code's system reminders and tool schemas, images, the provider's own tokenizer); the
  generated growth is the appended text and the visible output, counted by the project's
  tokenizer.
- The calibration was fitted by hand against these samples (a small grid over tool-output size
  and spread), so it is a fit to 14 real rollouts and two public figures, not to TraceLab's full
  dataset: with the dataset at hand, `wsmode traces stats traces/corpus --reference
  syfi_coding_trace.jsonl.gz --reference-from tracelab` measures the distance to all of it.
"""


def calibration_document(
    references: Sequence[tuple[str, CorpusShape]], corpora: Sequence[tuple[str, CorpusShape]]
) -> str:
    """The whole page: each reference's table (``references`` as (label, shape), the real
    sessions first where they could be read)."""

    def size(shape: CorpusShape) -> str:
        return f"{shape.rollouts} rollouts, {shape.turns} turns"

    sizes = {label: size(shape) for label, shape in references}
    text = _HEAD % {
        "real": sizes.get("real sessions", "not read here"),
        "tracelab": sizes.get("TraceLab examples", "?"),
    }
    for label, shape in references:
        text += f"## Against the {label}\n\n"
        text += "\n".join(calibration_table((label, shape), corpora)) + "\n\n"
    return text + _TAIL.lstrip("\n")
