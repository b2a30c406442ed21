"""The client matrix: rows = clients with their versions, columns = the client cases.

Built from the newest client certificate (`report.json`) of each client under
`<results>/clients/`, written beside them as `MATRIX.md` and `matrix.html`. Each cell links to
its certificate's case (HTML) and abbreviates the verdict (Markdown); the legend says how each
case was judged.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from harness.conformance.certificates.documents import VERDICT_COLOURS, case_anchor
from harness.conformance.certificates.summary import level_count
from harness.results.page import html_page
from harness.results.schema import (
    ResultsSchemaError,
    is_client_certificate,
    load_result,
    parse_time,
)

SHORT: Final = {
    "PASS": "PASS",
    "FAIL": "FAIL",
    "NON-STRICT": "N-S",
    "PRECONDITION": "PRE",
    "INFORMATIONAL": "INFO",
    "UNIMPLEMENTED": "n/a",
    "ERROR": "ERR",
}


def latest_results(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The newest client certificate of each client below `root` (`clients/<name>/<ts>/`)."""
    newest: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in sorted(root.glob("*/*/report.json")):
        try:
            result = load_result(path)
        except ResultsSchemaError:
            continue
        if not is_client_certificate(result):
            continue
        name = str(result["target"]["name"])
        current = newest.get(name)
        if current is None or parse_time(result["started_at"]) > parse_time(
            current[1]["started_at"]
        ):
            newest[name] = (path, result)
    return [newest[name] for name in sorted(newest)]


def _case_ids(results: Sequence[Mapping[str, Any]]) -> list[str]:
    ids: dict[str, None] = {}
    for result in results:
        for case in result["certify"]["cases"]:
            ids.setdefault(str(case["id"]), None)
    return list(ids)


def _short_id(case_id: str) -> str:
    return case_id.split(".client.", 1)[-1]


def _verdicts(result: Mapping[str, Any]) -> dict[str, str]:
    return {str(c["id"]): str(c["verdict"]) for c in result["certify"]["cases"]}


def _who(result: Mapping[str, Any]) -> str:
    version = result["target"].get("version")
    return f"{result['target']['name']} {version}" if version else str(result["target"]["name"])


def _score(result: Mapping[str, Any]) -> str:
    """MUST and SHOULD passed of the cases run (an UNIMPLEMENTED case was not run)."""
    cases = result["certify"]["cases"]
    must, should = level_count(cases, "MUST"), level_count(cases, "SHOULD")
    return f"MUST {must.passed}/{must.run}, SHOULD {should.passed}/{should.run}"


def render_markdown(entries: Sequence[tuple[Path, Mapping[str, Any]]], root: Path) -> str:
    results = [r for _, r in entries]
    ids = _case_ids(results)
    levels = {str(c["id"]): str(c["level"]) for r in results for c in r["certify"]["cases"]}
    titles = {str(c["id"]): str(c["title"]) for r in results for c in r["certify"]["cases"]}
    lines = [
        "# Client certification matrix",
        "",
        "Rows are clients (with the version certified), columns the `wsmode certify-client` "
        "cases (`suites/clients/README.md`). Each row is the newest certificate of that client "
        "in this folder; its report has every finding and wire log. N-S = NON-STRICT (a SHOULD "
        "broken), n/a = the adapter cannot express the case (UNIMPLEMENTED), INFO = reported, "
        "not judged.",
        "",
        "| client | score | run | " + " | ".join(f"`{_short_id(i)}`" for i in ids) + " |",
        "|---|---|---|" + "---|" * len(ids),
    ]
    for path, result in entries:
        verdicts = _verdicts(result)
        report = path.parent.relative_to(root).as_posix()
        lines.append(
            f"| **{_who(result)}** | {_score(result)} | [{result['started_at'][:10]}]"
            f"({report}/report.md) | "
            + " | ".join(SHORT.get(verdicts.get(i, ""), "—") for i in ids)
            + " |"
        )
    lines += ["", "| case | level | expectation |", "|---|---|---|"]
    for case_id in ids:
        lines.append(f"| `{case_id}` | {levels[case_id]} | {titles[case_id]} |")
    return "\n".join(lines) + "\n"


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1f2328}
table{border-collapse:collapse} th,td{border:1px solid #d0d7de;padding:4px 6px;text-align:left}
th{background:#f6f8fa} th.case{writing-mode:vertical-rl;transform:rotate(180deg);
font-weight:500;font-size:12px} td.v{font-weight:600;font-size:12px;text-align:center}
.meta{color:#57606a}
"""


def render_html(entries: Sequence[tuple[Path, Mapping[str, Any]]], root: Path) -> str:
    results = [r for _, r in entries]
    ids = _case_ids(results)
    out = [
        "<h1>wsmode certify-client: clients × cases</h1>",
        "<p class=meta>The newest certificate of each client; click a verdict for its case "
        "(findings and wire log).</p><table><tr><th>client</th><th>score</th>",
    ]
    out += [f"<th class=case>{html.escape(_short_id(i))}</th>" for i in ids]
    out.append("</tr>")
    for path, result in entries:
        verdicts = _verdicts(result)
        report = html.escape(path.parent.relative_to(root).as_posix() + "/report.html")
        out.append(
            f"<tr><td><b>{html.escape(_who(result))}</b><br><span class=meta>"
            f"{html.escape(result['started_at'])}</span></td><td>{html.escape(_score(result))}</td>"
        )
        for case_id in ids:
            verdict = verdicts.get(case_id, "")
            colour = VERDICT_COLOURS.get(verdict, "#57606a")
            anchor = case_anchor(case_id)
            out.append(
                f"<td class=v><a style='color:{colour}' href='{report}#{anchor}'>"
                f"{html.escape(SHORT.get(verdict, '—'))}</a></td>"
            )
        out.append("</tr>")
    out.append("</table>")
    return html_page(title="wsmode client matrix", css=_CSS, body=out)


def write_client_matrix(root: Path) -> dict[str, Path]:
    """Render `MATRIX.md` and `matrix.html` in `root` from its newest client certificates."""
    entries = latest_results(root)
    paths = {"md": root / "MATRIX.md", "html": root / "matrix.html"}
    if not entries:
        return {}
    paths["md"].write_text(render_markdown(entries, root), encoding="utf-8")
    paths["html"].write_text(render_html(entries, root), encoding="utf-8")
    return paths
