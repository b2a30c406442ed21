"""The Prometheus text exposition format (version 0.0.4, and the OpenMetrics text that vLLM,
SGLang and LiteLLM also serve), read by hand: a page is a few kB of lines, and a parser of
~80 lines beats a dependency (prometheus_client's parser pulls in the client library).

    # HELP vllm:num_requests_running Number of requests in model execution batches.
    # TYPE vllm:num_requests_running gauge
    vllm:num_requests_running{model_name="qwen"} 2.0
    http_request_duration_seconds_bucket{le="+Inf",path="/v1"} 17 1700000000000

A sample is a name, its labels and a float value (a trailing timestamp is ignored: the scraper
stamps its own clock). Comments other than HELP and TYPE, blank lines and `# EOF` are skipped;
a line that is not a sample raises `PrometheusTextError` naming its line number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from harness.errors import InputError

_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_VALUES = {"+Inf": math.inf, "Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}


class PrometheusTextError(InputError, ValueError):
    """A metrics page that is not in the Prometheus text format."""


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        return next((v for k, v in self.labels if k == key), None)


@dataclass(slots=True)
class Page:
    samples: list[Sample] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)  # metric family -> counter, gauge, ...
    help: dict[str, str] = field(default_factory=dict)


def _labels(text: str, pos: int, line_no: int) -> tuple[tuple[tuple[str, str], ...], int]:
    """The `{...}` starting at text[pos] == '{': the labels and the index after the '}'."""
    labels: list[tuple[str, str]] = []
    pos += 1
    while True:
        while pos < len(text) and text[pos] in " ,":
            pos += 1
        if pos < len(text) and text[pos] == "}":
            return tuple(labels), pos + 1
        match = _LABEL_NAME.match(text, pos)
        if match is None or text[match.end() : match.end() + 2] != '="':
            raise PrometheusTextError(f'line {line_no}: expected label="value" at column {pos + 1}')
        pos = match.end() + 2
        value: list[str] = []
        while True:
            if pos >= len(text):
                raise PrometheusTextError(f"line {line_no}: unterminated label value")
            char = text[pos]
            if char == "\\" and pos + 1 < len(text):
                value.append(_ESCAPES.get(text[pos + 1], "\\" + text[pos + 1]))
                pos += 2
            elif char == '"':
                pos += 1
                break
            else:
                value.append(char)
                pos += 1
        labels.append((match.group(0), "".join(value)))


def _value(text: str, line_no: int) -> float:
    word = text.split()[0] if text.split() else ""
    if word in _VALUES:
        return _VALUES[word]
    try:
        return float(word)
    except ValueError:
        raise PrometheusTextError(f"line {line_no}: not a sample value: {word!r}") from None


def parse(text: str, *, strict: bool = True) -> Page:
    """Every sample of a metrics page, with the TYPE and HELP of its families; `strict` False
    skips the lines that are not samples instead of raising."""
    page = Page()
    for line_no, raw in enumerate(text.splitlines(), start=1):
        try:
            _parse_line(raw, line_no, page)
        except PrometheusTextError:
            if strict:
                raise
    return page


def _parse_line(raw: str, line_no: int, page: Page) -> None:
    line = raw.strip()
    if not line:
        return
    if line.startswith("#"):
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[1] == "TYPE":
            page.types[parts[2]] = parts[3].strip() if len(parts) > 3 else "untyped"
        elif len(parts) >= 3 and parts[1] == "HELP":
            page.help[parts[2]] = parts[3] if len(parts) > 3 else ""
        return
    match = _NAME.match(line)
    if match is None:
        raise PrometheusTextError(f"line {line_no}: not a metric name: {line[:60]!r}")
    pos = match.end()
    labels: tuple[tuple[str, str], ...] = ()
    if pos < len(line) and line[pos] == "{":
        labels, pos = _labels(line, pos, line_no)
    page.samples.append(Sample(match.group(0), labels, _value(line[pos:], line_no)))


def family_of(name: str, types: dict[str, str]) -> str:
    """The metric family a sample belongs to (`x_bucket`, `x_sum`, `x_count` -> `x` for a
    histogram or summary; `x_total` -> `x` for an OpenMetrics counter typed as `x`)."""
    for suffix in ("_bucket", "_sum", "_count", "_total", "_created"):
        if name.endswith(suffix) and name[: -len(suffix)] in types:
            return name[: -len(suffix)]
    return name
