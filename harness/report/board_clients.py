"""The board's clients section: client certificates (`wsmode certify-client`), one row per client.

A client certificate is a certify result whose `config.subject` is `client`
(`harness.results.schema.is_client_certificate`); the server rows of the board leave them out.
Each row is the newest certificate of that client: its version, MUST and SHOULD passed of the
cases run, and the cases that did not pass, linked to the copy of the file in the board.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Protocol

from harness.results.schema import is_client_certificate, parse_time


class _Run(Protocol):
    result: dict[str, Any]
    copy_name: str


def latest_client_runs(runs: Sequence[_Run]) -> list[_Run]:
    newest: dict[str, _Run] = {}
    for run in runs:
        if not is_client_certificate(run.result):
            continue
        name = str(run.result["target"]["name"])
        best = newest.get(name)
        if best is None or parse_time(run.result["started_at"]) > parse_time(
            best.result["started_at"]
        ):
            newest[name] = run
    return [newest[name] for name in sorted(newest)]


def _score(result: Mapping[str, Any], level: str) -> str:
    cases = [c for c in result["certify"]["cases"] if c["level"] == level]
    run = [c for c in cases if c["verdict"] != "UNIMPLEMENTED"]
    passed = sum(1 for c in run if c["verdict"] == "PASS")
    return f"{passed}/{len(run)}"


def _not_passed(result: Mapping[str, Any]) -> list[str]:
    return [
        f"{c['id'].split('.client.', 1)[-1]} ({c['verdict']})"
        for c in result["certify"]["cases"]
        if c["verdict"] not in ("PASS", "UNIMPLEMENTED")
    ]


def render_clients_html(runs: Sequence[_Run]) -> list[str]:
    clients = latest_client_runs(runs)
    if not clients:
        return []
    out = [
        '<section class="clients"><h2>Clients</h2>',
        '<p class="sub">Client certificates (<code>wsmode certify-client</code>): per case a '
        "reference server plays a scripted behaviour and the client is judged from what the "
        "server saw and what its caller was told. MUST and SHOULD passed of the cases run.</p>",
        '<table id="clients"><thead><tr><th>Client</th><th>Version</th><th>MUST</th>'
        "<th>SHOULD</th><th>Not passed</th><th>Certificate</th></tr></thead><tbody>",
    ]
    for run in clients:
        r = run.result
        out.append(
            f'<tr data-client="{escape(str(r["target"]["name"]))}">'
            f"<td>{escape(str(r['target']['name']))}</td>"
            f"<td>{escape(str(r['target'].get('version') or '—'))}</td>"
            f'<td class="num">{_score(r, "MUST")}</td><td class="num">{_score(r, "SHOULD")}</td>'
            f"<td>{escape(', '.join(_not_passed(r)) or '—')}</td>"
            f'<td><a href="results/{escape(run.copy_name)}">{escape(r["started_at"][:10])}</a>'
            "</td></tr>"
        )
    out.append("</tbody></table></section>")
    return out


def render_clients_markdown(runs: Sequence[_Run]) -> list[str]:
    clients = latest_client_runs(runs)
    if not clients:
        return []
    lines = [
        "",
        "## Clients",
        "",
        "| Client | Version | MUST | SHOULD | Not passed | Certificate |",
        "|---|---|---|---|---|---|",
    ]
    for run in clients:
        r = run.result
        lines.append(
            f"| {r['target']['name']} | {r['target'].get('version') or '—'} | "
            f"{_score(r, 'MUST')} | {_score(r, 'SHOULD')} | "
            f"{', '.join(_not_passed(r)) or '—'} | "
            f"[{r['started_at'][:10]}](results/{run.copy_name}) |"
        )
    return lines
