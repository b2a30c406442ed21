"""`wsmode certify`'s console (harness/conformance/runner/certify_console.py), catalogue,
profiles and partial certificates: one line per case that did not pass, one block per failure,
the summary last, no pytest noise; `--list` from the cases themselves; `-k` matching nothing is
an error; bundled profiles by name; a run without a profile says how many MUST cases it left
out."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.conformance.runner.certify_console import CertifyConsole
from harness.conformance.runner.suite_loader import load_suites
from harness.conformance.targets.profile import (
    TargetProfileError,
    bundled_profiles,
    resolve_profile,
)
from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import ServerConfig
from tests.cli_run import run_cli


def _case(case_id: str, verdict: str, level: str = "MUST", detail: str = "") -> dict[str, Any]:
    findings = [{"rule_id": "usage.present", "level": level, "message": detail}] * 3
    return {
        "id": case_id,
        "level": level,
        "verdict": verdict,
        "detail": detail,
        "title": f"what {case_id} checks",
        "category": "events",
        "findings": findings if verdict == "FAIL" else [],
    }


def test_the_console_shows_non_passes_once_and_the_summary_last() -> None:
    out = io.StringIO()
    console = CertifyConsole(out, verbose=False, strict=False)
    cases = [
        _case("3.4.usage.present", "FAIL", detail="usage missing"),
        _case("1.handshake.upgrade", "PASS"),
        _case("5.1.store-true.other-connection", "UNIMPLEMENTED", detail="capability 'store'"),
    ]
    console.start(len(cases), 1)
    for case in cases:
        console.case("reference", case)
    result = {
        "target": {"name": "reference", "url": "ws://x"},
        "config": {},
        "certify": {"cases": cases},
    }
    console.finish([(result, {"html": Path("r/report.html")})], {}, "")
    text = out.getvalue()
    assert len(re.findall(r"^FAIL +MUST +3\.4\.usage\.present  usage missing", text, re.M)) == 1
    assert text.count("FAIL 3.4.usage.present (MUST, Event order and schema)") == 1
    assert "[usage.present] usage missing (3 times)" in text  # one finding, said once
    assert "wire log: r/report.html#case-3.4.usage.present" in text
    assert "1.handshake.upgrade" not in text.split("Failures of")[0]  # no PASS line
    assert "    1  capability 'store'" in text  # not run, counted by reason
    assert text.rstrip().endswith("certify: FAIL (1 MUST case failed; exit status 1)")
    assert all(len(line) <= 100 for line in text.splitlines())


def test_list_prints_the_catalogue_from_the_cases(capsys: Any) -> None:
    status, out, err = run_cli(["certify", "--list"], capsys)
    assert (status, err) == (0, "")
    cases = load_suites()
    listed = re.findall(r"^  (\d\S+) +(MUST|SHOULD|MAY)\b", out, re.M)
    assert [case_id for case_id, _ in listed] == [c.id for c in sorted_by_category(cases)]
    assert out.rstrip().splitlines()[-1].startswith(f"{len(cases)} cases: ")
    assert all(len(line) <= 100 for line in out.splitlines())


def sorted_by_category(cases: list[Any]) -> list[Any]:
    from harness.conformance.model.verdict import CATEGORIES

    return [c for category in CATEGORIES for c in cases if c.category == category]


def test_k_matching_no_case_is_an_error(capsys: Any) -> None:
    status, out, err = run_cli(["certify", "-k", "nomatch"], capsys)
    assert (status, out) == (2, "")
    assert err == (
        "wsmode certify: -k 'nomatch' matches no case (wsmode certify --list shows them)\n"
    )
    status, out, _ = run_cli(["certify", "--list", "-k", "3.4.usage"], capsys)
    assert status == 0 and "3.4.usage.present" in out and "1.handshake" not in out


def test_bundled_profiles_are_named_and_listed(capsys: Any) -> None:
    names = {profile.name: stem for stem, profile in bundled_profiles()}
    assert names["openai"] == "example-openai" and "reference" in names
    assert resolve_profile("openai").name == "example-openai.toml"
    assert resolve_profile("example-openai") == resolve_profile("openai")
    with pytest.raises(TargetProfileError, match="no bundled profile of that name"):
        resolve_profile("nosuch")
    status, out, _ = run_cli(["certify", "--profiles"], capsys)
    assert status == 0
    assert re.search(r"^openai +wss://api\.openai\.com/v1/responses$", out, re.M)
    status, out, err = run_cli(["certify", "--target-profile", "nosuch"], capsys)
    assert status == 2 and err.count("\n") == 1 and "(bundled: " in err


# -- real runs ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServer]:
    data = tmp_path_factory.mktemp("console")
    with running_in_thread(ServerConfig(port=0, profile="zero", data_dir=Path(data))) as running:
        yield running


def test_a_failing_run_prints_each_failure_once_without_pytest_noise(
    capsys: Any, tmp_path: Path
) -> None:
    argv = ["certify", "--fault", "missing-usage", "-k", "3.4.usage or 1.handshake.upgrade"]
    status, out, err = run_cli([*argv, "--results", str(tmp_path), "-v"], capsys)
    assert status == 1, out + err
    assert len(re.findall(r"^FAIL +MUST +3\.4\.usage\.present ", out, re.M)) == 1
    assert out.count("FAIL 3.4.usage.present (") == 1  # its block
    assert re.search(r"^PASS +MUST +1\.handshake\.upgrade\b", out, re.M)  # -v: every case
    for noise in ("::", "site-packages", " passed", "deselected", "=====", "Traceback"):
        assert noise not in out + err, noise
    assert out.rstrip().splitlines()[-1].startswith("certify: FAIL (")


def test_a_run_without_a_profile_says_it_is_partial(
    server: ReferenceServer, capsys: Any, tmp_path: Path
) -> None:
    selection = "1.handshake.upgrade or 5.1.store-true.other-connection"
    argv = ["certify", "--target", server.ws_url, "-k", selection, "--results", str(tmp_path)]
    status, out, err = run_cli(argv, capsys)
    assert status == 0, out + err
    one_line = " ".join(out.split())
    assert "partial certificate: 1 MUST cases not run (no target profile given" in one_line
    assert "certify: PASS (partial: see above)" in one_line
    (report,) = tmp_path.glob("certify/*/*/report.json")
    partial = json.loads(report.read_text())["certify"]["partial"]
    assert partial["must_not_run"] == 1 and partial["profile_given"] is False
    for name in ("report.md", "report.html"):
        assert "partial certificate: 1 MUST cases not run" in (report.parent / name).read_text()
    status, _, _ = run_cli(["board", str(tmp_path), "--out", str(tmp_path / "board")], capsys)
    board = (tmp_path / "board" / "leaderboard.md").read_text()
    assert status == 0 and "partial: 1 MUST not run" in board
