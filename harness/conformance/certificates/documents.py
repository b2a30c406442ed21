"""A certificate's documents: report.json (the versioned results schema), report.html,
junit.xml, and the cases × implementations matrix (HTML + Markdown), plus the terminal tables.

report.json is a `wsmode-results` v1 certify result; each case carries, beyond the schema's
required fields, `category`, `findings`, `notes`, `started_at` and `wire_log` (every frame with
direction and time), which the schema allows as extra members.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from xml.etree import ElementTree as ET

from harness.conformance.certificates.summary import (
    RootCause,
    counts_line,
    level_count,
    partial_line,
    reading_order,
    render_markdown,
    root_causes,
    stopped_line,
    target_line,
)
from harness.conformance.certificates.wirelog import DEFAULT_MAX_CHARS, format_entries, shorten_json
from harness.conformance.model.verdict import CATEGORIES
from harness.results.page import html_page
from harness.results.schema import VERDICTS, dumps_result
from harness.results.store import slug, timestamp_slug

VERDICT_COLOURS = {
    "PASS": "#1a7f37",
    "FAIL": "#cf222e",
    "NON-STRICT": "#bf8700",
    "PRECONDITION": "#9a6700",
    "INFORMATIONAL": "#0969da",
    "UNIMPLEMENTED": "#6e7781",
    "ERROR": "#8250df",
}


# -- writing one target's run -------------------------------------------------------------------
def run_directory(
    root: str | Path, target_name: str, started_at: str, *, area: str = "certify"
) -> Path:
    """`<root>/<area>/<target>/<timestamp>/` (area: certify, or clients for client
    certificates), made unique with `-2`, `-3`, ... when taken."""
    base = Path(root) / area / slug(target_name) / timestamp_slug(started_at)
    candidate, n = base, 1
    while True:
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            n += 1
            candidate = base.with_name(f"{base.name}-{n}")


def write_run(directory: Path, result: Mapping[str, Any], *, strict: bool) -> dict[str, Path]:
    paths = {
        "json": directory / "report.json",
        "html": directory / "report.html",
        "junit": directory / "junit.xml",
        "md": directory / "report.md",
    }
    paths["json"].write_text(dumps_result(result), encoding="utf-8")
    paths["md"].write_text(render_markdown(result, strict=strict), encoding="utf-8")
    paths["html"].write_text(render_html(result, strict=strict), encoding="utf-8")
    paths["junit"].write_bytes(render_junit([result], strict=strict))
    return paths


# -- summaries ----------------------------------------------------------------------------------
#: The category table's columns after the title, and the widest title it shows in full.
_COUNTS_COLUMNS: Final = 58
_TITLE_MAX: Final = 100 - 2 - _COUNTS_COLUMNS - 1


def category_table(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """Cases and verdicts per category, abbreviations explained (fits 100 columns)."""
    rows = category_rows(cases)
    width = min(_TITLE_MAX, max(len("category"), *(len(r["title"]) for r in rows))) + 1
    lines = [
        f"  {'category':<{width}}{'cases':>6}{'MUST':>9}{'SHOULD':>9}{'MAY':>5}"
        f"{'FAIL':>6}{'N-S':>5}{'INFO':>6}{'UNIMP':>7}{'ERR':>5}",
    ]
    for row in rows:
        title = row["title"] if len(row["title"]) < width else row["title"][: width - 2] + "…"
        lines.append(
            f"  {title:<{width}}{row['cases']:>6}"
            f"{row['must'][0]:>5}/{row['must'][1]:<3}{row['should'][0]:>5}/{row['should'][1]:<3}"
            f"{row['may']:>5}{row['FAIL']:>6}{row['NON-STRICT']:>5}{row['INFORMATIONAL']:>6}"
            f"{row['UNIMPLEMENTED']:>7}{row['ERROR']:>5}"
        )
    lines.append(
        "  (N-S: NON-STRICT, a SHOULD not met; INFO: INFORMATIONAL; UNIMP: UNIMPLEMENTED, not "
        "run; ERR: ERROR)"
    )
    return lines


def category_rows(cases: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per category: case count and a count per verdict, MUST/SHOULD pass ratios."""
    rows: dict[str, dict[str, Any]] = {}
    for case in cases:
        category = str(case.get("category", "other"))
        row = rows.setdefault(
            category,
            {
                "category": category,
                "title": CATEGORIES.get(category, category),
                "cases": 0,
                "must": [0, 0],
                "should": [0, 0],
                "may": 0,
                **dict.fromkeys(VERDICTS, 0),
            },
        )
        row["cases"] += 1
        row[case["verdict"]] += 1
        passed = case["verdict"] == "PASS"
        if case["level"] == "MUST":
            row["must"][0] += passed
            row["must"][1] += 1
        elif case["level"] == "SHOULD":
            row["should"][0] += passed
            row["should"][1] += 1
        else:
            row["may"] += 1
    order = list(CATEGORIES)
    return sorted(
        rows.values(), key=lambda r: order.index(r["category"]) if r["category"] in order else 99
    )


