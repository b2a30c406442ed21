"""The bench HTML report says which TTFT it shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.report.bench_html import render_report
from harness.results.schema import dumps_result, load_result


def test_the_report_names_its_ttft_definition_old_files_included(
    synth: Any, tmp_path: Path
) -> None:
    current = synth.bench(rollouts=2, turns=2)
    html = render_report(current)
    assert "first event carrying generated content" in html and "TTFE p50" in html
    assert html.startswith("<!doctype html>") and html.endswith("</body></html>\n")  # the shell
    old = json.loads(dumps_result(current))
    old["schema_version"] = 1
    del old["bench"]["ttft_definition"]
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(old))
    assert "an older results file, schema v1" in render_report(load_result(path))
