"""The board's clients section: client certificates (`wsmode certify-client`) get their own
table, one row per client (its newest certificate), and never a row among the servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.report.board import build_rows, load_runs, write_board
from harness.results.schema import finish_result
from harness.results.store import write_result

CLIENT_CASES = {
    "3.3.client.conversation": ("MUST", "PASS"),
    "1.client.upgrade-404": ("MUST", "NON-STRICT"),
    "5.2.client.lanes-error": ("MUST", "UNIMPLEMENTED"),
    "5.3.client.slow-ttft": ("SHOULD", "PASS"),
}


def _client(synth: Any, name: str, version: str, started_at: str, verdicts: Any) -> Any:
    result = synth.certify(verdicts, target=name, started_at=started_at)
    result["config"] = {"subject": "client", "client": name}
    result["target"]["version"] = version
    return finish_result(result, ended_at="2025-03-01T09:30:00Z")


def test_clients_get_their_own_section_with_their_newest_certificate(
    synth: Any, tmp_path: Path
) -> None:
    root = tmp_path / "results"
    write_result(root, synth.certify(synth.cases))  # a server's certificate
    old = dict(CLIENT_CASES, **{"3.3.client.conversation": ("MUST", "FAIL")})
    write_result(root, _client(synth, "openai-node", "7.58.0", "2025-03-01T07:00:00Z", old))
    write_result(
        root, _client(synth, "openai-node", "7.59.0", "2025-03-01T08:00:00Z", CLIENT_CASES)
    )
    runs = load_runs([root])
    assert [row.target for row in build_rows(runs)] == ["reference"]  # no client among servers
    out = tmp_path / "board"
    write_board([root], out)
    html = (out / "index.html").read_text(encoding="utf-8")
    start = html.index('<table id="clients">')
    section = html[start : html.index("</table>", start)]
    assert section.count('data-client="openai-node"') == 1  # the newest certificate only
    assert "7.59.0" in section and "7.58.0" not in section
    assert '<td class="num">1/2</td>' in section  # MUST passed of the cases run (n/a left out)
    assert "upgrade-404 (NON-STRICT)" in section
    markdown = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "## Clients" in markdown and "| openai-node | 7.59.0 | 1/2 | 1/1 |" in markdown