def terminal_summary(result: Mapping[str, Any], *, strict: bool, detail_chars: int = 110) -> str:
    certify = result["certify"]
    summary = certify["summary"]
    lines = [
        f"wsmode certify: {target_line(result)}",
        f"  {counts_line(certify['cases'])}" + ("  [strict]" if strict else ""),
        "  " + "  ".join(f"{v}={n}" for v, n in summary["counts"].items() if n),
    ]
    for note in (stopped_line(result), partial_line(result)):
        if note:
            lines.append(f"  {note}")
    lines += ["", *category_table(certify["cases"])]
    causes = root_causes(certify["cases"])
    if causes:
        lines += ["", "  findings by root cause (cases: rule, finding):"]
        for cause in causes[:12]:
            message = cause.message.replace("\n", " ")
            if len(message) > detail_chars:
                message = message[: detail_chars - 1] + "…"
            lines.append(f"  {len(cause.cases):>4}  [{cause.rule_id}] {message}")
    not_passed = [c for c in certify["cases"] if c["verdict"] not in ("PASS", "UNIMPLEMENTED")]
    if not_passed:
        lines.append("")
        for case in reading_order(not_passed):
            detail = case["detail"].replace("\n", " ")
            if len(detail) > detail_chars:
                detail = detail[: detail_chars - 1] + "…"
            lines.append(f"  {case['verdict']:<14}{case['level']:<7}{case['id']}")
            if detail:
                lines.append(f"  {'':<21}{detail}")
    return "\n".join(lines)


