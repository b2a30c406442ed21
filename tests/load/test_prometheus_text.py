"""The Prometheus text format read by hand (harness.load.prometheus_text)."""

from __future__ import annotations

import math

import pytest

from harness.load.prometheus_text import PrometheusTextError, family_of, parse

PAGE = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="qwen",engine="0"} 2.0
# TYPE http_seconds histogram
http_seconds_bucket{le="0.1",path="/v1/\\"x\\"\\n"} 3 1700000000000
http_seconds_bucket{le="+Inf",path="/v1/\\"x\\"\\n"} 5
http_seconds_sum{path="/v1/\\"x\\"\\n"} 0.75
http_seconds_count{path="/v1/\\"x\\"\\n"} 5
up 1
odd{} NaN
# EOF
"""


def test_samples_labels_types_and_escapes() -> None:
    page = parse(PAGE)
    assert page.types == {"vllm:num_requests_running": "gauge", "http_seconds": "histogram"}
    assert page.help["vllm:num_requests_running"].startswith("Number of requests")
    running = page.samples[0]
    assert running.name == "vllm:num_requests_running" and running.value == 2.0
    assert running.label("model_name") == "qwen" and running.label("engine") == "0"
    inf = page.samples[2]
    assert inf.label("le") == "+Inf" and inf.label("path") == '/v1/"x"\n' and inf.value == 5
    assert [s.name for s in page.samples[-2:]] == ["up", "odd"] and math.isnan(
        page.samples[-1].value
    )
    assert family_of("http_seconds_bucket", page.types) == "http_seconds"
    assert family_of("up", page.types) == "up"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("9bad 1", "not a metric name"),
        ('x{a="1 2', "unterminated"),
        ("x{a=1} 2", 'expected label="value"'),
        ("x one", "not a sample value"),
    ],
)
def test_a_line_that_is_no_sample_names_its_line(line: str, says: str) -> None:
    with pytest.raises(PrometheusTextError, match=r"^line 2: ") as caught:
        parse("up 1\n" + line)
    assert says in str(caught.value)
    assert [s.name for s in parse("up 1\n" + line, strict=False).samples] == ["up"]
