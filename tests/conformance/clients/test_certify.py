"""`wsmode certify-client` end to end: the certificate in the servers' formats, the client
matrix, exit statuses, usage errors, and the bundled openai-python adapter (CI certifies it)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import openai
import pytest

from harness.conformance.clients.catalogue import CASES, case_by_id
from harness.conformance.clients.client_config import Timings
from harness.conformance.clients.client_runner import run_cases
from harness.conformance.clients.matrix import latest_results
from harness.conformance.clients.profiles import (
    ClientProfileError,
    Places,
    client_from_profile,
    load_profile,
)
from harness.results.schema import load_result
from tests.cli_run import run_cli

ADAPTER = Path(__file__).with_name("adapter.py")
REPO = Path(__file__).resolve().parents[3]
FAST = ["--slow-ttft-s", "1", "--lifetime-s", "0.4", "--case-timeout-s", "10"]


def test_a_run_writes_the_certificate_and_the_matrix(tmp_path: Path, capsys: Any) -> None:
    adapter = f"{sys.executable} {ADAPTER}"
    argv = ["certify-client", "--adapter", adapter, "--name", "tiny", "--results", str(tmp_path)]
    status, out, _ = run_cli([*argv, *FAST, "-k", "conversation or fifo"], capsys)
    assert status == 0, out
    assert "PASS" in out and "3.3.client.conversation" in out
    run_dir = next((tmp_path / "clients" / "tiny").iterdir())
    result = load_result(run_dir / "report.json")  # a valid wsmode-results certify file
    assert result["config"]["subject"] == "client"
    assert result["target"]["version"] == "well-behaved"  # the adapter's hello line
    cases = {c["id"]: c for c in result["certify"]["cases"]}
    assert set(cases) == {"3.3.client.conversation", "5.2.client.queued-fifo"}
    assert cases["3.3.client.conversation"]["wire_log"]  # the frames the server saw
    assert cases["3.3.client.conversation"]["sources"]
    suite = ET.parse(run_dir / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    assert "tiny" in (run_dir / "report.html").read_text(encoding="utf-8")
    matrix = (tmp_path / "clients" / "MATRIX.md").read_text(encoding="utf-8")
    assert "| **tiny well-behaved** |" in matrix
    assert (tmp_path / "clients" / "matrix.html").is_file()


def test_a_broken_client_fails_the_run(tmp_path: Path, capsys: Any) -> None:
    adapter = f"{sys.executable} {ADAPTER} --break lifo"
    argv = ["certify-client", "--adapter", adapter, "--name", "lifo", "--no-report"]
    status, out, _ = run_cli([*argv, *FAST, "-k", "fifo"], capsys)
    assert status == 1
    assert "FAIL" in out and "[client.fifo]" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--client", "no-such-client"], "no client profile 'no-such-client'"),
        (["--client", "openai-python", "-k", "no-such-case"], "no case matches"),
        ([], "name a --client or an --adapter"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv: list[str], message: str, capsys: Any) -> None:
    status, out, err = run_cli(["certify-client", *argv], capsys)
    assert status == 2 and out == ""
    assert message in err.strip().splitlines()[-1]


def test_list_shows_every_case_with_its_level_and_sources(capsys: Any) -> None:
    status, out, _ = run_cli(["certify-client", "--list"], capsys)
    assert status == 0
    for case in CASES:
        assert case.id in out
    assert out.count("sources:") == len(CASES)
    assert max(len(line) for line in out.splitlines()) <= 100  # the console's width


# Cases whose verdict does not hang on the machine's load; the committed certificate
# (results/clients/openai-python/) holds the SDK's verdicts on all 23.
SDK_CASES = [
    "3.3.client.conversation",
    "1.client.upgrade-404",
    "10.client.error-flat",
    "5.2.client.lanes-error",
]


def test_the_bundled_openai_python_adapter_reproduces_its_committed_certificate() -> None:
    """CI certifies the official Python SDK through its bundled adapter (four cases, for CI's time)
    and holds the verdicts to the committed certificate: a new SDK or a change here that moves
    a verdict fails until results/clients/ is regenerated (scripts/certify-clients)."""
    committed = {
        str(result["target"]["name"]): result
        for _, result in latest_results(REPO / "results" / "clients")
    }["openai-python"]
    assert committed["target"]["version"] == openai.__version__
    expected = {c["id"]: c["verdict"] for c in committed["certify"]["cases"]}
    client = client_from_profile(load_profile("openai-python"))
    cases = [case_by_id(case_id) for case_id in SDK_CASES]
    results = asyncio.run(run_cases(client, cases, Timings(case_timeout_s=60.0), jobs=2))
    got = {r.case.id: str(r.verdict) for r in results}
    details = {r.case.id: r.as_dict()["detail"] for r in results if got[r.case.id] != "PASS"}
    assert got == {case_id: expected[case_id] for case_id in SDK_CASES}, json.dumps(details)
    assert {r.run.version for r in results} == {openai.__version__}


def test_a_missing_client_names_the_install_step_and_the_options(
    tmp_path: Path, capsys: Any
) -> None:
    argv = ["certify-client", "--client", "openai-agents", "--venvs", str(tmp_path)]
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == ""
    line = err.strip().splitlines()[-1]
    assert f"{tmp_path}/openai-agents/bin/python is missing" in line
    assert "scripts/install-clients openai-agents" in line
    assert "--venvs DIR (or WSMODE_VENVS)" in line
    node = ["certify-client", "--client", "openai-node", "--node-clients", str(tmp_path)]
    status, _, err = run_cli(node, capsys)
    assert status == 2 and "--node-clients DIR (or WSMODE_NODE_CLIENTS)" in err


def test_the_clients_folders_are_found_from_the_checkout_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WSMODE_VENVS", raising=False)
    monkeypatch.delenv("WSMODE_NODE_CLIENTS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert Places().fill("{venvs}|{node}") == f"{REPO / '.venvs'}|{REPO / '.clients' / 'node'}"
    monkeypatch.setenv("WSMODE_VENVS", "/from/env")
    assert Places().fill("{venvs}") == "/from/env"  # the variable is the option's default
    assert Places(venvs="/from/option").fill("{venvs}") == "/from/option"


def test_an_old_node_is_named_in_one_line_and_a_missing_one_refused(
    tmp_path: Path, capsys: Any
) -> None:
    profile = dataclasses.replace(load_profile("openai-node"), needs=())
    assert profile.node_min == 22
    client = client_from_profile(profile, node=20)
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "certify-client: node 20 is older than the 22 that openai-node 7.59.0 declares; "
        "running anyway (the certificate records it)"
    ]
    assert client.description.endswith("ran on node 20")
    with pytest.raises(ClientProfileError, match="no `node` is on PATH"):
        client_from_profile(profile, node=None)