# -- HTML ---------------------------------------------------------------------------------------
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#1f2328;
max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
table{border-collapse:collapse;margin:6px 0 14px} th,td{border:1px solid #d0d7de;padding:4px 8px;
text-align:left;vertical-align:top} th{background:#f6f8fa} td.n{text-align:right}
.v{font-weight:600;white-space:nowrap} .meta{color:#57606a} code{font-size:12px}
.box{display:inline-block;border:1px solid #d0d7de;border-radius:6px;padding:8px 14px;
margin:0 8px 8px 0}
.box b{font-size:20px;display:block}
details{border:1px solid #d0d7de;border-radius:6px;margin:6px 0;padding:4px 10px}
summary{cursor:pointer} table.wire td{font:12px ui-monospace,monospace}
table.wire td.d{white-space:pre-wrap;word-break:break-all;max-width:900px}
tr.send td{background:#f0f7ff} tr.recv td{background:#fff}
tr.meta td{background:#f6f8fa;color:#57606a}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _verdict(verdict: str) -> str:
    colour = VERDICT_COLOURS.get(verdict, "#1f2328")
    return f'<span class="v" style="color:{colour}">{_e(verdict)}</span>'


def case_anchor(case_id: str) -> str:
    """The id of a case's wire-log block in report.html (console lines link to it)."""
    return "case-" + "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in case_id)


def render_html(result: Mapping[str, Any], *, strict: bool) -> str:
    target = result["target"]
    certify = result["certify"]
    summary = certify["summary"]
    cases: list[Mapping[str, Any]] = certify["cases"]
    out = [
        f"<h1>wsmode certify: {_e(target['name'])}</h1>",
        f"<p class=meta>{_e(target['url'])}"
        + (f" · {_e(target['version'])}" if target.get("version") else "")
        + f" · {_e(result['started_at'])} → {_e(result['ended_at'])}"
        + f" · wsmode {_e(result['harness']['version'])} ({_e(result['harness']['commit'][:12])})"
        + f" · profile {_e(result.get('profile') or '-')}"
        + (" · strict" if strict else "")
        + "</p>",
        f"<p class=meta>{_e(target_line(result))}</p>",
        '<div class="boxes">',
    ]
    for level in ("MUST", "SHOULD"):
        count = level_count(cases, level)
        na = f" ({count.not_applicable} n/a)" if count.not_applicable else ""
        out.append(
            f'<div class="box">{level} of those run{_e(na)}<b>{count.passed}/{count.run}</b></div>'
        )
    for verdict, count in summary["counts"].items():
        out.append(f'<div class="box">{_verdict(verdict)}<b>{count}</b></div>')
    out.append("</div><h2>Categories</h2><table><tr><th>category</th><th>cases</th>")
    out.append("<th>MUST passed</th><th>SHOULD passed</th><th>MAY</th>")
    out.extend(f"<th>{_verdict(v)}</th>" for v in VERDICTS)
    out.append("</tr>")
    for row in category_rows(cases):
        out.append(
            f"<tr><td>{_e(row['title'])}</td><td class=n>{row['cases']}</td>"
            f"<td class=n>{row['must'][0]}/{row['must'][1]}</td>"
            f"<td class=n>{row['should'][0]}/{row['should'][1]}</td><td class=n>{row['may']}</td>"
            + "".join(f"<td class=n>{row[v] or ''}</td>" for v in VERDICTS)
            + "</tr>"
        )
    out.append("</table>")
    for note in (stopped_line(result), partial_line(result)):
        if note:
            out.append(f"<p><b>{_e(note)}</b></p>")
    out.append(_causes_table(root_causes(cases)))
    cases = reading_order(cases)
    out.append("<h2>Cases</h2><table><tr><th>id</th><th>level</th><th>verdict</th>")
    out.append("<th>expectation</th><th>ms</th><th>rules</th><th>detail</th></tr>")
    for case in cases:
        duration = case.get("duration_ms")
        out.append(
            f"<tr><td><a href='#{case_anchor(case['id'])}'><code>{_e(case['id'])}</code></a></td>"
            f"<td>{_e(case['level'])}</td><td>{_verdict(case['verdict'])}</td>"
            f"<td>{_e(case['title'])}</td>"
            f"<td class=n>{'' if duration is None else f'{duration:.0f}'}</td>"
            f"<td><code>{_e(' '.join(case['rule_ids']))}</code></td>"
            f"<td>{_e(case['detail'][:300])}</td></tr>"
        )
    out.append("</table><h2>Wire logs</h2>")
    out.append(
        "<p class=meta>The frames of every case (full for FAIL and ERROR, delta runs collapsed "
        "elsewhere unless --full-wire-log): time since the case started, connection, "
        "direction (→ sent by the harness, ← received from the target, · harness note).</p>"
    )
    for case in cases:
        out.append(_case_section(case))
    return html_page(title=f"wsmode certify: {target['name']}", css=_CSS, body=out)


def _causes_table(causes: list[RootCause]) -> str:
    if not causes:
        return ""
    rows = ["<h2>Findings by root cause</h2><table><tr><th>cases</th><th>rule</th>"]
    rows.append("<th>level</th><th>finding</th><th>in</th></tr>")
    for cause in causes:
        links = " ".join(
            f"<a href='#{case_anchor(c)}'><code>{_e(c)}</code></a>" for c in cause.cases
        )
        rows.append(
            f"<tr><td class=n>{len(cause.cases)}</td><td><code>{_e(cause.rule_id)}</code></td>"
            f"<td>{_e(cause.level)}</td><td>{_e(cause.message)}</td><td>{links}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _case_section(case: Mapping[str, Any]) -> str:
    opened = " open" if case["verdict"] not in ("PASS", "UNIMPLEMENTED") else ""
    parts = [
        f"<details id='{case_anchor(case['id'])}'{opened}><summary>{_verdict(case['verdict'])} "
        f"<code>{_e(case['id'])}</code> [{_e(case['level'])}] {_e(case['title'])}</summary>",
        f"<p class=meta>section §{_e(case['section'])} · category {_e(case.get('category', ''))}"
        f" · started {_e(case.get('started_at', ''))} · rules "
        f"<code>{_e(', '.join(case['rule_ids']))}</code></p>",
    ]
    if case["detail"]:
        parts.append(f"<p>{_e(case['detail'])}</p>")
    findings = case.get("findings") or []
    if findings:
        parts.append("<table><tr><th>rule</th><th>level</th><th>seq</th><th>finding</th></tr>")
        for f in findings:
            seq = f.get("sequence_number")
            parts.append(
                f"<tr><td><code>{_e(f['rule_id'])}</code></td><td>{_e(f['level'])}</td>"
                f"<td class=n>{'' if seq is None else seq}</td><td>{_e(f['message'])}</td></tr>"
            )
        parts.append("</table>")
    log = case.get("wire_log") or []
    if log and case["verdict"] == "PASS":
        parts.append(f"<p class=meta>{len(log)} wire-log rows in report.json (a passing case).</p>")
    elif log:
        arrows = {"send": "→", "recv": "←", "meta": "·"}
        parts.append(
            "<table class=wire><tr><th>t (ms)</th><th>conn</th><th>dir</th><th>kind</th>"
            "<th>bytes</th><th>data</th></tr>"
        )
        for entry in log:
            direction = str(entry.get("dir", "meta"))
            parts.append(
                f"<tr class={_e(direction)}><td class=n>{float(entry.get('t_ms', 0)):.3f}</td>"
                f"<td>{_e(entry.get('conn', ''))}</td><td>{arrows.get(direction, '')}</td>"
                f"<td>{_e(entry.get('kind', ''))}</td><td class=n>{entry.get('bytes', 0)}</td>"
                # the page shows a long frame shortened; report.json keeps it whole
                f"<td class=d>{_e(shorten_json(str(entry.get('data', '')), DEFAULT_MAX_CHARS))}"
                "</td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append("<p class=meta>No frames exchanged.</p>")
    parts.append("</details>")
    return "\n".join(parts)


# -- JUnit --------------------------------------------------------------------------------------
def render_junit(results: Sequence[Mapping[str, Any]], *, strict: bool) -> bytes:
    suites = ET.Element("testsuites", name="wsmode certify")
    for result in results:
        cases = result["certify"]["cases"]
        counts = Counter(c["verdict"] for c in cases)
        failures = counts["FAIL"] + (counts["NON-STRICT"] if strict else 0)
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"wsmode certify: {result['target']['name']}",
            tests=str(len(cases)),
            failures=str(failures),
            errors=str(counts["ERROR"]),
            skipped=str(counts["UNIMPLEMENTED"]),
            time=f"{sum((c.get('duration_ms') or 0) for c in cases) / 1000:.3f}",
            timestamp=str(result["started_at"]),
        )
        props = ET.SubElement(suite, "properties")
        for name, value in (
            ("target_url", result["target"]["url"]),
            ("target_version", result["target"].get("version") or ""),
            ("strict", str(strict).lower()),
        ):
            ET.SubElement(props, "property", name=name, value=str(value))
        for case in cases:
            element = ET.SubElement(
                suite,
                "testcase",
                classname=f"{slug(result['target']['name'])}.{case.get('category', 'case')}",
                name=f"{case['id']} [{case['level']}]",
                time=f"{(case.get('duration_ms') or 0) / 1000:.3f}",
            )
            case_props = ET.SubElement(element, "properties")
            for name, value in (
                ("level", case["level"]),
                ("verdict", case["verdict"]),
                ("section", case["section"]),
                ("rule_ids", " ".join(case["rule_ids"])),
            ):
                ET.SubElement(case_props, "property", name=name, value=str(value))
            verdict = case["verdict"]
            message = f"{verdict}: {case['title']}"
            if verdict == "FAIL" or (strict and verdict == "NON-STRICT"):
                ET.SubElement(element, "failure", message=message, type=verdict).text = case[
                    "detail"
                ]
            elif verdict == "ERROR":
                ET.SubElement(element, "error", message=message, type="ERROR").text = case["detail"]
            elif verdict == "UNIMPLEMENTED":
                ET.SubElement(element, "skipped", message=case["detail"] or "unimplemented")
            log = case.get("wire_log") or []
            if log and verdict != "PASS":  # a passing case's frames are in report.json
                ET.SubElement(element, "system-out").text = format_entries(log)
    ET.indent(suites)
    return bytes(ET.tostring(suites, encoding="utf-8", xml_declaration=True))


# -- the matrix ---------------------------------------------------------------------------------
def _columns(results: Sequence[Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    for result in results:
        name = str(result["target"]["name"])
        base, n = name, 1
        while name in names:
            n += 1
            name = f"{base} ({n})"
        names.append(name)
    return names


def matrix_rows(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the matrix: each case once (first-seen order), its verdict per target."""
    rows: dict[str, dict[str, Any]] = {}
    for column, result in enumerate(results):
        for case in result["certify"]["cases"]:
            row = rows.setdefault(
                case["id"],
                {
                    "id": case["id"],
                    "level": case["level"],
                    "title": case["title"],
                    "category": case.get("category", ""),
                    "verdicts": [""] * len(results),
                },
            )
            row["verdicts"][column] = case["verdict"]
    return list(rows.values())


def render_matrix_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    names = _columns(results)
    lines = [
        "| case | level | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    lines.append(
        "| **MUST passed** | | "
        + " | ".join(
            f"{r['certify']['summary']['must_passed']}/{r['certify']['summary']['must_total']}"
            for r in results
        )
        + " |"
    )
    lines.append(
        "| **SHOULD passed** | | "
        + " | ".join(
            f"{r['certify']['summary']['should_passed']}/{r['certify']['summary']['should_total']}"
            for r in results
        )
        + " |"
    )
    for row in matrix_rows(results):
        cells = [v or "—" for v in row["verdicts"]]
        lines.append(f"| `{row['id']}` | {row['level']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render_matrix_html(results: Sequence[Mapping[str, Any]]) -> str:
    names = _columns(results)
    out = [
        "<h1>wsmode certify: cases × implementations</h1><table><tr><th>case</th><th>level</th>",
        "<th>expectation</th>",
    ]
    for name, result in zip(names, results, strict=True):
        out.append(f"<th>{_e(name)}<br><span class=meta>{_e(result['started_at'])}</span></th>")
    out.append("</tr><tr><th colspan=3>MUST passed / SHOULD passed</th>")
    for result in results:
        s = result["certify"]["summary"]
        out.append(
            f"<th>{s['must_passed']}/{s['must_total']} · "
            f"{s['should_passed']}/{s['should_total']}</th>"
        )
    out.append("</tr>")
    for row in matrix_rows(results):
        out.append(
            f"<tr><td><code>{_e(row['id'])}</code></td><td>{_e(row['level'])}</td>"
            f"<td>{_e(row['title'])}</td>"
            + "".join(f"<td>{_verdict(v) if v else '—'}</td>" for v in row["verdicts"])
            + "</tr>"
        )
    out.append("</table>")
    return html_page(title="wsmode certify matrix", css=_CSS, body=out)


def write_matrix(directory: Path, results: Sequence[Mapping[str, Any]]) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"html": directory / "matrix.html", "md": directory / "matrix.md"}
    paths["html"].write_text(render_matrix_html(results), encoding="utf-8")
    paths["md"].write_text(render_matrix_markdown(results), encoding="utf-8")
    return paths


def terminal_matrix(results: Sequence[Mapping[str, Any]], *, only_differences: bool = True) -> str:
    names = _columns(results)
    width = max(10, *(len(n) for n in names))
    rows = matrix_rows(results)
    if only_differences:
        rows = [r for r in rows if any(v != "PASS" for v in r["verdicts"])]
    header = f"  {'case':<48}{'lvl':<7}" + "".join(f"{n[:width]:<{width + 2}}" for n in names)
    lines = [header]
    for row in rows:
        lines.append(
            f"  {row['id'][:47]:<48}{row['level']:<7}"
            + "".join(f"{(v or '-')[:width]:<{width + 2}}" for v in row["verdicts"])
        )
    if only_differences and not rows:
        lines.append("  (every case PASS on every target)")
    return "\n".join(lines)
